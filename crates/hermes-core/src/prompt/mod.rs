//! The system prompt, assembled once per session from layers in a fixed order, so that it is
//! byte-identical for the whole session (prompt caches stay warm) and its stable part leads:
//!
//! 1. identity (`$HERMES_HOME/SOUL.md`, else the built-in one);
//! 2. how to use tools, with the "act now" rule for model families that need it;
//! 3. memory guidance (when the `memory` tool is offered), the kanban protocol (when the
//!    kanban tools are);
//! 4. the skills index (names and one-line descriptions, when skills are installed);
//! 5. the project's context file (`AGENTS.md`, ...);
//! 6. the platform's display rules;
//! 7. the frozen memory snapshot, fenced as recalled background;
//! 8. the session line: date, model, working directory.
//!
//! [`build`] is the pure assembly; [`session::assemble`] gathers its inputs from the home,
//! the config and the working directory.

pub mod context_files;
pub mod session;
pub mod settings;
pub mod text;

use std::path::Path;

pub use context_files::ContextFile;
pub use session::{SessionPrompt, SessionPromptInputs, assemble};
pub use settings::{PromptSettings, ToolUseEnforcement};

/// Everything the prompt says about one session.
#[derive(Debug, Clone)]
pub struct PromptInputs<'a> {
    /// Replaces the built-in identity (the content of `SOUL.md`, already scanned).
    pub identity: Option<&'a str>,
    /// Names of the tools the model has.
    pub tool_names: &'a [&'a str],
    /// Give the "act now, do not describe" rule.
    pub act_now: bool,
    /// The skills index, rendered by the skills subsystem.
    pub skills_index: Option<&'a str>,
    pub context_file: Option<&'a ContextFile>,
    /// Where replies are shown (`cli`, `telegram`, ...).
    pub platform: &'a str,
    /// The fenced memory snapshot.
    pub memory_snapshot: Option<&'a str>,
    /// `YYYY-MM-DD`, fixed for the session.
    pub date: &'a str,
    pub model: &'a str,
    pub provider: &'a str,
    pub cwd: &'a Path,
}

/// Assembles the system prompt.
pub fn build(inputs: &PromptInputs<'_>) -> String {
    let mut layers: Vec<String> = Vec::with_capacity(8);
    layers.push(
        inputs
            .identity
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or(text::IDENTITY)
            .to_string(),
    );
    let has = |name: &str| inputs.tool_names.contains(&name);
    if !inputs.tool_names.is_empty() {
        let mut rules = text::TOOL_RULES.to_string();
        if inputs.act_now {
            rules.push('\n');
            rules.push_str(text::ACT_NOW_RULE);
        }
        layers.push(rules);
    }
    if has("memory") {
        let mut guidance = text::MEMORY_GUIDANCE.to_string();
        if has("session_search") {
            guidance.push(' ');
            guidance.push_str(text::SESSION_SEARCH_HINT);
        }
        layers.push(guidance);
    }
    if has("kanban_show") {
        layers.push(if has("kanban_list") {
            text::KANBAN_ORCHESTRATOR_GUIDANCE.to_string()
        } else {
            text::KANBAN_WORKER_GUIDANCE.to_string()
        });
    }
    if let Some(index) = inputs.skills_index.map(str::trim).filter(|s| !s.is_empty()) {
        layers.push(index.to_string());
    }
    if let Some(file) = inputs.context_file {
        layers.push(format!(
            "# Project context: {}\nFrom the working directory; follow it unless the user says otherwise.\n\n{}",
            file.name,
            file.body.trim()
        ));
    }
    if let Some(hint) = text::platform_hint(inputs.platform) {
        layers.push(hint.to_string());
    }
    if let Some(snapshot) = inputs.memory_snapshot.filter(|s| !s.trim().is_empty()) {
        layers.push(snapshot.to_string());
    }
    layers.push(format!(
        "Session started {}. Model: {} ({}). Working directory: {}",
        inputs.date,
        inputs.model,
        inputs.provider,
        inputs.cwd.display()
    ));
    layers.join("\n\n")
}

/// Today's date in UTC as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = hermes_protocol::time::civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}
