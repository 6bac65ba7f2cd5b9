//! Where a skill came from and where it is in the curator's lifecycle, read the Python
//! Hermes's way: a skill is the agent's when its `.usage.json` record says
//! `created_by: "agent"` (or the older `agent_created: true`) and it was neither installed by
//! the skills hub (`skills/.hub/lock.json`) nor seeded from the bundled set
//! (`skills/.bundled_manifest`); everything else in the home is the user's. Only the agent's
//! skills are curated. The state is the record's `state` (`active` unless it says `stale` or
//! `archived`) and `pinned`. `hermes skills list` and `hermes curator` show both.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value, json};

/// Who wrote a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Written by the agent with `skill_manage`: the curator's to manage.
    Agent,
    /// Written by the user (or anything not recorded as the agent's).
    User,
    /// Installed by the skills hub.
    Hub,
    /// Seeded from the bundled skills.
    Bundled,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Agent => "agent",
            Origin::User => "user",
            Origin::Hub => "hub",
            Origin::Bundled => "bundled",
        }
    }
}

/// A skill's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Active,
    /// Unused for `curator.stale_after_days`.
    Stale,
    /// Moved to `skills/.archive/`.
    Archived,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Stale => "stale",
            State::Archived => "archived",
        }
    }

    /// The `state` of a record (anything unknown reads as active, as in the Python Hermes).
    pub fn of(record: Option<&Map<String, Value>>) -> State {
        match record.and_then(|r| r.get("state")).and_then(Value::as_str) {
            Some("stale") => State::Stale,
            Some("archived") => State::Archived,
            _ => State::Active,
        }
    }
}

/// One skill's origin and lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub origin: Origin,
    pub state: State,
    pub pinned: bool,
}

impl Status {
    /// `active`, `stale`, `archived`, with `, pinned` when pinned.
    pub fn state_label(&self) -> String {
        if self.pinned {
            format!("{}, pinned", self.state.as_str())
        } else {
            self.state.as_str().to_string()
        }
    }

    /// `{"origin": ..., "state": ..., "pinned": ...}` for JSON listings.
    pub fn to_json(&self) -> Value {
        json!({
            "origin": self.origin.as_str(),
            "state": self.state.as_str(),
            "pinned": self.pinned,
        })
    }
}

/// What the skills folder says about provenance, read once for a listing or a curator pass.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    hub: BTreeSet<String>,
    bundled: BTreeSet<String>,
    usage: Map<String, Value>,
}

impl Provenance {
    /// Reads `.usage.json`, `.hub/lock.json` and `.bundled_manifest` of `skills_root`
    /// (missing or unreadable files read as empty).
    pub fn read(skills_root: &Path) -> Provenance {
        Provenance {
            hub: hub_installed(skills_root),
            bundled: bundled(skills_root),
            usage: super::Usage::new(skills_root).load(),
        }
    }

    /// The usage record of `name`.
    pub fn record(&self, name: &str) -> Option<&Map<String, Value>> {
        self.usage.get(name).and_then(Value::as_object)
    }

    pub fn origin(&self, name: &str) -> Origin {
        if self.hub.contains(name) {
            return Origin::Hub;
        }
        if self.bundled.contains(name) {
            return Origin::Bundled;
        }
        match self.record(name) {
            Some(r)
                if r.get("created_by").and_then(Value::as_str) == Some("agent")
                    || r.get("agent_created") == Some(&Value::Bool(true)) =>
            {
                Origin::Agent
            }
            _ => Origin::User,
        }
    }

    pub fn status(&self, name: &str) -> Status {
        let record = self.record(name);
        Status {
            origin: self.origin(name),
            state: State::of(record),
            pinned: record
                .and_then(|r| r.get("pinned"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }
}

/// The skills of a home with their status, for listings: `(name, status)` in the order given.
pub fn statuses<'a>(
    skills_root: &Path,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<(&'a str, Status)> {
    let provenance = Provenance::read(skills_root);
    names
        .into_iter()
        .map(|n| (n, provenance.status(n)))
        .collect()
}

/// Names in `.hub/lock.json`'s `installed` object (the Python skills hub's lock file), plus
/// the frontmatter names of the folders its entries point to.
fn hub_installed(root: &Path) -> BTreeSet<String> {
    let Some(installed) = std::fs::read_to_string(root.join(".hub").join("lock.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("installed").and_then(Value::as_object).cloned())
    else {
        return BTreeSet::new();
    };
    let mut names: BTreeSet<String> = installed.keys().cloned().collect();
    for entry in installed.values() {
        let Some(path) = entry
            .get("install_path")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|p| !p.is_empty())
        else {
            continue;
        };
        let dir = root.join(path);
        if let Ok(text) = std::fs::read_to_string(dir.join("SKILL.md")) {
            let fallback = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            names.insert(frontmatter_name(&text).unwrap_or(fallback));
        }
    }
    names
}

/// Names in `.bundled_manifest` (`name:hash` lines).
fn bundled(root: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(root.join(".bundled_manifest"))
        .map(|t| {
            t.lines()
                .filter_map(|l| l.split(':').next())
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The `name:` line of a SKILL.md's frontmatter, read as the Python Hermes's provenance code
/// reads it (first 4000 characters, quotes stripped).
pub fn frontmatter_name(text: &str) -> Option<String> {
    let head: String = text.chars().take(4000).collect();
    let mut inside = false;
    for line in head.lines() {
        let line = line.trim();
        if line == "---" {
            if inside {
                break;
            }
            inside = true;
            continue;
        }
        if inside && let Some(value) = line.strip_prefix("name:") {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            if !value.is_empty() {
                return Some(value.to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_follows_the_record_the_hub_and_the_bundled_manifest() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(
            root.join(".usage.json"),
            r#"{"made": {"created_by": "agent", "state": "stale", "pinned": true},
                "old": {"agent_created": true},
                "mine": {"created_by": null},
                "hubbed": {"created_by": "agent"},
                "seeded": {"created_by": "agent"}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".hub/installed/x")).unwrap();
        std::fs::write(
            root.join(".hub/lock.json"),
            r#"{"installed": {"hubbed": {}, "y": {"install_path": ".hub/installed/x"}}}"#,
        )
        .unwrap();
        std::fs::write(
            root.join(".hub/installed/x/SKILL.md"),
            "---\nname: 'from-hub'\n---\n",
        )
        .unwrap();
        std::fs::write(root.join(".bundled_manifest"), "seeded:abc\n\n").unwrap();
        let p = Provenance::read(root);
        assert_eq!(
            p.status("made"),
            Status {
                origin: Origin::Agent,
                state: State::Stale,
                pinned: true
            }
        );
        assert_eq!(p.status("made").state_label(), "stale, pinned");
        assert_eq!(p.origin("old"), Origin::Agent);
        assert_eq!(p.origin("mine"), Origin::User);
        assert_eq!(p.origin("unrecorded"), Origin::User);
        assert_eq!(p.origin("hubbed"), Origin::Hub);
        assert_eq!(p.origin("from-hub"), Origin::Hub);
        assert_eq!(p.origin("seeded"), Origin::Bundled);
        assert_eq!(
            p.status("mine").to_json(),
            json!({"origin": "user", "state": "active", "pinned": false})
        );
    }
}
