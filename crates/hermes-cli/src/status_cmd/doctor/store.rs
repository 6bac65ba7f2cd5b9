//! Doctor's check of `store.backend`: SQLite needs nothing; PostgreSQL needs this build's
//! `postgres` feature, `HERMES_STORE_URL`, and a server that answers (one connection, one
//! `SELECT version()`, with the URL's own or a ten-second connect timeout). The URL is shown
//! with its password masked.

use hermes_config::{Config, Environment, STORE_URL_VAR, StoreTarget};

use super::Check;

pub(super) async fn store_check(config: &Config, env: &Environment) -> Check {
    let target = match hermes_config::store_target(config, env) {
        Ok(t) => t,
        Err(e) => {
            return Check::fail(
                "store",
                e.to_string(),
                format!(
                    "add {STORE_URL_VAR}=postgres://USER:PASSWORD@HOST:5432/DB to .env, or set \
                     `store.backend: sqlite`"
                ),
            );
        }
    };
    let StoreTarget::Postgres(url) = target else {
        return Check::ok("store", "sqlite (sessions.db and kanban.db in the home)");
    };
    let shown = hermes_sql::redact_url(url.expose());
    if !hermes_sql::Db::postgres_built() {
        return Check::fail(
            "store",
            format!("store.backend is postgres ({shown}) but this build has no PostgreSQL support"),
            "rebuild with `cargo build --release --features hermes-cli/postgres`",
        );
    }
    let probe = tokio::task::spawn_blocking(move || {
        let db = hermes_sql::Db::postgres(url.expose(), "kanban")?;
        db.query_value::<String>("SELECT version()", &[])
    })
    .await;
    match probe {
        Ok(Ok(version)) => {
            let version = version.unwrap_or_default();
            let short = version.split(" on ").next().unwrap_or(&version);
            Check::ok("store", format!("postgres at {shown}: {short}"))
        }
        Ok(Err(e)) => Check::fail(
            "store",
            e.to_string(),
            format!("check {STORE_URL_VAR}, that the server runs and accepts this user"),
        ),
        Err(e) => Check::fail("store", e.to_string(), ""),
    }
}
