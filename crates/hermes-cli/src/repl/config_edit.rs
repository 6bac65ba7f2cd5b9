//! Saving one `section.key` setting from the chat (`/skin` as `display.skin`, `/reasoning
//! --global` as `agent.reasoning_effort` / `display.show_reasoning`) into `config.yaml`. A thin
//! wrapper over hermes-config's text editor ([`hermes_config::edit`]), so the user's comments,
//! order and quoting survive and an edit it cannot make safely leaves the file untouched; strings
//! are written double-quoted, as the Python Hermes does for these settings.

use std::path::Path;

use hermes_config::edit::{self, Quoting};
use serde_json::Value;

/// Sets `display.skin` to `name` in the YAML file at `path` (created when missing). Skin names
/// are file names (`skins/NAME.yaml`): empty names, quotes, backslashes and line breaks are
/// refused.
pub fn set_display_skin(path: &Path, name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains(['\n', '\r', '"', '\\']) {
        return Err(format!("`{name}` cannot be written as display.skin"));
    }
    set_setting(path, "display", "skin", &Value::String(name.into()))
}

/// Sets `section.key` to `value` in the YAML file at `path` (created when missing).
pub fn set_setting(path: &Path, section: &str, key: &str, value: &Value) -> Result<(), String> {
    edit::set_with(path, &format!("{section}.{key}"), value, Quoting::Always)
        .map_err(|e| e.to_string())
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
        assert!(r.unwrap_err().contains("flow style"));
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
            "agent:\n  max_turns: 3  # few\n  reasoning_effort: \"high\"\nagents_extra: 1\n"
        );
        set_setting(&path, "agent", "reasoning_effort", &"none".into()).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "agent:\n  max_turns: 3  # few\n  reasoning_effort: \"none\"\nagents_extra: 1\n"
        );
        set_setting(&path, "display", "show_reasoning", &Value::Bool(false)).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .ends_with("agents_extra: 1\ndisplay:\n  show_reasoning: false\n")
        );
    }
}
