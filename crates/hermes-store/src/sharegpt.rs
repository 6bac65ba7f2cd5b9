//! Conversations as ShareGPT-style training records, the trajectory format of the Hermes
//! family: `{conversations: [{from: system|human|gpt|tool, value}], timestamp, model,
//! completed}`. Assistant turns carry their reasoning in a `<think>` block (empty when there was
//! none) and their tool calls as `<tool_call>` JSON; the results of one round of calls form a
//! single `tool` turn of `<tool_response>` blocks.

use hermes_protocol::{Message, Role, ToolSchema};
use serde::Serialize;
use serde_json::Value;

/// One turn of a ShareGPT conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShareGptTurn {
    pub from: &'static str,
    pub value: String,
}

/// A tool call as the model is trained to write it.
#[derive(Serialize)]
struct CallJson<'a> {
    name: &'a str,
    arguments: Value,
}

/// A tool's result as the model is trained to read it.
#[derive(Serialize)]
struct ResponseJson<'a> {
    tool_call_id: &'a str,
    name: &'a str,
    content: Value,
}

/// A tool definition in the system turn.
#[derive(Serialize)]
struct ToolJson<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// One line of a trajectory file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trajectory {
    pub conversations: Vec<ShareGptTurn>,
    /// When it was recorded, ISO 8601 UTC.
    pub timestamp: String,
    pub model: String,
    /// The agent finished on its own (not failed, interrupted or out of iterations).
    pub completed: bool,
}

impl Trajectory {
    pub fn new(
        system_prompt: &str,
        tools: &[ToolSchema],
        messages: &[Message],
        model: &str,
        completed: bool,
    ) -> Trajectory {
        Trajectory {
            conversations: conversations(system_prompt, tools, messages),
            timestamp: crate::time::format_iso(crate::time::now()),
            model: model.to_string(),
            completed,
        }
    }

    /// The record as one JSON line (no trailing newline).
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The system turn (the prompt and, when there are tools, their definitions and the calling
/// convention), then the conversation.
pub fn conversations(
    system_prompt: &str,
    tools: &[ToolSchema],
    messages: &[Message],
) -> Vec<ShareGptTurn> {
    let mut turns = vec![ShareGptTurn {
        from: "system",
        value: system_value(system_prompt, tools),
    }];
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        match m.role {
            Role::System => {}
            Role::User => turns.push(ShareGptTurn {
                from: "human",
                value: m.content.clone(),
            }),
            Role::Assistant => turns.push(ShareGptTurn {
                from: "gpt",
                value: gpt_value(m),
            }),
            Role::Tool => {
                let mut responses = Vec::new();
                while let Some(t) = messages.get(i).filter(|t| t.role == Role::Tool) {
                    responses.push(tool_response(t));
                    i += 1;
                }
                turns.push(ShareGptTurn {
                    from: "tool",
                    value: responses.join("\n"),
                });
                continue;
            }
        }
        i += 1;
    }
    turns
}

fn system_value(system_prompt: &str, tools: &[ToolSchema]) -> String {
    if tools.is_empty() {
        return system_prompt.to_string();
    }
    let defs: Vec<ToolJson<'_>> = tools
        .iter()
        .map(|t| ToolJson {
            name: &t.name,
            description: &t.description,
            parameters: &t.parameters,
        })
        .collect();
    format!(
        "{system_prompt}\n\nTools you can call, as JSON schemas:\n<tools>\n{}\n</tools>\nTo call one, write <tool_call>{{\"name\": ..., \"arguments\": {{...}}}}</tool_call>; each result comes back inside <tool_response></tool_response>.",
        serde_json::to_string(&defs).unwrap_or_default()
    )
}

fn gpt_value(m: &Message) -> String {
    let reasoning = m.reasoning.as_deref().unwrap_or("").trim();
    let mut value = if reasoning.is_empty() {
        "<think>\n</think>\n".to_string()
    } else {
        format!("<think>\n{reasoning}\n</think>\n")
    };
    value.push_str(m.content.trim());
    for call in &m.tool_calls {
        let arguments = serde_json::from_str::<Value>(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        let call = CallJson {
            name: &call.name,
            arguments,
        };
        value.push_str(&format!(
            "\n<tool_call>\n{}\n</tool_call>",
            serde_json::to_string(&call).unwrap_or_default()
        ));
    }
    value.trim_end().to_string()
}

fn tool_response(m: &Message) -> String {
    let content = serde_json::from_str::<Value>(&m.content)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
        .unwrap_or_else(|| Value::String(m.content.clone()));
    let body = ResponseJson {
        tool_call_id: m.tool_call_id.as_deref().unwrap_or_default(),
        name: m.name.as_deref().unwrap_or_default(),
        content,
    };
    format!(
        "<tool_response>\n{}\n</tool_response>",
        serde_json::to_string(&body).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;
    use serde_json::json;

    #[test]
    fn a_tool_round_becomes_gpt_then_one_tool_turn() {
        let messages = vec![
            Message::user("list files"),
            Message::assistant_with_tools(
                "Looking.",
                vec![
                    ToolCall {
                        id: "c1".into(),
                        name: "terminal".into(),
                        arguments: "{\"command\":\"ls\"}".into(),
                    },
                    ToolCall {
                        id: "c2".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\":\"a\"}".into(),
                    },
                ],
            )
            .with_reasoning(Some("need ls".into())),
            Message::tool_result("c1", "terminal", "{\"output\":\"a b\"}"),
            Message::tool_result("c2", "read_file", "plain text"),
            Message::assistant("Two files."),
        ];
        let schema = ToolSchema {
            name: "terminal".into(),
            description: "run".into(),
            parameters: json!({"type": "object"}),
        };
        let turns = conversations("You are Hermes.", &[schema], &messages);
        let froms: Vec<&str> = turns.iter().map(|t| t.from).collect();
        assert_eq!(froms, ["system", "human", "gpt", "tool", "gpt"]);
        assert!(turns[0].value.starts_with("You are Hermes.\n\n"));
        assert!(
            turns[0]
                .value
                .contains("<tools>\n[{\"name\":\"terminal\",\"description\":\"run\""),
            "{}",
            turns[0].value
        );
        assert_eq!(
            turns[2].value,
            "<think>\nneed ls\n</think>\nLooking.\n<tool_call>\n{\"name\":\"terminal\",\"arguments\":{\"command\":\"ls\"}}\n</tool_call>\n<tool_call>\n{\"name\":\"read_file\",\"arguments\":{\"path\":\"a\"}}\n</tool_call>"
        );
        assert_eq!(
            turns[3].value,
            "<tool_response>\n{\"tool_call_id\":\"c1\",\"name\":\"terminal\",\"content\":{\"output\":\"a b\"}}\n</tool_response>\n<tool_response>\n{\"tool_call_id\":\"c2\",\"name\":\"read_file\",\"content\":\"plain text\"}\n</tool_response>"
        );
        assert_eq!(turns[4].value, "<think>\n</think>\nTwo files.");
    }

    #[test]
    fn a_trajectory_line_has_the_four_fields() {
        let t = Trajectory::new("sys", &[], &[Message::user("hi")], "m1", false);
        let v: Value = serde_json::from_str(&t.to_json_line()).unwrap();
        assert_eq!(v["model"], "m1");
        assert_eq!(v["completed"], false);
        assert_eq!(v["conversations"][0]["value"], "sys");
        assert_eq!(
            v["conversations"][1],
            json!({"from": "human", "value": "hi"})
        );
        assert!(v["timestamp"].as_str().unwrap().ends_with('Z'));
    }
}
