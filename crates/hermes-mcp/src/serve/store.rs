//! The conversation tools of `hermes mcp serve`, read from the home's session store (its
//! `sessions.db`, or its PostgreSQL schema with `store.backend: postgres`): each
//! stored session is a conversation whose `session_key` is its id (an id prefix or a title
//! finds it too). The database is opened per call, read-only in effect, on a blocking
//! thread; a home without one has no conversations.

use std::path::Path;
use std::sync::LazyLock;

use hermes_protocol::Role;
use hermes_store::{SessionRecord, Store, StoreError, StoreLocation, StoredMessage};
use regex::Regex;
use serde_json::{Value, json};

/// Why a conversation tool has no answer; the text is the `{"error": ...}` the client reads
/// (the Python Hermes's wording where it has one).
#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    /// The store exists but cannot be opened.
    #[error("Session database unavailable: {0}")]
    Unavailable(#[source] StoreError),
    /// No session has this key (id, id prefix or title), or there is no store at all.
    #[error("Conversation not found: {0}")]
    ConversationNotFound(String),
    /// The conversation has no message with this id.
    #[error("Message not found: {0}")]
    MessageNotFound(String),
    /// Reading the open store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Conversations as the Python Hermes lists them (newest first).
pub fn conversations(
    db: &StoreLocation,
    platform: Option<&str>,
    search: Option<&str>,
    limit: usize,
) -> Result<Value, ConversationError> {
    let Some(store) = open(db)? else {
        return Ok(json!({"count": 0, "conversations": []}));
    };
    // Read more than `limit` when filtering, so the filter has enough to choose from.
    let rows = store.list_sessions(if search.is_some() { 10_000 } else { limit }, None)?;
    let wanted = |s: &SessionRecord, preview: &str| {
        platform.is_none_or(|p| s.source.eq_ignore_ascii_case(p))
            && search.is_none_or(|q| {
                let q = q.to_lowercase();
                [
                    s.title.as_deref().unwrap_or_default(),
                    preview,
                    s.id.as_str(),
                ]
                .iter()
                .any(|t| t.to_lowercase().contains(&q))
            })
    };
    let list: Vec<Value> = rows
        .iter()
        .filter(|r| wanted(&r.session, &r.preview))
        .take(limit)
        .map(|r| {
            let s = &r.session;
            json!({
                "session_key": s.id,
                "session_id": s.id,
                "platform": s.source,
                "chat_type": "",
                "display_name": display_name(s, &r.preview),
                "chat_name": s.title.clone().unwrap_or_default(),
                "user_name": "",
                "updated_at": hermes_store::time::format_iso(s.updated_at),
            })
        })
        .collect();
    Ok(json!({"count": list.len(), "conversations": list}))
}

fn display_name(s: &SessionRecord, preview: &str) -> String {
    match &s.title {
        Some(t) if !t.is_empty() => t.clone(),
        _ => preview.chars().take(60).collect(),
    }
}

/// One conversation's details.
pub fn conversation(db: &StoreLocation, key: &str) -> Result<Value, ConversationError> {
    let (store, s) = find(db, key)?;
    let preview = store
        .messages(&s.id)
        .ok()
        .and_then(|m| {
            m.into_iter()
                .find(|m| m.message.role == Role::User)
                .map(|m| m.message.content)
        })
        .unwrap_or_default();
    Ok(json!({
        "session_key": s.id,
        "session_id": s.id,
        "platform": s.source,
        "chat_type": "",
        "display_name": display_name(&s, &preview),
        "user_name": "",
        "chat_name": s.title.clone().unwrap_or_default(),
        "chat_id": "",
        "thread_id": null,
        "title": s.title,
        "model": s.model,
        "message_count": s.message_count,
        "updated_at": hermes_store::time::format_iso(s.updated_at),
        "created_at": hermes_store::time::format_iso(s.started_at),
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
        "total_tokens": s.input_tokens.saturating_add(s.output_tokens),
    }))
}

/// The latest `limit` user and assistant messages with text, oldest first.
pub fn messages(db: &StoreLocation, key: &str, limit: usize) -> Result<Value, ConversationError> {
    let (store, s) = find(db, key)?;
    let all = store.messages(&s.id)?;
    let chat: Vec<&StoredMessage> = all
        .iter()
        .filter(|m| matches!(m.message.role, Role::User | Role::Assistant))
        .filter(|m| !m.message.content.trim().is_empty())
        .collect();
    let start = chat.len().saturating_sub(limit);
    let list: Vec<Value> = chat[start..]
        .iter()
        .map(|m| {
            json!({
                "id": m.id.to_string(),
                "role": m.message.role.as_str(),
                "content": m.message.content.chars().take(2000).collect::<String>(),
                "timestamp": m.timestamp,
            })
        })
        .collect();
    Ok(json!({
        "session_key": s.id,
        "count": list.len(),
        "total_in_session": chat.len(),
        "messages": list,
    }))
}

static MEDIA: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"MEDIA:\s*(\S+)").ok());

/// The attachments of one message: `MEDIA:` references in its text.
pub fn attachments(
    db: &StoreLocation,
    key: &str,
    message_id: &str,
) -> Result<Value, ConversationError> {
    let (store, s) = find(db, key)?;
    let all = store.messages(&s.id)?;
    let Some(m) = all.iter().find(|m| m.id.to_string() == message_id) else {
        return Err(ConversationError::MessageNotFound(message_id.to_string()));
    };
    let list: Vec<Value> = MEDIA
        .as_ref()
        .map(|re| {
            re.captures_iter(&m.message.content)
                .filter_map(|c| c.get(1))
                .map(|p| json!({"type": "media", "path": p.as_str()}))
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({"message_id": message_id, "count": list.len(), "attachments": list}))
}

fn open(db: &StoreLocation) -> Result<Option<Store>, ConversationError> {
    if let StoreLocation::File(path) = db
        && !path.exists()
    {
        return Ok(None);
    }
    db.open().map(Some).map_err(ConversationError::Unavailable)
}

fn find(db: &StoreLocation, key: &str) -> Result<(Store, SessionRecord), ConversationError> {
    let not_found = || ConversationError::ConversationNotFound(key.to_string());
    let store = open(db)?.ok_or_else(not_found)?;
    match store.resolve_session(key) {
        Ok(s) => Ok((store, s)),
        Err(StoreError::SessionNotFound(_)) => Err(not_found()),
        Err(e) => Err(e.into()),
    }
}

/// The database file of a home.
pub fn db_path(home: &Path) -> StoreLocation {
    StoreLocation::File(home.join(hermes_store::DB_FILE_NAME))
}
