//! Keeping a conversation valid for providers: every assistant tool call answered by exactly
//! one tool message, even after a crash or an interrupt cut a turn short.

use std::collections::HashMap;

use hermes_protocol::{Message, Role};

/// The result given to a tool call that never ran to completion.
pub const INTERRUPTED_RESULT: &str =
    "{\"error\":\"interrupted: the user stopped this call before it finished\"}";

/// Adds a synthetic "interrupted" result after every tool call that has none, and drops tool
/// messages that answer no call. A real result arriving after such a placeholder (an API
/// client answering its own tool's call in a stored session that was reloaded meanwhile)
/// takes the placeholder's place. Returns how many results were added.
pub fn close_dangling_tool_calls(messages: &mut Vec<Message>) -> usize {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut added = 0;
    let mut open: Vec<(String, String)> = Vec::new();
    // Call id -> index in `out` of its "interrupted" placeholder.
    let mut placeholders: HashMap<String, usize> = HashMap::new();
    for m in messages.drain(..) {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                if let Some(pos) = open.iter().position(|(open_id, _)| *open_id == id) {
                    open.remove(pos);
                    if m.content == INTERRUPTED_RESULT {
                        placeholders.insert(id, out.len());
                    }
                    out.push(m);
                } else if let Some(at) = placeholders.remove(&id) {
                    out[at] = m;
                }
                // Anything else answers no open call (an orphan, or a second answer):
                // providers reject it.
            }
            _ => {
                added += flush(&mut out, &mut open, &mut placeholders);
                if m.role == Role::Assistant {
                    for c in &m.tool_calls {
                        open.push((c.id.clone(), c.name.clone()));
                    }
                }
                out.push(m);
            }
        }
    }
    added += flush(&mut out, &mut open, &mut placeholders);
    *messages = out;
    added
}

fn flush(
    out: &mut Vec<Message>,
    open: &mut Vec<(String, String)>,
    placeholders: &mut HashMap<String, usize>,
) -> usize {
    let n = open.len();
    for (id, name) in open.drain(..) {
        placeholders.insert(id.clone(), out.len());
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

    #[test]
    fn a_late_real_result_replaces_its_placeholder_and_a_second_answer_is_dropped() {
        // A stored session reloaded while the client ran its tool: the placeholder was stored,
        // then the client's result arrives at the end.
        let mut h = vec![
            Message::user("go"),
            Message::assistant_with_tools("", vec![call("a"), call("b")]),
            Message::tool_result("a", "terminal", "ok"),
            Message::tool_result("b", "terminal", INTERRUPTED_RESULT),
            Message::tool_result("b", "terminal", "the real answer"),
            Message::tool_result("a", "terminal", "a second answer"),
        ];
        assert_eq!(close_dangling_tool_calls(&mut h), 0);
        assert_eq!(h.len(), 4);
        assert_eq!(h[2].content, "ok");
        assert_eq!(h[3].tool_call_id.as_deref(), Some("b"));
        assert_eq!(h[3].content, "the real answer");

        // The same when the placeholder is added by this pass.
        let mut h = vec![
            Message::assistant_with_tools("", vec![call("c")]),
            Message::user("meanwhile"),
            Message::tool_result("c", "terminal", "late"),
        ];
        assert_eq!(close_dangling_tool_calls(&mut h), 1);
        assert_eq!(h[1].content, "late");
        assert_eq!(h.len(), 3);
    }
}
