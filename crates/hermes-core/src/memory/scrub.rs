//! [`FenceScrubber`]: removes `<memory-context>…</memory-context>` blocks that a model echoes
//! into its answer, while the answer streams. Text arrives in arbitrary pieces, so a tag split
//! across deltas (`<memory-con` + `text>`) is held back until it can be recognised, and
//! everything inside an open block is dropped until its closing tag, however many deltas later.
//!
//! Only a block-shaped fence counts: the opening tag must start a line (nothing but spaces
//! before it on that line) and be followed by a line break, the way the fence is written in
//! the prompt. A model that merely mentions the tag inline ("the `<memory-context>` tag") is
//! left alone. A block still open when the answer ends is dropped: a truncated answer is
//! better than recalled context shown as if it were the answer.

use hermes_llm::think::{Piece, ThinkSplitter};
use hermes_tools::output::TerminalSanitizer;

use crate::memory::snapshot::{FENCE_CLOSE, FENCE_OPEN};

/// The visible-text path of a streamed answer: terminal control sequences removed (OSC 52,
/// titles, cursor moves: nothing a model writes may drive the user's terminal, and the answer
/// is stored and relayed the same way), `<think>` blocks routed to reasoning, then echoed
/// memory fences removed from what stays visible. Drop-in for [`ThinkSplitter`].
#[derive(Debug, Default)]
pub struct AnswerFilter {
    controls: TerminalSanitizer,
    think: ThinkSplitter,
    fence: FenceScrubber,
}

impl AnswerFilter {
    pub fn new() -> AnswerFilter {
        AnswerFilter::default()
    }

    /// Feeds a text delta; returns what can be emitted now.
    pub fn push(&mut self, delta: &str) -> Vec<Piece> {
        let clean = self.controls.push(delta);
        let pieces = self.think.push(&clean);
        self.scrub(pieces)
    }

    /// The stream ended (or broke off): everything still held back.
    pub fn finish(&mut self) -> Vec<Piece> {
        self.controls.finish();
        let pieces = self.think.finish();
        let mut out = self.scrub(pieces);
        let tail = self.fence.finish();
        if !tail.is_empty() {
            out.push(Piece::Visible(tail));
        }
        out
    }

    fn scrub(&mut self, pieces: Vec<Piece>) -> Vec<Piece> {
        pieces
            .into_iter()
            .filter_map(|piece| match piece {
                Piece::Visible(text) => {
                    let shown = self.fence.push(&text);
                    (!shown.is_empty()).then_some(Piece::Visible(shown))
                }
                reasoning => Some(reasoning),
            })
            .collect()
    }
}

#[derive(Debug)]
pub struct FenceScrubber {
    /// Text received but not yet released (a possible partial tag).
    pending: String,
    /// Inside a fenced block: text is dropped.
    in_block: bool,
    /// The released text so far ends at the start of a line (only spaces since the last
    /// line break).
    at_line_start: bool,
}

impl Default for FenceScrubber {
    fn default() -> Self {
        FenceScrubber {
            pending: String::new(),
            in_block: false,
            at_line_start: true,
        }
    }
}

impl FenceScrubber {
    pub fn new() -> FenceScrubber {
        FenceScrubber::default()
    }

    /// Feeds a piece of visible text; returns what may be shown now.
    pub fn push(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let mut out = String::new();
        loop {
            let lower = self.pending.to_ascii_lowercase();
            if self.in_block {
                if let Some(at) = lower.find(FENCE_CLOSE) {
                    self.pending.drain(..at + FENCE_CLOSE.len());
                    self.in_block = false;
                    continue;
                }
                let keep = partial_suffix(lower.as_bytes(), FENCE_CLOSE.as_bytes());
                self.pending.drain(..self.pending.len() - keep);
                return out;
            }
            match self.find_block_open(&lower) {
                Open::At(at) => {
                    let before: String = self.pending.drain(..at).collect();
                    self.release(&mut out, &before);
                    self.pending.drain(..FENCE_OPEN.len());
                    self.in_block = true;
                }
                Open::Undecided(at) => {
                    let ready: String = self.pending.drain(..at).collect();
                    self.release(&mut out, &ready);
                    return out;
                }
            }
        }
    }

    /// The answer ended: releases held-back text that turned out not to be a tag, and drops
    /// a block that never closed.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        let mut out = String::new();
        if !std::mem::take(&mut self.in_block) {
            self.release(&mut out, &rest);
        }
        out
    }

    /// Removes every fenced block from a complete text.
    pub fn scrub(text: &str) -> String {
        let mut s = FenceScrubber::new();
        let mut out = s.push(text);
        out.push_str(&s.finish());
        out
    }

    fn release(&mut self, out: &mut String, text: &str) {
        if text.is_empty() {
            return;
        }
        out.push_str(text);
        self.at_line_start = match text.rfind('\n') {
            Some(i) => text[i + 1..].trim().is_empty(),
            None => self.at_line_start && text.trim().is_empty(),
        };
    }

    /// Where the first block-opening tag starts, or how much of `pending` is safe to release
    /// while the rest may still become one.
    fn find_block_open(&self, lower: &str) -> Open {
        let mut from = 0;
        while let Some(rel) = lower[from..].find(FENCE_OPEN) {
            let at = from + rel;
            if self.starts_line(at) {
                match lower.as_bytes().get(at + FENCE_OPEN.len()) {
                    Some(b'\n' | b'\r') => return Open::At(at),
                    // The character deciding it has not arrived yet.
                    None => return Open::Undecided(at),
                    Some(_) => {}
                }
            }
            from = at + 1;
        }
        let keep = partial_suffix(lower.as_bytes(), FENCE_OPEN.as_bytes());
        Open::Undecided(lower.len() - keep)
    }

    /// Whether position `at` of `pending` has only spaces before it on its line.
    fn starts_line(&self, at: usize) -> bool {
        let before = &self.pending[..at];
        match before.rfind('\n') {
            Some(i) => before[i + 1..].trim().is_empty(),
            None => self.at_line_start && before.trim().is_empty(),
        }
    }
}

enum Open {
    /// A block opens at this byte.
    At(usize),
    /// Release up to this byte; keep the rest pending.
    Undecided(usize),
}

/// Length of the longest suffix of `text` that is a proper prefix of `tag` (ASCII bytes, so
/// the cut is always on a character boundary).
fn partial_suffix(text: &[u8], tag: &[u8]) -> usize {
    (1..tag.len().min(text.len() + 1))
        .rev()
        .find(|&n| text.ends_with(&tag[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(chunks: &[&str]) -> String {
        let mut s = FenceScrubber::new();
        let mut out: String = chunks.iter().map(|c| s.push(c)).collect();
        out.push_str(&s.finish());
        out
    }

    #[test]
    fn removes_an_echoed_block() {
        let text = "Sure.\n<memory-context>\nRecalled: likes tea\n</memory-context>\nDone.";
        assert_eq!(FenceScrubber::scrub(text), "Sure.\n\nDone.");
        assert_eq!(
            FenceScrubber::scrub("<MEMORY-CONTEXT>\nx\n</Memory-Context>ok"),
            "ok"
        );
    }

    #[test]
    fn inline_mentions_and_lookalikes_pass() {
        for text in [
            "The <memory-context> tag marks recalled memory.",
            "a <memory-contextual> thing",
            "<memory-context",
            "x < y and <memory-con",
            "<memory-context>",
            "emoji 🦀 <mem",
        ] {
            assert_eq!(FenceScrubber::scrub(text), text);
        }
    }

    #[test]
    fn tags_split_across_chunks() {
        assert_eq!(
            stream(&[
                "Hi\n<mem",
                "ory-cont",
                "ext>",
                "\nsecret\n</memory",
                "-context>",
                "\nbye"
            ]),
            "Hi\n\nbye"
        );
        assert_eq!(
            stream(&["Hi\n<memory-context>", " not a block"]),
            "Hi\n<memory-context> not a block"
        );
    }

    #[test]
    fn answer_filter_splits_think_and_scrubs_fences() {
        let mut f = AnswerFilter::new();
        let mut pieces = f.push("<think>plan</think>Hi\n<memory-con");
        pieces.extend(f.push("text>\nx\n</memory-context>\nbye"));
        pieces.extend(f.finish());
        let visible: String = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Visible(v) => Some(v.as_str()),
                Piece::Reasoning(_) => None,
            })
            .collect();
        assert_eq!(visible, "Hi\n\nbye");
        assert!(pieces.contains(&Piece::Reasoning("plan".into())));
    }

    #[test]
    fn answer_filter_strips_terminal_control_sequences_even_when_split() {
        let mut f = AnswerFilter::new();
        let mut pieces = f.push("copy \u{1b}]52;c;ZWNobyBw");
        pieces.extend(f.push("d25lZA==\u{7}done \u{1b}[2Jclear\u{1b}]0;title\u{7}"));
        pieces.extend(f.finish());
        let visible: String = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Visible(v) => Some(v.as_str()),
                Piece::Reasoning(_) => None,
            })
            .collect();
        assert_eq!(visible, "copy done clear");
    }

    #[test]
    fn an_unclosed_block_is_dropped() {
        assert_eq!(stream(&["ok\n<memory-context>\nleak", "ing"]), "ok\n");
    }
}
