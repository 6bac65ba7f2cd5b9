//! `POST /v1/chat/completions`: the request read into one turn (the client's system messages
//! merged into our system prompt, the conversation as history, or the stored session named by
//! `X-Hermes-Session-Id`), answered as one `chat.completion` or streamed as
//! `chat.completion.chunk` events. Tool progress in a stream is an SSE comment line unless the
//! client opts in to `event: hermes.tool.progress` events with `X-Hermes-Tool-Progress: events`:
//! a named event reaches the `openai` SDK as a chunk without `choices`, which breaks the loop of
//! its own README.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use hermes_core::EventSink;
use hermes_protocol::{AgentEvent, TurnEnd};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::{
    Shared, TurnInput, TurnOutcome, admit, body_bytes, check_auth, json_response, new_id, run_turn,
    runner_error_response, session_header, session_key_header, set_session_header,
    set_session_key_header, sse_response, turn_error_response, unix_now, wants_progress_events,
};
use crate::outcome;
use crate::wire::{self, ChatRequest, Completion};

pub(crate) async fn chat_completions(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let body = match body_bytes(body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let request = match wire::parse_chat_request(&body) {
        Ok(r) => r,
        Err(bad) => return json_response(StatusCode::BAD_REQUEST, bad.body()),
    };
    let session = match session_header(&s, &headers) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let key = match session_key_header(&s, &headers) {
        Ok(k) => k,
        Err(r) => return *r,
    };
    let permit = match admit(&s) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let completion = Completion {
        id: new_id("chatcmpl-"),
        created: unix_now(),
        model: request
            .model
            .clone()
            .unwrap_or_else(|| s.config.model_name.clone()),
    };
    let mut input = turn_input(&request, session.clone());
    input.route = s.route(request.model.as_deref());
    input.memory_scope = key.clone();
    let mut response = if request.stream {
        streamed(
            &s,
            input,
            request.include_usage,
            completion,
            permit,
            Progress::of(&headers),
            session,
        )
    } else {
        answered(&s, input, completion, permit).await
    };
    set_session_key_header(&mut response, key.as_deref());
    response
}

/// A turn of this request: with a stored session, its conversation comes from the store and
/// only the last user message of the request is used (the Python Hermes's rule).
fn turn_input(r: &ChatRequest, session: Option<String>) -> TurnInput {
    TurnInput {
        system: r.system.clone(),
        history: session.is_none().then(|| r.history.clone()),
        user: r.user.clone(),
        images: r.images.clone(),
        session,
        approver: None,
        route: None,
        tools: r.tools.clone(),
        tool_results: r.tool_results.clone(),
        memory_scope: None,
    }
}

async fn answered(
    s: &Shared,
    input: TurnInput,
    completion: Completion,
    permit: Option<OwnedSemaphorePermit>,
) -> Response {
    let events: Arc<dyn EventSink> = Arc::new(|_: AgentEvent| {});
    let outcome = match run_turn(s, input, events, permit).await {
        Ok(o) => o,
        Err(e) => return runner_error_response(&e),
    };
    let mut response = match turn_error_response(&outcome.end) {
        Some(r) => r,
        None if !outcome.client_calls.is_empty() => json_response(
            StatusCode::OK,
            completion.tool_calls_answer(
                &outcome.final_text,
                &outcome.client_calls,
                &outcome.usage,
            ),
        ),
        None => json_response(
            StatusCode::OK,
            completion.answer(
                &outcome.final_text,
                outcome::finish_reason(&outcome.end),
                &outcome.usage,
            ),
        ),
    };
    set_session_header(&mut response, outcome.session_id.as_deref());
    response
}

/// How tool progress travels in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Progress {
    /// `: hermes.tool.progress {...}` comment lines (the default).
    Comments,
    /// `event: hermes.tool.progress` events (opted in).
    Events,
}

impl Progress {
    fn of(headers: &HeaderMap) -> Progress {
        if wants_progress_events(headers) {
            Progress::Events
        } else {
            Progress::Comments
        }
    }

    fn line(self, data: &Value) -> String {
        match self {
            Progress::Events => wire::sse(Some("hermes.tool.progress"), data),
            Progress::Comments => format!(": hermes.tool.progress {data}\n\n"),
        }
    }
}

fn streamed(
    s: &Shared,
    input: TurnInput,
    include_usage: bool,
    completion: Completion,
    permit: Option<OwnedSemaphorePermit>,
    progress: Progress,
    session: Option<String>,
) -> Response {
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let _ = tx.send(wire::sse(
        None,
        &completion.chunk(json!({"role": "assistant"}), None),
    ));
    let cancel = s.turns.child_token();
    let events = stream_sink(tx.clone(), completion.clone(), progress);
    let runner = s.runner.clone();
    let turn_cancel = cancel.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let outcome = runner.run(input, events, turn_cancel).await;
        if let Ok(o) = &outcome
            && !o.client_calls.is_empty()
        {
            let deltas = crate::client_tools::chat_tool_call_deltas(&o.client_calls);
            let _ = tx.send(wire::sse(
                None,
                &completion.chunk(json!({"tool_calls": deltas}), None),
            ));
        }
        let _ = tx.send(wire::sse(None, &last_chunk(&completion, &outcome)));
        if include_usage {
            let usage = outcome.map(|o| o.usage).unwrap_or_default();
            let _ = tx.send(wire::sse(None, &completion.usage_chunk(&usage)));
        }
        let _ = tx.send(wire::SSE_DONE.to_string());
    });
    let mut response = sse_response(rx, cancel.drop_guard(), s.config.sse_keepalive);
    // The session of a continued conversation is known before the turn runs.
    set_session_header(&mut response, session.as_deref());
    response
}

/// The finish chunk; a turn that did not answer carries OpenAI's `error` object in it (the
/// `openai` SDK raises it as an `APIError`).
fn last_chunk(completion: &Completion, outcome: &Result<TurnOutcome, super::RunnerError>) -> Value {
    let (finish_reason, error) = match outcome {
        Err(e @ super::RunnerError::SessionNotFound(_)) => (
            "error",
            Some((e.to_string(), "invalid_request_error", "session_not_found")),
        ),
        Err(e) => (
            "error",
            Some((e.to_string(), "server_error", "agent_error")),
        ),
        Ok(o) if !o.client_calls.is_empty() => ("tool_calls", None),
        Ok(o) => (
            outcome::finish_reason(&o.end),
            outcome::error_shape(&o.end).map(|shape| {
                let message = match &o.end {
                    TurnEnd::Failed(f) => f.message.clone(),
                    _ => "the turn was cancelled".to_string(),
                };
                (message, shape.kind, shape.code)
            }),
        ),
    };
    let mut last = completion.chunk(json!({}), Some(finish_reason));
    if let Some((message, kind, code)) = error {
        last["error"] = json!({"message": message, "type": kind, "code": code});
    }
    last
}

/// The sink of a streamed turn: answer text as content chunks, tool calls as progress
/// (`running`, then `completed` for a call seen starting).
fn stream_sink(
    tx: mpsc::UnboundedSender<String>,
    completion: Completion,
    progress: Progress,
) -> Arc<dyn EventSink> {
    let started: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    Arc::new(move |event: AgentEvent| match event {
        AgentEvent::TextDelta(text) if !text.is_empty() => {
            let _ = tx.send(wire::sse(
                None,
                &completion.chunk(json!({"content": text}), None),
            ));
        }
        AgentEvent::ToolStarted {
            call_id,
            name,
            preview,
        } => {
            if let Ok(mut s) = started.lock() {
                s.insert(call_id.clone());
            }
            let label = if preview.is_empty() {
                name.clone()
            } else {
                preview
            };
            let _ = tx.send(progress.line(
                &json!({"tool": name, "label": label, "toolCallId": call_id, "status": "running"}),
            ));
        }
        AgentEvent::ToolFinished { call_id, name, .. } => {
            let seen = started.lock().is_ok_and(|mut s| s.remove(&call_id));
            if seen {
                let _ = tx
                    .send(progress.line(
                        &json!({"tool": name, "toolCallId": call_id, "status": "completed"}),
                    ));
            }
        }
        _ => {}
    })
}
