//! Rendering of the OpenAI Responses wire format for a scripted [`Reply`]: the non-streaming
//! `response` object and the SSE event sequence (`response.created`, output items for
//! reasoning, message text and function calls with their deltas, `response.completed` carrying
//! the output and usage).

use serde_json::{Value, json};

use crate::openai_sse::{
    DEFAULT_CHUNK_SIZE, RenderCtx, effective_usage, split_chars, tool_call_id,
};
use crate::script::Reply;

fn usage(reply: &Reply, ctx: &RenderCtx) -> Value {
    let u = effective_usage(reply, ctx);
    json!({
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_tokens},
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    })
}

/// The finished output items, in order.
fn output_items(reply: &Reply, ctx: &RenderCtx) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(r) = &reply.reasoning {
        items.push(
            json!({"type": "reasoning", "id": format!("rs_{}", ctx.turn),
                          "summary": [{"type": "summary_text", "text": r}]}),
        );
    }
    if let Some(t) = &reply.content {
        items.push(
            json!({"type": "message", "id": format!("msg_{}", ctx.turn), "role": "assistant",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": t, "annotations": []}]}),
        );
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        items.push(
            json!({"type": "function_call", "id": format!("fc_{}_{i}", ctx.turn),
                          "call_id": tool_call_id(reply, ctx.turn, i), "name": c.name,
                          "arguments": c.arguments, "status": "completed"}),
        );
    }
    items
}

fn response_object(reply: &Reply, ctx: &RenderCtx, done: bool) -> Value {
    let truncated = reply.effective_finish_reason() == "length";
    let status = match (done, truncated) {
        (false, _) => "in_progress",
        (true, true) => "incomplete",
        (true, false) => "completed",
    };
    let mut r = json!({
        "id": format!("resp_mock_{}", ctx.turn),
        "object": "response",
        "created_at": ctx.created,
        "model": ctx.model,
        "status": status,
        "output": if done { Value::Array(output_items(reply, ctx)) } else { json!([]) },
    });
    if done {
        r["usage"] = usage(reply, ctx);
        if truncated {
            r["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
    }
    r
}

/// The non-streaming `response` object.
pub fn response_json(reply: &Reply, ctx: &RenderCtx) -> Value {
    response_object(reply, ctx, true)
}

fn event(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or("message").to_string();
    format!("event: {name}\ndata: {data}\n\n")
}

/// The SSE events of a streamed reply: `(body, finish)`.
pub fn stream_events(reply: &Reply, ctx: &RenderCtx) -> (Vec<String>, Vec<String>) {
    let size = reply.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE);
    let mut body = vec![event(
        json!({"type": "response.created", "response": response_object(reply, ctx, false)}),
    )];
    for (index, item) in output_items(reply, ctx).into_iter().enumerate() {
        let id = item["id"].clone();
        let mut added = item.clone();
        match item["type"].as_str() {
            Some("reasoning") => {
                added["summary"] = json!([]);
                body.push(event(json!({"type": "response.output_item.added", "output_index": index, "item": added})));
                let text = item["summary"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                for p in split_chars(&text, size) {
                    body.push(event(
                        json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                                           "output_index": index, "summary_index": 0, "delta": p}),
                    ));
                }
            }
            Some("message") => {
                added["content"] = json!([]);
                body.push(event(json!({"type": "response.output_item.added", "output_index": index, "item": added})));
                let text = item["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                for p in split_chars(&text, size) {
                    body.push(event(
                        json!({"type": "response.output_text.delta", "item_id": id,
                                           "output_index": index, "content_index": 0, "delta": p}),
                    ));
                }
                body.push(event(
                    json!({"type": "response.output_text.done", "item_id": id,
                                       "output_index": index, "content_index": 0, "text": text}),
                ));
            }
            _ => {
                let args = item["arguments"].as_str().unwrap_or("").to_string();
                added["arguments"] = json!("");
                body.push(event(json!({"type": "response.output_item.added", "output_index": index, "item": added})));
                for p in split_chars(&args, size) {
                    body.push(event(
                        json!({"type": "response.function_call_arguments.delta", "item_id": id,
                                           "output_index": index, "delta": p}),
                    ));
                }
                body.push(event(
                    json!({"type": "response.function_call_arguments.done", "item_id": id,
                                       "output_index": index, "arguments": args}),
                ));
            }
        }
        body.push(event(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        ));
    }
    let done_type = if reply.effective_finish_reason() == "length" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    let finish = vec![event(
        json!({"type": done_type, "response": response_object(reply, ctx, true)}),
    )];
    (body, finish)
}
