//! Canonical text of a command before it is checked: terminal escapes and NUL bytes removed,
//! Unicode NFKC-normalised (fullwidth `ｒｍ` becomes `rm`), invisible characters (zero-width
//! spaces and joiners, bidi controls, soft hyphens, tag characters) dropped, and `$IFS` word
//! splitting spelled as the space it expands to. Shell quoting is left to the lexer.

use unicode_normalization::UnicodeNormalization;

/// Characters that render as nothing (or reorder text) and would let `r\u{200b}m` slip past a
/// check while a terminal shows `rm`.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}'                      // soft hyphen
        | '\u{034F}'                    // combining grapheme joiner
        | '\u{115F}' | '\u{1160}'       // Hangul fillers
        | '\u{180E}'                    // Mongolian vowel separator
        | '\u{200B}'..='\u{200F}'       // zero-width space/joiners, LRM/RLM
        | '\u{202A}'..='\u{202E}'       // bidi embeddings and overrides
        | '\u{2060}'..='\u{2064}'       // word joiner, invisible operators
        | '\u{2066}'..='\u{2069}'       // bidi isolates
        | '\u{3164}' | '\u{FFA0}'       // Hangul fillers
        | '\u{FE00}'..='\u{FE0F}'       // variation selectors
        | '\u{FEFF}'                    // zero-width no-break space (BOM)
        | '\u{E0000}'..='\u{E007F}'     // tag characters
    )
}

/// The command as the checker sees it.
pub(crate) fn normalize(command: &str) -> String {
    let stripped = crate::output::strip_ansi(command);
    let text: String = stripped
        .replace("\r\n", "\n")
        .nfkc()
        .filter(|c| *c != '\0' && !is_invisible(*c))
        .collect();
    replace_ifs(&text)
}

/// `$IFS`, `${IFS}` and `${IFS:0:1}` expand to whitespace: `rm${IFS}-rf${IFS}/` runs `rm -rf /`.
fn replace_ifs(text: &str) -> String {
    if !text.contains("IFS") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("IFS")
            && !tail.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            out.push(' ');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("{IFS")
            && tail.starts_with(['}', ':', '[', '%', '#', '/'])
            && let Some(end) = tail.find('}')
        {
            out.push(' ');
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fullwidth_and_invisible_characters_are_folded() {
        assert_eq!(normalize("ｒｍ －ｒｆ ／"), "rm -rf /");
        assert_eq!(normalize("r\u{200b}m -rf\u{2060} /"), "rm -rf /");
        assert_eq!(normalize("rm\u{00a0}-rf /"), "rm -rf /");
        assert_eq!(normalize("\u{1b}[31mrm\u{1b}[0m -rf /\0"), "rm -rf /");
        assert_eq!(normalize("\u{202e}/ fr- mr"), "/ fr- mr");
    }

    #[test]
    fn ifs_expands_to_a_space() {
        assert_eq!(normalize("rm${IFS}-rf${IFS}/"), "rm -rf /");
        assert_eq!(normalize("rm$IFS-rf$IFS/"), "rm -rf /");
        assert_eq!(normalize("rm${IFS:0:1}-rf /"), "rm -rf /");
        assert_eq!(normalize("echo $IFSX ${IFSY}"), "echo $IFSX ${IFSY}");
    }
}
