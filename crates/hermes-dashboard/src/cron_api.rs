//! The cron page's routes over hermes-cron (`cron/jobs.json`, the store `hermes cron` edits),
//! Python's dashboard answers: the job list (every job, paused ones too) and one job as bare
//! job objects, each with its newest execution attempt and the text of its last output;
//! create, pause, resume; "run now" (`trigger`: made due for a running gateway's scheduler,
//! else `hermes cron run ID` started as a command of its own, so the run is the CLI's: its
//! session, its saved output; at most [`MAX_RUNS`] at once); and a job's runs (its attempts
//! from the ledger).

use std::process::Stdio;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use hermes_cron::{CronError, CronStore, Job, NewJob};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::App;
use crate::reply::{ApiError, ApiResult, blocking, body};

/// "Run now" jobs running at once, at most.
pub const MAX_RUNS: usize = 4;
/// The longest last output sent with a job (its file may be longer).
const MAX_OUTPUT_CHARS: usize = 20_000;
/// Python's limits on what a page may store in a job.
const MAX_NAME_LENGTH: usize = 200;
const MAX_PROMPT_LENGTH: usize = 5_000;
/// Runs listed at most.
const MAX_RUNS_LISTED: usize = 100;

fn cron_error(e: CronError) -> ApiError {
    match e {
        CronError::NotFound(_) => ApiError::not_found("Job not found"),
        e if e.is_usage() => ApiError::bad_request(e.to_string()),
        e => ApiError::internal(e.to_string()),
    }
}

async fn with_cron<T: Send + 'static>(
    app: &App,
    f: impl FnOnce(&CronStore) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let home = app.home.clone();
    blocking(move || {
        let (config, env) = hermes_config::load(&home)
            .map_err(|e| ApiError::internal(format!("config.yaml: {e}")))?;
        let (store, _) = hermes_runtime::cron::open_store(&home, &config, &env);
        f(&store)
    })
    .await
}

/// The newest saved output of a job, cut to [`MAX_OUTPUT_CHARS`].
fn last_output(store: &CronStore, id: &str) -> Value {
    let Some(path) = hermes_cron::output::latest(&store.output_dir(), id) else {
        return Value::Null;
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let cut: String = text.chars().take(MAX_OUTPUT_CHARS).collect();
            json!({"path": path.display().to_string(), "text": cut, "truncated": cut.len() < text.len()})
        }
        Err(_) => Value::Null,
    }
}

/// Jobs as the page shows them: the stored fields, the newest attempt, the last output.
fn jobs_json(store: &CronStore, jobs: &[Job]) -> Vec<Value> {
    let ids: Vec<&str> = jobs.iter().map(Job::id).collect();
    let latest = store
        .executions()
        .latest(&ids)
        .inspect_err(|e| tracing::warn!("{e}"))
        .unwrap_or_default();
    jobs.iter()
        .map(|job| {
            let mut v = Value::Object(job.fields.clone());
            v["state"] = json!(job.state());
            v["schedule_display"] = json!(job.schedule_display());
            v["latest_execution"] = latest
                .get(job.id())
                .map_or(Value::Null, hermes_cron::executions::Execution::to_json);
            v["last_output"] = last_output(store, job.id());
            v
        })
        .collect()
}

fn one_job(store: &CronStore, job: Job) -> Value {
    jobs_json(store, std::slice::from_ref(&job))
        .pop()
        .unwrap_or(Value::Null)
}

/// `GET /api/cron/jobs`: every job.
pub(crate) async fn list(State(app): State<Arc<App>>) -> ApiResult {
    app.reap_runs();
    let jobs = with_cron(&app, |store| {
        let jobs = store.list().map_err(cron_error)?;
        Ok(jobs_json(store, &jobs))
    })
    .await?;
    Ok(Json(Value::Array(jobs)))
}

/// `GET /api/cron/jobs/{id}`.
pub(crate) async fn get_one(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult {
    let job = with_cron(&app, move |store| {
        let job = store.resolve(&id).map_err(cron_error)?;
        Ok(one_job(store, job))
    })
    .await?;
    Ok(Json(job))
}

#[derive(Debug, Deserialize)]
pub(crate) struct Create {
    #[serde(default)]
    prompt: String,
    #[serde(default)]
    schedule: String,
    #[serde(default)]
    name: String,
    deliver: Option<String>,
    skills: Option<Vec<String>>,
    model: Option<String>,
    provider: Option<String>,
    repeat: Option<i64>,
}

/// `POST /api/cron/jobs` `{schedule, prompt, name?, deliver?, skills?, model?, provider?,
/// repeat?}`: the new job. A prompt the injection scanner flags is refused, as `hermes cron
/// add` refuses it.
pub(crate) async fn create(
    State(app): State<Arc<App>>,
    raw: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let c: Create = body(raw)?;
    if c.schedule.trim().is_empty() {
        return Err(ApiError::bad_request("Schedule is required"));
    }
    if c.name.chars().count() > MAX_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Name must be ≤ {MAX_NAME_LENGTH} characters"
        )));
    }
    if c.prompt.chars().count() > MAX_PROMPT_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Prompt must be ≤ {MAX_PROMPT_LENGTH} characters"
        )));
    }
    if c.prompt.trim().is_empty() && c.skills.as_ref().is_none_or(Vec::is_empty) {
        return Err(ApiError::bad_request(
            "A job needs a prompt or at least one skill",
        ));
    }
    if !c.prompt.is_empty() {
        hermes_runtime::cron::check_prompt(&c.prompt)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
    }
    let text = |s: Option<String>| s.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let new = NewJob {
        prompt: c.prompt,
        schedule: c.schedule.trim().to_string(),
        name: text(Some(c.name)),
        repeat: c.repeat,
        deliver: Some(text(c.deliver).unwrap_or_else(|| "local".into())),
        skills: hermes_cron::job::normalize_skills(c.skills.unwrap_or_default()),
        model: text(c.model),
        provider: text(c.provider),
        origin: None,
    };
    let job = with_cron(&app, move |store| {
        let job = store.create(new).map_err(cron_error)?;
        Ok(one_job(store, job))
    })
    .await?;
    Ok(Json(job))
}

/// `POST /api/cron/jobs/{id}/pause`.
pub(crate) async fn pause(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult {
    let job = with_cron(&app, move |store| {
        let job = store.pause(&id, None).map_err(cron_error)?;
        Ok(one_job(store, job))
    })
    .await?;
    Ok(Json(job))
}

/// `POST /api/cron/jobs/{id}/resume`.
pub(crate) async fn resume(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult {
    let job = with_cron(&app, move |store| {
        let job = store.resume(&id).map_err(cron_error)?;
        Ok(one_job(store, job))
    })
    .await?;
    Ok(Json(job))
}

/// `POST /api/cron/jobs/{id}/trigger`: run now. With a gateway running for this home the job
/// is made due and its scheduler runs it at its next tick (`"runner": "gateway"`), so the two
/// never run it side by side; otherwise `hermes cron run ID` is started here (`"runner":
/// "dashboard"`, its `pid`), 429 while [`MAX_RUNS`] of those are going.
pub(crate) async fn trigger(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult {
    let (_, gateway) = hermes_gateway::chat::state::read(app.home.root());
    if gateway.is_some() {
        let job = with_cron(&app, move |store| {
            let job = store.trigger(&id).map_err(cron_error)?;
            Ok(one_job(store, job))
        })
        .await?;
        return Ok(Json(json!({"ok": true, "job": job, "runner": "gateway"})));
    }
    if app.reap_runs() >= MAX_RUNS {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!("{MAX_RUNS} jobs started here are still running; wait for one to finish"),
        ));
    }
    let job = with_cron(&app, move |store| store.resolve(&id).map_err(cron_error)).await?;
    let child = std::process::Command::new(&app.exe)
        .args(["cron", "run", job.id()])
        .env("HERMES_HOME", app.home.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            ApiError::internal(format!(
                "cannot start `{} cron run`: {e}",
                app.exe.display()
            ))
        })?;
    let pid = child.id();
    if let Ok(mut runs) = app.runs.lock() {
        runs.push(child);
    }
    let id = job.id().to_string();
    let job = with_cron(&app, move |store| {
        let job = store.resolve(&id).map_err(cron_error)?;
        Ok(one_job(store, job))
    })
    .await?;
    Ok(Json(
        json!({"ok": true, "job": job, "runner": "dashboard", "pid": pid}),
    ))
}

/// `GET /api/cron/jobs/{id}/runs`: `{"runs", "limit"}`, the job's attempts from the executions
/// ledger, newest first (Python lists the run sessions, found by an id that carries the job's;
/// ours are not named after their job, and the ledger records every attempt).
pub(crate) async fn runs(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult {
    let runs = with_cron(&app, move |store| {
        let job = store.resolve(&id).map_err(cron_error)?;
        let runs = store
            .executions()
            .list(Some(job.id()), MAX_RUNS_LISTED)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(runs
            .iter()
            .map(hermes_cron::executions::Execution::to_json)
            .collect::<Vec<_>>())
    })
    .await?;
    Ok(Json(json!({"runs": runs, "limit": MAX_RUNS_LISTED})))
}
