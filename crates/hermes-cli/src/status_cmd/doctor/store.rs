//! Doctor's check of `store.backend`: SQLite, the default, is the `sessions` check's business
//! (no line of its own); PostgreSQL needs this build's `postgres` feature,
//! `HERMES_STORE_URL`, and a server that answers (one connection to the home's session
//! schema, created if missing, and `SELECT version()`, with the URL's own or a ten-second
//! connect timeout). The URL is shown with its password masked.

use hermes_config::{Config, Environment, HermesHome, STORE_URL_VAR, StoreTarget};

use super::Check;

pub(super) async fn store_check(
    home: &HermesHome,
    config: &Config,
    env: &Environment,
) -> Option<Check> {
    let target = match hermes_config::store_target(config, env) {
        Ok(t) => t,
        Err(e) => {
            return Some(Check::fail(
                "store",
                e.to_string(),
                format!(
                    "add {STORE_URL_VAR}=postgres://USER:PASSWORD@HOST:5432/DB to .env, or set \
                     `store.backend: sqlite`"
                ),
            ));
        }
    };
    let StoreTarget::Postgres(url) = target else {
        return None;
    };
    let shown = hermes_sql::redact_url(url.expose());
    if !hermes_sql::Db::postgres_built() {
        return Some(Check::fail(
            "store",
            format!("store.backend is postgres ({shown}) but this build has no PostgreSQL support"),
            "rebuild with `cargo build --release --features hermes-cli/postgres`",
        ));
    }
    let location = hermes_store::StoreLocation::Postgres {
        url: url.expose().to_string(),
        schema: hermes_store::StoreLocation::postgres_schema(home.profile_name().as_deref()),
    };
    let probe = tokio::task::spawn_blocking(move || {
        let store = location.open()?;
        let remote = |e: hermes_sql::SqlError| hermes_store::StoreError::Remote {
            server: store.path().display().to_string(),
            detail: e.to_string(),
        };
        let version = store
            .db()
            .query_value::<String>("SELECT version()", &[])
            .map_err(remote)?;
        let sessions = hermes_sql::copy::count(store.db(), "sessions").map_err(remote)?;
        Ok::<_, hermes_store::StoreError>((version.unwrap_or_default(), sessions))
    })
    .await;
    Some(match probe {
        Ok(Ok((version, sessions))) => {
            let short = version.split(" on ").next().unwrap_or(&version);
            let plural = if sessions == 1 { "" } else { "s" };
            Check::ok(
                "store",
                format!("postgres at {shown}: {short}, {sessions} session{plural}"),
            )
        }
        Ok(Err(e)) => Check::fail(
            "store",
            e.to_string(),
            format!("check {STORE_URL_VAR}, that the server runs and accepts this user"),
        ),
        Err(e) => Check::fail("store", e.to_string(), ""),
    })
}
