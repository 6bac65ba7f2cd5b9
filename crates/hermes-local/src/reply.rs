//! Reading a prompted tool call back out of a model's text reply. [`parse_reply`] decides
//! whether a finished reply is a tool call (`{"tool": ..., "arguments": ...}`, also inside a
//! ```` ```json ```` fence or `<tool_call>` tags, also with `name`/`parameters` keys as other
//! prompt formats use) or plain text. [`ReplyStream`] does the same while the reply streams:
//! text is passed on at once, a reply that opens like a tool call is held back until it ends.

use std::sync::atomic::{AtomicU64, Ordering};

use hermes_protocol::{FinishReason, StreamEvent};
use serde_json::Value;

/// What a finished reply turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedReply {
    Text(String),
    /// `arguments` is JSON text; when the reply was cut off it is whatever arrived.
    ToolCall {
        name: String,
        arguments: String,
    },
}

/// Openings after which a reply may be a tool call, so it is held back until it ends.
const CALL_OPENINGS: [&str; 3] = ["{", "```", "<tool_call>"];

/// Classifies a finished reply.
pub fn parse_reply(text: &str) -> ParsedReply {
    let inner = unwrap_call(text.trim());
    if !inner.starts_with('{') {
        return ParsedReply::Text(text.to_string());
    }
    let mut values = serde_json::Deserializer::from_str(inner).into_iter::<Value>();
    match values.next() {
        Some(Ok(Value::Object(obj))) => {
            let name = ["tool", "name", "tool_name"]
                .iter()
                .find_map(|k| obj.get(*k).and_then(Value::as_str))
                .map(str::trim)
                .filter(|n| !n.is_empty());
            let Some(name) = name else {
                return ParsedReply::Text(text.to_string());
            };
            let arguments = match ["arguments", "parameters", "args", "input"]
                .iter()
                .find_map(|k| obj.get(*k))
            {
                Some(Value::String(s)) => s.clone(),
                Some(v @ Value::Object(_)) => v.to_string(),
                Some(Value::Null) | None => "{}".into(),
                Some(other) => other.to_string(),
            };
            ParsedReply::ToolCall {
                name: name.to_string(),
                arguments,
            }
        }
        Some(Ok(_)) => ParsedReply::Text(text.to_string()),
        // Incomplete JSON (the output limit was hit): keep the call recognisable so the agent
        // refuses to run it instead of showing half a JSON object as the answer.
        Some(Err(e)) if e.is_eof() => match truncated_call(inner) {
            Some((name, arguments)) => ParsedReply::ToolCall { name, arguments },
            None => ParsedReply::Text(text.to_string()),
        },
        _ => ParsedReply::Text(text.to_string()),
    }
}

/// Strips a code fence or `<tool_call>` tags around a reply.
fn unwrap_call(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix("<tool_call>") {
        return rest.split("</tool_call>").next().unwrap_or(rest).trim();
    }
    if let Some(rest) = text.strip_prefix("```") {
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
        return rest.split("```").next().unwrap_or(rest).trim();
    }
    text
}

/// The tool name and raw argument text of a call cut off mid-JSON.
/// The name key may be `tool` (our prompt) or `name` (native formats), the arguments key
/// `arguments` or `parameters`.
fn truncated_call(text: &str) -> Option<(String, String)> {
    let after_key = ["\"tool\"", "\"name\""]
        .iter()
        .find_map(|k| text.split_once(k))?
        .1
        .trim_start();
    let after_colon = after_key.strip_prefix(':')?.trim_start();
    let name_and_rest = after_colon.strip_prefix('"')?;
    let (name, rest) = name_and_rest.split_once('"')?;
    let arguments = ["\"arguments\"", "\"parameters\""]
        .iter()
        .find_map(|k| rest.split_once(k))
        .and_then(|(_, a)| a.trim_start().strip_prefix(':'))
        .map(str::trim_start)
        .unwrap_or("");
    Some((name.to_string(), arguments.to_string()))
}

/// A unique id for a tool call made through the prompt.
pub fn new_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    format!("call_{stamp:x}{n:03x}")
}

#[derive(Debug)]
enum State {
    /// Only blanks, or the start of a possible tool call opening, so far.
    Undecided,
    /// Plain text: passed on as it arrives.
    Text,
    /// Looks like a tool call: held until the reply ends.
    Held,
}

/// Turns the text pieces of a streaming reply into [`StreamEvent`]s, recognising a tool call.
#[derive(Debug)]
pub struct ReplyStream {
    state: State,
    buffer: String,
}

impl Default for ReplyStream {
    fn default() -> Self {
        ReplyStream::new()
    }
}

impl ReplyStream {
    pub fn new() -> Self {
        ReplyStream {
            state: State::Undecided,
            buffer: String::new(),
        }
    }

    /// Takes the next piece of text; returns what can be passed on now.
    pub fn push(&mut self, piece: &str) -> Vec<StreamEvent> {
        match self.state {
            State::Text => vec![StreamEvent::TextDelta(piece.to_string())],
            State::Held => {
                self.buffer.push_str(piece);
                Vec::new()
            }
            State::Undecided => {
                self.buffer.push_str(piece);
                let start = self.buffer.trim_start();
                if start.is_empty() || CALL_OPENINGS.iter().any(|o| o.starts_with(start)) {
                    return Vec::new();
                }
                if CALL_OPENINGS.iter().any(|o| start.starts_with(o)) {
                    self.state = State::Held;
                    return Vec::new();
                }
                self.state = State::Text;
                vec![StreamEvent::TextDelta(std::mem::take(&mut self.buffer))]
            }
        }
    }

    /// Ends the reply: a held tool call is parsed and emitted (or released as text), followed
    /// by the finish event (`ToolCalls` for a call, unless the output limit cut it off).
    pub fn finish(&mut self, reason: FinishReason) -> Vec<StreamEvent> {
        let buffer = std::mem::take(&mut self.buffer);
        let held = matches!(self.state, State::Held);
        self.state = State::Text;
        let mut events = Vec::new();
        if held {
            match parse_reply(&buffer) {
                ParsedReply::ToolCall { name, arguments } => {
                    events.push(StreamEvent::ToolCallDelta {
                        index: 0,
                        id: Some(new_call_id()),
                        name: Some(name),
                        arguments,
                    });
                    let reason = if reason == FinishReason::Length {
                        reason
                    } else {
                        FinishReason::ToolCalls
                    };
                    events.push(StreamEvent::Finish(reason));
                    return events;
                }
                ParsedReply::Text(text) => events.push(StreamEvent::TextDelta(text)),
            }
        } else if !buffer.is_empty() {
            events.push(StreamEvent::TextDelta(buffer));
        }
        events.push(StreamEvent::Finish(reason));
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ParsedReply {
        ParsedReply::ToolCall {
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn the_taught_format_and_common_variants_are_tool_calls() {
        assert_eq!(
            parse_reply(r#" {"tool": "terminal", "arguments": {"command": "ls"}} "#),
            call("terminal", r#"{"command":"ls"}"#)
        );
        assert_eq!(
            parse_reply("```json\n{\"name\": \"todo\", \"parameters\": {}}\n```"),
            call("todo", "{}")
        );
        assert_eq!(
            parse_reply(
                "<tool_call>\n{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a\\\"}\"}\n</tool_call>"
            ),
            call("read_file", r#"{"path": "a"}"#)
        );
        assert_eq!(parse_reply(r#"{"tool": "todo"}"#), call("todo", "{}"));
    }

    #[test]
    fn other_text_and_json_without_a_tool_name_stay_text() {
        for text in [
            "Hello there.",
            r#"{"answer": 42}"#,
            "[1, 2]",
            "{not json at all}",
            "```python\nprint(1)\n```",
        ] {
            assert_eq!(parse_reply(text), ParsedReply::Text(text.into()), "{text}");
        }
    }

    #[test]
    fn a_call_cut_off_mid_json_keeps_its_name_and_partial_arguments() {
        assert_eq!(
            parse_reply(r#"{"tool": "write_file", "arguments": {"path": "a.txt", "content": "hel"#),
            call("write_file", r#"{"path": "a.txt", "content": "hel"#)
        );
    }

    fn run(pieces: &[&str], reason: FinishReason) -> Vec<StreamEvent> {
        let mut stream = ReplyStream::new();
        let mut events: Vec<StreamEvent> = pieces.iter().flat_map(|p| stream.push(p)).collect();
        events.extend(stream.finish(reason));
        for e in &mut events {
            if let StreamEvent::ToolCallDelta { id, .. } = e {
                assert!(id.as_deref().is_some_and(|i| i.starts_with("call_")));
                *id = None;
            }
        }
        events
    }

    #[test]
    fn plain_text_streams_as_it_arrives() {
        let mut stream = ReplyStream::new();
        assert_eq!(stream.push(" "), vec![]);
        assert_eq!(
            stream.push("Hi"),
            vec![StreamEvent::TextDelta(" Hi".into())]
        );
        assert_eq!(
            stream.push(" there"),
            vec![StreamEvent::TextDelta(" there".into())]
        );
        assert_eq!(
            stream.finish(FinishReason::Stop),
            vec![StreamEvent::Finish(FinishReason::Stop)]
        );
    }

    #[test]
    fn a_streamed_tool_call_comes_out_whole_at_the_end() {
        assert_eq!(
            run(
                &[
                    "{\"tool\": \"ter",
                    "minal\", \"arguments\": {\"command\": \"ls\"}}"
                ],
                FinishReason::Stop
            ),
            vec![
                StreamEvent::ToolCallDelta {
                    index: 0,
                    id: None,
                    name: Some("terminal".into()),
                    arguments: r#"{"command":"ls"}"#.into(),
                },
                StreamEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn held_text_that_is_no_call_is_released_and_a_cut_call_keeps_length() {
        assert_eq!(
            run(&["``", "`sh\nls\n```"], FinishReason::Stop),
            vec![
                StreamEvent::TextDelta("```sh\nls\n```".into()),
                StreamEvent::Finish(FinishReason::Stop),
            ]
        );
        let events = run(
            &[r#"{"tool": "todo", "arguments": {"#],
            FinishReason::Length,
        );
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Finish(FinishReason::Length))
        );
        assert!(
            matches!(&events[0], StreamEvent::ToolCallDelta { name: Some(n), .. } if n == "todo")
        );
    }

    #[test]
    fn call_ids_are_unique() {
        assert_ne!(new_call_id(), new_call_id());
    }
}
