//! The PostgreSQL connection. The synchronous client runs its own tokio runtime and panics
//! when blocked on inside another (the gateway and the API server call the stores from async
//! code), so the client lives on a thread of its own: callers hand it jobs and wait for the
//! answer on a channel, which is safe from any context. Prepared statements are cached per
//! connection (bounded); every write transaction takes the schema's advisory lock so writers
//! on any machine serialise as SQLite's `BEGIN IMMEDIATE` does on one.

use std::collections::HashMap;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls, Statement};

use crate::translate::to_postgres;
use crate::{Result, Row, SqlError, Value, redact_url};

/// Prepared statements kept per connection before the cache starts over.
const STATEMENT_CACHE: usize = 512;
/// How long connecting may take when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce(&mut Session) + Send>;

struct Session {
    client: Client,
    statements: HashMap<(String, bool), Statement>,
}

impl Session {
    /// The prepared form of a SQLite-flavoured statement (`returning`: with `RETURNING id`).
    fn statement(&mut self, sql: &str, returning: bool) -> Result<Statement> {
        let key = (sql.to_string(), returning);
        if let Some(s) = self.statements.get(&key) {
            return Ok(s.clone());
        }
        let mut text = to_postgres(sql);
        if returning {
            text.push_str(" RETURNING id");
        }
        let st = self.client.prepare(&text)?;
        if self.statements.len() >= STATEMENT_CACHE {
            self.statements.clear();
        }
        self.statements.insert(key, st.clone());
        Ok(st)
    }
}

pub(crate) struct PgConn {
    jobs: mpsc::Sender<Job>,
    lock_key: i64,
    thread: Option<JoinHandle<()>>,
}

impl PgConn {
    pub(crate) fn connect(url: &str, schema: &str) -> Result<PgConn> {
        let connect_err = |detail: String| SqlError::Connect {
            url: redact_url(url),
            detail,
        };
        let mut config: postgres::Config = url.parse().map_err(|e| connect_err(describe(&e)))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (ready_tx, ready) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("hermes-postgres".into())
            .spawn(move || {
                let client = match config.connect(NoTls) {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(describe(&e)));
                        return;
                    }
                };
                let mut session = Session {
                    client,
                    statements: HashMap::new(),
                };
                while let Ok(job) = inbox.recv() {
                    job(&mut session);
                }
            })
            .map_err(|e| connect_err(e.to_string()))?;
        match ready.recv() {
            Ok(Ok(())) => {}
            Ok(Err(detail)) => return Err(connect_err(detail)),
            Err(_) => return Err(SqlError::ConnectionGone),
        }
        let conn = PgConn {
            jobs,
            lock_key: lock_key(schema),
            thread: Some(thread),
        };
        let q = quote_ident(schema);
        // Two processes creating the schema at once would collide in the catalogue: the
        // advisory lock makes the second wait and find it.
        conn.batch(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock({}); CREATE SCHEMA IF NOT EXISTS {q}; COMMIT; \
             SET search_path TO {q}",
            conn.lock_key
        ))?;
        Ok(conn)
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.jobs
            .send(Box::new(move |s| {
                let _ = tx.send(f(s));
            }))
            .map_err(|_| SqlError::ConnectionGone)?;
        rx.recv().map_err(|_| SqlError::ConnectionGone)?
    }

    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        let sql = sql.to_string();
        self.run(move |s| Ok(s.client.batch_execute(&sql)?))
    }

    pub(crate) fn begin_write(&self) -> Result<()> {
        self.batch(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock({})",
            self.lock_key
        ))
    }

    pub(crate) fn execute(&self, sql: &str, params: &[Value]) -> Result<usize> {
        let (sql, params) = (sql.to_string(), params.to_vec());
        self.run(move |s| {
            let st = s.statement(&sql, false)?;
            let n = s.client.execute(&st, &refs(&params))?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    pub(crate) fn insert(&self, sql: &str, params: &[Value]) -> Result<i64> {
        let (sql, params) = (sql.to_string(), params.to_vec());
        self.run(move |s| {
            let st = s.statement(&sql, true)?;
            let row = s.client.query_one(&st, &refs(&params))?;
            Ok(row.try_get::<_, i64>(0)?)
        })
    }

    pub(crate) fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let (sql, params) = (sql.to_string(), params.to_vec());
        self.run(move |s| {
            let st = s.statement(&sql, false)?;
            let columns: Arc<[String]> =
                st.columns().iter().map(|c| c.name().to_string()).collect();
            let rows = s.client.query(&st, &refs(&params))?;
            let mut out = Vec::with_capacity(rows.len());
            for r in &rows {
                let mut values = Vec::with_capacity(columns.len());
                for (i, c) in st.columns().iter().enumerate() {
                    values.push(cell(r, i, c.type_())?);
                }
                out.push(Row::new(columns.clone(), values));
            }
            Ok(out)
        })
    }
}

impl Drop for PgConn {
    fn drop(&mut self) {
        // Closing the job channel ends the thread, which closes the connection.
        let (closed, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.jobs, closed));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn refs(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

fn cell(row: &postgres::Row, i: usize, ty: &Type) -> Result<Value> {
    fn or_null<T>(v: Option<T>, f: impl FnOnce(T) -> Value) -> Value {
        v.map_or(Value::Null, f)
    }
    Ok(match *ty {
        Type::INT8 => or_null(row.try_get::<_, Option<i64>>(i)?, Value::Int),
        Type::INT4 => or_null(row.try_get::<_, Option<i32>>(i)?, |v| {
            Value::Int(i64::from(v))
        }),
        Type::INT2 => or_null(row.try_get::<_, Option<i16>>(i)?, |v| {
            Value::Int(i64::from(v))
        }),
        Type::BOOL => or_null(row.try_get::<_, Option<bool>>(i)?, |v| {
            Value::Int(i64::from(v))
        }),
        Type::FLOAT8 => or_null(row.try_get::<_, Option<f64>>(i)?, Value::Real),
        Type::FLOAT4 => or_null(row.try_get::<_, Option<f32>>(i)?, |v| {
            Value::Real(f64::from(v))
        }),
        Type::BYTEA => or_null(row.try_get::<_, Option<Vec<u8>>>(i)?, Value::Blob),
        _ => or_null(row.try_get::<_, Option<String>>(i)?, Value::Text),
    })
}

/// Values go out as whatever the server inferred for the placeholder, so one SQLite-typed
/// value serves an `int8`, `int4` or `text` parameter alike.
impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                _ => i.to_string().to_sql(ty, out),
            },
            Value::Real(f) => match *ty {
                Type::FLOAT8 => f.to_sql(ty, out),
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                _ => f.to_string().to_sql(ty, out),
            },
            Value::Text(s) => match *ty {
                Type::INT8 => s.trim().parse::<i64>()?.to_sql(ty, out),
                Type::INT4 => s.trim().parse::<i32>()?.to_sql(ty, out),
                Type::FLOAT8 => s.trim().parse::<f64>()?.to_sql(ty, out),
                _ => s.as_str().to_sql(ty, out),
            },
            Value::Blob(b) => match *ty {
                Type::BYTEA => b.as_slice().to_sql(ty, out),
                _ => String::from_utf8_lossy(b).as_ref().to_sql(ty, out),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// A server error as its message and SQLSTATE; otherwise the chain of causes.
pub(crate) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} (SQLSTATE {})", db.message(), db.code().code());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The advisory-lock key of a schema: FNV-1a, stable across builds and machines (every
/// process sharing the schema must pick the same key).
fn lock_key(schema: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in "hermes:".bytes().chain(schema.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
