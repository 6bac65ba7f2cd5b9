//! `hermes honcho`: the Honcho memory provider's settings, as the Python Hermes's `hermes
//! honcho` shows and changes them. `status` prints the resolved settings and checks the
//! connection; `enable`, `disable`, `mode`, `strategy`, `peer`, `tokens` and `map` write the
//! active host's block (or the `sessions` map) of `$HERMES_HOME/honcho.json`, which is read
//! from wherever the settings came from and written back atomically, readable by the owner
//! only (it holds the API key). The interactive `setup` wizard, OAuth sign-in, `identity`,
//! `migrate` and `sync` are not built: the file is edited by these commands or by hand.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_config::{Environment, HermesHome};
use hermes_runtime::honcho::{HonchoConfig, RecallMode, WriteFrequency, config};
use serde_json::{Map, Value, json};

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct HonchoArgs {
    /// Without an action: status.
    #[command(subcommand)]
    pub action: Option<HonchoAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum HonchoAction {
    /// The resolved settings and a connection check.
    Status,
    /// Turn Honcho on for this profile's host.
    Enable,
    /// Turn Honcho off for this profile's host.
    Disable,
    /// Show or set the recall mode: hybrid, context or tools.
    Mode { mode: Option<String> },
    /// Show or set the session strategy: per-session, per-directory, per-repo or global.
    Strategy { strategy: Option<String> },
    /// Show or set the peer names and the dialectic's reasoning level.
    Peer {
        #[arg(long, value_name = "NAME")]
        user: Option<String>,
        #[arg(long, value_name = "NAME")]
        ai: Option<String>,
        #[arg(long, value_name = "LEVEL")]
        reasoning: Option<String>,
    },
    /// Show or set the budgets: context tokens and the dialectic's character cap.
    Tokens {
        #[arg(long, value_name = "N")]
        context: Option<u64>,
        #[arg(long, value_name = "N")]
        dialectic: Option<u64>,
    },
    /// Map the current directory to a Honcho session name (without a name: list the map).
    Map { name: Option<String> },
}

const MODES: [(&str, &str); 3] = [
    (
        "hybrid",
        "auto-injected context + Honcho tools available (default)",
    ),
    ("context", "auto-injected context only, Honcho tools hidden"),
    ("tools", "Honcho tools only, no auto-injected context"),
];

const STRATEGIES: [(&str, &str); 4] = [
    (
        "per-session",
        "each run starts clean, Honcho injects context automatically",
    ),
    (
        "per-directory",
        "reuses session per dir, prior context auto-injected each run",
    ),
    ("per-repo", "one session per git repository"),
    ("global", "single session across all directories"),
];

/// The settings file: read from where the settings come from, written to the home's.
struct Settings {
    raw: Map<String, Value>,
    write_to: PathBuf,
    host: String,
}

impl Settings {
    fn load(home: &HermesHome, env: &Environment) -> Result<Settings, CliError> {
        let cfg = HonchoConfig::resolve(home, env).map_err(|e| CliError::config(e.to_string()))?;
        let raw = match &cfg.path {
            Some(path) => read(path)?,
            None => Map::new(),
        };
        Ok(Settings {
            raw,
            write_to: home.join("honcho.json"),
            host: cfg.host,
        })
    }

    fn label(&self) -> String {
        if self.host == "hermes" {
            String::new()
        } else {
            format!("[{}] ", self.host)
        }
    }

    fn host_block(&mut self) -> &mut Map<String, Value> {
        let hosts = object_at(&mut self.raw, "hosts");
        object_at(hosts, &self.host)
    }

    /// A key of the host block, else the root.
    fn get(&self, key: &str) -> Option<&Value> {
        self.raw
            .get("hosts")
            .and_then(|h| h.get(&self.host))
            .and_then(|b| b.get(key))
            .filter(|v| !v.is_null())
            .or_else(|| self.raw.get(key).filter(|v| !v.is_null()))
    }

    fn save(&self) -> Result<String, CliError> {
        let text = serde_json::to_string_pretty(&self.raw)
            .map_err(|e| CliError::runtime(e.to_string()))?;
        hermes_config::atomic_write(&self.write_to, format!("{text}\n").as_bytes()).map_err(
            |e| CliError::runtime(format!("cannot write {}: {e}", self.write_to.display())),
        )?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&self.write_to, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| {
                    CliError::runtime(format!("cannot restrict {}: {e}", self.write_to.display()))
                })?;
        }
        Ok(format!("  Saved to {}\n", self.write_to.display()))
    }
}

/// The object under `key`, made one when it is missing or something else.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    match slot {
        Value::Object(m) => m,
        _ => unreachable!("just made an object"),
    }
}

fn read(path: &Path) -> Result<Map<String, Value>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::config(format!("cannot read {}: {e}", path.display())))?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(CliError::config(format!(
            "{} is not a JSON object; fix or remove it",
            path.display()
        ))),
    }
}

pub fn run(top: &CommonArgs, args: &HonchoArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        ..CommonArgs::default()
    };
    let (home, _, env) = crate::session::load_home(&common)?;
    let text = match args.action.as_ref().unwrap_or(&HonchoAction::Status) {
        HonchoAction::Status => status(&home, &env)?,
        HonchoAction::Enable => toggle(&home, &env, true)?,
        HonchoAction::Disable => toggle(&home, &env, false)?,
        HonchoAction::Mode { mode } => choice(&home, &env, mode.as_deref(), Choice::Mode)?,
        HonchoAction::Strategy { strategy } => {
            choice(&home, &env, strategy.as_deref(), Choice::Strategy)?
        }
        HonchoAction::Peer {
            user,
            ai,
            reasoning,
        } => peer(
            &home,
            &env,
            user.as_deref(),
            ai.as_deref(),
            reasoning.as_deref(),
        )?,
        HonchoAction::Tokens { context, dialectic } => tokens(&home, &env, *context, *dialectic)?,
        HonchoAction::Map { name } => map(&home, &env, name.as_deref())?,
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

fn status(home: &HermesHome, env: &Environment) -> Result<String, CliError> {
    let cfg = HonchoConfig::resolve(home, env).map_err(|e| CliError::config(e.to_string()))?;
    let key = cfg.api_key.as_deref().unwrap_or("");
    let masked = if key.chars().count() > 8 {
        format!(
            "...{}",
            key.chars()
                .skip(key.chars().count() - 8)
                .collect::<String>()
        )
    } else if key.is_empty() {
        "not set".to_string()
    } else {
        "set".to_string()
    };
    let label = if cfg.host == "hermes" {
        String::new()
    } else {
        format!(" [{}]", cfg.host)
    };
    let mut out = format!("\nHoncho status{label}\n{}\n", "─".repeat(40));
    let line = |out: &mut String, name: &str, value: &str| {
        let _ = writeln!(out, "  {:<16}{value}", format!("{name}:"));
    };
    line(&mut out, "Host", &cfg.host);
    line(
        &mut out,
        "Enabled",
        if cfg.enabled { "True" } else { "False" },
    );
    line(&mut out, "Auth", &format!("API key ({masked})"));
    line(&mut out, "Workspace", &cfg.workspace);
    line(
        &mut out,
        "Config",
        &cfg.path
            .as_ref()
            .map_or("(none: environment only)".to_string(), |p| {
                p.display().to_string()
            }),
    );
    line(&mut out, "Server", &cfg.base_url);
    line(&mut out, "AI peer", &cfg.ai_peer);
    line(
        &mut out,
        "User peer",
        cfg.peer_name.as_deref().unwrap_or("not set"),
    );
    let cwd = std::env::current_dir().unwrap_or_default();
    let session = hermes_runtime::honcho::session_name(
        &cfg,
        &hermes_runtime::honcho::SessionOrigin {
            cwd: &cwd,
            session_id: "",
            chat_key: None,
        },
    );
    line(&mut out, "Session key", &session);
    line(&mut out, "Session strat", strategy_name(&cfg));
    line(&mut out, "Recall mode", mode_name(cfg.recall_mode));
    line(
        &mut out,
        "Context budget",
        &format!(
            "{} tokens",
            cfg.context_tokens
                .map_or("(uncapped)".to_string(), |t| t.to_string())
        ),
    );
    let cadence = cfg.dialectic_cadence;
    line(
        &mut out,
        "Dialectic cad",
        &format!(
            "every {cadence} turn{}",
            if cadence == 1 { "" } else { "s" }
        ),
    );
    line(
        &mut out,
        "Reasoning",
        &format!(
            "base={}, cap={}, heuristic={}",
            cfg.dialectic_reasoning_level,
            cfg.reasoning_level_cap,
            if cfg.reasoning_heuristic { "on" } else { "off" }
        ),
    );
    let o = cfg.observation;
    line(
        &mut out,
        "Observation",
        &format!(
            "user(me={},others={}) ai(me={},others={})",
            py_bool(o.user_observe_me),
            py_bool(o.user_observe_others),
            py_bool(o.ai_observe_me),
            py_bool(o.ai_observe_others)
        ),
    );
    let write = match cfg.write_frequency {
        WriteFrequency::Async => "async".to_string(),
        WriteFrequency::Turn => "turn".to_string(),
        WriteFrequency::Session => "session".to_string(),
        WriteFrequency::Every(n) => n.to_string(),
    };
    line(&mut out, "Write freq", &write);
    if !cfg.usable() {
        let reason = if cfg.enabled {
            "no API key or base URL"
        } else {
            "disabled"
        };
        let _ = writeln!(out, "\n  Not connected ({reason})\n");
        return Ok(out);
    }
    let checked = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(format!("cannot start the async runtime: {e}")))?
        .block_on(async {
            let api = hermes_runtime::honcho::Api::new(
                &cfg.base_url,
                cfg.effective_api_key(),
                &cfg.workspace,
                cfg.timeout.min(std::time::Duration::from_secs(15)),
            )?;
            api.check().await
        });
    match checked {
        Ok(()) => out.push_str("\n  Connection... OK\n\n"),
        Err(e) => {
            let _ = writeln!(out, "\n  Connection... FAILED ({e})\n");
        }
    }
    Ok(out)
}

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

fn mode_name(mode: RecallMode) -> &'static str {
    match mode {
        RecallMode::Hybrid => "hybrid",
        RecallMode::Context => "context",
        RecallMode::Tools => "tools",
    }
}

fn strategy_name(cfg: &HonchoConfig) -> &'static str {
    match cfg.session_strategy {
        config::SessionStrategy::PerDirectory => "per-directory",
        config::SessionStrategy::PerRepo => "per-repo",
        config::SessionStrategy::PerSession => "per-session",
        config::SessionStrategy::Global => "global",
    }
}

fn toggle(home: &HermesHome, env: &Environment, on: bool) -> Result<String, CliError> {
    let mut s = Settings::load(home, env)?;
    let label = s.label();
    let word = if on { "enabled" } else { "disabled" };
    if s.raw
        .get("hosts")
        .and_then(|h| h.get(&s.host))
        .and_then(|b| b.get("enabled"))
        == Some(&Value::Bool(on))
    {
        return Ok(format!("  {label}Honcho is already {word}.\n\n"));
    }
    s.host_block().insert("enabled".into(), Value::Bool(on));
    if on && !s.host_block().contains_key("aiPeer") {
        let host = s.host.clone();
        s.host_block().insert("aiPeer".into(), json!(host));
        let workspace = s
            .raw
            .get("workspace")
            .cloned()
            .unwrap_or_else(|| json!("hermes"));
        s.host_block().entry("workspace").or_insert(workspace);
    }
    let saved = s.save()?;
    Ok(format!("  {label}Honcho {word}.\n{saved}\n"))
}

#[derive(Clone, Copy)]
enum Choice {
    Mode,
    Strategy,
}

fn choice(
    home: &HermesHome,
    env: &Environment,
    value: Option<&str>,
    which: Choice,
) -> Result<String, CliError> {
    let (options, key, title, default, noun): (&[(&str, &str)], _, _, _, _) = match which {
        Choice::Mode => (&MODES, "recallMode", "Honcho recall mode", "hybrid", "mode"),
        Choice::Strategy => (
            &STRATEGIES,
            "sessionStrategy",
            "Honcho session strategy",
            "per-directory",
            "strategy",
        ),
    };
    let mut s = Settings::load(home, env)?;
    let Some(value) = value else {
        let current = s
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_string();
        let width = options.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let mut out = format!("\n{title}\n{}\n", "─".repeat(40));
        for (name, desc) in options {
            let marker = if *name == current { " <-" } else { "" };
            let _ = writeln!(out, "  {name:<width$}  {desc}{marker}");
        }
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        let _ = writeln!(
            out,
            "\n  Set with: hermes honcho {noun} [{}]\n",
            names.join("|")
        );
        return Ok(out);
    };
    let Some((name, desc)) = options.iter().find(|(n, _)| *n == value) else {
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        return Err(CliError::config(format!(
            "Invalid {noun} '{value}'. Options: {}",
            names.join(", ")
        )));
    };
    s.host_block().insert(key.into(), json!(name));
    let saved = s.save()?;
    let what = match which {
        Choice::Mode => "Recall mode",
        Choice::Strategy => "Session strategy",
    };
    Ok(format!(
        "  {}{what} -> {name}  ({desc})\n{saved}\n",
        s.label()
    ))
}

fn peer(
    home: &HermesHome,
    env: &Environment,
    user: Option<&str>,
    ai: Option<&str>,
    reasoning: Option<&str>,
) -> Result<String, CliError> {
    let mut s = Settings::load(home, env)?;
    if user.is_none() && ai.is_none() && reasoning.is_none() {
        let text = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
        let user = text("peerName").unwrap_or_else(|| "(not set)".into());
        let ai = text("aiPeer").unwrap_or_else(|| s.host.clone());
        let level = text("dialecticReasoningLevel").unwrap_or_else(|| "low".into());
        let cap = s
            .get("dialecticMaxChars")
            .and_then(Value::as_u64)
            .unwrap_or(600);
        return Ok(format!(
            "\nHoncho peers\n{}\n  User peer:   {user}\n    Your identity in Honcho. Messages you send build this peer's card.\n  \
             AI peer:     {ai}\n    Hermes' identity in Honcho.\n    Dialectic calls ask this peer questions to warm session context.\n\n  \
             Dialectic reasoning:  {level}  ({})\n  Dialectic cap:        {cap} chars\n\n",
            "─".repeat(40),
            config::LEVELS.join(", ")
        ));
    }
    if let Some(level) = reasoning
        && !config::LEVELS.contains(&level)
    {
        return Err(CliError::config(format!(
            "Invalid reasoning level '{level}'. Options: {}",
            config::LEVELS.join(", ")
        )));
    }
    let label = s.label();
    let mut out = String::new();
    for (key, value, what) in [
        ("peerName", user, "User peer"),
        ("aiPeer", ai, "AI peer  "),
        (
            "dialecticReasoningLevel",
            reasoning,
            "Dialectic reasoning level",
        ),
    ] {
        if let Some(v) = value {
            let v = v.trim();
            s.host_block().insert(key.into(), json!(v));
            let _ = writeln!(out, "  {label}{what} -> {v}");
        }
    }
    out.push_str(&s.save()?);
    out.push('\n');
    Ok(out)
}

fn tokens(
    home: &HermesHome,
    env: &Environment,
    context: Option<u64>,
    dialectic: Option<u64>,
) -> Result<String, CliError> {
    let mut s = Settings::load(home, env)?;
    if context.is_none() && dialectic.is_none() {
        let ctx = s
            .get("contextTokens")
            .map_or("(Honcho default)".to_string(), |v| v.to_string());
        let chars = s
            .get("dialecticMaxChars")
            .and_then(Value::as_u64)
            .unwrap_or(600);
        let level = s
            .get("dialecticReasoningLevel")
            .and_then(Value::as_str)
            .unwrap_or("low")
            .to_string();
        return Ok(format!(
            "\nHoncho budgets\n{}\n\n  Context     {ctx} tokens\n    Raw memory retrieval, injected into the user's message before a turn.\n\n  \
             Dialectic   {chars} chars, reasoning: {level}\n    Honcho's own model answering about the user, capped for injection.\n\n  \
             Set with: hermes honcho tokens [--context N] [--dialectic N]\n\n",
            "─".repeat(40)
        ));
    }
    let label = s.label();
    let mut out = String::new();
    if let Some(n) = context {
        s.host_block().insert("contextTokens".into(), json!(n));
        let _ = writeln!(out, "  {label}context tokens -> {n}");
    }
    if let Some(n) = dialectic {
        s.host_block().insert("dialecticMaxChars".into(), json!(n));
        let _ = writeln!(out, "  {label}dialectic cap  -> {n} chars");
    }
    out.push_str(&s.save()?);
    out.push('\n');
    Ok(out)
}

fn map(home: &HermesHome, env: &Environment, name: Option<&str>) -> Result<String, CliError> {
    let mut s = Settings::load(home, env)?;
    let Some(name) = name.map(str::trim) else {
        let sessions = s.raw.get("sessions").and_then(Value::as_object);
        let mut out = String::from("\nHoncho session mappings\n");
        out.push_str(&"─".repeat(40));
        out.push('\n');
        match sessions.filter(|m| !m.is_empty()) {
            None => out.push_str("  (none)\n"),
            Some(m) => {
                for (dir, session) in m {
                    let _ = writeln!(out, "  {dir}\n     → {}", session.as_str().unwrap_or(""));
                }
            }
        }
        out.push('\n');
        return Ok(out);
    };
    let sanitized: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .trim_matches('-')
        .to_string();
    if sanitized.is_empty() {
        return Err(CliError::config("Session name cannot be empty."));
    }
    let mut out = String::new();
    if sanitized != name {
        let _ = writeln!(out, "  Session name sanitized to: {sanitized}");
    }
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::runtime(format!("no current directory: {e}")))?;
    object_at(&mut s.raw, "sessions").insert(cwd.display().to_string(), json!(sanitized));
    let saved = s.save()?;
    let _ = write!(
        out,
        "  Mapped {}\n     → {sanitized}\n{saved}\n",
        cwd.display()
    );
    Ok(out)
}
