//! How the command line asks the user, behind the tools' [`Interaction`] trait. [`Terminal`]
//! holds the decisions: approval of flagged commands (once / session / always / deny; anything
//! else denies) and clarifying questions (a number picks a choice, the last number asks for a
//! free answer, any other text is the answer). How a prompt looks and where its answer is read
//! is the [`PromptSurface`]'s business (the REPL draws them in its skin and reads through its
//! line editor, so there is only ever one reader of the terminal). `/yolo` switches the terminal
//! to approving without asking (hardline commands never get here). `Unattended` is for
//! one-shot runs: like the Python Hermes it approves flagged commands and says so on stderr,
//! and it has nobody to answer questions (it lives in hermes-runtime, with the sessions that
//! use it).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use hermes_tools::{ApprovalAnswer, ApprovalRequest, Interaction};

/// A prompt to show the user.
#[derive(Debug, Clone, Copy)]
pub enum Prompt<'a> {
    Approval(&'a ApprovalRequest),
    Clarify {
        question: &'a str,
        choices: &'a [String],
    },
    /// The free answer after "Other" was chosen.
    OtherAnswer,
}

/// Where prompts are drawn and answered.
#[async_trait::async_trait]
pub trait PromptSurface: Send + Sync {
    /// Shows `prompt` and reads one answer (trimmed); `None` when nobody answers (end of
    /// input, Ctrl-C).
    async fn ask(&self, prompt: Prompt<'_>) -> Option<String>;
    /// Tells the user what was decided.
    fn tell(&self, text: &str);
}

/// Asks on the terminal.
pub struct Terminal {
    surface: Arc<dyn PromptSurface>,
    /// `/yolo`: approve flagged commands without asking.
    yolo: AtomicBool,
    /// "session" and "always" answers given here: (rule, how long).
    granted: Mutex<Vec<(String, &'static str)>>,
}

impl Terminal {
    pub fn new(surface: Arc<dyn PromptSurface>) -> Terminal {
        Terminal {
            surface,
            yolo: AtomicBool::new(false),
            granted: Mutex::new(Vec::new()),
        }
    }

    pub fn yolo(&self) -> bool {
        self.yolo.load(Ordering::Relaxed)
    }

    pub fn set_yolo(&self, on: bool) {
        self.yolo.store(on, Ordering::Relaxed);
    }

    /// Rules the user allowed beyond one command, with "session" or "always".
    pub fn granted(&self) -> Vec<(String, &'static str)> {
        self.granted.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// The answer typed at an approval prompt; anything unrecognised denies.
pub fn parse_approval(answer: &str, request: &ApprovalRequest) -> ApprovalAnswer {
    match answer.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => ApprovalAnswer::Once,
        "s" | "session" if !request.judge_denied => ApprovalAnswer::Session,
        "a" | "always" if request.allow_permanent && !request.judge_denied => {
            ApprovalAnswer::Always
        }
        _ => ApprovalAnswer::Deny,
    }
}

#[async_trait::async_trait]
impl Interaction for Terminal {
    fn is_interactive(&self) -> bool {
        true
    }

    async fn clarify(&self, question: &str, choices: &[String]) -> Option<String> {
        let answer = self
            .surface
            .ask(Prompt::Clarify { question, choices })
            .await?;
        match answer.parse::<usize>() {
            Ok(n) if (1..=choices.len()).contains(&n) => Some(choices[n - 1].clone()),
            Ok(n) if n == choices.len() + 1 && !choices.is_empty() => self
                .surface
                .ask(Prompt::OtherAnswer)
                .await
                .filter(|a| !a.is_empty()),
            _ => Some(answer).filter(|a| !a.is_empty()),
        }
    }

    async fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        if self.yolo() {
            self.surface.tell(&format!(
                "  ⚡ yolo: allowed without asking ({}): {}",
                request.description,
                hermes_tools::output::shorten_line(&request.command, 80)
            ));
            return ApprovalAnswer::Once;
        }
        let Some(answer) = self.surface.ask(Prompt::Approval(request)).await else {
            self.surface.tell("\n  (no answer: denied)");
            return ApprovalAnswer::Deny;
        };
        let decision = parse_approval(&answer, request);
        let said = match decision {
            ApprovalAnswer::Once => "allowed once",
            ApprovalAnswer::Session => "allowed for this session",
            ApprovalAnswer::Always => "allowed always (saved to command_allowlist)",
            ApprovalAnswer::Deny => "denied",
        };
        let kept = match decision {
            ApprovalAnswer::Session => Some("session"),
            ApprovalAnswer::Always => Some("always"),
            _ => None,
        };
        if let Some(how) = kept
            && let Ok(mut g) = self.granted.lock()
        {
            g.push((request.description.clone(), how));
        }
        self.surface.tell(&format!("  → {said}"));
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(permanent: bool, judged: bool) -> ApprovalRequest {
        ApprovalRequest {
            command: "rm -rf build".into(),
            description: "recursive delete".into(),
            allow_permanent: permanent,
            judge_denied: judged,
        }
    }

    /// Answers from a script; records what was shown and told.
    #[derive(Default)]
    struct Scripted {
        answers: Mutex<Vec<&'static str>>,
        log: Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl PromptSurface for Scripted {
        async fn ask(&self, prompt: Prompt<'_>) -> Option<String> {
            self.log.lock().unwrap().push(format!("{prompt:?}"));
            let mut answers = self.answers.lock().unwrap();
            (!answers.is_empty()).then(|| answers.remove(0).to_string())
        }
        fn tell(&self, text: &str) {
            self.log.lock().unwrap().push(text.to_string());
        }
    }

    #[test]
    fn approval_answers() {
        let r = request(true, false);
        assert_eq!(parse_approval("o", &r), ApprovalAnswer::Once);
        assert_eq!(parse_approval(" YES ", &r), ApprovalAnswer::Once);
        assert_eq!(parse_approval("session", &r), ApprovalAnswer::Session);
        assert_eq!(parse_approval("a", &r), ApprovalAnswer::Always);
        assert_eq!(parse_approval("", &r), ApprovalAnswer::Deny);
        assert_eq!(parse_approval("maybe", &r), ApprovalAnswer::Deny);
        let judged = request(false, true);
        assert_eq!(parse_approval("a", &judged), ApprovalAnswer::Deny);
        assert_eq!(parse_approval("s", &judged), ApprovalAnswer::Deny);
    }

    #[tokio::test]
    async fn clarify_reads_numbers_other_and_free_text() {
        let surface = Arc::new(Scripted::default());
        *surface.answers.lock().unwrap() = vec!["2", "3", "canary", "free answer"];
        let term = Terminal::new(surface.clone());
        let choices = vec!["staging".to_string(), "prod".to_string()];
        assert_eq!(
            term.clarify("Where?", &choices).await.as_deref(),
            Some("prod")
        );
        assert_eq!(
            term.clarify("Where?", &choices).await.as_deref(),
            Some("canary")
        );
        assert_eq!(
            term.clarify("Where?", &choices).await.as_deref(),
            Some("free answer")
        );
        assert_eq!(term.clarify("Where?", &choices).await, None);
        assert!(
            surface
                .log
                .lock()
                .unwrap()
                .iter()
                .any(|l| l == "OtherAnswer")
        );
    }

    #[tokio::test]
    async fn approvals_are_remembered_and_yolo_skips_the_prompt() {
        let surface = Arc::new(Scripted::default());
        *surface.answers.lock().unwrap() = vec!["s"];
        let term = Terminal::new(surface.clone());
        assert_eq!(
            term.approve(&request(true, false)).await,
            ApprovalAnswer::Session
        );
        assert_eq!(
            term.granted(),
            vec![("recursive delete".to_string(), "session")]
        );
        assert_eq!(
            term.approve(&request(true, false)).await,
            ApprovalAnswer::Deny,
            "no answer"
        );
        term.set_yolo(true);
        let asked = surface.log.lock().unwrap().len();
        assert_eq!(
            term.approve(&request(true, false)).await,
            ApprovalAnswer::Once
        );
        let log = surface.log.lock().unwrap();
        assert_eq!(log.len(), asked + 1, "told, not asked");
        assert!(log.last().unwrap().contains("yolo"), "{log:?}");
    }
}
