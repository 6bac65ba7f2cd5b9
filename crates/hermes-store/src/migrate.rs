//! The history copied to another store (`hermes store migrate`), session by session: a
//! session the target already has is left alone (so a second run copies nothing), any other
//! is copied with all its messages in one transaction, the messages getting the target's own
//! ids in their original order (two machines' histories never collide on ids). Afterwards every
//! source session must be in the target with at least as many messages.

use hermes_sql::{Value, params};

use crate::{Store, StoreError};

/// Sessions read per page.
const PAGE: i64 = 200;

/// What copying the history did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryCopy {
    pub source_sessions: i64,
    pub copied_sessions: i64,
    pub target_sessions: i64,
    pub source_messages: i64,
    pub copied_messages: i64,
    pub target_messages: i64,
}

/// Copies every session of `from` that `to` lacks; an error when a source session is missing
/// from the target afterwards or has fewer messages there.
pub fn copy_history(from: &Store, to: &mut Store) -> Result<HistoryCopy, StoreError> {
    let session_cols = shared_columns(from, to, "sessions")?;
    let message_cols: Vec<String> = shared_columns(from, to, "messages")?
        .into_iter()
        .filter(|c| c != "id")
        .collect();
    let insert_session = insert_sql("sessions", &session_cols);
    let insert_message = insert_sql("messages", &message_cols);
    let select_sessions = format!(
        "SELECT {} FROM sessions ORDER BY started_at, id LIMIT ? OFFSET ?",
        session_cols.join(", ")
    );
    let select_messages = format!(
        "SELECT {} FROM messages WHERE session_id = ? ORDER BY id",
        message_cols.join(", ")
    );
    let mut report = HistoryCopy::default();
    let mut offset = 0;
    loop {
        let page = from.read_rows(&select_sessions, &params![PAGE, offset], |r| {
            Ok(r.values().to_vec())
        })?;
        if page.is_empty() {
            break;
        }
        offset += page.len() as i64;
        for session in page {
            let Some(Value::Text(id)) = session.first().cloned() else {
                continue;
            };
            let messages =
                from.read_rows(&select_messages, &params![id], |r| Ok(r.values().to_vec()))?;
            let copied = to.write(|tx| {
                if tx
                    .query_row("SELECT 1 FROM sessions WHERE id = ?", &params![id])?
                    .is_some()
                {
                    return Ok(None);
                }
                tx.execute(&insert_session, &session)?;
                for m in &messages {
                    tx.execute(&insert_message, m)?;
                }
                Ok(Some(messages.len() as i64))
            })?;
            if let Some(n) = copied {
                report.copied_sessions += 1;
                report.copied_messages += n;
            }
            let there: i64 = to
                .read_row(
                    "SELECT COUNT(*) FROM messages WHERE session_id = ?",
                    &params![id],
                    |r| r.get(0),
                )?
                .unwrap_or(0);
            if there < messages.len() as i64 {
                return Err(StoreError::MigrationShort {
                    session: id,
                    in_source: messages.len() as i64,
                    target: there,
                });
            }
        }
    }
    report.source_sessions = count(from, "sessions")?;
    report.source_messages = count(from, "messages")?;
    report.target_sessions = count(to, "sessions")?;
    report.target_messages = count(to, "messages")?;
    Ok(report)
}

fn shared_columns(from: &Store, to: &Store, table: &str) -> Result<Vec<String>, StoreError> {
    let theirs = to.db.columns(table).map_err(|e| to.read_error(e))?;
    Ok(from
        .db
        .columns(table)
        .map_err(|e| from.read_error(e))?
        .into_iter()
        .filter(|c| c != "search_body" && theirs.contains(c))
        .collect())
}

fn insert_sql(table: &str, columns: &[String]) -> String {
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        columns.join(", "),
        vec!["?"; columns.len()].join(", ")
    )
}

fn count(store: &Store, table: &str) -> Result<i64, StoreError> {
    hermes_sql::copy::count(&store.db, table).map_err(|e| store.read_error(e))
}
