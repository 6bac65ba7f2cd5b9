//! The OpenAI wire shapes the API server speaks: the error envelope, a chat-completions request
//! read into the pieces of one agent turn (system text, history, last user message), the
//! `chat.completion` answer and the `chat.completion.chunk` stream events. Kept apart from the
//! HTTP plumbing so the shapes are tested on their own.

use hermes_protocol::{Image, Message, Usage};
use serde_json::{Value, json};

/// OpenAI's error envelope: `{"error": {"message", "type", "param", "code"}}`.
pub fn error_body(message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> Value {
    json!({
        "error": {
            "message": message,
            "type": kind,
            "param": param,
            "code": code,
        }
    })
}

/// A request error: the message and the field it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRequest {
    pub message: String,
    pub param: Option<String>,
}

impl BadRequest {
    pub(crate) fn new(message: impl Into<String>, param: impl Into<String>) -> Self {
        BadRequest {
            message: message.into(),
            param: Some(param.into()),
        }
    }

    pub fn body(&self) -> Value {
        error_body(
            &self.message,
            "invalid_request_error",
            self.param.as_deref(),
            None,
        )
    }
}

/// A chat-completions request as one agent turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The `model` the client asked for (echoed back), if any.
    pub model: Option<String>,
    /// Every `system` message joined by newlines: appended to the agent's own system prompt.
    pub system: Option<String>,
    /// The `user`, `assistant` and `tool` messages before the last user message (or before
    /// the trailing tool results).
    pub history: Vec<Message>,
    /// The last user message ("" when the request ends with tool results).
    pub user: String,
    /// The client's own tools ([`crate::client_tools`]).
    pub tools: Vec<hermes_protocol::ToolSchema>,
    /// The results of the client's tool calls the request ends with: the turn continues from
    /// them instead of a new user message.
    pub tool_results: Vec<Message>,
    /// The images of the last message.
    pub images: Vec<Image>,
    pub stream: bool,
    /// `stream_options.include_usage`: a final chunk carrying `usage`.
    pub include_usage: bool,
}

/// Reads a chat-completions body. Assistant `tool_calls` and `tool` messages are kept (the
/// client's own tools, [`crate::client_tools`]); unknown roles are left out. The last message
/// is the user's, or the results of the client's tool calls.
pub fn parse_chat_request(body: &[u8]) -> Result<ChatRequest, BadRequest> {
    let value: Value = serde_json::from_slice(body).map_err(|e| BadRequest {
        message: format!("Invalid JSON in request body: {e}"),
        param: None,
    })?;
    let Some(obj) = value.as_object() else {
        return Err(BadRequest {
            message: "The request body must be a JSON object".into(),
            param: None,
        });
    };
    let model = match obj.get("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(BadRequest::new("'model' must be a string", "model")),
    };
    let stream = optional_bool(obj.get("stream"), "stream")?;
    let include_usage = match obj.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(o)) => {
            optional_bool(o.get("include_usage"), "stream_options.include_usage")?
        }
        Some(_) => {
            return Err(BadRequest::new(
                "'stream_options' must be an object",
                "stream_options",
            ));
        }
    };
    let messages = match obj.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        _ => {
            return Err(BadRequest::new(
                "Missing or invalid 'messages' field",
                "messages",
            ));
        }
    };
    let mut system: Option<String> = None;
    let mut conversation = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).ok_or_else(|| {
            BadRequest::new(
                format!("messages[{i}] has no 'role'"),
                format!("messages[{i}].role"),
            )
        })?;
        let (content, images) =
            content_of(m.get("content")).map_err(|e| e.at(&format!("messages[{i}].content")))?;
        match role {
            "system" | "developer" => {
                system = Some(match system {
                    Some(s) => format!("{s}\n{content}"),
                    None => content,
                });
            }
            "user" => conversation.push(Message::user_with_images(content, images)),
            "assistant" => {
                let calls = crate::client_tools::parse_assistant_calls(
                    m.get("tool_calls"),
                    &format!("messages[{i}].tool_calls"),
                )?;
                conversation.push(Message::assistant_with_tools(content, calls));
            }
            "tool" => {
                let id = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .filter(|id| !id.is_empty())
                    .ok_or_else(|| {
                        BadRequest::new(
                            format!("messages[{i}] is a tool message without 'tool_call_id'"),
                            format!("messages[{i}].tool_call_id"),
                        )
                    })?;
                let name = crate::client_tools::call_name(&conversation, id);
                conversation.push(Message::tool_result(id, name, content));
            }
            _ => {}
        }
    }
    let tools = crate::client_tools::parse_tools(
        obj.get("tools"),
        obj.get("tool_choice"),
        crate::client_tools::Dialect::ChatCompletions,
    )?;
    let trailing_results = conversation
        .iter()
        .rev()
        .take_while(|m| m.role == hermes_protocol::Role::Tool)
        .count();
    // A tool message inside the conversation that answers none of its calls is left out (the
    // Python Hermes left out every tool message); trailing ones may answer calls of the stored
    // session the request continues.
    let body_len = conversation.len() - trailing_results;
    let mut index = 0;
    conversation.retain(|m| {
        index += 1;
        index > body_len
            || m.role != hermes_protocol::Role::Tool
            || m.name.as_deref().is_some_and(|n| !n.is_empty())
    });
    if trailing_results > 0 {
        let tool_results = conversation.split_off(conversation.len() - trailing_results);
        return Ok(ChatRequest {
            model,
            system,
            history: conversation,
            user: String::new(),
            tools,
            tool_results,
            images: Vec::new(),
            stream,
            include_usage,
        });
    }
    let last = conversation.pop();
    let (user, images) = match last {
        Some(m)
            if m.role == hermes_protocol::Role::User
                && (!m.content.trim().is_empty() || !m.images.is_empty()) =>
        {
            (m.content, m.images)
        }
        _ => {
            return Err(BadRequest::new(
                "No user message found in messages: the last message must be the user's",
                "messages",
            ));
        }
    };
    Ok(ChatRequest {
        model,
        system,
        history: conversation,
        user,
        tools,
        tool_results: Vec::new(),
        images,
        stream,
        include_usage,
    })
}

fn optional_bool(v: Option<&Value>, field: &str) -> Result<bool, BadRequest> {
    match v {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(BadRequest::new(
            format!("'{field}' must be a boolean"),
            field,
        )),
    }
}

/// The most images one message may carry.
const MAX_IMAGES: usize = 16;

/// Why a message's content was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentError {
    /// Neither a string nor a list of parts.
    Shape,
    /// An image part that is not a `data:image/...;base64,` or `http(s)` URL, or too many.
    Image(String),
}

impl ContentError {
    /// The request error, about the field `param`.
    pub fn at(&self, param: &str) -> BadRequest {
        let message = match self {
            ContentError::Shape => format!("{param} must be a string or a list of content parts"),
            ContentError::Image(why) => format!("{param}: {why}"),
        };
        BadRequest::new(message, param)
    }
}

/// A message's content: its text (a string, or the text parts of a list joined by newlines:
/// `text`, `input_text`, `output_text`) and its images (`image_url` parts of Chat Completions,
/// `input_image` parts of Responses) as `data:` or `http(s)` URLs. Missing or null content is
/// empty; parts of other kinds are left out.
pub fn content_of(v: Option<&Value>) -> Result<(String, Vec<Image>), ContentError> {
    let parts = match v {
        None | Some(Value::Null) => return Ok((String::new(), Vec::new())),
        Some(Value::String(s)) => return Ok((s.clone(), Vec::new())),
        Some(Value::Array(parts)) => parts,
        Some(_) => return Err(ContentError::Shape),
    };
    let mut texts: Vec<&str> = Vec::new();
    let mut images = Vec::new();
    for part in parts {
        match part {
            Value::String(s) => texts.push(s),
            Value::Object(o) => {
                let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
                if matches!(kind, "image_url" | "input_image") {
                    // `image_url: {url}` (Chat Completions) or `image_url: "..."` (Responses).
                    let url = match o.get("image_url") {
                        Some(Value::String(u)) => Some(u.as_str()),
                        Some(Value::Object(inner)) => inner.get("url").and_then(Value::as_str),
                        _ => None,
                    }
                    .ok_or_else(|| ContentError::Image("an image part without a URL".into()))?;
                    images.push(image_of(url)?);
                    if images.len() > MAX_IMAGES {
                        return Err(ContentError::Image(format!(
                            "more than {MAX_IMAGES} images in one message"
                        )));
                    }
                } else if let Some(t) = o.get("text").and_then(Value::as_str) {
                    texts.push(t);
                }
            }
            _ => {}
        }
    }
    Ok((texts.join("\n"), images))
}

fn image_of(url: &str) -> Result<Image, ContentError> {
    let url = url.trim();
    if url.starts_with("https://") || url.starts_with("http://") {
        return Ok(Image::Url {
            url: url.to_string(),
        });
    }
    match Image::from_url(url) {
        Image::Data { media_type, data } if media_type.starts_with("image/") => {
            Ok(Image::Data { media_type, data })
        }
        _ => Err(ContentError::Image(
            "an image must be an http(s) URL or a data:image/...;base64, URL".into(),
        )),
    }
}

/// OpenAI's usage object.
pub fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.total(),
    })
}

/// The identity every chunk and answer of one completion shares.
#[derive(Debug, Clone)]
pub struct Completion {
    pub id: String,
    pub created: u64,
    pub model: String,
}

impl Completion {
    /// The non-streamed answer.
    pub fn answer(&self, text: &str, finish_reason: &str, usage: &Usage) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }],
            "usage": usage_json(usage),
        })
    }

    /// The non-streamed answer that hands calls of the client's own tools back to it.
    pub fn tool_calls_answer(
        &self,
        text: &str,
        calls: &[hermes_protocol::ToolCall],
        usage: &Usage,
    ) -> Value {
        let mut answer = self.answer(text, "tool_calls", usage);
        let message = &mut answer["choices"][0]["message"];
        if text.is_empty() {
            message["content"] = Value::Null;
        }
        message["tool_calls"] = crate::client_tools::chat_tool_calls(calls);
        answer
    }

    /// One `chat.completion.chunk` with `delta` and `finish_reason`.
    pub fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
    }

    /// The chunk after the finish chunk when the client asked for usage: no choices.
    pub fn usage_chunk(&self, usage: &Usage) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage_json(usage),
        })
    }
}

/// One SSE event: `data: JSON` (with `event: NAME` first when named), then a blank line.
pub fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The stream's last line.
pub const SSE_DONE: &str = "data: [DONE]\n\n";

/// `GET /v1/models`: the one model this server answers as.
pub fn models(model_id: &str, created: u64) -> Value {
    json!({"object": "list", "data": [model(model_id, created)]})
}

/// A `model_routes` alias as a model object: its root is the routed model, its parent the
/// server's own model name (Python's shape).
pub fn routed_model(
    alias: &str,
    route: &crate::api_server::ModelRoute,
    parent: &str,
    created: u64,
) -> Value {
    json!({
        "id": alias,
        "object": "model",
        "created": created,
        "owned_by": "hermes",
        "permission": [],
        "root": route.model,
        "parent": parent,
    })
}

/// `GET /v1/models/{id}`: one model object.
pub fn model(model: &str, created: u64) -> Value {
    json!({
        "id": model,
        "object": "model",
        "created": created,
        "owned_by": "hermes",
        "permission": [],
        "root": model,
        "parent": null,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_become_system_history_and_last_user_message() {
        let body = br#"{"model":"m","messages":[
            {"role":"system","content":"Be brief."},
            {"role":"user","content":"hi"},
            {"role":"assistant","content":"hello"},
            {"role":"tool","content":"answers no call","tool_call_id":"x"},
            {"role":"system","content":[{"type":"text","text":"Second."}]},
            {"role":"user","content":[{"type":"text","text":"what now?"}]}
        ],"stream":true,"stream_options":{"include_usage":true}}"#;
        let r = parse_chat_request(body).unwrap();
        assert_eq!(r.model.as_deref(), Some("m"));
        assert_eq!(r.system.as_deref(), Some("Be brief.\nSecond."));
        assert_eq!(
            r.history,
            vec![Message::user("hi"), Message::assistant("hello")]
        );
        assert_eq!(r.user, "what now?");
        assert!(r.stream && r.include_usage);
        assert!(r.tools.is_empty() && r.tool_results.is_empty());
    }

    #[test]
    fn a_conversation_ending_in_tool_results_continues_from_them() {
        let body = br#"{"messages":[
            {"role":"user","content":"weather?"},
            {"role":"assistant","content":null,"tool_calls":[
                {"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"sunny"}
        ],"tools":[{"type":"function","function":{"name":"get_weather"}}]}"#;
        let r = parse_chat_request(body).unwrap();
        assert_eq!(r.user, "");
        assert_eq!(r.tools.len(), 1);
        assert_eq!(r.history.len(), 2);
        assert_eq!(r.history[1].tool_calls[0].name, "get_weather");
        assert_eq!(
            r.tool_results,
            vec![Message::tool_result("c1", "get_weather", "sunny")]
        );
    }

    #[test]
    fn bad_requests_name_the_field() {
        let param = |b: &[u8]| parse_chat_request(b).unwrap_err().param;
        assert_eq!(param(b"{}"), Some("messages".into()));
        assert_eq!(param(br#"{"messages":[]}"#), Some("messages".into()));
        assert_eq!(
            param(br#"{"messages":[{"role":"assistant","content":"x"}]}"#),
            Some("messages".into())
        );
        assert_eq!(
            param(br#"{"messages":[{"role":"user","content":"x"}],"stream":"yes"}"#),
            Some("stream".into())
        );
        assert_eq!(
            param(br#"{"messages":[{"role":"user","content":5}]}"#),
            Some("messages[0].content".into())
        );
        assert_eq!(param(b"not json"), None);
    }

    #[test]
    fn chunks_have_openai_shapes() {
        let c = Completion {
            id: "chatcmpl-1".into(),
            created: 7,
            model: "hermes-agent".into(),
        };
        let line = sse(None, &c.chunk(json!({"content": "hi"}), None));
        let data = line
            .strip_prefix("data: ")
            .unwrap()
            .strip_suffix("\n\n")
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(data).unwrap(),
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7,
                "model": "hermes-agent",
                "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}]})
        );
        let u = Usage {
            input_tokens: 3,
            output_tokens: 2,
            ..Usage::default()
        };
        assert_eq!(
            c.usage_chunk(&u)["usage"],
            json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})
        );
        assert_eq!(c.usage_chunk(&u)["choices"], json!([]));
    }
}
