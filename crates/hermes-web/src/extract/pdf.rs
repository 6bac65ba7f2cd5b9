//! PDF to text (feature `pdf`: pdf-extract over lopdf, pure Rust). A malformed file can make the
//! parser panic; the caller runs this on the blocking pool, where a panic is an error.

use super::ExtractError;

/// The text of a PDF, pages separated by blank lines.
#[cfg(feature = "pdf")]
pub fn to_text(bytes: &[u8]) -> Result<String, ExtractError> {
    pdf_extract::extract_text_from_mem(bytes)
        .map(|t| super::html::tidy(&t.replace('\u{c}', "\n\n")))
        .map_err(|e| ExtractError::Pdf(e.to_string()))
}

#[cfg(not(feature = "pdf"))]
pub fn to_text(_bytes: &[u8]) -> Result<String, ExtractError> {
    Err(ExtractError::PdfUnsupported)
}
