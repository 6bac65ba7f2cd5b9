//! Skills: the agent's procedural memory. A skill is a folder holding `SKILL.md` (YAML
//! frontmatter with `name`, `description`, `version`, `platforms`,
//! `metadata.hermes.{tags, related_skills, requires_toolsets}`, then markdown instructions)
//! and optional `references/`, `templates/`, `scripts/` and `assets/`: the open Agent Skills
//! format, laid out as the Python Hermes lays it out in `$HERMES_HOME/skills/` (flat or in
//! category folders; `.archive/`, `.hub/` and other dot-folders are bookkeeping, never skills;
//! usage counts in `.usage.json`), so its skills work unchanged.
//!
//! Progressive disclosure: the system prompt carries only names and one-line descriptions
//! ([`index`]); `skill_view` loads a body or a supporting file when needed, `skill_manage`
//! creates and refines skills ([`tools`], [`manage`]), and `/skill-name` runs one
//! ([`invoke`]). [`loader`] finds and parses them ([`frontmatter`]); every body and file is
//! scanned by [`crate::injection`] before the model sees it. [`curator`] manages the agent's
//! skills over time; [`hub`] installs skills from outside, through its guard.

pub mod curator;
mod error;
pub mod frontmatter;
pub mod hub;
pub mod index;
pub mod invoke;
pub mod loader;
pub mod manage;
pub mod provenance;
pub mod tools;
pub mod usage;
pub mod view;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use hermes_config::{Config, HermesHome};
use serde_json::Value;

pub use curator::Curator;
pub use error::SkillError;
pub use frontmatter::FrontmatterError;
pub use index::SessionIndex;
pub use loader::{Availability, Loaded, Skill};
pub use provenance::{Origin, Provenance, State, Status};
pub use tools::{SkillManageTool, SkillViewTool, SkillsListTool};
pub use usage::Usage;

/// The longest description a skill may have (the Agent Skills limit).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The longest skill name.
pub const MAX_NAME_CHARS: usize = 64;
/// The largest SKILL.md (or text file) `skill_manage` writes, in characters.
pub const MAX_CONTENT_CHARS: usize = 100_000;
/// The largest supporting file `skill_manage` writes, in bytes.
pub const MAX_FILE_BYTES: usize = 1_048_576;
/// The folders of a skill that hold supporting files.
pub const SUPPORT_DIRS: [&str; 4] = ["references", "templates", "scripts", "assets"];

/// The `skills:` keys of config.yaml this build honours, read as leniently as the Python
/// Hermes reads them (a wrong type counts as unset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSettings {
    /// `skills.disabled`, plus `skills.platform_disabled.<platform>`: hidden everywhere.
    pub disabled: BTreeSet<String>,
    /// `skills.external_dirs`: more folders of skills, read after the home's (`~` and paths
    /// relative to the home resolved).
    pub external_dirs: Vec<PathBuf>,
    /// `skills.template_vars` (default on): `${HERMES_SKILL_DIR}` and `${HERMES_SESSION_ID}`
    /// in a skill's text are filled in when it is loaded.
    pub template_vars: bool,
}

impl Default for SkillSettings {
    fn default() -> Self {
        SkillSettings {
            disabled: BTreeSet::new(),
            external_dirs: Vec::new(),
            template_vars: true,
        }
    }
}

impl SkillSettings {
    /// The settings for `platform` (`cli`, `telegram`, ...) of a home's config.
    pub fn from_config(config: &Config, home: &Path, platform: &str) -> SkillSettings {
        let mut settings = SkillSettings::default();
        let Some(section) = config.raw.get("skills").filter(|v| v.is_object()) else {
            return settings;
        };
        settings.disabled = names(section.get("disabled")).into_iter().collect();
        if let Some(extra) = section
            .get("platform_disabled")
            .and_then(|p| p.get(platform))
        {
            settings.disabled.extend(names(Some(extra)));
        }
        let local = home.join("skills");
        for dir in names(section.get("external_dirs")) {
            let path = expand_dir(&dir, home);
            if path != local && !settings.external_dirs.contains(&path) {
                settings.external_dirs.push(path);
            }
        }
        if let Some(Value::Bool(on)) = section.get("template_vars") {
            settings.template_vars = *on;
        }
        settings
    }
}

/// A string or a list of strings (numbers too), trimmed, empty ones dropped.
fn names(value: Option<&Value>) -> Vec<String> {
    let one = |v: &Value| match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let list: Vec<String> = match value {
        Some(Value::Array(items)) => items.iter().filter_map(one).collect(),
        Some(v) => one(v).into_iter().collect(),
        None => Vec::new(),
    };
    list.into_iter().filter(|s| !s.is_empty()).collect()
}

/// `~/x` from `$HOME`; a relative path under the home.
fn expand_dir(dir: &str, home: &Path) -> PathBuf {
    let path = match dir.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from(dir), |h| PathBuf::from(h).join(rest)),
        None => PathBuf::from(dir),
    };
    if path.is_absolute() {
        path
    } else {
        home.join(path)
    }
}

/// The skills of one home: where they live, the settings that filter them, and where blocked
/// content is logged. Cheap to share; every read goes to the disk, so skills created or edited
/// during a session are seen at once.
#[derive(Debug, Clone)]
pub struct Library {
    root: PathBuf,
    settings: SkillSettings,
    security_log: Option<PathBuf>,
}

impl Library {
    /// Skills in `root` (nothing is logged).
    pub fn new(root: impl Into<PathBuf>, settings: SkillSettings) -> Library {
        Library {
            root: root.into(),
            settings,
            security_log: None,
        }
    }

    /// The skills of a home: `$HERMES_HOME/skills`, blocked content logged to
    /// `$HERMES_HOME/logs/security.log`.
    pub fn for_home(home: &HermesHome, settings: SkillSettings) -> Library {
        Library {
            root: home.join("skills"),
            settings,
            security_log: Some(home.join("logs").join("security.log")),
        }
    }

    /// The home's skills folder, where new skills are created.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn settings(&self) -> &SkillSettings {
        &self.settings
    }

    /// Every folder skills are read from: the home's first, then `skills.external_dirs`.
    pub fn roots(&self) -> Vec<&Path> {
        std::iter::once(self.root.as_path())
            .chain(self.settings.external_dirs.iter().map(PathBuf::as_path))
            .collect()
    }

    /// The usage sidecar (`skills/.usage.json`).
    pub fn usage(&self) -> Usage {
        Usage::new(&self.root)
    }

    /// Appends a line about blocked content to the security log (best effort).
    pub fn log_blocked(&self, line: &str) {
        let Some(path) = &self.security_log else {
            return;
        };
        let _ = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?;
                writeln!(file, "{} skills: {line}", crate::prompt::today())
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_config::Environment;

    fn settings(yaml: &str) -> SkillSettings {
        let env = Environment::isolated::<&str, &str>([]);
        let c = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        SkillSettings::from_config(&c, Path::new("/h"), "cli")
    }

    #[test]
    fn settings_read_the_python_keys_leniently() {
        assert_eq!(settings(""), SkillSettings::default());
        let s = settings(
            "skills:\n  disabled: [a, b]\n  platform_disabled:\n    cli: c\n    telegram: [d]\n  external_dirs: [shared, /abs/skills, /h/skills]\n  template_vars: false\n",
        );
        assert_eq!(
            s.disabled.iter().collect::<Vec<_>>(),
            ["a", "b", "c"],
            "telegram's list stays out"
        );
        assert_eq!(
            s.external_dirs,
            [PathBuf::from("/h/shared"), PathBuf::from("/abs/skills")],
            "the home's own folder is not external"
        );
        assert!(!s.template_vars);
        assert_eq!(settings("skills: true\n"), SkillSettings::default());
        assert_eq!(
            settings("skills:\n  disabled: 7\n").disabled,
            BTreeSet::from(["7".to_string()])
        );
    }
}
