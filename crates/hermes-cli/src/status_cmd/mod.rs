//! `hermes status` and `hermes doctor`: what is set up, and what is wrong with it.
//!
//! `status` is one screen of facts (version, home, config.yaml, provider, model, endpoint, where
//! the key comes from (masked), fallbacks, tools, memory, sessions, the Python Hermes's
//! `state.db`, the local model file, skin); it reports and never judges, so it exits 0 even when
//! parts are missing. `doctor` runs checks, each `✓`, `!` (a warning) or `✗` (a problem) with
//! one line and, for anything not fine, the fix; any `✗` makes it exit 1. Both are read-only:
//! nothing in the home is created or changed (doctor's writability probe creates and removes
//! one empty file per directory), databases are opened read-only, and the only network request
//! is doctor's `GET` of the endpoint's model list (5 s timeout, skipped with `--offline` and for
//! the in-process model). Provider resolution, the fallback chain and tool selection are the
//! session's own (`hermes_runtime::providers`, `hermes_runtime::Runtime::prepare`).

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use hermes_config::{Config, ConfigError, Environment, HermesHome};
use hermes_core::memory::{MemorySettings, Target, file as memory_file};
use hermes_llm::resolve::{ResolveError, WireFormat, named_providers};
use hermes_llm::{HttpTimeouts, Overrides, ProviderSpec};
use hermes_store::StoreError;
use hermes_store::health::{self, DbReport};
use serde_json::Value;

use crate::args::CommonArgs;
use crate::error::CliError;
use crate::tui::skin;
use crate::tui::style::{ColorMode, Style};
use crate::tui::theme::Theme;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show the profile NAME: the home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
    /// Print the status as one JSON object (`version` and a key per row: `home`, `config`,
    /// `env`, `provider`, `model`, ..., `local_model`), each value the row's text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check the profile NAME: the home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,

    /// Make no network request (the endpoint check is skipped).
    #[arg(long)]
    pub offline: bool,
}

/// How long the endpoint check waits, for the connection and for the answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The Anthropic API version header (the same the Messages wire format sends).
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Subdirectories of the home that must stay writable when they exist.
const SUBDIRS: &[&str] = &[
    "memories",
    "models",
    "skins",
    "trajectories",
    "logs",
    "profiles",
];

/// Whether config.yaml could be used.
enum ConfigState {
    Found,
    Missing,
    Invalid(ConfigError),
}

/// The home and what could be read of it. Failures are kept to be reported: the defaults stand
/// in for an unreadable config.yaml and the process environment for a broken `.env`.
struct Loaded {
    home: HermesHome,
    env: Environment,
    env_error: Option<ConfigError>,
    config: Config,
    state: ConfigState,
    overrides: Overrides,
    common: CommonArgs,
}

impl Loaded {
    fn new(common: &CommonArgs, profile: Option<&str>) -> Result<Loaded, CliError> {
        let profile = profile.or(common.profile.as_deref());
        let home = HermesHome::resolve(profile).map_err(|e| CliError::config(e.to_string()))?;
        let (env, env_error) = match Environment::load(&home.env_path()) {
            Ok(env) => (env, None),
            // No file at "": the process environment alone.
            Err(e) => (
                Environment::load(Path::new("")).unwrap_or_default(),
                Some(e),
            ),
        };
        let path = home.config_path();
        let defaults = |env: &Environment| Config::from_yaml(&path, "", env).unwrap_or_default();
        let (config, state) = match Config::load(&path, &env) {
            Ok(config) if path.is_file() => (config, ConfigState::Found),
            Ok(config) => (config, ConfigState::Missing),
            Err(e) => (defaults(&env), ConfigState::Invalid(e)),
        };
        Ok(Loaded {
            home,
            env,
            env_error,
            config,
            state,
            overrides: Overrides {
                provider: common.provider.clone(),
                model: common.model.clone(),
                base_url: common.base_url.clone(),
            },
            common: common.clone(),
        })
    }

    /// The provider a session would use (command line > config.yaml > environment).
    fn resolve(&self) -> Result<ProviderSpec, ResolveError> {
        let named = named_providers(&self.config.raw);
        hermes_llm::resolve::resolve_with(&self.config.model, &self.env, &self.overrides, &named)
    }

    fn theme(&self) -> Theme {
        let dir = self.home.join("skins");
        let configured = skin::configured_name(&self.config.raw);
        let loaded = skin::startup(&dir, configured.as_deref());
        Theme::new(
            loaded.skin,
            ColorMode::detect(std::io::stdout().is_terminal()),
        )
    }
}

// ------------------------------------------------------------------------------------------
// hermes status
// ------------------------------------------------------------------------------------------

pub fn status(common: &CommonArgs, args: &StatusArgs) -> Result<ExitCode, CliError> {
    let loaded = Loaded::new(common, args.profile.as_deref())?;
    if args.json {
        let mut object = serde_json::Map::new();
        object.insert("version".into(), env!("CARGO_PKG_VERSION").into());
        for (label, value) in status_rows(&loaded) {
            object.insert(json_key(label), value.into());
        }
        crate::json_out::print(&object)?;
        return Ok(ExitCode::SUCCESS);
    }
    let theme = loaded.theme();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        theme.paint_str(
            &format!("Hermes {}", env!("CARGO_PKG_VERSION")),
            theme.title()
        )
    );
    for (label, value) in status_rows(&loaded) {
        let _ = writeln!(
            out,
            "  {} {value}",
            theme.paint_str(&format!("{label:<12}"), theme.label())
        );
    }
    let _ = writeln!(
        out,
        "{}",
        theme.paint_str(
            "Run `hermes doctor` to check for problems, `hermes model` for every provider.",
            theme.dim()
        )
    );
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// A status row's label as a JSON key: `config.yaml` → `config`, `.env` → `env`,
/// `local model` → `local_model`.
fn json_key(label: &str) -> String {
    label
        .trim_start_matches('.')
        .trim_end_matches(".yaml")
        .replace(' ', "_")
}

/// Every row of the status screen, label and value.
fn status_rows(loaded: &Loaded) -> Vec<(&'static str, String)> {
    let home = &loaded.home;
    let mut rows: Vec<(&'static str, String)> = Vec::new();
    let root = home.root().display().to_string();
    rows.push((
        "home",
        if home.root().is_dir() {
            root
        } else {
            format!("{root} (not created yet)")
        },
    ));
    if let Some(profile) = home.profile_name() {
        rows.push(("profile", profile));
    }
    let config_path = home.config_path().display().to_string();
    rows.push((
        "config.yaml",
        match &loaded.state {
            ConfigState::Found => config_path,
            ConfigState::Missing => format!("{config_path} missing: the defaults apply"),
            ConfigState::Invalid(e) => format!("invalid: {e} (the defaults stand in)"),
        },
    ));
    rows.push((".env", env_row(loaded)));

    let spec = loaded.resolve();
    match &spec {
        Ok(spec) => {
            rows.push((
                "provider",
                format!("{} ({})", spec.provider, chosen_by(spec)),
            ));
            rows.push(("model", spec.model.clone()));
            rows.push(("endpoint", endpoint_text(spec)));
            rows.push(("key", key_text(spec)));
        }
        Err(e) => rows.push(("provider", format!("none: {e}"))),
    }
    rows.push(("fallbacks", fallback_text(&loaded.config)));
    rows.push(("tools", tools_text(loaded, spec.as_ref().ok())));
    rows.push(("memory", memory_text(loaded)));
    rows.push(("sessions", sessions_text(home, loaded)));
    let python_db = home.join(hermes_store::import::PYTHON_DB_FILE_NAME);
    if python_db.is_file() {
        let ours = home.join(hermes_store::DB_FILE_NAME);
        rows.push(("python", python_text(&python_db, &ours)));
    }
    rows.push(("local model", local_model_text(loaded, spec.as_ref().ok())));
    rows.push(("skin", skin_text(loaded)));
    rows
}

fn env_row(loaded: &Loaded) -> String {
    let path = loaded.home.env_path();
    match &loaded.env_error {
        Some(e) => format!("invalid: {e}"),
        None if path.is_file() => {
            let n = loaded.env.dotenv_names().count();
            format!(
                "{} ({n} variable{})",
                path.display(),
                if n == 1 { "" } else { "s" }
            )
        }
        None => "none (keys come from the environment)".into(),
    }
}

/// `chosen by --provider`; for the fallback to the bundled model, that nothing was configured.
fn chosen_by(spec: &ProviderSpec) -> String {
    if spec.chosen_by == hermes_llm::resolve::CHOSEN_BY_DEFAULT {
        "the default: no provider configured".into()
    } else {
        format!("chosen by {}", spec.chosen_by)
    }
}

fn wire_name(wire: WireFormat) -> &'static str {
    match wire {
        WireFormat::OpenAiChat => "chat completions",
        WireFormat::Anthropic => "anthropic messages",
        WireFormat::Responses => "responses",
        WireFormat::Bedrock => "bedrock converse",
    }
}

fn endpoint_text(spec: &ProviderSpec) -> String {
    if spec.is_local() {
        return "in-process (llama.cpp)".into();
    }
    if spec.base_url.is_empty() {
        return format!("(from AWS_REGION) · {}", wire_name(spec.wire));
    }
    format!("{} · {}", spec.base_url, wire_name(spec.wire))
}

/// Where the key comes from, with at most its first three and last four characters.
fn key_text(spec: &ProviderSpec) -> String {
    match (&spec.api_key, &spec.key_source) {
        (Some(key), Some(source)) => format!("from {source} ({})", mask(key)),
        (Some(key), None) => format!("set ({})", mask(key)),
        (None, Some(source)) => format!("from {source}"),
        (None, None) if spec.is_local() => "none needed (in-process)".into(),
        (None, None) if hermes_llm::resolve::is_loopback(&spec.base_url) => {
            "none (not needed on this machine)".into()
        }
        (None, None) => "none".into(),
    }
}

/// `sk-…abcd`: a short key shows nothing of itself.
fn mask(key: &str) -> String {
    let chars: Vec<char> = key.trim().chars().collect();
    if chars.len() < 20 {
        return "…".into();
    }
    let head: String = chars.iter().take(3).collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}…{tail}")
}

fn fallback_text(config: &Config) -> String {
    let chain: Vec<String> = hermes_runtime::providers::fallback_chain(config)
        .iter()
        .map(|f| {
            let text = |k: &str| f.entry.get(k).and_then(Value::as_str).map(str::to_string);
            format!(
                "{} · {}",
                text("provider").unwrap_or_else(|| "?".into()),
                text("model").unwrap_or_else(|| "default model".into())
            )
        })
        .collect();
    if chain.is_empty() {
        "none".into()
    } else {
        chain.join(" -> ")
    }
}

/// The tools a session would offer, chosen exactly as a session chooses them (with nothing of
/// the home read into a prompt).
fn prepared_tools(
    loaded: &Loaded,
    spec: Option<&ProviderSpec>,
) -> Result<(hermes_runtime::Prepared, Vec<String>), CliError> {
    let args = CommonArgs {
        toolsets: loaded.common.toolsets.clone(),
        ignore_rules: true,
        ..CommonArgs::default()
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let (model, provider) = spec.map_or(("", ""), |s| (s.model.as_str(), s.provider.as_str()));
    let runtime = hermes_runtime::Runtime::with(
        loaded.home.clone(),
        loaded.config.clone(),
        loaded.env.clone(),
    )?;
    runtime.set_quiet(true);
    let session = args.spec(hermes_runtime::Platform::Cli, cwd.clone());
    let prepared = runtime.prepare(&session, &cwd, (model, provider))?;
    Ok((prepared, runtime.warnings()))
}

/// The toolsets a run would use and, unless it is `toolsets`, the setting they come from.
fn toolsets_text(loaded: &Loaded) -> String {
    let requested = loaded
        .common
        .toolsets
        .as_deref()
        .map(hermes_runtime::tools::parse_toolsets);
    let (names, source) = hermes_runtime::tools::configured_toolsets(
        requested.as_deref(),
        &hermes_runtime::Platform::Cli,
        &loaded.config,
    );
    let names = names.join(", ");
    match source.as_str() {
        "toolsets" => names,
        other => format!("{names} (from {other})"),
    }
}

fn tools_text(loaded: &Loaded, spec: Option<&ProviderSpec>) -> String {
    let toolsets = toolsets_text(loaded);
    match prepared_tools(loaded, spec) {
        Ok((prepared, _)) => {
            let n = prepared.tools.names().len();
            format!("{toolsets} · {n} tool{}", if n == 1 { "" } else { "s" })
        }
        Err(e) => format!("{toolsets} · unavailable: {}", e.message),
    }
}

fn memory_text(loaded: &Loaded) -> String {
    let settings = match MemorySettings::from_config(&loaded.config) {
        Ok(s) => s,
        Err(e) => return format!("invalid settings: {e}"),
    };
    if !settings.enabled() {
        return "off (memory.memory_enabled and memory.user_profile_enabled are false)".into();
    }
    let limits = settings.limits();
    let dir = loaded.home.join("memories");
    [Target::Memory, Target::User]
        .iter()
        .map(|&target| {
            let name = target.file_name();
            match memory_file::read(&dir.join(name)) {
                Ok(entries) => format!(
                    "{name} {}/{} chars",
                    thousands(memory_file::char_count(&entries)),
                    thousands(limits.of(target))
                ),
                Err(_) => format!("{name} unreadable"),
            }
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

use hermes_core::memory::store::thousands;

fn last_active(report: &DbReport) -> String {
    match report.last_active {
        Some(ts) => format!(
            ", last active {} ({})",
            hermes_store::time::format_utc(ts),
            hermes_store::time::relative_age(ts, hermes_store::time::now())
        ),
        None => String::new(),
    }
}

fn count(n: u64, what: &str) -> String {
    plural(usize::try_from(n).unwrap_or(usize::MAX), what)
}

fn sessions_text(home: &HermesHome, loaded: &Loaded) -> String {
    // With `store.backend: postgres` the history is on the server; a sessions.db left from
    // before would only mislead.
    if let Ok(location @ hermes_store::StoreLocation::Postgres { .. }) =
        hermes_runtime::store_location(home, &loaded.config, &loaded.env)
    {
        let all = hermes_store::SessionPage {
            limit: usize::MAX,
            offset: 0,
            source: None,
            include_children: true,
        };
        return match location.open().and_then(|s| s.count_sessions_page(&all)) {
            Ok(n) => format!(
                "{} in PostgreSQL ({})",
                plural(n, "session"),
                location.display()
            ),
            Err(e) => format!(
                "PostgreSQL store {}: {e} (`hermes doctor` says what to do)",
                location.display()
            ),
        };
    }
    let path = home.join(hermes_store::DB_FILE_NAME);
    if !path.exists() {
        return "none yet (sessions.db is created by the first chat)".into();
    }
    match health::inspect_sessions_db(&path, false) {
        Ok(report) => format!(
            "{} in sessions.db{}",
            count(report.sessions, "session"),
            last_active(&report)
        ),
        Err(e) => format!(
            "sessions.db {} (`hermes doctor` says what to do)",
            store_trouble(&e)
        ),
    }
}

/// What is wrong with a database, briefly.
fn store_trouble(e: &StoreError) -> String {
    match e {
        StoreError::Damaged { detail, .. } => format!("is damaged ({detail})"),
        StoreError::NotOurs { .. } => "is not a Hermes sessions database".into(),
        StoreError::NewerSchema { found, .. } => {
            format!("was written by a newer Hermes (schema version {found})")
        }
        StoreError::Locked { .. } => "is locked by another process".into(),
        other => format!("cannot be read: {other}"),
    }
}

/// The Python Hermes's `state.db`: its sessions, and `hermes sessions import` advised only
/// while some of them are not here yet.
fn python_text(path: &Path, ours: &Path) -> String {
    match health::inspect_python_db(path) {
        Ok(report) => {
            let sessions = count(report.sessions, "session");
            let last = last_active(&report);
            match health::python_sessions_not_imported(path, ours) {
                Ok(0) => format!("state.db of the Python Hermes: {sessions}{last}, all imported"),
                Ok(n) if n < report.sessions => format!(
                    "state.db of the Python Hermes: {sessions}{last}, {n} not imported yet; `hermes sessions import` copies them here"
                ),
                // None imported, or sessions.db unreadable (its own row says why).
                _ => format!(
                    "state.db of the Python Hermes: {sessions}{last}; `hermes sessions import` copies them here"
                ),
            }
        }
        Err(StoreError::NotOurs { .. }) => {
            "state.db is here but not the Python Hermes's sessions database".into()
        }
        Err(e) => format!("state.db of the Python Hermes {}", store_trouble(&e)),
    }
}

/// The GGUF a local run would load: the selected local model, else the default model.
fn local_settings(loaded: &Loaded, spec: Option<&ProviderSpec>) -> hermes_local::LocalSettings {
    let path = spec
        .filter(|s| s.is_local())
        .map(|s| s.base_url.trim())
        .filter(|p| !p.is_empty())
        .map(Path::new);
    hermes_local::LocalSettings::from_config(&loaded.config.model, path, loaded.home.root())
}

fn local_model_text(loaded: &Loaded, spec: Option<&ProviderSpec>) -> String {
    let settings = local_settings(loaded, spec);
    let path = settings.model_path.display();
    let runtime = if cfg!(feature = "local") {
        ""
    } else {
        " · this build has no embedded runtime (--features local)"
    };
    match std::fs::metadata(&settings.model_path) {
        Ok(meta) if meta.is_file() => format!(
            "{} present ({path}, {} MB){runtime}",
            settings.model_name,
            meta.len() / 1_000_000
        ),
        _ if settings.is_default_model => format!(
            "{} not downloaded (`{}` gets it, {} MB){runtime}",
            settings.model_name,
            hermes_local::default_model::FETCH_COMMAND,
            hermes_local::default_model::SIZE / 1_000_000
        ),
        _ => format!("{path} is missing{runtime}"),
    }
}

fn skin_text(loaded: &Loaded) -> String {
    let dir = loaded.home.join("skins");
    let configured = skin::configured_name(&loaded.config.raw);
    let found = skin::startup(&dir, configured.as_deref());
    match found.warning {
        Some(w) => format!("{} ({w})", found.skin.name),
        None => found.skin.name,
    }
}

// ------------------------------------------------------------------------------------------

fn plural(n: usize, what: &str) -> String {
    plural_of(n, what, &format!("{what}s"))
}

/// `1 entry`, `2 entries`.
fn plural_of(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The advice for a config.yaml that cannot be used.
mod doctor;
pub use doctor::doctor;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_to_a_short_tail() {
        assert_eq!(mask("sk-or-v1-0123456789abcdef"), "sk-…cdef");
        assert_eq!(mask("short-key"), "…");
    }
}
