//! The line editor (reedline), on a thread of its own that owns the terminal while a line is
//! read; the async side asks it for a message or an answer and awaits the reply. Messages get
//! the full editor: history shared with the Python Hermes (`.hermes_history`), Emacs keys, tab
//! completion with a menu, Alt-Enter or a trailing `\` for a new line, bracketed paste (a
//! pasted block stays one message). Ctrl-C clears a non-empty line and reports an interrupt on
//! an empty one; Ctrl-D on an empty line ends the chat. Answers to prompts get a plain editor
//! without history, which a dropped request (a timed-out approval) breaks out of.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use reedline::{
    DescriptionMode, EditCommand, Emacs, FileBackedHistory, HistoryItem, IdeMenu, KeyCode,
    KeyModifiers, MenuBuilder, Prompt, PromptEditMode, PromptHistorySearch,
    PromptHistorySearchStatus, Reedline, ReedlineEvent, ReedlineMenu, Signal, ValidationResult,
    Validator, default_emacs_keybindings,
};
use tokio::sync::oneshot;

use super::complete::{SlashCompleter, Vocabulary};
use super::history;
use super::input::Read;

/// Reedline hands this back when Ctrl-C is pressed, with the line still in the buffer.
const CTRL_C: &str = "\u{3}hermes-interrupt";
const MENU: &str = "completion_menu";

/// How the message prompt looks.
#[derive(Debug, Clone)]
pub struct PromptLook {
    /// The symbol with its escapes already applied (or plain).
    pub symbol: String,
    pub color: bool,
}

enum Request {
    Message {
        prefill: Option<String>,
        hint: String,
        reply: oneshot::Sender<Read>,
    },
    Answer {
        prompt: String,
        reply: oneshot::Sender<Read>,
    },
    Look(PromptLook),
}

/// The async side's handle on the editor thread.
pub struct EditorHandle {
    tx: mpsc::Sender<Request>,
    /// Set to make a pending answer read return (its asker went away).
    answer_break: Arc<AtomicBool>,
}

impl EditorHandle {
    /// Starts the editor thread.
    pub fn spawn(
        history_file: PathBuf,
        vocabulary: Arc<std::sync::Mutex<Vocabulary>>,
        look: PromptLook,
    ) -> EditorHandle {
        let (tx, rx) = mpsc::channel::<Request>();
        let answer_break = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&answer_break);
        let spawned = std::thread::Builder::new()
            .name("hermes-editor".into())
            .spawn(move || EditorThread::new(history_file, vocabulary, look, flag).run(&rx));
        if let Err(e) = spawned {
            // Requests then fail and read as end of input: the chat ends cleanly.
            eprintln!("hermes: cannot start the line editor: {e}");
        }
        EditorHandle { tx, answer_break }
    }

    pub async fn message(&self, prefill: Option<String>) -> Read {
        self.message_with_hint(prefill, String::new()).await
    }

    /// A message, with a hint on the right of the prompt.
    pub async fn message_with_hint(&self, prefill: Option<String>, hint: String) -> Read {
        let (reply, answer) = oneshot::channel();
        if self
            .tx
            .send(Request::Message {
                prefill,
                hint,
                reply,
            })
            .is_err()
        {
            return Read::End;
        }
        answer.await.unwrap_or(Read::End)
    }

    pub async fn answer(&self, prompt: &str) -> Read {
        let (reply, answer) = oneshot::channel();
        self.answer_break.store(false, Ordering::Relaxed);
        if self
            .tx
            .send(Request::Answer {
                prompt: prompt.to_string(),
                reply,
            })
            .is_err()
        {
            return Read::End;
        }
        // If this future is dropped (the approval timed out, the turn was cancelled), the
        // editor must stop reading for it.
        let mut guard = BreakOnDrop(Arc::clone(&self.answer_break), true);
        let read = answer.await.unwrap_or(Read::End);
        guard.1 = false;
        read
    }

    /// Makes a pending answer read return at once (its asker gave up).
    pub fn abandon_answer(&self) {
        self.answer_break.store(true, Ordering::Relaxed);
    }

    /// Changes the prompt's look (after `/skin`).
    pub fn set_look(&self, look: PromptLook) {
        let _ = self.tx.send(Request::Look(look));
    }
}

struct BreakOnDrop(Arc<AtomicBool>, bool);

impl Drop for BreakOnDrop {
    fn drop(&mut self) {
        if self.1 {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

struct EditorThread {
    main: Reedline,
    answers: Reedline,
    history_file: PathBuf,
    look: PromptLook,
}

impl EditorThread {
    fn new(
        history_file: PathBuf,
        vocabulary: Arc<std::sync::Mutex<Vocabulary>>,
        look: PromptLook,
        answer_break: Arc<AtomicBool>,
    ) -> EditorThread {
        let mut keys = default_emacs_keybindings();
        keys.add_binding(
            KeyModifiers::NONE,
            KeyCode::Tab,
            ReedlineEvent::UntilFound(vec![
                ReedlineEvent::Menu(MENU.into()),
                ReedlineEvent::MenuNext,
            ]),
        );
        keys.add_binding(
            KeyModifiers::ALT,
            KeyCode::Enter,
            ReedlineEvent::Edit(vec![EditCommand::InsertNewline]),
        );
        keys.add_binding(
            KeyModifiers::CONTROL,
            KeyCode::Char('c'),
            ReedlineEvent::ExecuteHostCommand(CTRL_C.into()),
        );
        let mut memory = FileBackedHistory::new(history::MAX_ENTRIES).ok();
        if let Some(h) = memory.as_mut() {
            for entry in history::load(&history_file) {
                let _ = reedline::History::save(h, HistoryItem::from_command_line(entry));
            }
        }
        let menu = IdeMenu::default()
            .with_name(MENU)
            .with_description_mode(DescriptionMode::PreferRight)
            .with_max_completion_height(10);
        let mut main = Reedline::create()
            .with_edit_mode(Box::new(Emacs::new(keys)))
            .with_completer(Box::new(SlashCompleter::new(vocabulary)))
            .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)))
            .with_quick_completions(true)
            .with_partial_completions(true)
            .with_validator(Box::new(TrailingBackslash))
            .with_ansi_colors(look.color)
            .use_bracketed_paste(true);
        if let Some(h) = memory {
            main = main.with_history(Box::new(h));
        }
        let answers = Reedline::create()
            .with_ansi_colors(look.color)
            .with_break_signal(answer_break)
            .with_poll_interval(Duration::from_millis(100));
        EditorThread {
            main,
            answers,
            history_file,
            look,
        }
    }

    fn run(mut self, rx: &mpsc::Receiver<Request>) {
        while let Ok(request) = rx.recv() {
            match request {
                Request::Message {
                    prefill,
                    hint,
                    reply,
                } => {
                    let read = self.read_message(prefill, hint);
                    let _ = reply.send(read);
                }
                Request::Answer { prompt, reply } => {
                    let read = self.read_answer(prompt);
                    let _ = reply.send(read);
                }
                Request::Look(look) => self.look = look,
            }
        }
    }

    fn read_message(&mut self, prefill: Option<String>, hint: String) -> Read {
        if let Some(text) = prefill {
            self.main
                .run_edit_commands(&[EditCommand::Clear, EditCommand::InsertString(text)]);
        }
        let prompt = MessagePrompt {
            look: self.look.clone(),
            hint,
        };
        let _terminal = super::console::terminal_lock();
        loop {
            match self.main.read_line(&prompt) {
                Ok(Signal::Success(text)) => {
                    history::append(&self.history_file, &text);
                    return Read::Line(join_continuations(&text));
                }
                Ok(Signal::HostCommand(c)) if c == CTRL_C => {
                    if self.main.current_buffer_contents().is_empty() {
                        print_newline();
                        return Read::Interrupt;
                    }
                    self.main.run_edit_commands(&[EditCommand::Clear]);
                }
                Ok(Signal::CtrlC) => return Read::Interrupt,
                Ok(Signal::CtrlD) => return Read::End,
                Ok(_) => {}
                Err(e) => {
                    eprintln!("hermes: the line editor failed: {e}");
                    return Read::End;
                }
            }
        }
    }

    fn read_answer(&mut self, prompt: String) -> Read {
        let prompt = AnswerPrompt(prompt);
        let _terminal = super::console::terminal_lock();
        match self.answers.read_line(&prompt) {
            Ok(Signal::Success(text)) => Read::Line(text),
            Ok(Signal::CtrlD) => Read::End,
            Ok(Signal::ExternalBreak(_)) => {
                print_newline();
                Read::End
            }
            Ok(_) => Read::Interrupt,
            Err(_) => Read::End,
        }
    }
}

/// Moves off the prompt line when reedline returned without doing so (a host command, an
/// external break).
fn print_newline() {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(b"\r\n");
    let _ = out.flush();
}

/// A line ending in `\` continues on the next; the backslashes are removed.
pub fn join_continuations(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let last = lines.len().saturating_sub(1);
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i < last {
                l.strip_suffix('\\').unwrap_or(l)
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asks for another line while the text ends in a backslash.
struct TrailingBackslash;

impl Validator for TrailingBackslash {
    fn validate(&self, line: &str) -> ValidationResult {
        if line.ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Complete
        }
    }
}

struct MessagePrompt {
    look: PromptLook,
    hint: String,
}

impl Prompt for MessagePrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.hint)
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Owned(format!("{} ", self.look.symbol))
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        let failing = match search.status {
            PromptHistorySearchStatus::Passing => "",
            PromptHistorySearchStatus::Failing => "failing ",
        };
        Cow::Owned(format!("({failing}search: {}) ", search.term))
    }

    fn get_prompt_color(&self) -> reedline::Color {
        reedline::Color::Default
    }

    fn get_indicator_color(&self) -> reedline::Color {
        reedline::Color::Default
    }

    fn get_prompt_right_color(&self) -> reedline::Color {
        reedline::Color::DarkGray
    }
}

struct AnswerPrompt(String);

impl Prompt for AnswerPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed(&self.0)
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_history_search_indicator(&self, _search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn get_indicator_color(&self) -> reedline::Color {
        reedline::Color::Default
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuations_are_joined_without_backslashes() {
        assert_eq!(join_continuations("one \\\ntwo"), "one \ntwo");
        assert_eq!(join_continuations("pasted\nblock"), "pasted\nblock");
        assert_eq!(join_continuations("ends with \\"), "ends with \\");
        assert!(matches!(
            TrailingBackslash.validate("a \\"),
            ValidationResult::Incomplete
        ));
        assert!(matches!(
            TrailingBackslash.validate("a"),
            ValidationResult::Complete
        ));
    }
}
