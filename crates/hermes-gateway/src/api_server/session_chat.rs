//! `POST /api/sessions/{id}/chat` and `/chat/stream`: one turn in a stored session, the
//! conversation replayed from the store by the same [`TurnRunner`](super::TurnRunner) that
//! continues chat completions with `X-Hermes-Session-Id`. The plain route answers
//! `hermes.session.chat.completion`; the stream sends the Python Hermes's events (`run.started`,
//! `message.started`, `assistant.delta`, `tool.started` / `tool.completed` / `tool.failed`,
//! `assistant.completed`, `run.completed`, `error`, `done`), each with `session_id`, `run_id`,
//! `seq` and `ts`. An unknown session is a 404 before any stream starts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use hermes_core::EventSink;
use hermes_protocol::{AgentEvent, Role, TurnEnd, Usage};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::sessions::{existing, json_object, message_json};
use super::{
    RunnerError, Shared, TurnInput, TurnOutcome, admit, check_auth, error_response, json_response,
    new_id, run_turn, runner_error_response, set_session_header, sse_response, turn_error_response,
};
use crate::wire;

/// Python's usage object of session turns.
fn usage_json(u: &Usage) -> Value {
    json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "total_tokens": u.total()})
}

/// The turn a body asks for: `message` (or `input`), a string or content parts, and the
/// optional `system_message` (or `instructions`) for this turn.
fn turn_of(body: &Map<String, Value>, session: &str) -> Result<TurnInput, Box<Response>> {
    let bad = |m: &str, code: &str| {
        Box::new(error_response(
            StatusCode::BAD_REQUEST,
            m,
            "invalid_request_error",
            Some(code),
        ))
    };
    let raw = body
        .get("message")
        .filter(|v| !v.is_null())
        .or_else(|| body.get("input"));
    let (user, images) = wire::content_of(raw).map_err(|e| {
        Box::new(json_response(
            StatusCode::BAD_REQUEST,
            e.at("message").body(),
        ))
    })?;
    if user.trim().is_empty() && images.is_empty() {
        return Err(bad("Missing 'message' field", "missing_message"));
    }
    let system = match body
        .get("system_message")
        .filter(|v| !v.is_null())
        .or_else(|| body.get("instructions"))
    {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(bad(
                "system_message must be a string",
                "invalid_system_message",
            ));
        }
    };
    Ok(TurnInput {
        system,
        history: None,
        user,
        images,
        session: Some(session.to_string()),
        ..TurnInput::default()
    })
}

/// Checks what every session turn checks, in Python's order: the key, the session (404), the
/// body, then a place in the concurrency limit.
async fn prepare(
    s: &Shared,
    headers: &HeaderMap,
    id: &str,
    body: Result<Bytes, BytesRejection>,
) -> Result<(TurnInput, Option<tokio::sync::OwnedSemaphorePermit>), Box<Response>> {
    if let Some(denied) = check_auth(s, headers) {
        return Err(Box::new(denied));
    }
    // The memory scope, as on chat completions (403 without a server key, 400 malformed).
    let memory_scope = super::session_key_header(s, headers)?;
    existing(s, id).await?;
    let body = json_object(body)?;
    let input = TurnInput {
        memory_scope,
        ..turn_of(&body, id)?
    };
    let permit = admit(s)?;
    Ok((input, permit))
}

/// `POST /api/sessions/{id}/chat`.
pub(crate) async fn chat(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (input, permit) = match prepare(&s, &headers, &id, body).await {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let scope = input.memory_scope.clone();
    let events: Arc<dyn EventSink> = Arc::new(|_: AgentEvent| {});
    let outcome = match run_turn(&s, input, events, permit).await {
        Ok(o) => o,
        Err(e) => return runner_error_response(&e),
    };
    let session_id = outcome.session_id.clone().unwrap_or_else(|| id.clone());
    let mut response = match turn_error_response(&outcome.end) {
        Some(r) => r,
        None => json_response(
            StatusCode::OK,
            json!({
                "object": "hermes.session.chat.completion",
                "session_id": session_id,
                "message": {"role": "assistant", "content": outcome.final_text},
                "usage": usage_json(&outcome.usage),
            }),
        ),
    };
    set_session_header(&mut response, Some(&session_id));
    super::set_session_key_header(&mut response, scope.as_deref());
    response
}

/// The numbered, stamped events of one streamed turn.
struct Events {
    tx: mpsc::UnboundedSender<String>,
    session_id: String,
    run_id: String,
    seq: AtomicU64,
}

impl Events {
    fn send(&self, name: &str, mut payload: Value) {
        if let Value::Object(o) = &mut payload {
            o.entry("session_id")
                .or_insert_with(|| json!(self.session_id));
            o.entry("run_id").or_insert_with(|| json!(self.run_id));
            o.insert(
                "seq".into(),
                json!(self.seq.fetch_add(1, Ordering::Relaxed) + 1),
            );
            o.insert("ts".into(), json!(hermes_store::time::now()));
        }
        let _ = self.tx.send(wire::sse(Some(name), &payload));
    }
}

/// `POST /api/sessions/{id}/chat/stream`.
pub(crate) async fn chat_stream(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (input, permit) = match prepare(&s, &headers, &id, body).await {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let events = Arc::new(Events {
        tx,
        session_id: id.clone(),
        run_id: new_id("run_"),
        seq: AtomicU64::new(0),
    });
    let scope = input.memory_scope.clone();
    let message_id = new_id("msg_");
    events.send(
        "run.started",
        json!({"user_message": {"role": "user", "content": input.user}}),
    );
    events.send(
        "message.started",
        json!({"message": {"id": message_id, "role": "assistant"}}),
    );
    let cancel = s.turns.child_token();
    let sink = sink(events.clone(), message_id.clone());
    let runner = s.runner.clone();
    let turn_cancel = cancel.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let outcome = runner.run(input, sink, turn_cancel).await;
        finish(&events, &message_id, outcome);
        events.send("done", json!({}));
    });
    let mut response = sse_response(rx, cancel.drop_guard(), s.config.sse_keepalive);
    set_session_header(&mut response, Some(&id));
    super::set_session_key_header(&mut response, scope.as_deref());
    response
}

/// The last events of a streamed turn: the answer and the run's end, or `error`.
fn finish(events: &Events, message_id: &str, outcome: Result<TurnOutcome, RunnerError>) {
    let o = match outcome {
        Ok(o) => o,
        Err(e) => {
            events.send("error", json!({"message": e.to_string()}));
            return;
        }
    };
    let session_id = o
        .session_id
        .clone()
        .unwrap_or_else(|| events.session_id.clone());
    if let TurnEnd::Failed(f) = &o.end {
        events.send("error", json!({"message": f.message}));
        return;
    }
    let interrupted = matches!(o.end, TurnEnd::Interrupted);
    events.send(
        "assistant.completed",
        json!({
            "session_id": session_id,
            "message_id": message_id,
            "content": o.final_text,
            "completed": !interrupted,
            "partial": interrupted,
            "interrupted": interrupted,
        }),
    );
    // This turn's assistant and tool messages, for clients that rebuild their view from them.
    let messages: Vec<Value> = o
        .added
        .iter()
        .filter(|m| matches!(m.role, Role::Assistant | Role::Tool))
        .map(|m| message_json(m, None))
        .collect();
    events.send(
        "run.completed",
        json!({
            "session_id": session_id,
            "message_id": message_id,
            "completed": !interrupted,
            "messages": messages,
            "usage": usage_json(&o.usage),
        }),
    );
}

/// Answer text as `assistant.delta`, tool calls as `tool.started` then `tool.completed` (or
/// `tool.failed`) with the call's arguments, reasoning as `tool.progress` of `_thinking`, as
/// the Python Hermes sends them.
fn sink(events: Arc<Events>, message_id: String) -> Arc<dyn EventSink> {
    // Per call in flight: its id, preview and arguments (known from the assistant message
    // that asked for it, which is added before the call starts).
    let calls: Mutex<Vec<(String, String, Value)>> = Mutex::new(Vec::new());
    let args_of = |m: &hermes_protocol::ToolCall| {
        serde_json::from_str::<Value>(&m.arguments)
            .unwrap_or_else(|_| Value::String(m.arguments.clone()))
    };
    Arc::new(move |event: AgentEvent| match event {
        AgentEvent::MessageAdded(m) if !m.tool_calls.is_empty() => {
            if let Ok(mut c) = calls.lock() {
                // Calls that never started (refused before running) are dropped here.
                c.clear();
                c.extend(
                    m.tool_calls
                        .iter()
                        .map(|t| (t.id.clone(), String::new(), args_of(t))),
                );
            }
        }
        AgentEvent::TextDelta(delta) if !delta.is_empty() => {
            events.send(
                "assistant.delta",
                json!({"message_id": message_id, "delta": delta}),
            );
        }
        AgentEvent::ReasoningDelta(delta) if !delta.is_empty() => {
            events.send(
                "tool.progress",
                json!({"message_id": message_id, "tool_name": "_thinking", "delta": delta}),
            );
        }
        AgentEvent::ToolStarted {
            call_id,
            name,
            preview,
        } => {
            let args = calls.lock().ok().and_then(|mut c| {
                let entry = c.iter_mut().find(|(id, ..)| *id == call_id)?;
                entry.1 = preview.clone();
                Some(entry.2.clone())
            });
            events.send(
                "tool.started",
                json!({"message_id": message_id, "tool_name": name, "preview": preview, "args": args}),
            );
        }
        AgentEvent::ToolFinished {
            call_id, name, ok, ..
        } => {
            let (preview, args) = calls
                .lock()
                .ok()
                .and_then(|mut c| {
                    let i = c.iter().position(|(id, ..)| *id == call_id)?;
                    let (_, preview, args) = c.remove(i);
                    Some((Some(preview), args))
                })
                .unwrap_or((None, Value::Null));
            events.send(
                if ok { "tool.completed" } else { "tool.failed" },
                json!({"message_id": message_id, "tool_name": name, "preview": preview, "args": args}),
            );
        }
        _ => {}
    })
}
