//! Answers one admitted request on a connection: `/models`, 404s, and chat
//! completions driven by the script turn (streamed or JSON replies, HTTP
//! errors and transport faults), byte for byte.

use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::AsyncWrite;

use crate::http::{self, Request};
use crate::openai_sse::{RenderCtx, StreamPlan, completion_json};
use crate::script::{Exhausted, Fault, Reply, Script, Turn};
use crate::{anthropic_sse, bedrock_stream, responses_sse};

/// What a request resolved to when it was captured.
#[derive(Debug)]
pub(crate) enum Dispatch {
    /// `ordinal` = 0-based index among chat requests; `turn` = (script index, turn), `None` when exhausted.
    Chat {
        ordinal: usize,
        turn: Option<(usize, Turn)>,
    },
    Models,
    NotFound,
}

/// What to do with the connection after responding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    KeepAlive,
    /// Shut the socket down (FIN, no RST) and stop serving it.
    Close,
}

const JSON: &str = "application/json";

fn content_type_json() -> Vec<(String, String)> {
    vec![("Content-Type".to_owned(), JSON.to_owned())]
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// Responds to `req`; `close` tells whether the client asked for `Connection: close`.
pub(crate) async fn respond<W: AsyncWrite + Unpin>(
    w: &mut W,
    req: &Request,
    dispatch: Dispatch,
    script: &Script,
    close: bool,
) -> io::Result<Outcome> {
    match dispatch {
        Dispatch::Models => {
            let body = json!({"object": "list", "data": [{"id": "mock-model", "object": "model"}]});
            let bytes = body.to_string().into_bytes();
            http::write_response(w, 200, &content_type_json(), &bytes, close).await?;
            Ok(Outcome::KeepAlive)
        }
        Dispatch::NotFound => {
            let msg = format!("mock server: no route for {} {}", req.method, req.path());
            write_error(w, Api::OpenAiChat, 404, &msg, None, close).await?;
            Ok(Outcome::KeepAlive)
        }
        Dispatch::Chat { ordinal, turn } => chat(w, req, ordinal, turn, script, close).await,
    }
}

/// Which wire format a model request speaks, from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST …/chat/completions`
    OpenAiChat,
    /// `POST …/messages`
    AnthropicMessages,
    /// `POST …/responses`
    Responses,
    /// `POST …/model/{modelId}/converse-stream` (or `…/converse`): AWS Bedrock Converse.
    BedrockConverse,
}

impl Api {
    /// The API of a request target, if it is a model request.
    pub fn of_path(path: &str) -> Option<Api> {
        let p = path
            .split('?')
            .next()
            .unwrap_or_default()
            .trim_end_matches('/');
        if p.contains("/model/") && (p.ends_with("/converse-stream") || p.ends_with("/converse")) {
            Some(Api::BedrockConverse)
        } else if p.ends_with("/chat/completions") {
            Some(Api::OpenAiChat)
        } else if p.ends_with("/messages") {
            Some(Api::AnthropicMessages)
        } else if p.ends_with("/responses") {
            Some(Api::Responses)
        } else {
            None
        }
    }
}

/// Facts about a chat request body that shape the response.
struct ChatRequest {
    api: Api,
    stream: bool,
    include_usage: bool,
    model: String,
    prompt_bytes: usize,
}

impl ChatRequest {
    fn parse(req: &Request) -> ChatRequest {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let is_true = |v: Option<&Value>| v == Some(&Value::Bool(true));
        let api = Api::of_path(req.path()).unwrap_or(Api::OpenAiChat);
        // Bedrock says "stream" and the model id in the path, not the body.
        let bedrock = api == Api::BedrockConverse;
        ChatRequest {
            api,
            stream: if bedrock {
                req.path().ends_with("/converse-stream")
            } else {
                is_true(body.get("stream"))
            },
            include_usage: is_true(body.pointer("/stream_options/include_usage")),
            model: bedrock
                .then(|| bedrock_stream::model_of_path(req.path()))
                .flatten()
                .or_else(|| body.get("model").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| "mock-model".to_owned()),
            prompt_bytes: req.body.len(),
        }
    }

    fn ctx(&self, turn: usize) -> RenderCtx {
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        RenderCtx {
            turn,
            model: self.model.clone(),
            prompt_bytes: self.prompt_bytes,
            created,
        }
    }
}

async fn chat<W: AsyncWrite + Unpin>(
    w: &mut W,
    req: &Request,
    ordinal: usize,
    turn: Option<(usize, Turn)>,
    script: &Script,
    close: bool,
) -> io::Result<Outcome> {
    let chat = ChatRequest::parse(req);
    match turn {
        None => match &script.on_exhausted {
            Exhausted::Error => {
                write_error(w, chat.api, 500, "mock script exhausted", None, close).await?;
                Ok(Outcome::KeepAlive)
            }
            Exhausted::Text(text) => {
                reply(w, &Reply::text(text.clone()), &chat, ordinal, close).await
            }
            Exhausted::Respond(responder) => {
                let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                match (responder.0)(&body) {
                    Turn::Reply(r) => reply(w, &r, &chat, ordinal, close).await,
                    Turn::Fault(f) => fault(w, f, &chat, ordinal, close).await,
                }
            }
        },
        Some((idx, Turn::Reply(r))) => reply(w, &r, &chat, idx, close).await,
        Some((idx, Turn::Fault(f))) => fault(w, f, &chat, idx, close).await,
    }
}

async fn reply<W: AsyncWrite + Unpin>(
    w: &mut W,
    reply: &Reply,
    chat: &ChatRequest,
    turn: usize,
    close: bool,
) -> io::Result<Outcome> {
    sleep_ms(reply.delay_ms).await;
    let ctx = chat.ctx(turn);
    if !chat.stream {
        let body = match chat.api {
            Api::OpenAiChat => completion_json(reply, &ctx),
            Api::AnthropicMessages => anthropic_sse::message_json(reply, &ctx),
            Api::Responses => responses_sse::response_json(reply, &ctx),
            Api::BedrockConverse => bedrock_stream::converse_json(reply, &ctx),
        };
        let bytes = body.to_string().into_bytes();
        http::write_response(w, 200, &content_type_json(), &bytes, close).await?;
        return Ok(Outcome::KeepAlive);
    }
    let (body, finish) = stream_body(reply, chat, &ctx);
    write_stream_head(w, chat.api, turn, close).await?;
    for (i, event) in body.iter().chain(&finish).enumerate() {
        if i > 0 {
            sleep_ms(reply.chunk_delay_ms).await;
        }
        http::write_chunk(w, event).await?;
    }
    http::write_last_chunk(w).await?;
    Ok(Outcome::KeepAlive)
}

/// The streamed events of a reply as bytes, one HTTP chunk each: `(body, finish)`; a
/// mid-stream drop sends part of `body` and never `finish`.
fn stream_body(reply: &Reply, chat: &ChatRequest, ctx: &RenderCtx) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let bytes = |events: Vec<String>| events.into_iter().map(String::into_bytes).collect();
    match chat.api {
        Api::OpenAiChat => {
            let plan = StreamPlan::new(reply, ctx);
            let deltas = plan.deltas.len();
            let mut all: Vec<Vec<u8>> = bytes(plan.events(chat.include_usage));
            let finish = all.split_off(deltas);
            (all, finish)
        }
        Api::AnthropicMessages => {
            let (body, finish) = anthropic_sse::stream_events(reply, ctx);
            (bytes(body), bytes(finish))
        }
        Api::Responses => {
            let (body, finish) = responses_sse::stream_events(reply, ctx);
            (bytes(body), bytes(finish))
        }
        Api::BedrockConverse => bedrock_stream::stream_events(reply, ctx),
    }
}

/// An error reported inside a 200 stream, in the API's own shape.
fn stream_error_event(api: Api, kind: &str, message: &str) -> Vec<u8> {
    match api {
        Api::OpenAiChat => format!(
            "data: {}\n\n",
            json!({"error": {"message": message, "type": kind, "code": kind}})
        )
        .into_bytes(),
        Api::AnthropicMessages => format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "error": {"type": kind, "message": message}})
        )
        .into_bytes(),
        Api::Responses => format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "code": kind, "message": message, "param": null})
        )
        .into_bytes(),
        Api::BedrockConverse => bedrock_stream::exception_frame(kind, message),
    }
}

/// The head of a 200 streamed response: SSE, or Bedrock's binary event stream.
async fn write_stream_head<W: AsyncWrite + Unpin>(
    w: &mut W,
    api: Api,
    turn: usize,
    close: bool,
) -> io::Result<()> {
    match api {
        Api::BedrockConverse => {
            let headers = vec![
                (
                    "Content-Type".to_owned(),
                    bedrock_stream::CONTENT_TYPE.to_owned(),
                ),
                ("x-amzn-RequestId".to_owned(), bedrock_request_id(turn)),
            ];
            http::write_chunked_head(w, &headers, close).await
        }
        Api::OpenAiChat | Api::AnthropicMessages | Api::Responses => {
            http::write_sse_head(w, close).await
        }
    }
}

fn bedrock_request_id(turn: usize) -> String {
    format!("00000000-0000-4000-8000-{turn:012}")
}

async fn fault<W: AsyncWrite + Unpin>(
    w: &mut W,
    fault: Fault,
    chat: &ChatRequest,
    turn: usize,
    close: bool,
) -> io::Result<Outcome> {
    match fault {
        Fault::Http {
            status,
            message,
            retry_after,
        } => {
            write_error(w, chat.api, status, &message, retry_after, close).await?;
            Ok(Outcome::KeepAlive)
        }
        Fault::HttpRaw {
            status,
            mut headers,
            body,
        } => {
            if !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            {
                headers.extend(content_type_json());
            }
            http::write_response(w, status, &headers, body.as_bytes(), close).await?;
            Ok(Outcome::KeepAlive)
        }
        Fault::Drop => Ok(Outcome::Close),
        Fault::Hang { ms } => {
            sleep_ms(ms).await;
            Ok(Outcome::Close)
        }
        Fault::DropMidStream {
            after_chunks,
            reply,
        } => {
            sleep_ms(reply.delay_ms).await;
            let ctx = chat.ctx(turn);
            if !chat.stream {
                // Non-streaming: announce the full length, send half, hang up.
                let body = match chat.api {
                    Api::OpenAiChat => completion_json(&reply, &ctx),
                    Api::AnthropicMessages => anthropic_sse::message_json(&reply, &ctx),
                    Api::Responses => responses_sse::response_json(&reply, &ctx),
                    Api::BedrockConverse => bedrock_stream::converse_json(&reply, &ctx),
                };
                let bytes = body.to_string().into_bytes();
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {JSON}\r\nContent-Length: {}\r\n\r\n",
                    bytes.len()
                );
                let mut out = head.into_bytes();
                out.extend_from_slice(&bytes[..bytes.len() / 2]);
                tokio::io::AsyncWriteExt::write_all(w, &out).await?;
                return Ok(Outcome::Close);
            }
            write_stream_head(w, chat.api, turn, false).await?;
            let (body, _) = stream_body(&reply, chat, &ctx);
            for (i, event) in body.iter().take(after_chunks).enumerate() {
                if i > 0 {
                    sleep_ms(reply.chunk_delay_ms).await;
                }
                http::write_chunk(w, event).await?;
            }
            Ok(Outcome::Close)
        }
        Fault::ErrorMidStream {
            after_chunks,
            reply,
            kind,
            message,
        } => {
            sleep_ms(reply.delay_ms).await;
            let ctx = chat.ctx(turn);
            write_stream_head(w, chat.api, turn, close).await?;
            let (body, _) = stream_body(&reply, chat, &ctx);
            for event in body.iter().take(after_chunks) {
                http::write_chunk(w, event).await?;
                sleep_ms(reply.chunk_delay_ms).await;
            }
            http::write_chunk(w, &stream_error_event(chat.api, &kind, &message)).await?;
            http::write_last_chunk(w).await?;
            Ok(Outcome::KeepAlive)
        }
        Fault::RawSse(lines) => {
            http::write_sse_head(w, true).await?;
            for line in lines {
                let data = if line.ends_with('\n') {
                    line
                } else {
                    format!("{line}\n\n")
                };
                http::write_chunk(w, data.as_bytes()).await?;
            }
            http::write_last_chunk(w).await?;
            Ok(Outcome::Close)
        }
    }
}

/// OpenAI-style `(type, code)` for an error status.
fn error_kind(status: u16) -> (&'static str, Value) {
    match status {
        401 => ("invalid_request_error", json!("invalid_api_key")),
        403 => ("permission_error", Value::Null),
        404 => ("invalid_request_error", json!("model_not_found")),
        429 => ("requests", json!("rate_limit_exceeded")),
        500..=599 => ("server_error", Value::Null),
        _ => ("invalid_request_error", Value::Null),
    }
}

async fn write_error<W: AsyncWrite + Unpin>(
    w: &mut W,
    api: Api,
    status: u16,
    message: &str,
    retry_after: Option<u64>,
    close: bool,
) -> io::Result<()> {
    let mut headers = content_type_json();
    let body = match api {
        Api::AnthropicMessages => anthropic_sse::error_json(status, message),
        Api::BedrockConverse => {
            let (error_type, body) = bedrock_stream::error_response(status, message);
            headers.push(("x-amzn-ErrorType".to_owned(), error_type));
            headers.push(("x-amzn-RequestId".to_owned(), bedrock_request_id(0)));
            body
        }
        Api::OpenAiChat | Api::Responses => {
            let (kind, code) = error_kind(status);
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
        }
    };
    if let Some(secs) = retry_after {
        headers.push(("Retry-After".to_owned(), secs.to_string()));
    }
    http::write_response(w, status, &headers, body.to_string().as_bytes(), close).await
}
