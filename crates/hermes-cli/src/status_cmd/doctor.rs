//! `hermes doctor`: the checks, each `✓`, `!` (a warning) or `✗` (a problem) with one line and,
//! for anything not fine, the fix; any `✗` makes it exit 1. Read-only like `status` (see the
//! parent module), except the writability probe and the endpoint's `GET` of its model list.

use super::*;

mod cron;
mod honcho;
mod platforms;
mod sandbox;
mod store;
mod terminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Ok,
    Warn,
    Fail,
}

impl Mark {
    fn symbol(self) -> &'static str {
        match self {
            Mark::Ok => "✓",
            Mark::Warn => "!",
            Mark::Fail => "✗",
        }
    }
}

/// One check's outcome: a line, and for a warning or a problem what to do about it.
#[derive(Debug, Clone)]
struct Check {
    mark: Mark,
    name: String,
    text: String,
    fix: Option<String>,
}

impl Check {
    fn new(mark: Mark, name: &str, text: impl Into<String>, fix: impl Into<String>) -> Check {
        let fix: String = fix.into();
        Check {
            mark,
            name: name.to_string(),
            text: text.into(),
            fix: (!fix.is_empty()).then_some(fix),
        }
    }

    fn ok(name: &str, text: impl Into<String>) -> Check {
        Check::new(Mark::Ok, name, text, "")
    }

    fn warn(name: &str, text: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(Mark::Warn, name, text, fix)
    }

    fn fail(name: &str, text: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(Mark::Fail, name, text, fix)
    }
}

pub async fn doctor(common: &CommonArgs, args: &DoctorArgs) -> Result<ExitCode, CliError> {
    let loaded = Loaded::new(common, args.profile.as_deref())?;
    let theme = loaded.theme();
    let mut checks = Vec::new();
    let config = config_check(&loaded);
    let config_problem = (config.mark == Mark::Fail).then(|| config.text.clone());
    checks.push(config);
    checks.extend(env_check(&loaded));
    let usable = !matches!(loaded.state, ConfigState::Invalid(_));
    let spec = loaded.resolve();
    if usable {
        checks.push(provider_check(&loaded, &spec));
        checks.push(endpoint_check(&spec, args.offline).await);
        checks.extend(fallback_checks(&loaded));
        checks.push(tools_check(
            &loaded,
            spec.as_ref().ok(),
            config_problem.as_deref(),
        ));
        checks.extend(browser_check(&loaded));
        checks.push(sandbox::sandbox_check(&loaded));
        checks.push(terminal::terminal_check(&loaded).await);
        checks.extend(platforms::platform_checks(&loaded, args.offline).await);
    } else {
        // The defaults standing in would be checked instead of what the user wrote.
        checks.push(Check::warn(
            "provider",
            "provider, endpoint, fallbacks and tools not checked: config.yaml cannot be used",
            "fix config.yaml first",
        ));
    }
    checks.push(sessions_check(&loaded));
    if usable {
        checks.extend(store::store_check(&loaded.home, &loaded.config, &loaded.env).await);
    }
    checks.push(cron::cron_check(&loaded.home, &loaded.config, &loaded.env));
    checks.extend(memory_checks(&loaded));
    checks.extend(honcho::honcho_check(&loaded, args.offline).await);
    checks.push(home_check(&loaded.home));
    if usable
        && let Ok(spec) = &spec
        && spec.is_local()
    {
        checks.push(local_model_check(&loaded, spec));
    }
    checks.extend(skin_checks(&loaded));

    let mut out = String::new();
    let mut title = format!("hermes doctor · {}", loaded.home.root().display());
    if let Some(profile) = loaded.home.profile_name() {
        let _ = write!(title, " (profile {profile})");
    }
    let _ = writeln!(out, "{}\n", theme.paint_str(&title, theme.title()));
    for check in &checks {
        let style = match check.mark {
            Mark::Ok => theme.ok(),
            Mark::Warn => theme.warn(),
            Mark::Fail => theme.error(),
        };
        let _ = writeln!(
            out,
            "{} {} {}",
            theme.paint_str(check.mark.symbol(), style),
            theme.paint_str(&format!("{:<12}", check.name), theme.label()),
            check.text
        );
        if let Some(fix) = &check.fix {
            let _ = writeln!(
                out,
                "{:15}{}",
                "",
                theme.paint_str(&format!("fix: {fix}"), Style::default())
            );
        }
    }
    let failed = checks.iter().filter(|c| c.mark == Mark::Fail).count();
    let warned = checks.iter().filter(|c| c.mark == Mark::Warn).count();
    let summary = match (failed, warned) {
        (0, 0) => "All checks passed.".to_string(),
        (0, w) => format!("No problems; {}.", plural(w, "warning")),
        (f, 0) => format!("{}.", plural(f, "problem")),
        (f, w) => format!("{}, {}.", plural(f, "problem"), plural(w, "warning")),
    };
    let _ = writeln!(out, "\n{summary}");
    print!("{out}");
    if failed > 0 {
        return Err(CliError::runtime(format!(
            "doctor found {}; the fix for each is above",
            plural(failed, "problem")
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// `1 problem`, `2 problems`.
fn config_fix(e: &ConfigError) -> String {
    match e {
        ConfigError::Yaml { line, column, .. } => format!(
            "correct the YAML syntax at line {line}, column {column} (indentation, a missing `:` or an unclosed quote or bracket)"
        ),
        ConfigError::Invalid { key, .. } => {
            format!("give `{key}` a value of the right type in config.yaml, or remove it")
        }
        ConfigError::IsDirectory { path } => {
            format!("{} must be a file: move the directory away", path.display())
        }
        other => format!("make the file readable ({other})"),
    }
}

/// config.yaml parses, and every section this build reads has values of the right types
/// (keys it does not know are fine: they are kept and ignored).
fn config_check(loaded: &Loaded) -> Check {
    let path = loaded.home.config_path();
    match &loaded.state {
        ConfigState::Missing => {
            return Check::ok(
                "config",
                format!("{} missing: the defaults apply", path.display()),
            );
        }
        ConfigState::Invalid(e) => return Check::fail("config", e.to_string(), config_fix(e)),
        ConfigState::Found => {}
    }
    let config = &loaded.config;
    let mut errors: Vec<ConfigError> = Vec::new();
    let mut keep = |r: Result<(), ConfigError>| {
        if let Err(e) = r {
            errors.push(e);
        }
    };
    keep(MemorySettings::from_config(config).map(drop));
    keep(
        config
            .section::<hermes_core::compress::CompressionSettings>("compression")
            .map(drop),
    );
    keep(hermes_core::prompt::settings::PromptSettings::from_config(config).map(drop));
    keep(hermes_tools::ApprovalSettings::from_config(config, false).map(drop));
    for (key, wanted) in [
        ("display", Shape::Mapping),
        ("custom_providers", Shape::List),
        ("providers", Shape::Mapping),
        ("fallback_providers", Shape::ListOrMapping),
        ("fallback_model", Shape::ListOrMapping),
        ("credential_pool", Shape::Mapping),
        ("auxiliary", Shape::Mapping),
        ("prompt_caching", Shape::Mapping),
        ("platform_toolsets", Shape::Mapping),
        ("/platform_toolsets/cli", Shape::List),
        ("/display/skin", Shape::Text),
        ("/display/tool_progress", Shape::Text),
        ("/display/show_reasoning", Shape::Bool),
        ("/agent/save_trajectories", Shape::Bool),
        ("/prompt_caching/cache_ttl", Shape::Text),
    ] {
        keep(shape(config, key, wanted));
    }
    if let Some(e) = errors.into_iter().next() {
        return Check::fail("config", e.to_string(), config_fix(&e));
    }
    let agent = config.raw.get("agent");
    let field = |k: &str| agent.and_then(|a| a.get(k)).cloned().unwrap_or(Value::Null);
    let (_, warnings) = hermes_llm::reasoning::ReasoningSettings::from_config(
        &field("reasoning_effort"),
        &field("reasoning_overrides"),
    );
    if let Some(w) = warnings.first() {
        return Check::warn(
            "config",
            format!("{}: {w}", path.display()),
            format!(
                "use one of {} in config.yaml",
                hermes_llm::reasoning::LEVELS.join(", ")
            ),
        );
    }
    Check::ok(
        "config",
        format!("{} parses; its known sections are valid", path.display()),
    )
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Mapping,
    List,
    ListOrMapping,
    Text,
    Bool,
}

/// Checks that the value at `key` (a top-level key, or a JSON pointer) has the expected shape;
/// absent and null are fine.
fn shape(config: &Config, key: &str, wanted: Shape) -> Result<(), ConfigError> {
    let value = if key.starts_with('/') {
        config.raw.pointer(key)
    } else {
        config.raw.get(key)
    };
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let (fits, expected) = match wanted {
        Shape::Mapping => (value.is_object(), "a mapping"),
        Shape::List => (value.is_array(), "a list"),
        Shape::ListOrMapping => (value.is_array() || value.is_object(), "a list or a mapping"),
        Shape::Text => (value.is_string(), "text"),
        Shape::Bool => (value.is_boolean(), "true or false"),
    };
    if fits {
        return Ok(());
    }
    Err(ConfigError::Invalid {
        path: config.path.clone(),
        key: key.trim_start_matches('/').replace('/', "."),
        message: format!("expected {expected}, found {value}"),
    })
}

fn env_check(loaded: &Loaded) -> Option<Check> {
    let path = loaded.home.env_path();
    match &loaded.env_error {
        Some(e) => Some(Check::fail(
            ".env",
            e.to_string(),
            format!(
                "write one NAME=value per line in {} (quote values with spaces or #)",
                path.display()
            ),
        )),
        None if path.is_file() => Some(Check::ok(".env", env_row(loaded))),
        None => None,
    }
}

/// The provider resolves, has a key when it needs one, and can be built.
fn provider_check(loaded: &Loaded, spec: &Result<ProviderSpec, ResolveError>) -> Check {
    let env_file = loaded.home.env_path();
    let spec = match spec {
        Ok(spec) => spec,
        Err(e) => {
            let (text, fix) = match e {
                ResolveError::MissingKey { provider, env } => (
                    format!("no API key for `{provider}`"),
                    format!(
                        "set {env} in the environment or in {} (or model.api_key in config.yaml)",
                        env_file.display()
                    ),
                ),
                ResolveError::NoProvider => (
                    "no provider is chosen".to_string(),
                    "set model.provider (and model.default) in config.yaml, or export OPENROUTER_API_KEY"
                        .to_string(),
                ),
                ResolveError::UnknownProvider { name, known } => (
                    format!("unknown provider `{name}`"),
                    format!("set model.provider to one of: {known}"),
                ),
                ResolveError::MissingBaseUrl { provider } => (
                    format!("provider `{provider}` has no base URL"),
                    "set model.base_url in config.yaml (or pass --base-url)".to_string(),
                ),
                ResolveError::MissingModel { provider } => (
                    format!("no model chosen for `{provider}`"),
                    "set model.default in config.yaml (or pass --model)".to_string(),
                ),
            };
            return Check::fail("provider", text, fix);
        }
    };
    let what = format!("{} · {} ({})", spec.provider, spec.model, chosen_by(spec));
    if spec.is_local() {
        if let Err(e) = hermes_local::session::check_tool_choice(&loaded.config.model) {
            return Check::fail(
                "provider",
                e.to_string(),
                "fix model.tool_choice in config.yaml",
            );
        }
        if let Some(notice) = hermes_local::default_model_notice(spec, &loaded.home.config_path()) {
            return Check::warn(
                "provider",
                format!("{what}: a tiny offline model for smoke tests"),
                notice
                    .split_once("; ")
                    .map_or(notice.clone(), |(_, fix)| fix.to_string()),
            );
        }
        return Check::ok("provider", what);
    }
    match hermes_runtime::providers::build(
        &loaded.config,
        &loaded.env,
        &loaded.home,
        &loaded.overrides,
    ) {
        Ok(providers) => {
            if let Err(e) = hermes_local::with_tool_calling(&loaded.config.model, providers.primary)
            {
                return Check::fail(
                    "provider",
                    e.to_string(),
                    "fix model.tool_calling in config.yaml",
                );
            }
            let key = match &spec.key_source {
                Some(source) => format!(", key from {source}"),
                None => String::new(),
            };
            Check::ok("provider", format!("{what}{key}"))
        }
        Err(e) => Check::fail(
            "provider",
            e.to_string(),
            "correct the model section of config.yaml",
        ),
    }
}

/// `GET {base}/models` (the provider's equivalent) answers with this key.
async fn endpoint_check(spec: &Result<ProviderSpec, ResolveError>, offline: bool) -> Check {
    let Ok(spec) = spec else {
        return Check::warn(
            "endpoint",
            "not checked: no provider resolves",
            "fix the provider first",
        );
    };
    if spec.is_local() {
        return Check::ok("endpoint", "in-process model: nothing to reach");
    }
    if spec.wire == WireFormat::Bedrock {
        return Check::warn(
            "endpoint",
            "not checked for AWS Bedrock (its model list needs a signed request)",
            "`hermes -z hello` shows whether Bedrock answers",
        );
    }
    if let Some(kind) = spec.oauth() {
        return Check::warn(
            "endpoint",
            format!(
                "{} not checked: requests use the {} sign-in in auth.json, refreshed when used",
                spec.base_url,
                kind.display_name()
            ),
            "`hermes -z hello` shows whether it answers",
        );
    }
    if offline {
        return Check::warn(
            "endpoint",
            format!("{} not checked (--offline)", spec.base_url),
            "",
        );
    }
    let base = spec.base_url.trim_end_matches('/');
    let mut headers: Vec<(&str, String)> = Vec::new();
    let url = match spec.wire {
        WireFormat::OpenAiChat | WireFormat::Responses => {
            if let Some(key) = &spec.api_key {
                headers.push(("authorization", format!("Bearer {key}")));
            }
            format!("{base}/models")
        }
        WireFormat::Anthropic => {
            headers.push(("anthropic-version", ANTHROPIC_VERSION.to_string()));
            if let Some(key) = &spec.api_key {
                headers.push(("x-api-key", key.clone()));
            }
            if base.ends_with("/v1") {
                format!("{base}/models")
            } else {
                format!("{base}/v1/models")
            }
        }
        WireFormat::Bedrock => return Check::warn("endpoint", "not checked", ""),
    };
    probe(spec, &url, &headers).await
}

async fn probe(spec: &ProviderSpec, url: &str, headers: &[(&str, String)]) -> Check {
    let timeouts = HttpTimeouts {
        connect: PROBE_TIMEOUT,
        idle: PROBE_TIMEOUT,
    };
    let client = match hermes_llm::http_client(&timeouts) {
        Ok(c) => c,
        Err(e) => return Check::fail("endpoint", e.to_string(), ""),
    };
    let mut request = client.get(url).timeout(PROBE_TIMEOUT);
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            let refused =
                std::iter::successors(Some(&e as &(dyn std::error::Error + 'static)), |err| {
                    err.source()
                })
                .any(|err| {
                    err.downcast_ref::<std::io::Error>()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
                });
            let fix = if hermes_llm::resolve::is_loopback(url) {
                "start the server, or correct model.base_url in config.yaml"
            } else {
                "check the network, or correct model.base_url in config.yaml"
            };
            return if refused {
                Check::fail(
                    "endpoint",
                    format!("nothing answers at {url} (connection refused)"),
                    fix,
                )
            } else if e.is_timeout() {
                Check::fail(
                    "endpoint",
                    format!("{url} did not answer within {} s", PROBE_TIMEOUT.as_secs()),
                    fix,
                )
            } else {
                Check::fail(
                    "endpoint",
                    format!("cannot reach {url}: {}", error_chain(&e)),
                    fix,
                )
            };
        }
    };
    let status = response.status().as_u16();
    let body = response.text().await.unwrap_or_default();
    let key_hint = match &spec.key_source {
        Some(source) => format!("the key from {source}"),
        None => "the key".to_string(),
    };
    let key_fix = match &spec.key_source {
        Some(source) => format!("put a valid key in {source}"),
        None => "this endpoint wants a key: set model.api_key in config.yaml or the provider's key variable".to_string(),
    };
    match status {
        200..=299 => {
            let listed = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v.get("data").and_then(Value::as_array).map(Vec::len));
            let models = listed.map_or(String::new(), |n| format!(" ({})", plural(n, "model")));
            Check::ok("endpoint", format!("{url} answers{models}"))
        }
        401 => Check::fail(
            "endpoint",
            format!(
                "{url} rejected {key_hint} (HTTP 401: {})",
                body_message(&body)
            ),
            key_fix,
        ),
        403 => Check::fail(
            "endpoint",
            format!("{url} refused access (HTTP 403: {})", body_message(&body)),
            format!("check that {key_hint} may use this endpoint and model"),
        ),
        402 => Check::fail(
            "endpoint",
            format!("{url} wants payment (HTTP 402: {})", body_message(&body)),
            format!("add credits to the account of {key_hint}, or switch provider"),
        ),
        404 => Check::warn(
            "endpoint",
            format!("{url} has no model list (HTTP 404); chats may still work"),
            "if chats fail, check model.base_url: requests go to it plus /chat/completions",
        ),
        429 => Check::warn(
            "endpoint",
            format!("{url} is rate limiting (HTTP 429)"),
            "wait, or add keys to a credential pool",
        ),
        _ => Check::warn(
            "endpoint",
            format!("{url} answered HTTP {status}: {}", body_message(&body)),
            "try again later; if it persists, check model.base_url",
        ),
    }
}

/// An error and its causes on one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = cause.source();
    }
    parts.join(": ")
}

/// The provider's own words from an error body (`error.message`, `message`, or the text).
fn body_message(body: &str) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| body.lines().next().unwrap_or_default().to_string());
    let text = text.trim();
    if text.is_empty() {
        return "no message".into();
    }
    let mut short: String = text.chars().take(200).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// Each fallback entry resolves and can be built, judged by the code a session uses: the
/// chain is built beside a stand-in primary (the in-process model, which always resolves), so
/// the entries are checked even when the primary is broken.
fn fallback_checks(loaded: &Loaded) -> Vec<Check> {
    let chain = hermes_runtime::providers::fallback_chain(&loaded.config);
    if chain.is_empty() {
        return Vec::new();
    }
    let stand_in = Overrides {
        provider: Some(hermes_llm::resolve::LOCAL_PROVIDER.to_string()),
        ..Overrides::default()
    };
    let warnings = match hermes_runtime::providers::build(
        &loaded.config,
        &loaded.env,
        &loaded.home,
        &stand_in,
    ) {
        Ok(p) => p.warnings,
        Err(e) => vec![e.to_string()],
    };
    chain
        .iter()
        .map(|entry| {
            let prefix = format!("{} is skipped: ", entry.label);
            let text = |k: &str| {
                entry
                    .entry
                    .get(k)
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            match warnings.iter().find_map(|w| w.strip_prefix(&prefix)) {
                Some(reason) => Check::fail(
                    "fallback",
                    format!("{}: {reason}", entry.label),
                    format!(
                        "correct {} in config.yaml; until then it is skipped",
                        entry.label
                    ),
                ),
                None => Check::ok(
                    "fallback",
                    format!(
                        "{}: {} · {}",
                        entry.label,
                        text("provider").unwrap_or_else(|| "?".into()),
                        text("model")
                            .or_else(|| text("default"))
                            .unwrap_or_else(|| "default model".into())
                    ),
                ),
            }
        })
        .collect()
}

/// The toolsets exist and give the model tools. (Choosing them reads config.yaml's sections:
/// a `config_problem` already reported is not reported twice.)
fn tools_check(
    loaded: &Loaded,
    spec: Option<&ProviderSpec>,
    config_problem: Option<&str>,
) -> Check {
    let toolsets = toolsets_text(loaded);
    match prepared_tools(loaded, spec) {
        Ok((prepared, warnings)) => {
            let n = prepared.tools.names().len();
            match warnings.first() {
                Some(w) => Check::warn(
                    "tools",
                    format!("{toolsets}: {}; {w}", plural(n, "tool")),
                    "adjust `toolsets` in config.yaml (`hermes tools` lists them)",
                ),
                None => Check::ok("tools", format!("{toolsets}: {}", plural(n, "tool"))),
            }
        }
        Err(e) if config_problem == Some(e.message.as_str()) => Check::warn(
            "tools",
            "not checked: config.yaml has an invalid value",
            "fix config.yaml first",
        ),
        Err(e) => Check::fail(
            "tools",
            e.message,
            "adjust `toolsets` in config.yaml (`hermes tools` lists them)",
        ),
    }
}

/// Without the `browser` feature there are no browser tools to check.
#[cfg(not(feature = "browser"))]
fn browser_check(_loaded: &Loaded) -> Option<Check> {
    None
}

/// When the run's toolsets include the browser tools: a Chromium to drive (found on PATH, by
/// `CHROME_PATH` / `browser.executable`, or `browser.cdp_url` to attach to), else how to get one.
#[cfg(feature = "browser")]
fn browser_check(loaded: &Loaded) -> Option<Check> {
    let requested = loaded
        .common
        .toolsets
        .as_deref()
        .map(hermes_runtime::tools::parse_toolsets);
    let (toolsets, _) = hermes_runtime::tools::configured_toolsets(
        requested.as_deref(),
        &hermes_runtime::Platform::Cli,
        &loaded.config,
    );
    let memory = hermes_core::memory::MemorySettings::from_config(&loaded.config).ok()?;
    let (every, _) = hermes_runtime::tools::every_tool(&loaded.home, &memory);
    let (selected, _) = every.select(&toolsets).ok()?;
    let wanted = selected
        .names()
        .iter()
        .any(|n| selected.get(n).is_some_and(|t| t.toolset() == "browser"));
    if !wanted {
        return None;
    }
    let settings = hermes_web::browser::BrowserSettings::from_config(&loaded.config, &loaded.env);
    Some(match settings.launch() {
        Some(hermes_web::browser::Launch::Executable(path)) => Check::ok(
            "browser",
            format!(
                "Chromium at {} (headless, started on first use)",
                path.display()
            ),
        ),
        Some(hermes_web::browser::Launch::Attach(url)) => {
            Check::ok("browser", format!("attaches to the browser at {url}"))
        }
        None => Check::warn(
            "browser",
            "no Chromium found: the browser_* tools are hidden from the model",
            "install Chromium (Debian/Ubuntu: sudo apt-get install chromium; Fedora: sudo dnf install chromium; macOS: brew install --cask chromium), or set browser.cdp_url in config.yaml to a running Chrome started with --remote-debugging-port",
        ),
    })
}

/// sessions.db opens (read-only) and passes `PRAGMA quick_check`; with the PostgreSQL store
/// the `store` check covers the history instead.
fn sessions_check(loaded: &Loaded) -> Check {
    let home = &loaded.home;
    if let Ok(location @ hermes_store::StoreLocation::Postgres { .. }) =
        hermes_runtime::store_location(home, &loaded.config, &loaded.env)
    {
        return Check::ok(
            "sessions",
            format!(
                "kept in PostgreSQL ({}), checked by `store`",
                location.display()
            ),
        );
    }
    let path = home.join(hermes_store::DB_FILE_NAME);
    let shown = path.display();
    let aside = format!(
        "nothing was changed: move it aside (`mv {shown} {shown}.damaged`) and hermes starts a new one; `sqlite3 {shown}.damaged .recover` can salvage its contents"
    );
    if !path.exists() {
        return Check::ok(
            "sessions",
            "sessions.db not created yet (the first chat creates it)",
        );
    }
    match health::inspect_sessions_db(&path, true) {
        Ok(report) if report.problems.is_empty() => Check::ok(
            "sessions",
            format!(
                "sessions.db: {}, quick_check ok",
                count(report.sessions, "session")
            ),
        ),
        Ok(report) => Check::fail(
            "sessions",
            format!(
                "sessions.db fails quick_check: {}{}",
                report
                    .problems
                    .first()
                    .map(String::as_str)
                    .unwrap_or_default(),
                if report.problems.len() > 1 {
                    format!(" (and {} more)", report.problems.len() - 1)
                } else {
                    String::new()
                }
            ),
            aside,
        ),
        Err(StoreError::Damaged { detail, .. }) => Check::fail(
            "sessions",
            format!("sessions.db is damaged ({detail})"),
            aside,
        ),
        Err(StoreError::NotOurs { detail, .. }) => Check::fail(
            "sessions",
            format!("sessions.db is not a Hermes sessions database ({detail})"),
            format!("move {shown} elsewhere, or point HERMES_HOME at another directory"),
        ),
        Err(StoreError::NewerSchema { found, known, .. }) => Check::fail(
            "sessions",
            format!("sessions.db has schema version {found}; this build knows up to {known}"),
            "upgrade hermes (the file was left untouched)",
        ),
        Err(StoreError::Locked { .. }) => Check::warn(
            "sessions",
            "sessions.db is locked by another process",
            "run doctor again when it has finished",
        ),
        Err(e) => Check::fail("sessions", e.to_string(), "make the file readable"),
    }
}

/// MEMORY.md and USER.md can be read and are within their budgets.
fn memory_checks(loaded: &Loaded) -> Vec<Check> {
    let settings = MemorySettings::from_config(&loaded.config).unwrap_or_default();
    let limits = settings.limits();
    let dir = loaded.home.join("memories");
    [
        (Target::Memory, settings.memory_enabled, "memory_char_limit"),
        (
            Target::User,
            settings.user_profile_enabled,
            "user_char_limit",
        ),
    ]
    .iter()
    .map(|&(target, enabled, limit_key)| {
        let name = target.file_name();
        let path = dir.join(name);
        let off = if enabled {
            ""
        } else {
            " (not loaded: turned off in config.yaml)"
        };
        match memory_file::read(&path) {
            Err(e) => Check::fail(
                "memory",
                format!("{name} cannot be read: {e}"),
                format!(
                    "make {} UTF-8 text (entries separated by a line holding only §)",
                    path.display()
                ),
            ),
            Ok(_) if !path.exists() => Check::ok("memory", format!("{name}: empty{off}")),
            Ok(entries) => {
                let chars = memory_file::char_count(&entries);
                let limit = limits.of(target);
                let used = format!(
                    "{name}: {}/{} chars, {}",
                    thousands(chars),
                    thousands(limit),
                    plural_of(entries.len(), "entry", "entries")
                );
                if chars > limit {
                    Check::warn(
                        "memory",
                        format!("{used}: over its budget, so nothing more can be added{off}"),
                        format!(
                            "shorten or remove entries in {}, or raise memory.{limit_key} in config.yaml",
                            path.display()
                        ),
                    )
                } else {
                    Check::ok("memory", format!("{used}{off}"))
                }
            }
        }
    })
    .collect()
}

/// Creates and removes an empty file in `dir`.
fn probe_writable(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".hermes-doctor-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

/// The home and its subdirectories are writable.
fn home_check(home: &HermesHome) -> Check {
    let root = home.root();
    if !root.exists() {
        let parent = root.ancestors().skip(1).find(|p| p.is_dir());
        return match parent.map(probe_writable) {
            Some(Ok(())) => Check::ok(
                "home",
                format!(
                    "{} not created yet (the first run creates it)",
                    root.display()
                ),
            ),
            _ => Check::fail(
                "home",
                format!("{} does not exist and cannot be created", root.display()),
                "create it yourself, or point HERMES_HOME at a writable directory",
            ),
        };
    }
    if !root.is_dir() {
        return Check::fail(
            "home",
            format!("{} is not a directory", root.display()),
            "move the file away, or point HERMES_HOME at a directory",
        );
    }
    let dirs: Vec<PathBuf> = std::iter::once(root.to_path_buf())
        .chain(SUBDIRS.iter().map(|d| root.join(d)).filter(|d| d.is_dir()))
        .collect();
    let failures: Vec<(PathBuf, std::io::Error)> = dirs
        .iter()
        .filter_map(|d| probe_writable(d).err().map(|e| (d.clone(), e)))
        .collect();
    match failures.first() {
        None if dirs.len() == 1 => Check::ok("home", format!("{} is writable", root.display())),
        None => Check::ok(
            "home",
            format!(
                "{} and its {} are writable",
                root.display(),
                plural_of(dirs.len() - 1, "subdirectory", "subdirectories")
            ),
        ),
        Some((dir, e)) => Check::fail(
            "home",
            format!(
                "cannot write in {} ({e}){}",
                dir.display(),
                if failures.len() > 1 {
                    format!(" and {} more", failures.len() - 1)
                } else {
                    String::new()
                }
            ),
            format!(
                "give your user write access (`chmod -R u+w {}`, or `chown` it back to you)",
                root.display()
            ),
        ),
    }
}

/// The selected local model file exists and starts with a GGUF header.
fn local_model_check(loaded: &Loaded, spec: &ProviderSpec) -> Check {
    let settings = local_settings(loaded, Some(spec));
    if !cfg!(feature = "local") {
        return Check::fail(
            "local model",
            hermes_local::LocalError::NotBuilt.to_string(),
            "rebuild with `--features local` (scripts/run does), or choose a hosted provider",
        );
    }
    match hermes_local::check_model_file(&settings) {
        Ok(()) => Check::ok(
            "local model",
            format!("{} is a GGUF file", settings.model_path.display()),
        ),
        Err(e) => {
            use hermes_local::ModelFileError as E;
            let (text, fix) = match &e {
                E::DefaultMissing { path, fetch } => (
                    format!("the default model is not downloaded yet ({path})"),
                    format!(
                        "run `{fetch}` ({} MB, once per machine), or choose a hosted provider",
                        hermes_local::default_model::SIZE / 1_000_000
                    ),
                ),
                E::Missing { .. } => (e.to_string(), "correct model.path in config.yaml".into()),
                E::Unreadable { .. } => (e.to_string(), "make the file readable".into()),
                E::NotGguf { .. } => (
                    e.to_string(),
                    "point model.path at a .gguf model file (a download may have been cut short)"
                        .into(),
                ),
            };
            Check::fail("local model", text, fix)
        }
    }
}

/// The user's skin files parse and the configured skin exists.
fn skin_checks(loaded: &Loaded) -> Vec<Check> {
    let dir = loaded.home.join("skins");
    let infos = skin::list(&dir);
    let mut checks: Vec<Check> = infos
        .iter()
        .filter_map(|info| {
            let why = info.broken.as_ref()?;
            let file = ["yaml", "yml"]
                .iter()
                .map(|ext| dir.join(format!("{}.{ext}", info.name)))
                .find(|p| p.is_file())
                .unwrap_or_else(|| dir.join(format!("{}.yaml", info.name)));
            Some(Check::fail(
                "skin",
                format!("{}: {why}", file.display()),
                format!(
                    "fix or remove the file; until then the `{}` skin falls back to a built-in",
                    info.name
                ),
            ))
        })
        .collect();
    let configured = skin::configured_name(&loaded.config.raw)
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    let name = configured.clone().unwrap_or_else(|| "default".into());
    match skin::load(&dir, &name) {
        Err(why) => checks.push(Check::fail(
            "skin",
            format!("display.skin: {why}"),
            format!(
                "set display.skin to one of those, or add {}",
                dir.join(format!("{name}.yaml")).display()
            ),
        )),
        Ok(found) => {
            match found.warning {
                Some(w) if !checks.iter().any(|c| c.text.contains(&name)) => checks.push(
                    Check::warn("skin", format!("{name}: {w}"), "correct the skin file"),
                ),
                Some(_) => {}
                None if checks.is_empty() => {
                    let own = infos
                        .iter()
                        .filter(|i| i.source == skin::Source::User)
                        .count();
                    checks.push(Check::ok(
                        "skin",
                        format!(
                            "{name}{}",
                            if own > 0 {
                                format!("; {} in skins/ parse", plural(own, "file"))
                            } else {
                                String::new()
                            }
                        ),
                    ));
                }
                None => {}
            }
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_give_the_providers_words() {
        assert_eq!(
            body_message(r#"{"error":{"message":"bad key","type":"auth"}}"#),
            "bad key"
        );
        assert_eq!(body_message(r#"{"message":"nope"}"#), "nope");
        assert_eq!(body_message("plain text\nmore"), "plain text");
        assert_eq!(body_message(""), "no message");
    }

    #[test]
    fn shapes_of_known_sections_are_checked() {
        let env = Environment::isolated::<&str, &str>([]);
        let config = Config::from_yaml(
            Path::new("/h/config.yaml"),
            "display:\n  skin: [a]\nfallback_providers: openrouter\nfuture: 1\n",
            &env,
        )
        .unwrap();
        let e = shape(&config, "/display/skin", Shape::Text).unwrap_err();
        assert!(e.to_string().contains("`display.skin`"), "{e}");
        assert!(shape(&config, "fallback_providers", Shape::ListOrMapping).is_err());
        assert!(shape(&config, "display", Shape::Mapping).is_ok());
        assert!(shape(&config, "auxiliary", Shape::Mapping).is_ok());
    }
}
