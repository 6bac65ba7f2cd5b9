//! `hermes profile list|show|create|use|delete`: profiles are complete, separate homes under
//! `<home>/profiles/<name>/` (`-p NAME` picks one for a run). `use` makes one sticky by writing
//! its name to `<home>/active_profile`, the file the Python Hermes reads too, so both programs
//! agree on which profile is in use. `default` is the home itself.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_config::{ACTIVE_PROFILE_FILE, HermesHome, active_profile};
use serde_json::Value;

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Without an action: list the profiles.
    #[command(subcommand)]
    pub action: Option<ProfileAction>,
}

#[derive(Debug, Subcommand)]
pub enum ProfileAction {
    /// List the profiles: `*` marks the sticky one (`hermes profile use`).
    List,
    /// A profile's home, model and contents (default: the one in use).
    Show { name: Option<String> },
    /// Create a profile: an empty home, or with `--clone` the current profile's config.yaml,
    /// .env, SOUL.md and memories.
    Create {
        name: String,
        /// Copy config.yaml, .env, SOUL.md and memories/ from the profile in use (or --from).
        #[arg(long)]
        clone: bool,
        /// The profile to clone from (implies --clone).
        #[arg(long = "from", value_name = "PROFILE")]
        from: Option<String>,
    },
    /// Make a profile the default for every run without -p (`default` goes back to the home).
    Use { name: String },
    /// Delete a profile and everything in it (its sessions, memory, config).
    Delete {
        name: String,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long = "yes")]
        yes: bool,
    },
}

/// The subdirectories a new profile starts with (those a home uses).
const PROFILE_DIRS: &[&str] = &["memories", "skills", "skins", "logs", "cron"];

/// What `--clone` copies.
const CLONED: &[&str] = &[
    "config.yaml",
    ".env",
    "SOUL.md",
    "memories/MEMORY.md",
    "memories/USER.md",
];

pub fn run(args: &ProfileArgs) -> Result<ExitCode, CliError> {
    let base = HermesHome::base().map_err(|e| CliError::config(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    let text = match args.action.as_ref().unwrap_or(&ProfileAction::List) {
        ProfileAction::List => list(&base),
        ProfileAction::Show { name } => show(&base, name.as_deref())?,
        ProfileAction::Create { name, clone, from } => create(
            &base,
            name,
            (*clone || from.is_some()).then_some(from.as_deref()),
        )?,
        ProfileAction::Use { name } => use_profile(&base, name)?,
        ProfileAction::Delete { name, yes } => delete(&base, name, *yes)?,
    };
    out.write_all(text.as_bytes())
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

/// Profile names as the Python Hermes accepts them: lowercase letters, digits, `-` and `_`,
/// starting with a letter or digit, at most 64 characters.
fn check_name(name: &str) -> Result<(), CliError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok =
        chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if first_ok && rest_ok && name.len() <= 64 {
        Ok(())
    } else {
        Err(CliError::config(format!(
            "`{name}` is not a profile name: use lowercase letters, digits, '-' and '_' (starting with a letter or digit)"
        )))
    }
}

fn profile_root(base: &Path, name: &str) -> PathBuf {
    if name == "default" {
        base.to_path_buf()
    } else {
        base.join("profiles").join(name)
    }
}

fn existing(base: &Path, name: &str) -> Result<PathBuf, CliError> {
    let root = profile_root(base, name);
    if root.is_dir() {
        Ok(root)
    } else {
        Err(CliError::config(format!(
            "there is no profile `{name}` (`hermes profile list` shows them; `hermes profile create {name}` makes it)"
        )))
    }
}

/// The named profiles, sorted (`default` not included).
fn named_profiles(base: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(base.join("profiles"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// `provider · model` from a profile's config.yaml, as written.
fn model_of(root: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(root.join("config.yaml")) else {
        return "no config.yaml".into();
    };
    let Ok(config) = serde_saphyr::from_str::<Value>(&text) else {
        return "config.yaml does not parse".into();
    };
    let model = &config["model"];
    let text_of = |v: &Value| v.as_str().map(str::to_string);
    let (provider, name) = match model {
        Value::String(m) => (None, Some(m.clone())),
        _ => (
            text_of(&model["provider"]),
            text_of(&model["default"]).or_else(|| text_of(&model["model"])),
        ),
    };
    match (provider, name) {
        (Some(p), Some(m)) => format!("{p} · {m}"),
        (None, Some(m)) => m,
        (Some(p), None) => p,
        (None, None) => "default model".into(),
    }
}

fn list(base: &Path) -> String {
    let sticky = active_profile(base).unwrap_or_else(|| "default".into());
    let mut rows = vec![("default".to_string(), base.to_path_buf())];
    rows.extend(
        named_profiles(base)
            .into_iter()
            .map(|n| (n.clone(), base.join("profiles").join(n))),
    );
    let mut out = String::new();
    for (name, root) in rows {
        let mark = if name == sticky { "*" } else { " " };
        out.push_str(&format!(
            "{mark} {name:<16} {:<40} {}\n",
            model_of(&root),
            root.display()
        ));
    }
    if sticky != "default" && !base.join("profiles").join(&sticky).is_dir() {
        out.push_str(&format!(
            "! {ACTIVE_PROFILE_FILE} names `{sticky}`, which does not exist: `hermes profile use default` fixes it\n"
        ));
    }
    out
}

fn show(base: &Path, name: Option<&str>) -> Result<String, CliError> {
    let name = match name {
        Some(n) => n.to_string(),
        None => HermesHome::resolve(None)
            .ok()
            .and_then(|h| h.profile_name())
            .unwrap_or_else(|| "default".into()),
    };
    let root = existing(base, &name)?;
    let sticky = active_profile(base).unwrap_or_else(|| "default".into());
    let size = |rel: &str| {
        std::fs::read_to_string(root.join(rel))
            .map(|t| format!("{} chars", t.chars().count()))
            .unwrap_or_else(|_| "none".into())
    };
    let present = |rel: &str| {
        if root.join(rel).exists() { "yes" } else { "no" }
    };
    Ok(format!(
        "Profile   {name}{}\nHome      {}\nModel     {}\nSecrets   .env {}\nSOUL.md   {}\nMemory    MEMORY.md {}, USER.md {}\nSessions  {}\n",
        if name == sticky { " (sticky)" } else { "" },
        root.display(),
        model_of(&root),
        present(".env"),
        present("SOUL.md"),
        size("memories/MEMORY.md"),
        size("memories/USER.md"),
        if root.join(hermes_store::DB_FILE_NAME).exists() {
            "sessions.db"
        } else {
            "none yet"
        },
    ))
}

fn create(base: &Path, name: &str, clone: Option<Option<&str>>) -> Result<String, CliError> {
    check_name(name)?;
    if name == "default" {
        return Err(CliError::config(
            "`default` is the home itself; it always exists",
        ));
    }
    let root = base.join("profiles").join(name);
    if root.exists() {
        return Err(CliError::config(format!(
            "the profile `{name}` already exists ({})",
            root.display()
        )));
    }
    let source = match clone {
        Some(Some(from)) => Some(existing(base, from)?),
        Some(None) => Some(
            HermesHome::resolve(None)
                .map_err(|e| CliError::config(e.to_string()))?
                .root()
                .to_path_buf(),
        ),
        None => None,
    };
    let io = |what: &str, e: std::io::Error| CliError::runtime(format!("cannot {what}: {e}"));
    for dir in PROFILE_DIRS {
        std::fs::create_dir_all(root.join(dir)).map_err(|e| io("create the profile", e))?;
    }
    let mut copied = Vec::new();
    if let Some(source) = &source {
        for rel in CLONED {
            let from = source.join(rel);
            if from.is_file() {
                std::fs::copy(&from, root.join(rel)).map_err(|e| io(&format!("copy {rel}"), e))?;
                copied.push(*rel);
            }
        }
    }
    let mut out = format!("Created the profile `{name}` at {}.\n", root.display());
    if let Some(source) = source {
        out.push_str(&if copied.is_empty() {
            format!("Nothing to copy from {}.\n", source.display())
        } else {
            format!("Copied from {}: {}.\n", source.display(), copied.join(", "))
        });
    }
    out.push_str(&format!(
        "Use it with `hermes -p {name}`, or for every run with `hermes profile use {name}`.\n"
    ));
    Ok(out)
}

fn use_profile(base: &Path, name: &str) -> Result<String, CliError> {
    let path = base.join(ACTIVE_PROFILE_FILE);
    if name == "default" {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(CliError::runtime(format!(
                    "cannot remove {}: {e}",
                    path.display()
                )));
            }
        }
        return Ok(format!(
            "Runs without -p now use the default home ({}).\n",
            base.display()
        ));
    }
    check_name(name)?;
    let root = existing(base, name)?;
    hermes_config::atomic_write(&path, format!("{name}\n").as_bytes())
        .map_err(|e| CliError::runtime(format!("cannot write {}: {e}", path.display())))?;
    Ok(format!(
        "Runs without -p now use the profile `{name}` ({}).\n",
        root.display()
    ))
}

fn delete(base: &Path, name: &str, yes: bool) -> Result<String, CliError> {
    if name == "default" {
        return Err(CliError::config(
            "the default profile is the home itself and cannot be deleted",
        ));
    }
    check_name(name)?;
    let root = existing(base, name)?;
    if !yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Err(CliError::config(format!(
                "deleting `{name}` removes {} and everything in it; add --yes to confirm",
                root.display()
            )));
        }
        eprint!(
            "Delete the profile `{name}` and everything in {} (sessions, memory, config)? [y/N] ",
            root.display()
        );
        let mut answer = String::new();
        let _ = stdin.lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            return Ok("Nothing deleted.\n".into());
        }
    }
    std::fs::remove_dir_all(&root)
        .map_err(|e| CliError::runtime(format!("cannot delete {}: {e}", root.display())))?;
    let mut out = format!("Deleted the profile `{name}`.\n");
    if active_profile(base).as_deref() == Some(name) {
        let _ = std::fs::remove_file(base.join(ACTIVE_PROFILE_FILE));
        out.push_str("It was the sticky profile; runs without -p use the default home again.\n");
    }
    Ok(out)
}
