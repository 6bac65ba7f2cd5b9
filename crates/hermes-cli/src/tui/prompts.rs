//! How the approval and clarify prompts look, and [`ReplPrompts`], the surface the terminal
//! [`Interaction`](crate::interaction::Terminal) draws them on: it settles the live output
//! (pending text drawn, spinner stopped), draws the prompt in the skin's style, reads the answer
//! through the REPL's own input (the line editor on a terminal), and restarts the spinner.
//! Ctrl-C at a prompt answers nothing and stops the running turn. The command, question and
//! choices come from the model: they are drawn without any control sequence of theirs.

use std::sync::{Arc, Mutex};

use hermes_tools::ApprovalRequest;
use hermes_tools::output::terminal_safe;
use tokio_util::sync::CancellationToken;

use super::input::{Input, Read};
use super::live::{LiveView, Look};
use super::style::{Line, Span, Style};
use super::theme::Theme;
use super::wrap::wrap;
use crate::interaction::{Prompt, PromptSurface};

/// The choices offered for a flagged command.
fn approval_choices(request: &ApprovalRequest) -> &'static str {
    if request.judge_denied {
        "[o]nce / [d]eny"
    } else if request.allow_permanent {
        "[o]nce / [s]ession / [a]lways / [d]eny"
    } else {
        "[o]nce / [s]ession / [d]eny"
    }
}

/// The approval prompt as plain text (pipes), ending where the answer is typed.
pub fn plain_approval(request: &ApprovalRequest) -> String {
    let judged = if request.judge_denied {
        "\n  The smart-approval model judged it dangerous."
    } else {
        ""
    };
    format!(
        "\n  ⚠ Dangerous command: {}{judged}\n      {}\n  Allow? {}: ",
        request.description,
        request.command.replace('\n', "\n      "),
        approval_choices(request)
    )
}

/// The approval prompt on a terminal: the command, the rule it matched and what each answer
/// covers.
pub fn approval_lines(request: &ApprovalRequest, theme: &Theme, columns: usize) -> Vec<Line> {
    let warn = theme.warn().bold();
    let mut lines: Vec<Line> = vec![
        Vec::new(),
        vec![
            Span::new("  ⚠ Dangerous command: ", warn),
            Span::new(request.description.clone(), warn),
        ],
    ];
    for l in request.command.lines() {
        lines.push(vec![
            Span::plain("      "),
            Span::new(l.to_string(), theme.text().bold()),
        ]);
    }
    let dim = theme.dim();
    let mut explain = |text: String| {
        let spans = vec![Span::new(text, dim)];
        lines.extend(wrap(
            &spans,
            columns,
            &[Span::plain("  ")],
            &[Span::plain("    ")],
        ));
    };
    explain(format!(
        "Flagged because it matches the \"{}\" rule.",
        request.description
    ));
    if request.judge_denied {
        explain(
            "The smart-approval model judged it dangerous; only once or deny are offered.".into(),
        );
    } else {
        let mut choices = format!(
            "once: run it this time · session: allow \"{}\" commands until you exit",
            request.description
        );
        if request.allow_permanent {
            choices.push_str(" · always: save the rule to command_allowlist");
        }
        choices.push_str(" · deny: the model is told you refused");
        explain(choices);
    }
    lines.push(vec![
        Span::plain("  Allow? "),
        Span::new(approval_choices(request), theme.accent()),
    ]);
    lines
}

/// The clarify prompt as plain text (pipes).
pub fn plain_clarify(question: &str, choices: &[String]) -> String {
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

/// The clarify prompt on a terminal: the question, numbered choices and "Other".
pub fn clarify_lines(
    question: &str,
    choices: &[String],
    theme: &Theme,
    columns: usize,
) -> Vec<Line> {
    let mut lines: Vec<Line> = vec![Vec::new()];
    let q = vec![Span::new(question.to_string(), theme.title())];
    lines.extend(wrap(
        &q,
        columns,
        &[Span::new("  ? ", theme.accent().bold())],
        &[Span::plain("    ")],
    ));
    let number = theme.accent();
    for (i, c) in choices.iter().enumerate() {
        let first = vec![Span::new(format!("    {}. ", i + 1), number)];
        lines.extend(wrap(
            &[Span::plain(c.clone())],
            columns,
            &first,
            &[Span::plain("       ")],
        ));
    }
    if !choices.is_empty() {
        lines.push(vec![
            Span::new(format!("    {}. ", choices.len() + 1), number),
            Span::new("Other (type your answer)", Style::PLAIN.italic()),
        ]);
    }
    lines
}

/// The answer line's prompt on a terminal.
fn answer_prompt(prompt: &Prompt<'_>) -> String {
    match prompt {
        Prompt::Approval(_) => "  choice ❯ ".into(),
        Prompt::Clarify { choices, .. } if !choices.is_empty() => {
            format!("  1-{} or text ❯ ", choices.len() + 1)
        }
        Prompt::Clarify { .. } | Prompt::OtherAnswer => "  answer ❯ ".into(),
    }
}

/// A prompt abandoned while waiting (the approval timed out): the editor is told to stop
/// reading, and the user that no answer was taken.
struct Unanswered<'a>(&'a ReplPrompts, bool);

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.input.abandon_answer();
            // Waits (in the console) until the editor has left the line.
            self.0.view.print("  → no answer in time\n");
        }
    }
}

/// The REPL's prompt surface.
pub struct ReplPrompts {
    view: Arc<LiveView>,
    input: Input,
    /// The running turn, stopped by Ctrl-C at a prompt.
    turn: Mutex<Option<CancellationToken>>,
}

impl ReplPrompts {
    pub fn new(view: Arc<LiveView>, input: Input) -> ReplPrompts {
        ReplPrompts {
            view,
            input,
            turn: Mutex::new(None),
        }
    }

    /// The turn a Ctrl-C at a prompt should stop (`None` between turns).
    pub fn set_turn(&self, cancel: Option<CancellationToken>) {
        if let Ok(mut t) = self.turn.lock() {
            *t = cancel;
        }
    }

    fn draw(&self, prompt: &Prompt<'_>) {
        let request;
        let question;
        let choices: Vec<String>;
        let prompt = match *prompt {
            Prompt::Approval(r) => {
                request = ApprovalRequest {
                    command: terminal_safe(&r.command).into_owned(),
                    description: crate::render::one_line(&r.description).into_owned(),
                    ..r.clone()
                };
                Prompt::Approval(&request)
            }
            Prompt::Clarify {
                question: q,
                choices: c,
            } => {
                question = terminal_safe(q).into_owned();
                choices = c
                    .iter()
                    .map(|x| crate::render::one_line(x).into_owned())
                    .collect();
                Prompt::Clarify {
                    question: &question,
                    choices: &choices,
                }
            }
            Prompt::OtherAnswer => Prompt::OtherAnswer,
        };
        let prompt = &prompt;
        if self.view.look() == Look::Raw {
            let text = match prompt {
                Prompt::Approval(r) => plain_approval(r),
                Prompt::Clarify { question, choices } => plain_clarify(question, choices),
                Prompt::OtherAnswer => "  Your answer: ".into(),
            };
            self.view.print(&text);
            return;
        }
        let theme = self.view.theme();
        let width = self.view.width();
        let lines = match prompt {
            Prompt::Approval(r) => approval_lines(r, &theme, width),
            Prompt::Clarify { question, choices } => {
                clarify_lines(question, choices, &theme, width)
            }
            Prompt::OtherAnswer => Vec::new(),
        };
        self.view.print_lines(&lines);
    }
}

#[async_trait::async_trait]
impl PromptSurface for ReplPrompts {
    async fn ask(&self, prompt: Prompt<'_>) -> Option<String> {
        let spinner = self.view.settle();
        self.draw(&prompt);
        // Dropped before an answer came (the approval timed out): say so under the prompt.
        let mut pending = Unanswered(self, true);
        let answer = self.input.answer(&answer_prompt(&prompt)).await;
        pending.1 = false;
        if let Some(activity) = spinner {
            self.view.console().spin(activity);
        }
        match answer {
            Read::Line(line) => Some(line.trim().to_string()),
            Read::Interrupt => {
                if let Ok(turn) = self.turn.lock()
                    && let Some(cancel) = turn.as_ref()
                {
                    cancel.cancel();
                }
                None
            }
            Read::End => None,
        }
    }

    fn tell(&self, text: &str) {
        let text = terminal_safe(text);
        if self.view.look() == Look::Raw {
            self.view.print(&format!("{text}\n"));
        } else {
            let theme = self.view.theme();
            self.view
                .print_lines(&[vec![Span::new(text.to_string(), theme.label())]]);
        }
    }
}
