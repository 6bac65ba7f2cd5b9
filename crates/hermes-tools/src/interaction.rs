//! How tools reach the user, whatever the frontend: approval of risky commands and clarifying
//! questions. The REPL asks on the terminal, the gateway in the chat, `-z` nobody.

/// A frontend's way of asking the user.
#[async_trait::async_trait]
pub trait Interaction: Send + Sync {
    /// Whether a person can answer right now.
    fn is_interactive(&self) -> bool;
    /// Asks `question`, offering `choices` (may be empty: free text). `None` when nobody can
    /// answer.
    async fn clarify(&self, question: &str, choices: &[String]) -> Option<String>;
}

/// No user: one-shot runs, cron jobs, API calls.
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
}
