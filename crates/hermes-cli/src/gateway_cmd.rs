//! `hermes gateway [run]`: the gateway in the foreground, one long-lived process with one
//! [`Runtime`] (providers, MCP servers and the store writer built once and shared): the
//! OpenAI-compatible API server (each request one turn of a fresh session: platform `api`,
//! unattended approvals), every configured chat platform (Telegram, Discord, Slack, Matrix, IRC,
//! Mattermost, email, XMPP, Signal, WhatsApp (Cloud API), SMS, Home Assistant, webhooks: one session per chat, `hermes_gateway::chat`), the cron
//! scheduler with delivery to chats,
//! and the state file `hermes gateway status` reads. Ctrl-C or SIGTERM stops it: turns in
//! flight are interrupted and recorded, exit 0.
//!
//! Settings, as the Python Hermes reads them: `--host`/`--port`, else `API_SERVER_HOST` /
//! `API_SERVER_PORT`, else `platforms.api_server.extra.host|port` (or without `extra`, or under
//! `gateway.platforms`), else 127.0.0.1:8642; the key from `API_SERVER_KEY` (environment or
//! .env) or `platforms.api_server.extra.key`; the concurrency limit from
//! `gateway.api_server.max_concurrent_runs` (default 10, 0: none); `model_routes` aliases from
//! `platforms.api_server.extra.model_routes` (a request naming one runs on its model). The API
//! server's resource routes (sessions, jobs, skills, toolsets, detailed health) read the same
//! runtime, and its "run now" wakes the cron scheduler.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use hermes_config::{Config, Environment};
use hermes_core::EventSink;
use hermes_gateway::api_server::listener::ConnectionLimits;
use hermes_gateway::api_server::{
    self, ApiServer, ApiServerConfig, Backing, RunnerError, TurnInput, TurnOutcome, TurnRunner,
};
use hermes_gateway::chat::{self, ChatGateway};
use hermes_gateway::platform::{BuiltAdapters, build_adapters};
use hermes_runtime::{Platform, Resume, Runtime, SessionError, SessionSpec, Unattended};
use hermes_store::StoreError;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;
use crate::gateway_service;

#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// `run` (the default): run the gateway in the foreground; `status`: whether one runs
    /// for this home, its platforms and chats; `stop`: stop it (the service, or SIGTERM to the
    /// running process: turns recorded); `install` / `uninstall`: a systemd user service;
    /// `start` / `restart`: the installed service.
    #[arg(value_parser = ["run", "status", "stop", "install", "uninstall", "start", "restart"])]
    pub action: Option<String>,

    /// Address to listen on (default 127.0.0.1; others need API_SERVER_KEY).
    #[arg(long)]
    pub host: Option<String>,

    /// Port to listen on (default 8642; 0 picks a free one).
    #[arg(long)]
    pub port: Option<u16>,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// The platforms of the Python gateway this build does not have.
const API_SERVER: &str = "api_server";

pub async fn run(common: &CommonArgs, args: &GatewayArgs) -> Result<ExitCode, CliError> {
    let merged = common.merged(&args.common);
    let home = || crate::session::load_home(&merged).map(|(home, _, _)| home);
    match args.action.as_deref() {
        Some("status") => return status(&merged),
        Some("stop") => {
            let home = home()?;
            if gateway_service::Service::of(&home).is_ok_and(|s| s.installed()) {
                return gateway_service::control(&home, gateway_service::Action::Stop);
            }
            return stop(&merged).await;
        }
        Some("install") => return gateway_service::install(&home()?),
        Some("uninstall") => return gateway_service::uninstall(&home()?),
        Some("start") => {
            return gateway_service::control(&home()?, gateway_service::Action::Start);
        }
        Some("restart") => {
            return gateway_service::control(&home()?, gateway_service::Action::Restart);
        }
        _ => {}
    }
    let common = CommonArgs {
        resume: None,
        continue_last: false,
        ..common.merged(&args.common)
    };
    let runtime = crate::session::runtime(&common)?;
    let (home, config, env) = (runtime.home(), runtime.config(), runtime.env());
    let mut server_config = server_config(args, config, env, home)?;
    api_server::check_bind(&server_config.host, server_config.key.as_deref())
        .map_err(|e| CliError::config(e.to_string()))?;
    if let Some(pid) = chat::state::running_pid(home.root()) {
        return Err(CliError::config(format!(
            "a gateway is already running for this home (pid {pid}); stop it with `hermes gateway stop`"
        )));
    }
    raise_open_file_limit();
    let cwd = crate::session::working_dir(config)?;
    let BuiltAdapters {
        adapters,
        platforms,
        errors,
        warnings,
    } = build_adapters(config, env);
    for warning in warnings {
        eprintln!("hermes: {warning}");
    }
    for error in errors {
        eprintln!("hermes: gateway platform not started: {error}");
    }
    let chats = (!adapters.is_empty()).then(|| {
        Arc::new(ChatGateway::new(
            runtime.clone(),
            common.spec(Platform::Gateway("gateway".into()), cwd.clone()),
            adapters,
            platforms.clone(),
        ))
    });
    let directory = match &chats {
        Some(g) => g.directory(),
        None => chat::delivery::Directory {
            adapters: Default::default(),
            platforms: platforms.clone(),
            routes: Arc::new(chat::routes::Routes::load(home.root())),
        },
    };
    if chats.is_some() {
        runtime.register_tool(Arc::new(chat::delivery::SendMessageTool {
            directory: directory.clone(),
        }));
    }
    let spec = common.spec(Platform::Api, cwd);
    // Build one session first: a configuration mistake stops the gateway at start, and the
    // providers and MCP servers every request shares are ready before the first one.
    let probe = runtime
        .open_session(spec.clone(), Arc::new(Unattended))
        .await?;
    probe.close().await;

    // The API's resource routes read the same home, and "run now" wakes the scheduler.
    let cron_wake = Arc::new(tokio::sync::Notify::new());
    server_config.backing = Backing {
        runtime: Some(runtime.clone()),
        cron_wake: Some(cron_wake.clone()),
        chats: chats.clone(),
    };
    let runner = Arc::new(AgentRunner {
        runtime: runtime.clone(),
        spec: spec.clone(),
    });
    let server = ApiServer::bind(server_config, runner)
        .await
        .map_err(|e| CliError::runtime(e.to_string()))?;
    let addr = server
        .local_addr()
        .map_err(|e| CliError::runtime(format!("cannot read the listening address: {e}")))?;
    println!("API server listening on http://{addr}/v1");
    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone());
    let mut background = Vec::new();
    if let Some(gateway) = &chats {
        for adapter in gateway.adapters() {
            println!("{} started", adapter.name());
        }
        background.push(tokio::spawn(gateway.clone().run(shutdown.clone())));
    }
    background.push(tokio::spawn(chat::state::keep_written(
        chats.clone(),
        home.root().to_path_buf(),
        Some(format!("http://{addr}/v1")),
        shutdown.clone(),
    )));
    let kanban: hermes_kanban::KanbanSettings = config
        .section("kanban")
        .map_err(|e| CliError::config(e.to_string()))?;
    background.push(tokio::spawn(chat::kanban::run(
        hermes_kanban::kanban_root(home.root()),
        kanban,
        std::env::current_exe()
            .map_err(|e| CliError::runtime(format!("cannot find the hermes executable: {e}")))?,
        directory.clone(),
        shutdown.clone(),
    )));
    let delivery = Arc::new(chat::delivery::CronDelivery::new(directory, &config.raw));
    background.push(tokio::spawn(chat::scheduler::run(
        runtime.clone(),
        spec,
        delivery,
        cron_wake,
        shutdown.clone(),
    )));
    background.push(tokio::spawn(crate::curator_cmd::gateway_ticker(
        hermes_core::skills::Curator::new(home.root(), config),
        runtime.clone(),
        shutdown.clone(),
    )));
    let stopped = shutdown.clone();
    tokio::select! {
        r = server.serve(shutdown) => {
            r.map_err(|e| CliError::runtime(format!("the API server failed: {e}")))?;
        }
        // Connections that outlive their cancelled turns are not waited for forever.
        _ = async { stopped.cancelled().await; tokio::time::sleep(Duration::from_secs(10)).await } => {}
    }
    // The chats finish (or stop) their turns and close their sessions.
    for task in background {
        let _ = tokio::time::timeout(Duration::from_secs(40), task).await;
    }
    Ok(ExitCode::SUCCESS)
}

/// `hermes gateway status`: whether a gateway runs for this home, and what its state file says.
fn status(common: &CommonArgs) -> Result<ExitCode, CliError> {
    let (home, config, env) = crate::session::load_home(common)?;
    let (state, pid) = chat::state::read(home.root());
    match pid {
        Some(pid) => println!("Gateway running (pid {pid})."),
        None => println!("Gateway not running."),
    }
    let live = match state {
        Some(state) => print_state(&state, pid.is_some()),
        None => Vec::new(),
    };
    print_configured(&config, &env, &live, pid.is_some());
    Ok(ExitCode::SUCCESS)
}

/// The platforms config.yaml and .env enable that the running gateway does not show (or all
/// of them when none runs): whether each can start, without touching the network (`hermes
/// doctor` probes the servers).
fn print_configured(config: &Config, env: &Environment, live: &[String], running: bool) {
    let BuiltAdapters {
        adapters,
        errors,
        warnings,
        ..
    } = build_adapters(config, env);
    let mut shown = false;
    for adapter in adapters
        .iter()
        .filter(|a| !live.iter().any(|l| l == a.name()))
    {
        let note = if running {
            "configured, not running (restart the gateway to start it)"
        } else {
            "configured, ready to start"
        };
        println!("  {:<10} {note}", adapter.name());
        shown = true;
    }
    for e in &errors {
        println!("  {:<10} cannot start: {e}", e.platform());
        shown = true;
    }
    for w in &warnings {
        println!("  ! {w}");
    }
    if shown {
        println!("  `hermes doctor` checks the credentials and that each server answers.");
    }
}

/// Prints what the state file says; returns the names of the platforms it lists.
fn print_state(state: &serde_json::Value, running: bool) -> Vec<String> {
    let age = |at: Option<f64>| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        at.map(|t| format_age((now - t).max(0.0) as u64))
    };
    if running {
        if let Some(since) = age(state["started_at"].as_f64()) {
            println!("  up {since}");
        }
        if let Some(api) = state["api_server"].as_str() {
            println!("  API server  {api}");
        }
        println!(
            "  live chats  {}",
            state["live_chats"].as_u64().unwrap_or(0)
        );
    } else if let Some(ago) = age(state["stopped_at"].as_f64()) {
        println!("  stopped {ago} ago");
    }
    let mut live = Vec::new();
    for p in state["platforms"].as_array().into_iter().flatten() {
        let mut line = format!(
            "  {:<10} {:<12} received {}, sent {}, reconnects {}",
            p["name"].as_str().unwrap_or("?"),
            p["state"].as_str().unwrap_or("?"),
            p["received"].as_u64().unwrap_or(0),
            p["sent"].as_u64().unwrap_or(0),
            p["reconnects"].as_u64().unwrap_or(0),
        );
        if let Some(error) = p["last_error"]["error"].as_str() {
            let when = age(p["last_error"]["at"].as_f64()).unwrap_or_default();
            line.push_str(&format!("\n             last error {when} ago: {error}"));
        }
        println!("{line}");
        if let Some(name) = p["name"].as_str() {
            live.push(name.to_string());
        }
    }
    live
}

fn format_age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        s => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// `hermes gateway stop`: SIGTERM to the running gateway, then waits (up to a minute) for it
/// to finish its turns and exit.
async fn stop(common: &CommonArgs) -> Result<ExitCode, CliError> {
    let (home, _, _) = crate::session::load_home(common)?;
    let Some(pid) = chat::state::running_pid(home.root()) else {
        println!("Gateway not running.");
        return Ok(ExitCode::SUCCESS);
    };
    if let Err(e) = send_sigterm(pid) {
        return Err(CliError::runtime(format!(
            "cannot signal the gateway (pid {pid}): {e}"
        )));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while chat::state::alive(pid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if chat::state::alive(pid) {
        return Err(CliError::runtime(format!(
            "the gateway (pid {pid}) is still finishing its turns after a minute"
        )));
    }
    println!("Gateway stopped (pid {pid}).");
    Ok(ExitCode::SUCCESS)
}

/// Raises the soft limit of open files to the hard one: a gateway holds a socket per API
/// client and chat connection, and the usual soft limit (1,024) is low enough for a burst of
/// idle clients to exhaust it. Best effort: a refusal leaves the limit as it was.
#[cfg(unix)]
#[allow(unsafe_code)]
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the plain struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

#[cfg(not(unix))]
fn raise_open_file_limit() {}

/// SIGTERM to `pid` (never to pid 0 or 1, which would mean a group or init).
#[allow(unsafe_code)]
fn send_sigterm(pid: u32) -> std::io::Result<()> {
    let raw = libc::pid_t::try_from(pid)
        .ok()
        .filter(|p| *p > 1)
        .ok_or_else(|| std::io::Error::other("not a process id"))?;
    // SAFETY: kill(2) only sends a signal; the pid was read from our pid file and checked to
    // be a live gateway, and a stale one at worst yields ESRCH.
    if unsafe { libc::kill(raw, libc::SIGTERM) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

pub(crate) fn spawn_signal_handler(shutdown: CancellationToken) {
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        shutdown.cancel();
    });
}

/// A value of the api_server platform block: `platforms.api_server.extra.KEY`, then
/// `platforms.api_server.KEY`, then the same under `gateway.`.
fn platform_value<'a>(config: &'a Config, key: &str) -> Option<&'a Value> {
    ["/platforms", "/gateway/platforms"]
        .iter()
        .flat_map(|root| {
            [
                format!("{root}/{API_SERVER}/extra/{key}"),
                format!("{root}/{API_SERVER}/{key}"),
            ]
        })
        .find_map(|p| config.raw.pointer(&p).filter(|v| !v.is_null()))
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn server_config(
    args: &GatewayArgs,
    config: &Config,
    env: &Environment,
    home: &hermes_config::HermesHome,
) -> Result<ApiServerConfig, CliError> {
    let profile = home.profile_name();
    let setting = |var: &str, key: &str| {
        env.var(var)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (v.trim().to_string(), var.to_string()))
            .or_else(|| {
                platform_value(config, key)
                    .and_then(as_text)
                    .map(|v| (v, format!("platforms.{API_SERVER}.extra.{key}")))
            })
    };
    let host = match &args.host {
        Some(h) => h.clone(),
        None => setting("API_SERVER_HOST", "host")
            .map(|(v, _)| v)
            .unwrap_or_else(|| api_server::DEFAULT_HOST.into()),
    };
    let port = match args.port {
        Some(p) => p,
        None => match setting("API_SERVER_PORT", "port") {
            Some((v, from)) => v
                .parse()
                .map_err(|_| CliError::config(format!("{from}: {v:?} is not a port number")))?,
            None => api_server::DEFAULT_PORT,
        },
    };
    let key = setting("API_SERVER_KEY", "key").map(|(v, _)| v);
    let max_concurrent = match config
        .raw
        .pointer("/gateway/api_server/max_concurrent_runs")
    {
        None | Some(Value::Null) => api_server::DEFAULT_MAX_CONCURRENT,
        Some(v) => v
            .as_i64()
            .map(|n| usize::try_from(n.max(0)).unwrap_or_default())
            .ok_or_else(|| {
                CliError::config(format!(
                    "{}: gateway.api_server.max_concurrent_runs must be a number",
                    config.path.display()
                ))
            })?,
    };
    let list = |var: &str, key: &str| -> Vec<String> {
        let items: Vec<String> = match env.var(var).filter(|v| !v.trim().is_empty()) {
            Some(v) => v.split(',').map(str::to_string).collect(),
            None => match platform_value(config, key) {
                Some(Value::Array(items)) => items.iter().filter_map(as_text).collect(),
                Some(v) => as_text(v)
                    .map(|v| v.split(',').map(str::to_string).collect())
                    .unwrap_or_default(),
                None => Vec::new(),
            },
        };
        items
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let connections = connection_limits(config)?;
    let (model_routes, warnings) =
        api_server::model_routes::parse(platform_value(config, "model_routes"));
    for w in warnings {
        eprintln!("hermes: {w}");
    }
    let model_name = setting("API_SERVER_MODEL_NAME", "model_name")
        .map(|(v, _)| v)
        .or(profile.filter(|p| p != "default" && p != "custom"))
        .unwrap_or_else(|| api_server::DEFAULT_MODEL_NAME.into());
    Ok(ApiServerConfig {
        host,
        port,
        key,
        max_concurrent,
        model_name,
        version: env!("CARGO_PKG_VERSION").into(),
        response_store: Some(home.join(api_server::response_store::FILE_NAME)),
        cors_origins: list("API_SERVER_CORS_ORIGINS", "cors_origins"),
        allowed_hosts: list("API_SERVER_ALLOWED_HOSTS", "allowed_hosts"),
        connections,
        backing: Backing::default(),
        model_routes,
        sse_keepalive: api_server_number(config, "sse_keepalive")?
            .map(|secs| Duration::from_secs_f64(secs.min(86_400.0)))
            .unwrap_or(api_server::DEFAULT_SSE_KEEPALIVE),
    })
}

/// `gateway.api_server.KEY` as a positive number, if set.
fn api_server_number(config: &Config, key: &str) -> Result<Option<f64>, CliError> {
    match config.raw.pointer(&format!("/gateway/api_server/{key}")) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|n| n.is_finite() && *n > 0.0)
            .map(Some)
            .ok_or_else(|| {
                CliError::config(format!(
                    "{}: gateway.api_server.{key} must be a positive number",
                    config.path.display()
                ))
            }),
    }
}

/// `gateway.api_server.{max_connections, header_timeout, body_timeout}` (timeouts in seconds).
fn connection_limits(config: &Config) -> Result<ConnectionLimits, CliError> {
    let mut limits = ConnectionLimits::default();
    let number = |key: &str| api_server_number(config, key);
    if let Some(n) = number("max_connections")? {
        limits.max_connections = (n as usize).max(1);
    }
    if let Some(secs) = number("header_timeout")? {
        limits.header_timeout = Duration::from_secs_f64(secs.min(86_400.0));
    }
    if let Some(secs) = number("body_timeout")? {
        limits.body_timeout = Duration::from_secs_f64(secs.min(86_400.0));
    }
    Ok(limits)
}

/// One request, one session of the gateway's runtime, recorded with source `api`: a new stored
/// session, or the one the request continues. The client's system text becomes part of the
/// session's system prompt. Approval prompts go to the request's approver (a run's client),
/// else nobody is asked (the unattended rules).
struct AgentRunner {
    runtime: Runtime,
    spec: SessionSpec,
}

#[async_trait::async_trait]
impl TurnRunner for AgentRunner {
    async fn run(
        &self,
        input: TurnInput,
        events: Arc<dyn EventSink>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, RunnerError> {
        let spec = SessionSpec {
            instructions: input.system.filter(|s| !s.trim().is_empty()),
            // A `model_routes` alias: that route's model (and provider, base URL) for this turn.
            model: match &input.route {
                Some(route) => hermes_llm::Overrides {
                    provider: route.provider.clone(),
                    model: Some(route.model.clone()),
                    base_url: route.base_url.clone(),
                },
                None => self.spec.model.clone(),
            },
            resume: match &input.session {
                Some(id) => Resume::Session(id.clone()),
                None => Resume::New,
            },
            memory_scope: input.memory_scope.clone(),
            ..self.spec.clone()
        };
        let interaction: Arc<dyn hermes_tools::Interaction> = match input.approver {
            Some(approver) => approver.0,
            None => Arc::new(Unattended),
        };
        let mut session =
            self.runtime
                .open_session(spec, interaction)
                .await
                .map_err(|e| match (e, &input.session) {
                    (SessionError::Store(StoreError::SessionNotFound(_)), Some(id)) => {
                        RunnerError::SessionNotFound(id.clone())
                    }
                    (e, _) => RunnerError::Setup(e.to_string()),
                })?;
        if let Some(history) = input.history {
            session.continue_from(history);
        }
        if !input.tools.is_empty() {
            session.set_client_tools(input.tools);
        }
        let report = if input.tool_results.is_empty() {
            session
                .turn_with_images(&input.user, input.images, events.as_ref(), cancel)
                .await
        } else {
            session
                .continue_with_tool_results(input.tool_results, events.as_ref(), cancel)
                .await
        };
        let session_id = session.session_id();
        let conversation = session.history().to_vec();
        // An API client has no place for notices; the review runs on its own task and never
        // holds the response back.
        drop(session.start_review(Arc::new(|_: &str| {})));
        session.close().await;
        Ok(TurnOutcome {
            final_text: report.final_text,
            end: report.end,
            usage: report.usage,
            session_id: Some(session_id),
            conversation,
            added: report.added,
            client_calls: report.client_calls,
        })
    }
}
