//! Splits `<think>…</think>` (and `<thinking>…</thinking>`) blocks out of streamed answer text.
//! Some models inline their reasoning in the content; it belongs with the reasoning, not in
//! the answer. Works on arbitrary chunk boundaries: a tag split across deltas is held back
//! until it can be recognised.

const OPEN_TAGS: &[&str] = &["<think>", "<thinking>"];
const CLOSE_TAGS: &[&str] = &["</think>", "</thinking>"];

/// A piece of streamed text, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Visible(String),
    Reasoning(String),
}

#[derive(Debug, Default)]
pub struct ThinkSplitter {
    pending: String,
    in_think: bool,
}

impl ThinkSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a text delta; returns what can be emitted now.
    pub fn push(&mut self, delta: &str) -> Vec<Piece> {
        self.pending.push_str(delta);
        let mut out = Vec::new();
        loop {
            let tags = if self.in_think { CLOSE_TAGS } else { OPEN_TAGS };
            if let Some((at, len)) = find_any(&self.pending, tags) {
                let before: String = self.pending[..at].to_string();
                self.emit(&mut out, before);
                self.pending.drain(..at + len);
                self.in_think = !self.in_think;
                continue;
            }
            let keep = partial_tag_suffix(&self.pending, tags);
            let cut = self.pending.len() - keep;
            let ready: String = self.pending[..cut].to_string();
            self.pending.drain(..cut);
            self.emit(&mut out, ready);
            return out;
        }
    }

    /// The stream ended: whatever is held back is emitted as it stands.
    pub fn finish(&mut self) -> Vec<Piece> {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        self.emit(&mut out, rest);
        out
    }

    fn emit(&self, out: &mut Vec<Piece>, text: String) {
        if text.is_empty() {
            return;
        }
        out.push(if self.in_think {
            Piece::Reasoning(text)
        } else {
            Piece::Visible(text)
        });
    }
}

fn find_any(text: &str, tags: &[&str]) -> Option<(usize, usize)> {
    tags.iter()
        .filter_map(|t| text.find(t).map(|i| (i, t.len())))
        .min_by_key(|&(i, _)| i)
}

/// Length of the longest suffix of `text` that is a proper prefix of one of `tags`.
fn partial_tag_suffix(text: &str, tags: &[&str]) -> usize {
    let max = tags.iter().map(|t| t.len()).max().unwrap_or(0);
    (1..max.min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n)
                && tags
                    .iter()
                    .any(|t| t.starts_with(&text[text.len() - n..]) && t.len() > n)
        })
        .unwrap_or(0)
}

/// Removes complete think blocks from a finished text.
pub fn strip_think(text: &str) -> String {
    let mut s = ThinkSplitter::new();
    let mut out = String::new();
    let mut pieces = s.push(text);
    pieces.extend(s.finish());
    for p in pieces {
        if let Piece::Visible(v) = p {
            out.push_str(&v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> (String, String) {
        let mut s = ThinkSplitter::new();
        let (mut vis, mut rea) = (String::new(), String::new());
        let mut pieces: Vec<Piece> = Vec::new();
        for c in chunks {
            pieces.extend(s.push(c));
        }
        pieces.extend(s.finish());
        for p in pieces {
            match p {
                Piece::Visible(v) => vis.push_str(&v),
                Piece::Reasoning(r) => rea.push_str(&r),
            }
        }
        (vis, rea)
    }

    #[test]
    fn splits_at_every_boundary() {
        let text = "<think>plan é</think>Answer <b>bold</b> done";
        for cut in 0..=text.len() {
            if !text.is_char_boundary(cut) {
                continue;
            }
            let (a, b) = text.split_at(cut);
            assert_eq!(
                run(&[a, b]),
                ("Answer <b>bold</b> done".into(), "plan é".into()),
                "{cut}"
            );
        }
    }

    #[test]
    fn plain_text_passes_and_lone_angle_is_kept() {
        assert_eq!(run(&["a < b", " <th", "e end"]).0, "a < b <the end");
        assert_eq!(strip_think("x<thinking>y</thinking>z"), "xz");
    }
}
