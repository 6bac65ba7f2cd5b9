//! HTML for Matrix's `formatted_body` (`org.matrix.custom.html`): the tags the Matrix spec
//! recommends clients render (`strong`, `em`, `del`, `code`, `pre`, `a`, `blockquote`, `h4`,
//! `br`, `span data-mx-spoiler`), every text character that HTML reads (`&`, `<`, `>`, `"`)
//! escaped, and links kept only for `http`, `https` and `mailto` URLs (anything else, such as
//! `javascript:`, stays visible text).

use super::{DialectRenderer, Inline, plain_text};

pub(crate) struct Renderer;

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

fn safe_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme))
}

impl DialectRenderer for Renderer {
    fn code_block(&self, lang: &str, body: &str, out: &mut String) {
        out.push_str("<pre><code");
        if !lang.is_empty() {
            out.push_str(" class=\"language-");
            escape(lang, out);
            out.push('"');
        }
        out.push('>');
        escape(body, out);
        out.push_str("</code></pre>");
    }

    fn heading(&self, content: &[Inline], out: &mut String) {
        out.push_str("<h4>");
        self.inline(content, out);
        out.push_str("</h4>");
    }

    fn quote(&self, level: usize, content: &[Inline], out: &mut String) {
        for _ in 0..level {
            out.push_str("<blockquote>");
        }
        self.inline(content, out);
        for _ in 0..level {
            out.push_str("</blockquote>");
        }
    }

    fn inline(&self, items: &[Inline], out: &mut String) {
        for item in items {
            match item {
                Inline::Text(t) => escape(t, out),
                Inline::Code(c) => {
                    out.push_str("<code>");
                    escape(c, out);
                    out.push_str("</code>");
                }
                Inline::Bold(c) => wrap(self, "strong", c, out),
                Inline::Italic(c) => wrap(self, "em", c, out),
                Inline::Strike(c) => wrap(self, "del", c, out),
                Inline::Spoiler(c) => {
                    out.push_str("<span data-mx-spoiler>");
                    self.inline(c, out);
                    out.push_str("</span>");
                }
                Inline::Link { label, url } if safe_url(url) => {
                    out.push_str("<a href=\"");
                    escape(url.trim(), out);
                    out.push_str("\">");
                    self.inline(label, out);
                    out.push_str("</a>");
                }
                Inline::Link { label, url } => {
                    let mut text = String::new();
                    plain_text(label, &mut text);
                    escape(&format!("{text} ({url})"), out);
                }
                Inline::AutoLink(url) if safe_url(url) => {
                    out.push_str("<a href=\"");
                    escape(url, out);
                    out.push_str("\">");
                    escape(url, out);
                    out.push_str("</a>");
                }
                Inline::AutoLink(url) => escape(url, out),
                Inline::Entity(e) => {
                    out.push_str("&lt;");
                    escape(e, out);
                    out.push_str("&gt;");
                }
            }
        }
    }

    fn line_break(&self) -> &'static str {
        "<br>"
    }
}

fn wrap(r: &Renderer, tag: &str, children: &[Inline], out: &mut String) {
    out.push('<');
    out.push_str(tag);
    out.push('>');
    r.inline(children, out);
    out.push_str("</");
    out.push_str(tag);
    out.push('>');
}

#[cfg(test)]
mod tests {
    use super::super::render_html;

    #[test]
    fn formatting_becomes_tags_and_text_is_escaped() {
        assert_eq!(
            render_html("**bold** and *it* with `a<b` & [link](https://x.org/?a=1&b=\"2\")"),
            "<strong>bold</strong> and <em>it</em> with <code>a&lt;b</code> &amp; \
             <a href=\"https://x.org/?a=1&amp;b=&quot;2&quot;\">link</a>"
        );
        assert_eq!(
            render_html("# Title\n> quoted\nline <script>"),
            "<h4>Title</h4><br><blockquote>quoted</blockquote><br>line &lt;script&gt;"
        );
    }

    #[test]
    fn code_blocks_keep_their_newlines_and_bad_links_stay_text() {
        assert_eq!(
            render_html("```rust\nlet a = 1;\nlet b = \"<x>\";\n```\nafter"),
            "<pre><code class=\"language-rust\">let a = 1;\nlet b = &quot;&lt;x&gt;&quot;;</code></pre><br>after"
        );
        assert_eq!(
            render_html("[click](javascript:alert(1))"),
            "click (javascript:alert(1))"
        );
    }
}
