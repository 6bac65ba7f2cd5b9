//! Rendering of the OpenAI chat-completions wire formats for a scripted
//! [`Reply`]: the non-streaming `chat.completion` object and the ordered list
//! of `chat.completion.chunk` SSE events (role, reasoning, content, tool-call
//! deltas, finish, optional usage, `[DONE]`).

use serde_json::{Map, Value, json};

use crate::script::{MockUsage, Reply};

/// Chars per delta when the reply does not set `chunk_size`.
pub const DEFAULT_CHUNK_SIZE: usize = 8;

/// The `[DONE]` sentinel event.
pub const DONE_EVENT: &str = "data: [DONE]\n\n";

/// Per-request facts that end up in the rendered objects.
#[derive(Debug, Clone)]
pub struct RenderCtx {
    /// Turn number used for ids (`chatcmpl-mock-{turn}`, `call_{turn}_{i}`).
    pub turn: usize,
    /// Echoed request model.
    pub model: String,
    /// Request body size, for the default prompt-token estimate.
    pub prompt_bytes: usize,
    /// Unix seconds for `created`.
    pub created: u64,
}

impl RenderCtx {
    fn id(&self) -> String {
        format!("chatcmpl-mock-{}", self.turn)
    }

    fn chunk(&self, choices: Value) -> Value {
        json!({
            "id": self.id(),
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        })
    }

    fn delta(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        self.chunk(json!([{ "index": 0, "delta": delta, "finish_reason": finish_reason }]))
    }
}

/// Splits `s` into pieces of at most `n` chars (at least 1), on char boundaries.
pub fn split_chars(s: &str, n: usize) -> Vec<&str> {
    let n = n.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in s.char_indices().enumerate() {
        if count > 0 && count % n == 0 {
            out.push(&s[start..i]);
            start = i;
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// Tool-call id actually sent for call `i` of `reply` in `turn`.
pub fn tool_call_id(reply: &Reply, turn: usize, i: usize) -> String {
    reply
        .tool_calls
        .get(i)
        .and_then(|c| c.id.clone())
        .unwrap_or_else(|| format!("call_{turn}_{i}"))
}

/// The usage reported: scripted, or estimated from request bytes / output chars.
pub fn effective_usage(reply: &Reply, ctx: &RenderCtx) -> MockUsage {
    if let Some(usage) = reply.usage {
        return usage;
    }
    let chars = |s: &Option<String>| s.as_deref().map_or(0, |s| s.chars().count());
    let output = chars(&reply.content)
        + chars(&reply.reasoning)
        + reply
            .tool_calls
            .iter()
            .map(|c| c.arguments.chars().count())
            .sum::<usize>();
    MockUsage {
        prompt_tokens: (ctx.prompt_bytes / 4) as u64,
        completion_tokens: (output / 4) as u64,
        cached_tokens: 0,
    }
}

/// The OpenAI `usage` object.
pub fn usage_json(usage: MockUsage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": { "cached_tokens": usage.cached_tokens },
    })
}

/// The non-streaming `chat.completion` object.
pub fn completion_json(reply: &Reply, ctx: &RenderCtx) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), json!(reply.content));
    if let Some(reasoning) = &reply.reasoning {
        message.insert("reasoning_content".into(), json!(reasoning));
    }
    if !reply.tool_calls.is_empty() {
        let calls: Vec<Value> = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({
                    "id": tool_call_id(reply, ctx.turn, i),
                    "type": "function",
                    "function": { "name": c.name, "arguments": c.arguments },
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    json!({
        "id": ctx.id(),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": reply.effective_finish_reason(),
        }],
        "usage": usage_json(effective_usage(reply, ctx)),
    })
}

/// The chunk objects of a streamed reply, split by role.
#[derive(Debug, Clone)]
pub struct StreamPlan {
    /// Role, reasoning, content and tool-call delta chunks, in order.
    pub deltas: Vec<Value>,
    /// Empty delta carrying `finish_reason`.
    pub finish: Value,
    /// `choices: []` chunk carrying `usage`.
    pub usage: Value,
}

impl StreamPlan {
    pub fn new(reply: &Reply, ctx: &RenderCtx) -> StreamPlan {
        let size = reply.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE);
        let mut deltas = vec![ctx.delta(json!({"role": "assistant", "content": ""}), None)];
        if let Some(reasoning) = &reply.reasoning {
            for piece in split_chars(reasoning, size) {
                deltas.push(ctx.delta(json!({ "reasoning_content": piece }), None));
            }
        }
        if let Some(content) = &reply.content {
            for piece in split_chars(content, size) {
                deltas.push(ctx.delta(json!({ "content": piece }), None));
            }
        }
        for (i, call) in reply.tool_calls.iter().enumerate() {
            let head = json!({
                "index": i,
                "id": tool_call_id(reply, ctx.turn, i),
                "type": "function",
                "function": { "name": call.name, "arguments": "" },
            });
            deltas.push(ctx.delta(json!({ "tool_calls": [head] }), None));
            for piece in split_chars(&call.arguments, size) {
                let frag = json!({ "index": i, "function": { "arguments": piece } });
                deltas.push(ctx.delta(json!({ "tool_calls": [frag] }), None));
            }
        }
        let reason = reply.effective_finish_reason();
        let finish = ctx.delta(json!({}), Some(&reason));
        let mut usage = ctx.chunk(json!([]));
        if let Some(obj) = usage.as_object_mut() {
            obj.insert("usage".into(), usage_json(effective_usage(reply, ctx)));
        }
        StreamPlan {
            deltas,
            finish,
            usage,
        }
    }

    /// Every SSE event of a complete stream, `[DONE]` included.
    pub fn events(&self, include_usage: bool) -> Vec<String> {
        let mut out: Vec<String> = self.deltas.iter().map(sse_event).collect();
        out.push(sse_event(&self.finish));
        if include_usage {
            out.push(sse_event(&self.usage));
        }
        out.push(DONE_EVENT.to_owned());
        out
    }
}

/// `data: {json}\n\n`.
pub fn sse_event(value: &Value) -> String {
    format!("data: {value}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_chars_respects_char_boundaries() {
        assert_eq!(split_chars("héllo✓日本", 3), vec!["hél", "lo✓", "日本"]);
        assert_eq!(split_chars("abc", 0), vec!["a", "b", "c"]);
        assert!(split_chars("", 4).is_empty());
        assert_eq!(split_chars("abcd", 4), vec!["abcd"]);
    }
}
