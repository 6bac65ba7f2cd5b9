//! `/api/jobs`: the home's cron jobs (`cron/jobs.json`, the store `hermes cron` edits) over
//! HTTP, the Python Hermes's jobs API: list, create, get, patch, delete, `pause`, `resume` and
//! `run` (run now: the job is made due and the gateway's scheduler is woken, so it runs within
//! moments instead of at the next tick). Answers are `{"job": ...}` / `{"jobs": [...]}` and
//! errors `{"error": "..."}`, as Python's; a job id is 12 hex digits (400 otherwise).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use hermes_cron::{CronError, CronStore, Job, JobEdit, NewJob};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::sessions::json_object;
use super::{Shared, check_auth, json_response};

/// Python's limits on what a client may store in a job.
const MAX_NAME_LENGTH: usize = 200;
const MAX_PROMPT_LENGTH: usize = 5000;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListQuery {
    include_disabled: Option<String>,
}

fn error(status: StatusCode, message: &str) -> Response {
    json_response(status, json!({"error": message}))
}

fn job_json(job: &Job) -> Value {
    Value::Object(job.fields.clone())
}

/// Jobs as listed: each with its newest execution attempt from the ledger (Python's
/// `latest_execution`, null when it never ran). An unreadable ledger lists no attempts.
fn with_latest_executions(store: &CronStore, jobs: Vec<Job>) -> Vec<Value> {
    let ids: Vec<&str> = jobs.iter().map(Job::id).collect();
    let latest = store
        .executions()
        .latest(&ids)
        .inspect_err(|e| tracing::warn!("{e}"))
        .unwrap_or_default();
    jobs.iter()
        .map(|job| {
            let mut v = job_json(job);
            v["latest_execution"] = latest
                .get(job.id())
                .map_or(Value::Null, hermes_cron::executions::Execution::to_json);
            v
        })
        .collect()
}

fn cron_error(e: &CronError) -> Response {
    match e {
        CronError::NotFound(_) => error(StatusCode::NOT_FOUND, "Job not found"),
        e if e.is_usage() => error(StatusCode::BAD_REQUEST, &e.to_string()),
        e => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// Runs `f` on the home's cron store off the async threads; 501 when this server has none.
async fn with_cron<T: Send + 'static>(
    s: &Shared,
    f: impl FnOnce(&CronStore) -> Result<T, CronError> + Send + 'static,
) -> Result<T, Box<Response>> {
    let Some(runtime) = s.config.backing.runtime.clone() else {
        return Err(Box::new(error(
            StatusCode::NOT_IMPLEMENTED,
            "Cron module not available",
        )));
    };
    let done = tokio::task::spawn_blocking(move || {
        let (store, _) =
            hermes_runtime::cron::open_store(runtime.home(), runtime.config(), runtime.env());
        f(&store)
    })
    .await;
    match done {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Box::new(cron_error(&e))),
        Err(e) => Err(Box::new(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the cron store failed: {e}"),
        ))),
    }
}

/// The key check, then the job id's shape (Python's `[a-f0-9]{12}`).
fn preamble(s: &Shared, headers: &HeaderMap, id: Option<&str>) -> Option<Response> {
    if let Some(denied) = check_auth(s, headers) {
        return Some(denied);
    }
    let valid =
        |id: &str| id.len() == 12 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    match id {
        Some(id) if !valid(id) => Some(error(StatusCode::BAD_REQUEST, "Invalid job ID format")),
        _ => None,
    }
}

fn one(result: Result<Job, Box<Response>>) -> Response {
    match result {
        Ok(job) => json_response(StatusCode::OK, json!({"job": job_json(&job)})),
        Err(r) => *r,
    }
}

/// A prompt the injection scanner flags is refused, as `hermes cron add` refuses it.
fn check_prompt(prompt: &str) -> Result<(), Box<Response>> {
    if prompt.chars().count() > MAX_PROMPT_LENGTH {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            &format!("Prompt must be ≤ {MAX_PROMPT_LENGTH} characters"),
        )));
    }
    if !prompt.is_empty()
        && let Err(e) = hermes_runtime::cron::check_prompt(prompt)
    {
        return Err(Box::new(error(StatusCode::BAD_REQUEST, &e.to_string())));
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), Box<Response>> {
    if name.chars().count() > MAX_NAME_LENGTH {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            &format!("Name must be ≤ {MAX_NAME_LENGTH} characters"),
        )));
    }
    Ok(())
}

fn text(body: &Map<String, Value>, key: &str) -> Option<String> {
    match body.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

/// `skills` (a list or one name), else the single `skill`.
fn skills(body: &Map<String, Value>) -> Option<Vec<String>> {
    match body.get("skills").or_else(|| body.get("skill")) {
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        ),
        Some(Value::String(s)) => Some(vec![s.clone()]),
        Some(Value::Null) => Some(Vec::new()),
        _ => None,
    }
}

/// `repeat`: a positive whole number, or absent.
fn repeat(body: &Map<String, Value>) -> Result<Option<i64>, Box<Response>> {
    match body.get("repeat") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().filter(|n| *n >= 1).map(Some).ok_or_else(|| {
            Box::new(error(
                StatusCode::BAD_REQUEST,
                "Repeat must be a positive integer",
            ))
        }),
    }
}

/// `GET /api/jobs`: enabled jobs (`?include_disabled=true`: every job).
pub(crate) async fn list(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Response {
    if let Some(r) = preamble(&s, &headers, None) {
        return r;
    }
    let all = query
        .ok()
        .and_then(|Query(q)| q.include_disabled)
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1"));
    let listed = with_cron(&s, move |store| {
        let jobs: Vec<Job> = store
            .list()?
            .into_iter()
            .filter(|j| all || j.enabled())
            .collect();
        Ok(with_latest_executions(store, jobs))
    })
    .await;
    match listed {
        Ok(jobs) => json_response(StatusCode::OK, json!({"jobs": jobs})),
        Err(r) => *r,
    }
}

/// `POST /api/jobs`: `name` and `schedule` required; `prompt`, `deliver` (default `local`),
/// `skills`, `repeat`. The job records that it came from the API.
pub(crate) async fn create(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Some(r) = preamble(&s, &headers, None) {
        return r;
    }
    let body = match json_object(body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let name = text(&body, "name").unwrap_or_default().trim().to_string();
    let schedule = text(&body, "schedule")
        .unwrap_or_default()
        .trim()
        .to_string();
    let prompt = text(&body, "prompt").unwrap_or_default();
    if name.is_empty() {
        return error(StatusCode::BAD_REQUEST, "Name is required");
    }
    if let Err(r) = check_name(&name) {
        return *r;
    }
    if schedule.is_empty() {
        return error(StatusCode::BAD_REQUEST, "Schedule is required");
    }
    if let Err(r) = check_prompt(&prompt) {
        return *r;
    }
    let repeat = match repeat(&body) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let new = NewJob {
        prompt,
        schedule,
        name: Some(name),
        repeat,
        deliver: Some(text(&body, "deliver").unwrap_or_else(|| "local".into())),
        skills: skills(&body).unwrap_or_default(),
        origin: Some(json!({"platform": "api_server", "chat_id": "api"})),
        ..NewJob::default()
    };
    one(with_cron(&s, move |store| store.create(new)).await)
}

/// `GET /api/jobs/{id}`.
pub(crate) async fn get(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = preamble(&s, &headers, Some(&id)) {
        return r;
    }
    let found = with_cron(&s, move |store| {
        let job = store.resolve(&id)?;
        Ok(with_latest_executions(store, vec![job]).remove(0))
    })
    .await;
    match found {
        Ok(job) => json_response(StatusCode::OK, json!({"job": job})),
        Err(r) => *r,
    }
}

/// `PATCH /api/jobs/{id}`: `name`, `schedule`, `prompt`, `deliver`, `skills`/`skill`, `repeat`,
/// `enabled` (false pauses the job, true resumes it); other fields are ignored.
pub(crate) async fn patch(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Some(r) = preamble(&s, &headers, Some(&id)) {
        return r;
    }
    let body = match json_object(body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    const ALLOWED: [&str; 8] = [
        "name", "schedule", "prompt", "deliver", "skills", "skill", "repeat", "enabled",
    ];
    if !body.keys().any(|k| ALLOWED.contains(&k.as_str())) {
        return error(StatusCode::BAD_REQUEST, "No valid fields to update");
    }
    let edit = JobEdit {
        schedule: text(&body, "schedule"),
        prompt: text(&body, "prompt"),
        name: text(&body, "name"),
        deliver: text(&body, "deliver"),
        repeat: match repeat(&body) {
            Ok(r) => r,
            Err(r) => return *r,
        },
        skills: skills(&body),
    };
    if let Some(name) = &edit.name
        && let Err(r) = check_name(name)
    {
        return *r;
    }
    if let Some(prompt) = &edit.prompt
        && let Err(r) = check_prompt(prompt)
    {
        return *r;
    }
    let enabled = body.get("enabled").and_then(Value::as_bool);
    one(with_cron(&s, move |store| {
        let mut job = store.resolve(&id)?;
        if !edit.is_empty() {
            job = store.edit(&id, edit)?;
        }
        match enabled {
            Some(false) if job.state() != "paused" => store.pause(&id, None),
            Some(true) if job.state() == "paused" => store.resume(&id),
            _ => Ok(job),
        }
    })
    .await)
}

/// `DELETE /api/jobs/{id}`: the job and its saved outputs.
pub(crate) async fn delete(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = preamble(&s, &headers, Some(&id)) {
        return r;
    }
    match with_cron(&s, move |store| store.remove(&id)).await {
        Ok(_) => json_response(StatusCode::OK, json!({"ok": true})),
        Err(r) => *r,
    }
}

/// `POST /api/jobs/{id}/pause`.
pub(crate) async fn pause(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = preamble(&s, &headers, Some(&id)) {
        return r;
    }
    one(with_cron(&s, move |store| store.pause(&id, None)).await)
}

/// `POST /api/jobs/{id}/resume`.
pub(crate) async fn resume(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = preamble(&s, &headers, Some(&id)) {
        return r;
    }
    one(with_cron(&s, move |store| store.resume(&id)).await)
}

/// `POST /api/jobs/{id}/run`: due now, and the scheduler woken to run it.
pub(crate) async fn run(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = preamble(&s, &headers, Some(&id)) {
        return r;
    }
    let triggered = with_cron(&s, move |store| store.trigger(&id)).await;
    if triggered.is_ok()
        && let Some(wake) = &s.config.backing.cron_wake
    {
        wake.notify_one();
    }
    one(triggered)
}
