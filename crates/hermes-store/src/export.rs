//! Sessions as portable records: one JSON object per session (its fields plus its messages, tool
//! calls in the OpenAI shape), and the ShareGPT trajectory of a stored session.

use hermes_protocol::Role;
use serde_json::{Value, json};

use crate::messages::encode_tool_calls;
use crate::sharegpt::{Trajectory, conversations};
use crate::{SessionRecord, StoredMessage, time};

/// The session and all its messages as one JSON object (one line of a JSONL export).
pub fn session_json(session: &SessionRecord, messages: &[StoredMessage]) -> Value {
    let mut record = serde_json::to_value(session).unwrap_or_else(|_| json!({}));
    let list: Vec<Value> = messages.iter().map(message_json).collect();
    if let Some(obj) = record.as_object_mut() {
        obj.insert("messages".into(), Value::Array(list));
    }
    record
}

fn message_json(m: &StoredMessage) -> Value {
    let tool_calls = encode_tool_calls(&m.message.tool_calls)
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .unwrap_or(Value::Null);
    json!({
        "id": m.id,
        "role": m.message.role.as_str(),
        "content": m.message.content,
        "tool_calls": tool_calls,
        "tool_call_id": m.message.tool_call_id,
        "tool_name": m.message.name,
        "reasoning": m.message.reasoning,
        "finish_reason": m.finish_reason,
        "timestamp": m.timestamp,
        "token_count": m.token_count,
        "partial": m.partial,
    })
}

/// The stored session as a ShareGPT trajectory. It counts as completed when it ends with a
/// finished answer (an assistant message without tool calls that was not cut off).
pub fn session_trajectory(session: &SessionRecord, messages: &[StoredMessage]) -> Trajectory {
    let completed = messages.last().is_some_and(|m| {
        m.message.role == Role::Assistant
            && m.message.tool_calls.is_empty()
            && !m.partial
            && m.finish_reason.as_deref() != Some(crate::messages::INTERRUPTED)
    });
    let plain: Vec<_> = messages.iter().map(|m| m.message.clone()).collect();
    Trajectory {
        conversations: conversations(session.system_prompt.as_deref().unwrap_or(""), &[], &plain),
        timestamp: time::format_iso(session.started_at),
        model: session.model.clone().unwrap_or_default(),
        completed,
    }
}
