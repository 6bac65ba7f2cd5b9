//! [`LiveView`]: the interactive chat's event sink. On a terminal the answer is rendered as
//! markdown line by line as it streams (under the skin's response label), reasoning is shown
//! dimmed when `/reasoning` is on, a spinner runs while the model or a tool is busy, every tool
//! call gets one progress line (with arguments and result under it when `/verbose` is on), and
//! notices appear as dimmed lines. When stdout is not a terminal the answer passes through
//! verbatim and tools get the compact one-line form, as in `chat -q`. Every event's text is
//! passed through the terminal sanitizer as it arrives ([`LiveView::emit`]): the model's
//! answer, reasoning, tool names, previews, arguments and results never carry control
//! sequences to the terminal; only the styles drawn here are emitted.

use std::collections::HashMap;
use std::sync::Mutex;

use hermes_core::EventSink;
use hermes_protocol::{AgentEvent, Message, Role};
use hermes_tools::output::{TerminalSanitizer, terminal_safe};

use crate::render::one_line;

use super::console::{Activity, Console, terminal_width};
use super::markdown::MarkdownStream;
use super::progress;
use super::style::{Line, Span, Style, width};
use super::theme::Theme;

/// How the chat's output is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// A terminal: markdown, spinner, styled tool lines (colour per the theme's mode).
    Rich,
    /// A pipe or file: the text as it streams, compact tool lines, no escapes.
    Raw,
}

/// Display switches the user changes with slash commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Switches {
    /// `/verbose`: tool arguments and results under each tool line.
    pub verbose: bool,
    /// `/reasoning`: the model's reasoning, dimmed, before its answer.
    pub reasoning: bool,
}

impl Switches {
    /// The starting state from config.yaml, read as the Python Hermes writes it:
    /// `display.show_reasoning: true|false` and `display.tool_progress: verbose`. Both are off
    /// when not set.
    pub fn from_config(raw: &serde_json::Value) -> Switches {
        let display = raw.get("display");
        let setting = |key: &str| display.and_then(|d| d.get(key));
        Switches {
            verbose: setting("tool_progress").and_then(serde_json::Value::as_str)
                == Some("verbose"),
            reasoning: setting("show_reasoning")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
        }
    }
}

struct ToolCallInfo {
    name: String,
    preview: String,
    arguments: Option<String>,
}

struct State {
    theme: Theme,
    switches: Switches,
    answer: MarkdownStream,
    thinking: MarkdownStream,
    /// Reasoning is being shown (its header was printed).
    in_reasoning: bool,
    /// The response label was printed this turn.
    labelled: bool,
    /// Raw mode: the cursor is not at the start of a line.
    mid_line: bool,
    calls: HashMap<String, ToolCallInfo>,
    /// Calls started and not finished, in start order.
    running: Vec<String>,
    /// A fixed width (tests); else the terminal's, asked per line.
    width: Option<usize>,
    /// Control sequences of the streamed answer and reasoning may span deltas.
    answer_guard: TerminalSanitizer,
    reasoning_guard: TerminalSanitizer,
}

pub struct LiveView {
    console: std::sync::Arc<Console>,
    look: Look,
    state: Mutex<State>,
}

impl LiveView {
    pub fn new(console: std::sync::Arc<Console>, look: Look, theme: Theme) -> LiveView {
        LiveView {
            console,
            look,
            state: Mutex::new(State {
                theme,
                switches: Switches::default(),
                answer: MarkdownStream::new(),
                thinking: MarkdownStream::new(),
                in_reasoning: false,
                labelled: false,
                mid_line: false,
                calls: HashMap::new(),
                running: Vec::new(),
                width: None,
                answer_guard: TerminalSanitizer::new(),
                reasoning_guard: TerminalSanitizer::new(),
            }),
        }
    }

    /// Renders at a fixed width instead of the terminal's (tests).
    #[cfg(test)]
    pub fn with_width(self, columns: usize) -> LiveView {
        if let Ok(mut st) = self.state.lock() {
            st.width = Some(columns);
        }
        self
    }

    pub fn look(&self) -> Look {
        self.look
    }

    pub fn console(&self) -> &Console {
        &self.console
    }

    pub fn switches(&self) -> Switches {
        self.state.lock().map(|s| s.switches).unwrap_or_default()
    }

    pub fn set_switches(&self, switches: Switches) {
        if let Ok(mut st) = self.state.lock() {
            st.switches = switches;
        }
    }

    pub fn theme(&self) -> Theme {
        self.state
            .lock()
            .map(|s| s.theme.clone())
            .unwrap_or_else(|_| Theme::plain())
    }

    pub fn set_theme(&self, theme: Theme) {
        self.console.set_theme(theme.clone());
        if let Ok(mut st) = self.state.lock() {
            st.theme = theme;
        }
    }

    /// The width lines are wrapped to now.
    pub fn width(&self) -> usize {
        self.state
            .lock()
            .ok()
            .and_then(|s| s.width)
            .unwrap_or_else(terminal_width)
    }

    /// Prints styled lines above the spinner.
    pub fn print_lines(&self, lines: &[Line]) {
        let theme = self.theme();
        self.console.print(&theme.paint_lines(lines));
    }

    /// Prints plain text (it should end with a newline), without any control sequence: what
    /// goes through here may quote the model (a recap, a prompt). Styled output goes through
    /// [`LiveView::print_lines`].
    pub fn print(&self, text: &str) {
        self.console.print(&terminal_safe(text));
    }

    /// Draws everything still pending (a partial answer line, a table) and stops the
    /// spinner: before a prompt, and at the end of a turn. Returns what the spinner showed.
    pub fn settle(&self) -> Option<Activity> {
        let Ok(mut st) = self.state.lock() else {
            return None;
        };
        let spinner = self.console.stop_spinner();
        self.flush(&mut st);
        spinner
    }

    /// Ends the turn: pending text drawn, spinner stopped, per-turn state reset.
    pub fn finish_turn(&self) {
        self.settle();
        if let Ok(mut st) = self.state.lock() {
            st.labelled = false;
            st.calls.clear();
            st.running.clear();
            st.answer_guard.finish();
            st.reasoning_guard.finish();
        }
    }

    fn flush(&self, st: &mut State) {
        match self.look {
            Look::Rich => {
                let width = st.width.unwrap_or_else(terminal_width);
                let mut lines = dimmed(st.thinking.finish(&st.theme, width));
                st.in_reasoning = false;
                lines.extend(st.answer.finish(&st.theme, width));
                self.emit_lines(st, &lines);
            }
            Look::Raw => {
                if st.mid_line {
                    self.console.print("\n");
                    st.mid_line = false;
                }
                st.in_reasoning = false;
            }
        }
    }

    fn emit_lines(&self, st: &State, lines: &[Line]) {
        if !lines.is_empty() {
            self.console.print(&st.theme.paint_lines(lines));
        }
    }

    /// Raw mode: a whole line, starting on a fresh one.
    fn raw_line(&self, st: &mut State, text: &str) {
        let lead = if st.mid_line { "\n" } else { "" };
        st.mid_line = false;
        self.console.print(&format!("{lead}{text}\n"));
    }

    fn text(&self, st: &mut State, text: &str) {
        match self.look {
            Look::Raw => {
                if st.in_reasoning {
                    st.in_reasoning = false;
                    if st.mid_line {
                        self.console.print("\n");
                        st.mid_line = false;
                    }
                }
                self.console.print(text);
                st.mid_line = !text.ends_with('\n');
            }
            Look::Rich => {
                self.console.stop_spinner();
                let width = st.width.unwrap_or_else(terminal_width);
                if st.in_reasoning {
                    let lines = dimmed(st.thinking.finish(&st.theme, width));
                    self.emit_lines(st, &lines);
                    st.in_reasoning = false;
                }
                let mut lines = Vec::new();
                let mut text = text;
                if !st.labelled {
                    // Blank lines before the answer's first words are not drawn.
                    text = text.trim_start_matches(['\n', '\r']);
                    if text.trim().is_empty() {
                        return;
                    }
                    st.labelled = true;
                    lines.push(label_line(&st.theme, width));
                }
                lines.extend(st.answer.push(text, &st.theme, width));
                self.emit_lines(st, &lines);
            }
        }
    }

    fn reasoning(&self, st: &mut State, text: &str) {
        if !st.switches.reasoning {
            if self.look == Look::Rich {
                self.console.spin(Activity::Thinking);
            }
            return;
        }
        match self.look {
            Look::Raw => {
                if !st.in_reasoning {
                    st.in_reasoning = true;
                    self.raw_line(st, "[reasoning]");
                }
                self.console.print(text);
                st.mid_line = !text.ends_with('\n');
            }
            Look::Rich => {
                self.console.stop_spinner();
                let width = st.width.unwrap_or_else(terminal_width).saturating_sub(2);
                let mut lines = Vec::new();
                if !st.in_reasoning {
                    st.in_reasoning = true;
                    lines.push(vec![Span::new(
                        "💭 reasoning",
                        st.theme.label().dim().italic(),
                    )]);
                }
                lines.extend(dimmed(st.thinking.push(text, &st.theme, width)));
                self.emit_lines(st, &lines);
            }
        }
    }

    fn tool_started(&self, st: &mut State, call_id: String, name: String, preview: String) {
        if self.look == Look::Rich {
            self.console.stop_spinner();
            self.flush(st);
            self.console
                .spin(Activity::Tool(tool_label(&st.theme, &name, &preview)));
        }
        let arguments = st.calls.get(&call_id).and_then(|c| c.arguments.clone());
        st.running.push(call_id.clone());
        st.calls.insert(
            call_id,
            ToolCallInfo {
                name,
                preview,
                arguments,
            },
        );
    }

    fn tool_finished(
        &self,
        st: &mut State,
        call_id: &str,
        name: &str,
        duration: std::time::Duration,
        ok: bool,
    ) {
        st.running.retain(|id| id != call_id);
        let (preview, arguments) = st
            .calls
            .get(call_id)
            .map(|c| (c.preview.clone(), c.arguments.clone()))
            .unwrap_or_default();
        match self.look {
            Look::Raw => {
                let line = crate::render::tool_line(name, &preview, duration, ok);
                self.raw_line(st, &line);
                if st.switches.verbose
                    && let Some(args) = &arguments
                {
                    let theme = Theme::plain();
                    for l in progress::argument_lines(&theme, args, 100) {
                        self.raw_line(st, &theme.paint(&l));
                    }
                }
            }
            Look::Rich => {
                let width = st.width.unwrap_or_else(terminal_width);
                let mut lines = vec![progress::tool_line(
                    &st.theme, name, &preview, duration, ok, width,
                )];
                if st.switches.verbose
                    && let Some(args) = &arguments
                {
                    lines.extend(progress::argument_lines(&st.theme, args, width));
                }
                self.emit_lines(st, &lines);
                let next = st
                    .running
                    .first()
                    .and_then(|id| st.calls.get(id))
                    .map(|c| Activity::Tool(tool_label(&st.theme, &c.name, &c.preview)))
                    .unwrap_or(Activity::Waiting);
                self.console.spin(next);
            }
        }
    }

    fn message_added(&self, st: &mut State, message: &Message) {
        match message.role {
            Role::Assistant => {
                for call in &message.tool_calls {
                    let entry = st.calls.entry(call.id.clone()).or_insert(ToolCallInfo {
                        name: call.name.clone(),
                        preview: String::new(),
                        arguments: None,
                    });
                    entry.arguments = Some(call.arguments.clone());
                }
            }
            Role::Tool if st.switches.verbose => {
                let name = message
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| st.calls.get(id))
                    .map(|c| c.name.clone())
                    .or_else(|| message.name.clone())
                    .unwrap_or_else(|| "tool".into());
                match self.look {
                    Look::Raw => {
                        let theme = Theme::plain();
                        for l in progress::result_lines(&theme, &name, &message.content, 100) {
                            self.raw_line(st, &theme.paint(&l));
                        }
                    }
                    Look::Rich => {
                        let width = st.width.unwrap_or_else(terminal_width);
                        let lines =
                            progress::result_lines(&st.theme, &name, &message.content, width);
                        self.emit_lines(st, &lines);
                    }
                }
            }
            _ => {}
        }
    }

    fn status(&self, st: &mut State, text: &str) {
        match self.look {
            Look::Raw => self.raw_line(st, &format!("  · {text}")),
            Look::Rich => {
                self.flush(st);
                let line = vec![Span::new(format!("  · {text}"), st.theme.warn().dim())];
                self.emit_lines(st, &[line]);
            }
        }
    }
}

impl EventSink for LiveView {
    fn emit(&self, event: AgentEvent) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        match event {
            AgentEvent::ModelCallStarted { .. } if self.look == Look::Rich => {
                self.console.spin(Activity::Waiting);
            }
            AgentEvent::TextDelta(t) => {
                let t = st.answer_guard.push(&t);
                if !t.is_empty() {
                    self.text(&mut st, &t);
                }
            }
            AgentEvent::ReasoningDelta(t) => {
                let t = st.reasoning_guard.push(&t);
                if !t.is_empty() {
                    self.reasoning(&mut st, &t);
                }
            }
            AgentEvent::ToolStarted {
                call_id,
                name,
                preview,
            } => self.tool_started(
                &mut st,
                call_id,
                one_line(&name).into_owned(),
                one_line(&preview).into_owned(),
            ),
            AgentEvent::ToolFinished {
                call_id,
                name,
                duration,
                ok,
            } => self.tool_finished(&mut st, &call_id, &one_line(&name), duration, ok),
            AgentEvent::MessageAdded(m) => self.message_added(&mut st, &safe_message(&m)),
            AgentEvent::Status(text) => self.status(&mut st, &terminal_safe(&text)),
            _ => {}
        }
    }
}

/// The parts of a message that may be drawn (content, tool names and arguments), without
/// control sequences.
fn safe_message(m: &Message) -> Message {
    let mut m = m.clone();
    m.content = terminal_safe(&m.content).into_owned();
    m.name = m.name.as_deref().map(|n| one_line(n).into_owned());
    for call in &mut m.tool_calls {
        call.name = one_line(&call.name).into_owned();
        call.arguments = terminal_safe(&call.arguments).into_owned();
    }
    m
}

/// What the spinner says while a tool runs: `💻 terminal: echo hi`.
fn tool_label(theme: &Theme, name: &str, preview: &str) -> String {
    let preview = preview.lines().next().unwrap_or_default();
    if preview.is_empty() {
        format!("{} {name}", theme.skin.tool_emoji(name))
    } else {
        format!(
            "{} {name}: {}",
            theme.skin.tool_emoji(name),
            super::style::truncate(preview, 48)
        )
    }
}

/// `── ⚕ Hermes ──────` over the answer.
fn label_line(theme: &Theme, columns: usize) -> Line {
    let label = theme.skin.brand("response_label", " ⚕ Hermes ");
    let used = 2 + width(label);
    let rest = columns.min(80).saturating_sub(used);
    let style = theme.response_border();
    vec![
        Span::new("──", style),
        Span::new(label.to_string(), style.bold()),
        Span::new("─".repeat(rest), style),
    ]
}

/// Reasoning lines: dimmed and italic, behind a bar.
fn dimmed(lines: Vec<Line>) -> Vec<Line> {
    lines
        .into_iter()
        .map(|l| {
            let mut out = vec![Span::new("│ ", Style::PLAIN.dim())];
            out.extend(
                l.into_iter()
                    .map(|s| Span::new(s.text, s.style.dim().italic())),
            );
            out
        })
        .collect()
}
