//! The job store, `$HERMES_HOME/cron/jobs.json`, shared with the Python Hermes. Every change
//! is a read-modify-write under an exclusive `flock` on `cron/.jobs.lock` (the lock Python
//! takes too, so a Python gateway and this binary never clobber each other) and an atomic
//! rename; the file keeps its top-level keys and each job its unknown fields. A tick is
//! serialised by `cron/.tick.lock` (Python's too); within the jobs lock it claims each due
//! job (state `running` and a `run_claim`, recurring jobs advanced to their next time first),
//! so a second tick or a `hermes cron run` never starts the same job until the claim is
//! released by [`CronStore::finish`] or goes stale (30 minutes: a run that died).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, FixedOffset};
use serde_json::{Map, Value, json};

use crate::clock::{self, Zone};
use crate::job::{Job, JobEdit, NewJob, normalize_skills};
use crate::schedule::{self, Schedule};
use crate::{CronError, output};

/// How long to wait for another process's short critical section.
const LOCK_TIMEOUT: Duration = Duration::from_secs(30);
/// A claim older than this belongs to a run that died (Python's one-shot claim TTL).
const CLAIM_TTL_SECONDS: i64 = 1800;

/// The store of one home.
#[derive(Debug, Clone)]
pub struct CronStore {
    dir: PathBuf,
    zone: Zone,
    keep_outputs: usize,
}

/// How a run ended, for [`CronStore::finish`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutcome {
    pub success: bool,
    /// Why it failed (`last_error`).
    pub error: Option<String>,
    /// Why the answer was not delivered where the job asked (`last_delivery_error`).
    pub delivery_error: Option<String>,
}

/// The tick lock, held while a tick runs (dropped: released).
pub struct TickLock {
    lock: fd_lock::RwLock<File>,
}

impl TickLock {
    /// The guard, if no other tick holds the lock.
    pub fn try_hold(&mut self) -> Option<fd_lock::RwLockWriteGuard<'_, File>> {
        self.lock.try_write().ok()
    }
}

impl CronStore {
    /// The store under `home_root/cron`, computing schedules in `zone`.
    pub fn new(home_root: &Path, zone: Zone) -> CronStore {
        CronStore {
            dir: home_root.join("cron"),
            zone,
            keep_outputs: output::DEFAULT_KEEP,
        }
    }

    /// Output files kept per job (`cron.output_retention`; 0 keeps all).
    pub fn with_output_retention(mut self, keep: usize) -> CronStore {
        self.keep_outputs = keep;
        self
    }

    pub fn zone(&self) -> Zone {
        self.zone
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ledger of execution attempts beside jobs.json.
    pub fn executions(&self) -> crate::executions::Ledger {
        crate::executions::Ledger::new(&self.dir)
    }

    /// The ledger's timestamp for now: ISO 8601 with microseconds and the offset, as Python's
    /// `isoformat()` writes it.
    pub fn ledger_now(&self) -> String {
        self.now().format("%Y-%m-%dT%H:%M:%S%.6f%:z").to_string()
    }

    pub fn jobs_path(&self) -> PathBuf {
        self.dir.join("jobs.json")
    }

    pub fn output_dir(&self) -> PathBuf {
        self.dir.join("output")
    }

    pub fn now(&self) -> DateTime<FixedOffset> {
        self.zone.now()
    }

    /// Every job, as stored (no lock: the file is replaced atomically).
    pub fn list(&self) -> Result<Vec<Job>, CronError> {
        Ok(self.read()?.1)
    }

    /// The job with this id, else the one job with this name (case-insensitive).
    pub fn resolve(&self, reference: &str) -> Result<Job, CronError> {
        find(&self.list()?, reference).cloned()
    }

    /// Adds a job; refused when the schedule cannot run.
    pub fn create(&self, new: NewJob) -> Result<Job, CronError> {
        let now = self.now();
        let parsed = schedule::parse(&new.schedule, &now, self.zone)?;
        let mut repeat = new.repeat.filter(|r| *r > 0);
        if !parsed.schedule.is_recurring() && repeat.is_none() {
            repeat = Some(1);
        }
        let next = parsed.schedule.next_run(None, &now, self.zone);
        if let (Schedule::Once { run_at }, None) = (&parsed.schedule, &next) {
            return Err(CronError::Schedule(format!(
                "the time {run_at} is more than {} s in the past",
                schedule::ONESHOT_GRACE_SECONDS
            )));
        }
        let skills = normalize_skills(new.skills);
        let label_source = if !new.prompt.trim().is_empty() {
            new.prompt.clone()
        } else {
            skills.first().cloned().unwrap_or_else(|| "cron job".into())
        };
        let name = new
            .name
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| {
                label_source
                    .chars()
                    .take(50)
                    .collect::<String>()
                    .trim()
                    .to_string()
            });
        let opt = |v: Option<String>| {
            v.map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .map(Value::String)
                .unwrap_or(Value::Null)
        };
        self.update(|jobs| {
            let id = new_id(jobs);
            let job = json!({
                "id": id,
                "name": name,
                "prompt": new.prompt,
                "skills": skills,
                "skill": skills.first(),
                "model": opt(new.model),
                "provider": opt(new.provider),
                "provider_snapshot": null,
                "model_snapshot": null,
                "base_url": null,
                "script": null,
                "no_agent": false,
                "context_from": null,
                "schedule": parsed.schedule.to_value(&parsed.display),
                "schedule_display": parsed.display,
                "repeat": {"times": repeat, "completed": 0},
                "enabled": true,
                "state": "scheduled",
                "paused_at": null,
                "paused_reason": null,
                "created_at": clock::format_iso(&now),
                "next_run_at": next.map(|t| clock::format_iso(&t)),
                "last_run_at": null,
                "last_status": null,
                "last_error": null,
                "last_delivery_error": null,
                "deliver": opt(new.deliver)
                    .as_str()
                    .unwrap_or(if new.origin.is_some() { "origin" } else { "local" }),
                "origin": new.origin,
                "enabled_toolsets": null,
                "workdir": null,
            });
            let job = Job::from_value(job).ok_or_else(|| CronError::Invalid("bad job".into()))?;
            jobs.push(job.clone());
            Ok(job)
        })
    }

    /// Changes a job; a new schedule recomputes its next run (unless it is paused).
    pub fn edit(&self, reference: &str, edit: JobEdit) -> Result<Job, CronError> {
        if edit.is_empty() {
            return Err(CronError::Invalid("nothing to change".into()));
        }
        let now = self.now();
        let parsed = edit
            .schedule
            .as_deref()
            .map(|s| schedule::parse(s, &now, self.zone))
            .transpose()?;
        self.update_job(reference, |job| {
            if let Some(prompt) = &edit.prompt {
                job.set("prompt", json!(prompt));
            }
            if let Some(name) = &edit.name {
                job.set("name", json!(name.trim()));
            }
            if let Some(deliver) = &edit.deliver {
                job.set("deliver", json!(deliver.trim()));
            }
            if let Some(skills) = &edit.skills {
                job.set_skills(skills.clone());
            }
            if let Some(times) = edit.repeat {
                job.set_repeat_times(Some(times));
            }
            if let Some(parsed) = &parsed {
                job.set("schedule", parsed.schedule.to_value(&parsed.display));
                job.set("schedule_display", json!(parsed.display));
                if job.state() != "paused" {
                    let next =
                        parsed
                            .schedule
                            .next_run(None, &now, self.zone)
                            .ok_or_else(|| {
                                CronError::Schedule(format!(
                                    "the time {} is more than {} s in the past",
                                    parsed.display,
                                    schedule::ONESHOT_GRACE_SECONDS
                                ))
                            })?;
                    job.set("next_run_at", json!(clock::format_iso(&next)));
                    job.set("state", json!("scheduled"));
                    job.set("enabled", json!(true));
                }
            }
            Ok(())
        })
    }

    /// Stops a job from running until it is resumed.
    pub fn pause(&self, reference: &str, reason: Option<&str>) -> Result<Job, CronError> {
        let now = clock::format_iso(&self.now());
        self.update_job(reference, |job| {
            job.set("enabled", json!(false));
            job.set("state", json!("paused"));
            job.set("paused_at", json!(now));
            job.set("paused_reason", json!(reason));
            Ok(())
        })
    }

    /// Resumes a job from now: its next run is computed afresh.
    pub fn resume(&self, reference: &str) -> Result<Job, CronError> {
        let now = self.now();
        self.update_job(reference, |job| {
            let schedule = job.schedule().ok_or_else(|| unrunnable(job))?;
            let next = schedule.next_run(None, &now, self.zone).ok_or_else(|| {
                CronError::Schedule(format!(
                    "cannot resume `{}`: its one-shot time has passed",
                    job.name()
                ))
            })?;
            job.set("enabled", json!(true));
            job.set("state", json!("scheduled"));
            job.set("paused_at", Value::Null);
            job.set("paused_reason", Value::Null);
            job.set("next_run_at", json!(clock::format_iso(&next)));
            Ok(())
        })
    }

    /// Makes a job due now (the API's "run now", Python's `trigger_job`): enabled, scheduled,
    /// unpaused, its next run this instant; the next tick runs it.
    pub fn trigger(&self, reference: &str) -> Result<Job, CronError> {
        let now = clock::format_iso(&self.now());
        self.update_job(reference, |job| {
            job.set("enabled", json!(true));
            job.set("state", json!("scheduled"));
            job.set("paused_at", Value::Null);
            job.set("paused_reason", Value::Null);
            job.set("next_run_at", json!(now));
            Ok(())
        })
    }

    /// Deletes a job and its outputs.
    pub fn remove(&self, reference: &str) -> Result<Job, CronError> {
        let removed = self.update(|jobs| {
            let id = find(jobs, reference)?.id().to_string();
            let pos = jobs
                .iter()
                .position(|j| j.id() == id)
                .ok_or_else(|| CronError::NotFound(reference.into()))?;
            Ok(jobs.remove(pos))
        })?;
        if let Ok(dir) = output::job_dir(&self.output_dir(), removed.id())
            && dir.is_dir()
        {
            let _ = std::fs::remove_dir_all(dir);
        }
        Ok(removed)
    }

    /// Claims every job that is due now, so that no other tick or manual run starts it; each
    /// must be released with [`CronStore::finish`].
    pub fn claim_due(&self) -> Result<Vec<Job>, CronError> {
        let now = self.now();
        let by = machine_id();
        self.update(|jobs| {
            let mut due = Vec::new();
            for job in jobs.iter_mut() {
                if job.id().is_empty() {
                    let id = job
                        .get("job_id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| random_id(&job.prompt()));
                    job.fields.remove("job_id");
                    job.set("id", json!(id));
                }
                if !job.enabled() || claimed(job, &now) {
                    continue;
                }
                let Some(schedule) = job.schedule() else {
                    continue;
                };
                let stored_next = job.next_run_at().and_then(clock::parse_iso);
                let next = match job.next_run_at().and_then(clock::parse_instant) {
                    Some(t) => t,
                    None => {
                        // Missing or unreadable (a hand edit): recover as Python does.
                        let last = job.last_run_at().and_then(clock::parse_instant);
                        let recovered = match &schedule {
                            Schedule::Once { .. } => {
                                schedule.next_run(last.as_ref(), &now, self.zone)
                            }
                            _ => schedule.next_run(None, &now, self.zone),
                        };
                        match recovered {
                            Some(t) => {
                                job.set("next_run_at", json!(clock::format_iso(&t)));
                                t
                            }
                            None => {
                                if job.next_run_at().is_some() {
                                    job.set("next_run_at", Value::Null);
                                }
                                continue;
                            }
                        }
                    }
                };
                if next > now {
                    continue;
                }
                // A cron time stored under another UTC offset whose wall-clock time has not
                // come yet (the zone changed since): recompute instead of firing early.
                if let (Schedule::Cron { .. }, Some(clock::Parsed::Aware(raw))) =
                    (&schedule, stored_next)
                    && raw.offset() != now.offset()
                    && raw.naive_local() > now.naive_local()
                {
                    if let Some(t) = schedule.next_run(None, &now, self.zone) {
                        job.set("next_run_at", json!(clock::format_iso(&t)));
                    }
                    continue;
                }
                let (times, completed) = job.repeat();
                if !schedule.is_recurring() && times.is_some_and(|t| completed >= t) {
                    complete(job);
                    continue;
                }
                if schedule.is_recurring() {
                    // Missed runs are not replayed: run once now, next time from now on.
                    if let Some(t) = schedule.next_run(None, &now, self.zone) {
                        job.set("next_run_at", json!(clock::format_iso(&t)));
                    }
                }
                job.set("state", json!("running"));
                job.set(
                    "run_claim",
                    json!({"at": clock::format_iso(&now), "by": by}),
                );
                due.push(job.clone());
            }
            Ok(due)
        })
    }

    /// Claims one job to run now (`hermes cron run`), whatever its next time.
    pub fn claim(&self, reference: &str) -> Result<Job, CronError> {
        let now = self.now();
        let by = machine_id();
        self.update(|jobs| {
            let id = find(jobs, reference)?.id().to_string();
            let Some(job) = jobs.iter_mut().find(|j| j.id() == id) else {
                return Err(CronError::NotFound(reference.into()));
            };
            match job.state().as_str() {
                "paused" => {
                    return Err(CronError::Invalid(format!(
                        "`{}` is paused: `hermes cron resume {id}` first",
                        job.name()
                    )));
                }
                "completed" => {
                    return Err(CronError::Invalid(format!(
                        "`{}` has completed its runs: `hermes cron edit {id} --repeat N` to run it again",
                        job.name()
                    )));
                }
                _ => {}
            }
            if claimed(job, &now) {
                return Err(CronError::Invalid(format!(
                    "`{}` is running now (claimed by {})",
                    job.name(),
                    job.get("run_claim")
                        .and_then(|c| c.get("by"))
                        .and_then(Value::as_str)
                        .unwrap_or("another process")
                )));
            }
            let schedule = job.schedule().ok_or_else(|| unrunnable(job))?;
            if schedule.is_recurring()
                && let Some(t) = schedule.next_run(None, &now, self.zone)
            {
                job.set("next_run_at", json!(clock::format_iso(&t)));
            }
            job.set("state", json!("running"));
            job.set(
                "run_claim",
                json!({"at": clock::format_iso(&now), "by": by}),
            );
            Ok(job.clone())
        })
    }

    /// Gives back a claim whose run never started (the tick was interrupted).
    pub fn release(&self, job_id: &str) -> Result<(), CronError> {
        self.update(|jobs| {
            if let Some(job) = jobs.iter_mut().find(|j| j.id() == job_id) {
                if job.state() == "running" {
                    job.set("state", json!("scheduled"));
                }
                job.set("run_claim", Value::Null);
            }
            Ok(())
        })
    }

    /// Records how a claimed run ended: last run and status, the repeat count (a job that has
    /// had its runs is `completed`), the next run, and releases the claim.
    pub fn finish(&self, job_id: &str, outcome: &RunOutcome) -> Result<Option<Job>, CronError> {
        let now = self.now();
        self.update(|jobs| {
            let Some(job) = jobs.iter_mut().find(|j| j.id() == job_id) else {
                // Removed while it ran.
                return Ok(None);
            };
            job.set("last_run_at", json!(clock::format_iso(&now)));
            job.set(
                "last_status",
                json!(if outcome.success { "ok" } else { "error" }),
            );
            job.set(
                "last_error",
                if outcome.success {
                    Value::Null
                } else {
                    json!(outcome.error.as_deref().unwrap_or("failed"))
                },
            );
            job.set("last_delivery_error", json!(outcome.delivery_error));
            job.set("fire_claim", Value::Null);
            if job.get("run_claim").is_some() {
                job.set("run_claim", Value::Null);
            }
            let paused = job.state() == "paused";
            if let Some(Value::Object(repeat)) = job.fields.get_mut("repeat") {
                let completed = repeat.get("completed").and_then(Value::as_u64).unwrap_or(0) + 1;
                repeat.insert("completed".into(), json!(completed));
            }
            let (times, completed) = job.repeat();
            if times.is_some_and(|t| completed >= t) {
                complete(job);
                return Ok(Some(job.clone()));
            }
            let schedule = job.schedule();
            let next = schedule
                .as_ref()
                .and_then(|s| s.next_run(Some(&now), &now, self.zone));
            match (next, schedule) {
                (Some(t), _) => {
                    job.set("next_run_at", json!(clock::format_iso(&t)));
                    if !paused {
                        job.set("state", json!("scheduled"));
                    }
                }
                (None, Some(s)) if s.is_recurring() => {
                    job.set("next_run_at", Value::Null);
                    job.set("state", json!("error"));
                    if job.last_error().is_none() {
                        job.set(
                            "last_error",
                            json!("cannot compute the next run of this schedule"),
                        );
                    }
                }
                _ => complete(job),
            }
            Ok(Some(job.clone()))
        })
    }

    /// Writes one run's document under `cron/output/<id>/`.
    pub fn save_output(&self, job_id: &str, text: &str) -> Result<PathBuf, CronError> {
        self.ensure_dirs()?;
        output::save(
            &self.output_dir(),
            job_id,
            text,
            &self.now(),
            self.keep_outputs,
        )
    }

    /// The tick lock file (`cron/.tick.lock`); [`TickLock::try_hold`] takes it.
    pub fn tick_lock(&self) -> Result<TickLock, CronError> {
        self.ensure_dirs()?;
        let path = self.dir.join(".tick.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| CronError::io(&path, e))?;
        Ok(TickLock {
            lock: fd_lock::RwLock::new(file),
        })
    }

    /// Records that a tick ran (`cron/ticker_heartbeat`, and `ticker_last_success` when it
    /// ended without an error: the Python gateway's files, epoch seconds).
    pub fn record_tick(&self, success: bool) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let text = format!("{now}");
        let _ = hermes_config::atomic_write(&self.dir.join("ticker_heartbeat"), text.as_bytes());
        if success {
            let _ =
                hermes_config::atomic_write(&self.dir.join("ticker_last_success"), text.as_bytes());
        }
    }

    /// Seconds since the last tick, if one was recorded.
    pub fn last_tick_age(&self) -> Option<f64> {
        let text = std::fs::read_to_string(self.dir.join("ticker_heartbeat")).ok()?;
        let at: f64 = text.trim().parse().ok()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs_f64();
        Some((now - at).max(0.0))
    }

    fn ensure_dirs(&self) -> Result<(), CronError> {
        for d in [self.dir.clone(), self.output_dir()] {
            if !d.is_dir() {
                std::fs::create_dir_all(&d).map_err(|e| CronError::io(&d, e))?;
                secure_dir(&d);
            }
        }
        Ok(())
    }

    /// The file's other top-level keys and its jobs.
    fn read(&self) -> Result<(Map<String, Value>, Vec<Job>), CronError> {
        let path = self.jobs_path();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Map::new(), Vec::new()));
            }
            Err(e) => return Err(CronError::io(&path, e)),
        };
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok((Map::new(), Vec::new()));
        }
        let corrupt = |reason: String| CronError::Corrupt {
            path: path.clone(),
            reason,
        };
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| corrupt(format!("not valid JSON ({e})")))?;
        let (top, list) = match value {
            Value::Object(mut top) => {
                let list = match top.remove("jobs") {
                    Some(Value::Array(list)) => list,
                    None | Some(Value::Null) => Vec::new(),
                    Some(_) => return Err(corrupt("`jobs` is not a list".into())),
                };
                (top, list)
            }
            Value::Array(list) => (Map::new(), list),
            _ => return Err(corrupt("expected {\"jobs\": [...]}".into())),
        };
        let jobs = list
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                Job::from_value(v).ok_or_else(|| corrupt(format!("job {} is not an object", i + 1)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((top, jobs))
    }

    /// Runs `change` on the jobs under the lock and saves them (when it succeeds).
    pub fn update<T>(
        &self,
        change: impl FnOnce(&mut Vec<Job>) -> Result<T, CronError>,
    ) -> Result<T, CronError> {
        self.ensure_dirs()?;
        let lock_path = self.dir.join(".jobs.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&lock_path)
            .map_err(|e| CronError::io(&lock_path, e))?;
        let mut lock = fd_lock::RwLock::new(file);
        let deadline = Instant::now() + LOCK_TIMEOUT;
        let _guard = loop {
            match lock.try_write() {
                Ok(g) => break g,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(_) => return Err(CronError::Locked { path: lock_path }),
            }
        };
        let (mut top, mut jobs) = self.read()?;
        let before = jobs.clone();
        let result = change(&mut jobs)?;
        if jobs != before {
            top.insert(
                "jobs".into(),
                Value::Array(jobs.into_iter().map(|j| Value::Object(j.fields)).collect()),
            );
            top.insert("updated_at".into(), json!(clock::format_iso(&self.now())));
            let mut text = serde_json::to_string_pretty(&Value::Object(top))
                .map_err(|e| CronError::Invalid(e.to_string()))?;
            text.push('\n');
            let path = self.jobs_path();
            hermes_config::atomic_write(&path, text.as_bytes())
                .map_err(|e| CronError::io(&path, e))?;
        }
        Ok(result)
    }

    fn update_job(
        &self,
        reference: &str,
        change: impl FnOnce(&mut Job) -> Result<(), CronError>,
    ) -> Result<Job, CronError> {
        self.update(|jobs| {
            let id = find(jobs, reference)?.id().to_string();
            let Some(job) = jobs.iter_mut().find(|j| j.id() == id) else {
                return Err(CronError::NotFound(reference.into()));
            };
            change(job)?;
            Ok(job.clone())
        })
    }
}

/// The job with id `reference`, else the only one with that name (ignoring case).
fn find<'a>(jobs: &'a [Job], reference: &str) -> Result<&'a Job, CronError> {
    let reference = reference.trim();
    if let Some(j) = jobs.iter().find(|j| j.id() == reference) {
        return Ok(j);
    }
    let lower = reference.to_lowercase();
    let named: Vec<&Job> = jobs
        .iter()
        .filter(|j| !reference.is_empty() && j.name().to_lowercase() == lower)
        .collect();
    match named.as_slice() {
        [] => Err(CronError::NotFound(reference.to_string())),
        [one] => Ok(one),
        many => Err(CronError::Ambiguous {
            name: reference.to_string(),
            ids: many.iter().map(|j| j.id().to_string()).collect(),
        }),
    }
}

/// Whether a run holds the job (a claim younger than the TTL; a future one is stale).
fn claimed(job: &Job, now: &DateTime<FixedOffset>) -> bool {
    let at = job
        .get("run_claim")
        .and_then(|c| c.get("at"))
        .and_then(Value::as_str)
        .and_then(clock::parse_instant);
    match at {
        Some(at) => {
            let age = (*now - at).num_seconds();
            (0..CLAIM_TTL_SECONDS).contains(&age)
        }
        None => false,
    }
}

/// A job that has had its runs: kept, disabled, `completed` (Python deletes it; keeping it
/// shows its last status, and Python skips it because it is disabled).
fn complete(job: &mut Job) {
    job.set("enabled", json!(false));
    job.set("state", json!("completed"));
    job.set("next_run_at", Value::Null);
    if job.get("run_claim").is_some() {
        job.set("run_claim", Value::Null);
    }
}

fn unrunnable(job: &Job) -> CronError {
    CronError::Invalid(format!(
        "`{}` has a schedule this build cannot run: {}",
        job.name(),
        job.get("schedule")
            .map(Value::to_string)
            .unwrap_or_default()
    ))
}

/// Who claims a run: `HERMES_MACHINE_ID`, else host and process id (for people reading the
/// file; correctness comes from the lock).
fn machine_id() -> String {
    if let Ok(id) = std::env::var("HERMES_MACHINE_ID")
        && !id.trim().is_empty()
    {
        return id.trim().to_string();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into());
    format!("{host}:{}", std::process::id())
}

/// 12 hex digits, like Python's `uuid4().hex[:12]`, not used by another job.
fn new_id(jobs: &[Job]) -> String {
    loop {
        let id = random_id("");
        if !jobs.iter().any(|j| j.id() == id) {
            return id;
        }
    }
}

fn random_id(salt: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // `RandomState` is seeded from the OS once per thread and advanced per instance.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write(salt.as_bytes());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
}

/// Owner-only access to the cron folders (they hold prompts and answers).
pub(crate) fn secure_dir(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
    }
    #[cfg(not(unix))]
    let _ = path;
}
