//! Slack mrkdwn: `*bold*`, `_italic_`, `~strike~`, `<url|label>` links, `>` quotes, code as
//! written; `&`, `<` and `>` become `&amp;`, `&lt;`, `&gt;` everywhere (Slack's rule: they
//! would otherwise start links or mentions), except in Slack's own `<@U…>`/`<#C…>`/`<!here>`
//! entities, which pass through. Text that is already escaped is not escaped twice.

use super::{DialectRenderer, Inline, plain_text};

pub(crate) struct Renderer;

/// Escapes `&`, `<`, `>`; an existing `&amp;`, `&lt;` or `&gt;` is kept as it is.
pub fn escape(text: &str, out: &mut String) {
    let mut rest = text;
    while let Some(pos) = rest.find(['&', '<', '>']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if tail.starts_with('&') {
            if let Some(entity) = ["&amp;", "&lt;", "&gt;"]
                .iter()
                .find(|e| tail.starts_with(**e))
            {
                out.push_str(entity);
                rest = &tail[entity.len()..];
                continue;
            }
            out.push_str("&amp;");
        } else if tail.starts_with('<') {
            out.push_str("&lt;");
        } else {
            out.push_str("&gt;");
        }
        rest = &tail[1..];
    }
    out.push_str(rest);
}

impl DialectRenderer for Renderer {
    fn code_block(&self, _lang: &str, body: &str, out: &mut String) {
        // Slack shows a language tag as the first line of code, so it is dropped.
        out.push_str("```\n");
        escape(body, out);
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
        out.push('>');
        for _ in 1..level {
            out.push_str("&gt;");
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
                    escape(c, out);
                    out.push('`');
                }
                Inline::Bold(c) => wrap(self, "*", c, out),
                Inline::Italic(c) => wrap(self, "_", c, out),
                Inline::Strike(c) => wrap(self, "~", c, out),
                // No spoilers in Slack: the text stays readable with its markers.
                Inline::Spoiler(c) => wrap(self, "||", c, out),
                Inline::Link { label, url } => {
                    out.push('<');
                    escape(url, out);
                    out.push('|');
                    let mut text = String::new();
                    plain_text(label, &mut text);
                    escape(&text.replace('|', "¦"), out);
                    out.push('>');
                }
                Inline::AutoLink(url) => {
                    out.push('<');
                    escape(url, out);
                    out.push('>');
                }
                Inline::Entity(e) => {
                    out.push('<');
                    out.push_str(e);
                    out.push('>');
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

    fn sl(s: &str) -> String {
        render(s, Dialect::SlackMrkdwn)
    }

    #[test]
    fn formatting_becomes_mrkdwn() {
        assert_eq!(sl("**bold** *it* _it2_ ~~s~~"), "*bold* _it_ _it2_ ~s~");
        assert_eq!(sl("***both***"), "*_both_*");
        assert_eq!(sl("# Head **x**"), "*Head x*");
        assert_eq!(sl("> quote & more"), "> quote &amp; more");
        assert_eq!(sl("a * b * c"), "a * b * c");
    }

    #[test]
    fn control_characters_are_escaped_once() {
        assert_eq!(sl("a < b && c > d"), "a &lt; b &amp;&amp; c &gt; d");
        assert_eq!(sl("already &lt;x&gt; &amp;"), "already &lt;x&gt; &amp;");
        assert_eq!(sl("`if a<b`"), "`if a&lt;b`");
        assert_eq!(
            sl("```rust\nlet x = a<b;\n```"),
            "```\nlet x = a&lt;b;\n```"
        );
    }

    #[test]
    fn links_and_entities() {
        assert_eq!(
            sl("[docs | here](https://x.y/?a=1&b=2)"),
            "<https://x.y/?a=1&amp;b=2|docs ¦ here>"
        );
        assert_eq!(
            sl("hi <@U123>, see <#C9|general> <!here>"),
            "hi <@U123>, see <#C9|general> <!here>"
        );
        assert_eq!(sl("<https://a.b>"), "<https://a.b>");
    }
}
