//! `hermes memory status|show|reset`: the built-in memory files (`memories/MEMORY.md`, the
//! agent's notes, and `memories/USER.md`, the user profile) from the command line: how full each
//! is, every entry, and erasing them. The same files the Python Hermes reads and writes. The
//! status also names the external memory provider (`memory.provider`) and its fact count.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use hermes_config::{Config, HermesHome};
use hermes_core::memory::{MemorySettings, MemoryStore, Target, file};

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// Without an action: how full each file is.
    #[command(subcommand)]
    pub action: Option<MemoryAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// How full MEMORY.md and USER.md are, and whether memory is on.
    Status,
    /// Every entry of both files.
    Show,
    /// Erase the entries of one file or both.
    Reset {
        /// Which file: memory (MEMORY.md), user (USER.md) or all.
        #[arg(long, value_enum, default_value_t = Which::All)]
        target: Which,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long = "yes")]
        yes: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Which {
    Memory,
    User,
    All,
}

/// One memory file as shown to the user.
pub struct FileView {
    pub target: Target,
    /// The entries, or why the file cannot be read.
    pub entries: Result<Vec<String>, String>,
    pub used: usize,
    pub limit: usize,
}

/// Both memory files of a home, with their budgets; `None` when memory is switched off.
pub fn overview(home: &HermesHome, config: &Config) -> Result<Option<Vec<FileView>>, String> {
    let settings = MemorySettings::from_config(config).map_err(|e| e.to_string())?;
    if !settings.enabled() {
        return Ok(None);
    }
    let store = MemoryStore::new(home.join("memories"), settings.limits());
    Ok(Some(
        [Target::Memory, Target::User]
            .into_iter()
            .map(|target| {
                let entries = store.load(target).map_err(|e| e.to_string());
                FileView {
                    target,
                    used: entries.as_deref().map(file::char_count).unwrap_or(0),
                    entries,
                    limit: settings.limits().of(target),
                }
            })
            .collect(),
    ))
}

/// `MEMORY.md · 3 entries · 1,204/2,200 chars`
pub fn summary_line(view: &FileView) -> String {
    match &view.entries {
        Ok(entries) => format!(
            "{} · {} entr{} · {}/{} chars",
            view.target.file_name(),
            entries.len(),
            if entries.len() == 1 { "y" } else { "ies" },
            hermes_llm::util::thousands(view.used as u64),
            hermes_llm::util::thousands(view.limit as u64)
        ),
        Err(e) => format!("{}: {e}", view.target.file_name()),
    }
}

/// `top` holds the flags given before the subcommand (`hermes -p NAME memory ...`).
pub fn run(top: &CommonArgs, args: &MemoryArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        ..CommonArgs::default()
    };
    let (home, config, _) = crate::session::load_home(&common)?;
    let text = match args.action.as_ref().unwrap_or(&MemoryAction::Status) {
        MemoryAction::Status => status(&home, &config, false)?,
        MemoryAction::Show => status(&home, &config, true)?,
        MemoryAction::Reset { target, yes } => reset(&home, *target, *yes)?,
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

fn status(home: &HermesHome, config: &Config, entries: bool) -> Result<String, CliError> {
    let provider = provider_line(home, config);
    let Some(views) = overview(home, config).map_err(CliError::config)? else {
        return Ok(format!(
            "Memory is off (memory.memory_enabled and memory.user_profile_enabled in config.yaml).\n{provider}"
        ));
    };
    let mut out = String::new();
    for view in &views {
        out.push_str(&summary_line(view));
        out.push('\n');
        if entries && let Ok(list) = &view.entries {
            for entry in list {
                for (i, line) in entry.lines().enumerate() {
                    out.push_str(if i == 0 { "  • " } else { "    " });
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    out.push_str(&format!("In {}\n", home.join("memories").display()));
    out.push_str(&provider);
    Ok(out)
}

/// The external provider `memory.provider` names and its fact count, as a line; empty when
/// none is configured.
fn provider_line(home: &HermesHome, config: &Config) -> String {
    use hermes_runtime::holographic;
    if hermes_runtime::memory_providers::configured_name(&config.raw) == "honcho" {
        return honcho_line(home);
    }
    match holographic::from_config(&config.raw, home, None) {
        Ok(None) => String::new(),
        Ok(Some(provider)) => match provider.count() {
            Ok(n) => format!(
                "Memory provider: holographic · {} fact{} · {}\n",
                hermes_llm::util::thousands(n.max(0) as u64),
                if n == 1 { "" } else { "s" },
                provider.settings().db_path.display()
            ),
            Err(e) => format!("Memory provider: holographic · {e}\n"),
        },
        Err(e) => format!("Memory provider: {e}\n"),
    }
}

/// Honcho's resolved settings: where memory goes and who the peers are.
fn honcho_line(home: &HermesHome) -> String {
    use hermes_runtime::honcho::{HonchoConfig, RecallMode};
    let env = match hermes_config::Environment::load(&home.env_path()) {
        Ok(env) => env,
        Err(e) => return format!("Memory provider: honcho · {e}\n"),
    };
    let cfg = match HonchoConfig::resolve(home, &env) {
        Ok(cfg) => cfg,
        Err(e) => return format!("Memory provider: honcho · {e}\n"),
    };
    let file = cfg
        .path
        .as_ref()
        .map_or("no honcho.json".to_string(), |p| p.display().to_string());
    if !cfg.usable() {
        return format!(
            "Memory provider: honcho · not configured (no API key or self-hosted baseUrl; {file})\n"
        );
    }
    let mode = match cfg.recall_mode {
        RecallMode::Hybrid => "hybrid",
        RecallMode::Context => "context",
        RecallMode::Tools => "tools",
    };
    format!(
        "Memory provider: honcho · {} · workspace {} · host {} · user peer {} · AI peer {} · {mode} · {}\n",
        cfg.base_url,
        cfg.workspace,
        cfg.host,
        cfg.peer_name.as_deref().unwrap_or("(from the session)"),
        cfg.ai_peer,
        file
    )
}

fn reset(home: &HermesHome, which: Which, yes: bool) -> Result<String, CliError> {
    let targets: &[Target] = match which {
        Which::Memory => &[Target::Memory],
        Which::User => &[Target::User],
        Which::All => &[Target::Memory, Target::User],
    };
    let names: Vec<&str> = targets.iter().map(|t| t.file_name()).collect();
    if !yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Err(CliError::config(format!(
                "this erases every entry of {}; add --yes to confirm",
                names.join(" and ")
            )));
        }
        eprint!("Erase every entry of {}? [y/N] ", names.join(" and "));
        let mut answer = String::new();
        let _ = stdin.lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            return Ok("Nothing erased.\n".into());
        }
    }
    let dir = home.join("memories");
    let mut out = String::new();
    for target in targets {
        let path = dir.join(target.file_name());
        if !path.exists() {
            out.push_str(&format!("{} was already empty.\n", target.file_name()));
            continue;
        }
        file::write(&path, &[])
            .map_err(|e| CliError::runtime(format!("cannot erase {}: {e}", path.display())))?;
        out.push_str(&format!("Erased {}.\n", target.file_name()));
    }
    Ok(out)
}
