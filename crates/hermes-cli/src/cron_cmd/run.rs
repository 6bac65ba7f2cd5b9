//! Running cron jobs: `hermes cron tick` (every due job, once, under the tick lock) and
//! `hermes cron run ID` (one job now). Each job is a fresh agent session with source `cron`,
//! built like `-z` (unattended approvals, the session stored), without the `cronjob` and
//! `clarify` tools; its prompt is scanned for injection, prefixed with the cron note and its
//! skills' instructions; its answer is saved under `cron/output/<id>/` in the Python Hermes's
//! document format. `local` delivery is that file; `origin` and `platform:chat_id` need the
//! messaging gateway, so the job records that in `last_delivery_error`. An answer that is
//! `[SILENT]` is saved and not delivered.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use hermes_cron::{CronStore, Job, RunOutcome};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;

use super::cron_error;

/// What a cron run is told before its prompt.
pub const CRON_NOTE: &str = "[You are running as a scheduled job, with nobody watching. Your final answer is the job's output and is delivered for you: do not try to send it yourself, and do not ask questions. If there is nothing new worth reporting, answer exactly [SILENT] and nothing else.]";

/// How one run went.
pub struct Report {
    pub job: Job,
    pub outcome: RunOutcome,
    pub output: Option<PathBuf>,
    pub silent: bool,
    pub interrupted: bool,
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

/// `hermes cron tick`: the due jobs, one after the other; exit 1 when any failed.
pub async fn tick(common: &CommonArgs, store: &CronStore) -> Result<ExitCode, CliError> {
    let mut lock = store.tick_lock().map_err(cron_error)?;
    let Some(_held) = lock.try_hold() else {
        println!("Another tick is running; nothing done.");
        return Ok(ExitCode::SUCCESS);
    };
    let due = match store.claim_due() {
        Ok(due) => due,
        Err(e) => {
            store.record_tick(false);
            return Err(cron_error(e));
        }
    };
    if due.is_empty() {
        store.record_tick(true);
        println!("No jobs due.");
        return Ok(ExitCode::SUCCESS);
    }
    let cancel = CancellationToken::new();
    crate::oneshot::spawn_interrupt_handler(cancel.clone());
    let total = due.len();
    let mut failed = 0;
    let mut jobs = due.into_iter();
    for job in jobs.by_ref() {
        let report = run_job(common, store, job, &cancel).await;
        println!("{}", report.line());
        if !report.outcome.success {
            failed += 1;
        }
        if report.interrupted {
            break;
        }
    }
    // Jobs claimed but not started (interrupted): released untouched for the next tick.
    for job in jobs {
        let _ = store.release(job.id());
    }
    if cancel.is_cancelled() {
        store.record_tick(false);
        return Err(CliError::interrupted());
    }
    store.record_tick(failed == 0);
    if failed > 0 {
        return Err(CliError::runtime(format!(
            "{failed} of {total} job(s) failed (`hermes cron list` shows why)"
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// `hermes cron run ID`: one job now.
pub async fn run_now(
    common: &CommonArgs,
    store: &CronStore,
    reference: &str,
) -> Result<ExitCode, CliError> {
    let job = store.claim(reference).map_err(cron_error)?;
    let cancel = CancellationToken::new();
    crate::oneshot::spawn_interrupt_handler(cancel.clone());
    let report = run_job(common, store, job, &cancel).await;
    if report.interrupted {
        return Err(CliError::interrupted());
    }
    if !report.outcome.success {
        let mut msg = format!(
            "job {} failed: {}",
            report.job.id(),
            report.outcome.error.as_deref().unwrap_or("unknown error")
        );
        if let Some(path) = &report.output {
            let _ = write!(msg, " (saved to {})", path.display());
        }
        return Err(CliError::runtime(msg));
    }
    println!("{}", report.line());
    Ok(ExitCode::SUCCESS)
}

/// Runs one claimed job to the end and records the outcome; never fails itself.
pub async fn run_job(
    common: &CommonArgs,
    store: &CronStore,
    job: Job,
    cancel: &CancellationToken,
) -> Report {
    let started = store.now();
    let attempt = attempt(common, &job, cancel).await;
    let (prompt, result) = match attempt {
        Ok(done) => done,
        Err(failure) => (failure.prompt, Err(failure.reason)),
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
            eprintln!("hermes: cron output of {} not saved: {e}", job.id());
            None
        }
    };
    let silent = outcome.success && hermes_cron::is_silent(&answer);
    if outcome.success && !silent {
        outcome.delivery_error = super::delivery_note(&job);
    }
    if let Err(e) = store.finish(job.id(), &outcome) {
        eprintln!("hermes: cron job {} not updated: {e}", job.id());
    }
    Report {
        job,
        outcome,
        output,
        silent,
        interrupted,
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

/// Builds the session and runs the turn: the prompt sent and the answer, or why not.
async fn attempt(
    common: &CommonArgs,
    job: &Job,
    cancel: &CancellationToken,
) -> Result<(String, Result<String, String>), Failure> {
    let user_prompt = job.prompt();
    if job.has_script() {
        return Err(Failure::new(
            &user_prompt,
            "script jobs (`script`, `no_agent`) are not supported by this build; the Python Hermes runs them",
        ));
    }
    super::check_prompt(&user_prompt).map_err(|r| Failure::new(&user_prompt, r))?;
    let mut args = CommonArgs {
        resume: None,
        continue_last: false,
        ..common.clone()
    };
    // A job's own model, provider and toolsets win over the configured ones.
    if let Some(m) = job.optional("model") {
        args.model = Some(m.to_string());
    }
    if let Some(p) = job.optional("provider") {
        args.provider = Some(p.to_string());
    }
    if let Some(u) = job.optional("base_url") {
        args.base_url = Some(u.to_string());
    }
    if let Some(ts) = job.enabled_toolsets() {
        args.toolsets = Some(ts.join(","));
    }
    let _cwd = match job.optional("workdir").map(PathBuf::from) {
        Some(dir) if dir.is_dir() => Some(WorkdirGuard::enter(&dir)),
        _ => None,
    };
    let session =
        crate::setup::build(&args, "cron").map_err(|e| Failure::new(&user_prompt, e.message))?;
    for w in &session.warnings {
        eprintln!("hermes: {w}");
    }
    let session_id = session.persistence.session_id().to_string();
    let prompt = assemble_prompt(&session.skills, job, &session_id)
        .map_err(|r| Failure::new(&user_prompt, r))?;
    let recorder = session.persistence.start(&session.agent);
    let result = session
        .agent
        .run_turn(&prompt, Vec::new(), &recorder, cancel.clone())
        .await;
    recorder.end_turn(&result);
    session.background.shutdown().await;
    let outcome = if result.interrupted {
        Err("interrupted".to_string())
    } else if let Some(reason) = result.error {
        Err(reason)
    } else {
        Ok(result.final_text)
    };
    Ok((prompt, outcome))
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

/// Runs a job in its `workdir` (context files and tools see it), back where it was after.
struct WorkdirGuard {
    previous: Option<PathBuf>,
}

impl WorkdirGuard {
    fn enter(dir: &std::path::Path) -> WorkdirGuard {
        let previous = std::env::current_dir().ok();
        if std::env::set_current_dir(dir).is_err() {
            return WorkdirGuard { previous: None };
        }
        WorkdirGuard { previous }
    }
}

impl Drop for WorkdirGuard {
    fn drop(&mut self) {
        if let Some(p) = &self.previous {
            let _ = std::env::set_current_dir(p);
        }
    }
}
