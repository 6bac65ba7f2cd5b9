//! `/api/sessions`: the stored sessions as resources, the Python Hermes's thin session API.
//! `GET` lists them (most recently active first, `limit`/`offset`, child sessions hidden unless
//! `include_children`), `POST` creates an empty one, `GET`/`PATCH`/`DELETE /{id}` read, retitle
//! or end, and delete one, `GET /{id}/messages` reads its conversation, `POST /{id}/fork`
//! branches it (a child session with the transcript copied, the parent ended as `branched`).
//! Turns in a stored session are in [`super::session_chat`]. Every answer carries the same
//! client-safe fields: no system prompt, only whether one is stored.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use hermes_protocol::Message;
use hermes_store::{
    NewSession, SessionPage, SessionRecord, Store, StoreError, StoredMessage, time,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Shared, body_bytes, check_auth, error_response, json_response};

/// Sessions listed when the client names no limit, and the most it may ask for.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 200;
const MAX_OFFSET: usize = 1_000_000;
/// The longest session id a client may choose.
const MAX_SESSION_ID_LEN: usize = 256;

/// The source recorded for sessions created through this API (the one its turns record).
const SOURCE: &str = "api";

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListQuery {
    limit: Option<String>,
    offset: Option<String>,
    source: Option<String>,
    include_children: Option<String>,
}

/// A query number: missing, unreadable or negative is the default; capped at `max`.
fn number(raw: Option<&str>, default: usize, max: usize) -> usize {
    raw.and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|n| *n >= 0)
        .map_or(default, |n| usize::try_from(n).unwrap_or(max).min(max))
}

fn truthy(raw: Option<&str>) -> bool {
    raw.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// The session store (the home's file, or its PostgreSQL schema), or the 503 answer when this
/// server has none.
fn db_path(s: &Shared) -> Result<hermes_store::StoreLocation, Box<Response>> {
    s.config
        .backing
        .runtime
        .as_ref()
        .map(|r| r.store_location().clone())
        .ok_or_else(|| {
            Box::new(error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "Session database unavailable",
                "server_error",
                Some("session_db_unavailable"),
            ))
        })
}

/// Runs `f` on the session store off the async threads.
pub(crate) async fn with_store<T: Send + 'static>(
    s: &Shared,
    f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, Box<Response>> {
    let path = db_path(s)?;
    let done = tokio::task::spawn_blocking(move || {
        let mut store = path.open()?;
        f(&mut store)
    })
    .await;
    match done {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Box::new(store_error(&e))),
        Err(e) => Err(Box::new(error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the session store failed: {e}"),
            "server_error",
            None,
        ))),
    }
}

fn store_error(e: &StoreError) -> Response {
    match e {
        StoreError::SessionNotFound(id) => not_found(id),
        StoreError::InvalidTitle(_) | StoreError::TitleTaken { .. } => error_response(
            StatusCode::BAD_REQUEST,
            &e.to_string(),
            "invalid_request_error",
            Some("invalid_title"),
        ),
        _ => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &e.to_string(),
            "server_error",
            Some("session_db_error"),
        ),
    }
}

pub(crate) fn not_found(id: &str) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &format!("Session not found: {id}"),
        "invalid_request_error",
        Some("session_not_found"),
    )
}

/// The stored session `id` (exactly that id), or the 404 answer.
/// The preamble of every `/api/sessions/{id}` route: the key checked, then the session looked
/// up (401 or 404 in OpenAI's shape otherwise).
async fn authorized_session(
    s: &Shared,
    headers: &HeaderMap,
    id: &str,
) -> Result<SessionRecord, Box<Response>> {
    if let Some(denied) = check_auth(s, headers) {
        return Err(Box::new(denied));
    }
    existing(s, id).await
}

pub(crate) async fn existing(s: &Shared, id: &str) -> Result<SessionRecord, Box<Response>> {
    let key = id.to_string();
    match with_store(s, move |store| store.session(&key)).await? {
        Some(record) => Ok(record),
        None => Err(Box::new(not_found(id))),
    }
}

/// A JSON object request body (400 otherwise), Python's messages.
pub(crate) fn json_object(
    body: Result<Bytes, BytesRejection>,
) -> Result<Map<String, Value>, Box<Response>> {
    let bytes = body_bytes(body)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let invalid = |m: &str| {
        Box::new(error_response(
            StatusCode::BAD_REQUEST,
            m,
            "invalid_request_error",
            None,
        ))
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(invalid("Request body must be a JSON object")),
        Err(_) => Err(invalid("Invalid JSON in request body")),
    }
}

/// A session as clients see it (Python's `_session_response`): `last_active` is the last
/// write, the system prompt is only reported as present or not.
pub(crate) fn session_json(r: &SessionRecord, preview: Option<&str>) -> Value {
    let mut v = json!({
        "id": r.id,
        "source": r.source,
        "model": r.model,
        "title": r.title,
        "started_at": r.started_at,
        "ended_at": r.ended_at,
        "end_reason": r.end_reason,
        "message_count": r.message_count,
        "tool_call_count": r.tool_call_count,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "cache_read_tokens": r.cache_read_tokens,
        "cache_write_tokens": r.cache_write_tokens,
        "reasoning_tokens": r.reasoning_tokens,
        "estimated_cost_usd": r.estimated_cost_usd,
        "api_call_count": r.api_call_count,
        "parent_session_id": r.parent_session_id,
        "last_active": r.updated_at,
        "has_system_prompt": r.system_prompt.as_deref().is_some_and(|p| !p.is_empty()),
        "has_model_config": false,
    });
    if let Some(p) = preview {
        v["preview"] = json!(p);
    }
    v
}

fn session_answer(status: StatusCode, r: &SessionRecord) -> Response {
    json_response(
        status,
        json!({"object": "hermes.session", "session": session_json(r, None)}),
    )
}

/// A message as clients see it (Python's `_message_response`).
pub(crate) fn message_json(m: &Message, stored: Option<&StoredMessage>) -> Value {
    let tool_calls: Option<Vec<Value>> = (!m.tool_calls.is_empty()).then(|| {
        m.tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect()
    });
    let mut v = json!({
        "role": m.role.as_str(),
        "content": m.content,
        "tool_call_id": m.tool_call_id,
        "tool_calls": tool_calls,
        "tool_name": m.name,
        "reasoning": m.reasoning,
    });
    if let Some(s) = stored {
        v["id"] = json!(s.id);
        v["session_id"] = json!(s.session_id);
        v["timestamp"] = json!(s.timestamp);
        v["token_count"] = json!(s.token_count);
        v["finish_reason"] = json!(s.finish_reason);
    }
    v
}

/// A session id a client chose: no line breaks, NULs or path parts, at most 256 bytes.
fn checked_id(raw: Option<&Value>) -> Result<String, Box<Response>> {
    let bad = |m: &str| {
        Box::new(error_response(
            StatusCode::BAD_REQUEST,
            m,
            "invalid_request_error",
            Some("invalid_session_id"),
        ))
    };
    let id = match raw {
        None | Some(Value::Null) => return Ok(new_session_id()),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(new_session_id()),
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Err(bad("Invalid session ID")),
    };
    if id.len() > MAX_SESSION_ID_LEN {
        return Err(bad("Session ID too long"));
    }
    if id.chars().any(char::is_control) || id.contains(['/', '\\']) || id.contains("..") {
        return Err(bad("Invalid session ID"));
    }
    Ok(id)
}

/// Python's id for a session an API client creates: `api_<unix time>_<8 hex>`.
fn new_session_id() -> String {
    format!("api_{}_{:08x}", time::now() as u64, fastrand::u32(..))
}

fn requested_id(body: &Map<String, Value>) -> Option<&Value> {
    body.get("id")
        .filter(|v| !v.is_null())
        .or_else(|| body.get("session_id"))
}

fn exists(id: &str) -> Response {
    error_response(
        StatusCode::CONFLICT,
        &format!("Session already exists: {id}"),
        "invalid_request_error",
        Some("session_exists"),
    )
}

/// `GET /api/sessions`.
pub(crate) async fn list(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let q = query.map(|Query(q)| q).unwrap_or_default();
    let limit = number(q.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT);
    let offset = number(q.offset.as_deref(), 0, MAX_OFFSET);
    let source = q.source.filter(|s| !s.is_empty());
    let include_children = truthy(q.include_children.as_deref());
    let listed = with_store(&s, move |store| {
        store.list_sessions_page(&SessionPage {
            limit,
            offset,
            source: source.as_deref(),
            include_children,
        })
    })
    .await;
    match listed {
        Ok(sessions) => json_response(
            StatusCode::OK,
            json!({
                "object": "list",
                "data": sessions.iter().map(|s| session_json(&s.session, Some(&s.preview))).collect::<Vec<_>>(),
                "limit": limit,
                "offset": offset,
                "has_more": sessions.len() == limit,
            }),
        ),
        Err(r) => *r,
    }
}

/// `POST /api/sessions`: an empty session, optionally with its id, title, model and system
/// prompt; 201, or 409 when the id is taken.
pub(crate) async fn create(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let body = match json_object(body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let id = match checked_id(requested_id(&body)) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let system_prompt = match body.get("system_prompt") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some(p.clone()),
        Some(_) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "system_prompt must be a string",
                "invalid_request_error",
                Some("invalid_system_prompt"),
            );
        }
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
        .unwrap_or(&s.config.model_name)
        .to_string();
    let title = match body.get("title") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) if t.trim().is_empty() => None,
        Some(Value::String(t)) => Some(t.clone()),
        Some(other) => Some(other.to_string()),
    };
    let new = NewSession {
        id: id.clone(),
        source: SOURCE.into(),
        model: Some(model),
        system_prompt,
        ..NewSession::default()
    };
    let created = with_store(&s, move |store| {
        if !store.create_empty_session(&new, title.as_deref())? {
            return Ok(None);
        }
        store.session(&new.id)
    })
    .await;
    match created {
        Ok(Some(record)) => session_answer(StatusCode::CREATED, &record),
        Ok(None) => exists(&id),
        Err(r) => *r,
    }
}

/// `GET /api/sessions/{id}`.
pub(crate) async fn get(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match authorized_session(&s, &headers, &id).await {
        Ok(record) => session_answer(StatusCode::OK, &record),
        Err(r) => *r,
    }
}

/// `PATCH /api/sessions/{id}`: `title` (null or empty clears it) and `end_reason` (ends it).
pub(crate) async fn patch(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Err(r) = authorized_session(&s, &headers, &id).await {
        return *r;
    }
    let body = match json_object(body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let mut unknown: Vec<&str> = body
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "title" | "end_reason"))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        return error_response(
            StatusCode::BAD_REQUEST,
            &format!("Unsupported session fields: {}", unknown.join(", ")),
            "invalid_request_error",
            Some("unsupported_session_field"),
        );
    }
    let title = body.get("title").map(|t| match t {
        Value::Null => String::new(),
        Value::String(t) => t.clone(),
        other => other.to_string(),
    });
    let end_reason = match body.get("end_reason") {
        Some(Value::String(r)) if !r.is_empty() => Some(r.clone()),
        None | Some(Value::Null | Value::Bool(false)) => None,
        Some(Value::String(_)) => None,
        Some(other) => Some(other.to_string()),
    };
    let key = id.clone();
    let changed = with_store(&s, move |store| {
        match title.as_deref().map(str::trim) {
            Some("") => {
                store.clear_title(&key)?;
            }
            Some(t) => {
                store.set_title(&key, t)?;
            }
            None => {}
        }
        if let Some(reason) = &end_reason {
            store.end_session(&key, reason)?;
        }
        store.session(&key)
    })
    .await;
    match changed {
        Ok(Some(record)) => session_answer(StatusCode::OK, &record),
        Ok(None) => not_found(&id),
        Err(r) => *r,
    }
}

/// `DELETE /api/sessions/{id}`: the session and its messages.
pub(crate) async fn delete(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Err(r) = authorized_session(&s, &headers, &id).await {
        return *r;
    }
    let key = id.clone();
    match with_store(&s, move |store| store.delete_session(&key)).await {
        Ok(deleted) => json_response(
            StatusCode::OK,
            json!({"object": "hermes.session.deleted", "id": id, "deleted": deleted}),
        ),
        Err(r) => *r,
    }
}

/// `GET /api/sessions/{id}/messages`: the conversation the session continues from.
pub(crate) async fn messages(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Err(r) = authorized_session(&s, &headers, &id).await {
        return *r;
    }
    let key = id.clone();
    match with_store(&s, move |store| store.active_messages(&key)).await {
        Ok(stored) => json_response(
            StatusCode::OK,
            json!({
                "object": "list",
                "session_id": id,
                "data": stored.iter().map(|m| message_json(&m.message, Some(m))).collect::<Vec<_>>(),
            }),
        ),
        Err(r) => *r,
    }
}

/// `POST /api/sessions/{id}/fork`: a new session (its own id or a generated one) whose parent
/// is this one, with the conversation copied; titled `body.title`, else the next title of the
/// parent's lineage (`Title #2`, ...) or `fork`. 201.
pub(crate) async fn fork(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let parent = match authorized_session(&s, &headers, &id).await {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let body = match json_object(body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let fork_id = match checked_id(requested_id(&body)) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let title = match body.get("title") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(t.clone()),
        Some(other) => Some(other.to_string()),
    };
    let new = NewSession {
        id: fork_id.clone(),
        source: SOURCE.into(),
        model: parent.model.clone(),
        provider: parent.provider.clone(),
        cwd: parent.cwd.clone(),
        parent_session_id: Some(parent.id.clone()),
        system_prompt: parent.system_prompt.clone(),
    };
    let base = parent.title.clone().unwrap_or_else(|| "fork".into());
    let (parent_id, parent_end) = (parent.id.clone(), parent.end_reason.clone());
    let forked = with_store(&s, move |store| {
        if store.fork_session(&new)?.is_none() {
            return Ok(None);
        }
        let title = match title {
            Some(t) => t,
            None => store.next_title_in_lineage(&base)?,
        };
        if let Err(e) = store.set_title(&new.id, &title) {
            // A fork whose title is refused is not kept, and its parent is left as it was
            // (Python keeps the row, so a retry with another title would hit 409).
            store.delete_session(&new.id)?;
            match &parent_end {
                Some(reason) => store.end_session(&parent_id, reason)?,
                None => store.reopen_session(&parent_id, None, None)?,
            }
            return Err(e);
        }
        store.session(&new.id)
    })
    .await;
    match forked {
        Ok(Some(record)) => session_answer(StatusCode::CREATED, &record),
        Ok(None) => exists(&fork_id),
        Err(r) => *r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_numbers_fall_back_and_cap() {
        assert_eq!(number(None, 50, 200), 50);
        assert_eq!(number(Some("x"), 50, 200), 50);
        assert_eq!(number(Some("-3"), 50, 200), 50);
        assert_eq!(number(Some("7"), 50, 200), 7);
        assert_eq!(number(Some("900"), 50, 200), 200);
    }

    #[test]
    fn client_ids_are_checked() {
        assert!(checked_id(None).unwrap().starts_with("api_"));
        assert_eq!(checked_id(Some(&json!(" mine "))).unwrap(), "mine");
        assert!(checked_id(Some(&json!("a/b"))).is_err());
        assert!(checked_id(Some(&json!("a\nb"))).is_err());
        assert!(checked_id(Some(&json!("x".repeat(257)))).is_err());
    }
}
