//! Editing `config.yaml` as text, so the user's comments, blank lines, key order and quoting
//! survive. [`set`] / [`unset`] change one dotted path (`auxiliary.compression.model`): the
//! nested block mappings are found by indentation, the key's line is replaced (a comment after
//! the old value stays), inserted at the end of its section, or removed, and missing sections
//! are created (the file too). [`add_to_list`] appends one item to a top-level list (block or
//! flow style, created when absent).
//!
//! What is written: strings plain when YAML (including the Python Hermes's YAML 1.1 reader,
//! where `yes` and `1:20` are not strings) reads them back unchanged, else quoted; booleans,
//! numbers and null bare; lists and mappings in flow style (`[a, b]`, `{k: v}`). A section
//! written in flow style (`display: {skin: a}`) or holding a single value is refused rather
//! than rewritten. Every edit is checked before it is written (atomically): the new text is
//! parsed again and must be the old document with exactly that change, else nothing is written.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{ConfigError, atomic_write, yaml};

/// Adds `item` to the top-level list `key` of the YAML file at `path` (created if missing).
/// Returns `false` when the item was already there.
pub fn add_to_list(path: &Path, key: &str, item: &str) -> Result<bool, ConfigError> {
    let text = read_text(path)?.unwrap_or_default();
    let before = yaml::parse(path, &text)?;
    let invalid = |message: &str| ConfigError::Invalid {
        path: path.to_path_buf(),
        key: key.to_string(),
        message: message.to_string(),
    };
    if !(before.is_object() || before.is_null()) {
        return Err(invalid("the file is not a mapping of settings"));
    }
    match before.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if items.iter().any(|v| v.as_str() == Some(item)) {
                return Ok(false);
            }
        }
        Some(_) => return Err(invalid("expected a list")),
    }
    let updated = insert_item(&text, key, item).ok_or_else(|| {
        invalid("the list is written in a form this editor does not change (multi-line flow list); edit it by hand")
    })?;
    let after = yaml::parse(path, &updated)
        .map_err(|_| invalid("the edit would make the file invalid; it was left unchanged"))?;
    if !only_item_added(&before, &after, key, item) {
        return Err(invalid(
            "the edit would change more than the list; the file was left unchanged",
        ));
    }
    atomic_write(path, updated.as_bytes()).map_err(|source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(true)
}

/// Whether `after` is `before` with `item` appended to the list `key`.
fn only_item_added(before: &Value, after: &Value, key: &str, item: &str) -> bool {
    let mut expected = match before {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    let mut list = match expected.get(key) {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    list.push(Value::String(item.to_string()));
    expected.insert(key.to_string(), Value::Array(list));
    match after {
        Value::Object(map) => *map == expected,
        _ => false,
    }
}

/// The text with `item` added to the list `key`; `None` when the list's form is not handled.
fn insert_item(text: &str, key: &str, item: &str) -> Option<String> {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let quoted = serde_json::to_string(item).ok()?;
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let Some(k) = lines.iter().position(|l| key_value(l, key).is_some()) else {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(newline);
        }
        out.push_str(&format!("{key}:{newline}  - {quoted}{newline}"));
        return Some(out);
    };
    let value = key_value(&lines[k], key)?;
    let (value, comment) = split_comment(&value);
    let value = value.trim();
    if value.starts_with('[') {
        let inner = value.strip_prefix('[')?.strip_suffix(']')?;
        let list = if inner.trim().is_empty() {
            format!("[{quoted}]")
        } else {
            format!("[{}, {quoted}]", inner.trim_end())
        };
        lines[k] = format!("{key}: {list}{}{newline}", spaced(&comment));
        return Some(lines.concat());
    }
    if matches!(value, "null" | "~" | "Null" | "NULL") {
        lines[k] = format!("{key}:{}{newline}", spaced(&comment));
    } else if !value.is_empty() {
        return None;
    }
    // A block list (possibly empty) follows: find its items and where it ends.
    let mut last_content = k;
    let mut indent: Option<String> = None;
    for (j, line) in lines.iter().enumerate().skip(k + 1) {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let at_column_zero = !line.starts_with([' ', '\t']);
        if at_column_zero && !trimmed.starts_with('-') {
            break;
        }
        if trimmed.starts_with('-') && indent.is_none() {
            let lead = &line[..line.len() - line.trim_start().len()];
            indent = Some(format!("{lead}- "));
        }
        last_content = j;
    }
    if !lines[last_content].ends_with('\n') {
        lines[last_content].push_str(newline);
    }
    let indent = indent.unwrap_or_else(|| "  - ".to_string());
    lines.insert(last_content + 1, format!("{indent}{quoted}{newline}"));
    Some(lines.concat())
}

/// The value text of `key: value` when `line` is that top-level key.
fn key_value(line: &str, key: &str) -> Option<String> {
    let line = line.trim_end_matches(['\n', '\r']);
    let rest = line.strip_prefix(key)?;
    let rest = rest.trim_start_matches([' ', '\t']).strip_prefix(':')?;
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then(|| rest.to_string())
}

/// Splits `value # comment` outside quotes.
fn split_comment(value: &str) -> (String, String) {
    let (mut single, mut double) = (false, false);
    for (i, c) in value.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && (i == 0 || value[..i].ends_with([' ', '\t'])) => {
                return (value[..i].to_string(), value[i..].to_string());
            }
            _ => {}
        }
    }
    (value.to_string(), String::new())
}

fn spaced(comment: &str) -> String {
    if comment.is_empty() {
        String::new()
    } else {
        format!(" {comment}")
    }
}

/// How [`set_with`] writes string values (a value that replaces a quoted one keeps its quotes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Quoting {
    /// Plain when every YAML reader reads it back as the same string, else double-quoted.
    #[default]
    Minimal,
    /// Always double-quoted.
    Always,
}

/// Why an edit was not made. The file is untouched in every case.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The file cannot be read, parsed (with line and column) or written.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The edit is not one this editor makes safely.
    #[error("{path}: cannot change `{key}`: {reason}; the file was left unchanged")]
    Refused {
        path: PathBuf,
        key: String,
        reason: String,
    },
}

/// Sets the dotted `key` (`model.default`) to `value` in the YAML file at `path`, creating
/// missing sections and the file.
pub fn set(path: &Path, key: &str, value: &Value) -> Result<(), EditError> {
    set_with(path, key, value, Quoting::Minimal)
}

/// [`set`], choosing how strings are quoted.
pub fn set_with(path: &Path, key: &str, value: &Value, quoting: Quoting) -> Result<(), EditError> {
    let parts = key_path(path, key)?;
    let text = read_text(path)?.unwrap_or_default();
    let before = mapping(path, key, &text)?;
    let mut doc = Doc::new(&text);
    doc.set(&parts, value, quoting)
        .map_err(|reason| refused(path, key, reason))?;
    let mut expected = before;
    set_in(&mut expected, &parts, value.clone());
    commit(path, key, &text, &doc.render(), expected)
}

/// Removes the dotted `key` from the YAML file at `path`, and the sections it leaves empty.
/// Returns `false` when the key was not set.
pub fn unset(path: &Path, key: &str) -> Result<bool, EditError> {
    let parts = key_path(path, key)?;
    let Some(text) = read_text(path)? else {
        return Ok(false);
    };
    let before = mapping(path, key, &text)?;
    let mut doc = Doc::new(&text);
    if !doc
        .unset(&parts)
        .map_err(|reason| refused(path, key, reason))?
    {
        return Ok(false);
    }
    let mut expected = before;
    if !unset_in(&mut expected, &parts) {
        return Err(refused(
            path,
            key,
            "the key is not where the file's indentation puts it".into(),
        ));
    }
    commit(path, key, &text, &doc.render(), expected)?;
    Ok(true)
}

/// `value` as YAML on one line: scalars as [`set`] writes them, lists and mappings in flow style.
pub fn to_flow(value: &Value) -> String {
    format_value(value, Quoting::Minimal, Quote::None, false)
}

/// Whether `s` can be written as a plain (unquoted) YAML scalar that every reader, including
/// YAML 1.1 ones (`yes`, `on`, `1:20`, `0x1F` are not strings there), reads back as `s`.
/// `in_flow` also excludes the characters that end an item in `[..]` or `{..}`.
pub fn is_plain_safe(s: &str, in_flow: bool) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if s != s.trim()
        || s.chars()
            .any(|c| c.is_control() || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}'))
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || (in_flow && s.contains([',', '[', ']', '{', '}']))
    {
        return false;
    }
    const SPECIAL: &[&str] = &[
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", "<<", "=",
    ];
    if SPECIAL.contains(&s.to_ascii_lowercase().as_str()) {
        return false;
    }
    // Numbers in any YAML version: decimal, octal, hex, binary, sexagesimal, with `_`.
    let starts_numeric = first.is_ascii_digit()
        || (matches!(first, '+' | '.') && s[1..].starts_with(|c: char| c.is_ascii_digit()));
    if starts_numeric
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() || "xXoObB_.:+-eE".contains(c))
    {
        return false;
    }
    let mut probe = Map::new();
    probe.insert("k".into(), Value::String(s.to_string()));
    serde_saphyr::from_str::<Value>(&format!("k: {s}\n")).ok() == Some(Value::Object(probe))
}

fn refused(path: &Path, key: &str, reason: String) -> EditError {
    EditError::Refused {
        path: path.to_path_buf(),
        key: key.to_string(),
        reason,
    }
}

/// The parts of a dotted key path; empty parts and surrounding spaces are refused.
fn key_path<'a>(path: &Path, key: &'a str) -> Result<Vec<&'a str>, EditError> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty() || p.trim() != *p) {
        return Err(refused(
            path,
            key,
            "not a key path (names separated by dots, like model.default)".into(),
        ));
    }
    Ok(parts)
}

/// The file's text; `None` when it does not exist.
fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(_) if path.is_dir() => Err(ConfigError::IsDirectory {
            path: path.to_path_buf(),
        }),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The document as a mapping (an empty document is an empty mapping).
fn mapping(path: &Path, key: &str, text: &str) -> Result<Value, EditError> {
    match yaml::parse(path, text)? {
        Value::Null => Ok(Value::Object(Map::new())),
        v @ Value::Object(_) => Ok(v),
        _ => Err(refused(
            path,
            key,
            "the file is not a mapping of settings".into(),
        )),
    }
}

/// Writes `updated` when it parses to exactly `expected`.
fn commit(
    path: &Path,
    key: &str,
    original: &str,
    updated: &str,
    expected: Value,
) -> Result<(), EditError> {
    let after = yaml::parse(path, updated).map_err(|_| {
        refused(
            path,
            key,
            "the edit would make the file invalid YAML".into(),
        )
    })?;
    let after = match after {
        Value::Null => Value::Object(Map::new()),
        v => v,
    };
    if after != expected {
        return Err(refused(
            path,
            key,
            "the edit would change more than this key (anchors, aliases or an unusual layout); edit the file by hand".into(),
        ));
    }
    if updated == original && path.exists() {
        return Ok(());
    }
    atomic_write(path, updated.as_bytes()).map_err(|source| {
        EditError::Config(ConfigError::Write {
            path: path.to_path_buf(),
            source,
        })
    })
}

/// `value` at `parts` in `root`, creating (or replacing null with) mappings on the way.
fn set_in(root: &mut Value, parts: &[&str], value: Value) {
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut node = root;
    for part in parents {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        let Value::Object(map) = node else { return };
        node = map.entry(part.to_string()).or_insert(Value::Null);
    }
    if !node.is_object() {
        *node = Value::Object(Map::new());
    }
    if let Value::Object(map) = node {
        map.insert(last.to_string(), value);
    }
}

/// Removes `parts` from `root`, then the mappings that removal left empty. `false` when absent.
fn unset_in(root: &mut Value, parts: &[&str]) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return false;
    };
    let Value::Object(map) = root else {
        return false;
    };
    if rest.is_empty() {
        return map.remove(*first).is_some();
    }
    let Some(child) = map.get_mut(*first) else {
        return false;
    };
    if !unset_in(child, rest) {
        return false;
    }
    if child.as_object().is_some_and(Map::is_empty) {
        map.remove(*first);
    }
    true
}

/// The quotes of the value being replaced, kept for the new string.
mod text;
use text::*;
pub use text::{LineKey, parse_key_line};

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(initial: Option<&str>, item: &str) -> (Result<bool, ConfigError>, String) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.yaml");
        if let Some(text) = initial {
            std::fs::write(&path, text).unwrap();
        }
        let r = add_to_list(&path, "command_allowlist", item);
        (r, std::fs::read_to_string(&path).unwrap_or_default())
    }

    #[test]
    fn appends_to_a_block_list_keeping_comments_and_order() {
        let initial = "# my settings\nmodel:\n  default: x # main\n\ncommand_allowlist:\n  # approved by me\n  - recursive delete\n\n# terminal next\nterminal:\n  timeout: 60\n";
        let (r, text) = edit(Some(initial), "SQL DROP");
        assert!(r.unwrap());
        assert_eq!(
            text,
            "# my settings\nmodel:\n  default: x # main\n\ncommand_allowlist:\n  # approved by me\n  - recursive delete\n  - \"SQL DROP\"\n\n# terminal next\nterminal:\n  timeout: 60\n"
        );
        let (r, again) = edit(Some(&text), "SQL DROP");
        assert!(!r.unwrap());
        assert_eq!(again, text);
    }

    #[test]
    fn column_zero_items_flow_lists_null_and_absent_keys() {
        let (_, t) = edit(Some("command_allowlist:\n- a\nx: 1\n"), "b");
        assert_eq!(t, "command_allowlist:\n- a\n- \"b\"\nx: 1\n");
        let (_, t) = edit(Some("command_allowlist: [a, 'b c']  # flow\nx: 1\n"), "d");
        assert_eq!(t, "command_allowlist: [a, 'b c', \"d\"] # flow\nx: 1\n");
        let (_, t) = edit(Some("command_allowlist: []\n"), "d");
        assert_eq!(t, "command_allowlist: [\"d\"]\n");
        let (_, t) = edit(Some("command_allowlist: ~ # none yet\nx: 1"), "d");
        assert_eq!(t, "command_allowlist: # none yet\n  - \"d\"\nx: 1");
        let (_, t) = edit(Some("model:\n  default: x"), "quote \" and \\ kept");
        assert_eq!(
            t,
            "model:\n  default: x\ncommand_allowlist:\n  - \"quote \\\" and \\\\ kept\"\n"
        );
        let (_, t) = edit(None, "a");
        assert_eq!(t, "command_allowlist:\n  - \"a\"\n");
        let (_, t) = edit(Some("command_allowlist:\n\nx: 1\n"), "a");
        assert_eq!(t, "command_allowlist:\n  - \"a\"\n\nx: 1\n");
    }

    #[test]
    fn refuses_what_it_cannot_edit_safely() {
        let (r, t) = edit(Some("command_allowlist: 3\n"), "a");
        assert!(r.unwrap_err().to_string().contains("expected a list"));
        assert_eq!(t, "command_allowlist: 3\n");
        let (r, _) = edit(Some("command_allowlist: [a,\n  b]\n"), "c");
        assert!(r.is_err());
        let (r, t) = edit(Some("model: [oops\n"), "a");
        assert!(r.is_err());
        assert_eq!(t, "model: [oops\n");
    }
}

#[cfg(test)]
mod set_unset_tests {
    use serde_json::json;

    use super::*;

    /// Sets `key` in a file holding `initial` (none: no file); the result and the text after.
    fn set_text(initial: Option<&str>, key: &str, value: Value) -> (Result<(), EditError>, String) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.yaml");
        if let Some(text) = initial {
            std::fs::write(&path, text).unwrap();
        }
        let r = set(&path, key, &value);
        (r, std::fs::read_to_string(&path).unwrap_or_default())
    }

    fn set_ok(initial: &str, key: &str, value: Value) -> String {
        let (r, text) = set_text(Some(initial), key, value);
        r.unwrap();
        text
    }

    fn unset_text(initial: &str, key: &str) -> (Result<bool, EditError>, String) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.yaml");
        std::fs::write(&path, initial).unwrap();
        let r = unset(&path, key);
        (r, std::fs::read_to_string(&path).unwrap())
    }

    const COMMENTED: &str = "# My settings\nmodel:\n  provider: openrouter   # main one\n  default: anthropic/claude-sonnet-4.5\n\n# the loop\nagent:\n  max_turns: 90 # model calls\n  reasoning_effort: ''\ntoolsets: [hermes-cli]\n";

    #[test]
    fn replaces_a_value_keeping_everything_else_byte_for_byte() {
        let text = set_ok(COMMENTED, "model.default", json!("gpt-5.1"));
        assert_eq!(
            text,
            COMMENTED.replace("default: anthropic/claude-sonnet-4.5", "default: gpt-5.1")
        );
        let text = set_ok(COMMENTED, "model.provider", json!("openai"));
        assert_eq!(
            text,
            COMMENTED.replace("provider: openrouter   #", "provider: openai   #")
        );
        let text = set_ok(COMMENTED, "agent.max_turns", json!(1));
        assert_eq!(text, COMMENTED.replace("max_turns: 90 #", "max_turns: 1 #"));
        // The same value again changes nothing.
        assert_eq!(set_ok(&text, "agent.max_turns", json!(1)), text);
        // A quoted value keeps its quotes.
        let text = set_ok(COMMENTED, "agent.reasoning_effort", json!("it's high"));
        assert!(
            text.contains("  reasoning_effort: 'it''s high'\n"),
            "{text}"
        );
        let text = set_ok("a: \"x # not a comment\"  # real\n", "a", json!("y"));
        assert_eq!(text, "a: \"y\"  # real\n");
        let text = set_ok("a: don't # really\n", "a", json!("do"));
        assert_eq!(text, "a: do # really\n");
    }

    #[test]
    fn inserts_keys_and_creates_missing_sections_at_the_end_of_their_section() {
        let text = set_ok(
            COMMENTED,
            "model.base_url",
            json!("http://localhost:8080/v1"),
        );
        assert_eq!(
            text,
            COMMENTED.replace(
                "claude-sonnet-4.5\n",
                "claude-sonnet-4.5\n  base_url: http://localhost:8080/v1\n"
            )
        );
        let initial =
            "auxiliary:\n  vision:\n    model: a   # for images\n# compression next\nother: 1\n";
        assert_eq!(
            set_ok(initial, "auxiliary.compression.model", json!("b")),
            "auxiliary:\n  vision:\n    model: a   # for images\n  compression:\n    model: b\n# compression next\nother: 1\n"
        );
        assert_eq!(
            set_ok("x: 1", "a.b.c", json!(true)),
            "x: 1\na:\n  b:\n    c: true\n"
        );
        let (r, text) = set_text(None, "auxiliary.compression.model", json!("m"));
        r.unwrap();
        assert_eq!(text, "auxiliary:\n  compression:\n    model: m\n");
        // The file's own indentation step is used.
        assert_eq!(
            set_ok("model:\n    default: x\n", "agent.max_turns", json!(3)),
            "model:\n    default: x\nagent:\n    max_turns: 3\n"
        );
        // Empty and null sections get their first key.
        assert_eq!(
            set_ok("display:\nx: 1\n", "display.skin", json!("mono")),
            "display:\n  skin: mono\nx: 1\n"
        );
        assert_eq!(
            set_ok(
                "display: ~ # none yet\nx: 1\n",
                "display.skin",
                json!("mono")
            ),
            "display: # none yet\n  skin: mono\nx: 1\n"
        );
        assert_eq!(
            set_ok("# only a comment\n", "a", json!(1)),
            "# only a comment\na: 1\n"
        );
    }

    #[test]
    fn writes_each_type_so_it_reads_back_as_that_type() {
        let cases: Vec<(Value, &str)> = vec![
            (json!("gpt-5.1"), "gpt-5.1"),
            (
                json!("anthropic/claude-sonnet-4.5"),
                "anthropic/claude-sonnet-4.5",
            ),
            (json!("true"), "\"true\""),
            (json!("yes"), "\"yes\""),
            (json!("Off"), "\"Off\""),
            (json!("3"), "\"3\""),
            (json!("0.5"), "\"0.5\""),
            (json!("1:20"), "\"1:20\""),
            (json!("0x1F"), "\"0x1F\""),
            (json!("4o"), "\"4o\""),
            (json!("null"), "\"null\""),
            (json!("~"), "\"~\""),
            (json!(""), "\"\""),
            (json!("a: b"), "\"a: b\""),
            (json!("x #y"), "\"x #y\""),
            (json!("#x"), "\"#x\""),
            (json!("-x"), "\"-x\""),
            (json!(" padded"), "\" padded\""),
            (json!("two\nlines"), "\"two\\nlines\""),
            (json!("say \"hi\""), "say \"hi\""),
            (json!("a#b"), "a#b"),
            (json!(".inf"), "\".inf\""),
            (json!(true), "true"),
            (json!(false), "false"),
            (json!(3), "3"),
            (json!(-2), "-2"),
            (json!(0.5), "0.5"),
            (json!(null), "null"),
            (json!(["a", "b c", "1", "x,y"]), "[a, b c, \"1\", \"x,y\"]"),
            (json!([]), "[]"),
            (json!({"k": "v", "m": 2}), "{k: v, m: 2}"),
            (json!({"n": 1}), "{\"n\": 1}"),
            (json!({"a b": [true]}), "{a b: [true]}"),
        ];
        for (value, written) in cases {
            let text = set_ok("x: 1\n", "x", value.clone());
            assert_eq!(text, format!("x: {written}\n"), "{value}");
            let parsed = serde_saphyr::from_str::<Value>(&text).unwrap();
            assert_eq!(parsed["x"], value, "{text}");
        }
    }

    #[test]
    fn replaces_values_that_span_lines() {
        let initial = "model:\n  provider: custom\n  default: x\nprompt: |\n  line one\n  line two\nlist: [a,\n  b]\nafter: 1\n";
        assert_eq!(
            set_ok(initial, "model", json!("gpt-5.1")),
            "model: gpt-5.1\nprompt: |\n  line one\n  line two\nlist: [a,\n  b]\nafter: 1\n"
        );
        assert_eq!(
            set_ok(initial, "prompt", json!("short")),
            "model:\n  provider: custom\n  default: x\nprompt: short\nlist: [a,\n  b]\nafter: 1\n"
        );
        assert_eq!(
            set_ok(initial, "list", json!(["c"])),
            "model:\n  provider: custom\n  default: x\nprompt: |\n  line one\n  line two\nlist: [c]\nafter: 1\n"
        );
        // A list at the key's own column is part of its value.
        assert_eq!(
            set_ok(
                "command_allowlist:\n- a\n- b\nx: 1\n",
                "command_allowlist",
                json!(["c"])
            ),
            "command_allowlist: [c]\nx: 1\n"
        );
    }

    #[test]
    fn quoted_keys_crlf_and_a_missing_final_newline() {
        assert_eq!(
            set_ok("\"model\":\n  'default': x\n", "model.default", json!("z")),
            "\"model\":\n  'default': z\n"
        );
        assert_eq!(
            set_ok("a:\r\n  b: 1\r\nc: 2\r\n", "a.b", json!(5)),
            "a:\r\n  b: 5\r\nc: 2\r\n"
        );
        assert_eq!(set_ok("a: 1\nb: 2", "a", json!(3)), "a: 3\nb: 2");
        assert_eq!(set_ok("a: 1\nb: 2", "b", json!(3)), "a: 1\nb: 3\n");
        assert_eq!(
            set_ok(
                "agent:\n  max_turns: 3\nagents_extra: 1\n",
                "agent.x",
                json!(1)
            ),
            "agent:\n  max_turns: 3\n  x: 1\nagents_extra: 1\n"
        );
    }

    #[test]
    fn refuses_what_it_cannot_edit_safely_and_leaves_the_file_alone() {
        let refusals = [
            ("display: {skin: a}\n", "display.skin", "flow style"),
            (
                "display: {skin: a,\n  x: 1}\n",
                "display.skin",
                "flow style",
            ),
            ("model: gpt-5\n", "model.default", "single value"),
            (
                "custom_providers:\n  - name: a\n",
                "custom_providers.0",
                "is a list",
            ),
            ("toolsets: [a]\n", "toolsets.x", "is a list"),
            ("- a\n- b\n", "a", "not a mapping"),
            ("just text\n", "a", "not a mapping"),
            ("a: 1\n", "a..b", "not a key path"),
            ("a: 1\n", "", "not a key path"),
            ("a: 1\n", " a", "not a key path"),
        ];
        for (initial, key, why) in refusals {
            let (r, text) = set_text(Some(initial), key, json!("v"));
            let err = r.unwrap_err().to_string();
            assert!(err.contains(why), "{initial:?} {key}: {err}");
            assert!(err.contains("the file was left unchanged"), "{err}");
            assert_eq!(text, initial, "untouched");
        }
        let (r, text) = set_text(Some("model: [oops\n"), "a", json!(1));
        let err = r.unwrap_err().to_string();
        assert!(err.contains("config.yaml:"), "{err}");
        assert!(err.contains("invalid YAML"), "{err}");
        assert_eq!(text, "model: [oops\n");
    }

    #[test]
    fn an_edit_that_would_change_anything_else_is_not_written() {
        // `base.x` is shared through an alias: changing it would change `other` too.
        let initial = "base: &b\n  x: 1\nother: *b\n";
        let (r, text) = set_text(Some(initial), "base.x", json!(2));
        assert!(
            r.unwrap_err().to_string().contains("would change more"),
            "refused"
        );
        assert_eq!(text, initial);
    }

    #[test]
    fn unset_removes_the_key_and_sections_it_leaves_empty() {
        let (r, text) = unset_text(COMMENTED, "model.provider");
        assert!(r.unwrap());
        assert_eq!(
            text,
            COMMENTED.replace("  provider: openrouter   # main one\n", "")
        );
        let (r, text) = unset_text(
            "display:\n  # my look\n  skin: mono\nagent:\n  max_turns: 3\n",
            "display.skin",
        );
        assert!(r.unwrap());
        assert_eq!(text, "  # my look\nagent:\n  max_turns: 3\n");
        let (r, text) = unset_text("a:\n  b:\n    c: 1\n  d: 2\n", "a.b.c");
        assert!(r.unwrap());
        assert_eq!(text, "a:\n  d: 2\n");
        let (r, text) = unset_text("a: 1\nlist:\n  - x\n  - y\nprompt: |\n  text\n", "list");
        assert!(r.unwrap());
        assert_eq!(text, "a: 1\nprompt: |\n  text\n");
        let (r, text) = unset_text("a: 1\n", "a");
        assert!(r.unwrap());
        assert_eq!(text, "");
        for (initial, key) in [
            ("a: 1\n", "b"),
            ("a: 1\n", "a.b"),
            ("a:\n", "a.b"),
            ("a: ~\n", "a.b"),
            ("a:\n  b: 1\n", "a.c"),
        ] {
            let (r, text) = unset_text(initial, key);
            assert!(!r.unwrap(), "{initial:?} {key}");
            assert_eq!(text, initial);
        }
        let (r, text) = unset_text("display: {skin: a}\n", "display.skin");
        assert!(r.unwrap_err().to_string().contains("flow style"));
        assert_eq!(text, "display: {skin: a}\n");
        let tmp = tempfile::tempdir().unwrap();
        assert!(!unset(&tmp.path().join("none.yaml"), "a").unwrap());
    }

    #[test]
    fn plain_strings_are_only_those_every_reader_takes_as_strings() {
        for s in ["gpt-5.1", "mono", "a b", "x/y:z", "sk-or-v1-abc", "über"] {
            assert!(is_plain_safe(s, false), "{s}");
        }
        for s in [
            "", "yes", "NO", "3", "1e5", "+1", ".5", "a: b", "[a]", "*a", "&a", "!a",
        ] {
            assert!(!is_plain_safe(s, false), "{s}");
        }
        assert!(is_plain_safe("a,b", false));
        assert!(!is_plain_safe("a,b", true));
        assert_eq!(to_flow(&json!({"k": ["a", 1]})), "{k: [a, 1]}");
        let line = "  api_key:  sk-abc   # mine";
        let k = parse_key_line(line).unwrap();
        assert_eq!((k.key.as_str(), &line[k.value]), ("api_key", "sk-abc"));
        assert_eq!(parse_key_line("a:").unwrap().value, 2..2);
        assert_eq!(parse_key_line("- a: 1"), None);
    }
}
