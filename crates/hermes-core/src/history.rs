//! Keeping a conversation valid for providers: every assistant tool call answered by exactly
//! one tool message, even after a crash or an interrupt cut a turn short.

use std::collections::HashSet;

use hermes_protocol::{Message, Role};

/// The result given to a tool call that never ran to completion.
pub const INTERRUPTED_RESULT: &str =
    "{\"error\":\"interrupted: the user stopped this call before it finished\"}";

/// Adds a synthetic "interrupted" result after every tool call that has none, and drops tool
/// messages that answer no call. Returns how many results were added.
pub fn close_dangling_tool_calls(messages: &mut Vec<Message>) -> usize {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut added = 0;
    let mut open: Vec<(String, String)> = Vec::new();
    let mut known: HashSet<String> = HashSet::new();
    for m in messages.drain(..) {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                if let Some(pos) = open.iter().position(|(open_id, _)| *open_id == id) {
                    open.remove(pos);
                    out.push(m);
                } else if !known.contains(&id) {
                    // An orphan result: no call asked for it; providers reject it.
                    continue;
                }
            }
            _ => {
                added += flush(&mut out, &mut open);
                if m.role == Role::Assistant {
                    for c in &m.tool_calls {
                        open.push((c.id.clone(), c.name.clone()));
                        known.insert(c.id.clone());
                    }
                }
                out.push(m);
            }
        }
    }
    added += flush(&mut out, &mut open);
    *messages = out;
    added
}

fn flush(out: &mut Vec<Message>, open: &mut Vec<(String, String)>) -> usize {
    let n = open.len();
    for (id, name) in open.drain(..) {
        out.push(Message::tool_result(id, name, INTERRUPTED_RESULT));
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "terminal".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn dangling_calls_get_results_in_place() {
        let mut h = vec![
            Message::user("go"),
            Message::assistant_with_tools("", vec![call("a"), call("b")]),
            Message::tool_result("a", "terminal", "ok"),
            Message::user("next"),
        ];
        assert_eq!(close_dangling_tool_calls(&mut h), 1);
        assert_eq!(h[3].tool_call_id.as_deref(), Some("b"));
        assert_eq!(h[3].content, INTERRUPTED_RESULT);
        assert_eq!(h[4].role, Role::User);
    }

    #[test]
    fn orphan_results_are_dropped_and_valid_history_is_untouched() {
        let mut h = vec![
            Message::user("x"),
            Message::tool_result("zz", "t", "?"),
            Message::assistant("y"),
        ];
        close_dangling_tool_calls(&mut h);
        assert_eq!(h.len(), 2);
        let mut ok = vec![
            Message::user("go"),
            Message::assistant_with_tools("", vec![call("a")]),
            Message::tool_result("a", "terminal", "ok"),
            Message::assistant("done"),
        ];
        let before = ok.clone();
        assert_eq!(close_dangling_tool_calls(&mut ok), 0);
        assert_eq!(ok, before);
    }
}
