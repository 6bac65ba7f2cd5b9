//! WhatsApp's formatting: `*bold*`, `_italic_`, `~strike~`, `` `code` `` and ```` ``` ````
//! blocks, `> ` quotes; headings become bold lines and links `label (url)` (WhatsApp has no
//! link syntax, it previews bare URLs), as the Python Hermes's `format_message` does. Nothing
//! needs escaping: WhatsApp shows stray markers as they are.

use super::{DialectRenderer, Inline, plain_text};

pub(crate) struct Renderer;

impl DialectRenderer for Renderer {
    fn code_block(&self, _lang: &str, body: &str, out: &mut String) {
        // A language tag would show as the first line of the block.
        out.push_str("```\n");
        out.push_str(body);
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
        // WhatsApp quotes one level only.
        let _ = level;
        out.push_str("> ");
        self.inline(content, out);
    }

    fn inline(&self, items: &[Inline], out: &mut String) {
        for item in items {
            match item {
                Inline::Text(t) | Inline::AutoLink(t) => out.push_str(t),
                Inline::Code(c) => {
                    out.push('`');
                    out.push_str(c);
                    out.push('`');
                }
                Inline::Bold(c) => wrap(self, "*", c, out),
                Inline::Italic(c) => wrap(self, "_", c, out),
                Inline::Strike(c) => wrap(self, "~", c, out),
                // No spoilers in WhatsApp: the text stays readable with its markers.
                Inline::Spoiler(c) => wrap(self, "||", c, out),
                Inline::Link { label, url } => {
                    let mut text = String::new();
                    plain_text(label, &mut text);
                    if text == *url || text.is_empty() {
                        out.push_str(url);
                    } else {
                        out.push_str(&text);
                        out.push_str(" (");
                        out.push_str(url);
                        out.push(')');
                    }
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
    use super::super::render_whatsapp as wa;

    #[test]
    fn formatting_becomes_whatsapp() {
        assert_eq!(wa("**bold** *it* _it2_ ~~s~~"), "*bold* _it_ _it2_ ~s~");
        assert_eq!(wa("# Head **x**"), "*Head x*");
        assert_eq!(wa("> quoted & <kept>"), "> quoted & <kept>");
        assert_eq!(wa("a * b * c"), "a * b * c");
        assert_eq!(wa("see [docs](https://x.y/a)"), "see docs (https://x.y/a)");
        assert_eq!(wa("`a*b*c`"), "`a*b*c`");
    }

    #[test]
    fn code_blocks_stay_monospace_without_their_language() {
        assert_eq!(
            wa("```rust\nlet x = **y**;\n```\nafter"),
            "```\nlet x = **y**;\n```\nafter"
        );
    }
}
