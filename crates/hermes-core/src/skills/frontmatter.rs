//! The YAML frontmatter of a `SKILL.md`: the block between a leading `---` line and the next
//! `---` line, parsed with serde-saphyr into a JSON-like tree. Read the way the Python Hermes
//! reads it, so its skills work unchanged: a leading BOM is ignored, a file without a closed
//! fence has no frontmatter (all of it is body), and frontmatter that is not valid YAML is read
//! as plain `key: value` lines (with a note saying so, for the warning). Writing a skill uses
//! [`validate`], which is strict: valid YAML, `name` and `description`, a non-empty body.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The frontmatter keys (empty without frontmatter).
    pub fields: Map<String, Value>,
    /// Everything after the closing fence (the whole text without frontmatter).
    pub body: String,
    /// Why the frontmatter was read as plain lines, when it was.
    pub problem: Option<String>,
}

/// The closing fence: a newline, `---`, optional blanks, a newline.
static CLOSING_FENCE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\n---[ \t\r\n]*\n").ok());

/// `(yaml, body)` of a text that opens with a `---` fence, else `None`.
pub fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---")?;
    let fence = CLOSING_FENCE.as_ref()?.find(rest)?;
    Some((&rest[..fence.start()], &rest[fence.end()..]))
}

/// Parses a `SKILL.md` leniently (see the module docs).
pub fn parse(text: &str) -> Parsed {
    let Some((yaml, body)) = split(text) else {
        return Parsed {
            body: text.strip_prefix('\u{feff}').unwrap_or(text).to_string(),
            ..Parsed::default()
        };
    };
    let (fields, problem) = match parse_yaml(yaml) {
        Ok(Value::Object(map)) => (map, None),
        Ok(Value::Null) => (Map::new(), None),
        Ok(_) => (
            Map::new(),
            Some("frontmatter is not a mapping of keys".to_string()),
        ),
        Err(e) => (plain_lines(yaml), Some(e.to_string())),
    };
    Parsed {
        fields,
        body: body.to_string(),
        problem,
    }
}

/// What is wrong with the frontmatter of a `SKILL.md` being written (see [`validate`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    #[error("the SKILL.md content is empty")]
    Empty,
    #[error(
        "SKILL.md must start with YAML frontmatter: a `---` line, `name: ...`, `description: ...`, then `---`"
    )]
    NoFrontmatter,
    #[error("the frontmatter is not closed: add a `---` line after it")]
    Unclosed,
    /// The YAML parser's complaint, at a line of the file when it knows one.
    #[error("frontmatter is not valid YAML ({})", match line {
        Some(l) => format!("line {l}: {message}"),
        None => message.clone(),
    })]
    NotYaml { line: Option<u64>, message: String },
    #[error("the frontmatter must be a mapping (`key: value` lines)")]
    NotMapping,
    #[error("the frontmatter needs a `{0}`")]
    MissingKey(&'static str),
    #[error("`{0}` is empty")]
    EmptyKey(&'static str),
    #[error("`{0}` must be text")]
    NotText(&'static str),
    #[error(
        "the description is longer than {} characters; keep it to one or two sentences",
        super::MAX_DESCRIPTION_CHARS
    )]
    DescriptionTooLong,
    #[error("SKILL.md needs instructions after the frontmatter")]
    NoBody,
}

/// Checks a `SKILL.md` written through `skill_manage`: returns its frontmatter, or what to fix.
pub fn validate(text: &str) -> Result<Map<String, Value>, FrontmatterError> {
    if text.trim().is_empty() {
        return Err(FrontmatterError::Empty);
    }
    let trimmed = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !trimmed.starts_with("---") {
        return Err(FrontmatterError::NoFrontmatter);
    }
    let Some((yaml, body)) = split(text) else {
        return Err(FrontmatterError::Unclosed);
    };
    let fields = match parse_yaml(yaml)? {
        Value::Object(map) => map,
        _ => return Err(FrontmatterError::NotMapping),
    };
    for key in ["name", "description"] {
        match fields.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            Some(Value::Null) | None => return Err(FrontmatterError::MissingKey(key)),
            Some(Value::String(_)) => return Err(FrontmatterError::EmptyKey(key)),
            Some(_) => return Err(FrontmatterError::NotText(key)),
        }
    }
    let description = text_field(&fields, "description").unwrap_or_default();
    if description.chars().count() > super::MAX_DESCRIPTION_CHARS {
        return Err(FrontmatterError::DescriptionTooLong);
    }
    if body.trim().is_empty() {
        return Err(FrontmatterError::NoBody);
    }
    Ok(fields)
}

fn parse_yaml(yaml: &str) -> Result<Value, FrontmatterError> {
    if yaml.trim().is_empty() {
        return Ok(Value::Null);
    }
    // As PyYAML reads it: a repeated key keeps its last value. Only `true` / `false` are
    // booleans, so `tags: [y, n]` stays text.
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::LastWins,
        strict_booleans: true,
    };
    serde_saphyr::from_str_with_options::<Value>(yaml, options).map_err(|e| {
        let message = e.without_snippet().to_string();
        let mut message = message.lines().next().unwrap_or_default().trim();
        if let Some(i) = message.rfind(" at line ") {
            message = message[..i].trim_end_matches(',');
        }
        // The YAML starts right after the opening `---`, so its lines are the file's.
        FrontmatterError::NotYaml {
            line: e.location().map(|l| l.line()),
            message: message.to_string(),
        }
    })
}

/// The Python Hermes's fallback for broken YAML: each `key: value` line as text.
fn plain_lines(yaml: &str) -> Map<String, Value> {
    let mut map = Map::new();
    for line in yaml.trim().lines() {
        if let Some((key, value)) = line.split_once(':') {
            map.insert(
                key.trim().to_string(),
                Value::String(value.trim().to_string()),
            );
        }
    }
    map
}

/// A scalar field as text (numbers and booleans too), trimmed; `None` when absent or empty.
pub fn text_field(fields: &Map<String, Value>, key: &str) -> Option<String> {
    scalar_text(fields.get(key)?)
}

fn scalar_text(value: &Value) -> Option<String> {
    let s = match value {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!s.is_empty()).then_some(s)
}

/// A list field: a YAML list, or a string such as `a, b` or `[a, b]`.
pub fn list_field(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(scalar_text).collect(),
        Some(Value::String(s)) => {
            let s = s.trim();
            let s = s
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .unwrap_or(s);
            s.split(',')
                .map(|t| t.trim().trim_matches(['"', '\'']).to_string())
                .filter(|t| !t.is_empty())
                .collect()
        }
        Some(other) => scalar_text(other).into_iter().collect(),
        None => Vec::new(),
    }
}

/// `metadata.hermes.<key>` (the Agent Skills place for Hermes's own keys).
pub fn hermes_meta<'a>(fields: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    fields.get("metadata")?.get("hermes")?.get(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_bom_and_body() {
        let p = parse("\u{feff}---\nname: x\ndescription: Does x.\n---\n\n# X\nbody\n");
        assert_eq!(p.fields["name"], "x");
        assert_eq!(p.body, "# X\nbody\n");
        assert!(p.problem.is_none());
        let none = parse("# Just text\n");
        assert!(none.fields.is_empty());
        assert_eq!(none.body, "# Just text\n");
        let unclosed = parse("---\nname: x\n");
        assert!(unclosed.fields.is_empty());
        assert_eq!(unclosed.body, "---\nname: x\n");
    }

    #[test]
    fn broken_yaml_falls_back_to_plain_lines() {
        let p = parse("---\nname: d\ndescription: Use when: deploying\ntags: [x\n---\nRun it.\n");
        assert_eq!(p.fields["description"], "Use when: deploying");
        assert_eq!(p.fields["name"], "d");
        assert!(
            p.problem
                .as_deref()
                .is_some_and(|m| m.starts_with("frontmatter is not valid YAML (line 3: ")
                    && !m.contains("column")),
            "{:?}",
            p.problem
        );
        assert_eq!(p.body, "Run it.\n");
    }

    #[test]
    fn lists_and_metadata() {
        let p = parse(
            "---\nname: a\ntags: \"[one, 'two']\"\nmetadata:\n  hermes:\n    tags: [x, y]\n    requires_toolsets: terminal\n---\nb\n",
        );
        assert_eq!(list_field(p.fields.get("tags")), ["one", "two"]);
        assert_eq!(list_field(hermes_meta(&p.fields, "tags")), ["x", "y"]);
        assert_eq!(
            list_field(hermes_meta(&p.fields, "requires_toolsets")),
            ["terminal"]
        );
    }

    #[test]
    fn validation_says_what_to_fix() {
        let ok = "---\nname: a\ndescription: Does a.\n---\n\nStep 1.\n";
        assert!(validate(ok).is_ok());
        let cases = [
            ("", "empty"),
            ("# no frontmatter\n", "must start with YAML frontmatter"),
            ("---\nname: a\n", "not closed"),
            ("---\nname: a\n---\nbody\n", "needs a `description`"),
            (
                "---\nname: a\ndescription: \"\"\n---\nbody\n",
                "`description` is empty",
            ),
            (
                "---\nname: a\ndescription: x: y\n---\nbody\n",
                "not valid YAML",
            ),
            (
                "---\nname: a\ndescription: d\n---\n\n",
                "needs instructions",
            ),
            ("---\n- a\n---\nbody\n", "must be a mapping"),
        ];
        for (text, want) in cases {
            let err = validate(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
