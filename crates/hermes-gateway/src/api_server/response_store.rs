//! The stored Responses of `POST /v1/responses`: each response object with the whole
//! conversation after it (tool calls and results included), the `instructions` it ran with and
//! the stored session it was recorded in, so `previous_response_id` continues exactly that
//! branch of the conversation and `GET /v1/responses/{id}` returns it. Bounded like the Python
//! Hermes's store: the least recently used beyond [`MAX_STORED_RESPONSES`] are dropped. Kept in
//! SQLite (`api_responses.db` in the home, owner-only) so chains survive a restart; the Python
//! Hermes's `response_store.db` has another schema and is left alone.

use std::path::Path;
use std::sync::Mutex;

use hermes_protocol::Message;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

/// The Python Hermes's bound.
pub const MAX_STORED_RESPONSES: usize = 100;

/// The file name in the home.
pub const FILE_NAME: &str = "api_responses.db";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the response store {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("the response store: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("the response store holds a damaged entry: {0}")]
    Damaged(#[from] serde_json::Error),
    #[error("the response store is unusable after a panic")]
    Poisoned,
}

/// One stored response.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    /// The response object as `POST /v1/responses` returned it.
    pub response: Value,
    /// The conversation after this response, without the system prompt.
    pub conversation: Vec<Message>,
    pub instructions: Option<String>,
    pub session_id: Option<String>,
}

pub struct ResponseStore {
    conn: Mutex<Connection>,
    max: usize,
}

impl std::fmt::Debug for ResponseStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseStore")
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl ResponseStore {
    /// Opens (creating) the store at `path`, or one in memory; keeps at most `max` responses.
    pub fn open(path: Option<&Path>, max: usize) -> Result<ResponseStore, StoreError> {
        let conn = match path {
            Some(p) => {
                let conn = Connection::open(p).map_err(|source| StoreError::Open {
                    path: p.display().to_string(),
                    source,
                })?;
                owner_only(p);
                conn
            }
            None => Connection::open_in_memory()?,
        };
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS responses (
                id TEXT PRIMARY KEY,
                response TEXT NOT NULL,
                conversation TEXT NOT NULL,
                instructions TEXT,
                session_id TEXT,
                used INTEGER NOT NULL
            );",
        )?;
        Ok(ResponseStore {
            conn: Mutex::new(conn),
            max: max.max(1),
        })
    }

    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
        self.conn.lock().map_err(|_| StoreError::Poisoned)
    }

    /// Stores (or replaces) `id`, then drops the least recently used beyond the bound.
    pub fn put(&self, id: &str, entry: &StoredResponse) -> Result<(), StoreError> {
        let conn = self.conn()?;
        conn.execute(
            "INSERT OR REPLACE INTO responses (id, response, conversation, instructions, session_id, used)
             VALUES (?1, ?2, ?3, ?4, ?5, (SELECT COALESCE(MAX(used), 0) + 1 FROM responses))",
            params![
                id,
                entry.response.to_string(),
                serde_json::to_string(&entry.conversation)?,
                entry.instructions,
                entry.session_id,
            ],
        )?;
        conn.execute(
            "DELETE FROM responses WHERE id NOT IN
             (SELECT id FROM responses ORDER BY used DESC LIMIT ?1)",
            params![i64::try_from(self.max).unwrap_or(i64::MAX)],
        )?;
        Ok(())
    }

    /// The response `id`, marked as just used.
    pub fn get(&self, id: &str) -> Result<Option<StoredResponse>, StoreError> {
        let conn = self.conn()?;
        let row = conn
            .query_row(
                "SELECT response, conversation, instructions, session_id FROM responses WHERE id = ?1",
                params![id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, Option<String>>(3)?,
                    ))
                },
            )
            .optional()?;
        let Some((response, conversation, instructions, session_id)) = row else {
            return Ok(None);
        };
        conn.execute(
            "UPDATE responses SET used = (SELECT MAX(used) + 1 FROM responses) WHERE id = ?1",
            params![id],
        )?;
        Ok(Some(StoredResponse {
            response: serde_json::from_str(&response)?,
            conversation: serde_json::from_str(&conversation)?,
            instructions,
            session_id,
        }))
    }

    /// Deletes `id`; whether it was there.
    pub fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let n = self
            .conn()?
            .execute("DELETE FROM responses WHERE id = ?1", params![id])?;
        Ok(n > 0)
    }

    pub fn len(&self) -> Result<usize, StoreError> {
        let n: i64 = self
            .conn()?
            .query_row("SELECT COUNT(*) FROM responses", [], |r| r.get(0))?;
        Ok(usize::try_from(n).unwrap_or_default())
    }

    pub fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }
}

/// Stored conversations are private: the file is readable by its owner only.
fn owner_only(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(n: u32) -> StoredResponse {
        StoredResponse {
            response: json!({"id": format!("resp_{n}"), "object": "response"}),
            conversation: vec![Message::user(format!("q{n}")), Message::assistant("a")],
            instructions: Some("be brief".into()),
            session_id: Some("s1".into()),
        }
    }

    #[test]
    fn keeps_the_most_recently_used_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let store = ResponseStore::open(Some(&path), 2).unwrap();
        store.put("r1", &entry(1)).unwrap();
        store.put("r2", &entry(2)).unwrap();
        // Using r1 makes r2 the least recently used.
        assert_eq!(store.get("r1").unwrap(), Some(entry(1)));
        store.put("r3", &entry(3)).unwrap();
        assert_eq!(store.len().unwrap(), 2);
        assert!(store.get("r2").unwrap().is_none());
        drop(store);
        let store = ResponseStore::open(Some(&path), 2).unwrap();
        assert_eq!(store.get("r3").unwrap(), Some(entry(3)));
        assert!(store.delete("r3").unwrap());
        assert!(!store.delete("r3").unwrap());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
