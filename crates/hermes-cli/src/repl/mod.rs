//! The interactive chat: read a message, run a turn with the answer streaming, repeat; lines
//! starting with `/` are slash commands (`commands` and `settings`, registered in `slash`). On a terminal, input comes from the
//! line editor and output is the rich view (markdown, spinner, tool lines, skin); with piped
//! stdin lines are read as they come, and with stdout piped the answer passes through as plain
//! text. Ctrl-C cancels a running turn (the conversation stays valid); at an empty prompt a
//! second Ctrl-C exits (code 130), as does Ctrl-C with piped input; Ctrl-D or end of input
//! exits (0). Every exit path shuts the session's background processes down.

pub mod commands;
pub mod config_edit;
pub mod settings;
pub mod slash;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use hermes_config::HermesHome;
use hermes_protocol::{TurnEnd, Usage};
use hermes_runtime::{Platform, Session, TurnReport};
use tokio_util::sync::CancellationToken;

use self::slash::Parsed;
use crate::args::CommonArgs;
use crate::error::CliError;
use crate::interaction::Terminal;
use crate::tui::banner::{self, BannerInfo};
use crate::tui::complete::Vocabulary;
use crate::tui::console::{Console, Stdout};
use crate::tui::editor::{EditorHandle, PromptLook};
use crate::tui::input::{Input, Read};
use crate::tui::live::{LiveView, Look, Switches};
use crate::tui::prompts::ReplPrompts;
use crate::tui::skin;
use crate::tui::style::{ColorMode, Span, Style};
use crate::tui::theme::Theme;
use crate::tui::wrap::wrap;
use commands::Flow;

/// Token use summed over the session's turns.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub turns: u32,
    pub api_calls: u32,
    pub usage: Usage,
    /// `None` once any call could not be priced.
    pub cost_usd: Option<f64>,
}

impl Totals {
    fn add(&mut self, turn: &TurnReport) {
        let priced = match (self.turns, self.cost_usd, turn.cost_usd) {
            (0, _, c) => c,
            (_, Some(a), Some(b)) => Some(a + b),
            (_, _, None) if turn.api_calls == 0 => self.cost_usd,
            _ => None,
        };
        self.turns += 1;
        self.api_calls += turn.api_calls;
        self.usage += turn.usage;
        self.cost_usd = priced;
    }
}

/// Everything the chat keeps between lines.
pub struct Repl {
    pub args: CommonArgs,
    pub home: HermesHome,
    pub session: Session,
    pub view: Arc<LiveView>,
    pub input: Input,
    pub prompts: Arc<ReplPrompts>,
    pub terminal: Arc<Terminal>,
    pub totals: Totals,
    /// The last turn, for `/usage`.
    pub last_turn: Option<TurnReport>,
    /// stdin is a terminal (the line editor reads it).
    pub interactive: bool,
    /// The next Ctrl-C at an empty prompt exits.
    armed_exit: bool,
    /// Put in the editor before the next message (`/undo`).
    pub prefill: Option<String>,
    /// What tab completion offers (updated when the model changes).
    pub vocabulary: Arc<std::sync::Mutex<Vocabulary>>,
    /// Background reviews started after turns; waited for (bounded) at exit.
    reviews: Vec<hermes_runtime::review::ReviewHandle>,
}

pub async fn run(args: &CommonArgs) -> Result<ExitCode, CliError> {
    let mut repl = Repl::start(args)?;
    let code = repl.chat().await;
    repl.goodbye();
    let wait = repl.session.review_settings().wait;
    let reviews = std::mem::take(&mut repl.reviews);
    repl.session.close().await;
    crate::curator_cmd::after_session(args);
    // A review still running gets at most `memory.review_wait_seconds` in all.
    let deadline = tokio::time::Instant::now() + wait;
    for review in reviews {
        review
            .wait(deadline.saturating_duration_since(tokio::time::Instant::now()))
            .await;
    }
    Ok(code)
}

impl Repl {
    fn start(args: &CommonArgs) -> Result<Repl, CliError> {
        let interactive = std::io::stdin().is_terminal();
        let stdout_tty = std::io::stdout().is_terminal();
        let runtime = crate::session::runtime(args)?;
        let home = runtime.home().clone();
        let config = runtime.config().clone();
        let look = if stdout_tty { Look::Rich } else { Look::Raw };
        let loaded = skin::startup(
            &home.join("skins"),
            skin::configured_name(&config.raw).as_deref(),
        );
        if let Some(w) = &loaded.warning {
            eprintln!("hermes: {w}");
        }
        let theme = Theme::new(loaded.skin, ColorMode::detect(stdout_tty));
        let console = Arc::new(Console::new(Box::new(Stdout), theme.clone(), stdout_tty));
        let view = Arc::new(LiveView::new(console, look, theme.clone()));
        view.set_switches(Switches::from_config(&config.raw));
        let vocabulary = Arc::new(std::sync::Mutex::new(Vocabulary {
            skins_dir: home.join("skins"),
            sessions: Some(hermes_store::StoreLocation::File(
                home.join(hermes_store::DB_FILE_NAME),
            )),
            ..Vocabulary::default()
        }));
        let input = if interactive {
            Input::editor(EditorHandle::spawn(
                home.join(".hermes_history"),
                Arc::clone(&vocabulary),
                prompt_look(&theme),
            ))
        } else {
            Input::stdin()
        };
        let prompts = Arc::new(ReplPrompts::new(Arc::clone(&view), input.clone()));
        let terminal = Arc::new(Terminal::new(prompts.clone()));
        // `--yolo` is the terminal's switch here, so `/yolo` can turn it off again.
        terminal.set_yolo(args.yolo);
        let mut spec = args.spec(Platform::Cli, crate::session::working_dir(&config)?);
        spec.yolo = false;
        let session = runtime.session(&spec, terminal.clone())?;
        if let Ok(mut v) = vocabulary.lock() {
            *v = commands::vocabulary(&session, &config, &home, std::mem::take(&mut *v));
        }
        let repl = Repl {
            args: args.clone(),
            home,
            session,
            view,
            input,
            prompts,
            terminal,
            totals: Totals::default(),
            last_turn: None,
            interactive,
            armed_exit: false,
            reviews: Vec::new(),
            prefill: None,
            vocabulary,
        };
        if look == Look::Rich && interactive {
            repl.print_banner();
        }
        if let Some(resumed) = repl.session.resumed() {
            repl.view.print(&crate::resume::recap(resumed));
        }
        Ok(repl)
    }

    /// The welcome box.
    pub fn print_banner(&self) {
        let mut toolsets: Vec<String> = Vec::new();
        for (_, ts) in &self.session.tool_toolsets() {
            if !toolsets.contains(ts) {
                toolsets.push(ts.clone());
            }
        }
        let info = BannerInfo {
            model: self.session.agent().model().to_string(),
            provider: self.session.provider().provider.clone(),
            toolsets,
            tool_count: self.session.agent().tool_schemas().len(),
            cwd: banner::short_path(&std::env::current_dir().unwrap_or_default()),
            session_id: self.session.session_id(),
        };
        let theme = self.view.theme();
        let width = self.view.width();
        let mut lines = banner::banner(&info, &theme, width);
        // The welcome line wraps like any text.
        if let Some(welcome) = lines.pop() {
            lines.extend(wrap(&welcome, width, &[], &[]));
        }
        self.view.print_lines(&lines);
    }

    /// The loop: until Ctrl-D, end of input, `/quit`, or Ctrl-C at an empty prompt.
    async fn chat(&mut self) -> ExitCode {
        loop {
            let read = self.read_message().await;
            let text = match read {
                Read::End => return ExitCode::SUCCESS,
                Read::Interrupt => {
                    if self.armed_exit || !self.interactive {
                        return ExitCode::from(130);
                    }
                    self.armed_exit = true;
                    continue;
                }
                Read::Line(text) => text,
            };
            self.armed_exit = false;
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            if self.skill_command(text).await {
                continue;
            }
            match slash::parse(text) {
                Parsed::Message(message) => {
                    let message = message.to_string();
                    self.turn(&message).await;
                }
                Parsed::Command { command, args } => {
                    let args = args.to_string();
                    if let Flow::Exit(code) = self.command(command, &args).await {
                        return code;
                    }
                }
                Parsed::Unknown(name) => {
                    let name = name.to_string();
                    self.unknown_command(&name);
                }
                Parsed::Ambiguous { typed, candidates } => {
                    let list: Vec<String> = candidates.iter().map(|c| format!("/{c}")).collect();
                    self.say(&format!(
                        "/{typed} could be {}; type more of the name.",
                        list.join(", ")
                    ));
                }
            }
        }
    }

    async fn read_message(&mut self) -> Read {
        if let Some(editor) = self.input.editor_handle() {
            let hint = if self.armed_exit {
                "Ctrl-C again to exit".to_string()
            } else {
                String::new()
            };
            return editor.message_with_hint(self.prefill.take(), hint).await;
        }
        tokio::select! {
            read = self.input.message(None) => read,
            _ = tokio::signal::ctrl_c() => {
                self.view.print("\n");
                Read::Interrupt
            }
        }
    }

    /// Runs one turn for `text`.
    pub async fn turn(&mut self, text: &str) {
        let cancel = CancellationToken::new();
        self.prompts.set_turn(Some(cancel.clone()));
        let result = {
            let view = Arc::clone(&self.view);
            let turn = self
                .session
                .turn_with_references(text, view.as_ref(), cancel.clone());
            tokio::pin!(turn);
            tokio::select! {
                r = &mut turn => r,
                _ = tokio::signal::ctrl_c() => {
                    cancel.cancel();
                    turn.await
                }
            }
        };
        let (result, unreadable) = result;
        self.prompts.set_turn(None);
        self.view.finish_turn();
        for e in unreadable {
            self.complain(&format!("{e}; sent without it"));
        }
        self.totals.add(&result);
        match &result.end {
            TurnEnd::Interrupted => {
                self.note("  · interrupted");
                self.armed_exit = self.interactive;
            }
            TurnEnd::Failed(failure) => eprintln!(
                "hermes: {}",
                hermes_tools::output::terminal_safe(&failure.message)
            ),
            TurnEnd::BudgetExhausted => self.note(&format!(
                "  · stopped after {} model calls (agent.max_turns); the answer above is the model's wrap-up",
                result.api_calls
            )),
            TurnEnd::Completed => {}
        }
        self.last_turn = Some(result);
        // The answer is on screen: the review the turn made due starts now, its notices
        // dimmed lines of the conversation.
        let view = Arc::clone(&self.view);
        let notices = move |line: &str| {
            let style = view.theme().dim();
            view.print_lines(&[vec![Span::new(format!("  {line}"), style)]]);
        };
        self.reviews.retain(|r| !r.is_finished());
        if let Some(review) = self.session.start_review(Arc::new(notices)) {
            self.reviews.push(review);
        }
    }

    /// Output of a command: as is on a pipe, wrapped to the terminal in `style` on a screen.
    fn print_styled(&self, text: &str, style: Option<Style>) {
        if self.view.look() == Look::Raw {
            return self.view.print(&format!("{text}\n"));
        }
        let width = self.view.width();
        let style = style.unwrap_or(Style::PLAIN);
        let mut lines = Vec::new();
        for line in text.lines() {
            let indent = line.len() - line.trim_start().len();
            let pad = vec![Span::plain(" ".repeat(indent))];
            let hang = vec![Span::plain(" ".repeat(indent + 2))];
            let content = vec![Span::new(line.trim_start().to_string(), style)];
            lines.extend(wrap(&content, width, &pad, &hang));
        }
        self.view.print_lines(&lines);
    }

    /// A plain line of output.
    pub fn say(&self, text: &str) {
        self.print_styled(text, None);
    }

    /// A dimmed note.
    pub fn note(&self, text: &str) {
        self.print_styled(text, Some(self.view.theme().dim()));
    }

    /// An error line (stays on stdout with the conversation).
    pub fn complain(&self, text: &str) {
        self.print_styled(text, Some(self.view.theme().error()));
    }

    fn goodbye(&self) {
        if self.view.look() == Look::Rich && self.interactive {
            let theme = self.view.theme();
            let text = theme.skin.brand("goodbye", "Goodbye! ⚕").to_string();
            self.view
                .print_lines(&[vec![Span::new(text, theme.accent())]]);
        }
    }
}

/// The prompt symbol in the skin's prompt colour.
pub fn prompt_look(theme: &Theme) -> PromptLook {
    PromptLook {
        symbol: theme.paint_str(theme.skin.prompt_symbol(), theme.prompt()),
        color: theme.mode.enabled(),
    }
}
