//! The curator's deterministic pass, the Python Hermes's `apply_automatic_transitions`:
//! for every skill in the home that the agent wrote (never the user's, the hub's, the bundled
//! ones, `skills.external_dirs`, nor one a cron job names), from its latest activity (used,
//! viewed or patched; else its creation): unused `stale_after_days` → `stale`, unused
//! `archive_after_days` → archived into `skills/.archive/`, used again → `active`. Pinned
//! skills are left alone, and a skill never used is not touched before it is
//! `stale_after_days` old. [`plan`] only decides (a dry run prints it); [`apply`] carries it
//! out. Time is passed in, so tests run on a fake clock.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{CuratorError, CuratorSettings, archive};
use crate::skills::provenance::{Origin, Provenance, State};
use crate::skills::usage::{iso_at, parse_at};
use crate::skills::{Library, SkillSettings, Usage};

/// Built-in skills the curator never touches, whatever their record says (the Python
/// Hermes's `PROTECTED_BUILTIN_SKILLS`).
pub(crate) const PROTECTED: &[&str] = &["plan"];

/// One change the pass makes.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    pub name: String,
    pub dir: PathBuf,
    pub from: State,
    pub to: State,
    /// Whole days since the skill's last activity.
    pub idle_days: u64,
}

/// What a pass looked at and what it changes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// How many agent-made skills were checked.
    pub checked: usize,
    pub transitions: Vec<Transition>,
}

impl Plan {
    pub fn count(&self, to: State) -> usize {
        self.transitions.iter().filter(|t| t.to == to).count()
    }

    /// `1 marked stale, 2 archived, 1 reactivated` or `no changes` (the Python summary).
    pub fn summary(&self) -> String {
        let parts: Vec<String> = [
            (State::Stale, "marked stale"),
            (State::Archived, "archived"),
            (State::Active, "reactivated"),
        ]
        .iter()
        .filter_map(|(s, label)| match self.count(*s) {
            0 => None,
            n => Some(format!("{n} {label}")),
        })
        .collect();
        if parts.is_empty() {
            "no changes".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Decides the pass over the skills of `root` at `now` (seconds since the epoch).
pub fn plan(root: &Path, home: &Path, settings: &CuratorSettings, now: f64) -> Plan {
    let provenance = Provenance::read(root);
    let protected_by_cron = cron_skills(home);
    let day = 86_400.0;
    let stale_cutoff = now - settings.stale_after_days as f64 * day;
    let archive_cutoff = now - settings.archive_after_days as f64 * day;
    let mut out = Plan::default();
    let mut seen = BTreeSet::new();
    for skill in Library::new(root, SkillSettings::default()).load().skills {
        if skill.external || !seen.insert(skill.name.clone()) {
            continue;
        }
        let name = skill.name;
        if provenance.origin(&name) != Origin::Agent || PROTECTED.contains(&name.as_str()) {
            continue;
        }
        out.checked += 1;
        let Some(record) = provenance.record(&name) else {
            continue;
        };
        if record.get("pinned").and_then(Value::as_bool) == Some(true)
            || protected_by_cron.contains(&name)
        {
            continue;
        }
        let anchor = latest_activity(record)
            .or_else(|| record.get("created_at").and_then(parse_at))
            .unwrap_or(now);
        let current = State::of(Some(record));
        let never_used = record.get("use_count").and_then(Value::as_u64).unwrap_or(0) == 0;
        let to = if never_used && anchor > stale_cutoff {
            // Too young to judge: a skill not used yet may just not have come up.
            (current == State::Stale).then_some(State::Active)
        } else if anchor <= archive_cutoff && current != State::Archived {
            Some(State::Archived)
        } else if anchor <= stale_cutoff && current == State::Active {
            Some(State::Stale)
        } else if anchor > stale_cutoff && current == State::Stale {
            Some(State::Active)
        } else {
            None
        };
        if let Some(to) = to {
            out.transitions.push(Transition {
                name,
                dir: skill.dir,
                from: current,
                to,
                idle_days: ((now - anchor).max(0.0) / day) as u64,
            });
        }
    }
    out.transitions.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Carries out `plan` at `now`; returns where archived skills went, by name.
pub fn apply(root: &Path, plan: &Plan, now: f64) -> Result<Vec<(String, PathBuf)>, CuratorError> {
    let usage = Usage::new(root);
    let mut moved = Vec::new();
    for t in &plan.transitions {
        match t.to {
            State::Archived => {
                let dest = archive::archive(root, &t.dir, &t.name, now)?;
                moved.push((t.name.clone(), dest));
            }
            to => usage.set_state(&t.name, to.as_str(), &iso_at(now)),
        }
    }
    Ok(moved)
}

/// The newest of `last_used_at`, `last_viewed_at`, `last_patched_at`.
pub fn latest_activity(record: &Map<String, Value>) -> Option<f64> {
    ["last_used_at", "last_viewed_at", "last_patched_at"]
        .iter()
        .filter_map(|k| record.get(*k).and_then(parse_at))
        .reduce(f64::max)
}

/// Skills named by any cron job in `cron/jobs.json` (paused ones too: resuming one must
/// find its skills), from `skills` (a list or a string) or the older `skill`.
pub(crate) fn cron_skills(home: &Path) -> BTreeSet<String> {
    let Some(doc) = std::fs::read_to_string(home.join("cron").join("jobs.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(t.trim_start_matches('\u{feff}')).ok())
    else {
        return BTreeSet::new();
    };
    let jobs = match &doc {
        Value::Object(o) => o.get("jobs").and_then(Value::as_array),
        Value::Array(a) => Some(a),
        _ => None,
    };
    let mut names = BTreeSet::new();
    for job in jobs.into_iter().flatten() {
        let listed = match job.get("skills") {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) => vec![Value::String(s.clone())],
            _ => job.get("skill").cloned().into_iter().collect(),
        };
        for v in listed {
            if let Some(s) = v.as_str() {
                let s = s.trim().trim_start_matches('/');
                if !s.is_empty() {
                    names.insert(s.to_string());
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::curator::Curator;
    use serde_json::json;

    const DAY: f64 = 86_400.0;
    /// The fake clock: 2026-05-01T00:00:00Z.
    const NOW: f64 = 1_777_593_600.0;

    fn days_ago(d: f64) -> String {
        iso_at(NOW - d * DAY)
    }

    fn skill(root: &Path, rel: &str) {
        let name = rel.rsplit('/').next().unwrap();
        std::fs::create_dir_all(root.join(rel)).unwrap();
        std::fs::write(
            root.join(rel).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: d\n---\nbody\n"),
        )
        .unwrap();
    }

    fn agent(used_days_ago: Option<f64>, created_days_ago: f64) -> Value {
        json!({
            "created_by": "agent",
            "use_count": u64::from(used_days_ago.is_some()),
            "last_used_at": used_days_ago.map(days_ago),
            "created_at": days_ago(created_days_ago),
            "state": "active",
            "pinned": false,
            "archived_at": null,
        })
    }

    /// A home with agent-made skills of every age, a user-written one and a pinned one.
    fn home() -> (tempfile::TempDir, Curator) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("skills");
        for rel in [
            "fresh",
            "ops/month-old",
            "ops/quarter-old",
            "never-used-young",
            "never-used-old",
            "mine",
            "pinned-old",
            "cron-old",
        ] {
            skill(&root, rel);
        }
        let mut pinned = agent(Some(200.0), 300.0);
        pinned["pinned"] = json!(true);
        let usage = json!({
            "fresh": agent(Some(2.0), 40.0),
            "month-old": agent(Some(31.0), 40.0),
            "quarter-old": agent(Some(91.0), 100.0),
            "never-used-young": agent(None, 10.0),
            "never-used-old": agent(None, 45.0),
            "mine": {"created_by": null, "use_count": 1, "last_used_at": days_ago(400.0)},
            "pinned-old": pinned,
            "cron-old": agent(Some(200.0), 300.0),
        });
        std::fs::write(root.join(".usage.json"), usage.to_string()).unwrap();
        std::fs::create_dir_all(tmp.path().join("cron")).unwrap();
        std::fs::write(
            tmp.path().join("cron/jobs.json"),
            r#"{"jobs": [{"skills": ["/cron-old"], "enabled": false}]}"#,
        )
        .unwrap();
        let curator = Curator::with_settings(tmp.path(), CuratorSettings::default());
        (tmp, curator)
    }

    fn moves(plan: &Plan) -> Vec<(&str, State, State, u64)> {
        plan.transitions
            .iter()
            .map(|t| (t.name.as_str(), t.from, t.to, t.idle_days))
            .collect()
    }

    #[test]
    fn stale_after_30_days_archived_after_90_others_untouched() {
        let (tmp, curator) = home();
        let root = curator.skills_root().to_path_buf();
        let plan = curator.plan(NOW);
        assert_eq!(plan.checked, 7, "every agent-made skill, not `mine`");
        assert_eq!(
            moves(&plan),
            [
                ("month-old", State::Active, State::Stale, 31),
                ("never-used-old", State::Active, State::Stale, 45),
                ("quarter-old", State::Active, State::Archived, 91),
            ]
        );
        assert_eq!(plan.summary(), "2 marked stale, 1 archived");
        let outcome = curator.run(NOW).unwrap();
        assert_eq!(outcome.plan, plan);
        assert!(outcome.snapshot.unwrap().join("skills.tar.gz").is_file());
        assert_eq!(
            outcome.archived,
            [("quarter-old".to_string(), root.join(".archive/quarter-old"))]
        );
        assert!(!root.join("ops/quarter-old").exists());
        assert!(root.join("ops/month-old/SKILL.md").is_file());
        let usage = Usage::new(&root).load();
        assert_eq!(usage["month-old"]["state"], "stale");
        assert_eq!(usage["quarter-old"]["state"], "archived");
        assert_eq!(usage["quarter-old"]["archived_at"], iso_at(NOW));
        assert_eq!(
            usage["mine"].get("state"),
            None,
            "the user's record is not touched"
        );
        assert_eq!(usage["pinned-old"]["state"], "active");
        assert_eq!(usage["cron-old"]["state"], "active");
        let state = curator.state();
        assert_eq!(state.run_count(), 1);
        assert_eq!(state.text("last_run_at"), Some(iso_at(NOW).as_str()));
        assert_eq!(
            state.text("last_run_summary"),
            Some("auto: 2 marked stale, 1 archived; llm: skipped (consolidation off)")
        );
        // A second pass the same day changes nothing; the archived skill stays archived.
        assert_eq!(curator.plan(NOW).transitions, []);
        drop(tmp);
    }

    #[test]
    fn a_stale_skill_used_again_is_active_and_archive_restore_round_trips() {
        let (_tmp, curator) = home();
        let root = curator.skills_root().to_path_buf();
        curator.run(NOW).unwrap();
        // Used through skill_view: active at once.
        Usage::new(&root).used("month-old");
        assert_eq!(Usage::new(&root).load()["month-old"]["state"], "active");
        // A stale record with recent use (written by another build) is reactivated by a pass.
        Usage::new(&root).set_state("never-used-old", "stale", &iso_at(NOW));
        let mut all = Usage::new(&root).load();
        all["never-used-old"]["last_used_at"] = json!(days_ago(-1.0));
        all["never-used-old"]["use_count"] = json!(1);
        std::fs::write(root.join(".usage.json"), Value::Object(all).to_string()).unwrap();
        let later = NOW + DAY;
        assert_eq!(
            moves(&curator.plan(later)),
            [("never-used-old", State::Stale, State::Active, 0)]
        );
        // Restore brings the archived skill back to the top level, active.
        let back = curator.restore("quarter-old", later).unwrap();
        assert_eq!(back, root.join("quarter-old"));
        assert!(back.join("SKILL.md").is_file());
        let rec = &Usage::new(&root).load()["quarter-old"];
        assert_eq!(rec["state"], "active");
        assert_eq!(rec["archived_at"], Value::Null);
        assert_eq!(
            curator
                .restore("quarter-old", later)
                .unwrap_err()
                .to_string(),
            "skill 'quarter-old' not found in archive"
        );
        // Archiving a name already in the archive keeps both copies.
        skill(&root, "twice");
        let first = archive::archive(&root, &root.join("twice"), "twice", NOW).unwrap();
        skill(&root, "twice");
        let second = archive::archive(&root, &root.join("twice"), "twice", NOW).unwrap();
        assert_eq!(first, root.join(".archive/twice"));
        assert_eq!(second, root.join(".archive/twice-20260501000000"));
    }

    #[test]
    fn pinning_protects_and_is_refused_for_hub_skills() {
        let (_tmp, curator) = home();
        let root = curator.skills_root().to_path_buf();
        curator.pin("quarter-old", true).unwrap();
        assert!(Usage::new(&root).is_pinned("quarter-old"));
        assert_eq!(
            moves(&curator.plan(NOW)),
            [
                ("month-old", State::Active, State::Stale, 31),
                ("never-used-old", State::Active, State::Stale, 45),
            ]
        );
        curator.pin("quarter-old", false).unwrap();
        assert!(!Usage::new(&root).is_pinned("quarter-old"));
        std::fs::create_dir_all(root.join(".hub")).unwrap();
        std::fs::write(
            root.join(".hub/lock.json"),
            r#"{"installed": {"fresh": {}}}"#,
        )
        .unwrap();
        assert!(curator.pin("fresh", true).is_err());
        assert_eq!(
            curator.pin("nope", true).unwrap_err().to_string(),
            "no skill named 'nope'"
        );
    }

    #[test]
    fn the_first_check_starts_the_clock_then_waits_an_interval() {
        let (_tmp, curator) = home();
        assert!(!curator.due(NOW), "first sight only seeds");
        assert_eq!(
            curator.state().text("last_run_at"),
            Some(iso_at(NOW).as_str())
        );
        assert!(!curator.due(NOW + 167.0 * 3600.0));
        assert!(curator.due(NOW + 168.0 * 3600.0));
        assert!(
            curator
                .maybe_run(NOW + 169.0 * 3600.0, Some(3600.0))
                .is_none(),
            "the user was idle only an hour"
        );
        let ran = curator
            .maybe_run(NOW + 169.0 * 3600.0, Some(3.0 * 3600.0))
            .unwrap();
        assert_eq!(ran.plan.count(State::Archived), 1);
        assert!(!curator.due(NOW + 170.0 * 3600.0));
        curator.set_paused(true).unwrap();
        assert!(!curator.due(NOW + 1000.0 * 3600.0));
    }
}
