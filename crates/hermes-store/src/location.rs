//! Where a session store is: the home's `sessions.db`, or a schema on the PostgreSQL server of
//! `store.backend: postgres` (one schema per home, so profiles keep separate histories as they
//! do with their own files). The URL is a secret: `Debug` masks its password.

use std::path::PathBuf;

use crate::{Store, StoreError, StoreOptions};

#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    File(PathBuf),
    Postgres { url: String, schema: String },
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::File(p) => f.debug_tuple("File").field(p).finish(),
            StoreLocation::Postgres { url, schema } => f
                .debug_struct("Postgres")
                .field("url", &hermes_sql::redact_url(url))
                .field("schema", schema)
                .finish(),
        }
    }
}

impl From<PathBuf> for StoreLocation {
    fn from(p: PathBuf) -> StoreLocation {
        StoreLocation::File(p)
    }
}

impl StoreLocation {
    /// The PostgreSQL schema of a home's sessions: `sessions` for the default home,
    /// `sessions_<profile>` for a profile's.
    pub fn postgres_schema(profile: Option<&str>) -> String {
        match profile {
            Some(p) => format!("sessions_{p}"),
            None => "sessions".into(),
        }
    }

    pub fn open(&self) -> Result<Store, StoreError> {
        self.open_with(StoreOptions::default())
    }

    pub fn open_with(&self, options: StoreOptions) -> Result<Store, StoreError> {
        match self {
            StoreLocation::File(p) => Store::open_with(p, options),
            StoreLocation::Postgres { url, schema } => Store::open_postgres(url, schema),
        }
    }

    /// For messages: the file, or the server with its password masked.
    pub fn display(&self) -> String {
        match self {
            StoreLocation::File(p) => p.display().to_string(),
            StoreLocation::Postgres { url, schema } => {
                format!("{} (schema {schema})", hermes_sql::redact_url(url))
            }
        }
    }
}
