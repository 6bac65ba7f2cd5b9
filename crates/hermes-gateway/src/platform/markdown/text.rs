//! Plain text for platforms that draw no formatting (IRC): emphasis markers and code fences
//! dropped, code kept as written, links as `label (url)`, quotes keep their `>`.

use super::{DialectRenderer, Inline};

pub(crate) struct Renderer;

impl DialectRenderer for Renderer {
    fn code_block(&self, _lang: &str, body: &str, out: &mut String) {
        out.push_str(body);
    }

    fn heading(&self, content: &[Inline], out: &mut String) {
        self.inline(content, out);
    }

    fn quote(&self, level: usize, content: &[Inline], out: &mut String) {
        for _ in 0..level {
            out.push('>');
        }
        out.push(' ');
        self.inline(content, out);
    }

    fn inline(&self, items: &[Inline], out: &mut String) {
        for item in items {
            match item {
                Inline::Text(t) | Inline::Code(t) | Inline::AutoLink(t) => out.push_str(t),
                Inline::Entity(e) => {
                    out.push('<');
                    out.push_str(e);
                    out.push('>');
                }
                Inline::Bold(c) | Inline::Italic(c) | Inline::Strike(c) | Inline::Spoiler(c) => {
                    self.inline(c, out)
                }
                Inline::Link { label, url } => {
                    let mut text = String::new();
                    self.inline(label, &mut text);
                    if text == *url {
                        out.push_str(url);
                    } else {
                        out.push_str(&text);
                        out.push_str(" (");
                        out.push_str(url);
                        out.push(')');
                    }
                }
            }
        }
    }
}
