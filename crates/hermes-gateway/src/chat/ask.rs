//! The agent's questions in a chat: a dangerous command asks for approval (buttons where the
//! platform has them, else `/approve`, `/approve session`, `/approve always` or `/deny`;
//! denied when nobody answers within `approvals.timeout`), a `clarify` question offers its
//! choices as buttons and takes the next message as the answer. [`Questions`] is the one
//! question a chat may have open; the chat's worker feeds it the answers it receives while the
//! turn runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_tools::{ApprovalAnswer, ApprovalRequest, Interaction};
use tokio::sync::oneshot;

use crate::platform::{Button, ButtonStyle, ChatRef, OutboundMessage, PlatformAdapter};

/// Button data prefix of the gateway's own buttons.
const PREFIX: &str = "hermes:";

enum Open {
    Approval {
        id: u64,
        allow_permanent: bool,
        tx: oneshot::Sender<ApprovalAnswer>,
    },
    Clarify {
        id: u64,
        choices: Vec<String>,
        tx: oneshot::Sender<Option<String>>,
    },
}

/// The question a chat has open, if any.
#[derive(Default)]
pub struct Questions {
    open: Mutex<Option<Open>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Questions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Open>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn id(&self) -> u64 {
        self.next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .wrapping_add(1)
    }

    /// Whether an approval is waiting.
    pub fn approval_open(&self) -> bool {
        matches!(*self.lock(), Some(Open::Approval { .. }))
    }

    /// Whether a clarify question is waiting (the next message answers it).
    pub fn clarify_open(&self) -> bool {
        matches!(*self.lock(), Some(Open::Clarify { .. }))
    }

    /// `/approve [session|always]` or `/deny`: answers the open approval; false when none.
    pub fn answer_approval(&self, answer: ApprovalAnswer) -> bool {
        let mut open = self.lock();
        match open.take() {
            Some(Open::Approval {
                allow_permanent,
                tx,
                ..
            }) => {
                let answer = if answer == ApprovalAnswer::Always && !allow_permanent {
                    ApprovalAnswer::Session
                } else {
                    answer
                };
                tx.send(answer).is_ok()
            }
            other => {
                *open = other;
                false
            }
        }
    }

    /// A message while a clarify question is open answers it (a number picks a choice).
    pub fn answer_text(&self, text: &str) -> bool {
        let mut open = self.lock();
        match open.take() {
            Some(Open::Clarify { choices, tx, .. }) => {
                let picked = text
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|i| choices.get(i).cloned());
                tx.send(Some(picked.unwrap_or_else(|| text.trim().to_string())))
                    .is_ok()
            }
            other => {
                *open = other;
                false
            }
        }
    }

    /// A press of one of the gateway's buttons; false when it belongs to no open question.
    pub fn answer_button(&self, data: &str) -> bool {
        let Some(rest) = data.strip_prefix(PREFIX) else {
            return false;
        };
        let mut parts = rest.splitn(3, ':');
        let (kind, id, value) = (parts.next(), parts.next(), parts.next());
        let Some(id) = id.and_then(|i| i.parse::<u64>().ok()) else {
            return false;
        };
        let mut open = self.lock();
        match (open.take(), kind) {
            (Some(Open::Approval { id: want, tx, .. }), Some("approve")) if want == id => {
                let answer = match value {
                    Some("once") => ApprovalAnswer::Once,
                    Some("session") => ApprovalAnswer::Session,
                    Some("always") => ApprovalAnswer::Always,
                    _ => ApprovalAnswer::Deny,
                };
                tx.send(answer).is_ok()
            }
            (
                Some(Open::Clarify {
                    id: want,
                    choices,
                    tx,
                }),
                Some("clarify"),
            ) if want == id => {
                let choice = value
                    .and_then(|v| v.parse::<usize>().ok())
                    .and_then(|i| choices.get(i).cloned());
                tx.send(choice).is_ok()
            }
            (other, _) => {
                *open = other;
                false
            }
        }
    }

    /// Closes whatever is open (the turn ended or was interrupted): an approval is denied.
    pub fn cancel(&self) {
        match self.lock().take() {
            Some(Open::Approval { tx, .. }) => {
                let _ = tx.send(ApprovalAnswer::Deny);
            }
            Some(Open::Clarify { tx, .. }) => {
                let _ = tx.send(None);
            }
            None => {}
        }
    }
}

/// The [`Interaction`] of a chat session: questions go to the chat.
pub struct ChatInteraction {
    pub adapter: Arc<dyn PlatformAdapter>,
    pub chat: ChatRef,
    pub questions: Arc<Questions>,
    pub timeout: Duration,
}

impl ChatInteraction {
    async fn send(&self, message: OutboundMessage) {
        if let Err(e) = self.adapter.send(&self.chat, &message).await {
            tracing::warn!(
                "{}: cannot ask in {}: {e}",
                self.chat.platform,
                self.chat.chat_id
            );
        }
    }
}

/// The approval prompt's text.
pub fn approval_text(request: &ApprovalRequest, buttons: bool, timeout: Duration) -> String {
    let command = hermes_tools::output::shorten_line(&request.command, 300);
    let mut text = format!(
        "⚠️ This needs your approval ({}):\n```\n{command}\n```\n",
        request.description
    );
    if !buttons {
        text.push_str(if request.allow_permanent {
            "Reply /approve (once), /approve session, /approve always, or /deny."
        } else {
            "Reply /approve (once), /approve session, or /deny."
        });
        text.push('\n');
    }
    text.push_str(&format!(
        "No answer within {} s counts as deny.",
        timeout.as_secs()
    ));
    text
}

#[async_trait::async_trait]
impl Interaction for ChatInteraction {
    fn is_interactive(&self) -> bool {
        true
    }

    async fn clarify(&self, question: &str, choices: &[String]) -> Option<String> {
        let id = self.questions.id();
        let (tx, rx) = oneshot::channel();
        self.questions.cancel();
        *self.questions.lock() = Some(Open::Clarify {
            id,
            choices: choices.to_vec(),
            tx,
        });
        let buttons_ok = self.adapter.capabilities().buttons;
        let mut text = format!("❓ {question}");
        if !choices.is_empty() && !buttons_ok {
            for (i, c) in choices.iter().enumerate() {
                text.push_str(&format!("\n{}. {c}", i + 1));
            }
            text.push_str("\nReply with a number or your own answer.");
        }
        let buttons = if buttons_ok {
            choices
                .iter()
                .enumerate()
                .map(|(i, c)| Button::new(c.clone(), format!("{PREFIX}clarify:{id}:{i}")))
                .collect()
        } else {
            Vec::new()
        };
        self.send(OutboundMessage::text(text).with_buttons(buttons))
            .await;
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(answer)) => answer,
            _ => {
                self.questions.cancel();
                None
            }
        }
    }

    async fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let id = self.questions.id();
        let (tx, rx) = oneshot::channel();
        self.questions.cancel();
        *self.questions.lock() = Some(Open::Approval {
            id,
            allow_permanent: request.allow_permanent && !request.judge_denied,
            tx,
        });
        let buttons_ok = self.adapter.capabilities().buttons;
        let mut buttons = Vec::new();
        if buttons_ok {
            buttons.push(
                Button::new("Approve once", format!("{PREFIX}approve:{id}:once"))
                    .styled(ButtonStyle::Primary),
            );
            if !request.judge_denied {
                buttons.push(Button::new(
                    "For this session",
                    format!("{PREFIX}approve:{id}:session"),
                ));
                if request.allow_permanent {
                    buttons.push(Button::new(
                        "Always",
                        format!("{PREFIX}approve:{id}:always"),
                    ));
                }
            }
            buttons.push(
                Button::new("Deny", format!("{PREFIX}approve:{id}:deny"))
                    .styled(ButtonStyle::Danger),
            );
        }
        self.send(
            OutboundMessage::text(approval_text(request, buttons_ok, self.timeout))
                .with_buttons(buttons),
        )
        .await;
        let answer = match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => ApprovalAnswer::Deny,
            Err(_) => {
                self.questions.cancel();
                self.send(OutboundMessage::text("⏱️ No answer: denied."))
                    .await;
                return ApprovalAnswer::Deny;
            }
        };
        let said = match answer {
            ApprovalAnswer::Once => "✅ Approved once.",
            ApprovalAnswer::Session => "✅ Approved for this session.",
            ApprovalAnswer::Always => "✅ Approved, always.",
            ApprovalAnswer::Deny => "🚫 Denied.",
        };
        self.send(OutboundMessage::text(said)).await;
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_reach_the_open_question_only() {
        let q = Questions::default();
        assert!(!q.answer_approval(ApprovalAnswer::Once), "nothing open");
        let (tx, mut rx) = oneshot::channel();
        *q.lock() = Some(Open::Approval {
            id: 7,
            allow_permanent: false,
            tx,
        });
        assert!(
            !q.answer_button("hermes:approve:8:once"),
            "another question's button"
        );
        assert!(q.approval_open());
        assert!(q.answer_approval(ApprovalAnswer::Always));
        assert_eq!(
            rx.try_recv().unwrap(),
            ApprovalAnswer::Session,
            "always is not offered"
        );
        let (tx, mut rx) = oneshot::channel();
        *q.lock() = Some(Open::Clarify {
            id: 9,
            choices: vec!["red".into(), "blue".into()],
            tx,
        });
        assert!(q.answer_text("2"));
        assert_eq!(rx.try_recv().unwrap(), Some("blue".into()));
    }
}
