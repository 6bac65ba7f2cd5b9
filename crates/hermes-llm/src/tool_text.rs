//! Tool calls written as text. A model trained on the Hermes / Qwen format writes
//! `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` in its answer; behind a server
//! started without a tool parser (vLLM without `--tool-call-parser`, some Ollama templates)
//! that text arrives as content instead of a structured call. [`ToolCallText`] sits in the
//! stream of content pieces: text passes through at once, except a tail that may be the start
//! of the tag; a complete block becomes a tool call; a block that is not a call goes back out
//! as the text it was. Blocks inside `<think>` are the model's thoughts, not calls. Held-back
//! text is bounded.

use hermes_protocol::StreamEvent;
use serde_json::Value;

use crate::limits::LimitExceeded;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Tool calls found in text get indices from here, after any structured call of the same
/// response.
pub const TEXT_CALL_INDEX_BASE: usize = 1 << 20;

/// The streaming recogniser of `<tool_call>` blocks in content.
#[derive(Debug)]
pub struct ToolCallText {
    /// Text not yet passed on: a possible tag start, or the body of an open block.
    held: String,
    inside: bool,
    /// Within a `<think>` block: nothing there is a call.
    thinking: bool,
    found: usize,
    /// A prefix making generated call ids unique across responses.
    id_prefix: String,
    max_held: usize,
}

impl ToolCallText {
    /// A recogniser holding back at most `max_held` bytes of one block.
    pub fn new(max_held: usize) -> ToolCallText {
        ToolCallText {
            held: String::new(),
            inside: false,
            thinking: false,
            found: 0,
            id_prefix: id_prefix(),
            max_held: max_held.max(OPEN.len()),
        }
    }

    /// How many calls were recognised so far.
    pub fn calls_found(&self) -> usize {
        self.found
    }

    /// The events for one more piece of content.
    pub fn push(&mut self, text: &str) -> Result<Vec<StreamEvent>, LimitExceeded> {
        self.held.push_str(text);
        let mut out = Vec::new();
        loop {
            if self.inside {
                let Some(end) = self.held.find(CLOSE) else {
                    if self.held.len() > self.max_held {
                        return Err(LimitExceeded::AnswerTooLarge {
                            limit: self.max_held,
                        });
                    }
                    return Ok(out);
                };
                let body: String = self.held[..end].to_string();
                self.held.replace_range(..end + CLOSE.len(), "");
                self.inside = false;
                out.push(self.block(&body, true));
            } else if self.thinking {
                match self.held.find(THINK_CLOSE) {
                    Some(end) => {
                        self.pass(&mut out, end + THINK_CLOSE.len());
                        self.thinking = false;
                    }
                    None => {
                        let keep = partial_tag_len(&self.held, &[THINK_CLOSE]);
                        self.pass(&mut out, self.held.len() - keep);
                        return Ok(out);
                    }
                }
            } else {
                let call = self.held.find(OPEN);
                let think = self.held.find(THINK_OPEN);
                // Whichever tag comes first: (position, is the call tag).
                let next = match (call, think) {
                    (Some(c), Some(t)) if t < c => Some((t, false)),
                    (Some(c), _) => Some((c, true)),
                    (None, Some(t)) => Some((t, false)),
                    (None, None) => None,
                };
                match next {
                    Some((c, true)) => {
                        self.pass(&mut out, c);
                        self.held.replace_range(..OPEN.len(), "");
                        self.inside = true;
                    }
                    Some((t, false)) => {
                        self.pass(&mut out, t + THINK_OPEN.len());
                        self.thinking = true;
                    }
                    None => {
                        // Keep only a tail that could still become one of the tags.
                        let keep = partial_tag_len(&self.held, &[OPEN, THINK_OPEN]);
                        self.pass(&mut out, self.held.len() - keep);
                        return Ok(out);
                    }
                }
            }
        }
    }

    /// Passes the first `n` held bytes on as text.
    fn pass(&mut self, out: &mut Vec<StreamEvent>, n: usize) {
        if n > 0 {
            out.push(StreamEvent::TextDelta(self.held[..n].to_string()));
            self.held.replace_range(..n, "");
        }
    }

    /// The content ended: a block left open is a call if its body is one (models often stop
    /// without the closing tag), else the text it was.
    pub fn finish(&mut self) -> Vec<StreamEvent> {
        let held = std::mem::take(&mut self.held);
        self.thinking = false;
        if self.inside {
            self.inside = false;
            vec![self.block(&held, false)]
        } else if held.is_empty() {
            Vec::new()
        } else {
            vec![StreamEvent::TextDelta(held)]
        }
    }

    /// A block's body as a call, or as the text it came from.
    fn block(&mut self, body: &str, closed: bool) -> StreamEvent {
        match parse_call(body) {
            Some((name, arguments)) => {
                let index = TEXT_CALL_INDEX_BASE + self.found;
                self.found += 1;
                StreamEvent::ToolCallDelta {
                    index,
                    id: Some(format!("{}{}", self.id_prefix, self.found)),
                    name: Some(name),
                    arguments,
                }
            }
            None => {
                StreamEvent::TextDelta(format!("{OPEN}{body}{}", if closed { CLOSE } else { "" }))
            }
        }
    }
}

/// `{"name": ..., "arguments": {...}}` (also `parameters`, and arguments given as a JSON
/// string) as `(name, arguments JSON text)`.
fn parse_call(body: &str) -> Option<(String, String)> {
    let value: Value = serde_json::from_str(body.trim()).ok()?;
    let obj = value.as_object()?;
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())?;
    let arguments = match obj.get("arguments").or_else(|| obj.get("parameters")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "{}".to_string(),
        Some(other) => other.to_string(),
    };
    Some((name.to_string(), arguments))
}

/// Length of the longest tail of `text` that is a proper prefix of one of the (ASCII) tags.
fn partial_tag_len(text: &str, tags: &[&str]) -> usize {
    tags.iter()
        .filter_map(|tag| (1..tag.len()).rev().find(|&n| text.ends_with(&tag[..n])))
        .max()
        .unwrap_or(0)
}

/// `call_<time-derived hex>_`: ids of calls found in text, unique within a conversation.
fn id_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("call_{:x}_", nanos & 0xffff_ffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pieces: &[&str]) -> (String, Vec<(String, String)>) {
        let mut t = ToolCallText::new(1 << 20);
        let mut events = Vec::new();
        for p in pieces {
            events.extend(t.push(p).unwrap());
        }
        events.extend(t.finish());
        let mut text = String::new();
        let mut calls = Vec::new();
        for e in events {
            match e {
                StreamEvent::TextDelta(s) => text.push_str(&s),
                StreamEvent::ToolCallDelta {
                    name, arguments, ..
                } => calls.push((name.unwrap_or_default(), arguments)),
                other => panic!("{other:?}"),
            }
        }
        (text, calls)
    }

    const REPLY: &str = "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>";

    #[test]
    fn a_block_becomes_a_call_however_it_is_split() {
        let whole = run(&[REPLY]);
        assert_eq!(whole.0, "Let me look.\n");
        assert_eq!(
            whole.1,
            vec![(
                "read_file".to_string(),
                "{\"path\":\"notes.txt\"}".to_string()
            )]
        );
        for cut in 0..REPLY.len() {
            if !REPLY.is_char_boundary(cut) {
                continue;
            }
            let (a, b) = REPLY.split_at(cut);
            assert_eq!(run(&[a, b]), whole, "cut at {cut}");
        }
        let singles: Vec<String> = REPLY.chars().map(String::from).collect();
        let refs: Vec<&str> = singles.iter().map(String::as_str).collect();
        assert_eq!(run(&refs), whole);
    }

    #[test]
    fn several_calls_string_arguments_and_a_missing_close() {
        let (text, calls) = run(&[
            "<tool_call>{\"name\":\"a\",\"arguments\":\"{\\\"x\\\":1}\"}</tool_call><tool_call>{\"name\":\"b\",\"parameters\":{}}",
        ]);
        assert_eq!(text, "");
        assert_eq!(
            calls,
            vec![
                ("a".to_string(), "{\"x\":1}".to_string()),
                ("b".to_string(), "{}".to_string())
            ]
        );
    }

    #[test]
    fn text_that_is_not_a_call_comes_back_unchanged() {
        for text in [
            "Use <tool_call> tags in your prompt.",
            "a <tool_call>not json</tool_call> b",
            "ends with <tool_",
            "<tool_call>{\"no_name\": 1}</tool_call>",
            "unicode é😀 <tool_cal",
        ] {
            assert_eq!(run(&[text]), (text.to_string(), vec![]), "{text}");
        }
    }

    #[test]
    fn blocks_inside_thoughts_are_not_calls() {
        let text = "<think>maybe <tool_call>{\"name\": \"a\"}</tool_call> no</think>Answer.";
        let whole = run(&[text]);
        assert_eq!(whole, (text.to_string(), vec![]));
        for cut in 1..text.len() {
            let (a, b) = text.split_at(cut);
            assert_eq!(run(&[a, b]), whole, "cut at {cut}");
        }
        let (text, calls) = run(&["<think>plan</think><tool_call>{\"name\": \"a\"}</tool_call>"]);
        assert_eq!((text.as_str(), calls.len()), ("<think>plan</think>", 1));
    }

    #[test]
    fn an_open_block_is_bounded() {
        let mut t = ToolCallText::new(64);
        assert!(t.push("<tool_call>").unwrap().is_empty());
        assert_eq!(
            t.push(&"x".repeat(100)),
            Err(LimitExceeded::AnswerTooLarge { limit: 64 })
        );
    }

    #[test]
    fn ids_are_distinct() {
        let mut t = ToolCallText::new(1 << 20);
        let events = t
            .push("<tool_call>{\"name\":\"a\"}</tool_call><tool_call>{\"name\":\"a\"}</tool_call>")
            .unwrap();
        let ids: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta { id, .. } => id.clone(),
                _ => None,
            })
            .collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
        assert_eq!(t.calls_found(), 2);
    }
}
