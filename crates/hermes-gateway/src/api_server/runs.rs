//! Runs: `POST /v1/runs` starts a turn in the background (202 with its `run_id`; the body is
//! a Responses request: `input`, `instructions`, `previous_response_id`,
//! `conversation_history`), `GET /v1/runs/{id}` is its status object, `GET
//! /v1/runs/{id}/events` streams its lifecycle as SSE `data:` events (`run.started`,
//! `message.delta`, `tool.started`, `tool.completed`, `approval.request`,
//! `approval.responded`, then `run.completed`, `run.failed` or `run.cancelled`; a subscriber
//! gets every event from the start, then the stream closes), `POST /v1/runs/{id}/approval`
//! answers the pending approval prompt of a dangerous command (`once`, `session`, `always`,
//! `deny`) through the session's approval gate, and `POST /v1/runs/{id}/stop` cancels the turn.
//! The last [`MAX_KEPT_RUNS`] runs are kept (finished ones are forgotten first); each run's
//! event log is bounded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use hermes_core::EventSink;
use hermes_protocol::{AgentEvent, TurnEnd};
use hermes_tools::{ApprovalAnswer, ApprovalRequest, Interaction};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::responses::{authorized_request, turn_of};
use super::{
    Approver, Shared, admit, body_bytes, check_auth, error_response, json_response, new_id,
    session_key_header, set_session_key_header, sse_response,
};

/// Runs remembered at once (Python keeps its run table unbounded; we do not).
pub const MAX_KEPT_RUNS: usize = 128;
/// Events kept per run; `message.delta` events beyond it are dropped from the log (the final
/// `run.completed` still carries the whole output).
const MAX_EVENTS: usize = 4096;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// One run: its status object, its event log and its pending approval.
pub(crate) struct Run {
    id: String,
    status: Mutex<Value>,
    log: Mutex<Vec<Value>>,
    /// The number of events logged and whether the run is over: subscribers wait on it.
    progress: watch::Sender<(usize, bool)>,
    pending: Mutex<Option<oneshot::Sender<ApprovalAnswer>>>,
    cancel: CancellationToken,
}

impl Run {
    fn set_status(&self, status: &str, fields: Value) {
        if let Ok(mut s) = self.status.lock() {
            s["status"] = json!(status);
            s["updated_at"] = json!(now());
            if let Value::Object(f) = fields {
                for (k, v) in f {
                    s[k.as_str()] = v;
                }
            }
        }
    }

    fn push(&self, event: &str, mut data: Value) {
        data["event"] = json!(event);
        data["run_id"] = json!(self.id);
        data["timestamp"] = json!(now());
        let Ok(mut log) = self.log.lock() else {
            return;
        };
        if log.len() >= MAX_EVENTS && event == "message.delta" {
            return;
        }
        log.push(data);
        let n = log.len();
        drop(log);
        if let Ok(mut s) = self.status.lock() {
            s["last_event"] = json!(event);
        }
        self.progress.send_modify(|p| p.0 = n);
    }

    fn close(&self) {
        self.progress.send_modify(|p| p.1 = true);
    }

    fn is_finished(&self) -> bool {
        self.progress.borrow().1
    }
}

/// The runs this server remembers, oldest first.
pub(crate) struct Runs {
    runs: Mutex<VecDeque<Arc<Run>>>,
    max: usize,
}

impl Runs {
    pub(crate) fn new(max: usize) -> Runs {
        Runs {
            runs: Mutex::new(VecDeque::new()),
            max: max.max(1),
        }
    }

    /// How many remembered runs have not finished (`/health/detailed`).
    pub(crate) fn running(&self) -> usize {
        self.runs
            .lock()
            .map(|runs| runs.iter().filter(|r| !r.is_finished()).count())
            .unwrap_or(0)
    }

    fn get(&self, id: &str) -> Option<Arc<Run>> {
        self.runs.lock().ok()?.iter().find(|r| r.id == id).cloned()
    }

    /// Remembers `run`, forgetting the oldest finished runs beyond the bound (running ones
    /// are kept: the concurrency limit bounds them).
    fn insert(&self, run: Arc<Run>) {
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        runs.push_back(run);
        while runs.len() > self.max {
            match runs.iter().position(|r| r.is_finished()) {
                Some(i) => {
                    runs.remove(i);
                }
                None => break,
            }
        }
    }
}

/// The approval prompts of one run, answered through `POST /v1/runs/{id}/approval`.
struct RunApprover {
    run: Arc<Run>,
}

#[async_trait::async_trait]
impl Interaction for RunApprover {
    fn is_interactive(&self) -> bool {
        true
    }

    async fn clarify(&self, _question: &str, _choices: &[String]) -> Option<String> {
        None
    }

    async fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.run.pending.lock() {
            *p = Some(tx);
        }
        let choices: &[&str] = if request.judge_denied {
            &["once", "deny"]
        } else if request.allow_permanent {
            &["once", "session", "always", "deny"]
        } else {
            &["once", "session", "deny"]
        };
        self.run.set_status("waiting_for_approval", json!({}));
        self.run.push(
            "approval.request",
            json!({"command": request.command, "description": request.description,
                "choices": choices}),
        );
        // The gate's own timeout (approvals.timeout) bounds this wait; a stopped run denies.
        let answer = tokio::select! {
            a = rx => a.unwrap_or(ApprovalAnswer::Deny),
            _ = self.run.cancel.cancelled() => ApprovalAnswer::Deny,
        };
        if let Ok(mut p) = self.run.pending.lock() {
            *p = None;
        }
        if self
            .run
            .status
            .lock()
            .is_ok_and(|s| s["status"] == "waiting_for_approval")
        {
            self.run.set_status("running", json!({}));
        }
        answer
    }
}

pub(crate) async fn start(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request = match authorized_request(&s, &headers, body) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let key = match session_key_header(&s, &headers) {
        Ok(k) => k,
        Err(r) => return *r,
    };
    let (mut input, _) = match turn_of(&s, &request) {
        Ok(t) => t,
        Err(r) => return *r,
    };
    input.memory_scope = key.clone();
    let permit = match admit(&s) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let id = new_id("run_");
    let created = now();
    let (progress, _) = watch::channel((0, false));
    let run = Arc::new(Run {
        id: id.clone(),
        status: Mutex::new(
            json!({"object": "hermes.run", "run_id": id, "status": "queued",
            "created_at": created, "updated_at": created, "model": request.model
                .clone().unwrap_or_else(|| s.config.model_name.clone())}),
        ),
        log: Mutex::new(Vec::new()),
        progress,
        pending: Mutex::new(None),
        cancel: s.turns.child_token(),
    });
    s.runs.insert(run.clone());
    input.approver = Some(Approver(Arc::new(RunApprover { run: run.clone() })));
    let sink_run = run.clone();
    let events: Arc<dyn EventSink> = Arc::new(move |event: AgentEvent| match event {
        AgentEvent::TextDelta(t) if !t.is_empty() => {
            sink_run.push("message.delta", json!({"delta": t}));
        }
        AgentEvent::ToolStarted { name, preview, .. } => {
            sink_run.push("tool.started", json!({"tool": name, "preview": preview}));
        }
        AgentEvent::ToolFinished {
            name, duration, ok, ..
        } => {
            sink_run.push(
                "tool.completed",
                json!({"tool": name, "duration": duration.as_secs_f64(), "error": !ok}),
            );
        }
        _ => {}
    });
    let runner = s.runner.clone();
    tokio::spawn(async move {
        let _permit = permit;
        run.set_status("running", json!({}));
        run.push("run.started", json!({}));
        let outcome = runner.run(input, events, run.cancel.clone()).await;
        match outcome {
            Err(e) => {
                run.push("run.failed", json!({"error": e.to_string()}));
                run.set_status("failed", json!({"error": e.to_string()}));
            }
            Ok(o) => {
                let usage = json!({"input_tokens": o.usage.input_tokens,
                    "output_tokens": o.usage.output_tokens, "total_tokens": o.usage.total()});
                match &o.end {
                    TurnEnd::Interrupted => {
                        run.push("run.cancelled", json!({}));
                        run.set_status("cancelled", json!({"session_id": o.session_id}));
                    }
                    TurnEnd::Failed(f) => {
                        run.push("run.failed", json!({"error": f.message}));
                        run.set_status(
                            "failed",
                            json!({"error": f.message, "session_id": o.session_id}),
                        );
                    }
                    TurnEnd::Completed | TurnEnd::BudgetExhausted => {
                        run.push(
                            "run.completed",
                            json!({"output": o.final_text, "usage": usage}),
                        );
                        run.set_status(
                            "completed",
                            json!({"output": o.final_text, "usage": usage,
                                "session_id": o.session_id}),
                        );
                    }
                }
            }
        }
        run.close();
    });
    let mut response = json_response(
        StatusCode::ACCEPTED,
        json!({"run_id": id, "status": "started"}),
    );
    set_session_key_header(&mut response, key.as_deref());
    response
}

fn not_found(id: &str) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &format!("Run not found: {id}"),
        "invalid_request_error",
        Some("run_not_found"),
    )
}

pub(crate) async fn status(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    match s.runs.get(&id) {
        Some(run) => {
            let status = run.status.lock().map(|s| s.clone()).unwrap_or_default();
            json_response(StatusCode::OK, status)
        }
        None => not_found(&id),
    }
}

pub(crate) async fn events(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let Some(run) = s.runs.get(&id) else {
        return not_found(&id);
    };
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let mut progress = run.progress.subscribe();
    // The subscriber's own token: a client that leaves stops this copy loop, not the run.
    let gone = CancellationToken::new();
    let stop = gone.clone();
    tokio::spawn(async move {
        let mut sent = 0usize;
        loop {
            let batch: Vec<Value> = run
                .log
                .lock()
                .map(|log| log.get(sent..).unwrap_or_default().to_vec())
                .unwrap_or_default();
            for event in batch {
                sent += 1;
                if tx.send(crate::wire::sse(None, &event)).is_err() {
                    return;
                }
            }
            let (logged, finished) = *progress.borrow_and_update();
            if finished && sent >= logged {
                let _ = tx.send(": stream closed\n\n".to_string());
                return;
            }
            if sent < logged {
                continue;
            }
            tokio::select! {
                changed = progress.changed() => if changed.is_err() { return; },
                _ = stop.cancelled() => return,
            }
        }
    });
    sse_response(rx, gone.drop_guard(), s.config.sse_keepalive)
}

pub(crate) async fn approval(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let Some(run) = s.runs.get(&id) else {
        return not_found(&id);
    };
    let body = match body_bytes(body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let raw = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("choice").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let (choice, answer) = match raw.as_str() {
        "once" | "approve" | "approved" | "allow" => ("once", ApprovalAnswer::Once),
        "session" => ("session", ApprovalAnswer::Session),
        "always" => ("always", ApprovalAnswer::Always),
        "deny" => ("deny", ApprovalAnswer::Deny),
        _ => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "Invalid approval choice; expected one of: once, session, always, deny",
                "invalid_request_error",
                Some("invalid_approval_choice"),
            );
        }
    };
    let pending = run.pending.lock().ok().and_then(|mut p| p.take());
    let Some(tx) = pending else {
        return error_response(
            StatusCode::CONFLICT,
            &format!("Run has no pending approval: {id}"),
            "invalid_request_error",
            Some("approval_not_pending"),
        );
    };
    let resolved = usize::from(tx.send(answer).is_ok());
    run.push(
        "approval.responded",
        json!({"choice": choice, "resolved": resolved}),
    );
    json_response(
        StatusCode::OK,
        json!({"object": "hermes.run.approval_response", "run_id": id, "choice": choice,
            "resolved": resolved}),
    )
}

pub(crate) async fn stop(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let Some(run) = s.runs.get(&id) else {
        return not_found(&id);
    };
    if !run.is_finished() {
        run.set_status("stopping", json!({}));
        run.cancel.cancel();
    }
    let status = run
        .status
        .lock()
        .map(|s| s["status"].clone())
        .unwrap_or_default();
    json_response(StatusCode::OK, json!({"run_id": id, "status": status}))
}
