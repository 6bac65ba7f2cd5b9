//! Message rows. Each message is one committed row written the moment it exists. An answer that
//! is still streaming lives in a *partial* row (kept out of the search index) that is updated as
//! text arrives and made final when the complete message is known; a partial row left behind by
//! a crash is sealed as an interrupted answer when the session is resumed.

use hermes_protocol::{Message, Role, ToolCall};
use hermes_sql::{Db, Row, params};
use serde_json::{Value, json};

use crate::{Store, StoreError, time};

/// What the store records about a message beyond the message itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MessageMeta {
    /// `stop`, `tool_calls`, `length`, `interrupted`, ... (assistant messages).
    pub finish_reason: Option<String>,
    /// Output tokens of the model call that produced it, when reported.
    pub token_count: Option<i64>,
}

/// One stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// Increasing with the order messages were written.
    pub id: i64,
    pub session_id: String,
    pub message: Message,
    pub finish_reason: Option<String>,
    pub timestamp: f64,
    pub token_count: Option<i64>,
    /// Still streaming (or cut off by a crash before it was complete).
    pub partial: bool,
}

/// The finish reason given to an answer whose stream never completed.
pub const INTERRUPTED: &str = "interrupted";

pub(crate) const MESSAGE_COLUMNS: &str = "id, session_id, role, content, tool_calls, \
    tool_call_id, tool_name, reasoning, finish_reason, timestamp, token_count, partial, \
    reasoning_details";

/// Reads a row selected with [`MESSAGE_COLUMNS`]; `None` for a role this build does not know.
pub(crate) fn stored_message(row: &Row) -> hermes_sql::Result<Option<StoredMessage>> {
    let role: String = row.get(2)?;
    let Some(role) = parse_role(&role) else {
        return Ok(None);
    };
    let tool_calls: Option<String> = row.get(4)?;
    let partial: i64 = row.get(11)?;
    let details: Option<String> = row.get(12)?;
    Ok(Some(StoredMessage {
        id: row.get(0)?,
        session_id: row.get(1)?,
        message: Message {
            role,
            content: row.get(3)?,
            tool_calls: tool_calls
                .as_deref()
                .map(decode_tool_calls)
                .unwrap_or_default(),
            tool_call_id: row.get(5)?,
            name: row.get(6)?,
            reasoning: row.get(7)?,
            // Opaque provider data; unreadable JSON is dropped rather than sent back broken.
            reasoning_details: details.and_then(|d| serde_json::from_str(&d).ok()),
            // Images are given to the model for their turn; the store keeps the text.
            images: Vec::new(),
        },
        finish_reason: row.get(8)?,
        timestamp: row.get(9)?,
        token_count: row.get(10)?,
        partial: partial != 0,
    }))
}

fn parse_role(role: &str) -> Option<Role> {
    Some(match role {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        _ => return None,
    })
}

/// Tool calls as JSON in the OpenAI shape (`{id, type, function: {name, arguments}}`), the form
/// other tools reading the database expect.
pub(crate) fn encode_tool_calls(calls: &[ToolCall]) -> Option<String> {
    if calls.is_empty() {
        return None;
    }
    let list: Vec<Value> = calls
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })
        })
        .collect();
    Some(Value::Array(list).to_string())
}

/// Reads tool calls back, tolerating the flat `{id, name, arguments}` shape and object
/// arguments; entries without a name are dropped.
pub(crate) fn decode_tool_calls(text: &str) -> Vec<ToolCall> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let func = item.get("function").unwrap_or(item);
            let name = func.get("name")?.as_str()?.to_string();
            let arguments = match func.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => "{}".to_string(),
                Some(other) => other.to_string(),
            };
            let id = item
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            Some(ToolCall {
                id,
                name,
                arguments,
            })
        })
        .collect()
}

fn details_json(m: &Message) -> Option<String> {
    m.reasoning_details.as_ref().map(|d| d.to_string())
}

fn insert(
    tx: &Db,
    session_id: &str,
    m: &Message,
    meta: &MessageMeta,
    partial: bool,
    now: f64,
) -> hermes_sql::Result<i64> {
    tx.insert(
        "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, tool_name, \
         reasoning, finish_reason, timestamp, token_count, partial, reasoning_details) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        &params![
            session_id,
            m.role.as_str(),
            m.content,
            encode_tool_calls(&m.tool_calls),
            m.tool_call_id,
            m.name,
            m.reasoning,
            meta.finish_reason,
            now,
            meta.token_count,
            partial as i64,
            details_json(m)
        ],
    )
}

/// The number of tool calls in a message's `tool_calls` JSON, in the store's dialect.
pub(crate) fn json_array_length(db: &Db) -> &'static str {
    match db.dialect() {
        hermes_sql::Dialect::Sqlite => "json_array_length(tool_calls)",
        hermes_sql::Dialect::Postgres => "json_array_length(tool_calls::json)",
    }
}

/// Counts a message that became final and marks the session active.
fn count(tx: &Db, session_id: &str, tool_calls: usize, now: f64) -> hermes_sql::Result<()> {
    tx.execute(
        "UPDATE sessions SET message_count = message_count + 1, \
         tool_call_count = tool_call_count + ?2, updated_at = ?3 WHERE id = ?1",
        &params![session_id, tool_calls as i64, now],
    )?;
    Ok(())
}

impl Store {
    /// Commits one complete message; returns its id.
    pub fn append_message(
        &mut self,
        session_id: &str,
        message: &Message,
        meta: &MessageMeta,
    ) -> Result<i64, StoreError> {
        let now = time::now();
        self.write(|tx| {
            let id = insert(tx, session_id, message, meta, false, now)?;
            count(tx, session_id, message.tool_calls.len(), now)?;
            Ok(id)
        })
    }

    /// Creates the session (unless it exists) and commits its first message, in one
    /// transaction; returns the message's id.
    pub fn start_session(
        &mut self,
        new: &crate::NewSession,
        message: &Message,
        meta: &MessageMeta,
    ) -> Result<i64, StoreError> {
        let now = time::now();
        self.write(|tx| {
            crate::sessions::insert_session(tx, new, now)?;
            let id = insert(tx, &new.id, message, meta, false, now)?;
            count(tx, &new.id, message.tool_calls.len(), now)?;
            Ok(id)
        })
    }

    /// Starts the row of an answer that is streaming; returns its id.
    pub fn start_partial(&mut self, session_id: &str, text: &str) -> Result<i64, StoreError> {
        let now = time::now();
        self.write(|tx| {
            let id = insert(
                tx,
                session_id,
                &Message::assistant(text),
                &MessageMeta::default(),
                true,
                now,
            )?;
            tx.execute(
                "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
                &params![session_id, now],
            )?;
            Ok(id)
        })
    }

    /// Replaces the text streamed so far into a partial row.
    pub fn update_partial(&mut self, id: i64, text: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE messages SET content = ?2 WHERE id = ?1 AND partial = 1",
                &params![id, text],
            )
        })?;
        Ok(())
    }

    /// Makes partial row `id` the complete `message`. Should the row have vanished, the message
    /// is appended instead, so it is never lost.
    pub fn finish_partial(
        &mut self,
        session_id: &str,
        id: i64,
        message: &Message,
        meta: &MessageMeta,
    ) -> Result<i64, StoreError> {
        let now = time::now();
        self.write(|tx| {
            let changed = tx.execute(
                "UPDATE messages SET role = ?2, content = ?3, tool_calls = ?4, reasoning = ?5, \
                 finish_reason = ?6, token_count = ?7, timestamp = ?8, reasoning_details = ?9, \
                 partial = 0 WHERE id = ?1 AND partial = 1",
                &params![
                    id,
                    message.role.as_str(),
                    message.content,
                    encode_tool_calls(&message.tool_calls),
                    message.reasoning,
                    meta.finish_reason,
                    meta.token_count,
                    now,
                    details_json(message)
                ],
            )?;
            let id = if changed == 1 {
                id
            } else {
                insert(tx, session_id, message, meta, false, now)?
            };
            count(tx, session_id, message.tool_calls.len(), now)?;
            Ok(id)
        })
    }

    /// Makes every partial row of the session final as it stands (an interrupted answer);
    /// partial rows with no text are removed. Returns how many answers were kept.
    pub fn seal_partials(&mut self, session_id: &str) -> Result<usize, StoreError> {
        let now = time::now();
        self.write(|tx| {
            tx.execute(
                "DELETE FROM messages WHERE session_id = ?1 AND partial = 1 AND content = ''",
                &params![session_id],
            )?;
            let sealed = tx.execute(
                "UPDATE messages SET partial = 0, finish_reason = ?2 \
                 WHERE session_id = ?1 AND partial = 1",
                &params![session_id, INTERRUPTED],
            )?;
            if sealed > 0 {
                tx.execute(
                    "UPDATE sessions SET message_count = message_count + ?2, updated_at = ?3 \
                     WHERE id = ?1",
                    &params![session_id, sealed as i64, now],
                )?;
            }
            Ok(sealed)
        })
    }

    /// Keeps the first `keep` messages of the session (in the order written) and deletes the
    /// rest, partial rows included (`/undo`, `/retry`); the session's counts follow. Returns
    /// how many rows were deleted.
    pub fn truncate_messages(
        &mut self,
        session_id: &str,
        keep: usize,
    ) -> Result<usize, StoreError> {
        let now = time::now();
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        self.write(|tx| {
            let deleted = tx.execute(
                "DELETE FROM messages WHERE session_id = ?1 AND id NOT IN \
                 (SELECT id FROM messages WHERE session_id = ?1 ORDER BY id LIMIT ?2)",
                &params![session_id, keep],
            )?;
            if deleted > 0 {
                tx.execute(
                    &format!(
                    "UPDATE sessions SET updated_at = ?2, \
                     message_count = (SELECT count(*) FROM messages WHERE session_id = ?1 AND partial = 0), \
                     tool_call_count = (SELECT COALESCE(SUM({}), 0) \
                        FROM messages WHERE session_id = ?1 AND partial = 0 AND tool_calls IS NOT NULL) \
                     WHERE id = ?1",
                    json_array_length(tx)
                ),
                    &params![session_id, now],
                )?;
            }
            Ok(deleted)
        })
    }

    /// Every message of the session in the order written, partial rows included.
    /// The messages the conversation continues from: all but those an in-place compression
    /// replaced.
    pub fn active_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.select_messages(session_id, true)
    }

    /// Marks every message of the session inactive (an in-place compression is about to write
    /// the compressed conversation); they stay searchable. Returns how many.
    pub fn deactivate_messages(&mut self, session_id: &str) -> Result<usize, StoreError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE messages SET active = 0 WHERE session_id = ?1 AND active = 1",
                &params![session_id],
            )
        })
    }

    /// Every message of the session, in order (including those a compression replaced).
    pub fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.select_messages(session_id, false)
    }

    fn select_messages(
        &self,
        session_id: &str,
        only_active: bool,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let filter = if only_active { " AND active = 1" } else { "" };
        let rows = self.read_rows(
            &format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1{filter} ORDER BY id"
            ),
            &params![session_id],
            stored_message,
        )?;
        Ok(rows.into_iter().flatten().collect())
    }

    /// The conversation as the agent needs it to continue: every message in order, a partial
    /// answer as the assistant message it was becoming. (Tool calls left without a result are
    /// for the caller to close.)
    pub fn conversation(&self, session_id: &str) -> Result<Vec<Message>, StoreError> {
        Ok(self
            .active_messages(session_id)?
            .into_iter()
            .filter(|m| !(m.partial && m.message.content.is_empty()))
            .map(|m| m.message)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_round_trip_in_the_openai_shape() {
        let calls = vec![ToolCall {
            id: "call_1".into(),
            name: "terminal".into(),
            arguments: "{\"command\":\"ls\"}".into(),
        }];
        let text = encode_tool_calls(&calls).unwrap();
        assert!(text.contains("\"type\":\"function\""), "{text}");
        assert_eq!(decode_tool_calls(&text), calls);
        assert_eq!(encode_tool_calls(&[]), None);
    }

    #[test]
    fn foreign_tool_call_shapes_are_tolerated() {
        let calls = decode_tool_calls(
            r#"[{"id":"a","name":"read_file","arguments":{"path":"x"}},{"id":"b"},"junk"]"#,
        );
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "read_file");
        assert_eq!(calls[0].arguments, "{\"path\":\"x\"}");
        assert!(decode_tool_calls("not json").is_empty());
    }
}
