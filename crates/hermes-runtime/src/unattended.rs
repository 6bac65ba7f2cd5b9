//! [`Unattended`]: the [`Interaction`] of a session nobody watches as it runs (`-z`, cron, the
//! API server). Like the Python Hermes it approves flagged commands and says so (a warning,
//! with the command shortened), and it has nobody to answer questions. Hardline commands never
//! reach it: they are refused before any interaction.

use hermes_tools::{ApprovalAnswer, ApprovalRequest, Interaction};

#[derive(Debug, Default, Clone, Copy)]
pub struct Unattended;

#[async_trait::async_trait]
impl Interaction for Unattended {
    fn is_interactive(&self) -> bool {
        false
    }

    async fn clarify(&self, _question: &str, _choices: &[String]) -> Option<String> {
        None
    }

    async fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        tracing::warn!(
            "auto-approved a flagged command ({}) because a one-shot run has no user to ask: {}",
            request.description,
            hermes_tools::output::shorten_line(&request.command, 120)
        );
        ApprovalAnswer::Once
    }
}
