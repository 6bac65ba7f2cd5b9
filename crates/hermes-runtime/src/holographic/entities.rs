//! Entity candidates in a fact's text, by Python's rules (`store.py` `_extract_entities`):
//! capitalised multi-word phrases ("John Doe"), double- and single-quoted terms, and both
//! sides of "X aka Y" / "X also known as Y"; deduplicated case-insensitively in first-seen
//! order. Rust's regex picks the same leftmost-first matches as Python's `re` here (no
//! back-references), so both builds link a fact to the same entities.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

/// Entities taken from one fact, at most: a pasted document must not become a thousand
/// rows in `entities`.
pub const MAX_ENTITIES: usize = 64;

static CAPITALIZED: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)+)\b").ok());
static DOUBLE_QUOTE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r#""([^"]+)""#).ok());
static SINGLE_QUOTE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"'([^']+)'").ok());
static AKA: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)(\w+(?:\s+\w+)*)\s+(?:aka|also known as)\s+(\w+(?:\s+\w+)*)").ok()
});

/// The entity names in `text`, trimmed, first spelling kept.
pub fn extract(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut names = Vec::new();
    let mut add = |name: &str| {
        let name = name.trim();
        if !name.is_empty() && names.len() < MAX_ENTITIES && seen.insert(name.to_lowercase()) {
            names.push(name.to_string());
        }
    };
    // The patterns are constants the tests compile; `None` cannot happen in practice.
    for re in [&*CAPITALIZED, &*DOUBLE_QUOTE, &*SINGLE_QUOTE]
        .into_iter()
        .flatten()
    {
        for caps in re.captures_iter(text) {
            add(&caps[1]);
        }
    }
    for caps in AKA.iter().flat_map(|re| re.captures_iter(text)) {
        add(&caps[1]);
        add(&caps[2]);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::extract;

    /// Expected lists printed by Python's `MemoryStore._extract_entities`.
    #[test]
    fn extraction_matches_python() {
        assert_eq!(
            extract("Alice Smith works with Bob Jones on \"Project X\" using 'pytest'"),
            ["Alice Smith", "Bob Jones", "Project X", "pytest"]
        );
        assert_eq!(
            extract("My friend Guido aka BDFL wrote it"),
            ["My friend Guido", "BDFL wrote it"]
        );
        assert_eq!(
            extract("Guido van Rossum also known as BDFL"),
            ["Guido van Rossum", "BDFL"]
        );
        assert_eq!(
            extract("New York and new york and \"New York\""),
            ["New York"]
        );
        assert_eq!(extract("the user likes tea"), Vec::<String>::new());
        assert_eq!(extract("it's Bob's 'x' and Ann"), ["s Bob", "x"]);
    }
}
