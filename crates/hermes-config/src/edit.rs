//! Editing `config.yaml` as text, so the user's comments, blank lines, key order and quoting
//! survive: [`add_to_list`] appends one item to a top-level list (block or flow style, created
//! when absent). The edited text is parsed again before it is written (atomically); an edit
//! that would change anything else, or produce invalid YAML, is refused and the file is left
//! as it was.

use std::path::Path;

use serde_json::Value;

use crate::{ConfigError, atomic_write, yaml};

/// Adds `item` to the top-level list `key` of the YAML file at `path` (created if missing).
/// Returns `false` when the item was already there.
pub fn add_to_list(path: &Path, key: &str, item: &str) -> Result<bool, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(_) if path.is_dir() => {
            return Err(ConfigError::IsDirectory {
                path: path.to_path_buf(),
            });
        }
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
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
