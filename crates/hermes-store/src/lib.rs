//! The Hermes session store: every message of every session in SQLite (`sessions.db` in the
//! Hermes home), committed the moment it exists so a crash loses nothing.
//!
//! - [`Store`]: one blocking connection (WAL, busy timeout, `BEGIN IMMEDIATE` writes retried
//!   with jitter, versioned migrations at open; a damaged, foreign or newer file is refused with
//!   a clear [`StoreError`] and never modified).
//! - Sessions ([`NewSession`], [`SessionRecord`]) with titles, usage totals and ends; messages
//!   ([`StoredMessage`]) including the partial row of an answer still streaming.
//! - Full-text search ([`SearchQuery`], [`SearchHit`]) with highlighted snippets, and the
//!   context around a hit ([`MessageWindow`], [`Store::bookends`]).
//! - API clients' view ([`SessionPage`]): paged listings without child sessions, empty
//!   sessions, branches carrying their parent's transcript ([`Store::fork_session`]).
//! - [`StoreWriter`]: the one thread that writes for every live session of a process;
//!   [`SessionWriter`]: a session's handle on it.
//! - Exports: JSON records ([`export`]) and ShareGPT trajectories ([`sharegpt`]).
//! - [`import_python`]: the Python Hermes's `state.db` (only ever read) copied into the store.
//! - [`migrate`]: the history copied to the other backend (`hermes store migrate`).
//! - [`health`]: a read-only look at either database (sessions, last activity, `quick_check`).
//!
//! With `store.backend: postgres` the same store is a schema on a PostgreSQL server
//! ([`StoreLocation::Postgres`], [`Store::open_postgres`]): the statements run through
//! hermes-sql's connection (translated to PostgreSQL), search uses a `tsvector` with a GIN
//! index in place of FTS5, and hits come back in the same shape.
//!
//! The schema is our own (the Python Hermes keeps `state.db`), so both programs can share a home
//! without touching each other's database.

mod error;
pub mod export;
pub mod health;
pub mod import;
mod lineage;
mod location;
mod messages;
pub mod migrate;
mod schema;
mod search;
mod sessions;
pub mod sharegpt;
mod store;
pub mod time;
pub mod title;
mod usage;
mod writer;

pub use error::StoreError;
pub use import::{ImportReport, import_python};
pub use lineage::{BRANCHED, SessionPage};
pub use location::StoreLocation;
pub use messages::{INTERRUPTED, MessageMeta, StoredMessage};
pub use schema::LATEST_VERSION;
pub use search::{MessageWindow, SearchHit, SearchQuery, fts_query};
pub use sessions::{NewSession, SessionRecord, SessionSummary};
pub use sharegpt::{ShareGptTurn, Trajectory};
pub use store::{Store, StoreOptions};
pub use usage::{DayUsage, ModelUsage, UsageReport, UsageTotals};
pub use writer::{STREAM_COMMIT_INTERVAL, SessionStart, SessionWriter, StoreWriter};

/// The database's file name inside the Hermes home.
pub const DB_FILE_NAME: &str = "sessions.db";
