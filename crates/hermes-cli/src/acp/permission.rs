//! The approval gate in an editor: a flagged command becomes a `session/request_permission`
//! with the choices Hermes offers (allow once, allow for the session, allow always when the
//! rule may be saved, deny); the editor's choice is the gate's answer, and a cancelled turn
//! or a failed request denies. In the session's "yolo" mode nothing is asked.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    Content, ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, TextContent, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use hermes_tools::{ApprovalAnswer, ApprovalRequest, Interaction};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// How one ACP session asks its user.
pub struct EditorInteraction {
    cx: ConnectionTo<Client>,
    /// Set once the session is built (the stored session's id is the ACP session id).
    session_id: OnceLock<String>,
    /// The session's mode is "yolo": flagged commands run without asking.
    yolo: AtomicBool,
    /// The running turn's token: cancelling the turn answers a pending question with "deny".
    turn: Mutex<CancellationToken>,
    asked: AtomicU64,
}

impl EditorInteraction {
    pub fn new(cx: ConnectionTo<Client>, yolo: bool) -> EditorInteraction {
        EditorInteraction {
            cx,
            session_id: OnceLock::new(),
            yolo: AtomicBool::new(yolo),
            turn: Mutex::new(CancellationToken::new()),
            asked: AtomicU64::new(0),
        }
    }

    pub fn set_session_id(&self, id: String) {
        let _ = self.session_id.set(id);
    }

    pub fn set_yolo(&self, on: bool) {
        self.yolo.store(on, Ordering::Relaxed);
    }

    pub fn yolo(&self) -> bool {
        self.yolo.load(Ordering::Relaxed)
    }

    /// A fresh token for a turn that starts now.
    pub fn start_turn(&self) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut t) = self.turn.lock() {
            *t = token.clone();
        }
        token
    }

    /// Cancels the running turn (a no-op when none runs).
    pub fn cancel_turn(&self) {
        if let Ok(t) = self.turn.lock() {
            t.cancel();
        }
    }

    fn current_turn(&self) -> CancellationToken {
        self.turn
            .lock()
            .map(|t| t.clone())
            .unwrap_or_else(|_| CancellationToken::new())
    }
}

/// The choices offered for `request`, with the answer each one means.
fn options(request: &ApprovalRequest) -> Vec<(PermissionOption, ApprovalAnswer)> {
    let option = |id: &str, kind, name: &str| PermissionOption::new(id.to_string(), name, kind);
    let mut out = vec![(
        option("allow_once", PermissionOptionKind::AllowOnce, "Allow once"),
        ApprovalAnswer::Once,
    )];
    if !request.judge_denied {
        out.push((
            option(
                "allow_session",
                PermissionOptionKind::AllowAlways,
                "Allow for this session",
            ),
            ApprovalAnswer::Session,
        ));
        if request.allow_permanent {
            out.push((
                option(
                    "allow_always",
                    PermissionOptionKind::AllowAlways,
                    "Allow always",
                ),
                ApprovalAnswer::Always,
            ));
        }
    }
    out.push((
        option("deny", PermissionOptionKind::RejectOnce, "Deny"),
        ApprovalAnswer::Deny,
    ));
    out
}

#[async_trait::async_trait]
impl Interaction for EditorInteraction {
    fn is_interactive(&self) -> bool {
        true
    }

    /// ACP has no free-text question; the model is told nobody answered and goes on.
    async fn clarify(&self, _question: &str, _choices: &[String]) -> Option<String> {
        None
    }

    async fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        if self.yolo() {
            return ApprovalAnswer::Once;
        }
        let Some(session_id) = self.session_id.get().cloned() else {
            return ApprovalAnswer::Deny;
        };
        let n = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        let choices = options(request);
        let text = format!("{}\n$ {}", request.description, request.command);
        let call = ToolCallUpdate::new(
            format!("perm-check-{n}"),
            ToolCallUpdateFields::new()
                .title(format!("{}: {}", request.description, request.command))
                .kind(ToolKind::Execute)
                .status(ToolCallStatus::Pending)
                .content(vec![ToolCallContent::Content(Content::new(
                    ContentBlock::Text(TextContent::new(text)),
                ))])
                .raw_input(json!({
                    "command": request.command,
                    "description": request.description,
                })),
        );
        let ask = RequestPermissionRequest::new(
            session_id,
            call,
            choices.iter().map(|(o, _)| o.clone()).collect(),
        );
        let turn = self.current_turn();
        let answer = tokio::select! {
            r = self.cx.send_request(ask).block_task() => r,
            () = turn.cancelled() => return ApprovalAnswer::Deny,
        };
        match answer {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => choices
                    .iter()
                    .find(|(o, _)| o.option_id == selected.option_id)
                    .map_or(ApprovalAnswer::Deny, |(_, a)| *a),
                _ => ApprovalAnswer::Deny,
            },
            Err(e) => {
                tracing::warn!("acp: permission request failed, denying: {e}");
                ApprovalAnswer::Deny
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(request: &ApprovalRequest) -> Vec<(String, ApprovalAnswer)> {
        options(request)
            .into_iter()
            .map(|(o, a)| (o.option_id.0.to_string(), a))
            .collect()
    }

    fn request(allow_permanent: bool, judge_denied: bool) -> ApprovalRequest {
        ApprovalRequest {
            command: "rm -rf x".into(),
            description: "recursive delete".into(),
            allow_permanent,
            judge_denied,
        }
    }

    #[test]
    fn the_choices_follow_what_the_gate_allows() {
        let all = ids(&request(true, false));
        assert_eq!(
            all,
            [
                ("allow_once".to_string(), ApprovalAnswer::Once),
                ("allow_session".to_string(), ApprovalAnswer::Session),
                ("allow_always".to_string(), ApprovalAnswer::Always),
                ("deny".to_string(), ApprovalAnswer::Deny),
            ]
        );
        let no_always: Vec<String> = ids(&request(false, false))
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(no_always, ["allow_once", "allow_session", "deny"]);
        let judged: Vec<String> = ids(&request(true, true))
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(judged, ["allow_once", "deny"]);
    }
}
