//! Importing the Python Hermes's history: its `state.db` (sessions, messages) copied into our
//! store, so conversations from before the switch can be searched and resumed.
//!
//! The Python database is only ever read: it is opened read-only (no migration, no repair, no
//! checkpoint), in one read transaction so a running Python Hermes can keep writing (WAL)
//! while the import sees one consistent snapshot (like any reader of a WAL database, SQLite
//! may create the empty `-wal` / `-shm` files beside it). Columns are read by name and any the file
//! lacks (older Python schemas) read as NULL; a file without the `sessions` and `messages`
//! tables is refused, and so is a newer schema missing a column the import cannot do without.
//!
//! Each Python session not already in our store (same id) is written in one transaction: the
//! session row with its metadata and totals, then its messages in their original order, the
//! full-text index following through our triggers. Parents are imported before the sessions
//! that continue them, and a parent link is kept only when the parent is in our store. A title
//! another session here already uses is kept with a ` (python)` suffix (numbered if that is
//! taken too). Running the import again imports nothing twice.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hermes_protocol::ToolCall;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags, Row};
use serde::Serialize;
use serde_json::Value;

use crate::error::sqlite_code;
use crate::messages::encode_tool_calls;
use crate::schema::APPLICATION_ID;
use crate::title::{self, MAX_TITLE_CHARS, sanitize_title};
use crate::{Store, StoreError};

/// The Python Hermes's database file name inside its home.
pub const PYTHON_DB_FILE_NAME: &str = "state.db";

/// The newest Python schema version this import was written against. A newer file is still
/// read (columns are looked up by name); it is refused only when a needed column is gone.
pub const PYTHON_SCHEMA_VERSION: i64 = 22;

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// The Python database read.
    pub source: PathBuf,
    /// Sessions copied into our store.
    pub sessions_imported: usize,
    /// Sessions left alone because one with the same id is already here.
    pub sessions_skipped: usize,
    /// Messages copied (those of the imported sessions).
    pub messages_imported: usize,
    /// Messages with a role this Hermes does not know, left out.
    pub messages_dropped: usize,
    /// Imported sessions whose title was taken here: `(session id, title given)`.
    pub retitled: Vec<(String, String)>,
}

/// The suffix given to an imported title another session here already has.
pub const TITLE_SUFFIX: &str = " (python)";

/// Imports every session of the Python Hermes database at `state_db` that is not in `store`
/// yet. A missing file, a file that is not a Python Hermes database or a schema that cannot be
/// read is an error, and then nothing was changed.
pub fn import_python(store: &mut Store, state_db: &Path) -> Result<ImportReport, StoreError> {
    let source = PythonDb::open(state_db)?;
    let sessions = source.sessions()?;
    let mut report = ImportReport {
        source: state_db.to_path_buf(),
        ..ImportReport::default()
    };
    for session in parents_first(sessions) {
        if store.session(&session.id)?.is_some() {
            report.sessions_skipped += 1;
            continue;
        }
        let (messages, dropped) = source.messages(&session)?;
        let imported = store.write(|tx| insert_session(tx, &session, &messages))?;
        match imported {
            Some(title) => {
                report.sessions_imported += 1;
                report.messages_imported += messages.len();
                report.messages_dropped += dropped;
                if let Some(title) = title {
                    report.retitled.push((session.id.clone(), title));
                }
            }
            None => report.sessions_skipped += 1,
        }
    }
    source.finish();
    Ok(report)
}

/// One Python session, as far as we keep it.
#[derive(Debug, Clone, PartialEq)]
struct PySession {
    id: String,
    source: String,
    model: Option<String>,
    provider: Option<String>,
    title: Option<String>,
    parent_session_id: Option<String>,
    cwd: Option<String>,
    system_prompt: Option<String>,
    started_at: f64,
    ended_at: Option<f64>,
    end_reason: Option<String>,
    api_call_count: i64,
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    reasoning_tokens: i64,
    estimated_cost_usd: Option<f64>,
}

/// One message converted to what our `messages` table holds.
#[derive(Debug, Clone, PartialEq)]
struct PyMessage {
    role: &'static str,
    content: String,
    tool_calls: Vec<ToolCall>,
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    reasoning: Option<String>,
    reasoning_details: Option<String>,
    finish_reason: Option<String>,
    timestamp: f64,
    token_count: Option<i64>,
    active: bool,
}

/// The columns read from each table: without these the rows mean nothing.
const SESSION_REQUIRED: &[&str] = &["id"];
const MESSAGE_REQUIRED: &[&str] = &["id", "session_id", "role"];

const SESSION_COLUMNS: &[&str] = &[
    "id",
    "source",
    "model",
    "billing_provider",
    "title",
    "parent_session_id",
    "cwd",
    "system_prompt",
    "started_at",
    "ended_at",
    "end_reason",
    "api_call_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "estimated_cost_usd",
];

const MESSAGE_COLUMNS: &[&str] = &[
    "id",
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "finish_reason",
    "timestamp",
    "token_count",
    "active",
];

/// The Python database, open read-only inside one read transaction.
struct PythonDb {
    conn: Connection,
    path: PathBuf,
    session_select: String,
    message_select: String,
}

impl PythonDb {
    fn open(path: &Path) -> Result<PythonDb, StoreError> {
        let path_buf = path.to_path_buf();
        if path.is_dir() {
            return Err(StoreError::Open {
                path: path_buf,
                detail: "it is a directory".into(),
            });
        }
        if !path.exists() {
            return Err(StoreError::Open {
                path: path_buf,
                detail: "no such file".into(),
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| source_error(path, e, Duration::ZERO))?;
        let db = PythonDb {
            conn,
            path: path_buf,
            session_select: String::new(),
            message_select: String::new(),
        };
        db.conn
            .busy_timeout(Duration::from_secs(2))
            .map_err(|e| db.error(e))?;
        // A read transaction for the whole import: one snapshot while the Python Hermes writes.
        db.conn
            .execute_batch("PRAGMA query_only = ON; BEGIN DEFERRED;")
            .map_err(|e| db.error(e))?;
        db.recognise()
    }

    /// Checks that this is a Python Hermes database this build can read, and prepares the
    /// queries for the columns it has.
    fn recognise(mut self) -> Result<PythonDb, StoreError> {
        let (application_id, tables): (i64, String) = self
            .conn
            .query_row(
                "SELECT (SELECT application_id FROM pragma_application_id()), \
                 (SELECT COALESCE(group_concat(name, ','), '') FROM sqlite_master \
                  WHERE type = 'table')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.error(e))?;
        if application_id == APPLICATION_ID {
            return Err(self.not_python(
                "it is a sessions database of this Hermes, not the Python Hermes's state.db",
            ));
        }
        let tables: HashSet<&str> = tables.split(',').collect();
        if !(tables.contains("sessions") && tables.contains("messages")) {
            return Err(self.not_python("it has no Python Hermes sessions and messages tables"));
        }
        let version = if tables.contains("schema_version") {
            self.conn
                .query_row("SELECT max(version) FROM schema_version", [], |r| {
                    r.get::<_, Option<i64>>(0)
                })
                .map_err(|e| self.error(e))?
        } else {
            None
        };
        let session_cols = self.columns("sessions")?;
        let message_cols = self.columns("messages")?;
        let missing: Vec<String> = SESSION_REQUIRED
            .iter()
            .filter(|c| !session_cols.contains(**c))
            .map(|c| format!("sessions.{c}"))
            .chain(
                MESSAGE_REQUIRED
                    .iter()
                    .filter(|c| !message_cols.contains(**c))
                    .map(|c| format!("messages.{c}")),
            )
            .collect();
        if !missing.is_empty() {
            return Err(match version {
                Some(found) if found > PYTHON_SCHEMA_VERSION => StoreError::NewerSchema {
                    path: self.path.clone(),
                    found,
                    known: PYTHON_SCHEMA_VERSION,
                },
                _ => self.not_python(&format!(
                    "its tables lack the column{} {}",
                    if missing.len() == 1 { "" } else { "s" },
                    missing.join(", ")
                )),
            });
        }
        self.session_select = format!(
            "SELECT {} FROM sessions ORDER BY {}, id",
            select_list(SESSION_COLUMNS, &session_cols),
            if session_cols.contains("started_at") {
                "started_at"
            } else {
                "rowid"
            }
        );
        self.message_select = format!(
            "SELECT {} FROM messages WHERE session_id = ?1 ORDER BY id",
            select_list(MESSAGE_COLUMNS, &message_cols)
        );
        Ok(self)
    }

    fn columns(&self, table: &str) -> Result<HashSet<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(|e| self.error(e))?;
        stmt.query_map([table], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.error(e))
    }

    fn sessions(&self) -> Result<Vec<PySession>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&self.session_select)
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map([], py_session)
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.error(e))?;
        Ok(rows.into_iter().flatten().collect())
    }

    /// The session's messages in their original order, converted; and how many were left out.
    fn messages(&self, session: &PySession) -> Result<(Vec<PyMessage>, usize), StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&self.message_select)
            .map_err(|e| self.error(e))?;
        let mut rows = stmt.query([&session.id]).map_err(|e| self.error(e))?;
        let mut messages = Vec::new();
        let mut dropped = 0;
        let mut last_time = session.started_at;
        while let Some(row) = rows.next().map_err(|e| self.error(e))? {
            match py_message(row, last_time).map_err(|e| self.error(e))? {
                Some(m) => {
                    last_time = m.timestamp;
                    messages.push(m);
                }
                None => dropped += 1,
            }
        }
        pair_tool_call_ids(&mut messages);
        Ok((messages, dropped))
    }

    /// Ends the read transaction (nothing was written; this only releases the snapshot).
    fn finish(self) {
        let _ = self.conn.execute_batch("COMMIT");
    }

    fn error(&self, e: rusqlite::Error) -> StoreError {
        source_error(&self.path, e, Duration::from_secs(2))
    }

    fn not_python(&self, detail: &str) -> StoreError {
        StoreError::NotOurs {
            path: self.path.clone(),
            detail: detail.to_string(),
        }
    }
}

/// Errors reading the Python file: a file that is not SQLite at all is simply not the Python
/// Hermes's database (not "damaged": it is not ours to repair).
fn source_error(path: &Path, e: rusqlite::Error, waited: Duration) -> StoreError {
    if sqlite_code(&e) == Some(ErrorCode::NotADatabase) {
        return StoreError::NotOurs {
            path: path.to_path_buf(),
            detail: "it is not an SQLite database".into(),
        };
    }
    StoreError::from_sqlite(path, e, waited)
}

/// `a, b, NULL AS c`: every wanted column, NULL for those the table lacks.
fn select_list(wanted: &[&str], present: &HashSet<String>) -> String {
    wanted
        .iter()
        .map(|c| {
            if present.contains(*c) {
                format!("\"{c}\"")
            } else {
                format!("NULL AS \"{c}\"")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Text, whatever SQLite type it was stored with (invalid UTF-8 replaced, never an error).
fn text(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Null => None,
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(x) => Some(x.to_string()),
    })
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}

fn real(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<f64>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(n) => Some(n as f64),
        ValueRef::Real(x) => Some(x),
        ValueRef::Text(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    }
    .filter(|x| x.is_finite()))
}

fn int(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(n) => Some(n),
        ValueRef::Real(x) if x.is_finite() => Some(x as i64),
        ValueRef::Text(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        _ => None,
    })
}

/// A session row selected with [`SESSION_COLUMNS`]; `None` for a row without an id.
fn py_session(row: &Row<'_>) -> rusqlite::Result<Option<PySession>> {
    let Some(id) = non_empty(text(row, 0)?) else {
        return Ok(None);
    };
    let count = |i| int(row, i).map(|n| n.unwrap_or(0).max(0));
    Ok(Some(PySession {
        id,
        source: non_empty(text(row, 1)?).unwrap_or_else(|| "unknown".into()),
        model: non_empty(text(row, 2)?),
        provider: non_empty(text(row, 3)?),
        title: text(row, 4)?,
        parent_session_id: non_empty(text(row, 5)?),
        cwd: non_empty(text(row, 6)?),
        system_prompt: non_empty(text(row, 7)?),
        started_at: real(row, 8)?.unwrap_or(0.0),
        ended_at: real(row, 9)?,
        end_reason: non_empty(text(row, 10)?),
        api_call_count: count(11)?,
        input_tokens: count(12)?,
        output_tokens: count(13)?,
        cache_read_tokens: count(14)?,
        cache_write_tokens: count(15)?,
        reasoning_tokens: count(16)?,
        estimated_cost_usd: real(row, 17)?,
    }))
}

/// A message row selected with [`MESSAGE_COLUMNS`]; `None` for a role we do not know. A
/// missing timestamp takes `previous` (the one before it, or the session's start).
fn py_message(row: &Row<'_>, previous: f64) -> rusqlite::Result<Option<PyMessage>> {
    let role = text(row, 1)?.unwrap_or_default();
    let role = match role.trim().to_ascii_lowercase().as_str() {
        "system" => "system",
        "user" => "user",
        "assistant" => "assistant",
        "tool" => "tool",
        _ => return Ok(None),
    };
    let reasoning = non_empty(text(row, 6)?).or(non_empty(text(row, 7)?));
    Ok(Some(PyMessage {
        role,
        content: text(row, 2)?.map(|c| content_text(&c)).unwrap_or_default(),
        tool_calls: text(row, 3)?
            .map(|t| convert_tool_calls(&t))
            .unwrap_or_default(),
        tool_call_id: non_empty(text(row, 4)?),
        tool_name: non_empty(text(row, 5)?),
        reasoning,
        reasoning_details: text(row, 8)?.and_then(|d| reasoning_details(&d)),
        finish_reason: non_empty(text(row, 9)?),
        timestamp: real(row, 10)?.unwrap_or(previous),
        token_count: int(row, 11)?,
        // Older files may hold NULL here (the Python Hermes treats it as active).
        active: int(row, 12)?.is_none_or(|a| a != 0),
    }))
}

/// The prefix the Python Hermes puts before JSON-encoded (structured) content.
const JSON_CONTENT_PREFIX: &str = "\u{0}json:";

/// Message content as text. Structured content (a list of parts, stored as JSON) keeps its
/// text parts, one per line, with `[image]` where a picture was; plain text is kept as it is.
fn content_text(stored: &str) -> String {
    if let Some(json) = stored.strip_prefix(JSON_CONTENT_PREFIX) {
        return match serde_json::from_str::<Value>(json) {
            Ok(Value::String(s)) => s,
            Ok(Value::Array(parts)) => parts_text(&parts),
            Ok(Value::Object(part)) => parts_text(&[Value::Object(part)]),
            Ok(other) => other.to_string(),
            Err(_) => json.to_string(),
        };
    }
    // Files written before that prefix existed may hold the bare list of parts.
    if stored.starts_with('[')
        && let Ok(Value::Array(parts)) = serde_json::from_str::<Value>(stored)
        && !parts.is_empty()
        && parts
            .iter()
            .all(|p| p.get("type").and_then(Value::as_str).is_some())
    {
        return parts_text(&parts);
    }
    stored.to_string()
}

fn parts_text(parts: &[Value]) -> String {
    parts
        .iter()
        .filter_map(|part| {
            if let Value::String(s) = part {
                return Some(s.clone());
            }
            let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
            match kind {
                "image" | "image_url" | "input_image" => Some("[image]".to_string()),
                _ => match part.get("text").and_then(Value::as_str) {
                    Some(t) => Some(t.to_string()),
                    None if kind.is_empty() => None,
                    None => Some(format!("[{kind}]")),
                },
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tool calls as the Python Hermes stored them (the OpenAI shape, sometimes with extra ids;
/// older rows the flat `{name, arguments}` shape, or one object instead of a list). Entries
/// without a function name are left out; a missing id stays empty until
/// [`pair_tool_call_ids`] fills it in.
fn convert_tool_calls(stored: &str) -> Vec<ToolCall> {
    let items = match serde_json::from_str::<Value>(stored) {
        Ok(Value::Array(items)) => items,
        Ok(item @ Value::Object(_)) => vec![item],
        _ => return Vec::new(),
    };
    items
        .iter()
        .filter_map(|item| {
            let func = item.get("function").unwrap_or(item);
            let name = func.get("name")?.as_str()?.trim();
            if name.is_empty() {
                return None;
            }
            let arguments = match func.get("arguments") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                Some(Value::String(_) | Value::Null) | None => "{}".to_string(),
                Some(other) => other.to_string(),
            };
            let id = ["id", "call_id"]
                .iter()
                .filter_map(|k| item.get(*k).and_then(Value::as_str))
                .map(str::trim)
                .find(|s| !s.is_empty())
                .unwrap_or_default()
                .to_string();
            Some(ToolCall {
                id,
                name: name.to_string(),
                arguments,
            })
        })
        .collect()
}

/// Gives tool calls recorded without an id the id of the result that answered them: the
/// tool messages right after the assistant message, in order, whose ids no other call of that
/// message claims. A call left without a result gets an id of its own.
fn pair_tool_call_ids(messages: &mut [PyMessage]) {
    for i in 0..messages.len() {
        if !messages[i].tool_calls.iter().any(|c| c.id.is_empty()) {
            continue;
        }
        let claimed: HashSet<String> = messages[i]
            .tool_calls
            .iter()
            .map(|c| c.id.clone())
            .filter(|id| !id.is_empty())
            .collect();
        let mut answers = messages[i + 1..]
            .iter()
            .take_while(|m| m.role == "tool")
            .filter_map(|m| m.tool_call_id.clone())
            .filter(|id| !claimed.contains(id))
            .collect::<Vec<_>>()
            .into_iter();
        for (k, call) in messages[i].tool_calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = answers
                    .next()
                    .unwrap_or_else(|| format!("call_imported_{i}_{k}"));
            }
        }
    }
}

/// Provider reasoning data, kept when it is JSON (a single item becomes a list of one).
fn reasoning_details(stored: &str) -> Option<String> {
    match serde_json::from_str::<Value>(stored).ok()? {
        Value::Array(items) if items.is_empty() => None,
        items @ Value::Array(_) => Some(items.to_string()),
        Value::Null => None,
        item => Some(Value::Array(vec![item]).to_string()),
    }
}

/// Orders sessions so that each comes after the session it continues (when that one is being
/// imported too), keeping the start order otherwise. Cycles are broken where they close.
fn parents_first(sessions: Vec<PySession>) -> Vec<PySession> {
    let index: HashMap<String, usize> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.clone(), i))
        .collect();
    let mut placed = vec![false; sessions.len()];
    let mut order = Vec::with_capacity(sessions.len());
    for start in 0..sessions.len() {
        let mut chain = Vec::new();
        let mut on_chain = HashSet::new();
        let mut at = Some(start);
        while let Some(i) = at {
            if placed[i] || !on_chain.insert(i) {
                break;
            }
            chain.push(i);
            at = sessions[i]
                .parent_session_id
                .as_ref()
                .and_then(|p| index.get(p).copied());
        }
        for &i in chain.iter().rev() {
            placed[i] = true;
            order.push(i);
        }
    }
    let mut slots: Vec<Option<PySession>> = sessions.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// Writes the session and its messages unless the id is taken. Returns `None` when it was
/// already here, else `Some(Some(title))` when its title had to change.
fn insert_session(
    tx: &hermes_sql::Db,
    s: &PySession,
    messages: &[PyMessage],
) -> hermes_sql::Result<Option<Option<String>>> {
    let exists = |id: &str| -> hermes_sql::Result<bool> {
        Ok(tx
            .query_row(
                "SELECT 1 FROM sessions WHERE id = ?1",
                &hermes_sql::params![id],
            )?
            .is_some())
    };
    if exists(&s.id)? {
        return Ok(None);
    }
    let parent = match &s.parent_session_id {
        Some(p) if p != &s.id && exists(p)? => Some(p.as_str()),
        _ => None,
    };
    let (title, retitled) = free_title(tx, s.title.as_deref())?;
    let tool_calls: usize = messages.iter().map(|m| m.tool_calls.len()).sum();
    let updated_at = messages
        .iter()
        .map(|m| m.timestamp)
        .chain(s.ended_at)
        .fold(s.started_at, f64::max);
    tx.execute(
        "INSERT INTO sessions (id, source, model, provider, title, parent_session_id, cwd, \
         system_prompt, started_at, updated_at, ended_at, end_reason, message_count, \
         tool_call_count, api_call_count, input_tokens, output_tokens, cache_read_tokens, \
         cache_write_tokens, reasoning_tokens, estimated_cost_usd) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18, ?19, ?20, ?21)",
        &hermes_sql::params![
            s.id,
            s.source,
            s.model,
            s.provider,
            title,
            parent,
            s.cwd,
            s.system_prompt,
            s.started_at,
            updated_at,
            s.ended_at,
            s.end_reason,
            messages.len() as i64,
            tool_calls as i64,
            s.api_call_count,
            s.input_tokens,
            s.output_tokens,
            s.cache_read_tokens,
            s.cache_write_tokens,
            s.reasoning_tokens,
            s.estimated_cost_usd,
        ],
    )?;
    let insert = "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, \
         tool_name, reasoning, reasoning_details, finish_reason, timestamp, token_count, partial, \
         active) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 0, ?12)";
    for m in messages {
        tx.execute(
            insert,
            &hermes_sql::params![
                s.id,
                m.role,
                m.content,
                encode_tool_calls(&m.tool_calls),
                m.tool_call_id,
                m.tool_name,
                m.reasoning,
                m.reasoning_details,
                m.finish_reason,
                m.timestamp,
                m.token_count,
                m.active as i64,
            ],
        )?;
    }
    Ok(Some(if retitled { title } else { None }))
}

/// The title to give an imported session: its own (cleaned) when free here, else with
/// [`TITLE_SUFFIX`] (numbered if that is taken too). Returns it and whether it changed.
fn free_title(
    tx: &hermes_sql::Db,
    raw: Option<&str>,
) -> hermes_sql::Result<(Option<String>, bool)> {
    let Some(raw) = raw else {
        return Ok((None, false));
    };
    let bounded: String = raw.chars().take(MAX_TITLE_CHARS * 4).collect();
    let Ok(base) = sanitize_title(&cut(&collapse_spaces(&bounded), MAX_TITLE_CHARS)) else {
        return Ok((None, false));
    };
    let taken = |t: &str| -> hermes_sql::Result<bool> {
        Ok(tx
            .query_row(
                "SELECT 1 FROM sessions WHERE title = ?1",
                &hermes_sql::params![t],
            )?
            .is_some())
    };
    if !taken(&base)? {
        return Ok((Some(base), false));
    }
    // Room for the suffix and a number within the title length limit.
    let stem = cut(&base, MAX_TITLE_CHARS - TITLE_SUFFIX.chars().count() - 5);
    let failure = std::cell::RefCell::new(None);
    let free = title::first_free(&format!("{}{TITLE_SUFFIX}", stem.trim_end()), |t| {
        taken(t).unwrap_or_else(|e| {
            failure.replace(Some(e));
            true
        })
    });
    match failure.into_inner() {
        Some(e) => Err(e),
        None => Ok((free, true)),
    }
}

fn collapse_spaces(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(s: &str, chars: usize) -> String {
    s.chars().take(chars).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &'static str, calls: Vec<ToolCall>, answers: Option<&str>) -> PyMessage {
        PyMessage {
            role,
            content: String::new(),
            tool_calls: calls,
            tool_call_id: answers.map(str::to_string),
            tool_name: None,
            reasoning: None,
            reasoning_details: None,
            finish_reason: None,
            timestamp: 0.0,
            token_count: None,
            active: true,
        }
    }

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn structured_content_keeps_its_text_and_marks_pictures() {
        let stored = format!(
            "{JSON_CONTENT_PREFIX}{}",
            serde_json::json!([
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,xx"}},
                {"type": "input_audio", "input_audio": {}},
            ])
        );
        assert_eq!(
            content_text(&stored),
            "What is this?\n[image]\n[input_audio]"
        );
        assert_eq!(
            content_text(r#"[{"type":"text","text":"a"},{"type":"input_image"}]"#),
            "a\n[image]"
        );
        // Text that merely looks like JSON stays as it was.
        assert_eq!(content_text("[1, 2, 3]"), "[1, 2, 3]");
        assert_eq!(content_text("plain"), "plain");
    }

    #[test]
    fn tool_calls_of_every_python_shape_are_converted() {
        let calls = convert_tool_calls(
            r#"[{"id":"c1","call_id":"c1","response_item_id":"fc_c1","type":"function",
                 "function":{"name":"terminal","arguments":"{\"command\":\"ls\"}"}},
                {"call_id":"c2","function":{"name":"read_file","arguments":{"path":"x"}}},
                {"name":"web_search","arguments":""},
                {"id":"c4"}]"#,
        );
        assert_eq!(
            calls,
            vec![
                ToolCall {
                    id: "c1".into(),
                    name: "terminal".into(),
                    arguments: "{\"command\":\"ls\"}".into()
                },
                ToolCall {
                    id: "c2".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"x\"}".into()
                },
                ToolCall {
                    id: String::new(),
                    name: "web_search".into(),
                    arguments: "{}".into()
                },
            ]
        );
        assert_eq!(
            convert_tool_calls(r#"{"name":"terminal","arguments":"{}"}"#).len(),
            1
        );
        assert!(convert_tool_calls("not json").is_empty());
    }

    #[test]
    fn calls_without_ids_take_the_ids_of_their_results() {
        let mut messages = vec![
            msg(
                "assistant",
                vec![call("", "a"), call("known", "b"), call("", "c")],
                None,
            ),
            msg("tool", vec![], Some("r1")),
            msg("tool", vec![], Some("known")),
            msg("user", vec![], None),
            msg("assistant", vec![call("", "d")], None),
        ];
        pair_tool_call_ids(&mut messages);
        let ids: Vec<&str> = messages[0]
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(ids, ["r1", "known", "call_imported_0_2"]);
        assert_eq!(messages[4].tool_calls[0].id, "call_imported_4_0");
    }

    #[test]
    fn parents_come_first_and_cycles_end() {
        let s = |id: &str, parent: Option<&str>| PySession {
            id: id.into(),
            source: "cli".into(),
            model: None,
            provider: None,
            title: None,
            parent_session_id: parent.map(str::to_string),
            cwd: None,
            system_prompt: None,
            started_at: 0.0,
            ended_at: None,
            end_reason: None,
            api_call_count: 0,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
            estimated_cost_usd: None,
        };
        let ordered = parents_first(vec![
            s("child", Some("parent")),
            s("loner", Some("gone")),
            s("parent", Some("grand")),
            s("grand", None),
            s("x", Some("y")),
            s("y", Some("x")),
        ]);
        let ids: Vec<&str> = ordered.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["grand", "parent", "child", "loner", "y", "x"]);
    }

    #[test]
    fn reasoning_details_stay_a_list() {
        assert_eq!(
            reasoning_details(r#"{"type":"thinking"}"#).as_deref(),
            Some(r#"[{"type":"thinking"}]"#)
        );
        assert_eq!(reasoning_details("[]"), None);
        assert_eq!(reasoning_details("nope"), None);
    }
}
