//! How tools reach the user, whatever the frontend: approval of risky commands and clarifying
//! questions. The REPL asks on the terminal, the gateway in the chat, `-z` nobody.

/// A command that needs the user's consent before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The command as the model wrote it (credentials redacted).
    pub command: String,
    /// Why it was flagged (`recursive delete`, ...); also the key a session or permanent
    /// approval is stored under.
    pub description: String,
    /// Whether "always" may be offered.
    pub allow_permanent: bool,
    /// The smart-approval judge called the command dangerous: only once/deny make sense.
    pub judge_denied: bool,
}

/// The user's answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run this command this time.
    Once,
    /// Run commands flagged for the same reason without asking for the rest of the session.
    Session,
    /// Never ask again for this reason (saved to `command_allowlist` in config.yaml).
    Always,
    Deny,
}

/// A frontend's way of asking the user.
#[async_trait::async_trait]
pub trait Interaction: Send + Sync {
    /// Whether a person can answer right now.
    fn is_interactive(&self) -> bool;
    /// Asks `question`, offering `choices` (may be empty: free text). `None` when nobody can
    /// answer.
    async fn clarify(&self, question: &str, choices: &[String]) -> Option<String>;
    /// Asks whether a flagged command may run.
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer;
}

/// No user: one-shot runs, cron jobs, API calls. Like the Python Hermes outside an interactive
/// session, flagged commands are approved (hardline commands never reach this point) and
/// questions go unanswered.
#[derive(Debug, Clone, Copy, Default)]
pub struct NonInteractive;

#[async_trait::async_trait]
impl Interaction for NonInteractive {
    fn is_interactive(&self) -> bool {
        false
    }

    async fn clarify(&self, _question: &str, _choices: &[String]) -> Option<String> {
        None
    }

    async fn approve(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Once
    }
}
