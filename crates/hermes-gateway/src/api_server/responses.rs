//! The Responses API: `POST /v1/responses` (`input` as a string or a list of messages,
//! `instructions` merged into our system prompt, `previous_response_id` continuing a stored
//! response's conversation and stored session, `store`, `stream` with the Responses event
//! types), `GET /v1/responses/{id}` and `DELETE /v1/responses/{id}`. A response's `output` is
//! the turn's `function_call` and `function_call_output` items (the tools the agent ran) and
//! the final assistant `message`.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use hermes_core::EventSink;
use hermes_protocol::{AgentEvent, Message, Role, TurnEnd, Usage};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::response_store::StoredResponse;
use super::{
    RunnerError, Shared, TurnInput, TurnOutcome, admit, body_bytes, check_auth, error_response,
    json_response, new_id, run_turn, runner_error_response, session_key_header, set_session_header,
    set_session_key_header, sse_response, turn_error_response, unix_now,
};
use crate::outcome;

/// Messages of a conversation kept when the client asks for `truncation: "auto"`.
const TRUNCATED_HISTORY: usize = 100;

/// A Responses request read into one turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesRequest {
    pub model: Option<String>,
    pub instructions: Option<String>,
    /// The input messages before the last user message (or the trailing tool outputs).
    pub input_history: Vec<Message>,
    /// The last input message ("" when the input ends with `function_call_output` items).
    pub user: String,
    /// The client's own `function` tools ([`crate::client_tools`]).
    pub tools: Vec<hermes_protocol::ToolSchema>,
    /// The `function_call_output` items the input ends with: the turn continues from them.
    pub tool_results: Vec<Message>,
    /// Its images.
    pub images: Vec<hermes_protocol::Image>,
    pub previous_response_id: Option<String>,
    /// `conversation_history` (the Python Hermes's extension): the conversation supplied by
    /// the client instead of a stored one.
    pub conversation_history: Option<Vec<Message>>,
    pub store: bool,
    pub stream: bool,
    pub truncate: bool,
}

/// The chat-completions request error: the message and the field it is about.
pub use crate::wire::BadRequest;

fn bad(message: impl Into<String>, param: &str) -> BadRequest {
    BadRequest {
        message: message.into(),
        param: Some(param.to_string()),
    }
}

/// Reads a Responses request body.
pub fn parse_request(body: &[u8]) -> Result<ResponsesRequest, BadRequest> {
    let value: Value = serde_json::from_slice(body).map_err(|e| BadRequest {
        message: format!("Invalid JSON in request body: {e}"),
        param: None,
    })?;
    let obj = value.as_object().ok_or_else(|| BadRequest {
        message: "The request body must be a JSON object".into(),
        param: None,
    })?;
    let text_field = |name: &str| -> Result<Option<String>, BadRequest> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(format!("'{name}' must be a string"), name)),
        }
    };
    let flag = |name: &str, default: bool| -> Result<bool, BadRequest> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(format!("'{name}' must be a boolean"), name)),
        }
    };
    let model = text_field("model")?;
    let mut instructions = text_field("instructions")?;
    let previous_response_id = text_field("previous_response_id")?;
    let mut messages: Vec<Message> = Vec::new();
    match obj.get("input") {
        None | Some(Value::Null) => return Err(bad("Missing 'input' field", "input")),
        Some(Value::String(s)) => messages.push(Message::user(s.clone())),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let param = format!("input[{i}]");
                match item {
                    Value::String(s) => messages.push(Message::user(s.clone())),
                    Value::Object(o) => {
                        match o.get("type").and_then(Value::as_str) {
                            Some("reasoning") => continue,
                            Some("function_call") => {
                                function_call_input(&mut messages, o, &param)?;
                                continue;
                            }
                            Some("function_call_output") => {
                                let call_id = o
                                    .get("call_id")
                                    .and_then(Value::as_str)
                                    .filter(|id| !id.is_empty())
                                    .ok_or_else(|| {
                                        bad(format!("{param} needs a 'call_id'"), &param)
                                    })?;
                                let output = match o.get("output") {
                                    Some(Value::String(s)) => s.clone(),
                                    None | Some(Value::Null) => String::new(),
                                    Some(other) => other.to_string(),
                                };
                                let name = crate::client_tools::call_name(&messages, call_id);
                                messages.push(Message::tool_result(call_id, name, output));
                                continue;
                            }
                            _ => {}
                        }
                        let role = o.get("role").and_then(Value::as_str).unwrap_or("user");
                        let (content, images) = crate::wire::content_of(o.get("content"))
                            .map_err(|e| e.at(&format!("{param}.content")))?;
                        match role {
                            "system" | "developer" => {
                                instructions = Some(match instructions {
                                    Some(s) => format!("{s}\n{content}"),
                                    None => content,
                                });
                            }
                            "user" => messages.push(Message::user_with_images(content, images)),
                            "assistant" => messages.push(Message::assistant(content)),
                            other => {
                                return Err(bad(
                                    format!(
                                        "{param}.role {other:?} is not one of user, assistant, system, developer"
                                    ),
                                    &format!("{param}.role"),
                                ));
                            }
                        }
                    }
                    _ => {
                        return Err(bad(
                            format!("{param} must be a string or an object"),
                            &param,
                        ));
                    }
                }
            }
        }
        Some(_) => return Err(bad("'input' must be a string or array", "input")),
    }
    let tools = crate::client_tools::parse_tools(
        obj.get("tools"),
        obj.get("tool_choice"),
        crate::client_tools::Dialect::Responses,
    )?;
    let trailing_results = messages
        .iter()
        .rev()
        .take_while(|m| m.role == Role::Tool)
        .count();
    let tool_results = messages.split_off(messages.len() - trailing_results);
    let (user, images) = match messages.pop() {
        _ if !tool_results.is_empty() => (String::new(), Vec::new()),
        Some(m)
            if m.role == Role::User && (!m.content.trim().is_empty() || !m.images.is_empty()) =>
        {
            (m.content, m.images)
        }
        _ => {
            return Err(bad(
                "No user message found in input: the last input message must be the user's",
                "input",
            ));
        }
    };
    let conversation_history = match obj.get("conversation_history") {
        None | Some(Value::Null) => None,
        Some(Value::Array(entries)) => {
            let mut out = Vec::new();
            for (i, e) in entries.iter().enumerate() {
                let role = e.get("role").and_then(Value::as_str);
                let content = crate::wire::content_of(e.get("content"))
                    .ok()
                    .map(|(text, _)| text);
                match (role, content) {
                    (Some("user"), Some(c)) => out.push(Message::user(c)),
                    (Some("assistant"), Some(c)) => out.push(Message::assistant(c)),
                    (Some(_), Some(_)) => {}
                    _ => {
                        return Err(bad(
                            format!(
                                "conversation_history[{i}] must have 'role' and 'content' fields"
                            ),
                            &format!("conversation_history[{i}]"),
                        ));
                    }
                }
            }
            Some(out)
        }
        Some(_) => {
            return Err(bad(
                "'conversation_history' must be an array of message objects",
                "conversation_history",
            ));
        }
    };
    let truncate = match obj.get("truncation") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) if s == "auto" => true,
        Some(Value::String(s)) if s == "disabled" => false,
        Some(_) => {
            return Err(bad(
                "'truncation' must be \"auto\" or \"disabled\"",
                "truncation",
            ));
        }
    };
    Ok(ResponsesRequest {
        model,
        instructions,
        input_history: messages,
        user,
        tools,
        tool_results,
        images,
        previous_response_id,
        conversation_history,
        store: flag("store", true)?,
        stream: flag("stream", false)?,
        truncate,
    })
}

/// A `function_call` input item (a call of the client's tool from an earlier answer, replayed
/// by a client that keeps the conversation itself): joins the assistant message before it.
fn function_call_input(
    messages: &mut Vec<Message>,
    o: &serde_json::Map<String, Value>,
    param: &str,
) -> Result<(), BadRequest> {
    let text = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let call = hermes_protocol::ToolCall {
        id: text("call_id"),
        name: text("name"),
        arguments: match o.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            _ => "{}".into(),
        },
    };
    if call.id.is_empty() || call.name.is_empty() {
        return Err(bad(
            format!("{param} needs a 'call_id' and a 'name'"),
            param,
        ));
    }
    match messages.last_mut() {
        Some(last) if last.role == Role::Assistant => last.tool_calls.push(call),
        _ => messages.push(Message::assistant_with_tools("", vec![call])),
    }
    Ok(())
}

/// What every event and the final object of one response share.
#[derive(Debug, Clone)]
struct Envelope {
    id: String,
    created_at: u64,
    model: String,
    instructions: Option<String>,
    previous_response_id: Option<String>,
    store: bool,
}

impl Envelope {
    fn object(&self, status: &str, output: Vec<Value>, usage: Option<&Usage>) -> Value {
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "model": self.model,
            "instructions": self.instructions,
            "previous_response_id": self.previous_response_id,
            "store": self.store,
            "output": output,
            "parallel_tool_calls": true,
            "tool_choice": "auto",
            "tools": [],
            "error": null,
            "incomplete_details": null,
            "usage": usage.map(usage_json),
        })
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "total_tokens": u.total(),
    })
}

/// The `function_call` items of an assistant message and the `function_call_output` item of a
/// tool result.
fn tool_items(m: &Message) -> Vec<Value> {
    match m.role {
        Role::Assistant => m
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": format!("fc_{}", c.id),
                    "type": "function_call",
                    "status": "completed",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": c.arguments,
                })
            })
            .collect(),
        Role::Tool => vec![json!({
            "id": format!("fco_{}", m.tool_call_id.as_deref().unwrap_or_default()),
            "type": "function_call_output",
            "status": "completed",
            "call_id": m.tool_call_id,
            "output": m.content,
        })],
        Role::System | Role::User => Vec::new(),
    }
}

fn message_item(id: &str, status: &str, text: &str) -> Value {
    json!({
        "id": id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

/// The output of a finished turn: its tool items, then the final message.
fn output_items(outcome: &TurnOutcome, message_id: &str) -> Vec<Value> {
    let mut items: Vec<Value> = outcome.added.iter().flat_map(tool_items).collect();
    // A turn handing calls back to the client has a message only when the model said something.
    if outcome.client_calls.is_empty() || !outcome.final_text.is_empty() {
        items.push(message_item(message_id, "completed", &outcome.final_text));
    }
    items
}

/// The turn a request asks for, from the stored response it continues: `Err` is the answer
/// (unknown previous response, a store failure).
pub(crate) fn turn_of(
    s: &Shared,
    r: &ResponsesRequest,
) -> Result<(TurnInput, Option<String>), Box<Response>> {
    let mut instructions = r.instructions.clone();
    let mut session = None;
    let mut history = match (&r.conversation_history, &r.previous_response_id) {
        (Some(h), _) => h.clone(),
        (None, Some(prev)) => match s.responses.get(prev) {
            Ok(Some(stored)) => {
                session = stored.session_id;
                if instructions.is_none() {
                    instructions = stored.instructions;
                }
                stored.conversation
            }
            Ok(None) => {
                return Err(Box::new(error_response(
                    StatusCode::NOT_FOUND,
                    &format!("Previous response not found: {prev}"),
                    "invalid_request_error",
                    Some("previous_response_not_found"),
                )));
            }
            Err(e) => return Err(Box::new(store_error(&e))),
        },
        (None, None) => Vec::new(),
    };
    history.extend(r.input_history.iter().cloned());
    if r.truncate && history.len() > TRUNCATED_HISTORY {
        history.drain(..history.len() - TRUNCATED_HISTORY);
    }
    let input = TurnInput {
        system: instructions.clone(),
        history: Some(history),
        user: r.user.clone(),
        images: r.images.clone(),
        session,
        approver: None,
        route: s.route(r.model.as_deref()),
        tools: r.tools.clone(),
        tool_results: r.tool_results.clone(),
        memory_scope: None,
    };
    Ok((input, instructions))
}

fn store_error(e: &super::response_store::StoreError) -> Response {
    error_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        &e.to_string(),
        "server_error",
        Some("response_store_error"),
    )
}

/// Keeps a finished response for chaining and retrieval (when the request allows it).
fn keep(s: &Shared, envelope: &Envelope, response: &Value, outcome: &TurnOutcome) {
    if !envelope.store {
        return;
    }
    let entry = StoredResponse {
        response: response.clone(),
        conversation: outcome.conversation.clone(),
        instructions: envelope.instructions.clone(),
        session_id: outcome.session_id.clone(),
    };
    if let Err(e) = s.responses.put(&envelope.id, &entry) {
        tracing::warn!("cannot store response {}: {e}", envelope.id);
    }
}

/// A Responses-style request (`/v1/responses`, `/v1/runs`) of an authorised client, parsed;
/// otherwise the answer to send (401, 413, or 400 naming the field).
pub(crate) fn authorized_request(
    s: &Shared,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<ResponsesRequest, Box<Response>> {
    if let Some(denied) = check_auth(s, headers) {
        return Err(Box::new(denied));
    }
    let body = body_bytes(body)?;
    parse_request(&body).map_err(|e| {
        Box::new(json_response(
            StatusCode::BAD_REQUEST,
            crate::wire::error_body(
                &e.message,
                "invalid_request_error",
                e.param.as_deref(),
                None,
            ),
        ))
    })
}

pub(crate) async fn create(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request = match authorized_request(&s, &headers, body) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let key = match session_key_header(&s, &headers) {
        Ok(k) => k,
        Err(r) => return *r,
    };
    let (mut input, instructions) = match turn_of(&s, &request) {
        Ok(t) => t,
        Err(r) => return *r,
    };
    input.memory_scope = key.clone();
    let permit = match admit(&s) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let envelope = Envelope {
        id: new_id("resp_"),
        created_at: unix_now(),
        model: request
            .model
            .clone()
            .unwrap_or_else(|| s.config.model_name.clone()),
        instructions,
        previous_response_id: request.previous_response_id.clone(),
        store: request.store,
    };
    if request.stream {
        let mut response = streamed(s, input, envelope, permit);
        set_session_key_header(&mut response, key.as_deref());
        return response;
    }
    let events: Arc<dyn EventSink> = Arc::new(|_: AgentEvent| {});
    let outcome = match run_turn(&s, input, events, permit).await {
        Ok(o) => o,
        Err(e) => return runner_error_response(&e),
    };
    let mut response = match turn_error_response(&outcome.end) {
        Some(r) => r,
        None => {
            let status = match outcome.end {
                TurnEnd::BudgetExhausted => "incomplete",
                _ => "completed",
            };
            let object = envelope.object(
                status,
                output_items(&outcome, &new_id("msg_")),
                Some(&outcome.usage),
            );
            keep(&s, &envelope, &object, &outcome);
            json_response(StatusCode::OK, object)
        }
    };
    set_session_header(&mut response, outcome.session_id.as_deref());
    set_session_key_header(&mut response, key.as_deref());
    response
}

pub(crate) async fn retrieve(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    match s.responses.get(&id) {
        Ok(Some(stored)) => json_response(StatusCode::OK, stored.response),
        Ok(None) => not_found(&id),
        Err(e) => store_error(&e),
    }
}

pub(crate) async fn delete(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    match s.responses.delete(&id) {
        Ok(true) => json_response(
            StatusCode::OK,
            json!({"id": id, "object": "response", "deleted": true}),
        ),
        Ok(false) => not_found(&id),
        Err(e) => store_error(&e),
    }
}

fn not_found(id: &str) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &format!("Response not found: {id}"),
        "invalid_request_error",
        Some("response_not_found"),
    )
}

/// The event stream of one response as it is produced: `output_index` counts items in the
/// order they were opened; `sequence_number` counts events.
struct StreamState {
    /// `None` once the response is finished: the body ends even if the runner kept the sink.
    tx: Option<mpsc::UnboundedSender<String>>,
    sequence: u64,
    next_index: u64,
    /// The assistant message item, once text arrived: its id, output index and text so far.
    message: Option<(String, u64, String)>,
    /// Finished tool items, in order (the final object lists them).
    items: Vec<Value>,
}

impl StreamState {
    fn send(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        if let Some(tx) = &self.tx {
            let _ = tx.send(crate::wire::sse(Some(kind), &data));
        }
    }

    fn text(&mut self, delta: &str) {
        if self.message.is_none() {
            let id = new_id("msg_");
            let index = self.next_index;
            self.next_index += 1;
            self.send(
                "response.output_item.added",
                json!({"output_index": index, "item": {"id": id, "type": "message",
                    "status": "in_progress", "role": "assistant", "content": []}}),
            );
            self.send(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
            );
            self.message = Some((id, index, String::new()));
        }
        let Some((id, index, text)) = self.message.as_mut() else {
            return;
        };
        text.push_str(delta);
        let data = json!({"item_id": id, "output_index": *index, "content_index": 0,
            "delta": delta, "logprobs": []});
        self.send("response.output_text.delta", data);
    }

    fn tool_item(&mut self, item: Value) {
        let index = self.next_index;
        self.next_index += 1;
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        self.send(
            "response.output_item.added",
            json!({"output_index": index, "item": added}),
        );
        self.send(
            "response.output_item.done",
            json!({"output_index": index, "item": item.clone()}),
        );
        self.items.push(item);
    }

    /// Closes the message item (opening it with `final_text` when nothing streamed) and
    /// returns the output of the finished response.
    fn finish(&mut self, final_text: &str) -> Vec<Value> {
        if self.message.is_none() && !final_text.is_empty() {
            self.text(final_text);
        }
        let mut output = self.items.clone();
        if let Some((id, index, text)) = self.message.take() {
            self.send(
                "response.output_text.done",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                    "text": text, "logprobs": []}),
            );
            self.send(
                "response.content_part.done",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                    "part": {"type": "output_text", "text": text, "annotations": []}}),
            );
            let item = message_item(&id, "completed", &text);
            self.send(
                "response.output_item.done",
                json!({"output_index": index, "item": item.clone()}),
            );
            output.push(item);
        }
        output
    }
}

fn streamed(
    s: Arc<Shared>,
    input: TurnInput,
    envelope: Envelope,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response {
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let state = Arc::new(Mutex::new(StreamState {
        tx: Some(tx),
        sequence: 0,
        next_index: 0,
        message: None,
        items: Vec::new(),
    }));
    if let Ok(mut st) = state.lock() {
        let created = envelope.object("in_progress", Vec::new(), None);
        st.send("response.created", json!({"response": created.clone()}));
        st.send("response.in_progress", json!({"response": created}));
    }
    let sink_state = state.clone();
    let events: Arc<dyn EventSink> = Arc::new(move |event: AgentEvent| {
        let Ok(mut st) = sink_state.lock() else {
            return;
        };
        match event {
            AgentEvent::TextDelta(t) if !t.is_empty() => st.text(&t),
            AgentEvent::MessageAdded(m) => {
                for item in tool_items(&m) {
                    st.tool_item(item);
                }
            }
            _ => {}
        }
    });
    let cancel = s.turns.child_token();
    let turn_cancel = cancel.clone();
    let shared = s.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let outcome = shared.runner.run(input, events, turn_cancel).await;
        let Ok(mut st) = state.lock() else {
            return;
        };
        finish_stream(&shared, &mut st, &envelope, outcome);
        st.tx = None;
    });
    sse_response(rx, cancel.drop_guard(), s.config.sse_keepalive)
}

/// The last events of a streamed response: `response.completed` (stored), or
/// `response.failed` with the error of a turn that did not answer.
fn finish_stream(
    s: &Shared,
    st: &mut StreamState,
    envelope: &Envelope,
    outcome: Result<TurnOutcome, RunnerError>,
) {
    match outcome {
        Err(e) => {
            let output = st.finish("");
            let mut failed = envelope.object("failed", output, None);
            failed["error"] = json!({"code": "server_error", "message": e.to_string()});
            st.send("response.failed", json!({"response": failed}));
        }
        Ok(o) => {
            let output = st.finish(&o.final_text);
            match outcome::error_shape(&o.end) {
                Some(shape) => {
                    let message = match &o.end {
                        TurnEnd::Failed(f) => f.message.clone(),
                        _ => "the turn was cancelled".into(),
                    };
                    let mut failed = envelope.object("failed", output, Some(&o.usage));
                    failed["error"] = json!({"code": shape.code, "message": message});
                    st.send("response.failed", json!({"response": failed}));
                }
                None => {
                    let status = match o.end {
                        TurnEnd::BudgetExhausted => "incomplete",
                        _ => "completed",
                    };
                    let object = envelope.object(status, output, Some(&o.usage));
                    keep(s, envelope, &object, &o);
                    let kind = if status == "completed" {
                        "response.completed"
                    } else {
                        "response.incomplete"
                    };
                    st.send(kind, json!({"response": object}));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_string_or_items() {
        let r = parse_request(br#"{"input":"hi","instructions":"Be brief."}"#).unwrap();
        assert_eq!(r.user, "hi");
        assert_eq!(r.instructions.as_deref(), Some("Be brief."));
        assert!(r.store && !r.stream);
        let r = parse_request(
            br#"{"input":[{"role":"developer","content":"Rule."},
                {"role":"user","content":[{"type":"input_text","text":"a"}]},
                {"type":"message","role":"assistant","content":[{"type":"output_text","text":"b"}]},
                {"type":"function_call","call_id":"c","name":"x","arguments":"{}"},
                "c"],"store":false,"stream":true}"#,
        )
        .unwrap();
        assert_eq!(r.instructions.as_deref(), Some("Rule."));
        let call = hermes_protocol::ToolCall {
            id: "c".into(),
            name: "x".into(),
            arguments: "{}".into(),
        };
        assert_eq!(
            r.input_history,
            vec![
                Message::user("a"),
                Message::assistant_with_tools("b", vec![call])
            ]
        );
        assert_eq!(r.user, "c");
        assert!(!r.store && r.stream);
    }

    #[test]
    fn bad_requests_name_the_field() {
        let param = |b: &[u8]| parse_request(b).unwrap_err().param;
        assert_eq!(param(b"{}"), Some("input".into()));
        assert_eq!(param(br#"{"input":5}"#), Some("input".into()));
        assert_eq!(param(br#"{"input":[]}"#), Some("input".into()));
        assert_eq!(
            param(br#"{"input":[{"role":"tool","content":"x"}]}"#),
            Some("input[0].role".into())
        );
        assert_eq!(
            param(br#"{"input":"x","store":"no"}"#),
            Some("store".into())
        );
        assert_eq!(
            param(br#"{"input":"x","previous_response_id":1}"#),
            Some("previous_response_id".into())
        );
        assert_eq!(param(b"[1]"), None);
    }
}
