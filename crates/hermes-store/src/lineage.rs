//! What API clients see of the store: a paged listing that hides child sessions (compression
//! continuations, delegated runs) but keeps branches, empty sessions created ahead of their
//! first message, branches (forks) carrying their parent's transcript, and titles cleared.

use hermes_sql::params;

use crate::sessions::{COLUMNS, PREVIEW_SQL, insert_session, summary};
use crate::title::{first_free, sanitize_title};
use crate::{NewSession, SessionSummary, Store, StoreError, time};

/// The end reason of a session a branch was taken from (the Python Hermes's `/branch`).
pub const BRANCHED: &str = "branched";

/// One page of [`Store::list_sessions_page`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionPage<'a> {
    pub limit: usize,
    pub offset: usize,
    /// Only sessions from this source.
    pub source: Option<&'a str>,
    /// Also list sessions that continue another one; without it only roots and branches are.
    pub include_children: bool,
}

impl Store {
    /// The most recently active sessions first, a page at a time. A child session is listed
    /// only when asked for or when it is a branch (its parent ended as [`BRANCHED`]), as the
    /// Python Hermes lists them.
    pub fn list_sessions_page(
        &self,
        page: &SessionPage<'_>,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS}, {PREVIEW_SQL} FROM sessions \
             WHERE (source = ?1 OR ?1 IS NULL) AND (?2 OR parent_session_id IS NULL OR EXISTS \
               (SELECT 1 FROM sessions p WHERE p.id = sessions.parent_session_id \
                AND p.end_reason = '{BRANCHED}')) \
             ORDER BY updated_at DESC LIMIT ?3 OFFSET ?4"
        );
        let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(page.offset).unwrap_or(i64::MAX);
        self.read_rows(
            &sql,
            &params![page.source, page.include_children, limit, offset],
            summary,
        )
    }

    /// How many sessions [`Store::list_sessions_page`] would list over all pages.
    pub fn count_sessions_page(&self, page: &SessionPage<'_>) -> Result<usize, StoreError> {
        // The typed comparison first: PostgreSQL cannot type a bare `?1 IS NULL`.
        let sql = format!(
            "SELECT COUNT(*) FROM sessions \
             WHERE (source = ?1 OR ?1 IS NULL) AND (?2 OR parent_session_id IS NULL OR EXISTS \
               (SELECT 1 FROM sessions p WHERE p.id = sessions.parent_session_id \
                AND p.end_reason = '{BRANCHED}'))"
        );
        self.db
            .query_value::<i64>(&sql, &params![page.source, page.include_children])
            .map(|n| usize::try_from(n.unwrap_or(0)).unwrap_or(0))
            .map_err(|e| self.read_error(e))
    }

    /// Creates a session with no messages yet (an API client names it before its first turn);
    /// `false` when the id is taken. The title (if any) is set in the same transaction.
    pub fn create_empty_session(
        &mut self,
        new: &NewSession,
        title: Option<&str>,
    ) -> Result<bool, StoreError> {
        let title = title.map(sanitize_title).transpose()?;
        let now = time::now();
        let outcome = self.write(|tx| {
            // The title is checked before the insert, so a taken one leaves no session behind.
            if let Some(title) = &title {
                let holder: Option<String> = tx.query_value(
                    "SELECT id FROM sessions WHERE title = ?1 AND id != ?2",
                    &params![title, new.id],
                )?;
                if let Some(holder) = holder {
                    return Ok(Err(holder));
                }
            }
            if insert_session(tx, new, now)? == 0 {
                return Ok(Ok(false));
            }
            if let Some(title) = &title {
                tx.execute(
                    "UPDATE sessions SET title = ?2 WHERE id = ?1",
                    &params![new.id, title],
                )?;
            }
            Ok(Ok(true))
        })?;
        outcome.map_err(|session_id| StoreError::TitleTaken {
            title: title.unwrap_or_default(),
            session_id,
        })
    }

    /// Removes the title of a session (`false`: no such session).
    pub fn clear_title(&mut self, id: &str) -> Result<bool, StoreError> {
        let changed = self.write(|tx| {
            tx.execute(
                "UPDATE sessions SET title = NULL WHERE id = ?1",
                &params![id],
            )
        })?;
        Ok(changed > 0)
    }

    /// Branches `new.parent_session_id` into the new session `new`: the parent's conversation
    /// (the messages it continues from, without partial rows) is copied in order and the
    /// parent is ended as [`BRANCHED`], in one transaction. Returns how many messages were
    /// copied; `None` when `new.id` is taken.
    pub fn fork_session(&mut self, new: &NewSession) -> Result<Option<usize>, StoreError> {
        let Some(parent) = new.parent_session_id.clone() else {
            return Err(StoreError::SessionNotFound(String::new()));
        };
        let now = time::now();
        self.write(|tx| {
            if insert_session(tx, new, now)? == 0 {
                return Ok(None);
            }
            let copied = tx.execute(
                "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, \
                 tool_name, reasoning, reasoning_details, finish_reason, timestamp, token_count, \
                 partial) \
                 SELECT ?1, role, content, tool_calls, tool_call_id, tool_name, reasoning, \
                 reasoning_details, finish_reason, timestamp, token_count, 0 FROM messages \
                 WHERE session_id = ?2 AND active = 1 AND partial = 0 ORDER BY id",
                &params![new.id, parent],
            )?;
            tx.execute(
                &format!(
                    "UPDATE sessions SET message_count = ?2, updated_at = ?3, \
                     tool_call_count = (SELECT COALESCE(SUM({}), 0) \
                        FROM messages WHERE session_id = ?1 AND tool_calls IS NOT NULL) \
                     WHERE id = ?1",
                    crate::messages::json_array_length(tx)
                ),
                &params![new.id, copied as i64, now],
            )?;
            tx.execute(
                "UPDATE sessions SET ended_at = ?2, end_reason = ?3 WHERE id = ?1",
                &params![parent, now, BRANCHED],
            )?;
            Ok(Some(copied))
        })
    }

    /// The first title of the lineage of `base` not in use: `base`, else `base #2`, `#3`, ...
    /// (a `#N` suffix of `base` is dropped first).
    pub fn next_title_in_lineage(&self, base: &str) -> Result<String, StoreError> {
        let root = match base.rsplit_once(" #") {
            Some((head, n)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => head,
            _ => base,
        };
        let root = sanitize_title(root)?;
        let taken = |t: &str| {
            self.db
                .query_row("SELECT 1 FROM sessions WHERE title = ?1", &params![t])
                .map_or(true, |found| found.is_some())
        };
        first_free(&root, taken).ok_or_else(|| {
            StoreError::InvalidTitle(format!("every numbered title of \"{root}\" is taken"))
        })
    }
}
