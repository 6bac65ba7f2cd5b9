//! Reading tool calls back out of a reply written in a model's own syntax, while it streams.
//! Text is passed on as it arrives; once the reply opens a call (`<tool_call>`,
//! `[TOOL_CALLS]`, `<|python_tag|>`, or a JSON object at its very start) the rest is held
//! until the reply ends and then parsed into one or more calls. A reply that is one fenced
//! JSON call (what small models write when they drift from their syntax) is a call too. A marker split across pieces
//! is held back until it is whole, so no half of `<tool_call>` leaks into the answer.

use hermes_protocol::{FinishReason, StreamEvent};
use serde_json::Value;

use super::ToolFormat;
use crate::reply::{ParsedReply, new_call_id, parse_reply};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Only blanks, or the start of an opening, so far.
    Undecided,
    /// Plain text, passed on (except a possible partial opening at its end).
    Text,
    /// Inside the calls: held until the end.
    Calls,
    /// A reply that opens with a code fence: small models sometimes write their call as a
    /// fenced JSON object instead of in their syntax. Held until the end, then a call when it
    /// is one, else text.
    Fenced,
}

const FENCE: &str = "```";

/// Turns the text pieces of a reply in `format` into [`StreamEvent`]s.
#[derive(Debug)]
pub struct NativeReplyStream {
    format: ToolFormat,
    state: State,
    buffer: String,
}

/// One call read from a reply: the tool name and its arguments as JSON text (whatever arrived,
/// when the reply was cut off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeCall {
    pub name: String,
    pub arguments: String,
}

impl NativeReplyStream {
    pub fn new(format: ToolFormat) -> Self {
        NativeReplyStream {
            format,
            state: State::Undecided,
            buffer: String::new(),
        }
    }

    /// Takes the next piece; returns what can be passed on now.
    pub fn push(&mut self, piece: &str) -> Vec<StreamEvent> {
        self.buffer.push_str(piece);
        let opening = self.format.opening();
        match self.state {
            State::Calls | State::Fenced => Vec::new(),
            State::Undecided => {
                let start = self.buffer.trim_start();
                if start.is_empty() || opening.starts_with(start) || FENCE.starts_with(start) {
                    return Vec::new();
                }
                if start.starts_with(opening) || start.starts_with('{') {
                    self.state = State::Calls;
                    return Vec::new();
                }
                if start.starts_with(FENCE) {
                    self.state = State::Fenced;
                    return Vec::new();
                }
                self.state = State::Text;
                self.release_text()
            }
            State::Text => self.release_text(),
        }
    }

    /// In text: passes on everything before an opening (switching to calls when one is
    /// there), holding back a tail that could be the start of one.
    fn release_text(&mut self) -> Vec<StreamEvent> {
        let opening = self.format.opening();
        let (text, rest) = match self.buffer.find(opening) {
            Some(at) => {
                self.state = State::Calls;
                (self.buffer[..at].to_string(), self.buffer[at..].to_string())
            }
            None => {
                let keep = partial_suffix(&self.buffer, opening);
                let cut = self.buffer.len() - keep;
                (
                    self.buffer[..cut].to_string(),
                    self.buffer[cut..].to_string(),
                )
            }
        };
        self.buffer = rest;
        if text.is_empty() {
            Vec::new()
        } else {
            vec![StreamEvent::TextDelta(text)]
        }
    }

    /// Ends the reply: held calls are parsed and emitted (or released as text when they are
    /// none), then the finish event (`ToolCalls`, unless the output limit cut the reply).
    pub fn finish(&mut self, reason: FinishReason) -> Vec<StreamEvent> {
        let buffer = std::mem::take(&mut self.buffer);
        let state = std::mem::replace(&mut self.state, State::Text);
        let mut events = Vec::new();
        if matches!(state, State::Calls | State::Fenced) {
            let calls = if state == State::Calls {
                parse_calls(self.format, &buffer)
            } else {
                one_call(&buffer).into_iter().collect()
            };
            if !calls.is_empty() {
                for (index, call) in calls.into_iter().enumerate() {
                    events.push(StreamEvent::ToolCallDelta {
                        index,
                        id: Some(new_call_id()),
                        name: Some(call.name),
                        arguments: call.arguments,
                    });
                }
                let reason = if reason == FinishReason::Length {
                    reason
                } else {
                    FinishReason::ToolCalls
                };
                events.push(StreamEvent::Finish(reason));
                return events;
            }
        }
        if !buffer.is_empty() {
            events.push(StreamEvent::TextDelta(buffer));
        }
        events.push(StreamEvent::Finish(reason));
        events
    }
}

/// The length of the longest tail of `text` that is a proper start of `marker`.
fn partial_suffix(text: &str, marker: &str) -> usize {
    (1..marker.len().min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && marker.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

/// The calls in `text` (which starts at the opening, or at a bare JSON object).
pub fn parse_calls(format: ToolFormat, text: &str) -> Vec<NativeCall> {
    let text = text.trim();
    match format {
        ToolFormat::Hermes => hermes_calls(text),
        ToolFormat::Mistral => {
            let rest = text
                .strip_prefix("[TOOL_CALLS]")
                .unwrap_or(text)
                .trim_start();
            json_calls(rest)
        }
        ToolFormat::Llama3 => {
            let rest = text
                .strip_prefix("<|python_tag|>")
                .unwrap_or(text)
                .trim_start();
            json_calls(rest)
        }
    }
}

/// `<tool_call>{...}</tool_call>` blocks (the closing tag may be missing on a cut reply), or
/// one bare object.
fn hermes_calls(text: &str) -> Vec<NativeCall> {
    if !text.starts_with("<tool_call>") {
        return json_calls(text);
    }
    text.split("<tool_call>")
        .filter_map(|block| {
            let inner = block.split("</tool_call>").next().unwrap_or(block).trim();
            (!inner.is_empty()).then_some(inner)
        })
        .filter_map(one_call)
        .collect()
}

/// A JSON array of calls, or calls as objects one after another (separated by blanks or
/// `;`); a cut-off last object still names its tool.
fn json_calls(text: &str) -> Vec<NativeCall> {
    let mut calls = Vec::new();
    let mut rest = text.trim_start();
    if let Some(inner) = rest.strip_prefix('[') {
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match values.next() {
            Some(Ok(Value::Array(items))) => {
                return items
                    .iter()
                    .filter_map(|item| one_call(&item.to_string()))
                    .collect();
            }
            // A cut-off array: read its objects one by one.
            _ => rest = inner.trim_start(),
        }
    }
    // Bounded: each round consumes at least one byte or stops.
    while rest.starts_with('{') {
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match values.next() {
            Some(Ok(_)) => {
                let end = values.byte_offset();
                if let Some(call) = one_call(&rest[..end]) {
                    calls.push(call);
                }
                rest = rest[end..]
                    .trim_start_matches(|c: char| c.is_whitespace() || c == ';' || c == ',');
            }
            _ => {
                calls.extend(one_call(rest));
                break;
            }
        }
    }
    calls
}

fn one_call(object: &str) -> Option<NativeCall> {
    match parse_reply(object) {
        ParsedReply::ToolCall { name, arguments } => Some(NativeCall { name, arguments }),
        ParsedReply::Text(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> NativeCall {
        NativeCall {
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// Feeds `pieces`, returns the events with call ids checked and blanked.
    fn run(format: ToolFormat, pieces: &[&str], reason: FinishReason) -> Vec<StreamEvent> {
        let mut stream = NativeReplyStream::new(format);
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

    fn delta(index: usize, name: &str, arguments: &str) -> StreamEvent {
        StreamEvent::ToolCallDelta {
            index,
            id: None,
            name: Some(name.into()),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn hermes_calls_split_across_pieces_come_out_whole() {
        let events = run(
            ToolFormat::Hermes,
            &[
                "<tool",
                "_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
                "\n<tool_call>\n{\"name\": \"todo\", \"arguments\": {}}\n</tool_call>",
            ],
            FinishReason::Stop,
        );
        assert_eq!(
            events,
            vec![
                delta(0, "read_file", r#"{"path":"a.txt"}"#),
                delta(1, "todo", "{}"),
                StreamEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn text_before_a_call_streams_and_a_split_marker_is_held_back() {
        let events = run(
            ToolFormat::Hermes,
            &[
                "Let me look.",
                "\n<tool_",
                "call>\n{\"name\": \"todo\", \"arguments\": {}}\n</tool_call>",
            ],
            FinishReason::Stop,
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("Let me look.".into()),
                StreamEvent::TextDelta("\n".into()),
                delta(0, "todo", "{}"),
                StreamEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn plain_text_with_angle_brackets_is_text() {
        let events = run(
            ToolFormat::Hermes,
            &["Use <b>", " tags or a <tool"],
            FinishReason::Stop,
        );
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Use <b> tags or a <tool");
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Finish(FinishReason::Stop))
        );
    }

    #[test]
    fn a_bare_json_call_and_a_cut_call_are_calls() {
        assert_eq!(
            parse_calls(ToolFormat::Hermes, r#"{"name": "todo", "arguments": {}}"#),
            vec![call("todo", "{}")]
        );
        let events = run(
            ToolFormat::Hermes,
            &[
                "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a\", \"content\": \"hel",
            ],
            FinishReason::Length,
        );
        assert_eq!(
            events,
            vec![
                delta(0, "write_file", r#"{"path": "a", "content": "hel"#),
                StreamEvent::Finish(FinishReason::Length),
            ]
        );
    }

    #[test]
    fn a_fenced_json_call_is_a_call_and_fenced_code_is_text() {
        let events = run(
            ToolFormat::Hermes,
            &["``", "`json\n{\"name\": \"todo\", \"arguments\": {}}\n```"],
            FinishReason::Stop,
        );
        assert_eq!(
            events,
            vec![
                delta(0, "todo", "{}"),
                StreamEvent::Finish(FinishReason::ToolCalls)
            ]
        );
        let code = "```python\nprint(1)\n```";
        assert_eq!(
            run(ToolFormat::Hermes, &[code], FinishReason::Stop),
            vec![
                StreamEvent::TextDelta(code.into()),
                StreamEvent::Finish(FinishReason::Stop)
            ]
        );
    }

    #[test]
    fn a_held_reply_that_holds_no_call_is_released_as_text() {
        let events = run(
            ToolFormat::Hermes,
            &["<tool_call>oops</tool_call>"],
            FinishReason::Stop,
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("<tool_call>oops</tool_call>".into()),
                StreamEvent::Finish(FinishReason::Stop),
            ]
        );
    }

    #[test]
    fn mistral_arrays_and_llama_objects() {
        assert_eq!(
            parse_calls(
                ToolFormat::Mistral,
                r#"[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": "{}"}]"#
            ),
            vec![call("a", r#"{"x":1}"#), call("b", "{}")]
        );
        assert_eq!(
            parse_calls(
                ToolFormat::Mistral,
                r#"[TOOL_CALLS][{"name": "a", "arguments": {"x": "#
            ),
            vec![call("a", r#"{"x":"#)]
        );
        assert_eq!(
            parse_calls(
                ToolFormat::Llama3,
                r#"<|python_tag|>{"name": "a", "parameters": {"q": "x;y"}}; {"name": "b", "parameters": {}}"#
            ),
            vec![call("a", r#"{"q":"x;y"}"#), call("b", "{}")]
        );
        let events = run(
            ToolFormat::Llama3,
            &["{\"name\": \"a\", ", "\"parameters\": {}}"],
            FinishReason::Stop,
        );
        assert_eq!(events[0], delta(0, "a", "{}"));
    }

    #[test]
    fn partial_suffixes() {
        assert_eq!(partial_suffix("abc <tool_", "<tool_call>"), 6);
        assert_eq!(partial_suffix("abc", "<tool_call>"), 0);
        assert_eq!(partial_suffix("é<", "<tool_call>"), 1);
    }
}
