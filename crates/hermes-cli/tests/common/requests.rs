//! Reading the mock model server's captured requests (OpenAI Chat Completions bodies): the
//! last user message, the system prompt, the tools offered and the tool results sent back.

use serde_json::Value;

/// The content of the last user message.
pub fn user_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no user message in {request}"))
        .to_string()
}

/// The system message's content (the first message).
pub fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The names of the tools offered, in order.
pub fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results, in order, parsed (a result that is not JSON as a string).
pub fn tool_results(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let c = m["content"].as_str().unwrap();
            serde_json::from_str(c).unwrap_or_else(|_| Value::String(c.to_string()))
        })
        .collect()
}

/// The last tool result, parsed.
pub fn last_tool_result(request: &Value) -> Value {
    tool_results(request)
        .pop()
        .unwrap_or_else(|| panic!("no tool result in {request}"))
}
