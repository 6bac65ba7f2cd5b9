//! Slash commands that act on the conversation: dispatch of every command, `/help`, `/new`,
//! `/clear`, `/history`, `/retry`, `/undo`, `/title`, `/compress`, `/sessions`, `/resume`,
//! `/quit`, `/skills`, running a skill with `/<skill-name> [request]` (its instructions and the
//! request become the user's message), and the answer to unknown names. Settings and
//! information commands are in [`super::settings`]. Every change to the conversation is
//! mirrored in the session store, so a resumed session is what was on screen.

use std::process::ExitCode;

use hermes_config::{Config, HermesHome};
use hermes_core::skills::{Availability, invoke};
use hermes_protocol::Role;
use hermes_tools::output::{first_string_arg, shorten_line};
use tokio_util::sync::CancellationToken;

use super::slash::{COMMANDS, Command, Group};
use crate::repl::Repl;
use crate::tui::complete::Vocabulary;
use crate::tui::console::Activity;
use crate::tui::live::Look;
use crate::tui::style::Span;
use hermes_runtime::{Compression, Session};

/// What the loop does after a command.
pub enum Flow {
    Continue,
    Exit(ExitCode),
}

/// What completion offers for this session: its model and the configured ones, provider ids,
/// toolsets.
pub fn vocabulary(
    session: &Session,
    config: &Config,
    home: &HermesHome,
    base: Vocabulary,
) -> Vocabulary {
    let mut models = vec![session.agent().model().to_string()];
    let mut add = |m: Option<&str>| {
        if let Some(m) = m.map(str::trim).filter(|m| !m.is_empty())
            && !models.iter().any(|x| x == m)
        {
            models.push(m.to_string());
        }
    };
    add(config.model.default.as_deref());
    for key in ["fallback_providers", "custom_providers"] {
        if let Some(list) = config.raw.get(key).and_then(|v| v.as_array()) {
            for entry in list {
                add(entry.get("model").and_then(|m| m.as_str()));
            }
        }
    }
    let mut providers: Vec<String> = hermes_llm::resolve::PRESETS
        .iter()
        .map(|p| p.id.to_string())
        .collect();
    for named in hermes_llm::resolve::named_providers(&config.raw) {
        if !providers.contains(&named.name) {
            providers.push(named.name);
        }
    }
    let toolsets = super::settings::all_toolsets()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    Vocabulary {
        models,
        providers,
        toolsets,
        skins_dir: home.join("skins"),
        sessions: Some(session.runtime().store_location().clone()),
        cwd: std::env::current_dir().unwrap_or(base.cwd),
        skills: Some(session.skills().clone()),
    }
}

impl Repl {
    /// Runs one slash command.
    pub async fn command(&mut self, command: &'static Command, args: &str) -> Flow {
        match command.name {
            "help" => self.help(args),
            "new" => self.new_conversation(args),
            "clear" => self.clear_screen(),
            "history" => self.show_history(),
            "retry" => self.retry().await,
            "undo" => self.undo(args),
            "title" => {
                let line = self.session.recorder().title_command(args);
                self.say(&line);
            }
            "compress" => self.compress(args).await,
            "sessions" => self.list_sessions(),
            "resume" => self.resume(args).await,
            "quit" => return Flow::Exit(ExitCode::SUCCESS),
            "usage" => self.usage(),
            "model" => self.model(args).await,
            "provider" => self.provider(args).await,
            "tools" => self.tools(args),
            "toolsets" => self.toolsets(),
            "memory" => self.memory(),
            "yolo" => self.yolo(args),
            "approvals" => self.approvals(),
            "skin" => self.skin(args),
            "verbose" => self.display_switch(command.name, args),
            "reasoning" => self.reasoning(args),
            "skills" => self.list_skills(),
            "cron" => self.cron_jobs(),
            "kanban" => {
                let root = hermes_kanban::kanban_root(self.session.runtime().home().root());
                let text = hermes_kanban::chat::run(&root, args, "user");
                for line in text.lines() {
                    self.say(line);
                }
            }
            "reload-mcp" => self.reload_mcp().await,
            _ => self.not_in_this_build(command),
        }
        Flow::Continue
    }

    /// `/name [request]` naming a skill (and no command exactly): sends the skill's
    /// instructions with the request as the next message. False when `text` is no skill
    /// command, so the line goes on to the command parser (which matches prefixes).
    pub async fn skill_command(&mut self, text: &str) -> bool {
        let Some(rest) = text.strip_prefix('/').filter(|r| !r.starts_with('/')) else {
            return false;
        };
        let (word, request) = match rest.find(char::is_whitespace) {
            Some(i) => (&rest[..i], rest[i..].trim()),
            None => (rest, ""),
        };
        let lower = word.to_ascii_lowercase();
        let is_command = COMMANDS
            .iter()
            .any(|c| c.name == lower || c.aliases.contains(&lower.as_str()));
        if word.is_empty() || is_command {
            return false;
        }
        let skills = self.session.skills().clone();
        let Some(skill) = invoke::find_command(&skills, word) else {
            return false;
        };
        match invoke::message(&skills, &skill, request, &self.session.session_id()) {
            Ok(message) => {
                self.note(&format!("⚡ Running skill {}", skill.name));
                self.turn(&message).await;
            }
            Err(notice) => self.complain(&format!("/{word} was not run: {notice}")),
        }
        true
    }

    /// `/skills`: the skills this session offers, as the commands that run them.
    fn list_skills(&self) {
        let loaded = self.session.skills().load();
        for w in &loaded.warnings {
            self.note(&format!("  ! {w}"));
        }
        let commands = invoke::commands(self.session.skills());
        let hidden = loaded.skills.iter().filter(|s| !s.is_active()).count();
        let hidden_note = if hidden == 0 {
            String::new()
        } else {
            format!(" ({hidden} more not offered here: `hermes skills list` shows why)")
        };
        if commands.is_empty() {
            return self.say(&format!(
                "No skills yet{hidden_note}. They live in {}; the agent saves them with skill_manage.",
                self.session.skills().root().display()
            ));
        }
        let theme = self.view.theme();
        let width = commands.iter().map(|(c, _)| c.len() + 1).max().unwrap_or(0);
        let mut lines = vec![vec![Span::plain(format!(
            "{} skill{}{hidden_note}; /<name> [request] runs one:",
            commands.len(),
            if commands.len() == 1 { "" } else { "s" }
        ))]];
        for (command, skill) in &commands {
            let mut text = hermes_core::skills::index::one_line(&skill.description);
            if let Some(c) = &skill.category {
                text = format!("{text} ({c})");
            }
            if text.is_empty() {
                lines.push(vec![Span::new(format!("  /{command}"), theme.accent())]);
                continue;
            }
            lines.push(vec![
                Span::new(
                    format!("  {:<width$}  ", format!("/{command}")),
                    theme.accent(),
                ),
                Span::plain(text),
            ]);
        }
        self.view.print_lines(&lines);
    }

    /// `/name` that is no command and no skill offered here.
    pub fn unknown_command(&self, name: &str) {
        if name.is_empty() {
            return self.say("Type /help for the commands.");
        }
        if let Ok(skill) = self.session.skills().find(name) {
            let why = match &skill.availability {
                Availability::Disabled => {
                    "it is disabled (skills.disabled in config.yaml)".to_string()
                }
                Availability::OtherPlatform(p) => format!("it is for {} only", p.join(", ")),
                Availability::OtherEnvironment(e) => format!("it is for {} only", e.join(", ")),
                Availability::Active => "its name does not make a command".to_string(),
            };
            return self.complain(&format!(
                "/{name}: the skill {} is not offered here: {why}.",
                skill.name
            ));
        }
        self.complain(&format!(
            "Unknown command /{name}. Type /help for the list; start a message with // to send text beginning with /."
        ));
    }

    fn help(&self, args: &str) {
        let theme = self.view.theme();
        let name = args.trim().trim_start_matches('/');
        if !name.is_empty() {
            return match super::slash::resolve(name) {
                Ok(c) => {
                    let aliases = if c.aliases.is_empty() {
                        String::new()
                    } else {
                        let list: Vec<String> = c.aliases.iter().map(|a| format!("/{a}")).collect();
                        format!(" (also {})", list.join(", "))
                    };
                    self.say(&format!("/{} {}{aliases}\n  {}", c.name, c.args, c.help));
                }
                Err(_) => self.complain(&format!("No command /{name}.")),
            };
        }
        let mut lines = vec![vec![Span::new(
            theme
                .skin
                .brand("help_header", "(^_^)? Available Commands")
                .to_string(),
            theme.title(),
        )]];
        for group in [
            Group::Session,
            Group::Configuration,
            Group::Tools,
            Group::Info,
        ] {
            lines.push(vec![Span::new(
                format!("  {}", group.title()),
                theme.label().bold(),
            )]);
            for c in COMMANDS.iter().filter(|c| c.group == group) {
                let mut usage = format!("/{}", c.name);
                if !c.args.is_empty() {
                    usage.push(' ');
                    usage.push_str(c.args);
                }
                let aliases: Vec<String> = c.aliases.iter().map(|a| format!("/{a}")).collect();
                let mut help = c.help.to_string();
                if !aliases.is_empty() {
                    help.push_str(&format!(" (also {})", aliases.join(", ")));
                }
                lines.push(vec![
                    Span::new(format!("    {usage:<22}"), theme.accent()),
                    Span::plain(help),
                ]);
            }
        }
        lines.push(vec![Span::new(
            "  Keys: Enter sends · Alt-Enter or a trailing \\ adds a line · Tab completes commands and @paths · Ctrl-C stops a turn (twice at an empty prompt exits) · Ctrl-D exits",
            theme.dim(),
        )]);
        lines.push(vec![Span::new(
            "  Commands match by unique prefix (/he is /help); //text sends text that starts with /.",
            theme.dim(),
        )]);
        self.view.print_lines(&lines);
    }

    fn new_conversation(&mut self, title: &str) {
        self.session.new_conversation();
        self.totals = Default::default();
        self.last_turn = None;
        self.say("Started a new conversation.");
        if !title.trim().is_empty() {
            let line = self.session.recorder().title_command(title);
            self.say(&line);
        }
    }

    fn clear_screen(&self) {
        if self.view.look() == Look::Raw {
            return self.note("(/clear only clears a terminal screen)");
        }
        self.view.console().print("\x1b[2J\x1b[3J\x1b[H");
        self.print_banner();
    }

    fn show_history(&self) {
        if self.session.history().is_empty() {
            return self.say("No messages yet.");
        }
        let theme = self.view.theme();
        let symbol = theme.skin.prompt_symbol().to_string();
        let mut lines = Vec::new();
        for m in self.session.history() {
            match m.role {
                Role::User => {
                    lines.push(Vec::new());
                    let content = hermes_tools::output::terminal_safe(&m.content);
                    for (i, l) in content.lines().enumerate() {
                        let lead = if i == 0 {
                            format!("{symbol} ")
                        } else {
                            "  ".into()
                        };
                        lines.push(vec![
                            Span::new(lead, theme.prompt()),
                            Span::new(l.to_string(), theme.text()),
                        ]);
                    }
                }
                Role::Assistant => {
                    // Stored text may predate any filtering (a resumed or imported session).
                    let content = hermes_tools::output::terminal_safe(&m.content);
                    let text: Vec<&str> = content.trim().lines().collect();
                    for l in text.iter().take(6) {
                        lines.push(vec![Span::plain(l.to_string())]);
                    }
                    if text.len() > 6 {
                        lines.push(vec![Span::new(
                            format!("  … {} more lines", text.len() - 6),
                            theme.dim(),
                        )]);
                    }
                    for call in &m.tool_calls {
                        let args = serde_json::from_str(&call.arguments).unwrap_or_default();
                        lines.push(vec![Span::new(
                            format!(
                                "  · {}  {}",
                                crate::render::one_line(&call.name),
                                crate::render::one_line(&shorten_line(
                                    &first_string_arg(&args),
                                    80
                                ))
                            ),
                            theme.dim(),
                        )]);
                    }
                }
                Role::Tool if m.content.starts_with("{\"error\"") => lines.push(vec![Span::new(
                    format!(
                        "    ✗ {}",
                        crate::render::one_line(&shorten_line(&m.content, 100))
                    ),
                    theme.error(),
                )]),
                Role::Tool | Role::System => {}
            }
        }
        self.view.print_lines(&lines);
    }

    /// Index of the `n`-th user message from the end (or the first one when there are fewer).
    fn user_turn_start(&self, n: usize) -> Option<(usize, usize)> {
        let users: Vec<usize> = self
            .session
            .history()
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, m)| m.role == Role::User)
            .map(|(i, _)| i)
            .take(n.max(1))
            .collect();
        users.last().map(|i| (*i, users.len()))
    }

    /// Cuts the conversation (and the stored session) back to its first `keep` messages.
    fn rewind(&mut self, keep: usize) {
        self.session.rewind(keep);
    }

    async fn retry(&mut self) {
        let Some((at, _)) = self.user_turn_start(1) else {
            return self.say("Nothing to retry yet.");
        };
        let text = self.session.history()[at].content.clone();
        self.rewind(at);
        self.note(&format!("Retrying: {}", shorten_line(&text, 60)));
        self.turn(&text).await;
    }

    fn undo(&mut self, args: &str) {
        let n = match args.trim() {
            "" => 1,
            s => match s.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return self.complain("Usage: /undo [N] (N exchanges to take back, default 1)");
                }
            },
        };
        let Some((at, turns)) = self.user_turn_start(n) else {
            return self.say("Nothing to undo.");
        };
        let text = self.session.history()[at].content.clone();
        self.rewind(at);
        let plural = if turns == 1 { "" } else { "s" };
        if self.input.editor_handle().is_some() {
            self.say(&format!(
                "Took back {turns} exchange{plural}; your message is back in the prompt to edit."
            ));
            self.prefill = Some(text);
        } else {
            self.say(&format!(
                "Took back {turns} exchange{plural} (from: {}).",
                shorten_line(&text, 60)
            ));
        }
    }

    async fn compress(&mut self, focus: &str) {
        if self.session.history().is_empty() {
            return self.say("Nothing to compress yet.");
        }
        let focus = Some(focus.trim()).filter(|f| !f.is_empty());
        let cancel = CancellationToken::new();
        self.view
            .console()
            .spin(Activity::Other("compressing".into()));
        let out = {
            let run = self.session.compress(focus, &cancel);
            tokio::pin!(run);
            tokio::select! {
                out = &mut run => out,
                _ = tokio::signal::ctrl_c() => {
                    cancel.cancel();
                    run.await
                }
            }
        };
        self.view.settle();
        let out = match out {
            Compression::Off => {
                return self.say("Compression is off (compression.enabled: false in config.yaml).");
            }
            Compression::Interrupted => {
                return self.note("  · compression interrupted; the conversation is unchanged");
            }
            Compression::Unchanged(_) => {
                return self
                    .say("Nothing to compress: the conversation is already as small as it gets.");
            }
            Compression::Done(out) => out,
        };
        let how = if out.summarized {
            "summarised"
        } else {
            "old tool output pruned"
        };
        self.say(&format!(
            "Compressed the conversation ({how}): ~{} → ~{} tokens; it continues in session {}.",
            hermes_llm::util::thousands(out.tokens_before),
            hermes_llm::util::thousands(out.tokens_after),
            self.session.session_id()
        ));
        if let Some(notice) = out.notice {
            self.note(&format!("  · {notice}"));
        }
    }

    fn list_sessions(&self) {
        let store = self.session.runtime().store_location();
        let listed = store.open().and_then(|s| s.list_sessions(15, None));
        let sessions = match listed {
            Ok(s) if !s.is_empty() => s,
            Ok(_) => return self.say("No stored sessions yet."),
            Err(e) => return self.complain(&format!("Cannot read the sessions: {e}")),
        };
        let theme = self.view.theme();
        let current = self.session.session_id();
        let now = hermes_store::time::now();
        let mut lines = Vec::new();
        for s in sessions {
            let mark = if s.session.id == current {
                "● "
            } else {
                "  "
            };
            let label = s.session.title.clone().unwrap_or(s.preview);
            lines.push(vec![
                Span::new(mark, theme.ok()),
                Span::new(format!("{:<24}", s.session.id), theme.label()),
                Span::plain(format!("{:<42}", shorten_line(&label, 40))),
                Span::new(
                    format!(
                        "{:>4} msgs  {}",
                        s.session.message_count,
                        hermes_store::time::relative_age(s.session.updated_at, now)
                    ),
                    theme.dim(),
                ),
            ]);
        }
        lines.push(vec![Span::new(
            "  /resume ID (or a unique prefix, or a title) continues one.",
            theme.dim(),
        )]);
        self.view.print_lines(&lines);
    }

    async fn resume(&mut self, key: &str) {
        let key = key.trim();
        if key.is_empty() {
            return self.list_sessions();
        }
        let store = self.session.runtime().store_location();
        let record = match store.open().and_then(|s| s.resolve_session(key)) {
            Ok(r) => r,
            Err(e) => return self.complain(&format!("Cannot resume `{key}`: {e}")),
        };
        if record.id == self.session.session_id() {
            return self.say("That is the current session.");
        }
        // The current stored session ends; the conversation continues the other one.
        if let Err(e) = self.session.resume(&record.id).await {
            return self.complain(&format!("Cannot resume `{key}`: {e}"));
        }
        self.totals = Default::default();
        self.last_turn = None;
        if let Some(resumed) = self.session.resumed() {
            self.view.print(&crate::resume::recap(resumed));
        }
    }

    /// `/cron`: the scheduled jobs, as `hermes cron list --all` shows them.
    fn cron_jobs(&self) {
        let (home, config, env) = match crate::session::load_home(&self.args) {
            Ok(loaded) => loaded,
            Err(e) => return self.complain(&e.message),
        };
        let (store, _) = hermes_runtime::cron::open_store(&home, &config, &env);
        match crate::cron_cmd::list_text(&store, true) {
            Ok(text) => {
                for line in text.trim_end().lines() {
                    self.say(line);
                }
            }
            Err(e) => self.complain(&e.to_string()),
        }
    }

    /// `/reload-mcp`: reconnects the MCP servers of config.yaml (read again from disk); the
    /// conversation, the stored session, the approvals and the background processes go on.
    async fn reload_mcp(&mut self) {
        let runtime = match crate::session::runtime(&self.args) {
            Ok(r) => r,
            Err(e) => return self.complain(&format!("MCP servers not reloaded: {}", e.message)),
        };
        let mcp = match self.session.reload_tools(runtime) {
            Ok(mcp) => mcp,
            Err(e) => return self.complain(&format!("MCP servers not reloaded: {e}")),
        };
        let mut servers: Vec<&str> = mcp.iter().map(|(_, set)| set.as_str()).collect();
        servers.dedup();
        self.say(&format!(
            "MCP servers reloaded: {} tool{} from {} server{}.",
            mcp.len(),
            if mcp.len() == 1 { "" } else { "s" },
            servers.len(),
            if servers.len() == 1 { "" } else { "s" }
        ));
    }

    fn not_in_this_build(&self, command: &Command) {
        let what = "This command arrives with a later feature";
        self.say(&format!(
            "/{}: {what}; it is not in this build yet.",
            command.name
        ));
    }
}
