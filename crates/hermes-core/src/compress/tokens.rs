//! Token accounting for the live conversation: the provider's own count of the last prompt when
//! there is one, otherwise an estimate. The estimate is cheap (bytes / 4) and only refined with
//! the o200k_base tokenizer when the cheap figure comes close to a decision, so ordinary
//! sessions never pay for loading a tokenizer.

use std::sync::OnceLock;

use hermes_protocol::{Message, ToolSchema};

/// Per-message framing tokens providers add (role markers, separators).
const PER_MESSAGE_OVERHEAD: u64 = 4;

/// A quick upper-leaning estimate: about four bytes per token for English and code.
pub fn rough(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

fn message_text_len(m: &Message) -> usize {
    m.content.len()
        + m.tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len() + c.id.len())
            .sum::<usize>()
}

/// Rough tokens of a message.
pub fn rough_message(m: &Message) -> u64 {
    (message_text_len(m) as u64).div_ceil(4) + PER_MESSAGE_OVERHEAD
}

/// Rough tokens of a whole request: system prompt, tool schemas, messages.
pub fn rough_request(system: &str, tools: &[ToolSchema], messages: &[Message]) -> u64 {
    let tools: u64 = tools
        .iter()
        .map(|t| rough(&t.name) + rough(&t.description) + rough(&t.parameters.to_string()))
        .sum();
    rough(system) + tools + messages.iter().map(rough_message).sum::<u64>()
}

fn encoder() -> Option<&'static tiktoken_rs::CoreBPE> {
    static BPE: OnceLock<Option<tiktoken_rs::CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref()
}

/// Tokens of a text with o200k_base (falls back to the rough count if the tokenizer is
/// unavailable).
pub fn exact(text: &str) -> u64 {
    match encoder() {
        Some(bpe) => bpe.encode_ordinary(text).len() as u64,
        None => rough(text),
    }
}

/// Exact tokens of a request (tokenizer loaded on first use).
pub fn exact_request(system: &str, tools: &[ToolSchema], messages: &[Message]) -> u64 {
    let tools: u64 = tools
        .iter()
        .map(|t| exact(&t.name) + exact(&t.description) + exact(&t.parameters.to_string()))
        .sum();
    let msgs: u64 = messages
        .iter()
        .map(|m| {
            let calls: u64 = m
                .tool_calls
                .iter()
                .map(|c| exact(&c.name) + exact(&c.arguments))
                .sum();
            exact(&m.content) + calls + PER_MESSAGE_OVERHEAD
        })
        .sum();
    exact(system) + tools + msgs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rough_is_a_quarter_of_bytes_and_exact_is_close_on_prose() {
        assert_eq!(rough("abcdefgh"), 2);
        let prose = "The quick brown fox jumps over the lazy dog. ".repeat(50);
        let (r, e) = (rough(&prose), exact(&prose));
        assert!(e > 0 && r >= e && r < e * 3, "rough {r} exact {e}");
    }

    #[test]
    fn requests_count_every_part() {
        let m = vec![Message::user("hello world"), Message::assistant("hi")];
        assert!(rough_request("sys", &[], &m) > rough("sys"));
        assert!(exact_request("sys", &[], &m) >= 2 * PER_MESSAGE_OVERHEAD);
    }
}
