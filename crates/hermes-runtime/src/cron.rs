//! Running cron jobs as sessions. Each job is a fresh session with platform `cron` (stored with
//! source `cron`, unattended approvals, without the `cronjob` and `clarify` tools) in the job's
//! `workdir` when it has one (the session's own working directory: the process's never
//! changes, so jobs and chats share a process safely); its prompt is scanned for injection and
//! prefixed with the cron note and its skills' instructions; its answer is saved under
//! `cron/output/<id>/` in the Python Hermes's document format. Where the answer goes beyond
//! that file is the [`Delivery`]'s business (the gateway delivers to chats); an answer that is
//! `[SILENT]` is saved and not delivered.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use hermes_config::{Config, Environment, HermesHome};
use hermes_cron::executions::Source;
use hermes_cron::{CronError, CronStore, Job, RunOutcome, Zone};
use hermes_llm::Overrides;
use tokio_util::sync::CancellationToken;

use crate::runtime::Runtime;
use crate::spec::{Platform, SessionSpec};
use crate::tools::parse_toolsets;
use crate::unattended::Unattended;

/// What a cron run is told before its prompt.
pub const CRON_NOTE: &str = "[You are running as a scheduled job, with nobody watching. Your final answer is the job's output and is delivered for you: do not try to send it yourself, and do not ask questions. If there is nothing new worth reporting, answer exactly [SILENT] and nothing else.]";

/// Why a job's answer did not reach every target it names (kept on the job as
/// `last_delivery_error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryFailure {
    /// Targets other than `local`, without the messaging gateway to reach them.
    #[error(
        "delivery to {} needs the messaging gateway (`hermes gateway`); answers are saved under cron/output/{job_id}/",
        targets.join(", ")
    )]
    NeedsGateway {
        targets: Vec<String>,
        job_id: String,
    },
    /// Targets the gateway could not reach: why, one reason each.
    #[error("{}", reasons.join("; "))]
    Unreached { reasons: Vec<String> },
}

/// Where a job's answer goes besides its output file.
#[async_trait::async_trait]
pub trait Delivery: Send + Sync {
    /// Delivers `answer` to the job's targets (`deliver`: `local`, `origin`,
    /// `platform:chat_id`, comma-separated); `Err` says why some target was not reached.
    async fn deliver(&self, job: &Job, answer: &str) -> Result<(), DeliveryFailure>;
}

/// Delivery without the messaging gateway: `local` is the output file; anything else is noted
/// on the job as not delivered.
#[derive(Debug, Default)]
pub struct LocalOnly;

#[async_trait::async_trait]
impl Delivery for LocalOnly {
    async fn deliver(&self, job: &Job, _answer: &str) -> Result<(), DeliveryFailure> {
        match needs_gateway(job) {
            Some(failure) => Err(failure),
            None => Ok(()),
        }
    }
}

/// The targets of a job that only the gateway reaches, when it has any.
pub fn needs_gateway(job: &Job) -> Option<DeliveryFailure> {
    let targets: Vec<String> = job
        .deliver()
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty() && *t != "local")
        .map(str::to_string)
        .collect();
    (!targets.is_empty()).then(|| DeliveryFailure::NeedsGateway {
        targets,
        job_id: job.id().to_string(),
    })
}

/// Why a job's answer will not reach where it asks without the gateway, as a note.
pub fn delivery_note(job: &Job) -> Option<String> {
    needs_gateway(job).map(|failure| failure.to_string())
}

/// The store of a home, computing schedules in the configured zone (`HERMES_TIMEZONE`, then
/// config.yaml's `timezone`, else local time); a warning when the zone is unknown.
pub fn open_store(
    home: &HermesHome,
    config: &Config,
    env: &Environment,
) -> (CronStore, Option<String>) {
    let env_tz = env.var("HERMES_TIMEZONE");
    let config_tz = config
        .raw
        .get("timezone")
        .and_then(serde_json::Value::as_str);
    let (zone, warning) = Zone::resolve(env_tz.as_deref(), config_tz);
    let keep = config
        .raw
        .pointer("/cron/output_retention")
        .and_then(serde_json::Value::as_i64)
        .map(|k| usize::try_from(k).unwrap_or(0))
        .unwrap_or(hermes_cron::output::DEFAULT_KEEP);
    (
        CronStore::new(home.root(), zone).with_output_retention(keep),
        warning,
    )
}

/// A cron prompt the injection scanner flags.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnsafePrompt(pub String);

/// Refuses a prompt the injection scanner flags, with its reason.
pub fn check_prompt(prompt: &str) -> Result<(), UnsafePrompt> {
    let findings = hermes_core::injection::scan(prompt, hermes_core::injection::Scope::Strict);
    if findings.is_clean() {
        Ok(())
    } else {
        Err(UnsafePrompt(findings.describe("cron prompt")))
    }
}

/// How one run went.
#[derive(Debug)]
pub struct Report {
    pub job: Job,
    pub outcome: RunOutcome,
    pub output: Option<PathBuf>,
    pub silent: bool,
    pub interrupted: bool,
    /// The answer (empty when the run failed).
    pub answer: String,
    /// The stored session of the run.
    pub session_id: Option<String>,
}

impl Report {
    /// One line: `ID NAME: ok, saved to PATH`.
    pub fn line(&self) -> String {
        let mut line = format!("{} {}: ", self.job.id(), self.job.name());
        if self.outcome.success {
            line.push_str("ok");
            if self.silent {
                line.push_str(" ([SILENT]: not delivered)");
            }
        } else {
            let _ = write!(
                line,
                "failed: {}",
                self.outcome.error.as_deref().unwrap_or("unknown error")
            );
        }
        if let Some(path) = &self.output {
            let _ = write!(line, ", saved to {}", path.display());
        }
        if let Some(d) = &self.outcome.delivery_error {
            let _ = write!(line, "; not delivered: {d}");
        }
        line
    }
}

/// How the due jobs of one tick went.
#[derive(Debug, Default)]
pub struct Tick {
    pub ran: usize,
    pub failed: usize,
    pub interrupted: bool,
}

/// Runs the jobs that are due now, one after the other, under the tick lock (another process
/// ticking means nothing is done: `None`). `report` is told about each run as it ends.
pub async fn tick(
    runtime: &Runtime,
    store: &CronStore,
    base: &SessionSpec,
    delivery: &dyn Delivery,
    cancel: &CancellationToken,
    report: &mut (dyn FnMut(&Report) + Send),
) -> Result<Option<Tick>, CronError> {
    let mut lock = store.tick_lock()?;
    let Some(_held) = lock.try_hold() else {
        return Ok(None);
    };
    // Attempts a dead process left open are marked unknown (never retried: their side
    // effects may have happened).
    if let Err(e) = store.executions().recover_interrupted(&store.ledger_now()) {
        tracing::warn!("{e}");
    }
    let due = match store.claim_due() {
        Ok(due) => due,
        Err(e) => {
            store.record_tick(false);
            return Err(e);
        }
    };
    let mut tick = Tick::default();
    let mut jobs = due.into_iter();
    for job in jobs.by_ref() {
        let r = run_job_from(runtime, store, job, base, delivery, cancel, Source::Builtin).await;
        tick.ran += 1;
        if !r.outcome.success {
            tick.failed += 1;
        }
        report(&r);
        if r.interrupted {
            tick.interrupted = true;
            break;
        }
    }
    // Jobs claimed but not started (interrupted): released untouched for the next tick.
    for job in jobs {
        let _ = store.release(job.id());
    }
    store.record_tick(!tick.interrupted && tick.failed == 0);
    Ok(Some(tick))
}

/// Runs one claimed job to the end, directly (`hermes cron run`), and records the outcome;
/// never fails itself. `base` holds what the frontend chose for every job (model, toolsets,
/// ...); the job's own settings win.
pub async fn run_job(
    runtime: &Runtime,
    store: &CronStore,
    job: Job,
    base: &SessionSpec,
    delivery: &dyn Delivery,
    cancel: &CancellationToken,
) -> Report {
    run_job_from(runtime, store, job, base, delivery, cancel, Source::Direct).await
}

/// [`run_job`] for an attempt started by `source`, recorded in the execution ledger: claimed
/// and running before the agent starts, its outcome after.
async fn run_job_from(
    runtime: &Runtime,
    store: &CronStore,
    job: Job,
    base: &SessionSpec,
    delivery: &dyn Delivery,
    cancel: &CancellationToken,
    source: Source,
) -> Report {
    let ledger = store.executions();
    let execution = ledger
        .claim(job.id(), source, &store.ledger_now())
        .inspect_err(|e| tracing::warn!("{e}"))
        .ok();
    if let Some(id) = &execution
        && let Err(e) = ledger.mark_running(id, &store.ledger_now())
    {
        tracing::warn!("{e}");
    }
    let started = store.now();
    let (prompt, result, session_id) = match attempt(runtime, &job, base, cancel).await {
        Ok(done) => done,
        Err(failure) => (failure.prompt, Err(failure.reason), None),
    };
    let interrupted = cancel.is_cancelled();
    let name = job.name();
    let header = |failed: bool| {
        format!(
            "# Cron Job: {name}{}\n\n**Job ID:** {}\n**Run Time:** {}\n**Schedule:** {}\n\n## Prompt\n\n{prompt}\n\n",
            if failed { " (FAILED)" } else { "" },
            job.id(),
            started.format("%Y-%m-%d %H:%M:%S"),
            job.schedule_display(),
        )
    };
    let (doc, mut outcome, answer) = match &result {
        Ok(answer) if !answer.trim().is_empty() => (
            format!("{}## Response\n\n{answer}\n", header(false)),
            RunOutcome {
                success: true,
                ..RunOutcome::default()
            },
            answer.clone(),
        ),
        Ok(_) => {
            let reason = "the agent finished without an answer".to_string();
            (
                format!("{}## Response\n\n(No response generated)\n", header(false)),
                RunOutcome {
                    success: false,
                    error: Some(reason),
                    ..RunOutcome::default()
                },
                String::new(),
            )
        }
        Err(reason) => (
            format!("{}## Error\n\n```\n{reason}\n```\n", header(true)),
            RunOutcome {
                success: false,
                error: Some(reason.clone()),
                ..RunOutcome::default()
            },
            String::new(),
        ),
    };
    let output = match store.save_output(job.id(), &doc) {
        Ok(path) => Some(path),
        Err(e) => {
            tracing::warn!("cron output of {} not saved: {e}", job.id());
            None
        }
    };
    let silent = outcome.success && hermes_cron::is_silent(&answer);
    if outcome.success && !silent {
        outcome.delivery_error = delivery
            .deliver(&job, &answer)
            .await
            .err()
            .map(|failure| failure.to_string());
    }
    if let Err(e) = store.finish(job.id(), &outcome) {
        tracing::warn!("cron job {} not updated: {e}", job.id());
    }
    if let Some(id) = &execution
        && let Err(e) = ledger.finish(
            id,
            outcome.success,
            outcome.error.as_deref(),
            &store.ledger_now(),
        )
    {
        tracing::warn!("{e}");
    }
    Report {
        job,
        outcome,
        output,
        silent,
        interrupted,
        answer,
        session_id,
    }
}

struct Failure {
    prompt: String,
    reason: String,
}

impl Failure {
    fn new(prompt: &str, reason: impl Into<String>) -> Failure {
        Failure {
            prompt: prompt.to_string(),
            reason: reason.into(),
        }
    }
}

/// The session spec of a job: `base`, with the job's own model, provider, toolsets and
/// working directory winning.
pub fn job_spec(job: &Job, base: &SessionSpec) -> SessionSpec {
    let mut spec = SessionSpec {
        platform: Platform::Cron,
        resume: crate::spec::Resume::New,
        ..base.clone()
    };
    let mut model = Overrides {
        ..base.model.clone()
    };
    if let Some(m) = job.optional("model") {
        model.model = Some(m.to_string());
    }
    if let Some(p) = job.optional("provider") {
        model.provider = Some(p.to_string());
    }
    if let Some(u) = job.optional("base_url") {
        model.base_url = Some(u.to_string());
    }
    spec.model = model;
    if let Some(ts) = job.enabled_toolsets() {
        spec.toolsets = Some(parse_toolsets(&ts.join(",")));
    }
    if let Some(dir) = job.optional("workdir").map(PathBuf::from)
        && dir.is_dir()
    {
        spec.cwd = dir;
    }
    spec
}

/// Builds the session and runs the turn: the prompt sent, the answer or why not, and the
/// stored session.
async fn attempt(
    runtime: &Runtime,
    job: &Job,
    base: &SessionSpec,
    cancel: &CancellationToken,
) -> Result<(String, Result<String, String>, Option<String>), Failure> {
    let user_prompt = job.prompt();
    if job.has_script() {
        return Err(Failure::new(
            &user_prompt,
            "script jobs (`script`, `no_agent`) are not supported by this build; the Python Hermes runs them",
        ));
    }
    check_prompt(&user_prompt).map_err(|r| Failure::new(&user_prompt, r.0))?;
    let spec = job_spec(job, base);
    let mut session = runtime
        .open_session(spec, Arc::new(Unattended))
        .await
        .map_err(|e| Failure::new(&user_prompt, e.to_string()))?;
    let session_id = session.session_id();
    let prompt = assemble_prompt(session.skills(), job, &session_id)
        .map_err(|r| Failure::new(&user_prompt, r))?;
    let report = session
        .turn(&prompt, &hermes_core::NoEvents, cancel.clone())
        .await;
    session.close().await;
    let outcome = match report.end {
        hermes_protocol::TurnEnd::Interrupted => Err("interrupted".to_string()),
        hermes_protocol::TurnEnd::Failed(f) => Err(f.message),
        _ => Ok(report.final_text),
    };
    Ok((prompt, outcome, Some(session_id)))
}

/// The message a job sends: the cron note, each skill's instructions (a skill that is missing
/// is named so the answer can say so), then the prompt.
fn assemble_prompt(
    library: &hermes_core::skills::Library,
    job: &Job,
    session_id: &str,
) -> Result<String, String> {
    let prompt = job.prompt();
    let skills = job.skills();
    if skills.is_empty() {
        return Ok(format!("{CRON_NOTE}\n\n{prompt}"));
    }
    let mut parts = vec![CRON_NOTE.to_string()];
    let mut missing = Vec::new();
    for name in &skills {
        let skill = match library.find(name) {
            Ok(s) => s,
            Err(_) => {
                missing.push(name.clone());
                continue;
            }
        };
        let message = hermes_core::skills::invoke::message(library, &skill, "", session_id)
            .map_err(|notice| format!("skill `{name}` was not loaded: {notice}"))?;
        parts.push(message);
    }
    if !missing.is_empty() {
        parts.insert(
            1,
            format!(
                "[The skill(s) {} listed for this job were not found and were skipped: start your answer by saying so.]",
                missing.join(", ")
            ),
        );
    }
    if !prompt.trim().is_empty() {
        parts.push(format!("The job's instruction: {}", prompt.trim()));
    }
    Ok(parts.join("\n\n"))
}
