//! Saving one `section.key` setting (`display.skin`, `agent.reasoning_effort`) into
//! `config.yaml` as a text edit, so the user's comments, order and quoting survive: the `key:`
//! line under a block-style `section:` is replaced or added, or the section is appended. The
//! result is parsed again and must differ from the original only in that setting; otherwise the
//! file is left untouched and the reason returned.

use std::path::Path;

use serde_json::Value;

/// Sets `display.skin` to `name` in the YAML file at `path` (created when missing).
pub fn set_display_skin(path: &Path, name: &str) -> Result<(), String> {
    set_setting(path, "display", "skin", &Value::String(name.into()))
}

/// Sets `section.key` to `value` (a string, written quoted, or a boolean or number) in the
/// YAML file at `path` (created when missing).
pub fn set_setting(path: &Path, section: &str, key: &str, value: &Value) -> Result<(), String> {
    let written = match value {
        Value::String(name) => {
            if name.is_empty() || name.contains(['\n', '"', '\\']) {
                return Err(format!("`{name}` cannot be written as {section}.{key}"));
            }
            format!("\"{name}\"")
        }
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        other => return Err(format!("{other} cannot be written as {section}.{key}")),
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let before = parse(&text).map_err(|e| format!("{} is not valid YAML: {e}", path.display()))?;
    if !(before.is_object() || before.is_null()) {
        return Err(format!("{} is not a mapping of settings", path.display()));
    }
    let updated = edit(&text, section, key, &written).ok_or_else(|| {
        format!(
            "`{section}` is written in a form this editor does not change; set {section}.{key} by hand"
        )
    })?;
    let after = parse(&updated)
        .map_err(|_| "the edit would break config.yaml; it was left unchanged".to_string())?;
    let mut expected = if before.is_null() {
        Value::Object(Default::default())
    } else {
        before
    };
    if let Some(map) = expected.as_object_mut() {
        let entry = map
            .entry(section)
            .or_insert_with(|| Value::Object(Default::default()));
        if entry.is_null() {
            *entry = Value::Object(Default::default());
        }
        if let Some(d) = entry.as_object_mut() {
            d.insert(key.into(), value.clone());
        }
    }
    if after != expected {
        return Err(format!(
            "the edit would change more than {section}.{key}; config.yaml was left unchanged"
        ));
    }
    hermes_config::atomic_write(path, updated.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn parse(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_saphyr::from_str::<Value>(text)
        .map_err(|e| e.to_string().lines().next().unwrap_or_default().to_string())
}

/// The text with `section.key` set; `None` when `section` is not a block mapping.
fn edit(text: &str, section: &str, key: &str, value: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines
        .iter()
        .position(|l| top_level_key(l) == Some(section) && !l.starts_with([' ', '\t']))
    else {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("{section}:\n  {key}: {value}\n"));
        return Some(out);
    };
    let rest = lines[start][section.len() + 1..].trim();
    if !(rest.is_empty() || rest.starts_with('#')) {
        return None;
    }
    // The section's lines: indented (or blank / comment) until the next top-level key.
    let end = lines[start + 1..]
        .iter()
        .position(|l| !l.trim().is_empty() && !l.starts_with([' ', '\t']) && !l.starts_with('#'))
        .map_or(lines.len(), |i| start + 1 + i);
    let body = &lines[start + 1..end];
    let indent = body
        .iter()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| &l[..l.len() - l.trim_start().len()])
        .unwrap_or("  ")
        .to_string();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    match body.iter().position(|l| {
        l.strip_prefix(indent.as_str())
            .is_some_and(|r| !r.starts_with([' ', '\t']) && top_level_key(r) == Some(key))
    }) {
        Some(i) => {
            // A comment after the old value stays.
            let old = body[i];
            let comment = old
                .find(" #")
                .map(|c| &old[old[..c].trim_end().len()..])
                .unwrap_or("");
            out[start + 1 + i] = format!("{indent}{key}: {value}{comment}");
        }
        None => out.insert(start + 1, format!("{indent}{key}: {value}")),
    }
    let mut joined = out.join("\n");
    joined.push('\n');
    Some(joined)
}

/// `key` of a `key: value` line.
fn top_level_key(line: &str) -> Option<&str> {
    let (key, _) = line.split_once(':')?;
    let key = key.trim();
    (!key.is_empty() && !key.contains(' ')).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(initial: Option<&str>, name: &str) -> (Result<(), String>, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        if let Some(t) = initial {
            std::fs::write(&path, t).unwrap();
        }
        let r = set_display_skin(&path, name);
        (r, std::fs::read_to_string(&path).unwrap_or_default())
    }

    #[test]
    fn adds_replaces_and_keeps_comments() {
        assert_eq!(run(None, "mono").1, "display:\n  skin: \"mono\"\n");
        let (r, text) = run(Some("# mine\nmodel:\n  default: x\n"), "mono");
        assert!(r.is_ok());
        assert_eq!(
            text,
            "# mine\nmodel:\n  default: x\ndisplay:\n  skin: \"mono\"\n"
        );
        let (r, text) = run(
            Some(
                "display:\n    compact: true\n    skin: default  # the look\nagent:\n  max_turns: 3\n",
            ),
            "ares",
        );
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(
            text,
            "display:\n    compact: true\n    skin: \"ares\"  # the look\nagent:\n  max_turns: 3\n"
        );
    }

    #[test]
    fn refuses_what_it_cannot_edit_safely() {
        let (r, text) = run(Some("display: {skin: a}\n"), "mono");
        assert!(r.is_err());
        assert_eq!(text, "display: {skin: a}\n", "untouched");
        assert!(run(Some("- a list\n"), "mono").0.is_err());
        assert!(run(Some("x: [unclosed\n"), "mono").0.is_err());
        assert!(run(None, "bad\"name").0.is_err());
    }

    #[test]
    fn any_section_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "agent:\n  max_turns: 3  # few\nagents_extra: 1\n").unwrap();
        set_setting(&path, "agent", "reasoning_effort", &"high".into()).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "agent:\n  reasoning_effort: \"high\"\n  max_turns: 3  # few\nagents_extra: 1\n"
        );
        set_setting(&path, "agent", "reasoning_effort", &"none".into()).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .starts_with("agent:\n  reasoning_effort: \"none\"\n  max_turns")
        );
        set_setting(&path, "display", "show_reasoning", &Value::Bool(false)).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .ends_with("agents_extra: 1\ndisplay:\n  show_reasoning: false\n")
        );
    }
}
