//! Session titles: what a user-given title may contain, and the automatic title taken from the
//! first thing the user said (no model call needed).

use crate::StoreError;

/// The longest title kept, in characters.
pub const MAX_TITLE_CHARS: usize = 100;

/// The length of an automatic title before it is cut at a word boundary.
const AUTO_TITLE_CHARS: usize = 60;

/// Cleans a title: control and invisible formatting characters removed, whitespace runs
/// collapsed, ends trimmed. Empty after cleaning or longer than [`MAX_TITLE_CHARS`] is an error.
pub fn sanitize_title(raw: &str) -> Result<String, StoreError> {
    let cleaned = collapse(raw);
    if cleaned.is_empty() {
        return Err(StoreError::InvalidTitle("it is empty".into()));
    }
    let len = cleaned.chars().count();
    if len > MAX_TITLE_CHARS {
        return Err(StoreError::InvalidTitle(format!(
            "it is {len} characters long (at most {MAX_TITLE_CHARS})"
        )));
    }
    Ok(cleaned)
}

/// A title drawn from the user's first message: its first non-empty line, cleaned, cut at a
/// word boundary near 60 characters. `None` when the message has nothing usable.
pub fn auto_title(first_user_message: &str) -> Option<String> {
    let line = first_user_message
        .lines()
        .map(collapse)
        .find(|l| !l.is_empty())?;
    if line.chars().count() <= AUTO_TITLE_CHARS {
        return Some(line);
    }
    let cut: String = line.chars().take(AUTO_TITLE_CHARS).collect();
    let at_word = match cut.rfind(' ') {
        Some(i) if i >= AUTO_TITLE_CHARS / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    Some(format!(
        "{}…",
        at_word.trim_end_matches([',', '.', ';', ':', ' '])
    ))
}

/// `title`, or `title #2`, `title #3`, ... : the first candidate `taken` says is free.
pub(crate) fn first_free(title: &str, taken: impl Fn(&str) -> bool) -> Option<String> {
    if !taken(title) {
        return Some(title.to_string());
    }
    (2..1000)
        .map(|n| format!("{title} #{n}"))
        .find(|candidate| !taken(candidate))
}

fn collapse(text: &str) -> String {
    text.split(|c: char| c.is_whitespace())
        .map(|word| word.chars().filter(|c| !invisible(*c)).collect::<String>())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Control characters and the invisible formatting ones (zero-width, direction overrides)
/// that would make two titles look the same or garble a terminal.
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFC}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_cleaned_and_bounded() {
        assert_eq!(
            sanitize_title("  my\tfirst\u{200B}  session\n").unwrap(),
            "my first session"
        );
        assert!(sanitize_title(" \u{200B} ").is_err());
        assert!(sanitize_title(&"x".repeat(101)).is_err());
        assert_eq!(
            sanitize_title(&"é".repeat(100)).unwrap().chars().count(),
            100
        );
    }

    #[test]
    fn auto_titles_take_the_first_line_cut_at_a_word() {
        assert_eq!(
            auto_title("\n  fix the build\nplease").as_deref(),
            Some("fix the build")
        );
        let long = "Please refactor the session store so that every message is committed immediately and searchable";
        let t = auto_title(long).unwrap();
        assert!(t.ends_with('…'), "{t}");
        assert!(t.chars().count() <= 61, "{t}");
        assert!(long.starts_with(t.trim_end_matches('…')), "{t}");
        assert_eq!(auto_title(" \n\t"), None);
    }

    #[test]
    fn taken_titles_get_a_number() {
        let taken = ["a", "a #2"];
        assert_eq!(
            first_free("a", |t| taken.contains(&t)).as_deref(),
            Some("a #3")
        );
        assert_eq!(
            first_free("b", |t| taken.contains(&t)).as_deref(),
            Some("b")
        );
    }
}
