//! The Hermes runtime: what sits between the agent core and every frontend (the command line,
//! the gateway and its chat platforms, the API server, cron). A [`Runtime`] is built once per
//! home and process and shares what sessions have in common (configuration, providers, one set
//! of MCP servers, skills, memory, the tool catalogue); a [`Session`] is built from a
//! [`SessionSpec`] and owns one conversation's lifecycle: record, run, end. Sessions keep their
//! own state (working directory, approvals, background processes, stored session) in their tool
//! context, never in process-wide state, so one process hosts many of them at once for days.
//! After a turn a session may owe a background review ([`review`]), the learning loop's
//! trigger.

mod error;
mod recorder;
mod resume;
mod runtime;
mod session;
mod spec;
mod unattended;

pub mod cron;
pub mod cronjob;
pub mod curator;
pub mod holographic;
pub mod honcho;
pub mod judge;
pub mod memory_providers;
pub mod providers;
pub mod review;
pub mod tools;
pub mod trajectory;

pub use error::SessionError;
pub use recorder::{Recorder, Tee};
pub use resume::Resumed;
pub use runtime::{Prepared, Runtime, catalogue};
pub use session::{Compression, Session, TurnReport};
pub use spec::{Platform, Resume, SessionSpec};
pub use unattended::Unattended;

/// Where `home`'s sessions are kept: its `sessions.db`, or with `store.backend: postgres` the
/// home's schema on the server of `HERMES_STORE_URL` (an error naming what is missing).
pub fn store_location(
    home: &hermes_config::HermesHome,
    config: &hermes_config::Config,
    env: &hermes_config::Environment,
) -> Result<hermes_store::StoreLocation, hermes_config::ConfigError> {
    Ok(match hermes_config::store_target(config, env)? {
        hermes_config::StoreTarget::Sqlite => {
            hermes_store::StoreLocation::File(home.join(hermes_store::DB_FILE_NAME))
        }
        hermes_config::StoreTarget::Postgres(url) => hermes_store::StoreLocation::Postgres {
            url: url.expose().to_string(),
            schema: hermes_store::StoreLocation::postgres_schema(home.profile_name().as_deref()),
        },
    })
}
