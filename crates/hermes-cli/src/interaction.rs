//! How the command line asks the user, behind the tools' [`Interaction`] trait (a restyled REPL
//! keeps this logic and only changes how it is drawn). [`Terminal`] asks on the terminal:
//! approval of flagged commands (once / session / always / deny) and clarifying questions with
//! numbered choices plus a free answer, reading the answer from the REPL's own line channel
//! ([`Lines`]) so there is only ever one reader of stdin. [`Unattended`] is for one-shot runs:
//! like the Python Hermes it approves flagged commands (hardline ones never get here) and says
//! so on stderr, and it has nobody to answer questions.

use std::io::Write;
use std::sync::Arc;

use hermes_tools::{ApprovalAnswer, ApprovalRequest, Interaction};
use tokio::sync::{Mutex, mpsc};

/// The lines typed by the user, shared by the REPL (messages) and the prompts (answers).
#[derive(Clone)]
pub struct Lines(Arc<Mutex<mpsc::Receiver<String>>>);

impl Lines {
    pub fn new(rx: mpsc::Receiver<String>) -> Lines {
        Lines(Arc::new(Mutex::new(rx)))
    }

    /// The next line; `None` at end of input.
    pub async fn next_line(&self) -> Option<String> {
        self.0.lock().await.recv().await
    }

    /// One message: lines joined while they end with a backslash. `None` at end of input.
    pub async fn next_message(&self) -> Option<String> {
        let mut rx = self.0.lock().await;
        let mut message = String::new();
        loop {
            let line = rx.recv().await?;
            match line.strip_suffix('\\') {
                Some(start) => {
                    message.push_str(start);
                    message.push('\n');
                }
                None => {
                    message.push_str(&line);
                    return Some(message);
                }
            }
        }
    }
}

/// Prompts on the terminal, answers from [`Lines`].
pub struct Terminal {
    lines: Lines,
}

impl Terminal {
    pub fn new(lines: Lines) -> Terminal {
        Terminal { lines }
    }

    async fn ask(&self, text: &str) -> Option<String> {
        {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{text}");
            let _ = out.flush();
        }
        self.lines.next_line().await.map(|l| l.trim().to_string())
    }
}

/// The prompt shown for a flagged command.
pub fn approval_prompt(request: &ApprovalRequest) -> String {
    let choices = if request.judge_denied {
        "[o]nce / [d]eny"
    } else if request.allow_permanent {
        "[o]nce / [s]ession / [a]lways / [d]eny"
    } else {
        "[o]nce / [s]ession / [d]eny"
    };
    let judged = if request.judge_denied {
        "\n  The smart-approval model judged it dangerous."
    } else {
        ""
    };
    format!(
        "\n  ⚠ Dangerous command: {}{judged}\n      {}\n  Allow? {choices}: ",
        request.description,
        request.command.replace('\n', "\n      ")
    )
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

/// The question with numbered choices and an "other" entry.
pub fn clarify_prompt(question: &str, choices: &[String]) -> String {
    let mut text = format!("\n  ? {question}\n");
    if choices.is_empty() {
        text.push_str("  Your answer: ");
        return text;
    }
    for (i, c) in choices.iter().enumerate() {
        text.push_str(&format!("    {}. {c}\n", i + 1));
    }
    text.push_str(&format!(
        "    {}. Other (type your answer)\n  Choose 1-{} or type an answer: ",
        choices.len() + 1,
        choices.len() + 1
    ));
    text
}

#[async_trait::async_trait]
impl Interaction for Terminal {
    fn is_interactive(&self) -> bool {
        true
    }

    async fn clarify(&self, question: &str, choices: &[String]) -> Option<String> {
        let answer = self.ask(&clarify_prompt(question, choices)).await?;
        match answer.parse::<usize>() {
            Ok(n) if (1..=choices.len()).contains(&n) => Some(choices[n - 1].clone()),
            Ok(n) if n == choices.len() + 1 && !choices.is_empty() => {
                self.ask("  Your answer: ").await.filter(|a| !a.is_empty())
            }
            _ => Some(answer).filter(|a| !a.is_empty()),
        }
    }

    async fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let Some(answer) = self.ask(&approval_prompt(request)).await else {
            println!("\n  (no input: denied)");
            return ApprovalAnswer::Deny;
        };
        let decision = parse_approval(&answer, request);
        let said = match decision {
            ApprovalAnswer::Once => "allowed once",
            ApprovalAnswer::Session => "allowed for this session",
            ApprovalAnswer::Always => "allowed always (saved to command_allowlist)",
            ApprovalAnswer::Deny => "denied",
        };
        println!("  → {said}");
        decision
    }
}

/// One-shot runs: nobody to ask.
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
        eprintln!(
            "hermes: auto-approved a flagged command ({}) because a one-shot run has no user to ask: {}",
            request.description,
            hermes_tools::output::shorten_line(&request.command, 120)
        );
        ApprovalAnswer::Once
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
        assert!(approval_prompt(&judged).contains("[o]nce / [d]eny"));
        assert!(approval_prompt(&r).contains("rm -rf build"));
    }

    #[tokio::test]
    async fn clarify_reads_numbers_other_and_free_text_from_the_shared_lines() {
        let (tx, rx) = mpsc::channel(8);
        let term = Terminal::new(Lines::new(rx));
        let choices = vec!["staging".to_string(), "prod".to_string()];
        for line in ["2", "3", "canary", "free answer"] {
            tx.send(line.to_string()).await.unwrap();
        }
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
        drop(tx);
        assert_eq!(term.clarify("Where?", &choices).await, None);
        assert!(clarify_prompt("Q", &choices).contains("3. Other (type your answer)"));
    }
}
