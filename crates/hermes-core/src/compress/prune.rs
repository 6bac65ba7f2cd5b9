//! Step 1 of compression, no model needed: old tool results longer than 200 characters become
//! one-line summaries per tool kind (`[terminal] ran "cargo test" -> exit 101, 312 lines`), and
//! earlier reads of a file that is read again later are collapsed to a pointer.

use std::collections::HashMap;

use hermes_llm::util::thousands;
use hermes_protocol::{Message, Role};
use serde_json::Value;

/// Results at most this long are kept as they are.
pub const PRUNE_MIN_CHARS: usize = 200;

/// Replaces long tool results in `messages[range]` by one-line summaries. Returns how many
/// were pruned.
pub fn prune_tool_results(messages: &mut [Message], range: std::ops::Range<usize>) -> usize {
    let end = range.end.min(messages.len());
    // Which call produced each result: id -> (tool name, arguments).
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    for m in messages.iter() {
        for c in &m.tool_calls {
            let args = serde_json::from_str(&c.arguments).unwrap_or(Value::Null);
            calls.insert(c.id.clone(), (c.name.clone(), args));
        }
    }
    // The last read of each file (anywhere) stays whole; earlier ones point at it.
    let mut last_read: HashMap<String, usize> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        if let Some((name, args)) = result_call(m, &calls)
            && name == "read_file"
            && let Some(path) = args.get("path").and_then(Value::as_str)
        {
            last_read.insert(path.to_string(), i);
        }
    }
    let mut pruned = 0;
    let start = range.start.min(end);
    for (i, message) in messages.iter_mut().enumerate().take(end).skip(start) {
        let Some((name, args)) = result_call(message, &calls) else {
            continue;
        };
        let read_path = (name == "read_file")
            .then(|| args.get("path").and_then(Value::as_str))
            .flatten();
        let reread_later = read_path.is_some_and(|p| last_read.get(p).is_some_and(|&j| j > i));
        if message.content.chars().count() <= PRUNE_MIN_CHARS && !reread_later {
            continue;
        }
        message.content = if reread_later {
            format!(
                "[read_file] read {} again later; see the later result",
                read_path.unwrap_or("?")
            )
        } else {
            summarize(name, args, &message.content)
        };
        pruned += 1;
    }
    pruned
}

fn result_call<'a>(
    m: &Message,
    calls: &'a HashMap<String, (String, Value)>,
) -> Option<(&'a str, &'a Value)> {
    if m.role != Role::Tool {
        return None;
    }
    let (name, args) = calls.get(m.tool_call_id.as_deref()?)?;
    Some((name.as_str(), args))
}

fn arg<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or("?")
}

fn short(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() <= max && !s.contains('\n') {
        return line.to_string();
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// The one-line summary of a tool result.
pub fn summarize(tool: &str, args: &Value, content: &str) -> String {
    let chars = content.chars().count();
    let result: Value = serde_json::from_str(content).unwrap_or(Value::Null);
    let error = result.get("error").and_then(Value::as_str);
    let body = match tool {
        "terminal" => {
            let out = result
                .get("output")
                .and_then(Value::as_str)
                .unwrap_or(content);
            let lines = if out.is_empty() {
                0
            } else {
                out.lines().count()
            };
            let code = result
                .get("exit_code")
                .map_or_else(|| "?".to_string(), |c| c.to_string());
            format!(
                "ran \"{}\" -> exit {code}, {lines} lines",
                short(arg(args, "command"), 80)
            )
        }
        "read_file" => {
            let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(1);
            let shown = result
                .get("content")
                .and_then(Value::as_str)
                .map_or(0, |c| c.lines().count() as u64);
            let last = offset + shown.saturating_sub(1);
            format!(
                "read {} lines {offset}-{last} ({} chars)",
                arg(args, "path"),
                thousands(chars as u64)
            )
        }
        "write_file" => format!(
            "wrote {} ({} chars)",
            arg(args, "path"),
            thousands(arg(args, "content").len() as u64)
        ),
        "patch" => format!(
            "patched {} ({} chars of diff)",
            arg(args, "path"),
            thousands(chars as u64)
        ),
        "search_files" => format!(
            "searched for \"{}\" in {} ({} chars of results)",
            short(arg(args, "pattern"), 60),
            args.get("path").and_then(Value::as_str).unwrap_or("."),
            thousands(chars as u64)
        ),
        _ => format!(
            "{} ({} chars of output)",
            short(&first_arg(args), 60),
            thousands(chars as u64)
        ),
    };
    let tag = format!("[{tool}] ");
    match error {
        Some(e) => format!("{tag}{body}; error: {}", short(e, 120)),
        None => format!("{tag}{body}"),
    }
    .trim()
    .to_string()
}

fn first_arg(args: &Value) -> String {
    args.as_object()
        .and_then(|m| m.values().find_map(Value::as_str))
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;
    use serde_json::json;

    fn call(id: &str, name: &str, args: Value) -> Message {
        Message::assistant_with_tools(
            "",
            vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args.to_string(),
            }],
        )
    }

    #[test]
    fn summaries_per_tool_kind() {
        let out = json!({"output": "line\n".repeat(312), "exit_code": 101}).to_string();
        assert_eq!(
            summarize("terminal", &json!({"command": "cargo test"}), &out),
            "[terminal] ran \"cargo test\" -> exit 101, 312 lines"
        );
        let content: String = (1..=500).map(|i| format!("{i}|x\n")).collect();
        let out = json!({"content": content}).to_string();
        let line = summarize("read_file", &json!({"path": "src/lib.rs"}), &out);
        assert!(
            line.starts_with("[read_file] read src/lib.rs lines 1-500 ("),
            "{line}"
        );
        let line = summarize("mystery", &json!({"q": "abc"}), &"z".repeat(300));
        assert_eq!(line, "[mystery] abc (300 chars of output)");
        let line = summarize(
            "terminal",
            &json!({"command": "x"}),
            r#"{"error":"command timed out","exit_code":137,"output":""}"#,
        );
        assert!(line.ends_with("error: command timed out"), "{line}");
    }

    #[test]
    fn old_long_results_are_pruned_and_rereads_collapsed() {
        let big = json!({"content": "1|a\n".repeat(100)}).to_string();
        let mut m = vec![
            Message::user("go"),
            call("1", "read_file", json!({"path": "a.rs"})),
            Message::tool_result("1", "read_file", big.clone()),
            call("2", "terminal", json!({"command": "ls"})),
            Message::tool_result("2", "terminal", r#"{"output":"short","exit_code":0}"#),
            call("3", "read_file", json!({"path": "a.rs"})),
            Message::tool_result("3", "read_file", big.clone()),
        ];
        assert_eq!(prune_tool_results(&mut m, 0..5), 1);
        assert_eq!(
            m[2].content,
            "[read_file] read a.rs again later; see the later result"
        );
        assert_eq!(
            m[4].content, r#"{"output":"short","exit_code":0}"#,
            "short results stay"
        );
        assert_eq!(m[6].content, big, "results in the protected tail stay");
    }
}
