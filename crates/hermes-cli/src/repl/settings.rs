//! Slash commands about settings and state: `/usage`, `/model`, `/provider` (switching keeps the
//! conversation, the stored session, the tools and the background processes), `/tools`, `/toolsets`, `/memory`, `/yolo`, `/approvals`, `/skin` (live, saved as
//! `display.skin`), `/verbose` and `/reasoning`.

use hermes_runtime::TurnReport;
use hermes_tools::{ApprovalMode, Registry};

use super::config_edit;
use super::slash;
use crate::args::CommonArgs;
use crate::render::usage_line;
use crate::repl::{Repl, prompt_look};
use crate::tui::skin::{self, Source};
use crate::tui::style::Span;
use crate::tui::theme::Theme;

/// Every toolset this build has, with whether it is a composite of others.
pub fn all_toolsets() -> Vec<(String, bool)> {
    let builtin = Registry::builtin();
    let mut real: Vec<String> = builtin
        .names()
        .iter()
        .filter_map(|n| builtin.get(n).map(|t| t.toolset().to_string()))
        .collect();
    real.extend(["memory".to_string(), "session_search".to_string()]);
    let mut out: Vec<(String, bool)> = Vec::new();
    for name in builtin.toolset_names() {
        let composite = !real.iter().any(|r| r == name);
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_string(), composite));
        }
    }
    for r in real {
        if !out.iter().any(|(n, _)| *n == r) {
            out.push((r, false));
        }
    }
    out
}

impl Repl {
    pub(crate) fn usage(&self) {
        let line = |t: &TurnReport| usage_line(t).trim_start_matches("usage: ").to_string();
        match &self.last_turn {
            Some(t) => self.say(&format!("Last turn   {}", line(t))),
            None => self.say("Last turn   none yet"),
        }
        let totals = TurnReport {
            api_calls: self.totals.api_calls,
            usage: self.totals.usage,
            cost_usd: self.totals.cost_usd,
            ..TurnReport::default()
        };
        self.say(&format!(
            "Session     {} turn{} · {}",
            self.totals.turns,
            if self.totals.turns == 1 { "" } else { "s" },
            line(&totals)
        ));
        let agent = self.session.agent();
        let used = hermes_core::compress::tokens::rough_request(
            agent.system_prompt(),
            agent.tool_schemas(),
            self.session.history(),
        );
        let (window, threshold) = match agent.compressor() {
            Some(c) => (c.window(), Some(c.threshold_tokens())),
            None => (hermes_llm::catalogue::context_window(agent.model()), None),
        };
        let share = (used * 100).checked_div(window).unwrap_or(0);
        let mut context = format!(
            "Context     ~{} of {} tokens ({share}%)",
            hermes_llm::util::thousands(used),
            hermes_llm::util::thousands(window)
        );
        match threshold {
            Some(t) => context.push_str(&format!(
                "; compression starts at ~{}",
                hermes_llm::util::thousands(t)
            )),
            None => context.push_str("; compression is off"),
        }
        self.say(&context);
    }

    pub(crate) async fn model(&mut self, name: &str) {
        let name = name.trim();
        if name.is_empty() {
            let spec = self.session.provider();
            return self.say(&format!(
                "Model: {} via {} (chosen by {}). /model NAME switches; the conversation is kept.",
                self.session.agent().model(),
                spec.provider,
                spec.chosen_by
            ));
        }
        let args = CommonArgs {
            model: Some(name.to_string()),
            ..self.args.clone()
        };
        self.switch_to(args).await;
    }

    pub(crate) async fn provider(&mut self, name: &str) {
        let name = name.trim();
        if name.is_empty() {
            let spec = self.session.provider();
            let key = spec
                .key_source
                .clone()
                .unwrap_or_else(|| "no key".to_string());
            let url = if spec.base_url.is_empty() {
                "in-process".to_string()
            } else {
                spec.base_url.clone()
            };
            return self.say(&format!(
                "Provider: {} · {url} · key from {key} (chosen by {}). /provider NAME switches.",
                spec.provider, spec.chosen_by
            ));
        }
        // The other provider's own default model, unless the user named one on the command line.
        let args = CommonArgs {
            provider: Some(name.to_string()),
            base_url: None,
            model: None,
            ..self.args.clone()
        };
        self.switch_to(args).await;
    }

    /// Switches the session to the model `args` choose; the conversation, the stored session,
    /// the tools (MCP connections included) and the background processes go on.
    async fn switch_to(&mut self, args: CommonArgs) {
        if let Err(e) = self.session.switch_model(args.overrides()) {
            return self.complain(&format!("Not switched: {e}"));
        }
        self.args = args;
        self.say(&format!(
            "Now using {} via {}; the conversation continues.",
            self.session.agent().model(),
            self.session.provider().provider
        ));
        let config = self.session.runtime().config().clone();
        if let Ok(mut v) = self.vocabulary.lock() {
            *v = super::commands::vocabulary(&self.session, &config, &self.home, v.clone());
        }
    }

    pub(crate) fn tools(&self, toolset: &str) {
        let toolset = toolset.trim();
        let schemas = self.session.agent().tool_schemas();
        let tool_toolsets = self.session.tool_toolsets();
        let set_of = |tool: &str| {
            tool_toolsets
                .iter()
                .find(|(t, _)| t == tool)
                .map(|(_, s)| s.as_str())
                .unwrap_or("other")
        };
        let shown: Vec<_> = schemas
            .iter()
            .filter(|s| toolset.is_empty() || set_of(&s.name) == toolset)
            .collect();
        if shown.is_empty() {
            return self.complain(&if toolset.is_empty() {
                "No tools are enabled (see /toolsets).".to_string()
            } else {
                format!("No enabled tool is in toolset `{toolset}` (see /toolsets).")
            });
        }
        let theme = self.view.theme();
        let width = self.view.width();
        let mut lines = Vec::new();
        for s in shown {
            let first = s
                .description
                .split(['\n', '.'])
                .next()
                .unwrap_or_default()
                .trim();
            let head = format!(
                "  {} {:<16}{:<16}",
                theme.skin.tool_emoji(&s.name),
                s.name,
                set_of(&s.name)
            );
            let room = width
                .saturating_sub(crate::tui::style::width(&head) + 1)
                .max(10);
            lines.push(vec![
                Span::new(head, theme.label()),
                Span::new(crate::tui::style::truncate(first, room), theme.dim()),
            ]);
        }
        self.view.print_lines(&lines);
    }

    pub(crate) fn toolsets(&self) {
        let theme = self.view.theme();
        let tool_toolsets = self.session.tool_toolsets();
        let enabled: Vec<&str> = tool_toolsets.iter().map(|(_, s)| s.as_str()).collect();
        let mut lines = Vec::new();
        for (name, composite) in all_toolsets() {
            let (mark, style, note) = if composite {
                ("  ", theme.dim(), "a group of toolsets")
            } else if enabled.contains(&name.as_str()) {
                ("✓ ", theme.ok(), "enabled")
            } else {
                ("· ", theme.dim(), "off")
            };
            lines.push(vec![
                Span::new(format!("  {mark}"), style),
                Span::new(format!("{name:<18}"), theme.label()),
                Span::new(note, theme.dim()),
            ]);
        }
        lines.push(vec![Span::new(
            "  Choose with `toolsets:` in config.yaml or -t LIST.",
            theme.dim(),
        )]);
        self.view.print_lines(&lines);
    }

    pub(crate) fn memory(&self) {
        let (home, config, _) = match crate::session::load_home(&self.args) {
            Ok(loaded) => loaded,
            Err(e) => return self.complain(&e.message),
        };
        let views = match crate::memory_cmd::overview(&home, &config) {
            Ok(Some(views)) => views,
            Ok(None) => return self.say("Memory is off (memory.memory_enabled and memory.user_profile_enabled in config.yaml)."),
            Err(e) => return self.complain(&e),
        };
        let theme = self.view.theme();
        let mut lines = Vec::new();
        for view in &views {
            let summary = crate::memory_cmd::summary_line(view);
            let Ok(entries) = &view.entries else {
                lines.push(vec![Span::new(summary, theme.error())]);
                continue;
            };
            // The file name as a title, the counts dimmed.
            let name = view.target.file_name();
            lines.push(vec![
                Span::new(name.to_string(), theme.title()),
                Span::new(summary[name.len()..].to_string(), theme.dim()),
            ]);
            for e in entries {
                for (i, l) in e.lines().enumerate() {
                    let lead = if i == 0 { "  • " } else { "    " };
                    lines.push(vec![
                        Span::new(lead, theme.accent()),
                        Span::plain(l.to_string()),
                    ]);
                }
            }
        }
        lines.push(vec![Span::new(
            "The prompt holds what these said when the session started; changes count from the next session.",
            theme.dim(),
        )]);
        self.view.print_lines(&lines);
    }

    pub(crate) fn yolo(&self, args: &str) {
        if self.session.approvals().settings().yolo {
            return self.say(
                "YOLO is on through HERMES_YOLO_MODE for this run; unset it to be asked again.",
            );
        }
        let on = match slash::switch(args, self.terminal.yolo()) {
            Ok(on) => on,
            Err(e) => return self.complain(&format!("/yolo: {e}")),
        };
        self.terminal.set_yolo(on);
        if on {
            self.say(
                "YOLO on: dangerous commands run without asking (hardline ones stay refused).",
            );
        } else {
            self.say("YOLO off: dangerous commands ask first again.");
        }
    }

    pub(crate) fn approvals(&self) {
        let s = self.session.approvals().settings();
        let mode = match s.mode {
            ApprovalMode::Manual => "manual (you are asked)",
            ApprovalMode::Smart => {
                "smart (a model judges first; you are asked when it is unsure or says no)"
            }
            ApprovalMode::Off => "off (everything but hardline commands runs)",
        };
        self.say(&format!(
            "Approvals: {mode} · answer within {}s",
            s.timeout.as_secs()
        ));
        let yolo = if s.yolo {
            "on (HERMES_YOLO_MODE)"
        } else if self.terminal.yolo() {
            "on (/yolo off asks again)"
        } else {
            "off"
        };
        self.say(&format!("YOLO: {yolo}"));
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        self.say(&format!(
            "Allowed for good (command_allowlist): {}",
            list(&s.allowlist)
        ));
        self.say(&format!(
            "Always refused (approvals.deny): {}",
            list(&s.deny)
        ));
        let granted: Vec<String> = self
            .terminal
            .granted()
            .into_iter()
            .map(|(rule, how)| format!("{rule} ({how})"))
            .collect();
        self.say(&format!("Allowed in this run: {}", list(&granted)));
        self.note("Hardline commands (rm -rf /, mkfs, fork bombs, shutdown, ...) are refused in every mode.");
    }

    pub(crate) fn skin(&mut self, name: &str) {
        let dir = self.home.join("skins");
        let name = name.trim();
        let current = self.view.theme().skin.name;
        if name.is_empty() {
            let theme = self.view.theme();
            let mut lines = Vec::new();
            for info in skin::list(&dir) {
                let mark = if info.name == current { "● " } else { "  " };
                let mut about = info.description.clone();
                if info.source == Source::User {
                    about = format!("{about} (skins/{}.yaml)", info.name);
                }
                if let Some(why) = &info.broken {
                    about = format!("broken: {why}");
                }
                lines.push(vec![
                    Span::new(format!("  {mark}"), theme.ok()),
                    Span::new(format!("{:<16}", info.name), theme.label()),
                    Span::new(about.trim().to_string(), theme.dim()),
                ]);
            }
            lines.push(vec![Span::new(
                "  /skin NAME switches (saved as display.skin); add your own in $HERMES_HOME/skins/NAME.yaml.",
                theme.dim(),
            )]);
            return self.view.print_lines(&lines);
        }
        let loaded = match skin::load(&dir, name) {
            Ok(l) => l,
            Err(e) => return self.complain(&e),
        };
        if loaded.skin.name != name && loaded.warning.is_some() {
            // A broken file: keep the current look rather than fall back mid-session.
            return self.complain(&format!(
                "{} (kept the {current} skin)",
                loaded.warning.unwrap_or_default()
            ));
        }
        if let Some(w) = &loaded.warning {
            self.note(&format!("  · {w}"));
        }
        let mode = self.view.theme().mode;
        let theme = Theme::new(loaded.skin, mode);
        if let Some(editor) = self.input.editor_handle() {
            editor.set_look(prompt_look(&theme));
        }
        self.view.set_theme(theme);
        let saved = match config_edit::set_display_skin(&self.home.config_path(), name) {
            Ok(()) => "saved as display.skin".to_string(),
            Err(e) => format!("not saved: {e}"),
        };
        self.say(&format!("Skin: {name} ({saved})."));
    }

    /// `/reasoning`: the effort and display state; `LEVEL [--global]` sets the effort (for this
    /// session, or saved as `agent.reasoning_effort`); `show` / `hide` (`on` / `off`) the display.
    pub(crate) fn reasoning(&mut self, args: &str) {
        let words: Vec<&str> = args.split_whitespace().collect();
        let global = words.contains(&"--global");
        let level: Vec<&str> = words.into_iter().filter(|w| *w != "--global").collect();
        match level.as_slice() {
            [] => {
                let effort = match self.session.agent().reasoning_effort() {
                    Some(e) => e.as_str().to_string(),
                    None => "the provider's default".to_string(),
                };
                let shown = if self.view.switches().reasoning {
                    "shown"
                } else {
                    "hidden"
                };
                self.say(&format!(
                    "Reasoning effort: {effort} · the model's reasoning is {shown}. /reasoning LEVEL [--global] ({}) or show|hide.",
                    hermes_llm::reasoning::LEVELS.join(", ")
                ));
            }
            [word] if slash::switch(word, false).is_ok() => {
                self.display_switch("reasoning", word);
                if global {
                    let shown = serde_json::Value::Bool(self.view.switches().reasoning);
                    match config_edit::set_setting(
                        &self.home.config_path(),
                        "display",
                        "show_reasoning",
                        &shown,
                    ) {
                        Ok(()) => self.note("  · saved as display.show_reasoning in config.yaml"),
                        Err(e) => self.complain(&format!("Not saved: {e}")),
                    }
                }
            }
            [word] => {
                let Some(effort) = hermes_llm::reasoning::ReasoningEffort::parse(word) else {
                    return self.complain(&format!(
                        "/reasoning: unknown level `{word}` (use one of: {}, or show|hide)",
                        hermes_llm::reasoning::LEVELS.join(", ")
                    ));
                };
                // Kept in the flags so a later /model or /provider switch keeps it too.
                self.args.reasoning_effort = Some(effort.as_str().to_string());
                self.session.set_reasoning_effort(effort);
                if global {
                    match config_edit::set_setting(
                        &self.home.config_path(),
                        "agent",
                        "reasoning_effort",
                        &effort.as_str().into(),
                    ) {
                        Ok(()) => self.note("  · saved as agent.reasoning_effort in config.yaml"),
                        Err(e) => self.complain(&format!("Not saved: {e}")),
                    }
                }
                self.say(&format!(
                    "Reasoning effort: {}{}.",
                    effort.as_str(),
                    if global { "" } else { " for this session" }
                ));
            }
            _ => self.complain("/reasoning takes one level, or show|hide"),
        }
    }

    pub(crate) fn display_switch(&self, which: &str, args: &str) {
        let mut switches = self.view.switches();
        let flag = if which == "verbose" {
            &mut switches.verbose
        } else {
            &mut switches.reasoning
        };
        match slash::switch(args, *flag) {
            Ok(on) => *flag = on,
            Err(e) => return self.complain(&format!("/{which}: {e}")),
        }
        let on = *flag;
        self.view.set_switches(switches);
        let what = if which == "verbose" {
            "Tool arguments and results"
        } else {
            "The model's reasoning"
        };
        self.say(&format!("{what}: {}.", if on { "shown" } else { "hidden" }));
    }
}
