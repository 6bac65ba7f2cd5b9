//! HTML to clean markdown with the main content kept: a readability pass (dom_smoothie, a port
//! of Mozilla's readability.js) finds the article and drops navigation, sidebars, footers and
//! cookie banners, then renders it as markdown with absolute links. A page readability cannot
//! score (too little text, an app shell) falls back to the whole body as markdown without the
//! obvious chrome (nav, header, footer, aside, forms, scripts).

use dom_query::Document;
use dom_smoothie::{Config, Readability, TextMode};

/// Elements never worth reading in the fallback rendering.
const CHROME: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "head", "meta", "nav", "header",
    "footer", "aside", "form", "button", "select",
];

/// Largest document handed to the parser (bigger pages are cut first: parsing is linear, but
/// the scorer is not).
const MAX_HTML_BYTES: usize = 4 * 1024 * 1024;

/// The page's title and its main content as markdown.
pub fn to_markdown(html: &str, url: &str) -> (String, String) {
    let html = cut(html, MAX_HTML_BYTES);
    let config = Config {
        text_mode: TextMode::Markdown,
        max_elements_to_parse: 50_000,
        ..Config::default()
    };
    let article = Readability::new(html, Some(url), Some(config))
        .ok()
        .and_then(|mut r| r.parse().ok())
        .filter(|a| a.text_content.trim().chars().count() >= 80);
    match article {
        Some(a) => (a.title.trim().to_string(), tidy(&a.text_content)),
        None => fallback(html),
    }
}

fn fallback(html: &str) -> (String, String) {
    let doc = Document::from(html);
    let title = doc.select("title").first().text().trim().to_string();
    let body = doc.select("body").first();
    let text = if body.exists() {
        body.nodes()
            .first()
            .map(|n| n.md(Some(CHROME)).to_string())
            .unwrap_or_default()
    } else {
        doc.md(Some(CHROME)).to_string()
    };
    (title, tidy(&text))
}

/// Trailing spaces gone, runs of blank lines folded to one.
pub fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_page_falls_back_to_its_body() {
        let (title, text) = to_markdown(
            "<html><head><title>Short</title></head><body><nav><a href='/'>Home</a></nav><p>Just a <b>line</b>.</p></body></html>",
            "https://example.com/",
        );
        assert_eq!(title, "Short");
        assert!(text.contains("Just a **line**."), "{text}");
        assert!(!text.contains("Home"), "{text}");
    }

    #[test]
    fn blank_runs_are_folded() {
        assert_eq!(tidy("a  \n\n\n\nb\n"), "a\n\nb");
    }
}
