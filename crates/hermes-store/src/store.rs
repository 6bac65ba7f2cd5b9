//! [`Store`]: one connection to `sessions.db`. Opening checks whose file it is and which schema
//! it has, switches it to WAL, and runs pending migrations. Every write is one `BEGIN IMMEDIATE`
//! transaction (the write lock is taken up front, so contention shows at once instead of at
//! commit), retried after a random 20–150 ms pause while another writer holds the lock, so
//! competing processes spread out instead of waking in lockstep.
//!
//! A `Store` is blocking and belongs to one thread; async code reaches it through the
//! [`SessionWriter`](crate::SessionWriter) thread or `spawn_blocking`.
//!
//! With `store.backend: postgres` the same store lives in a schema on a PostgreSQL server
//! ([`Store::open_postgres`]): the statements are the same (hermes-sql translates them), the
//! tables are created at open, writes serialise on the schema's advisory lock, and search uses
//! PostgreSQL's full-text index (see [`crate::search`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hermes_sql::{Db, Dialect, Row, SqlError};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::StoreError;
use crate::error::is_busy;
use crate::schema::{self, Found, LATEST_VERSION};

/// How patiently the store waits for other processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// How long SQLite itself waits for a lock before one attempt fails.
    pub busy_timeout: Duration,
    /// Attempts of one write transaction while the database stays locked. (Opening retries
    /// for up to three busy timeouts.)
    pub write_attempts: u32,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            busy_timeout: Duration::from_secs(1),
            write_attempts: 10,
        }
    }
}

pub struct Store {
    pub(crate) db: Db,
    /// The file, or for PostgreSQL the server's URL with the password masked (for messages).
    path: PathBuf,
    options: StoreOptions,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// The outcome of the migration transaction (decided under the write lock, because another
/// process may have migrated or replaced the file since the first look).
enum Migrated {
    Done,
    Foreign(i64),
    Newer(i64),
}

impl Store {
    /// Opens (creating if needed) the session database at `path` with default patience.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_with(path, StoreOptions::default())
    }

    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        if path.is_dir() {
            return Err(StoreError::Open {
                path,
                detail: "it is a directory".into(),
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let started = Instant::now();
        let give_up = started + options.busy_timeout * 3;
        loop {
            let conn = Connection::open_with_flags(&path, flags)
                .map_err(|e| StoreError::from_sqlite(&path, e, Duration::ZERO))?;
            let mut store = Store {
                db: Db::sqlite(conn),
                path: path.clone(),
                options,
            };
            // While another connection creates the file or switches it to WAL, SQLite can
            // answer "busy" at once, without waiting: start over after a pause.
            match store.prepare() {
                Ok(()) => return Ok(store),
                Err(StoreError::Locked { .. }) if Instant::now() < give_up => {
                    std::thread::sleep(Duration::from_millis(fastrand::u64(20..=150)));
                }
                Err(StoreError::Locked { path, .. }) => {
                    return Err(StoreError::Locked {
                        path,
                        waited: started.elapsed().as_secs_f64(),
                    });
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Connects to the PostgreSQL server at `url` and uses (creating when missing) the
    /// session tables in `schema`.
    pub fn open_postgres(url: &str, schema: &str) -> Result<Store, StoreError> {
        let label = PathBuf::from(hermes_sql::redact_url(url));
        let remote = |e: SqlError| StoreError::Remote {
            server: label.display().to_string(),
            detail: e.to_string(),
        };
        let db = Db::postgres(url, schema).map_err(remote)?;
        let store = Store {
            db,
            path: label.clone(),
            options: StoreOptions::default(),
        };
        // The DDL (and the lock it takes) only when the schema is not complete yet.
        let current = store
            .db
            .columns("messages")
            .map_err(remote)?
            .iter()
            .any(|c| c == "search_body");
        if !current {
            store
                .db
                .write(|d| d.batch(&schema::postgres_schema()))
                .map_err(remote)?;
        }
        Ok(store)
    }

    /// The database file (for PostgreSQL: the server's URL, password masked).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection (for `store migrate`, which copies the tables as they are).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Which server the store is on.
    pub fn dialect(&self) -> Dialect {
        self.db.dialect()
    }

    fn prepare(&mut self) -> Result<(), StoreError> {
        let busy = self.options.busy_timeout;
        let Some(conn) = self.db.as_sqlite() else {
            return Ok(());
        };
        let sqlite_err = |e| StoreError::from_sqlite(&self.path, e, busy);
        conn.busy_timeout(busy).map_err(sqlite_err)?;
        let found = schema::inspect(conn).map_err(sqlite_err)?;
        self.refuse(found)?;
        // WAL is a property of the file: this only writes when the file is not in WAL yet. A
        // filesystem without shared memory keeps the old journal, which still works.
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(sqlite_err)?;
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
             PRAGMA journal_size_limit = 8388608;",
        )
        .map_err(sqlite_err)?;
        // Closing the last connection would copy the WAL into the database and delete it, two
        // fsyncs on every exit and a new WAL (more fsyncs) on the next start. Kept instead, the
        // WAL is checkpointed as it fills (every 1,000 pages); what is committed survives a
        // killed process either way.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(sqlite_err)?;
        if found == Found::Ours(LATEST_VERSION) {
            return Ok(());
        }
        let outcome = self.write(|tx| {
            let Some(tx) = tx.as_sqlite() else {
                return Ok(Migrated::Done);
            };
            Ok(match schema::inspect(tx)? {
                Found::Empty => {
                    schema::migrate(tx, 0)?;
                    Migrated::Done
                }
                Found::Ours(v) if v > LATEST_VERSION => Migrated::Newer(v),
                Found::Ours(v) => {
                    schema::migrate(tx, v)?;
                    Migrated::Done
                }
                Found::Foreign { application_id } => Migrated::Foreign(application_id),
            })
        })?;
        match outcome {
            Migrated::Done => Ok(()),
            Migrated::Newer(v) => self.refuse(Found::Ours(v)),
            Migrated::Foreign(id) => self.refuse(Found::Foreign { application_id: id }),
        }
    }

    /// Files this build must not touch: another program's, or a newer schema.
    fn refuse(&self, found: Found) -> Result<(), StoreError> {
        match found {
            Found::Foreign { application_id } => Err(StoreError::NotOurs {
                path: self.path.clone(),
                detail: if application_id == 0 {
                    "it holds tables of another program".into()
                } else {
                    format!("its application id is {application_id:#x}")
                },
            }),
            Found::Ours(v) if v > LATEST_VERSION => Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found: v,
                known: LATEST_VERSION,
            }),
            _ => Ok(()),
        }
    }

    /// Runs `f` in one write transaction (`BEGIN IMMEDIATE`; on PostgreSQL the schema's
    /// advisory lock), retrying with jitter while another SQLite connection holds the write
    /// lock. `f` may run several times, so it must only touch the database.
    pub(crate) fn write<T>(
        &mut self,
        f: impl Fn(&Db) -> hermes_sql::Result<T>,
    ) -> Result<T, StoreError> {
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            match self.db.write(&f) {
                Ok(v) => return Ok(v),
                Err(SqlError::Sqlite(e))
                    if is_busy(&e) && attempt < self.options.write_attempts =>
                {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(fastrand::u64(20..=150)));
                }
                Err(e) => return Err(self.error_after(e, started.elapsed())),
            }
        }
    }

    /// Maps the error of a read (which waited at most the busy timeout).
    pub(crate) fn read_error(&self, e: SqlError) -> StoreError {
        self.error_after(e, self.options.busy_timeout)
    }

    fn error_after(&self, e: SqlError, waited: Duration) -> StoreError {
        match e {
            SqlError::Sqlite(e) => StoreError::from_sqlite(&self.path, e, waited),
            other => StoreError::Remote {
                server: self.path.display().to_string(),
                detail: other.to_string(),
            },
        }
    }

    /// Every row of a read, as `T`.
    pub(crate) fn read_rows<T>(
        &self,
        sql: &str,
        params: &[hermes_sql::Value],
        f: impl Fn(&Row) -> hermes_sql::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        self.db
            .query(sql, params)
            .and_then(|rows| rows.iter().map(&f).collect())
            .map_err(|e| self.read_error(e))
    }

    /// The first row of a read, as `T`.
    pub(crate) fn read_row<T>(
        &self,
        sql: &str,
        params: &[hermes_sql::Value],
        f: impl Fn(&Row) -> hermes_sql::Result<T>,
    ) -> Result<Option<T>, StoreError> {
        self.db
            .query_row(sql, params)
            .and_then(|r| r.as_ref().map(&f).transpose())
            .map_err(|e| self.read_error(e))
    }
}

/// Every row of a query inside a transaction, as `T`.
pub(crate) fn rows<T>(
    db: &Db,
    sql: &str,
    params: &[hermes_sql::Value],
    f: impl Fn(&Row) -> hermes_sql::Result<T>,
) -> hermes_sql::Result<Vec<T>> {
    db.query(sql, params)?.iter().map(f).collect()
}
