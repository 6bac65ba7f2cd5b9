//! One SQL connection over SQLite or PostgreSQL, so a crate states its rules once and runs
//! them on either store (the kanban board, the session history).
//!
//! - [`value`]: the values statements take and rows give back;
//! - [`translate`]: the SQLite-flavoured statements callers write, turned into PostgreSQL's
//!   (`$n` placeholders, `ON CONFLICT DO NOTHING`, `IS NOT DISTINCT FROM`);
//! - [`copy`]: a table copied between two connections (`hermes store migrate`);
//! - [`Db`]: the connection; write transactions serialise writers on both backends (SQLite's
//!   `BEGIN IMMEDIATE`; on PostgreSQL a transaction-scoped advisory lock per schema), so the
//!   compare-and-swap rules written for SQLite hold unchanged on a shared server;
//! - `pg` (feature `postgres`): the PostgreSQL connection, on a thread of its own because the
//!   synchronous client panics when blocked on inside a tokio runtime.

pub mod copy;
pub mod translate;
pub mod value;

#[cfg(feature = "postgres")]
mod pg;

pub use rusqlite;
pub use value::{FromValue, Row, ToValue, Value};

/// Builds the parameter list of a statement (an array of [`Value`]s), like
/// `rusqlite::params!`.
#[macro_export]
macro_rules! params {
    () => { [] as [$crate::Value; 0] };
    ($($x:expr),+ $(,)?) => { [$($crate::ToValue::to_value(&$x)),+] };
}

/// Which server a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// What can go wrong talking to the database.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[cfg(feature = "postgres")]
    #[error("PostgreSQL: {}", pg::describe(.0))]
    Postgres(#[from] postgres::Error),
    #[error("cannot connect to PostgreSQL at {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("the PostgreSQL connection thread has stopped")]
    ConnectionGone,
    #[error("column {column}: expected {expected}, found {found}")]
    Type {
        column: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("no column {0} in the result")]
    NoColumn(String),
    #[error(
        "PostgreSQL support is not in this build: rebuild with `--features hermes-cli/postgres`"
    )]
    NotBuilt,
}

pub type Result<T, E = SqlError> = std::result::Result<T, E>;

/// An open connection.
pub struct Db {
    inner: Inner,
}

enum Inner {
    Sqlite(rusqlite::Connection),
    #[cfg(feature = "postgres")]
    Postgres(pg::PgConn),
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dialect", &self.dialect())
            .finish()
    }
}

impl Db {
    pub fn sqlite(conn: rusqlite::Connection) -> Db {
        Db {
            inner: Inner::Sqlite(conn),
        }
    }

    /// Connects to `url` (a `postgres://` URL or key=value string) and works in `schema`
    /// (created when missing), or says this build has no PostgreSQL.
    pub fn postgres(url: &str, schema: &str) -> Result<Db> {
        #[cfg(feature = "postgres")]
        {
            Ok(Db {
                inner: Inner::Postgres(pg::PgConn::connect(url, schema)?),
            })
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = (url, schema);
            Err(SqlError::NotBuilt)
        }
    }

    /// Whether this build can talk to PostgreSQL.
    pub const fn postgres_built() -> bool {
        cfg!(feature = "postgres")
    }

    pub fn dialect(&self) -> Dialect {
        match &self.inner {
            Inner::Sqlite(_) => Dialect::Sqlite,
            #[cfg(feature = "postgres")]
            Inner::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The SQLite connection underneath, for what only SQLite has (pragmas, file checks).
    pub fn as_sqlite(&self) -> Option<&rusqlite::Connection> {
        match &self.inner {
            Inner::Sqlite(c) => Some(c),
            #[cfg(feature = "postgres")]
            Inner::Postgres(_) => None,
        }
    }

    /// Runs statements without parameters, in the backend's own dialect (schemas, pragmas).
    pub fn batch(&self, sql: &str) -> Result<()> {
        match &self.inner {
            Inner::Sqlite(c) => Ok(c.execute_batch(sql)?),
            #[cfg(feature = "postgres")]
            Inner::Postgres(p) => p.batch(sql),
        }
    }

    /// Runs one statement; the number of rows it changed.
    pub fn execute(&self, sql: &str, params: &[Value]) -> Result<usize> {
        match &self.inner {
            Inner::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                Ok(stmt.execute(rusqlite::params_from_iter(params.iter()))?)
            }
            #[cfg(feature = "postgres")]
            Inner::Postgres(p) => p.execute(sql, params),
        }
    }

    /// Runs an `INSERT` into a table with an `id` key; the new row's id.
    pub fn insert(&self, sql: &str, params: &[Value]) -> Result<i64> {
        match &self.inner {
            Inner::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                stmt.execute(rusqlite::params_from_iter(params.iter()))?;
                Ok(c.last_insert_rowid())
            }
            #[cfg(feature = "postgres")]
            Inner::Postgres(p) => p.insert(sql, params),
        }
    }

    /// Every row of a query.
    pub fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        match &self.inner {
            Inner::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let columns: std::sync::Arc<[String]> =
                    stmt.column_names().map(str::to_string).collect();
                let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    let mut values = Vec::with_capacity(columns.len());
                    for i in 0..columns.len() {
                        values.push(Value::from_sqlite(r.get_ref(i)?));
                    }
                    out.push(Row::new(columns.clone(), values));
                }
                Ok(out)
            }
            #[cfg(feature = "postgres")]
            Inner::Postgres(p) => p.query(sql, params),
        }
    }

    /// The first row of a query, if any.
    pub fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// The first column of the first row, if there is a row.
    pub fn query_value<T: value::FromValue>(
        &self,
        sql: &str,
        params: &[Value],
    ) -> Result<Option<T>> {
        self.query_row(sql, params)?.map(|r| r.get(0)).transpose()
    }

    /// Starts a write transaction that holds off every other writer of the same database
    /// (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: `BEGIN` and the schema's advisory lock).
    pub fn begin_write(&self) -> Result<()> {
        match &self.inner {
            Inner::Sqlite(c) => Ok(c.execute_batch("BEGIN IMMEDIATE")?),
            #[cfg(feature = "postgres")]
            Inner::Postgres(p) => p.begin_write(),
        }
    }

    pub fn commit(&self) -> Result<()> {
        self.batch("COMMIT")
    }

    pub fn rollback(&self) -> Result<()> {
        self.batch("ROLLBACK")
    }

    /// Runs `f` in a write transaction, committed when it succeeds and rolled back otherwise.
    pub fn write<T, E: From<SqlError>>(
        &self,
        f: impl FnOnce(&Db) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.begin_write()?;
        match f(self) {
            Ok(v) => {
                self.commit()?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.rollback();
                Err(e)
            }
        }
    }

    /// Whether a table exists (in the connection's schema).
    pub fn has_table(&self, table: &str) -> Result<bool> {
        let sql = match self.dialect() {
            Dialect::Sqlite => "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
            Dialect::Postgres => {
                "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() \
                 AND table_name = ?"
            }
        };
        Ok(self.query_row(sql, &params![table])?.is_some())
    }

    /// The columns of a table, in order.
    pub fn columns(&self, table: &str) -> Result<Vec<String>> {
        let rows = match self.dialect() {
            Dialect::Sqlite => self.query(
                "SELECT name FROM pragma_table_info(?) ORDER BY cid",
                &params![table],
            )?,
            Dialect::Postgres => self.query(
                "SELECT column_name::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
                &params![table],
            )?,
        };
        rows.iter().map(|r| r.get::<String>(0)).collect()
    }

    /// After rows were copied in with their ids: the next generated id follows the largest
    /// (PostgreSQL's identity sequences do not see explicit ids; SQLite needs nothing).
    pub fn resync_ids(&self, table: &str) -> Result<()> {
        if self.dialect() == Dialect::Postgres {
            self.query(
                &format!(
                    "SELECT setval(pg_get_serial_sequence('{table}', 'id'), \
                     GREATEST((SELECT MAX(id) FROM {table}), 1), \
                     (SELECT MAX(id) FROM {table}) IS NOT NULL)"
                ),
                &[],
            )?;
        }
        Ok(())
    }
}

/// A connection URL with its password replaced by `***`, for messages and logs.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (auth, tail) = match rest.find('@') {
            Some(at) if !rest[..at].contains('/') => (&rest[..at], &rest[at..]),
            _ => return redact_query(url),
        };
        let auth = match auth.split_once(':') {
            Some((user, _)) => format!("{user}:***"),
            None => auth.to_string(),
        };
        return redact_query(&format!("{scheme}://{auth}{tail}"));
    }
    // key=value form
    url.split_whitespace()
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn redact_query(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_string();
    };
    let query = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&");
    format!("{base}?{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact_url("postgres://bob:s3cret@db.example:5432/hermes"),
            "postgres://bob:***@db.example:5432/hermes"
        );
        assert_eq!(
            redact_url("postgresql://db/h?user=x&password=s3cret"),
            "postgresql://db/h?user=x&password=***"
        );
        assert_eq!(
            redact_url("host=db user=x password=s3cret"),
            "host=db user=x password=***"
        );
        assert_eq!(redact_url("postgres://db/h"), "postgres://db/h");
    }

    #[cfg(not(feature = "postgres"))]
    #[test]
    fn postgres_names_the_feature_when_not_built() {
        let e = Db::postgres("postgres://u@h/db", "s")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--features hermes-cli/postgres"), "{e}");
    }

    #[test]
    fn sqlite_round_trip() {
        let db = Db::sqlite(rusqlite::Connection::open_in_memory().unwrap());
        db.batch("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, a TEXT, b INTEGER)")
            .unwrap();
        let id = db
            .write(|d| d.insert("INSERT INTO t (a, b) VALUES (?, ?)", &params!["x", 3]))
            .unwrap();
        assert_eq!(id, 1);
        let none: Option<i64> = None;
        db.execute("INSERT INTO t (a, b) VALUES (?, ?)", &params!["y", none])
            .unwrap();
        let rows = db.query("SELECT * FROM t ORDER BY id", &[]).unwrap();
        assert_eq!(rows[0].get::<String>("a").unwrap(), "x");
        assert_eq!(rows[1].get::<Option<i64>>("b").unwrap(), None);
        assert_eq!(db.columns("t").unwrap(), vec!["id", "a", "b"]);
        assert!(db.has_table("t").unwrap());
    }
}
