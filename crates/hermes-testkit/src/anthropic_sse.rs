//! Rendering of the Anthropic Messages wire format for a scripted [`Reply`]: the non-streaming
//! `message` object and the SSE event sequence (`message_start`, `content_block_*` for thinking,
//! text and `tool_use` blocks, `message_delta` with the stop reason and output usage,
//! `message_stop`).

use serde_json::{Value, json};

use crate::openai_sse::{
    DEFAULT_CHUNK_SIZE, RenderCtx, effective_usage, split_chars, tool_call_id,
};
use crate::script::Reply;

fn stop_reason(reply: &Reply) -> &'static str {
    match reply.effective_finish_reason().as_str() {
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        _ => "end_turn",
    }
}

fn usage(reply: &Reply, ctx: &RenderCtx) -> Value {
    let u = effective_usage(reply, ctx);
    json!({
        "input_tokens": u.prompt_tokens.saturating_sub(u.cached_tokens),
        "output_tokens": u.completion_tokens,
        "cache_read_input_tokens": u.cached_tokens,
        "cache_creation_input_tokens": 0,
    })
}

fn input_of(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| json!({}))
}

/// The non-streaming `message` object.
pub fn message_json(reply: &Reply, ctx: &RenderCtx) -> Value {
    let mut content = Vec::new();
    if let Some(r) = &reply.reasoning {
        content.push(json!({"type": "thinking", "thinking": r, "signature": "sig-mock"}));
    }
    if let Some(t) = &reply.content {
        content.push(json!({"type": "text", "text": t}));
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        content.push(json!({
            "type": "tool_use",
            "id": tool_call_id(reply, ctx.turn, i),
            "name": c.name,
            "input": input_of(&c.arguments),
        }));
    }
    json!({
        "id": format!("msg_mock_{}", ctx.turn),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(reply),
        "stop_sequence": null,
        "usage": usage(reply, ctx),
    })
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The SSE events of a streamed reply: `(body, finish)`; a mid-stream drop sends part of
/// `body` and never `finish`.
pub fn stream_events(reply: &Reply, ctx: &RenderCtx) -> (Vec<String>, Vec<String>) {
    let size = reply.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE);
    let mut start_usage = usage(reply, ctx);
    start_usage["output_tokens"] = json!(1);
    let mut body = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": format!("msg_mock_{}", ctx.turn), "type": "message", "role": "assistant",
                "model": ctx.model, "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": start_usage}}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    let mut index = 0;
    let mut block = |start: Value, deltas: Vec<Value>, body: &mut Vec<String>| {
        body.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for d in deltas {
            body.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": d}),
            ));
        }
        body.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    if let Some(r) = &reply.reasoning {
        let mut deltas: Vec<Value> = split_chars(r, size)
            .into_iter()
            .map(|p| json!({"type": "thinking_delta", "thinking": p}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": "sig-mock"}));
        block(
            json!({"type": "thinking", "thinking": ""}),
            deltas,
            &mut body,
        );
    }
    if let Some(t) = &reply.content {
        let deltas = split_chars(t, size)
            .into_iter()
            .map(|p| json!({"type": "text_delta", "text": p}))
            .collect();
        block(json!({"type": "text", "text": ""}), deltas, &mut body);
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        let deltas = split_chars(&c.arguments, size)
            .into_iter()
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect();
        block(
            json!({"type": "tool_use", "id": tool_call_id(reply, ctx.turn, i), "name": c.name, "input": {}}),
            deltas,
            &mut body,
        );
    }
    let finish = vec![
        event(
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
                   "usage": {"output_tokens": effective_usage(reply, ctx).completion_tokens}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ];
    (body, finish)
}

/// An error body in Anthropic's shape.
pub fn error_json(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
