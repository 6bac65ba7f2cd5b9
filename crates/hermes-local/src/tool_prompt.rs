//! Tool calling through the prompt, for models that have no native tool-call format: the tools
//! are described in the system prompt, and the conversation (assistant tool calls, tool
//! results) is rewritten as plain user/assistant turns that any chat template can format.
//! The reply format taught here is the one [`crate::grammar`] enforces and [`crate::reply`]
//! parses back: `{"tool": "<name>", "arguments": {...}}`.

use hermes_protocol::{Message, Role, ToolCall, ToolSchema};
use serde_json::Value;

/// One turn of a rewritten conversation: only `system`, `user` and `assistant` roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainTurn {
    pub role: &'static str,
    pub content: String,
}

/// The paragraph appended to the system prompt when tools are offered.
pub fn tool_instructions(tools: &[ToolSchema]) -> String {
    let mut out = String::from(
        "# Tools\nYou can call one tool per reply. To call a tool, reply with only this JSON \
         object and nothing else:\n{\"tool\": \"<tool name>\", \"arguments\": {<arguments>}}\n\
         The tool's result comes back in the next message. When you need no tool, reply in \
         plain text.\n\nAvailable tools:\n",
    );
    for tool in tools {
        // Sorted keys: the same prompt (and prompt cache) whatever serde_json's features.
        let parameters = hermes_protocol::json_order::sorted_keys(&tool.parameters);
        let schema = serde_json::to_string(&parameters).unwrap_or_else(|_| "{}".into());
        let description = tool.description.trim();
        out.push_str(&format!(
            "- {}: {description}\n  arguments: {schema}\n",
            tool.name
        ));
    }
    out
}

/// The JSON text a tool call is written as, in the format the model is taught.
pub fn call_text(call: &ToolCall) -> String {
    let arguments = serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    // Written by hand so the key order matches the grammar ("tool" first).
    format!(
        "{{\"tool\": {}, \"arguments\": {arguments}}}",
        Value::String(call.name.clone())
    )
}

/// Rewrites `system` + `messages` (+ `tools`) into alternating plain turns: tool calls become
/// the assistant's JSON text, tool results become a user turn naming the tool, and adjacent
/// turns of one role are merged (chat templates expect user and assistant to alternate).
pub fn plain_conversation(
    system: &str,
    messages: &[Message],
    tools: &[ToolSchema],
) -> Vec<PlainTurn> {
    let mut system_text = system.trim_end().to_string();
    if !tools.is_empty() {
        if !system_text.is_empty() {
            system_text.push_str("\n\n");
        }
        system_text.push_str(&tool_instructions(tools));
    }
    let mut turns: Vec<PlainTurn> = Vec::new();
    if !system_text.is_empty() {
        turns.push(PlainTurn {
            role: "system",
            content: system_text,
        });
    }
    for message in messages {
        let (role, content) = match message.role {
            Role::System => ("system", message.content.clone()),
            // The embedded model reads no images: it is told they were there.
            Role::User if !message.images.is_empty() => (
                "user",
                format!(
                    "{}\n[{} image(s) attached; this model cannot see images]",
                    message.content,
                    message.images.len()
                ),
            ),
            Role::User => ("user", message.content.clone()),
            Role::Assistant => {
                let mut parts: Vec<String> = Vec::new();
                if !message.content.trim().is_empty() {
                    parts.push(message.content.clone());
                }
                parts.extend(message.tool_calls.iter().map(call_text));
                ("assistant", parts.join("\n"))
            }
            Role::Tool => {
                let name = message.name.as_deref().unwrap_or("tool");
                ("user", format!("[Result of {name}]\n{}", message.content))
            }
        };
        match turns.last_mut() {
            Some(last) if last.role == role => {
                last.content.push_str("\n\n");
                last.content.push_str(&content);
            }
            _ => turns.push(PlainTurn { role, content }),
        }
    }
    turns
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Vec<ToolSchema> {
        vec![ToolSchema {
            name: "terminal".into(),
            description: "Run a shell command.".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        }]
    }

    #[test]
    fn tools_are_described_with_their_schema_and_the_reply_format() {
        let text = tool_instructions(&schema());
        assert!(
            text.contains("{\"tool\": \"<tool name>\", \"arguments\": {<arguments>}}"),
            "{text}"
        );
        assert!(
            text.contains("- terminal: Run a shell command.\n  arguments: {\"properties\":{\"command\":{\"type\":\"string\"}},\"type\":\"object\"}"),
            "{text}"
        );
    }

    #[test]
    fn a_tool_round_trip_becomes_alternating_plain_turns() {
        let call = ToolCall {
            id: "c1".into(),
            name: "terminal".into(),
            arguments: "{\"command\":\"ls\"}".into(),
        };
        let messages = vec![
            Message::user("list files"),
            Message::assistant_with_tools("", vec![call]),
            Message::tool_result("c1", "terminal", "a.txt"),
            Message::user("and now?"),
        ];
        let turns = plain_conversation("Be brief.", &messages, &schema());
        let roles: Vec<&str> = turns.iter().map(|t| t.role).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        assert!(turns[0].content.starts_with("Be brief.\n\n# Tools"));
        assert_eq!(
            turns[2].content,
            r#"{"tool": "terminal", "arguments": {"command":"ls"}}"#
        );
        assert_eq!(turns[3].content, "[Result of terminal]\na.txt\n\nand now?");
    }

    #[test]
    fn broken_arguments_are_shown_as_an_empty_object() {
        let call = ToolCall {
            id: "c".into(),
            name: "todo".into(),
            arguments: "{oops".into(),
        };
        assert_eq!(call_text(&call), r#"{"tool": "todo", "arguments": {}}"#);
    }

    #[test]
    fn without_tools_or_system_only_the_conversation_remains() {
        let turns = plain_conversation("", &[Message::user("hi")], &[]);
        assert_eq!(
            turns,
            vec![PlainTurn {
                role: "user",
                content: "hi".into()
            }]
        );
    }
}
