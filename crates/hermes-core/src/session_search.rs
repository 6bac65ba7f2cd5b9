//! The `session_search` tool: recall of past conversations from the session store, without any
//! model call. Four shapes, chosen by the arguments:
//!
//! - `query`: full-text search; the best-matching sessions (the current one excluded: it is
//!   already in context), each with the marked passage, the messages around it and how the
//!   session opened and closed;
//! - `session_id` + `around_message_id`: the messages around one message, to read further;
//! - `session_id` alone: that session from the start (head and tail when long);
//! - nothing: the most recent sessions.
//!
//! It only reads, so it runs in parallel with other reads. The database connection is opened
//! on first use, on tokio's blocking pool.

use std::sync::{Arc, Mutex};

use hermes_protocol::Role;
use hermes_store::{SearchQuery, Store, StoreError, StoreLocation, StoredMessage, time};
use hermes_tools::output::truncate_middle;
use hermes_tools::{Access, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

/// Sessions returned by a search unless asked otherwise, and the most allowed.
const DEFAULT_LIMIT: usize = 3;
const MAX_LIMIT: usize = 10;
/// Messages on each side of an anchor unless asked otherwise, and the most allowed.
const DEFAULT_WINDOW: usize = 5;
const MAX_WINDOW: usize = 20;
/// Opening and closing messages shown with a search hit.
const BOOKEND: usize = 3;
/// A session read from the start: its first and last messages when it is long.
const READ_HEAD: usize = 20;
const READ_TAIL: usize = 10;
/// Characters kept of one message (head and tail).
const MAX_MESSAGE_CHARS: usize = 1_500;

/// The recall tool over one home's session database. One instance serves every session of a
/// process: the session a call comes from (left out of searches) is read from its
/// [`ToolContext`].
pub struct SessionSearchTool {
    db_path: StoreLocation,
    store: Arc<Mutex<Option<Store>>>,
}

impl SessionSearchTool {
    /// Searches the session database at `db_path` (`$HERMES_HOME/sessions.db`).
    pub fn new(db_path: impl Into<StoreLocation>) -> SessionSearchTool {
        let db_path = db_path.into();
        SessionSearchTool {
            db_path,
            store: Arc::new(Mutex::new(None)),
        }
    }
}

/// The arguments, validated.
#[derive(Debug, Clone, PartialEq)]
struct Request {
    query: Option<String>,
    limit: usize,
    session_id: Option<String>,
    around: Option<i64>,
    window: usize,
    roles: Option<Vec<Role>>,
}

impl Request {
    fn parse(args: &Value) -> Result<Request, ToolError> {
        let text = |key: &str| -> Result<Option<String>, ToolError> {
            match args.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
                Some(other) => Err(ToolError::new(format!(
                    "{key} must be a string, got {other}"
                ))),
            }
        };
        let int =
            |key: &str| -> Result<Option<i64>, ToolError> {
                match args.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| {
                        ToolError::new(format!("{key} must be an integer, got {n}"))
                    }),
                    Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| {
                        ToolError::new(format!("{key} must be an integer, got \"{s}\""))
                    }),
                    Some(other) => Err(ToolError::new(format!(
                        "{key} must be an integer, got {other}"
                    ))),
                }
            };
        let clamp = |v: Option<i64>, default: usize, max: usize| {
            v.map_or(default, |n| n.clamp(1, max as i64) as usize)
        };
        let roles = text("role_filter")?
            .map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(|r| match r {
                        "user" => Ok(Role::User),
                        "assistant" => Ok(Role::Assistant),
                        "tool" => Ok(Role::Tool),
                        other => Err(ToolError::new(format!(
                            "role_filter: unknown role `{other}` (use user, assistant, tool)"
                        ))),
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        Ok(Request {
            query: text("query")?,
            limit: clamp(int("limit")?, DEFAULT_LIMIT, MAX_LIMIT),
            session_id: text("session_id")?,
            around: int("around_message_id")?,
            window: clamp(int("window")?, DEFAULT_WINDOW, MAX_WINDOW),
            roles: roles.filter(|r| !r.is_empty()),
        })
    }
}

#[async_trait::async_trait]
impl Tool for SessionSearchTool {
    fn name(&self) -> &str {
        "session_search"
    }

    fn toolset(&self) -> &str {
        "session_search"
    }

    fn description(&self) -> &str {
        "Search past conversations with the user (all earlier sessions). Use it when the user refers to earlier work (\"what did we decide about X\"). `query`: the best-matching sessions with the hit marked >>>like this<<<, the messages around it (with ids) and how each session began and ended; all words must match, OR for alternatives, \"a phrase\", prefix*. `session_id` + `around_message_id`: the messages around that id (page on with the first or last id). Only `session_id`: that session from its start. No arguments: recent sessions. The current conversation is not searched."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search words. Omit to list recent sessions."},
                "limit": {"type": "integer", "description": "Sessions to return (default 3, at most 10).", "default": DEFAULT_LIMIT},
                "session_id": {"type": "string", "description": "Read this session, or (with query) search only it."},
                "around_message_id": {"type": "integer", "description": "With session_id: the messages around this id."},
                "window": {"type": "integer", "description": "Messages on each side (default 5, max 20).", "default": DEFAULT_WINDOW},
                "role_filter": {"type": "string", "description": "Roles to search and show, comma-separated (default user,assistant; also tool)."}
            },
            "required": []
        })
    }

    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Read(Vec::new())
    }

    fn preview(&self, args: &Value) -> String {
        let shown = ["query", "session_id"]
            .iter()
            .find_map(|k| args.get(*k).and_then(Value::as_str))
            .unwrap_or("recent sessions");
        hermes_tools::output::shorten_line(shown, 60)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let request = Request::parse(&args)?;
        let current = ctx.session.id();
        let store = Arc::clone(&self.store);
        let path = self.db_path.clone();
        tokio::task::spawn_blocking(move || {
            let mut slot = store
                .lock()
                .map_err(|_| ToolError::new("the session database is unavailable"))?;
            if slot.is_none() {
                *slot = Some(path.open().map_err(store_error)?);
            }
            let Some(store) = slot.as_ref() else {
                return Err(ToolError::new("the session database is unavailable"));
            };
            answer(store, &request, &current).map_err(store_error)
        })
        .await
        .map_err(|e| ToolError::new(format!("session search failed: {e}")))?
    }
}

fn store_error(e: StoreError) -> ToolError {
    ToolError::new(e.to_string())
}

fn answer(store: &Store, r: &Request, current: &str) -> Result<Value, StoreError> {
    match (&r.session_id, r.around, &r.query) {
        (Some(id), Some(anchor), _) => around(store, id, anchor, r),
        (_, _, Some(query)) => search(store, query, r, current),
        (Some(id), None, None) => read(store, id),
        (None, _, None) => recent(store, r.limit, current),
    }
}

fn search(store: &Store, query: &str, r: &Request, current: &str) -> Result<Value, StoreError> {
    let roles = r
        .roles
        .clone()
        .unwrap_or_else(|| vec![Role::User, Role::Assistant]);
    let q = SearchQuery {
        roles: &roles,
        session_id: r.session_id.as_deref(),
        exclude_session_id: Some(current).filter(|c| !c.is_empty() && r.session_id.is_none()),
        ..SearchQuery::new(query)
    };
    let hits = store.search_sessions(&q, r.limit)?;
    let mut results = Vec::new();
    for hit in &hits {
        let Some(window) = store.messages_around(&hit.session_id, hit.message_id, r.window)? else {
            continue;
        };
        let shown: Vec<Value> = window
            .messages
            .iter()
            .filter(|m| m.id == hit.message_id || roles.contains(&m.message.role))
            .map(|m| message(m, Some(hit.message_id)))
            .collect();
        let first = window.messages.first().map_or(hit.message_id, |m| m.id);
        let last = window.messages.last().map_or(hit.message_id, |m| m.id);
        let (opening, closing) = store.bookends(&hit.session_id, first, last, BOOKEND)?;
        results.push(json!({
            "session_id": hit.session_id,
            "title": hit.session_title,
            "when": time::format_utc(hit.session_started_at),
            "source": hit.session_source,
            "model": hit.session_model,
            "match_message_id": hit.message_id,
            "matched_role": hit.role,
            "snippet": hit.snippet,
            "opening": opening.iter().map(|m| message(m, None)).collect::<Vec<_>>(),
            "messages": shown,
            "closing": closing.iter().map(|m| message(m, None)).collect::<Vec<_>>(),
            "more_before": window.more_before,
            "more_after": window.more_after,
        }));
    }
    let mut out =
        json!({"mode": "search", "query": query, "count": results.len(), "results": results});
    if hits.is_empty() {
        out["message"] = json!(
            "No earlier conversation matches. Try other or fewer words, OR between alternatives, or a prefix such as deploy*."
        );
    }
    Ok(out)
}

fn around(store: &Store, id: &str, anchor: i64, r: &Request) -> Result<Value, StoreError> {
    let session = store.resolve_session(id)?;
    let Some(window) = store.messages_around(&session.id, anchor, r.window)? else {
        return Err(StoreError::SessionNotFound(format!(
            "message {anchor} in session {}",
            session.id
        )));
    };
    let shown: Vec<Value> = window
        .messages
        .iter()
        .filter(|m| {
            m.id == anchor
                || r.roles
                    .as_ref()
                    .is_none_or(|roles| roles.contains(&m.message.role))
        })
        .map(|m| message(m, Some(anchor)))
        .collect();
    Ok(json!({
        "mode": "around",
        "session_id": session.id,
        "title": session.title,
        "when": time::format_utc(session.started_at),
        "messages": shown,
        "more_before": window.more_before,
        "more_after": window.more_after,
    }))
}

fn read(store: &Store, id: &str) -> Result<Value, StoreError> {
    let session = store.resolve_session(id)?;
    let all = store.messages(&session.id)?;
    let total = all.len();
    let shown: Vec<Value> = if total > READ_HEAD + READ_TAIL {
        all[..READ_HEAD]
            .iter()
            .chain(&all[total - READ_TAIL..])
            .map(|m| message(m, None))
            .collect()
    } else {
        all.iter().map(|m| message(m, None)).collect()
    };
    let mut out = json!({
        "mode": "read",
        "session_id": session.id,
        "title": session.title,
        "when": time::format_utc(session.started_at),
        "model": session.model,
        "message_count": total,
        "messages": shown,
    });
    if total > READ_HEAD + READ_TAIL {
        out["message"] = json!(format!(
            "Showing the first {READ_HEAD} and last {READ_TAIL} of {total} messages; pass around_message_id to read the middle."
        ));
    }
    Ok(out)
}

fn recent(store: &Store, limit: usize, current: &str) -> Result<Value, StoreError> {
    let sessions: Vec<Value> = store
        .list_sessions(limit + 1, None)?
        .into_iter()
        .filter(|s| s.session.id != current)
        .take(limit)
        .map(|s| {
            json!({
                "session_id": s.session.id,
                "title": s.session.title,
                "last_active": time::format_utc(s.session.updated_at),
                "source": s.session.source,
                "message_count": s.session.message_count,
                "preview": hermes_tools::output::shorten_line(&s.preview, 120),
            })
        })
        .collect();
    Ok(json!({"mode": "recent", "count": sessions.len(), "sessions": sessions}))
}

/// One message as the model reads it, long content cut in the middle.
fn message(m: &StoredMessage, anchor: Option<i64>) -> Value {
    let mut v = json!({
        "id": m.id,
        "role": m.message.role.as_str(),
        "content": truncate_middle(&m.message.content, MAX_MESSAGE_CHARS, 0.7),
    });
    if !m.message.tool_calls.is_empty() {
        v["tool_calls"] = m
            .message
            .tool_calls
            .iter()
            .map(|c| json!({"name": c.name, "arguments": truncate_middle(&c.arguments, 300, 0.7)}))
            .collect();
    }
    if let Some(name) = &m.message.name {
        v["tool_name"] = json!(name);
    }
    if m.partial || m.finish_reason.as_deref() == Some(hermes_store::INTERRUPTED) {
        v["interrupted"] = json!(true);
    }
    if anchor == Some(m.id) {
        v["match"] = json!(true);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::{Message, ToolCall};
    use hermes_store::{MessageMeta, NewSession};

    fn ctx(session_id: &str) -> ToolContext {
        ToolContext {
            session: hermes_tools::SessionHandle::new(session_id),
            ..ToolContext::new(std::env::temp_dir())
        }
    }

    /// Two past sessions and the current one, all mentioning the same topic.
    fn seeded() -> (tempfile::TempDir, SessionSearchTool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let mut store = Store::open(&path).unwrap();
        let mut add = |sid: &str, messages: Vec<Message>| {
            store
                .create_session(&NewSession {
                    id: sid.into(),
                    source: "cli".into(),
                    ..NewSession::default()
                })
                .unwrap();
            for m in messages {
                store
                    .append_message(sid, &m, &MessageMeta::default())
                    .unwrap();
            }
        };
        let call = ToolCall {
            id: "c1".into(),
            name: "terminal".into(),
            arguments: "{\"command\":\"pg_dump prod\"}".into(),
        };
        add(
            "old",
            vec![
                Message::user("How should we back up the postgres database?"),
                Message::assistant_with_tools("Let me check the tools.", vec![call]),
                Message::tool_result("c1", "terminal", "pg_dump 16.2"),
                Message::assistant("Use pg_dump nightly with a 7-day retention."),
                Message::user("thanks"),
            ],
        );
        add(
            "other",
            vec![Message::user("unrelated chatter about lunch")],
        );
        add(
            "now",
            vec![Message::user(
                "remind me what we said about postgres backups",
            )],
        );
        (dir, SessionSearchTool::new(path))
    }

    #[tokio::test]
    async fn a_query_finds_past_sessions_with_context_but_not_the_current_one() {
        let (_dir, tool) = seeded();
        let out = tool
            .call(json!({"query": "postgres"}), &ctx("now"))
            .await
            .unwrap();
        assert_eq!(out["mode"], "search");
        assert_eq!(out["count"], 1, "{out}");
        let hit = &out["results"][0];
        assert_eq!(hit["session_id"], "old");
        assert!(
            hit["snippet"].as_str().unwrap().contains(">>>postgres<<<"),
            "{hit}"
        );
        let roles: Vec<&str> = hit["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert!(
            !roles.contains(&"tool"),
            "tool output is left out by default: {roles:?}"
        );
        assert_eq!(hit["messages"][0]["match"], true);

        let with_tools = tool
            .call(
                json!({"query": "pg_dump", "role_filter": "tool"}),
                &ctx("now"),
            )
            .await
            .unwrap();
        assert_eq!(
            with_tools["results"][0]["matched_role"], "tool",
            "{with_tools}"
        );

        let none = tool
            .call(json!({"query": "kubernetes"}), &ctx("now"))
            .await
            .unwrap();
        assert_eq!(none["count"], 0);
        assert!(none["message"].as_str().unwrap().contains("OR"));
    }

    #[tokio::test]
    async fn around_read_and_recent_shapes() {
        let (_dir, tool) = seeded();
        let hit = tool
            .call(json!({"query": "retention"}), &ctx("now"))
            .await
            .unwrap();
        let anchor = hit["results"][0]["match_message_id"].as_i64().unwrap();
        let around = tool
            .call(
                json!({"session_id": "old", "around_message_id": anchor, "window": 1}),
                &ctx("now"),
            )
            .await
            .unwrap();
        let ids: Vec<i64> = around["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, [anchor - 1, anchor, anchor + 1]);
        assert_eq!(
            (
                around["more_before"].as_i64(),
                around["more_after"].as_i64()
            ),
            (Some(2), Some(0))
        );

        let read = tool
            .call(json!({"session_id": "old"}), &ctx("now"))
            .await
            .unwrap();
        assert_eq!(read["message_count"], 5);
        assert_eq!(read["messages"][1]["tool_calls"][0]["name"], "terminal");

        let recent = tool.call(json!({}), &ctx("now")).await.unwrap();
        let listed: Vec<&str> = recent["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_id"].as_str().unwrap())
            .collect();
        assert_eq!(
            listed,
            ["other", "old"],
            "newest first, the current session left out"
        );
    }

    #[tokio::test]
    async fn bad_arguments_and_unknown_ids_are_errors_the_model_can_fix() {
        let (_dir, tool) = seeded();
        let err = tool
            .call(json!({"limit": "many"}), &ctx("now"))
            .await
            .unwrap_err();
        assert!(err.0.contains("limit must be an integer"), "{err}");
        let err = tool
            .call(json!({"query": "x", "role_filter": "robot"}), &ctx("now"))
            .await
            .unwrap_err();
        assert!(err.0.contains("unknown role `robot`"), "{err}");
        let err = tool
            .call(json!({"session_id": "nope"}), &ctx("now"))
            .await
            .unwrap_err();
        assert!(err.0.contains("no session matches `nope`"), "{err}");
        let err = tool
            .call(
                json!({"session_id": "old", "around_message_id": 999}),
                &ctx("now"),
            )
            .await
            .unwrap_err();
        assert!(err.0.contains("message 999"), "{err}");
    }

    #[test]
    fn limits_and_windows_are_clamped() {
        let r = Request::parse(&json!({"limit": 50, "window": 0, "query": "  "})).unwrap();
        assert_eq!((r.limit, r.window, r.query), (10, 1, None));
        let r = Request::parse(&json!({"around_message_id": "12"})).unwrap();
        assert_eq!(r.around, Some(12));
    }

    #[test]
    fn the_session_handle_moves_with_new_and_compression() {
        let ctx = ctx("a");
        let follower = ctx.clone();
        ctx.session.set("b");
        assert_eq!(follower.session.id(), "b");
        let tool = SessionSearchTool::new(std::path::PathBuf::from("x.db"));
        assert_eq!(tool.access(&json!({}), &ctx), Access::Read(Vec::new()));
    }
}
