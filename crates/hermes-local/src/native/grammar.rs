//! The grammar for a reply in a model's own tool-call syntax: plain text, or calls written
//! exactly as the model was trained to write them, each naming a registered tool with
//! arguments that match its schema (the schema subset of [`crate::grammar`]).

use std::fmt::Write as _;

use hermes_protocol::ToolSchema;
use serde_json::Value;

use super::ToolFormat;
use crate::grammar::{BASE_RULES, GrammarBuilder, json_text, literal};

/// Calls one reply may hold.
pub const MAX_CALLS: usize = 4;

/// Text opening with backticks: anything but a ```json fence (which is a call).
const FENCE_TEXT: &str = r#"fence-text ::= "`" ([^`] .*)? | "``" ([^`] .*)? | "```" fence-lang?
fence-lang ::= [^j] .* | "j" ([^s] .*)? | "js" ([^o] .*)? | "jso" ([^n] .*)? | "json" ([^\n] .*)?
"#;

/// A GBNF grammar for `format` accepting up to [`MAX_CALLS`] calls to `tools` or, when
/// `text_allowed`, plain text (which may not open with what opens a call). `None` without
/// tools: the reply is free.
pub fn native_call_grammar(
    format: ToolFormat,
    tools: &[ToolSchema],
    text_allowed: bool,
) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let mut g = GrammarBuilder::default();
    let key = literal(&json_text(&Value::String(format.arguments_key().into())));
    let alternatives: Vec<String> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let args = g.value(&format!("tool{i}-args"), &tool.parameters, 0);
            let rule = format!("tool{i}");
            g.add(
                &rule,
                format!(
                    "{} ws \",\" ws {key} ws \":\" ws {args}",
                    literal(&json_text(&Value::String(tool.name.clone())))
                ),
            );
            rule
        })
        .collect();
    let more = MAX_CALLS - 1;
    let mut out = String::new();
    // Small models often write their call in a ```json fence instead of their own syntax
    // (Qwen2.5-Coder 0.5B mostly does). The fence is offered as a call form, constrained like a
    // proper call, so such a reply is a valid call and ends there instead of going on as
    // unconstrained text (which then invents the tool's result). A bare JSON object stays
    // refused as text: offered as a call, the same model calls a tool for every plain
    // question ("What is 2 + 2?" became five `todo` calls).
    let alternatives_root = "calls | fenced-call";
    if text_allowed {
        let _ = writeln!(out, "root ::= {alternatives_root} | text");
        // Text may not open like a call (nor with a blank that could hide one, nor with a
        // ```json fence); any other fence opens a code answer.
        let first = match format {
            ToolFormat::Mistral => r"[^[{` \t\n\r]",
            ToolFormat::Hermes | ToolFormat::Llama3 => r"[^<{` \t\n\r]",
        };
        let _ = writeln!(out, "text ::= {first} .* | fence-text");
        out.push_str(FENCE_TEXT);
    } else {
        let _ = writeln!(out, "root ::= {alternatives_root}");
    }
    out.push_str("fenced-call ::= \"```json\\n\" call-object \"\\n```\"\n");
    match format {
        ToolFormat::Hermes => {
            let _ = writeln!(out, "calls ::= call ( \"\\n\" call ){{0,{more}}}");
            out.push_str("call ::= \"<tool_call>\\n\" call-object \"\\n</tool_call>\"\n");
        }
        ToolFormat::Mistral => {
            let _ = writeln!(
                out,
                "calls ::= \"[TOOL_CALLS]\" \"[\" call-object ( \",\" ws call-object ){{0,{more}}} \"]\""
            );
        }
        ToolFormat::Llama3 => {
            let _ = writeln!(
                out,
                "calls ::= call-object ( \";\" ws call-object ){{0,{more}}}"
            );
        }
    }
    let _ = writeln!(
        out,
        "call-object ::= \"{{\" ws \"\\\"name\\\"\" ws \":\" ws ( {} ) ws \"}}\"",
        alternatives.join(" | ")
    );
    out.push_str(&g.rules);
    out.push_str(BASE_RULES);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolSchema> {
        vec![ToolSchema {
            name: "read_file".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }]
    }

    #[test]
    fn hermes_calls_are_tagged_objects_with_name_and_arguments() {
        let g = native_call_grammar(ToolFormat::Hermes, &tools(), true).unwrap();
        assert!(
            g.starts_with(
                "root ::= calls | fenced-call | text\ntext ::= [^<{` \\t\\n\\r] .* | fence-text\nfence-text ::= "
            ),
            "{g}"
        );
        assert!(
            g.contains("fenced-call ::= \"```json\\n\" call-object \"\\n```\"\n"),
            "{g}"
        );
        assert!(g.contains("calls ::= call ( \"\\n\" call ){0,3}\n"), "{g}");
        assert!(
            g.contains("call ::= \"<tool_call>\\n\" call-object \"\\n</tool_call>\"\n"),
            "{g}"
        );
        assert!(
            g.contains(
                r#"tool0 ::= "\"read_file\"" ws "," ws "\"arguments\"" ws ":" ws tool0-args"#
            ),
            "{g}"
        );
        assert!(
            g.contains(r#"tool0-args ::= "{" ws "\"path\"" ws ":" ws json-string ws "}""#),
            "{g}"
        );
    }

    #[test]
    fn mistral_and_llama_syntaxes() {
        let g = native_call_grammar(ToolFormat::Mistral, &tools(), false).unwrap();
        assert!(
            g.starts_with("root ::= calls | fenced-call\nfenced-call ::= "),
            "{g}"
        );
        assert!(g.contains("calls ::= \"[TOOL_CALLS]\" \"[\""), "{g}");
        assert!(!g.contains("text ::="));
        let g = native_call_grammar(ToolFormat::Llama3, &tools(), true).unwrap();
        assert!(
            g.starts_with("root ::= calls | fenced-call | text\n"),
            "{g}"
        );
        assert!(g.contains(r#""\"parameters\"""#), "{g}");
        assert!(
            g.contains("calls ::= call-object ( \";\" ws call-object ){0,3}"),
            "{g}"
        );
    }

    #[test]
    fn no_tools_no_grammar() {
        assert_eq!(native_call_grammar(ToolFormat::Hermes, &[], true), None);
    }
}
