//! Markdown (what models write) to each platform's dialect: Telegram MarkdownV2 (everything
//! outside entities escaped, so Telegram never rejects the message), Slack mrkdwn, Discord's
//! markdown (tables as bullet groups, since Discord draws no tables), HTML (Matrix's
//! `formatted_body`, [`render_html`]), WhatsApp's formatting ([`render_whatsapp`]) and plain
//! text.
//!
//! The text is read as blocks (fenced code, GFM tables, lines: headings, quotes, the rest),
//! each line's inline markdown as a small tree ([`inline`]), and every dialect renders the
//! same structure, so a construct it lacks degrades to readable text instead of stray
//! syntax.

mod html;
mod inline;
mod slack;
mod table;
mod telegram;
mod text;
mod whatsapp;

use crate::platform::types::Dialect;

pub(crate) use inline::Inline;
pub(crate) use inline::parse as inline_parse;

/// Converts model markdown into `dialect`.
pub fn render(text: &str, dialect: Dialect) -> String {
    match dialect {
        Dialect::Plain => text.to_string(),
        Dialect::Discord => table::convert_tables(text),
        Dialect::TelegramV2 => render_blocks(&table::convert_tables(text), &telegram::Renderer),
        Dialect::SlackMrkdwn => render_blocks(text, &slack::Renderer),
    }
}

/// Model markdown as the HTML of Matrix's `formatted_body` (tables as bullet groups).
pub fn render_html(text: &str) -> String {
    render_blocks(&table::convert_tables(text), &html::Renderer)
}

/// Model markdown in WhatsApp's formatting (`*bold*`, `_italic_`, `~strike~`, code
/// blocks; headings bold, links `label (url)`, tables as bullet groups).
pub fn render_whatsapp(text: &str) -> String {
    render_blocks(&table::convert_tables(text), &whatsapp::Renderer)
}

/// Model markdown as unformatted text (IRC): markers and fences dropped, links as
/// `label (url)`, tables as bullet groups.
pub fn render_text(text: &str) -> String {
    render_blocks(&table::convert_tables(text), &text::Renderer)
}

/// `text` shown as it is, escaped so the dialect reads no formatting in it (Slack has no
/// escape for backticks: consecutive ones are kept apart by a zero-width space).
pub fn literal(text: &str, dialect: Dialect) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    match dialect {
        Dialect::TelegramV2 => telegram::escape(text, &mut out),
        Dialect::SlackMrkdwn => {
            let mut escaped = String::with_capacity(text.len());
            slack::escape(text, &mut escaped);
            let mut previous_tick = false;
            for c in escaped.chars() {
                if c == '`' && previous_tick {
                    out.push('\u{200B}');
                }
                previous_tick = c == '`';
                out.push(c);
            }
        }
        Dialect::Discord | Dialect::Plain => out.push_str(text),
    }
    out
}

/// How many times longer [`literal`] can make a text.
pub(crate) fn max_growth(dialect: Dialect) -> usize {
    match dialect {
        Dialect::TelegramV2 => 2,
        // `&` becomes `&amp;`; a backtick gains a zero-width space.
        Dialect::SlackMrkdwn => 5,
        Dialect::Discord | Dialect::Plain => 1,
    }
}

/// How one dialect writes each construct.
pub(crate) trait DialectRenderer {
    /// A fenced code block (`lang` may be empty, `body` has no trailing newline).
    fn code_block(&self, lang: &str, body: &str, out: &mut String);
    fn heading(&self, content: &[Inline], out: &mut String);
    /// One quoted line (`level` `>` markers).
    fn quote(&self, level: usize, content: &[Inline], out: &mut String);
    fn inline(&self, items: &[Inline], out: &mut String);
    /// What separates two lines outside code blocks.
    fn line_break(&self) -> &'static str {
        "\n"
    }
}

/// A line that opens or closes a fence: three or more backticks at its start (after at most
/// three spaces). Returns the info string (language) of an opener.
pub(crate) fn fence_info(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let ticks = trimmed.bytes().take_while(|b| *b == b'`').count();
    if ticks < 3 {
        return None;
    }
    let info = &trimmed[ticks..];
    // "```x```" on one line is a code span, not a fence.
    if info.contains("```") {
        return None;
    }
    Some(info.trim())
}

/// The language of an info string: its first word, bounded (a hostile info string must not
/// make reopened fences long).
pub(crate) fn fence_lang(info: &str) -> &str {
    let word = info.split_whitespace().next().unwrap_or("");
    if word.len() > 32 || word.contains('`') {
        ""
    } else {
        word
    }
}

/// Which code block a sequence of lines is in: a fence line opens a block when none is open;
/// only a bare fence (no info string) closes it, as in CommonMark. The splitter, the table
/// rewriter and the renderers all follow this one machine, so they agree on what is code.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fences {
    /// The language of the open block (`Some("")` for an untagged one).
    pub open: Option<String>,
}

impl Fences {
    /// Advances over one line; returns whether the line was a fence (opening or closing).
    pub fn step(&mut self, line: &str) -> bool {
        let Some(info) = fence_info(line) else {
            return false;
        };
        match self.open {
            None => {
                self.open = Some(fence_lang(info).to_string());
                true
            }
            Some(_) if info.is_empty() => {
                self.open = None;
                true
            }
            Some(_) => false,
        }
    }
}

fn render_blocks(text: &str, r: &dyn DialectRenderer) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let lines: Vec<&str> = text.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(info) = fence_info(line) {
            let lang = fence_lang(info);
            let mut j = i + 1;
            while j < lines.len() && fence_info(lines[j]).is_none_or(|rest| !rest.is_empty()) {
                j += 1;
            }
            let body = lines[i + 1..j.min(lines.len())].join("\n");
            r.code_block(lang, &body, &mut out);
            // Past the closing fence (or the end, when the model never closed it).
            i = j + 1;
            if i < lines.len() {
                out.push_str(r.line_break());
            }
            continue;
        }
        render_line(line, r, &mut out);
        i += 1;
        if i < lines.len() {
            out.push_str(r.line_break());
        }
    }
    out
}

fn render_line(line: &str, r: &dyn DialectRenderer, out: &mut String) {
    let trimmed = line.trim_start();
    let hashes = trimmed.bytes().take_while(|b| *b == b'#').count();
    if (1..=6).contains(&hashes)
        && trimmed[hashes..].starts_with([' ', '\t'])
        && !trimmed[hashes..].trim().is_empty()
    {
        let title = trimmed[hashes..].trim().trim_end_matches('#').trim_end();
        // A heading is bold already: bold inside it adds nothing.
        let bold = Active {
            bold: true,
            ..Active::default()
        };
        r.heading(&unnest(inline::parse(title), bold), out);
        return;
    }
    let level = trimmed.bytes().take_while(|b| *b == b'>').count();
    if (1..=3).contains(&level) && trimmed[level..].starts_with(' ') {
        let content = unnest(
            inline::parse(trimmed[level..].trim_start()),
            Active::default(),
        );
        r.quote(level, &content, out);
        return;
    }
    r.inline(&unnest(inline::parse(line), Active::default()), out);
}

/// The formatting already in effect around some inline items.
#[derive(Debug, Clone, Copy, Default)]
struct Active {
    bold: bool,
    italic: bool,
    strike: bool,
    spoiler: bool,
    link: bool,
}

/// Removes formatting nested inside the same formatting (`**a **b** c**`, a link in a
/// link's label): the dialects' markers do not nest with themselves, and an inner marker
/// would end the outer entity (Telegram then refuses the whole message).
fn unnest(items: Vec<Inline>, active: Active) -> Vec<Inline> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Inline::Bold(c) if active.bold => out.extend(unnest(c, active)),
            Inline::Bold(c) => out.push(Inline::Bold(unnest(
                c,
                Active {
                    bold: true,
                    ..active
                },
            ))),
            Inline::Italic(c) if active.italic => out.extend(unnest(c, active)),
            Inline::Italic(c) => out.push(Inline::Italic(unnest(
                c,
                Active {
                    italic: true,
                    ..active
                },
            ))),
            Inline::Strike(c) if active.strike => out.extend(unnest(c, active)),
            Inline::Strike(c) => out.push(Inline::Strike(unnest(
                c,
                Active {
                    strike: true,
                    ..active
                },
            ))),
            Inline::Spoiler(c) if active.spoiler => out.extend(unnest(c, active)),
            Inline::Spoiler(c) => out.push(Inline::Spoiler(unnest(
                c,
                Active {
                    spoiler: true,
                    ..active
                },
            ))),
            Inline::Link { label, .. } if active.link => out.extend(unnest(label, active)),
            Inline::Link { label, url } => out.push(Inline::Link {
                label: unnest(
                    label,
                    Active {
                        link: true,
                        ..active
                    },
                ),
                url,
            }),
            other => out.push(other),
        }
    }
    out
}

/// The text of inline items without any formatting.
pub(crate) fn plain_text(items: &[Inline], out: &mut String) {
    for item in items {
        match item {
            Inline::Text(t) | Inline::Code(t) => out.push_str(t),
            Inline::AutoLink(u) => out.push_str(u),
            Inline::Entity(e) => {
                out.push('<');
                out.push_str(e);
                out.push('>');
            }
            Inline::Bold(c) | Inline::Italic(c) | Inline::Strike(c) | Inline::Spoiler(c) => {
                plain_text(c, out)
            }
            Inline::Link { label, .. } => plain_text(label, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_recognised_like_the_platforms_do() {
        assert_eq!(fence_info("```rust"), Some("rust"));
        assert_eq!(fence_info("   ````"), Some(""));
        assert_eq!(fence_info("    ```"), None);
        assert_eq!(fence_info("``"), None);
        assert_eq!(fence_info("```x```"), None);
        assert_eq!(fence_lang("python title=x"), "python");
        assert_eq!(fence_lang(&"a".repeat(100)), "");
    }

    #[test]
    fn plain_and_discord() {
        let md = "**b** | not a table";
        assert_eq!(render(md, Dialect::Plain), md);
        assert_eq!(render(md, Dialect::Discord), md);
        let table = "| a | b |\n|---|---|\n| 1 | 2 |";
        assert_eq!(render(table, Dialect::Discord), "**1**\n• b: 2");
    }
}
