//! Bytes of a text response to a string: UTF-8 (the default, invalid bytes replaced), or the
//! single-byte Western encodings still common on old pages (ISO-8859-1, Windows-1252), from the
//! Content-Type charset or a `<meta charset>` near the top of an HTML page.

/// Windows-1252's characters for 0x80..=0x9F (undefined bytes map to U+FFFD).
const CP1252_HIGH: [char; 32] = [
    '€', '\u{fffd}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{fffd}', 'Ž',
    '\u{fffd}', '\u{fffd}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{fffd}',
    'ž', 'Ÿ',
];

pub fn decode(bytes: &[u8], header_charset: Option<&str>) -> String {
    let charset = header_charset
        .map(str::to_string)
        .or_else(|| meta_charset(bytes))
        .unwrap_or_default();
    match charset.as_str() {
        "iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252" | "us-ascii" | "ascii" => {
            bytes
                .iter()
                .map(|&b| match b {
                    0x80..=0x9f => CP1252_HIGH[usize::from(b - 0x80)],
                    _ => char::from(b),
                })
                .collect()
        }
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// `<meta charset="…">` or `content="text/html; charset=…"` in the first 2 KB.
fn meta_charset(bytes: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(2048)]).to_ascii_lowercase();
    let at = head.find("charset=")?;
    let rest = head[at + 8..].trim_start_matches(['"', '\'']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_from_header_or_meta() {
        assert_eq!(decode(b"caf\xe9", Some("iso-8859-1")), "café");
        assert_eq!(decode(b"\x93hi\x94", Some("windows-1252")), "“hi”");
        assert_eq!(decode("café".as_bytes(), None), "café");
        let page = b"<html><head><meta charset=\"windows-1252\"></head><body>caf\xe9</body></html>";
        assert!(decode(page, None).contains("café"));
    }
}
