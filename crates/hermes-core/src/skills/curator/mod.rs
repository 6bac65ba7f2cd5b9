//! The curator: keeps the skills the agent wrote from piling up, as the Python Hermes's
//! curator does. A pass ([`Curator::run`]) snapshots the skills folder ([`backup`]), then
//! applies the lifecycle ([`lifecycle`]: stale after 30 unused days, archived after 90, pinned
//! and user-written skills untouched) and records the run in `skills/.curator_state`
//! ([`state`]). With `curator.consolidate` (or `hermes curator run --consolidate`) the runtime
//! then runs the LLM consolidation pass over the agent's skills ([`consolidate`] holds its
//! prompt and guarded `skill_manage`) and [`Curator::record_consolidation`] adds its outcome.
//! It starts on its own ([`Curator::maybe_run`]) when `curator.interval_hours` have passed
//! since the last pass, the user has been idle `curator.min_idle_hours`, and it is neither
//! paused nor disabled; the very first time it only starts the clock, as the Python Hermes
//! does. `hermes curator` drives it by hand.

pub mod archive;
pub mod backup;
pub mod consolidate;
pub mod lifecycle;
pub mod state;

use std::path::{Path, PathBuf};

use hermes_config::Config;
use serde_json::{Value, json};

pub use lifecycle::{Plan, Transition};
pub use state::{CuratorSettings, CuratorState};

use super::Usage;
use super::provenance::{Origin, Provenance};
use super::usage::iso_at;

/// What went wrong in a curator operation.
#[derive(Debug, thiserror::Error)]
pub enum CuratorError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The operation does not apply (the message says why, in the Python Hermes's words).
    #[error("{0}")]
    Refused(String),
}

impl CuratorError {
    pub fn io(path: &Path, source: std::io::Error) -> CuratorError {
        CuratorError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What a pass did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub plan: Plan,
    /// The snapshot taken first (none when `curator.backup.enabled` is off).
    pub snapshot: Option<PathBuf>,
    /// Where archived skills went.
    pub archived: Vec<(String, PathBuf)>,
    /// The line stored as `last_run_summary`.
    pub summary: String,
}

/// The curator of one home.
#[derive(Debug, Clone)]
pub struct Curator {
    home: PathBuf,
    root: PathBuf,
    pub settings: CuratorSettings,
}

impl Curator {
    /// The curator of the home at `home` (its skills in `home/skills`).
    pub fn new(home: &Path, config: &Config) -> Curator {
        Curator::with_settings(home, CuratorSettings::from_config(config))
    }

    pub fn with_settings(home: &Path, settings: CuratorSettings) -> Curator {
        Curator {
            home: home.to_path_buf(),
            root: home.join("skills"),
            settings,
        }
    }

    /// The home this curator's skills belong to.
    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn skills_root(&self) -> &Path {
        &self.root
    }

    pub fn state(&self) -> CuratorState {
        CuratorState::load(&self.root)
    }

    pub fn set_paused(&self, paused: bool) -> Result<(), CuratorError> {
        let mut state = self.state();
        state.set("paused", json!(paused));
        state.save(&self.root)
    }

    /// What a pass at `now` would change.
    pub fn plan(&self, now: f64) -> Plan {
        lifecycle::plan(&self.root, &self.home, &self.settings, now)
    }

    /// A pass at `now`: snapshot, lifecycle, state. A failed snapshot stops the pass before
    /// anything moves (the Python Hermes goes on without one; a skill folder is the user's
    /// work, so here nothing is moved that could not be put back).
    pub fn run(&self, now: f64) -> Result<RunOutcome, CuratorError> {
        let started = std::time::Instant::now();
        let plan = self.plan(now);
        let snapshot = if self.settings.backup_enabled && self.root.is_dir() {
            Some(backup::snapshot(
                &self.root,
                &self.home,
                "pre-curator-run",
                self.settings.backup_keep,
                now,
            )?)
        } else {
            None
        };
        let archived = lifecycle::apply(&self.root, &plan, now)?;
        let summary = format!("auto: {}; llm: skipped (consolidation off)", plan.summary());
        let mut state = self.state();
        state.set("last_run_at", json!(iso_at(now)));
        state.set("run_count", json!(state.run_count() + 1));
        state.set("last_run_summary", json!(summary));
        state.set(
            "last_run_duration_seconds",
            json!(started.elapsed().as_secs_f64()),
        );
        if self.root.is_dir() {
            state.save(&self.root)?;
        }
        Ok(RunOutcome {
            plan,
            snapshot,
            archived,
            summary,
        })
    }

    /// Takes the due pass at `now` for a process about to run it (the state's `last_run_at`
    /// moves to `now`), so a second session ending meanwhile does not start another.
    pub fn claim(&self, now: f64) -> Result<(), CuratorError> {
        let mut state = self.state();
        state.set("last_run_at", json!(iso_at(now)));
        state.save(&self.root)
    }

    /// Adds the consolidation that followed `outcome`'s lifecycle pass: `last_run_summary`
    /// becomes `auto: ...; llm: <llm>` (also in `outcome`), the duration covers both parts,
    /// and `last_report_path` names the pass's report.
    pub fn record_consolidation(
        &self,
        outcome: &mut RunOutcome,
        llm: &str,
        seconds: f64,
        report: Option<&Path>,
    ) -> Result<(), CuratorError> {
        outcome.summary = format!("auto: {}; llm: {llm}", outcome.plan.summary());
        let mut state = self.state();
        state.set("last_run_summary", json!(outcome.summary));
        state.set("last_run_duration_seconds", json!(seconds));
        if let Some(report) = report {
            state.set("last_report_path", json!(report.display().to_string()));
        }
        if self.root.is_dir() {
            state.save(&self.root)?;
        }
        Ok(())
    }

    /// Whether a pass is due at `now` (enabled, not paused, `interval_hours` since the last
    /// one). With no pass ever recorded it is not due: the clock starts now (recorded in the
    /// state file) so a new install waits one interval, as in the Python Hermes.
    pub fn due(&self, now: f64) -> bool {
        if !self.settings.enabled || !self.root.is_dir() {
            return false;
        }
        let mut state = self.state();
        if state.paused() {
            return false;
        }
        match state.last_run_at() {
            Some(last) => now - last >= self.settings.interval_hours as f64 * 3600.0,
            None => {
                state.set("last_run_at", json!(iso_at(now)));
                state.set(
                    "last_run_summary",
                    json!(
                        "deferred first run — curator seeded, will run after one interval; use `hermes curator run --dry-run` to preview now"
                    ),
                );
                let _ = state.save(&self.root);
                false
            }
        }
    }

    /// A pass if one is due and the user has been idle `min_idle_hours` (`idle_secs`, none
    /// when not measured). Never fails: a curator problem must not disturb the session.
    pub fn maybe_run(&self, now: f64, idle_secs: Option<f64>) -> Option<RunOutcome> {
        if !self.due(now) {
            return None;
        }
        if idle_secs.is_some_and(|idle| idle < self.settings.min_idle_hours * 3600.0) {
            return None;
        }
        self.run(now).ok()
    }

    /// Pins or unpins `name`, which must be a skill of this home (or archived) that is
    /// neither the hub's nor bundled.
    pub fn pin(&self, name: &str, pinned: bool) -> Result<(), CuratorError> {
        match Provenance::read(&self.root).origin(name) {
            Origin::Hub | Origin::Bundled => {
                return Err(CuratorError::Refused(if pinned {
                    format!(
                        "'{name}' is bundled or hub-installed — cannot pin (only agent-created skills participate in curation)"
                    )
                } else {
                    format!(
                        "'{name}' is bundled or hub-installed — there's nothing to unpin (curator only tracks agent-created skills)"
                    )
                }));
            }
            Origin::Agent | Origin::User => {}
        }
        let local = super::Library::new(&self.root, super::SkillSettings::default())
            .load()
            .skills
            .iter()
            .any(|s| s.name == name);
        if !local
            && !archive::archived_names(&self.root)
                .iter()
                .any(|n| n == name)
        {
            return Err(CuratorError::Refused(format!("no skill named '{name}'")));
        }
        Usage::new(&self.root).set_pinned(name, pinned);
        Ok(())
    }

    /// Brings `name` back from the archive, active.
    pub fn restore(&self, name: &str, now: f64) -> Result<PathBuf, CuratorError> {
        match Provenance::read(&self.root).origin(name) {
            Origin::Hub => {
                return Err(CuratorError::Refused(format!(
                    "skill '{name}' is now hub-installed; restore would shadow the upstream version"
                )));
            }
            Origin::Bundled => {
                return Err(CuratorError::Refused(format!(
                    "skill '{name}' is now bundled; restore would shadow the upstream version"
                )));
            }
            Origin::Agent | Origin::User => {}
        }
        archive::restore(&self.root, name, now)
    }

    /// The agent-made skills with their usage records (archived ones included), by name.
    pub fn agent_skills(&self) -> Vec<(String, serde_json::Map<String, Value>)> {
        let provenance = Provenance::read(&self.root);
        let mut names: Vec<String> =
            super::Library::new(&self.root, super::SkillSettings::default())
                .load()
                .skills
                .into_iter()
                .map(|s| s.name)
                .chain(archive::archived_names(&self.root))
                .filter(|n| provenance.origin(n) == Origin::Agent)
                .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|n| provenance.record(&n).cloned().map(|r| (n, r)))
            .collect()
    }
}
