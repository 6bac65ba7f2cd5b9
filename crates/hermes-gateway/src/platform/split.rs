//! Long answers cut into messages that fit a platform's limit.
//!
//! [`split`] cuts model markdown into [`Part`]s whose bodies, put back together, are exactly
//! the input. Cuts prefer, in order: a paragraph break or the edge of a code block, a line
//! break, a space (never inside an inline code span), and only then a cut inside a word. A
//! part that ends inside a code block gets a closing fence and the next part reopens it with
//! the same language, so every part shows its code as code.
//!
//! [`render_parts`] is what adapters send: each part converted to the platform's dialect
//! (re-cut smaller when escaping makes it too long), with `(1/3)` markers like the Python
//! Hermes's when there is more than one.

use crate::platform::markdown::{self, Fences};
use crate::platform::types::{Dialect, LengthUnit};

/// Longest closing fence added to a part (`\n` + three backticks).
const CLOSE: &str = "\n```";

/// One part of a split text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The fence reopened before the body (`` ```lang ``) when the part starts inside a code
    /// block.
    pub reopen: Option<String>,
    /// This part's slice of the original text.
    pub body: String,
    /// Whether a closing fence follows the body (the part ends inside a code block).
    pub closed: bool,
}

impl Part {
    /// The part as it is sent: reopened fence, body, closing fence.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.body.len() + 16);
        if let Some(open) = &self.reopen {
            out.push_str(open);
            out.push('\n');
        }
        out.push_str(&self.body);
        if self.closed {
            if !self.body.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("```");
        }
        out
    }
}

/// A place the text may be cut, as a byte offset into the remaining text.
#[derive(Debug, Default, Clone, Copy)]
struct Candidates {
    /// After a blank line, or at the edge of a code block (outside code).
    block: Option<(usize, usize)>,
    /// After a line break.
    line: Option<(usize, usize)>,
    /// After a space outside code spans and fences.
    space: Option<(usize, usize)>,
}

/// Cuts `text` into parts of at most `limit` units each (fences added included).
pub fn split(text: &str, limit: usize, unit: LengthUnit) -> Vec<Part> {
    let limit = limit.max(1);
    let mut parts = Vec::new();
    let mut fences = Fences::default();
    let mut pos = 0;
    while pos < text.len() {
        let reopen = fences.open.as_ref().map(|lang| format!("```{lang}"));
        let prefix = reopen.as_ref().map_or(0, |r| unit.len(r) + 1);
        let rest = &text[pos..];

        // Everything left fits (with a closing fence if it ends inside code)?
        let mut end_state = fences.clone();
        for line in rest.split('\n') {
            end_state.step(line);
        }
        let closing = if end_state.open.is_some() {
            unit.len(CLOSE)
        } else {
            0
        };
        if prefix + unit.len(rest) + closing <= limit {
            parts.push(Part {
                reopen,
                body: rest.to_string(),
                closed: end_state.open.is_some(),
            });
            break;
        }

        // First as if no closing fence were needed; again with room for one if it is.
        let mut cut = cut_within(rest, limit.saturating_sub(prefix).max(1), unit, &fences);
        let mut state = state_after(&fences, &rest[..cut]);
        if state.open.is_some() && prefix + unit.len(&rest[..cut]) + unit.len(CLOSE) > limit {
            let avail = limit.saturating_sub(prefix + unit.len(CLOSE)).max(1);
            cut = cut_within(rest, avail, unit, &fences);
            state = state_after(&fences, &rest[..cut]);
        }
        let body = &rest[..cut];
        parts.push(Part {
            reopen,
            body: body.to_string(),
            closed: state.open.is_some(),
        });
        fences = state;
        pos += cut;
    }
    parts
}

/// The fence state after `body`, whose last piece is a partial line (or empty after a final
/// newline) and so not a fence.
fn state_after(fences: &Fences, body: &str) -> Fences {
    let mut state = fences.clone();
    let mut lines = body.split('\n').peekable();
    while let Some(line) = lines.next() {
        if lines.peek().is_some() {
            state.step(line);
        }
    }
    state
}

/// [`choose_cut`], moved back to the start of a fence line it would fall in (both halves
/// would stop being fences).
fn cut_within(rest: &str, avail: usize, unit: LengthUnit, fences: &Fences) -> usize {
    let cut = choose_cut(rest, avail, unit, fences);
    let line_start = rest[..cut].rfind('\n').map_or(0, |i| i + 1);
    if line_start > 0 && line_start < cut {
        let line_end = rest[line_start..]
            .find('\n')
            .map_or(rest.len(), |i| line_start + i);
        if markdown::fence_info(&rest[line_start..line_end]).is_some() {
            return line_start;
        }
    }
    cut
}

/// The byte offset (> 0, on a char boundary) to cut `rest` at so that at most `avail` units
/// go into this part.
fn choose_cut(rest: &str, avail: usize, unit: LengthUnit, fences: &Fences) -> usize {
    // The longest prefix within the budget.
    let mut max_cut = 0;
    let mut used = 0;
    for (i, c) in rest.char_indices() {
        let w = unit.char_len(c);
        if used + w > avail {
            break;
        }
        used += w;
        max_cut = i + c.len_utf8();
    }
    if max_cut == 0 {
        // Not even one character fits: send one anyway rather than loop forever.
        return rest.chars().next().map_or(rest.len(), char::len_utf8);
    }

    let mut found = Candidates::default();
    let mut state = fences.clone();
    let mut line_start = 0;
    let mut units_at_line_start = 0;
    // Walk whole lines inside the window, noting the last good cut of each kind.
    while line_start < max_cut {
        let line_end = rest[line_start..].find('\n').map(|i| line_start + i);
        let in_code_before = state.open.is_some();
        let window_line_end = line_end.unwrap_or(rest.len()).min(max_cut);
        let line = &rest[line_start..window_line_end];
        let line_units = unit.len(line);
        let complete = line_end.is_some_and(|e| e < max_cut);

        // Spaces inside this line (outside fences and inline code).
        if !in_code_before && fence_like(line).is_none() {
            let mut ticks = 0;
            let mut units = units_at_line_start;
            for (i, c) in line.char_indices() {
                units += unit.char_len(c);
                if c == '`' {
                    ticks += 1;
                } else if c == ' ' && ticks % 2 == 0 {
                    found.space = Some((line_start + i + 1, units));
                }
            }
        }
        if !complete {
            break;
        }
        let Some(nl) = line_end else { break };
        let after = nl + 1;
        let units_after = units_at_line_start + line_units + 1;
        let was_fence = state.step(line);
        let in_code_after = state.open.is_some();
        let next_line = rest[after..].split('\n').next().unwrap_or("");
        let next_opens = !in_code_after && super_fence_opens(next_line);
        let next_closes = in_code_after && fence_like(next_line) == Some("");
        let opened_here = was_fence && in_code_after;
        if !opened_here && !next_closes {
            found.line = Some((after, units_after));
            let blank = line.trim().is_empty() && !in_code_after;
            let closed_here = was_fence && !in_code_after;
            if blank || closed_here || next_opens {
                found.block = Some((after, units_after));
            }
        }
        line_start = after;
        units_at_line_start = units_after;
    }

    let half = avail / 2;
    let quarter = avail / 4;
    if let Some((at, u)) = found.block
        && u >= half
    {
        return at;
    }
    if let Some((at, u)) = found.line
        && u >= half
    {
        return at;
    }
    if let Some((at, u)) = found.space
        && u >= quarter
    {
        return at;
    }
    if let Some((at, _)) = found.line.or(found.block) {
        return at;
    }
    if let Some((at, _)) = found.space {
        return at;
    }
    max_cut
}

fn fence_like(line: &str) -> Option<&str> {
    markdown::fence_info(line)
}

fn super_fence_opens(line: &str) -> bool {
    markdown::fence_info(line).is_some()
}

/// `(3/7)` in the dialect's escaping.
fn indicator(index: usize, total: usize, dialect: Dialect) -> String {
    match dialect {
        Dialect::TelegramV2 => format!("\\({index}/{total}\\)"),
        _ => format!("({index}/{total})"),
    }
}

/// The messages to send for `text`: converted to `dialect`, each at most `limit` units, with
/// `(i/n)` markers when `indicators` and there is more than one. Empty when the text is only
/// whitespace.
pub fn render_parts(
    text: &str,
    dialect: Dialect,
    limit: usize,
    unit: LengthUnit,
    indicators: bool,
) -> Vec<String> {
    // A block the model never closed is closed, so no part leaks code formatting.
    let mut end = Fences::default();
    for line in text.split('\n') {
        end.step(line);
    }
    let closed;
    let text = if end.open.is_some() {
        closed = format!("{text}{CLOSE}");
        closed.as_str()
    } else {
        text
    };
    let whole = markdown::render(text, dialect);
    let whole = whole.trim_matches('\n');
    if whole.trim().is_empty() {
        return Vec::new();
    }
    if unit.len(whole) <= limit {
        return vec![whole.to_string()];
    }
    // Room for " (nn/nn)" (or a line of its own after a closing fence); widened and redone
    // if the answer needs more digits.
    let mut digits = 2;
    loop {
        let marker = indicator(10usize.pow(digits) - 1, 10usize.pow(digits) - 1, dialect);
        let reserve = if indicators { unit.len(&marker) + 1 } else { 0 };
        let budget = limit.saturating_sub(reserve).max(1);
        let mut rendered = Vec::new();
        for part in split(text, budget, unit) {
            render_fitting(&part.text(), dialect, budget, unit, 0, &mut rendered);
        }
        let total = rendered.len();
        if indicators && total >= 10usize.pow(digits) && digits < 6 {
            digits += 1;
            continue;
        }
        if !indicators || total <= 1 {
            return rendered;
        }
        return rendered
            .into_iter()
            .enumerate()
            .map(|(i, mut part)| {
                let marker = indicator(i + 1, total, dialect);
                part.push(if part.ends_with("```") { '\n' } else { ' ' });
                part.push_str(&marker);
                part
            })
            .collect();
    }
}

/// Converts `source` and, when escaping made it longer than `budget`, cuts the source smaller
/// and tries again.
fn render_fitting(
    source: &str,
    dialect: Dialect,
    budget: usize,
    unit: LengthUnit,
    depth: usize,
    out: &mut Vec<String>,
) {
    let rendered = markdown::render(source, dialect);
    let rendered = rendered.trim_matches('\n');
    if rendered.trim().is_empty() {
        return;
    }
    let len = unit.len(rendered);
    if len <= budget {
        out.push(rendered.to_string());
        return;
    }
    let source_len = unit.len(source);
    if depth >= 8 || source_len <= 1 {
        // Converting keeps outgrowing the cuts (pathological input, e.g. a table whose
        // headers repeat on every row): send the source without formatting, in pieces small
        // enough whatever the escaping. Nothing is lost and the platform accepts it.
        if matches!(dialect, Dialect::Discord | Dialect::Plain) {
            for part in split(source, budget, unit) {
                let text = part.text();
                if !text.trim().is_empty() {
                    out.push(text);
                }
            }
            return;
        }
        let piece = (budget / markdown::max_growth(dialect)).max(1);
        let chars: Vec<char> = source.chars().collect();
        let mut start = 0;
        while start < chars.len() {
            let mut end = start;
            let mut used = 0;
            while end < chars.len() && used + unit.char_len(chars[end]) <= piece {
                used += unit.char_len(chars[end]);
                end += 1;
            }
            let end = end.max(start + 1);
            let chunk: String = chars[start..end].iter().collect();
            if !chunk.trim().is_empty() {
                out.push(markdown::literal(&chunk, dialect));
            }
            start = end;
        }
        return;
    }
    // Cut the source in proportion to how much escaping grew it (strictly smaller).
    let smaller = (source_len.saturating_mul(budget) / len)
        .min(source_len - 1)
        .max(1);
    for part in split(source, smaller, unit) {
        render_fitting(&part.text(), dialect, budget, unit, depth + 1, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn balanced(s: &str) -> bool {
        let mut f = Fences::default();
        for line in s.split('\n') {
            f.step(line);
        }
        f.open.is_none()
    }

    #[test]
    fn short_text_is_one_part() {
        let parts = split("hello", 100, LengthUnit::Chars);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].text(), "hello");
        assert_eq!(
            render_parts("  \n ", Dialect::Plain, 10, LengthUnit::Chars, true),
            Vec::<String>::new()
        );
    }

    #[test]
    fn paragraphs_are_preferred_over_lines_and_words() {
        let text = format!(
            "{}\n\n{}\nshort line\n{}",
            "a".repeat(60),
            "b".repeat(20),
            "c ".repeat(30)
        );
        let parts = split(&text, 100, LengthUnit::Chars);
        assert!(parts[0].body.ends_with("\n\n"), "{:?}", parts[0].body);
        assert_eq!(
            parts.iter().map(|p| p.body.as_str()).collect::<String>(),
            text
        );
    }

    #[test]
    fn code_blocks_are_closed_and_reopened_with_their_language() {
        let code: String = (0..40).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Intro\n```rust\n{code}```\nafter");
        let parts = split(&text, 200, LengthUnit::Chars);
        assert!(parts.len() > 2);
        for (i, p) in parts.iter().enumerate() {
            let t = p.text();
            assert!(t.chars().count() <= 200, "part {i} too long");
            assert!(balanced(&t), "part {i} unbalanced:\n{t}");
            if i > 0 && i + 1 < parts.len() {
                assert_eq!(p.reopen.as_deref(), Some("```rust"));
            }
        }
        // No part ends right after the opening fence (an empty block).
        assert!(!parts[0].body.ends_with("```rust\n"));
    }

    #[test]
    fn spaces_inside_inline_code_are_not_cut() {
        let text = format!("{} `a b c d e f g h` tail", "w".repeat(40));
        let parts = split(&text, 50, LengthUnit::Chars);
        for p in &parts {
            assert_eq!(p.body.matches('`').count() % 2, 0, "{:?}", p.body);
        }
    }

    #[test]
    fn utf16_counts_astral_characters_twice() {
        let text = "😀".repeat(30);
        let parts = split(&text, 20, LengthUnit::Utf16);
        assert!(parts.iter().all(|p| LengthUnit::Utf16.len(&p.text()) <= 20));
        assert_eq!(parts.len(), 3);
    }

    #[test]
    fn ten_thousand_characters_for_telegram() {
        let mut text = String::new();
        for i in 0..90 {
            text.push_str(&format!(
                "## Section {i}\nSome *text* (with) specials. 1+1=2!\n\n"
            ));
            if i % 10 == 0 {
                text.push_str("```python\n");
                for j in 0..30 {
                    text.push_str(&format!("print('line {j}') # a_b\n"));
                }
                text.push_str("```\n\n");
            }
        }
        assert!(text.len() > 10_000);
        let parts = render_parts(&text, Dialect::TelegramV2, 4096, LengthUnit::Utf16, true);
        let n = parts.len();
        assert!(n >= 3);
        for (i, p) in parts.iter().enumerate() {
            assert!(LengthUnit::Utf16.len(p) <= 4096);
            assert!(balanced(p), "part {i}");
            assert!(p.ends_with(&format!("\\({}/{n}\\)", i + 1)));
        }
        assert_eq!(
            parts
                .iter()
                .map(|p| p.matches("print(").count())
                .sum::<usize>(),
            270
        );
    }

    #[test]
    fn escaping_growth_is_recut_to_fit() {
        // Every character doubles under MarkdownV2.
        let text = ".".repeat(5000);
        let parts = render_parts(&text, Dialect::TelegramV2, 1000, LengthUnit::Utf16, true);
        assert!(parts.iter().all(|p| LengthUnit::Utf16.len(p) <= 1000));
        let dots: usize = parts.iter().map(|p| p.matches("\\.").count()).sum();
        assert_eq!(dots, 5000);
    }

    #[test]
    fn runaway_growth_falls_back_to_literal_text() {
        // Every row repeats every (long) header: converting grows the text far beyond the
        // cuts.
        let headers: Vec<String> = (0..30)
            .map(|i| format!("a_rather_long_header_{i}"))
            .collect();
        let mut table = format!("|{}|\n|{}|\n", headers.join("|"), vec!["-"; 30].join("|"));
        for r in 0..20 {
            let cells: Vec<String> = (0..30).map(|c| format!("{r}.{c}")).collect();
            table.push_str(&format!("|{}|\n", cells.join("|")));
        }
        for (dialect, unit) in [
            (Dialect::TelegramV2, LengthUnit::Utf16),
            (Dialect::SlackMrkdwn, LengthUnit::Chars),
            (Dialect::Discord, LengthUnit::Chars),
        ] {
            let parts = render_parts(&table, dialect, 300, unit, true);
            assert!(!parts.is_empty());
            for p in &parts {
                assert!(unit.len(p) <= 300, "{dialect:?}");
                if dialect == Dialect::TelegramV2 {
                    assert!(
                        hermes_testkit::platforms::telegram_markdown::parse(p).is_ok(),
                        "{p:?}"
                    );
                }
            }
            let all: String = parts.concat();
            let last_cell = all.contains("19.29") || all.contains("19\\.29");
            assert!(
                all.contains("rather") && last_cell,
                "{dialect:?}: nothing lost"
            );
        }
    }

    #[test]
    fn the_last_resort_is_literal_and_fits() {
        let source = "**a.b** ```x``` & <c> | d_e\n```py\nz = 1\n```";
        for (dialect, unit) in [
            (Dialect::TelegramV2, LengthUnit::Utf16),
            (Dialect::SlackMrkdwn, LengthUnit::Chars),
            (Dialect::Discord, LengthUnit::Chars),
        ] {
            let mut out = Vec::new();
            render_fitting(source, dialect, 24, unit, 8, &mut out);
            assert!(!out.is_empty());
            for p in &out {
                assert!(unit.len(p) <= 24, "{dialect:?}: {p:?}");
                assert!(balanced(p), "{dialect:?}: {p:?}");
            }
            if dialect == Dialect::TelegramV2 {
                for p in &out {
                    assert!(
                        hermes_testkit::platforms::telegram_markdown::parse(p).is_ok(),
                        "{p:?}"
                    );
                }
                assert!(out.concat().starts_with("\\*\\*a\\.b"), "literal: {out:?}");
            }
            if dialect == Dialect::SlackMrkdwn {
                assert!(
                    !out.concat().contains("``"),
                    "backtick runs broken: {out:?}"
                );
            }
        }
    }

    fn markdownish() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-z ]{0,40}".prop_map(|s| s),
            Just("\n".to_string()),
            Just("\n\n".to_string()),
            Just("```python\n".to_string()),
            Just("```\n".to_string()),
            Just("`x y`".to_string()),
            "[😀é字]{0,5}".prop_map(|s| s),
            "[a-z]{30,90}".prop_map(|s| s),
        ];
        prop::collection::vec(piece, 0..60).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(hermes_testkit::proptest_config(256))]

        #[test]
        fn split_parts_fit_lose_nothing_and_balance_fences(
            text in markdownish(),
            limit in 24usize..300,
            utf16 in any::<bool>(),
        ) {
            let unit = if utf16 { LengthUnit::Utf16 } else { LengthUnit::Chars };
            let parts = split(&text, limit, unit);
            let joined: String = parts.iter().map(|p| p.body.as_str()).collect();
            prop_assert_eq!(&joined, &text);
            for p in &parts {
                let t = p.text();
                prop_assert!(unit.len(&t) <= limit, "{} > {}: {:?}", unit.len(&t), limit, t);
                prop_assert!(balanced(&t), "unbalanced: {:?}", t);
                prop_assert!(!p.body.is_empty());
            }
        }

        #[test]
        fn rendered_parts_fit_for_every_dialect(
            text in markdownish(),
            limit in 60usize..400,
        ) {
            for (dialect, unit) in [
                (Dialect::TelegramV2, LengthUnit::Utf16),
                (Dialect::SlackMrkdwn, LengthUnit::Chars),
                (Dialect::Discord, LengthUnit::Chars),
            ] {
                for p in render_parts(&text, dialect, limit, unit, true) {
                    prop_assert!(unit.len(&p) <= limit, "{:?}: {} > {}", dialect, unit.len(&p), limit);
                    prop_assert!(balanced(&p), "{:?} unbalanced: {:?}", dialect, p);
                    if dialect == Dialect::TelegramV2 {
                        let parsed = hermes_testkit::platforms::telegram_markdown::parse(&p);
                        prop_assert!(parsed.is_ok(), "Telegram refuses {:?}: {:?}", p, parsed);
                    }
                }
            }
        }
    }
}
