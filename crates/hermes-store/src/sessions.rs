//! Session rows: creating, finding (by id, unique id prefix or title), listing, titling, ending,
//! usage totals, deleting and pruning.

use hermes_protocol::Usage;
use hermes_sql::{Db, Dialect, Row, params};
use serde::Serialize;

use crate::title::{self, sanitize_title};
use crate::{Store, StoreError, time};

/// What is known when a session starts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewSession {
    pub id: String,
    /// Where it runs: `cli`, `telegram`, `api`, `cron`, ...
    pub source: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub cwd: Option<String>,
    /// The session this one continues (after compression or delegation).
    pub parent_session_id: Option<String>,
    /// The system prompt the session started with (for exports).
    pub system_prompt: Option<String>,
}

/// One stored session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRecord {
    pub id: String,
    pub source: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub title: Option<String>,
    pub parent_session_id: Option<String>,
    pub cwd: Option<String>,
    pub system_prompt: Option<String>,
    pub started_at: f64,
    /// The last time anything was written to it.
    pub updated_at: f64,
    pub ended_at: Option<f64>,
    pub end_reason: Option<String>,
    pub message_count: i64,
    pub tool_call_count: i64,
    pub api_call_count: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub reasoning_tokens: i64,
    pub estimated_cost_usd: Option<f64>,
}

/// A session with the start of its first user message, for listings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    #[serde(flatten)]
    pub session: SessionRecord,
    pub preview: String,
}

pub(crate) const COLUMNS: &str = "id, source, model, provider, title, parent_session_id, cwd, \
    system_prompt, started_at, updated_at, ended_at, end_reason, message_count, tool_call_count, api_call_count, \
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, \
    estimated_cost_usd";

/// The first user message's opening, shown in listings.
pub(crate) const PREVIEW_SQL: &str = "(SELECT substr(m.content, 1, 200) FROM messages m \
    WHERE m.session_id = sessions.id AND m.role = 'user' ORDER BY m.id LIMIT 1)";

fn record(row: &Row) -> hermes_sql::Result<SessionRecord> {
    Ok(SessionRecord {
        id: row.get(0)?,
        source: row.get(1)?,
        model: row.get(2)?,
        provider: row.get(3)?,
        title: row.get(4)?,
        parent_session_id: row.get(5)?,
        cwd: row.get(6)?,
        system_prompt: row.get(7)?,
        started_at: row.get(8)?,
        updated_at: row.get(9)?,
        ended_at: row.get(10)?,
        end_reason: row.get(11)?,
        message_count: row.get(12)?,
        tool_call_count: row.get(13)?,
        api_call_count: row.get(14)?,
        input_tokens: row.get(15)?,
        output_tokens: row.get(16)?,
        cache_read_tokens: row.get(17)?,
        cache_write_tokens: row.get(18)?,
        reasoning_tokens: row.get(19)?,
        estimated_cost_usd: row.get(20)?,
    })
}

pub(crate) fn summary(row: &Row) -> hermes_sql::Result<SessionSummary> {
    let preview: Option<String> = row.get(21)?;
    Ok(SessionSummary {
        session: record(row)?,
        preview: preview
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    })
}

/// Tokens are counted in u64; SQLite integers are i64. Saturate rather than wrap.
fn tokens(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store {
    /// Creates the session; creating one that exists changes nothing.
    pub fn create_session(&mut self, new: &NewSession) -> Result<(), StoreError> {
        let now = time::now();
        self.write(|tx| insert_session(tx, new, now))?;
        Ok(())
    }

    /// Adds model calls and their usage (and cost, when known) to the session's totals.
    pub fn record_calls(
        &mut self,
        id: &str,
        api_calls: i64,
        usage: &Usage,
        cost_usd: Option<f64>,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE sessions SET api_call_count = api_call_count + ?8, \
                 input_tokens = input_tokens + ?2, \
                 output_tokens = output_tokens + ?3, cache_read_tokens = cache_read_tokens + ?4, \
                 cache_write_tokens = cache_write_tokens + ?5, \
                 reasoning_tokens = reasoning_tokens + ?6, \
                 estimated_cost_usd = COALESCE(COALESCE(estimated_cost_usd, 0) + ?7, \
                     estimated_cost_usd) \
                 WHERE id = ?1",
                &params![
                    id,
                    tokens(usage.input_tokens),
                    tokens(usage.output_tokens),
                    tokens(usage.cache_read_tokens),
                    tokens(usage.cache_write_tokens),
                    tokens(usage.reasoning_tokens),
                    cost_usd,
                    api_calls
                ],
            )
        })?;
        Ok(())
    }

    pub fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        self.read_row(
            &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"),
            &params![id],
            record,
        )
    }

    /// The session named by `key`: its exact id, its exact title, or a prefix of exactly one id.
    pub fn resolve_session(&self, key: &str) -> Result<SessionRecord, StoreError> {
        let key = key.trim();
        if key.is_empty() {
            return Err(StoreError::SessionNotFound(String::new()));
        }
        if let Some(s) = self.session(key)? {
            return Ok(s);
        }
        let by_title = self.read_row(
            &format!("SELECT {COLUMNS} FROM sessions WHERE title = ?1"),
            &params![key],
            record,
        )?;
        if let Some(s) = by_title {
            return Ok(s);
        }
        let matches = self.read_rows(
            &format!(
                "SELECT {COLUMNS} FROM sessions WHERE id LIKE ?1 ESCAPE '\\' \
                 ORDER BY updated_at DESC LIMIT 6"
            ),
            &params![like_prefix(key)],
            record,
        )?;
        let mut matches = matches.into_iter();
        match (matches.next(), matches.len()) {
            (None, _) => Err(StoreError::SessionNotFound(key.to_string())),
            (Some(only), 0) => Ok(only),
            (Some(first), _) => Err(StoreError::Ambiguous {
                key: key.to_string(),
                candidates: std::iter::once(first)
                    .chain(matches)
                    .take(5)
                    .map(|s| s.id)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// The most recently active session, preferring those started in `cwd`.
    pub fn latest_session(&self, cwd: Option<&str>) -> Result<Option<SessionRecord>, StoreError> {
        if let Some(dir) = cwd {
            let here = self.read_row(
                &format!(
                    "SELECT {COLUMNS} FROM sessions WHERE cwd = ?1 \
                     ORDER BY updated_at DESC LIMIT 1"
                ),
                &params![dir],
                record,
            )?;
            if here.is_some() {
                return Ok(here);
            }
        }
        self.read_row(
            &format!("SELECT {COLUMNS} FROM sessions ORDER BY updated_at DESC LIMIT 1"),
            &[],
            record,
        )
    }

    /// The most recently active sessions first, optionally from one source only.
    pub fn list_sessions(
        &self,
        limit: usize,
        source: Option<&str>,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS}, {PREVIEW_SQL} FROM sessions \
             WHERE (source = ?1 OR ?1 IS NULL) ORDER BY updated_at DESC LIMIT ?2"
        );
        self.read_rows(&sql, &params![source, limit as i64], summary)
    }

    /// [`Store::list_sessions`] without the sessions of the `hidden` sources, unless `source`
    /// asks for one: the background reviews and curator passes stay out of `hermes sessions
    /// list`.
    pub fn list_sessions_hiding(
        &self,
        limit: usize,
        source: Option<&str>,
        hidden: &[&str],
    ) -> Result<Vec<SessionSummary>, StoreError> {
        // The hidden sources as a JSON array, unpacked by SQLite: one statement whatever
        // their number.
        let hidden = serde_json::to_string(hidden).unwrap_or_else(|_| "[]".into());
        let unpack = match self.db.dialect() {
            Dialect::Sqlite => "SELECT value FROM json_each(?3)",
            Dialect::Postgres => "SELECT json_array_elements_text(?3::json)",
        };
        let sql = format!(
            "SELECT {COLUMNS}, {PREVIEW_SQL} FROM sessions \
             WHERE (source = ?1 OR ?1 IS NULL) \
             AND (?1 IS NOT NULL OR source NOT IN ({unpack})) \
             ORDER BY updated_at DESC LIMIT ?2"
        );
        self.read_rows(&sql, &params![source, limit as i64, hidden], summary)
    }

    /// Sets the title (cleaned; see [`sanitize_title`]). Titles are unique.
    pub fn set_title(&mut self, id: &str, raw: &str) -> Result<String, StoreError> {
        let title = sanitize_title(raw)?;
        let outcome = self.write(|tx| {
            let holder: Option<String> = tx.query_value(
                "SELECT id FROM sessions WHERE title = ?1 AND id != ?2",
                &params![title, id],
            )?;
            if let Some(other) = holder {
                return Ok(Err(other));
            }
            let changed = tx.execute(
                "UPDATE sessions SET title = ?2 WHERE id = ?1",
                &params![id, title],
            )?;
            Ok(Ok(changed))
        })?;
        match outcome {
            Err(session_id) => Err(StoreError::TitleTaken { title, session_id }),
            Ok(0) => Err(StoreError::SessionNotFound(id.to_string())),
            Ok(_) => Ok(title),
        }
    }

    /// Titles an untitled session after the user's first message (numbered when the title is
    /// taken). Returns the title set, if any.
    pub fn set_auto_title(
        &mut self,
        id: &str,
        first_user_message: &str,
    ) -> Result<Option<String>, StoreError> {
        let Some(base) = title::auto_title(first_user_message) else {
            return Ok(None);
        };
        self.write(|tx| {
            let current: Option<Option<String>> =
                tx.query_value("SELECT title FROM sessions WHERE id = ?1", &params![id])?;
            if !matches!(current, Some(None)) {
                return Ok(None);
            }
            let taken = |t: &str| {
                tx.query_row("SELECT 1 FROM sessions WHERE title = ?1", &params![t])
                    .map_or(true, |found| found.is_some())
            };
            let Some(free) = title::first_free(&base, taken) else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE sessions SET title = ?2 WHERE id = ?1",
                &params![id, free],
            )?;
            Ok(Some(free))
        })
    }

    /// Marks the session ended (it can still be resumed).
    pub fn end_session(&mut self, id: &str, reason: &str) -> Result<(), StoreError> {
        let now = time::now();
        self.write(|tx| {
            tx.execute(
                "UPDATE sessions SET ended_at = ?2, end_reason = ?3 WHERE id = ?1",
                &params![id, now, reason],
            )
        })?;
        Ok(())
    }

    /// Clears the end of a resumed session and records the model now in use.
    pub fn reopen_session(
        &mut self,
        id: &str,
        model: Option<&str>,
        provider: Option<&str>,
    ) -> Result<(), StoreError> {
        let now = time::now();
        self.write(|tx| {
            tx.execute(
                "UPDATE sessions SET ended_at = NULL, end_reason = NULL, updated_at = ?2, \
                 model = COALESCE(?3, model), provider = COALESCE(?4, provider) WHERE id = ?1",
                &params![id, now, model, provider],
            )
        })?;
        Ok(())
    }

    /// Records the model and provider now in use (after `/model`, or a fallback).
    pub fn set_model(&mut self, id: &str, model: &str, provider: &str) -> Result<(), StoreError> {
        let now = time::now();
        self.write(|tx| {
            tx.execute(
                "UPDATE sessions SET model = ?2, provider = ?3, updated_at = ?4 WHERE id = ?1",
                &params![id, model, provider, now],
            )
        })?;
        Ok(())
    }

    /// Adds token usage (and cost, when known) to the session's totals.
    pub fn record_usage(
        &mut self,
        id: &str,
        usage: &Usage,
        cost_usd: Option<f64>,
    ) -> Result<(), StoreError> {
        self.record_calls(id, 0, usage, cost_usd)
    }

    /// Counts one model call.
    pub fn record_api_call(&mut self, id: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE sessions SET api_call_count = api_call_count + 1 WHERE id = ?1",
                &params![id],
            )
        })?;
        Ok(())
    }

    /// Deletes a session and its messages. Sessions that continued it lose their parent link.
    pub fn delete_session(&mut self, id: &str) -> Result<bool, StoreError> {
        let deleted = self.write(|tx| {
            tx.execute("DELETE FROM messages WHERE session_id = ?1", &params![id])?;
            tx.execute("DELETE FROM sessions WHERE id = ?1", &params![id])
        })?;
        Ok(deleted > 0)
    }

    /// Deletes every session whose last activity is older than `age_secs`; returns their ids.
    pub fn prune_sessions(&mut self, age_secs: f64) -> Result<Vec<String>, StoreError> {
        let cutoff = time::now() - age_secs.max(0.0);
        self.write(|tx| {
            let ids: Vec<String> = crate::store::rows(
                tx,
                "SELECT id FROM sessions WHERE updated_at < ?1 ORDER BY updated_at",
                &params![cutoff],
                |r| r.get(0),
            )?;
            tx.execute(
                "DELETE FROM messages WHERE session_id IN \
                 (SELECT id FROM sessions WHERE updated_at < ?1)",
                &params![cutoff],
            )?;
            tx.execute(
                "DELETE FROM sessions WHERE updated_at < ?1",
                &params![cutoff],
            )?;
            Ok(ids)
        })
    }
}

/// Inserts the session row unless it exists.
pub(crate) fn insert_session(tx: &Db, new: &NewSession, now: f64) -> hermes_sql::Result<usize> {
    tx.execute(
        "INSERT INTO sessions (id, source, model, provider, cwd, parent_session_id, \
         system_prompt, started_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8) ON CONFLICT(id) DO NOTHING",
        &params![
            new.id,
            new.source,
            new.model,
            new.provider,
            new.cwd,
            new.parent_session_id,
            new.system_prompt,
            now
        ],
    )
}

/// A LIKE pattern matching ids that start with `prefix` literally (`\` escapes).
fn like_prefix(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_prefixes_escape_wildcards() {
        assert_eq!(like_prefix("2025_11%"), "2025\\_11\\%%");
    }
}
