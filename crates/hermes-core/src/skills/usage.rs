//! `skills/.usage.json`: how often each skill was viewed, used and changed, in the Python
//! Hermes's format (its curator reads it): an object keyed by skill name, each record with
//! `use_count`, `view_count`, `patch_count`, `last_used_at`, `last_viewed_at`,
//! `last_patched_at`, `created_at`, `created_by`, `state` (`active`, `stale`, `archived`),
//! `pinned` and `archived_at`; timestamps in ISO 8601 with microseconds and `+00:00`; written
//! with sorted keys and two-space indentation. Changes are read-modify-write under an exclusive
//! lock on `.usage.json.lock` (the Python Hermes's lock file) and replace the file atomically;
//! keys this build does not know are kept. Telemetry is best effort: a failure never fails the
//! tool call that caused it. The curator's marks go through here too: `created_by: "agent"`
//! when `skill_manage` creates a skill, `state` with `archived_at`, `pinned`; any use, view or
//! change of a `stale` skill makes it `active` again.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// The usage sidecar of one skills folder.
#[derive(Debug, Clone)]
pub struct Usage {
    path: PathBuf,
}

impl Usage {
    pub fn new(skills_root: &Path) -> Usage {
        Usage {
            path: skills_root.join(".usage.json"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every record (an unreadable or malformed file reads as empty, as in the Python Hermes).
    pub fn load(&self) -> Map<String, Value> {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| match v {
                Value::Object(map) => Some(map),
                _ => None,
            })
            .map(|map| map.into_iter().filter(|(_, v)| v.is_object()).collect())
            .unwrap_or_default()
    }

    /// The record of `name`, if there is one.
    pub fn record(&self, name: &str) -> Option<Map<String, Value>> {
        match self.load().remove(name) {
            Some(Value::Object(map)) => Some(map),
            _ => None,
        }
    }

    /// Whether `name` is pinned (protected from deletion).
    pub fn is_pinned(&self, name: &str) -> bool {
        self.record(name)
            .and_then(|r| r.get("pinned").and_then(Value::as_bool))
            .unwrap_or(false)
    }

    /// `skill_view` loaded it.
    pub fn viewed(&self, name: &str) {
        self.bump(name, "view_count", "last_viewed_at");
    }

    /// It was put to work (`skill_view`, `/skill-name`).
    pub fn used(&self, name: &str) {
        self.bump(name, "use_count", "last_used_at");
    }

    /// Its instructions or files changed.
    pub fn patched(&self, name: &str) {
        self.bump(name, "patch_count", "last_patched_at");
    }

    /// Sets the lifecycle state (`active`, `stale`, `archived`) at `at`: archiving stamps
    /// `archived_at`, becoming active clears it, as the Python Hermes's `set_state` does.
    pub fn set_state(&self, name: &str, state: &str, at: &str) {
        let _ = self.change(name, |rec| {
            rec.insert("state".into(), json!(state));
            match state {
                "archived" => {
                    rec.insert("archived_at".into(), json!(at));
                }
                "active" => {
                    rec.insert("archived_at".into(), Value::Null);
                }
                _ => {}
            }
        });
    }

    /// Records that the agent wrote this skill (`created_by: "agent"`): only such skills are
    /// the curator's to mark stale and archive.
    pub fn mark_agent_created(&self, name: &str) {
        let _ = self.change(name, |rec| {
            rec.insert("created_by".into(), json!("agent"));
        });
    }

    /// Pins or unpins: a pinned skill is never deleted by the agent nor moved by the curator.
    pub fn set_pinned(&self, name: &str, pinned: bool) {
        let _ = self.change(name, |rec| {
            rec.insert("pinned".into(), json!(pinned));
        });
    }

    /// A stale skill that is used again is active again at once (the curator's next pass
    /// would decide the same), so its state never lags behind its use.
    fn bump(&self, name: &str, count: &str, at: &str) {
        let _ = self.change(name, |rec| {
            let n = rec.get(count).and_then(Value::as_u64).unwrap_or(0);
            rec.insert(count.into(), json!(n + 1));
            rec.insert(at.into(), json!(now_iso()));
            if rec.get("state").and_then(Value::as_str) == Some("stale") {
                rec.insert("state".into(), json!("active"));
            }
        });
    }

    /// Applies `f` to the record of `name` (a fresh one if missing) under the lock.
    fn change(&self, name: &str, f: impl FnOnce(&mut Map<String, Value>)) -> std::io::Result<()> {
        let Some(dir) = self.path.parent().filter(|d| d.is_dir()) else {
            return Ok(());
        };
        let lock_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(".usage.json.lock"))?;
        let mut lock = fd_lock::RwLock::new(lock_file);
        let _held = lock.write()?;
        let mut all = self.load();
        let mut rec = match all.remove(name) {
            Some(Value::Object(map)) => map,
            _ => empty_record(),
        };
        f(&mut rec);
        all.insert(name.to_string(), Value::Object(rec));
        // Sorted like the Python Hermes writes it (`sort_keys=True`).
        let sorted = hermes_protocol::json_order::sorted_keys(&Value::Object(all));
        let text = serde_json::to_string_pretty(&sorted).map_err(std::io::Error::other)?;
        hermes_config::atomic_write(&self.path, text.as_bytes())
    }
}

/// A new record, as the Python Hermes starts one.
fn empty_record() -> Map<String, Value> {
    let mut rec = Map::new();
    for (k, v) in [
        ("created_by", Value::Null),
        ("use_count", json!(0)),
        ("view_count", json!(0)),
        ("last_used_at", Value::Null),
        ("last_viewed_at", Value::Null),
        ("patch_count", json!(0)),
        ("last_patched_at", Value::Null),
        ("created_at", json!(now_iso())),
        ("state", json!("active")),
        ("pinned", json!(false)),
        ("archived_at", Value::Null),
    ] {
        rec.insert(k.into(), v);
    }
    rec
}

/// Now in UTC as `2026-01-31T12:34:56.123456+00:00` (Python's `datetime.isoformat()`).
pub fn now_iso() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    iso(now.as_secs(), now.subsec_micros())
}

/// Seconds since the epoch as Python's `datetime.isoformat()` writes them in UTC.
pub fn iso_at(secs: f64) -> String {
    let whole = secs.max(0.0).floor();
    iso(whole as u64, ((secs - whole) * 1e6) as u32)
}

/// A timestamp of a record (any ISO 8601 form Python's `fromisoformat` reads; no zone means
/// UTC) as seconds since the epoch.
pub fn parse_at(value: &Value) -> Option<f64> {
    value.as_str().and_then(hermes_llm::auth_store::parse_iso)
}

fn iso(secs: u64, micros: u32) -> String {
    let (y, m, d) = hermes_protocol::time::civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}+00:00",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_have_pythons_shape() {
        assert_eq!(iso(0, 5), "1970-01-01T00:00:00.000005+00:00");
        assert_eq!(
            iso(1_764_511_343, 780_928),
            "2025-11-30T14:02:23.780928+00:00"
        );
    }

    #[test]
    fn bumps_keep_unknown_keys_and_sort() {
        let tmp = tempfile::tempdir().unwrap();
        let usage = Usage::new(tmp.path());
        std::fs::write(
            usage.path(),
            r#"{"a": {"use_count": 4, "custom": "kept"}, "junk": 3}"#,
        )
        .unwrap();
        usage.used("a");
        usage.viewed("b");
        let all = usage.load();
        assert_eq!(all["a"]["use_count"], 5);
        assert_eq!(all["a"]["custom"], "kept");
        assert!(all["a"].get("view_count").is_none(), "no backfill");
        assert_eq!(all["b"]["view_count"], 1);
        assert_eq!(all["b"]["state"], "active");
        assert!(all.get("junk").is_none());
        let text = std::fs::read_to_string(usage.path()).unwrap();
        assert!(
            text.starts_with("{\n  \"a\": {\n    \"custom\": \"kept\",\n"),
            "{text}"
        );
        assert!(!text.ends_with('\n'));
        assert!(!usage.is_pinned("a"));
    }

    #[test]
    fn nothing_is_written_without_a_skills_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let usage = Usage::new(&tmp.path().join("missing"));
        usage.used("a");
        assert!(!tmp.path().join("missing").exists());
    }
}
