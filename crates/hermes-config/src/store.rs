//! Where sessions and the kanban board are kept: `store.backend` in `config.yaml` (`sqlite`,
//! the default, one machine; or `postgres`, shared by a team) and, for PostgreSQL, the
//! connection URL from `HERMES_STORE_URL` (the environment or `.env`, never `config.yaml`,
//! because it carries a password).

use crate::{Config, ConfigError, Environment};

/// The variable holding the PostgreSQL connection URL.
pub const STORE_URL_VAR: &str = "HERMES_STORE_URL";

/// A connection URL. It is a secret: `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl(String);

impl StoreUrl {
    pub fn new(url: impl Into<String>) -> StoreUrl {
        StoreUrl(url.into())
    }

    /// The URL itself, for connecting only (never for messages or logs).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreUrl(<redacted>)")
    }
}

/// The backend `store.backend` selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreTarget {
    Sqlite,
    Postgres(StoreUrl),
}

impl StoreTarget {
    pub fn name(&self) -> &'static str {
        match self {
            StoreTarget::Sqlite => "sqlite",
            StoreTarget::Postgres(_) => "postgres",
        }
    }
}

/// `store.backend` as written (`sqlite` when absent).
pub fn store_backend_name(config: &Config) -> Result<String, ConfigError> {
    let raw = config.raw.get("store").and_then(|s| s.get("backend"));
    let name = match raw {
        None | Some(serde_json::Value::Null) => "sqlite".to_string(),
        Some(serde_json::Value::String(s)) => s.trim().to_lowercase(),
        Some(other) => {
            return Err(invalid(
                config,
                format!("expected `sqlite` or `postgres`, found {other}"),
            ));
        }
    };
    match name.as_str() {
        "sqlite" | "" => Ok("sqlite".into()),
        "postgres" | "postgresql" => Ok("postgres".into()),
        other => Err(invalid(
            config,
            format!("`{other}` is not a store backend (one of: sqlite, postgres)"),
        )),
    }
}

/// The backend and, for PostgreSQL, its URL; an error when postgres is selected without one.
pub fn store_target(config: &Config, env: &Environment) -> Result<StoreTarget, ConfigError> {
    if store_backend_name(config)? == "sqlite" {
        return Ok(StoreTarget::Sqlite);
    }
    match env.var(STORE_URL_VAR) {
        Some(url) => Ok(StoreTarget::Postgres(StoreUrl::new(url.trim()))),
        None => Err(invalid(
            config,
            format!(
                "`store.backend: postgres` needs the connection URL in {STORE_URL_VAR} \
                 (in the environment or the home's .env, e.g. \
                 {STORE_URL_VAR}=postgres://user:password@host:5432/hermes)"
            ),
        )),
    }
}

fn invalid(config: &Config, message: String) -> ConfigError {
    ConfigError::Invalid {
        path: config.path.clone(),
        key: "store.backend".into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(text: &str) -> Config {
        Config::from_yaml(
            Path::new("c.yaml"),
            text,
            &Environment::isolated::<&str, &str>([]),
        )
        .unwrap()
    }

    #[test]
    fn sqlite_by_default() {
        let env = Environment::isolated::<&str, &str>([]);
        assert_eq!(
            store_target(&config(""), &env).unwrap(),
            StoreTarget::Sqlite
        );
    }

    #[test]
    fn postgres_needs_the_url() {
        let c = config("store:\n  backend: postgres\n");
        let e = store_target(&c, &Environment::isolated::<&str, &str>([])).unwrap_err();
        assert!(e.to_string().contains("HERMES_STORE_URL"), "{e}");
        let env = Environment::isolated([(STORE_URL_VAR, "postgres://u:pw@h/db")]);
        let t = store_target(&c, &env).unwrap();
        assert_eq!(
            t,
            StoreTarget::Postgres(StoreUrl::new("postgres://u:pw@h/db"))
        );
        assert!(!format!("{t:?}").contains("pw"));
    }

    #[test]
    fn unknown_backends_are_refused() {
        let c = config("store:\n  backend: mysql\n");
        let e = store_backend_name(&c).unwrap_err().to_string();
        assert!(e.contains("mysql") && e.contains("sqlite, postgres"), "{e}");
    }
}
