//! Skins: how the interactive chat looks. A skin is YAML in `$HERMES_HOME/skins/<name>.yaml`
//! with the Python Hermes's keys (`name`, `description`, `colors`, `spinner` with
//! `waiting_faces` / `thinking_faces` / `thinking_verbs` / `wings`, `branding` with
//! `agent_name` / `welcome` / `goodbye` / `prompt_symbol` / `response_label` / `help_header`,
//! `tool_prefix`, `tool_emojis`); every key is optional and missing ones come from the built-in
//! `default` skin. A user file shadows a built-in of the same name. A file that cannot be read
//! or parsed never stops the chat: the built-in of that name (else `default`) is used and the
//! reason given as a warning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builtin_skins::{self, DEFAULT_THINKING_FACES, DEFAULT_VERBS, DEFAULT_WAITING_FACES};
use super::style::Rgb;

/// A complete skin: the built-in default with the skin's own values on top.
#[derive(Debug, Clone, PartialEq)]
pub struct Skin {
    pub name: String,
    pub description: String,
    pub colors: BTreeMap<String, String>,
    pub waiting_faces: Vec<String>,
    pub thinking_faces: Vec<String>,
    pub thinking_verbs: Vec<String>,
    /// Decorations drawn left and right of the spinner, cycled.
    pub wings: Vec<(String, String)>,
    pub branding: BTreeMap<String, String>,
    /// Starts every tool progress line.
    pub tool_prefix: String,
    /// Per-tool emoji overrides.
    pub tool_emojis: BTreeMap<String, String>,
}

/// Where a skin comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Builtin,
    User,
}

/// One entry of the skin listing.
#[derive(Debug, Clone, PartialEq)]
pub struct SkinInfo {
    pub name: String,
    pub description: String,
    pub source: Source,
    /// Why a user file cannot be used.
    pub broken: Option<String>,
}

/// A skin ready to use, and what the user should hear about how it was found.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub skin: Skin,
    pub warning: Option<String>,
}

impl Skin {
    /// The built-in `default` skin.
    pub fn default_skin() -> Skin {
        Skin::from_value(
            &builtin_skins::get("default").unwrap_or(Value::Null),
            "default",
        )
        .0
    }

    /// A colour of the skin (`banner_title`, `ui_ok`, ...) when it is set and valid.
    pub fn color(&self, key: &str) -> Option<Rgb> {
        self.colors.get(key).and_then(|c| Rgb::parse(c))
    }

    /// A branding string, falling back to `fallback` when the skin leaves it empty.
    pub fn brand<'a>(&'a self, key: &str, fallback: &'a str) -> &'a str {
        self.branding
            .get(key)
            .map(String::as_str)
            .filter(|s| !s.trim().is_empty())
            .unwrap_or(fallback)
    }

    pub fn agent_name(&self) -> &str {
        self.brand("agent_name", "Hermes Agent")
    }

    /// The prompt symbol as a bare token (the prompt adds the space).
    pub fn prompt_symbol(&self) -> &str {
        self.brand("prompt_symbol", "❯").trim()
    }

    /// The emoji for a tool: the skin's override, else the built-in one.
    pub fn tool_emoji(&self, tool: &str) -> &str {
        self.tool_emojis
            .get(tool)
            .map(String::as_str)
            .unwrap_or_else(|| builtin_skins::tool_emoji(tool))
    }

    /// Builds a skin from a parsed document over the default skin; also returns the warnings
    /// about sections of the wrong type (ignored, as in the Python Hermes).
    fn from_value(doc: &Value, fallback_name: &str) -> (Skin, Vec<String>) {
        let base = builtin_skins::get("default").unwrap_or(Value::Null);
        let mut warnings = Vec::new();
        let name = text(doc.get("name")).unwrap_or_else(|| fallback_name.to_string());
        let mut section = |key: &str| -> BTreeMap<String, String> {
            let mut merged = strings(base.get(key));
            match doc.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Object(_)) => merged.extend(strings(doc.get(key))),
                Some(_) => warnings.push(format!(
                    "skin `{name}`: `{key}` should be a mapping; it was ignored"
                )),
            }
            merged
        };
        let colors = section("colors");
        let branding = section("branding");
        let tool_emojis = section("tool_emojis");
        let spinner = match doc.get("spinner") {
            Some(v @ Value::Object(_)) => v.clone(),
            None | Some(Value::Null) => Value::Null,
            Some(_) => {
                warnings.push(format!(
                    "skin `{name}`: `spinner` should be a mapping; it was ignored"
                ));
                Value::Null
            }
        };
        let list = |key: &str, default: &[&str]| -> Vec<String> {
            let items: Vec<String> = match spinner.get(key) {
                Some(Value::Array(items)) => items.iter().filter_map(|v| text(Some(v))).collect(),
                _ => Vec::new(),
            };
            if items.is_empty() {
                default.iter().map(|s| s.to_string()).collect()
            } else {
                items
            }
        };
        let wings = match spinner.get("wings") {
            Some(Value::Array(pairs)) => pairs
                .iter()
                .filter_map(|p| match p.as_array().map(Vec::as_slice) {
                    Some([l, r]) => Some((text(Some(l))?, text(Some(r))?)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let skin = Skin {
            description: text(doc.get("description")).unwrap_or_default(),
            colors,
            waiting_faces: list("waiting_faces", DEFAULT_WAITING_FACES),
            thinking_faces: list("thinking_faces", DEFAULT_THINKING_FACES),
            thinking_verbs: list("thinking_verbs", DEFAULT_VERBS),
            wings,
            branding,
            tool_prefix: text(doc.get("tool_prefix"))
                .filter(|p| !p.trim().is_empty())
                .unwrap_or_else(|| "┊".into()),
            tool_emojis,
            name,
        };
        (skin, warnings)
    }
}

/// A scalar as text (numbers and booleans too: YAML users write `prompt_symbol: 1`).
fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn strings(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), text(Some(v))?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The user's skin file for `name`, if there is one.
fn user_file(dir: &Path, name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return None;
    }
    ["yaml", "yml"]
        .iter()
        .map(|ext| dir.join(format!("{name}.{ext}")))
        .find(|p| p.is_file())
}

/// Reads and parses a skin file.
fn read_user_skin(path: &Path, name: &str) -> Result<(Skin, Vec<String>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let doc: Value = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_saphyr::from_str(&text)
            .map_err(|e| format!("invalid YAML: {}", first_line(&e.to_string())))?
    };
    if !doc.is_object() {
        return Err("it is not a mapping of skin settings".into());
    }
    Ok(Skin::from_value(&doc, name))
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_string()
}

/// The skin `name`: the user's file in `dir`, else the built-in. `Err` when neither exists.
/// A broken user file gives the built-in of that name (else `default`) with a warning.
pub fn load(dir: &Path, name: &str) -> Result<Loaded, String> {
    let name = name.trim();
    let builtin = || builtin_skins::get(name).map(|doc| Skin::from_value(&doc, name).0);
    if let Some(path) = user_file(dir, name) {
        return Ok(match read_user_skin(&path, name) {
            Ok((skin, warnings)) => Loaded {
                skin,
                warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
            },
            Err(why) => {
                let fallback = builtin().unwrap_or_else(Skin::default_skin);
                Loaded {
                    warning: Some(format!(
                        "skin file {} is broken ({why}); using the {} skin",
                        path.display(),
                        fallback.name
                    )),
                    skin: fallback,
                }
            }
        });
    }
    builtin()
        .map(|skin| Loaded {
            skin,
            warning: None,
        })
        .ok_or_else(|| {
            let names: Vec<String> = list(dir).into_iter().map(|s| s.name).collect();
            format!("no skin named `{name}` (available: {})", names.join(", "))
        })
}

/// The skin configured in `display.skin` (default `default`); never fails.
pub fn startup(dir: &Path, configured: Option<&str>) -> Loaded {
    let name = configured
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    load(dir, name).unwrap_or_else(|why| Loaded {
        skin: Skin::default_skin(),
        warning: Some(format!("display.skin: {why}; using the default skin")),
    })
}

/// `display.skin` from a parsed config.
pub fn configured_name(raw: &Value) -> Option<String> {
    text(raw.get("display")?.get("skin"))
}

/// Every skin: built-ins first, then user files (a user file shadowing a built-in replaces
/// its entry).
pub fn list(dir: &Path) -> Vec<SkinInfo> {
    let mut out: Vec<SkinInfo> = builtin_skins::NAMES
        .iter()
        .filter_map(|n| {
            let doc = builtin_skins::get(n)?;
            Some(SkinInfo {
                name: n.to_string(),
                description: text(doc.get("description")).unwrap_or_default(),
                source: Source::Builtin,
                broken: None,
            })
        })
        .collect();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    for path in files {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let info = match read_user_skin(&path, stem) {
            Ok((skin, _)) => SkinInfo {
                name: stem.to_string(),
                description: skin.description,
                source: Source::User,
                broken: None,
            },
            Err(why) => SkinInfo {
                name: stem.to_string(),
                description: String::new(),
                source: Source::User,
                broken: Some(why),
            },
        };
        out.retain(|s| s.name != info.name);
        out.push(info);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_skin_overrides_only_what_it_sets() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("neon.yaml"),
            "name: neon\ndescription: Bright\ncolors:\n  banner_title: \"#00ff00\"\nspinner:\n  waiting_faces: [\"(o_o)\"]\n  wings:\n    - [\"<\", \">\"]\nbranding:\n  prompt_symbol: \"λ\"\ntool_emojis:\n  terminal: \"$\"\n",
        )
        .unwrap();
        let loaded = load(dir.path(), "neon").unwrap();
        assert!(loaded.warning.is_none());
        let skin = loaded.skin;
        assert_eq!(skin.name, "neon");
        assert_eq!(skin.color("banner_title"), Some(Rgb(0, 255, 0)));
        assert_eq!(
            skin.color("ui_ok"),
            Skin::default_skin().color("ui_ok"),
            "inherited"
        );
        assert_eq!(skin.waiting_faces, vec!["(o_o)"]);
        assert_eq!(skin.wings, vec![("<".to_string(), ">".to_string())]);
        assert_eq!(skin.prompt_symbol(), "λ");
        assert_eq!(skin.agent_name(), "Hermes Agent");
        assert_eq!(skin.tool_emoji("terminal"), "$");
        assert_eq!(skin.tool_emoji("read_file"), "📖");
        assert!(
            list(dir.path())
                .iter()
                .any(|s| s.name == "neon" && s.source == Source::User)
        );
    }

    #[test]
    fn a_broken_skin_falls_back_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.yaml"), "colors: [unclosed\n").unwrap();
        let loaded = startup(dir.path(), Some("bad"));
        assert_eq!(loaded.skin.name, "default");
        let warning = loaded.warning.unwrap();
        assert!(warning.contains("bad.yaml is broken"), "{warning}");
        std::fs::write(dir.path().join("odd.yaml"), "colors: 3\n").unwrap();
        let odd = load(dir.path(), "odd").unwrap();
        assert_eq!(odd.skin.name, "odd");
        assert!(
            odd.warning
                .unwrap()
                .contains("`colors` should be a mapping")
        );
        let missing = startup(dir.path(), Some("nope"));
        assert_eq!(missing.skin.name, "default");
        assert!(missing.warning.unwrap().contains("no skin named `nope`"));
        assert!(load(dir.path(), "../etc/passwd").is_err());
    }

    #[test]
    fn builtins_are_listed_and_complete() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = list(dir.path()).into_iter().map(|s| s.name).collect();
        assert_eq!(names[0], "default");
        for name in &names {
            let skin = load(dir.path(), name).unwrap().skin;
            assert!(skin.color("banner_title").is_some(), "{name}");
            assert!(!skin.waiting_faces.is_empty() && !skin.thinking_verbs.is_empty());
        }
        assert_eq!(
            configured_name(&serde_json::json!({"display": {"skin": "mono"}})).as_deref(),
            Some("mono")
        );
    }
}
