//! Telegram MarkdownV2. Outside entities every one of `_*[]()~`>#+-=|{}.!\` is escaped with a
//! backslash; inside `code` and ```pre``` only `` ` `` and `\`; inside a link's URL only `)`
//! and `\` (Telegram's documented rules), so any text becomes a message Telegram accepts.

use super::{DialectRenderer, Inline};

pub(crate) struct Renderer;

/// Characters MarkdownV2 reserves outside entities.
const SPECIAL: &[char] = &[
    '_', '*', '[', ']', '(', ')', '~', '`', '>', '#', '+', '-', '=', '|', '{', '}', '.', '!', '\\',
];

/// Escapes plain text for MarkdownV2.
pub fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        if SPECIAL.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
}

fn escape_code(text: &str, out: &mut String) {
    for c in text.chars() {
        if c == '`' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
}

fn escape_url(url: &str, out: &mut String) {
    for c in url.chars() {
        if c == ')' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
}

impl DialectRenderer for Renderer {
    fn code_block(&self, lang: &str, body: &str, out: &mut String) {
        out.push_str("```");
        out.push_str(lang);
        out.push('\n');
        escape_code(body, out);
        if !body.is_empty() {
            out.push('\n');
        }
        out.push_str("```");
    }

    fn heading(&self, content: &[Inline], out: &mut String) {
        out.push('*');
        self.inline(content, out);
        out.push('*');
    }

    fn quote(&self, level: usize, content: &[Inline], out: &mut String) {
        // Telegram quotes have one level; deeper markers stay visible as text.
        out.push('>');
        for _ in 1..level {
            out.push_str("\\>");
        }
        out.push(' ');
        self.inline(content, out);
    }

    fn inline(&self, items: &[Inline], out: &mut String) {
        for item in items {
            match item {
                Inline::Text(t) => escape(t, out),
                Inline::Code(c) => {
                    out.push('`');
                    escape_code(c, out);
                    out.push('`');
                }
                Inline::Bold(c) => wrap(self, "*", c, out),
                Inline::Italic(c) => {
                    // `__` is underline in MarkdownV2: an italic right after another italic
                    // would read as one. Telegram documents a carriage return (ignored when
                    // rendered) as the separator for exactly this case.
                    if out.ends_with('_') && !out.ends_with("\\_") {
                        out.push('\r');
                    }
                    wrap(self, "_", c, out)
                }
                Inline::Strike(c) => wrap(self, "~", c, out),
                Inline::Spoiler(c) => wrap(self, "||", c, out),
                Inline::Link { label, url } => {
                    out.push('[');
                    self.inline(label, out);
                    out.push_str("](");
                    escape_url(url, out);
                    out.push(')');
                }
                Inline::AutoLink(url) => escape(url, out),
                Inline::Entity(e) => {
                    escape("<", out);
                    escape(e, out);
                    escape(">", out);
                }
            }
        }
    }
}

fn wrap(r: &Renderer, marker: &str, children: &[Inline], out: &mut String) {
    out.push_str(marker);
    r.inline(children, out);
    out.push_str(marker);
}

#[cfg(test)]
mod tests {
    use super::super::render;
    use crate::platform::types::Dialect;

    fn tg(s: &str) -> String {
        render(s, Dialect::TelegramV2)
    }

    #[test]
    fn specials_are_escaped_outside_entities() {
        assert_eq!(tg("Hello. (1+1=2)!"), r"Hello\. \(1\+1\=2\)\!");
        assert_eq!(
            tg("a_b-c #d {e} |f| ~g > h"),
            r"a\_b\-c \#d \{e\} \|f\| \~g \> h"
        );
        assert_eq!(tg(r"back\slash"), r"back\\slash");
    }

    #[test]
    fn formatting_becomes_v2_entities() {
        assert_eq!(tg("**bold.** and *it!*"), r"*bold\.* and _it\!_");
        assert_eq!(tg("~~gone~~ ||secret||"), r"~gone~ ||secret||");
        assert_eq!(tg("## Title (v2)"), r"*Title \(v2\)*");
        assert_eq!(tg("# **Bold** title"), r"*Bold title*");
        assert_eq!(tg("> quoted."), r"> quoted\.");
    }

    #[test]
    fn code_keeps_its_text_with_only_backslash_and_backtick_escaped() {
        assert_eq!(tg("run `a_b(1)`"), r"run `a_b(1)`");
        assert_eq!(tg(r"`c:\dir`"), r"`c:\\dir`");
        assert_eq!(
            tg("```python\nprint('a.b')  # x\\y\n```\ndone."),
            "```python\nprint('a.b')  # x\\\\y\n```\ndone\\."
        );
        // An unclosed fence is closed.
        assert_eq!(tg("```\nx = 1"), "```\nx = 1\n```");
    }

    #[test]
    fn links_escape_only_paren_and_backslash_in_the_url() {
        assert_eq!(
            tg("[the site.](https://x.y/a_(b))"),
            r"[the site\.](https://x.y/a_(b\))"
        );
        assert_eq!(tg("<https://a.b/c>"), r"https://a\.b/c");
    }

    use proptest::prelude::*;

    fn markdownish() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-z .!()#+=|{}<>-]{0,12}",
            Just("**".to_string()),
            Just("*".to_string()),
            Just("_".to_string()),
            Just("__".to_string()),
            Just("~~".to_string()),
            Just("||".to_string()),
            Just("`".to_string()),
            Just("\\".to_string()),
            Just("[a](http://x/y_(z))".to_string()),
            Just("<https://a.b>".to_string()),
            Just("\n".to_string()),
            Just("\n```py\n".to_string()),
            Just("\n```\n".to_string()),
            Just("\n> ".to_string()),
            Just("\n## ".to_string()),
            Just("\n| a | b |\n|---|---|\n| 1 | 2 |\n".to_string()),
            "[😀é]{0,3}",
        ];
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(hermes_testkit::proptest_config(512))]

        /// Whatever the model writes, Telegram's parser (the testkit's copy of its rules)
        /// accepts the conversion.
        #[test]
        fn every_conversion_is_valid_markdown_v2(text in markdownish()) {
            let out = tg(&text);
            let parsed = hermes_testkit::platforms::telegram_markdown::parse(&out);
            prop_assert!(parsed.is_ok(), "{:?} -> {:?}: {:?}", text, out, parsed);
        }
    }

    #[test]
    fn lists_and_tables() {
        assert_eq!(tg("- one\n1. two"), "\\- one\n1\\. two");
        assert_eq!(tg("| k | v |\n|---|---|\n| a | 1.5 |"), "*a*\n• v: 1\\.5");
    }
}
