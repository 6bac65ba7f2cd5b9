//! The curator's settings (`curator:` in config.yaml) and its state file
//! `skills/.curator_state`, both as the Python Hermes has them. The state is a JSON object with
//! `last_run_at` (ISO 8601 UTC), `last_run_duration_seconds`, `last_run_summary`,
//! `last_run_summary_shown_at`, `last_report_path`, `paused` and `run_count`, written with
//! sorted keys and two-space indentation; reading keeps those keys and any starting with `_`
//! (the Python Hermes drops the rest), and a missing or malformed file reads as the defaults.

use std::path::{Path, PathBuf};

use hermes_config::Config;
use serde_json::{Map, Value, json};

use super::CuratorError;

/// `curator.interval_hours`: how long between two passes (a week).
pub const DEFAULT_INTERVAL_HOURS: u64 = 24 * 7;
/// `curator.min_idle_hours`: how long the user must have been idle for a pass to start.
pub const DEFAULT_MIN_IDLE_HOURS: f64 = 2.0;
/// `curator.stale_after_days`: unused this long, an agent-made skill is marked stale.
pub const DEFAULT_STALE_AFTER_DAYS: u64 = 30;
/// `curator.archive_after_days`: unused this long, it is moved to `skills/.archive/`.
pub const DEFAULT_ARCHIVE_AFTER_DAYS: u64 = 90;
/// `curator.backup.keep`: how many snapshots of the skills folder are kept.
pub const DEFAULT_BACKUP_KEEP: usize = 5;

/// The `curator:` keys of config.yaml, read as leniently as the Python Hermes reads them (a
/// value of the wrong type counts as unset).
#[derive(Debug, Clone, PartialEq)]
pub struct CuratorSettings {
    /// `curator.enabled` (default on).
    pub enabled: bool,
    pub interval_hours: u64,
    pub min_idle_hours: f64,
    pub stale_after_days: u64,
    pub archive_after_days: u64,
    /// `curator.backup.enabled` (default on): snapshot the skills folder before a pass.
    pub backup_enabled: bool,
    /// `curator.backup.keep` (at least 1).
    pub backup_keep: usize,
    /// `curator.consolidate` (default off, as in the Python Hermes): a pass also runs the
    /// LLM consolidation after the lifecycle.
    pub consolidate: bool,
}

impl Default for CuratorSettings {
    fn default() -> Self {
        CuratorSettings {
            enabled: true,
            interval_hours: DEFAULT_INTERVAL_HOURS,
            min_idle_hours: DEFAULT_MIN_IDLE_HOURS,
            stale_after_days: DEFAULT_STALE_AFTER_DAYS,
            archive_after_days: DEFAULT_ARCHIVE_AFTER_DAYS,
            backup_enabled: true,
            backup_keep: DEFAULT_BACKUP_KEEP,
            consolidate: false,
        }
    }
}

impl CuratorSettings {
    pub fn from_config(config: &Config) -> CuratorSettings {
        let mut s = CuratorSettings::default();
        let Some(section) = config.raw.get("curator").filter(|v| v.is_object()) else {
            return s;
        };
        if let Some(Value::Bool(on)) = section.get("enabled") {
            s.enabled = *on;
        }
        if let Some(Value::Bool(on)) = section.get("consolidate") {
            s.consolidate = *on;
        }
        let whole =
            |key: &str, default: u64| number(section.get(key)).map_or(default, |n| n as u64);
        s.interval_hours = whole("interval_hours", s.interval_hours);
        s.stale_after_days = whole("stale_after_days", s.stale_after_days);
        s.archive_after_days = whole("archive_after_days", s.archive_after_days);
        s.min_idle_hours = number(section.get("min_idle_hours")).unwrap_or(s.min_idle_hours);
        if let Some(backup) = section.get("backup").filter(|v| v.is_object()) {
            if let Some(Value::Bool(on)) = backup.get("enabled") {
                s.backup_enabled = *on;
            }
            if let Some(n) = number(backup.get("keep")) {
                s.backup_keep = (n as usize).max(1);
            }
        }
        s
    }

    /// `every 7d` or `every 12h`, as the Python `hermes curator status` prints it.
    pub fn interval_label(&self) -> String {
        let h = self.interval_hours;
        if h >= 24 && h.is_multiple_of(24) {
            format!("{}d", h / 24)
        } else {
            format!("{h}h")
        }
    }
}

/// A number, or a string holding one (Python's `int()` / `float()` accept both); negative
/// values count as unset.
fn number(value: Option<&Value>) -> Option<f64> {
    let n = match value? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }?;
    (n.is_finite() && n >= 0.0).then_some(n)
}

/// The keys of `.curator_state`, with their defaults.
fn defaults() -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in [
        ("last_run_at", Value::Null),
        ("last_run_duration_seconds", Value::Null),
        ("last_run_summary", Value::Null),
        ("last_run_summary_shown_at", Value::Null),
        ("last_report_path", Value::Null),
        ("paused", json!(false)),
        ("run_count", json!(0)),
    ] {
        m.insert(k.into(), v);
    }
    m
}

/// The contents of `skills/.curator_state`.
#[derive(Debug, Clone, PartialEq)]
pub struct CuratorState {
    pub fields: Map<String, Value>,
}

impl Default for CuratorState {
    fn default() -> Self {
        CuratorState { fields: defaults() }
    }
}

impl CuratorState {
    pub fn path(skills_root: &Path) -> PathBuf {
        skills_root.join(".curator_state")
    }

    pub fn load(skills_root: &Path) -> CuratorState {
        let mut state = CuratorState::default();
        let read = std::fs::read_to_string(Self::path(skills_root))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok());
        if let Some(Value::Object(map)) = read {
            for (k, v) in map {
                if state.fields.contains_key(&k) || k.starts_with('_') {
                    state.fields.insert(k, v);
                }
            }
        }
        state
    }

    pub fn save(&self, skills_root: &Path) -> Result<(), CuratorError> {
        let path = Self::path(skills_root);
        // Sorted like the Python Hermes writes it (`sort_keys=True`).
        let sorted = hermes_protocol::json_order::sorted_keys(&Value::Object(self.fields.clone()));
        let text = serde_json::to_string_pretty(&sorted)
            .map_err(|e| CuratorError::io(&path, std::io::Error::other(e)))?;
        std::fs::create_dir_all(skills_root).map_err(|e| CuratorError::io(skills_root, e))?;
        hermes_config::atomic_write(&path, text.as_bytes()).map_err(|e| CuratorError::io(&path, e))
    }

    pub fn paused(&self) -> bool {
        self.fields.get("paused").and_then(Value::as_bool) == Some(true)
    }

    pub fn run_count(&self) -> u64 {
        self.fields
            .get("run_count")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// `last_run_at` as seconds since the epoch.
    pub fn last_run_at(&self) -> Option<f64> {
        self.fields
            .get("last_run_at")
            .and_then(crate::skills::usage::parse_at)
    }

    pub fn text(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    pub fn set(&mut self, key: &str, value: Value) {
        self.fields.insert(key.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_config::Environment;

    fn settings(yaml: &str) -> CuratorSettings {
        let env = Environment::isolated::<&str, &str>([]);
        let c = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        CuratorSettings::from_config(&c)
    }

    #[test]
    fn settings_read_the_python_keys() {
        assert_eq!(settings(""), CuratorSettings::default());
        let s = settings(
            "curator:\n  enabled: false\n  interval_hours: 12\n  min_idle_hours: '0.5'\n  stale_after_days: 7\n  archive_after_days: x\n  backup:\n    keep: 0\n",
        );
        assert!(!s.enabled);
        assert_eq!(s.interval_hours, 12);
        assert_eq!(s.interval_label(), "12h");
        assert_eq!(s.min_idle_hours, 0.5);
        assert_eq!(s.stale_after_days, 7);
        assert_eq!(s.archive_after_days, DEFAULT_ARCHIVE_AFTER_DAYS);
        assert_eq!(s.backup_keep, 1);
        assert_eq!(CuratorSettings::default().interval_label(), "7d");
    }

    #[test]
    fn the_state_file_round_trips_in_pythons_format() {
        let tmp = tempfile::tempdir().unwrap();
        // What the Python Hermes writes (json.dump, indent=2, sort_keys=True).
        let python = r#"{
  "_note": "kept",
  "last_report_path": "/h/logs/curator/2026-05-01/REPORT.md",
  "last_run_at": "2026-05-01T13:05:42.123456+00:00",
  "last_run_duration_seconds": 1.25,
  "last_run_summary": "auto: 1 archived; llm: skipped (consolidation off)",
  "last_run_summary_shown_at": null,
  "paused": true,
  "run_count": 3,
  "unknown": 1
}"#;
        std::fs::write(CuratorState::path(tmp.path()), python).unwrap();
        let state = CuratorState::load(tmp.path());
        assert!(state.paused());
        assert_eq!(state.run_count(), 3);
        let at = state.last_run_at().unwrap();
        assert!((at - 1_777_640_742.123_456).abs() < 1e-5, "{at}");
        assert!(!state.fields.contains_key("unknown"));
        state.save(tmp.path()).unwrap();
        let written = std::fs::read_to_string(CuratorState::path(tmp.path())).unwrap();
        assert_eq!(
            written,
            python
                .replace("  \"unknown\": 1\n", "")
                .replace("3,\n}", "3\n}")
        );
        // Missing or broken: the defaults.
        std::fs::write(CuratorState::path(tmp.path()), "[").unwrap();
        assert_eq!(CuratorState::load(tmp.path()), CuratorState::default());
        let fresh = tempfile::tempdir().unwrap();
        assert_eq!(CuratorState::load(fresh.path()), CuratorState::default());
    }
}
