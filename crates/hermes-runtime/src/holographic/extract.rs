//! Which user messages `auto_extract` turns into facts, by the patterns of Python's
//! `_auto_extract_facts`: stated preferences become `user_pref` facts, stated decisions
//! `project` facts. Only what the user wrote counts: the recall a provider appended to the
//! message as sent is cut off first.

use std::sync::LazyLock;

use hermes_core::memory::snapshot::FENCE_OPEN;
use hermes_protocol::{Message, Role};
use regex::Regex;

/// Characters of a message kept as a fact (Python's `content[:400]`).
const FACT_CHARS: usize = 400;
/// Messages shorter than this (in characters) state nothing worth keeping.
const MIN_CHARS: usize = 10;

fn patterns(sources: &[&str]) -> Vec<Regex> {
    sources
        .iter()
        // Constants the tests compile; a pattern that failed would only match nothing.
        .filter_map(|p| Regex::new(&format!("(?i){p}")).ok())
        .collect()
}

static PREFERENCE: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    patterns(&[
        r"\bI\s+(?:prefer|like|love|use|want|need)\s+(.+)",
        r"\bmy\s+(?:favorite|preferred|default)\s+\w+\s+is\s+(.+)",
        r"\bI\s+(?:always|never|usually)\s+(.+)",
    ])
});
static DECISION: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    patterns(&[
        r"\bwe\s+(?:decided|agreed|chose)\s+(?:to\s+)?(.+)",
        r"\bthe\s+project\s+(?:uses|needs|requires)\s+(.+)",
    ])
});

/// The facts to store, in conversation order: (content, category). A message that states
/// both a preference and a decision yields both, as in Python.
pub fn statements(messages: &[Message]) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    for message in messages.iter().filter(|m| m.role == Role::User) {
        let text = written_by_user(&message.content);
        if text.chars().count() < MIN_CHARS {
            continue;
        }
        let fact: String = text.chars().take(FACT_CHARS).collect();
        if PREFERENCE.iter().any(|re| re.is_match(text)) {
            found.push((fact.clone(), "user_pref"));
        }
        if DECISION.iter().any(|re| re.is_match(text)) {
            found.push((fact, "project"));
        }
    }
    found
}

/// The message without the recall fence the agent appends after a blank line.
fn written_by_user(content: &str) -> &str {
    match content.rfind(&format!("\n\n{FENCE_OPEN}")) {
        Some(at) => &content[..at],
        None => content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    #[test]
    fn preferences_and_decisions_as_python_finds_them() {
        let messages = vec![
            user("I prefer tabs over spaces in Go code"),
            Message::assistant("I like that too, noted."),
            user("ok"),
            user("we decided to ship on Fridays"),
            user("My favorite editor is Helix, and the project uses Nix"),
            user("nothing to see here at all"),
            user(&format!(
                "i always run tests first\n\n{FENCE_OPEN}\nRecalled ...\n\n- [0.5] I prefer X\n</memory-context>"
            )),
            user(&format!("I use {}", "x".repeat(500))),
        ];
        let found = statements(&messages);
        let expected: Vec<(String, &str)> = vec![
            ("I prefer tabs over spaces in Go code".into(), "user_pref"),
            ("we decided to ship on Fridays".into(), "project"),
            (
                "My favorite editor is Helix, and the project uses Nix".into(),
                "user_pref",
            ),
            (
                "My favorite editor is Helix, and the project uses Nix".into(),
                "project",
            ),
            ("i always run tests first".into(), "user_pref"),
            (format!("I use {}", "x".repeat(394)), "user_pref"),
        ];
        assert_eq!(found, expected);
    }
}
