//! Gathering a session's system prompt from the world: `SOUL.md` from the home, the context
//! file from the working directory, the memory snapshot from the store, and the prompt
//! settings from config.yaml. Called once when a session starts; the text it returns is then
//! fixed for the session. Everything the user should know (a file blocked by the injection
//! scanner, truncated, unreadable) comes back as warnings; blocked content is also appended
//! to `$HERMES_HOME/logs/security.log`.

use std::io::Write;
use std::path::Path;

use hermes_config::{Config, ConfigError, HermesHome};

use crate::injection::{self, Scope};
use crate::memory::{MemorySettings, MemoryStore, snapshot};
use crate::prompt::context_files::{self, ContextFile};
use crate::prompt::{PromptInputs, PromptSettings, build, text};

/// What a session's prompt is made from.
#[derive(Debug, Clone, Copy)]
pub struct SessionPromptInputs<'a> {
    pub home: &'a HermesHome,
    pub config: &'a Config,
    pub cwd: &'a Path,
    pub model: &'a str,
    pub provider: &'a str,
    pub tool_names: &'a [&'a str],
    pub platform: &'a str,
    /// `--ignore-rules`: no SOUL.md, no context file, no memory snapshot.
    pub ignore_rules: bool,
    /// The session's memory (absent when memory is turned off).
    pub memory: Option<&'a MemoryStore>,
    pub skills_index: Option<&'a str>,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
}

/// The assembled prompt and what to tell the user about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPrompt {
    pub text: String,
    pub warnings: Vec<String>,
}

/// Builds the session's system prompt. Fails only on invalid prompt settings in config.yaml.
pub fn assemble(inputs: SessionPromptInputs<'_>) -> Result<SessionPrompt, ConfigError> {
    let settings = PromptSettings::from_config(inputs.config)?;
    let memory_settings = MemorySettings::from_config(inputs.config)?;
    let max_chars = settings.context_file_max_chars;
    let mut warnings = Vec::new();
    let mut blocked = Vec::new();

    let identity = if inputs.ignore_rules {
        None
    } else {
        soul(inputs.home, max_chars, &mut warnings, &mut blocked)
    };
    let context_file: Option<ContextFile> = if inputs.ignore_rules {
        None
    } else {
        let loaded = context_files::load(inputs.cwd, max_chars);
        warnings.extend(loaded.warnings);
        blocked.extend(loaded.blocked);
        loaded.file
    };
    let memory_block = match inputs.memory {
        Some(store) if !inputs.ignore_rules => {
            let snap = snapshot::take(store, memory_settings.include());
            warnings.extend(snap.warnings);
            blocked.extend(snap.blocked);
            snap.block
        }
        _ => None,
    };

    let text = build(&PromptInputs {
        identity: identity.as_deref(),
        tool_names: inputs.tool_names,
        act_now: settings.tool_use_enforcement.applies_to(inputs.model),
        skills_index: inputs.skills_index,
        context_file: context_file.as_ref(),
        platform: inputs.platform,
        memory_snapshot: memory_block.as_deref(),
        date: inputs.date,
        model: inputs.model,
        provider: inputs.provider,
        cwd: inputs.cwd,
    });
    if !blocked.is_empty() {
        log_blocked(inputs.home, inputs.date, &blocked);
    }
    warnings.extend(blocked);
    Ok(SessionPrompt { text, warnings })
}

/// The identity from `SOUL.md`: scanned and capped; a blocked file leaves the built-in
/// identity in place, followed by the notice.
fn soul(
    home: &HermesHome,
    max_chars: usize,
    warnings: &mut Vec<String>,
    blocked: &mut Vec<String>,
) -> Option<String> {
    let path = home.join("SOUL.md");
    let content = context_files::read(&path, "SOUL.md", warnings)?;
    let (checked, findings) = injection::guard("SOUL.md", &content, Scope::Context);
    if let Some(f) = findings {
        blocked.push(f.describe("SOUL.md"));
        return Some(format!("{}\n\n{checked}", text::IDENTITY));
    }
    Some(context_files::cap(
        "SOUL.md",
        &path,
        checked.into_owned(),
        max_chars,
        warnings,
    ))
}

/// Best effort: the prompt is still built when the log cannot be written.
fn log_blocked(home: &HermesHome, date: &str, lines: &[String]) {
    let dir = home.join("logs");
    let _ = std::fs::create_dir_all(&dir).and_then(|()| {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("security.log"))?;
        for line in lines {
            writeln!(file, "{date} prompt: {line}")?;
        }
        Ok(())
    });
}
