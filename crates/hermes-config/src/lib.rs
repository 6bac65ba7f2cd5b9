//! Configuration for Hermes: where the home directory is ([`HermesHome`]), what `config.yaml`
//! and `.env` say ([`Config`], [`Environment`]), and how files in the home are written safely
//! ([`atomic_write`]).
//!
//! Loading never mutates the process environment: `.env` values live in an [`Environment`]
//! overlay that lookups consult after the real environment, so secrets from `.env` reach
//! providers without leaking into tool subprocesses.

pub mod edit;
mod env;
mod error;
mod fsutil;
mod home;
mod settings;
mod store;
mod yaml;

pub use edit::add_to_list;
pub use env::{Environment, set_dotenv_var};
pub use error::ConfigError;
pub use fsutil::atomic_write;
pub use home::{ACTIVE_PROFILE_FILE, HermesHome, active_profile};
pub use settings::{AgentSettings, Config, DEFAULT_TOOLSETS, ModelSettings, TerminalSettings};
pub use store::{STORE_URL_VAR, StoreTarget, StoreUrl, store_backend_name, store_target};

/// Loads everything a run needs from a home: `.env` into an [`Environment`] overlay, then
/// `config.yaml` with `${VAR}` substituted from that environment.
pub fn load(home: &HermesHome) -> Result<(Config, Environment), ConfigError> {
    let env = Environment::load(&home.env_path())?;
    let config = Config::load(&home.config_path(), &env)?;
    Ok((config, env))
}
