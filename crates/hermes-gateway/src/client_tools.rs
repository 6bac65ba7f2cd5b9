//! Tools the API client defines itself (OpenAI's `tools` field), so the API server works as a
//! drop-in tool-calling model for LangChain-style agents: the client's tools are offered to
//! the model beside ours, a call to one ends the turn and goes back to the client as a normal
//! `tool_calls` answer (a `function_call` output item in Responses), and the client continues
//! the conversation with the results (`tool` messages, `function_call_output` items).
//!
//! This module holds the wire shapes of both APIs; the agent loop does the rest
//! (`Agent::set_client_tools`, `Agent::continue_turn`).

use hermes_protocol::{Message, ToolCall, ToolSchema};
use serde_json::{Value, json};

use crate::wire::BadRequest;

/// The most tools one request may define (OpenAI's limit).
pub const MAX_CLIENT_TOOLS: usize = 128;
/// The longest tool name (OpenAI's limit; names are `[A-Za-z0-9_-]`).
const MAX_NAME_LEN: usize = 64;
/// The largest description or parameters schema accepted per tool, in bytes.
const MAX_TOOL_BYTES: usize = 64 * 1024;

/// Which API's shape a `tools` entry has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`.
    ChatCompletions,
    /// `{"type": "function", "name", "description", "parameters"}`; the hosted tool types
    /// (`web_search_preview`, `file_search`, ...) are OpenAI's own and are left out: the
    /// agent brings its own tools for those jobs.
    Responses,
}

/// Reads `tools` (and `tool_choice`: `"none"` offers none of them; `"auto"`, `"required"` and
/// a named function let the model choose, as the agent decides when it needs a tool).
pub fn parse_tools(
    tools: Option<&Value>,
    tool_choice: Option<&Value>,
    dialect: Dialect,
) -> Result<Vec<ToolSchema>, BadRequest> {
    let entries = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad("'tools' must be a list", "tools")),
    };
    if tool_choice.and_then(Value::as_str) == Some("none") {
        return Ok(Vec::new());
    }
    if entries.len() > MAX_CLIENT_TOOLS {
        return Err(bad(
            format!("at most {MAX_CLIENT_TOOLS} tools may be defined"),
            "tools",
        ));
    }
    let mut out: Vec<ToolSchema> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let param = format!("tools[{i}]");
        let kind = entry.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "function" {
            if dialect == Dialect::Responses && !kind.is_empty() {
                continue;
            }
            return Err(bad(
                format!("{param}.type must be \"function\""),
                format!("{param}.type"),
            ));
        }
        let function = match dialect {
            Dialect::ChatCompletions => entry
                .get("function")
                .filter(|f| f.is_object())
                .ok_or_else(|| {
                    bad(
                        format!("{param}.function must be an object"),
                        format!("{param}.function"),
                    )
                })?,
            Dialect::Responses => entry,
        };
        let schema = function_schema(function, &param)?;
        if out.iter().any(|t| t.name == schema.name) {
            return Err(bad(
                format!("{param}: the tool name '{}' is defined twice", schema.name),
                param,
            ));
        }
        out.push(schema);
    }
    Ok(out)
}

fn function_schema(f: &Value, param: &str) -> Result<ToolSchema, BadRequest> {
    let name = f.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty()
        || name.len() > MAX_NAME_LEN
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(bad(
            format!("{param}: a tool name must be 1 to {MAX_NAME_LEN} letters, digits, '_' or '-'"),
            format!("{param}.name"),
        ));
    }
    let description = match f.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) if s.len() <= MAX_TOOL_BYTES => s.clone(),
        Some(_) => {
            return Err(bad(
                format!("{param}.description must be a string of at most {MAX_TOOL_BYTES} bytes"),
                format!("{param}.description"),
            ));
        }
    };
    let parameters = match f.get("parameters") {
        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
        Some(p @ Value::Object(_)) if p.to_string().len() <= MAX_TOOL_BYTES => p.clone(),
        Some(_) => {
            return Err(bad(
                format!(
                    "{param}.parameters must be a JSON schema object of at most {MAX_TOOL_BYTES} bytes"
                ),
                format!("{param}.parameters"),
            ));
        }
    };
    Ok(ToolSchema {
        name: name.to_string(),
        description,
        parameters,
    })
}

/// The `tool_calls` of an assistant message in a Chat Completions request.
pub fn parse_assistant_calls(v: Option<&Value>, param: &str) -> Result<Vec<ToolCall>, BadRequest> {
    let calls = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad(format!("{param} must be a list"), param)),
    };
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let at = format!("{param}[{i}]");
            let id = c.get("id").and_then(Value::as_str).unwrap_or("");
            let function = c.get("function");
            let name = function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if id.is_empty() || name.is_empty() {
                return Err(bad(format!("{at} needs an 'id' and a 'function.name'"), at));
            }
            let arguments = match function.and_then(|f| f.get("arguments")) {
                None | Some(Value::Null) => "{}".to_string(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            Ok(ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments,
            })
        })
        .collect()
}

/// The tool name a call id belongs to, from the assistant messages before it (a `tool`
/// message names only the call).
pub fn call_name(conversation: &[Message], call_id: &str) -> String {
    conversation
        .iter()
        .rev()
        .flat_map(|m| m.tool_calls.iter())
        .find(|c| c.id == call_id)
        .map(|c| c.name.clone())
        .unwrap_or_default()
}

/// `message.tool_calls` of a Chat Completions answer.
pub fn chat_tool_calls(calls: &[ToolCall]) -> Value {
    calls
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })
        })
        .collect()
}

/// The `delta.tool_calls` of a stream chunk carrying whole calls (each with its `index`).
pub fn chat_tool_call_deltas(calls: &[ToolCall]) -> Value {
    calls
        .iter()
        .enumerate()
        .map(|(index, c)| {
            json!({
                "index": index,
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })
        })
        .collect()
}

/// A Responses `function_call` output item.
pub fn function_call_item(call: &ToolCall) -> Value {
    json!({
        "type": "function_call",
        "id": format!("fc_{}", call.id),
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "status": "completed",
    })
}

fn bad(message: impl Into<String>, param: impl Into<String>) -> BadRequest {
    BadRequest {
        message: message.into(),
        param: Some(param.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_tools_are_read_and_bad_ones_name_the_field() {
        let tools = json!([{"type": "function", "function": {
            "name": "get_weather", "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
        let parsed = parse_tools(Some(&tools), None, Dialect::ChatCompletions).unwrap();
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].name, "get_weather");
        assert_eq!(parsed[0].parameters["properties"]["city"]["type"], "string");

        let none = parse_tools(Some(&tools), Some(&json!("none")), Dialect::ChatCompletions);
        assert!(none.unwrap().is_empty());

        let bad_name = json!([{"type": "function", "function": {"name": "rm -rf"}}]);
        let err = parse_tools(Some(&bad_name), None, Dialect::ChatCompletions).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("tools[0].name"));

        let twice = json!([
            {"type": "function", "function": {"name": "a"}},
            {"type": "function", "function": {"name": "a"}}
        ]);
        assert!(parse_tools(Some(&twice), None, Dialect::ChatCompletions).is_err());
        let many: Vec<Value> = (0..=MAX_CLIENT_TOOLS)
            .map(|i| json!({"type": "function", "function": {"name": format!("t{i}")}}))
            .collect();
        assert!(parse_tools(Some(&Value::Array(many)), None, Dialect::ChatCompletions).is_err());
    }

    #[test]
    fn responses_tools_are_flat_and_hosted_ones_are_left_out() {
        let tools = json!([
            {"type": "function", "name": "lookup", "parameters": {"type": "object"}},
            {"type": "web_search_preview"}
        ]);
        let parsed = parse_tools(Some(&tools), None, Dialect::Responses).unwrap();
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].name, "lookup");
    }

    #[test]
    fn calls_round_trip_in_both_shapes() {
        let raw = json!([{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]);
        let calls = parse_assistant_calls(Some(&raw), "messages[1].tool_calls").unwrap();
        assert_eq!(chat_tool_calls(&calls), raw);
        assert_eq!(chat_tool_call_deltas(&calls)[0]["index"], 0);
        let item = function_call_item(&calls[0]);
        assert_eq!(item["call_id"], "call_1");
        assert_eq!(item["type"], "function_call");
        let err = parse_assistant_calls(Some(&json!([{"id": "x"}])), "m").unwrap_err();
        assert_eq!(err.param.as_deref(), Some("m[0]"));
    }
}
