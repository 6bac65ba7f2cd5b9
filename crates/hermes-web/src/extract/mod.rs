//! `web_extract`: pages fetched through the SSRF-safe [`crate::net::Fetcher`] and turned into
//! text the model can read: HTML through a readability pass into markdown ([`html`]), PDFs into
//! text ([`pdf`]), other text as it is ([`decode`]); then kept within budget ([`limit`]).

pub mod decode;
pub mod html;
pub mod limit;
pub mod pdf;
pub mod tool;

use crate::net::Fetched;

pub use tool::WebExtractTool;

/// One page as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub url: String,
    pub title: String,
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("cannot read the PDF: {0}")]
    Pdf(String),
    #[error("PDF text extraction is not in this build (cargo feature `pdf` of hermes-web)")]
    PdfUnsupported,
    #[error("not a text page ({0}); use the browser tools for it")]
    Unsupported(String),
    #[error("the page has no readable text")]
    Empty,
    #[error("the page could not be processed (the parser failed)")]
    Crashed,
}

/// What a response is, from its type, else its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Pdf,
    Text,
}

fn kind(fetched: &Fetched) -> Result<Kind, ExtractError> {
    let body = &fetched.body;
    let start = String::from_utf8_lossy(&body[..body.len().min(512)])
        .trim_start()
        .to_ascii_lowercase();
    if body.starts_with(b"%PDF-") {
        return Ok(Kind::Pdf);
    }
    match fetched.content_type.as_deref() {
        Some(t) if t.contains("pdf") => Ok(Kind::Pdf),
        Some(t) if t.contains("html") => Ok(Kind::Html),
        Some(t)
            if t.starts_with("text/")
                || t.contains("json")
                || t.contains("xml")
                || t.contains("javascript") =>
        {
            Ok(Kind::Text)
        }
        None if start.starts_with("<!doctype html") || start.starts_with("<html") => Ok(Kind::Html),
        None if std::str::from_utf8(body).is_ok() => Ok(Kind::Text),
        other => Err(ExtractError::Unsupported(
            other.unwrap_or("binary data").to_string(),
        )),
    }
}

/// The readable text of a fetched response. CPU-bound (parsing); run it off the async threads.
pub fn page_from(fetched: &Fetched) -> Result<Page, ExtractError> {
    let url = fetched.url.to_string();
    let (title, content) = match kind(fetched)? {
        Kind::Pdf => (String::new(), pdf::to_text(&fetched.body)?),
        Kind::Html => {
            let text = decode::decode(&fetched.body, fetched.charset.as_deref());
            html::to_markdown(&text, &url)
        }
        Kind::Text => (
            String::new(),
            decode::decode(&fetched.body, fetched.charset.as_deref()),
        ),
    };
    if content.trim().is_empty() {
        return Err(ExtractError::Empty);
    }
    Ok(Page {
        url,
        title,
        content,
    })
}
