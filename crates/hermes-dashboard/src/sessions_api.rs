//! The sessions page's routes over hermes-store: the list (most recently active first, child
//! sessions hidden as `hermes sessions list` hides them), full-text search (an id or title
//! match first, then the store's FTS5 search, one hit per session), one session with the
//! command that resumes it, its messages, delete, and `/api/analytics/usage` (tokens and cost
//! per day and per model, for the usage page's charts).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use hermes_store::{SearchQuery, SessionPage, SessionRecord, SessionSummary, Store, StoreError};
use serde_json::{Value, json};

use crate::App;
use crate::reply::{ApiError, ApiResult, blocking};

const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 500;
/// Messages of one session sent at most per request (a page asks for more with `offset`).
const MAX_MESSAGES: usize = 1_000;
/// Days of usage at most.
const MAX_DAYS: u64 = 3_660;
/// A session counts as live when it has not ended and was active this recently (Python's).
const ACTIVE_SECS: f64 = 300.0;

type Params = Query<HashMap<String, String>>;

fn number(q: &HashMap<String, String>, key: &str, default: usize, max: usize) -> usize {
    q.get(key)
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(default)
        .min(max)
}

pub(crate) fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::SessionNotFound(_) => ApiError::not_found("Session not found"),
        StoreError::Ambiguous { .. } => ApiError::bad_request(e.to_string()),
        e => ApiError::internal(e.to_string()),
    }
}

/// Runs `f` on the home's session store.
async fn with_store<T: Send + 'static>(
    app: &App,
    f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    let path = app.home.join(hermes_store::DB_FILE_NAME);
    blocking(move || {
        let mut store = Store::open(&path).map_err(store_error)?;
        f(&mut store).map_err(store_error)
    })
    .await
}

/// A session as the pages show it: the stored record (system prompt left out) plus when it
/// was last active, whether it is live, and how to resume it.
fn session_json(record: &SessionRecord, preview: Option<&str>) -> Value {
    let mut v = serde_json::to_value(record).unwrap_or(Value::Null);
    if let Some(map) = v.as_object_mut() {
        map.remove("system_prompt");
        map.insert("last_active".into(), json!(record.updated_at));
        let live = record.ended_at.is_none()
            && hermes_store::time::now() - record.updated_at < ACTIVE_SECS;
        map.insert("is_active".into(), json!(live));
        map.insert(
            "resume_command".into(),
            json!(format!("hermes --resume {}", record.id)),
        );
        if let Some(p) = preview {
            map.insert("preview".into(), json!(p));
        }
    }
    v
}

fn summary_json(s: &SessionSummary) -> Value {
    session_json(&s.session, Some(&s.preview))
}

/// `GET /api/sessions?limit=&offset=`: `{sessions, total, limit, offset}` (Python's).
pub(crate) async fn list(State(app): State<Arc<App>>, Query(q): Params) -> ApiResult {
    let limit = number(&q, "limit", DEFAULT_LIMIT, MAX_LIMIT);
    let offset = number(&q, "offset", 0, usize::MAX / 2);
    let (rows, total) = with_store(&app, move |store| {
        let page = SessionPage {
            limit,
            offset,
            source: None,
            include_children: false,
        };
        Ok((
            store.list_sessions_page(&page)?,
            store.count_sessions_page(&page)?,
        ))
    })
    .await?;
    let sessions: Vec<Value> = rows.iter().map(summary_json).collect();
    Ok(Json(
        json!({"sessions": sessions, "total": total, "limit": limit, "offset": offset}),
    ))
}

/// `GET /api/sessions/search?q=&limit=`: `{"results": [{session_id, title, snippet, role,
/// source, model, session_started}]}`; snippets mark hits `>>>like this<<<`.
pub(crate) async fn search(State(app): State<Arc<App>>, Query(q): Params) -> ApiResult {
    let text = q.get("q").map(|s| s.trim().to_string()).unwrap_or_default();
    if text.is_empty() {
        return Ok(Json(json!({"results": []})));
    }
    let limit = number(&q, "limit", 20, 100).max(1);
    let results = with_store(&app, move |store| {
        let mut results: Vec<Value> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        // A pasted id (or title) first, as Python's search does.
        if let Ok(s) = store.resolve_session(&text) {
            seen.push(s.id.clone());
            results.push(json!({
                "session_id": s.id,
                "title": s.title,
                "snippet": format!("Session ID: {}", s.id),
                "role": Value::Null,
                "source": s.source,
                "model": s.model,
                "session_started": s.started_at,
            }));
        }
        let query = SearchQuery {
            limit,
            ..SearchQuery::new(&text)
        };
        let hits = store.search_sessions(&query, limit)?;
        for hit in hits {
            if results.len() >= limit || seen.contains(&hit.session_id) {
                continue;
            }
            seen.push(hit.session_id.clone());
            results.push(json!({
                "session_id": hit.session_id,
                "title": hit.session_title,
                "snippet": hit.snippet,
                "role": hit.role,
                "source": hit.session_source,
                "model": hit.session_model,
                "session_started": hit.session_started_at,
            }));
        }
        Ok(results)
    })
    .await?;
    Ok(Json(json!({"results": results})))
}

/// `GET /api/sessions/{id}` (an id, a unique prefix or a title).
pub(crate) async fn get_one(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult {
    let record = with_store(&app, move |store| store.resolve_session(&id)).await?;
    Ok(Json(session_json(&record, None)))
}

/// `GET /api/sessions/{id}/messages?offset=`: `{"session_id", "messages", "pagination"}`.
pub(crate) async fn messages(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> ApiResult {
    let offset = number(&q, "offset", 0, usize::MAX / 2);
    let limit = number(&q, "limit", MAX_MESSAGES, MAX_MESSAGES);
    let (sid, rows) = with_store(&app, move |store| {
        let record = store.resolve_session(&id)?;
        let rows = store.messages(&record.id)?;
        Ok((record.id, rows))
    })
    .await?;
    let total = rows.len();
    let messages: Vec<Value> = rows
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|m| {
            json!({
                "id": m.id,
                "role": m.message.role.as_str(),
                "content": m.message.content,
                "tool_calls": m.message.tool_calls.iter().map(|c| json!({
                    "id": c.id, "name": c.name, "arguments": c.arguments,
                })).collect::<Vec<_>>(),
                "tool_call_id": m.message.tool_call_id,
                "tool_name": m.message.name,
                "reasoning": m.message.reasoning,
                "timestamp": m.timestamp,
                "finish_reason": m.finish_reason,
            })
        })
        .collect();
    Ok(Json(json!({
        "session_id": sid,
        "messages": messages,
        "pagination": {"limit": limit, "offset": offset, "returned": messages.len(), "total": total},
    })))
}

/// `DELETE /api/sessions/{id}`: gone, with its messages; an absent one is already gone.
pub(crate) async fn delete(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult {
    let deleted = with_store(&app, move |store| match store.resolve_session(&id) {
        Ok(record) => store.delete_session(&record.id),
        Err(StoreError::SessionNotFound(_)) => Ok(false),
        Err(e) => Err(e),
    })
    .await?;
    Ok(Json(if deleted {
        json!({"ok": true})
    } else {
        json!({"ok": true, "already_absent": true})
    }))
}

/// `GET /api/analytics/usage?days=30`: `{daily, by_model, totals, period_days}`.
pub(crate) async fn usage(State(app): State<Arc<App>>, Query(q): Params) -> ApiResult {
    let days = q
        .get("days")
        .and_then(|d| d.trim().parse::<u64>().ok())
        .unwrap_or(30)
        .clamp(1, MAX_DAYS);
    let since = hermes_store::time::now() - (days * 86_400) as f64;
    let report = with_store(&app, move |store| store.usage_since(since)).await?;
    Ok(Json(json!({
        "daily": report.daily,
        "by_model": report.by_model,
        "totals": report.totals,
        "period_days": days,
    })))
}
