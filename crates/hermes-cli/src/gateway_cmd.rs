//! `hermes gateway [run]`: the gateway in the foreground, one long-lived process with one
//! [`Runtime`] (providers, MCP servers and the store writer built once and shared): the
//! OpenAI-compatible API server (each request one turn of a fresh session: platform `api`,
//! unattended approvals), every configured chat platform (Telegram, Discord, Slack, webhooks:
//! one session per chat, `hermes_gateway::chat`), the cron scheduler with delivery to chats,
//! and the state file `hermes gateway status` reads. Ctrl-C or SIGTERM stops it: turns in
//! flight are interrupted and recorded, exit 0.
//!
//! Settings, as the Python Hermes reads them: `--host`/`--port`, else `API_SERVER_HOST` /
//! `API_SERVER_PORT`, else `platforms.api_server.extra.host|port` (or without `extra`, or under
//! `gateway.platforms`), else 127.0.0.1:8642; the key from `API_SERVER_KEY` (environment or
//! .env) or `platforms.api_server.extra.key`; the concurrency limit from
//! `gateway.api_server.max_concurrent_runs` (default 10, 0: none).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use hermes_config::{Config, Environment};
use hermes_core::EventSink;
use hermes_gateway::api_server::{
    self, ApiServer, ApiServerConfig, RunnerError, TurnInput, TurnOutcome, TurnRunner,
};
use hermes_gateway::chat::{self, ChatGateway};
use hermes_gateway::platform::{BuiltAdapters, build_adapters};
use hermes_protocol::Message;
use hermes_runtime::{Platform, Runtime, SessionSpec, Unattended};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// `run` (the default): run the gateway in the foreground.
    #[arg(value_parser = ["run"])]
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
    let common = CommonArgs {
        resume: None,
        continue_last: false,
        ..common.merged(&args.common)
    };
    let runtime = crate::session::runtime(&common)?;
    let (home, config, env) = (runtime.home(), runtime.config(), runtime.env());
    let server_config = server_config(args, config, env, home.profile_name())?;
    api_server::check_bind(&server_config.host, server_config.key.as_deref())
        .map_err(|e| CliError::config(e.to_string()))?;
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
        background.push(tokio::spawn(chat::state::keep_written(
            gateway.clone(),
            home.root().to_path_buf(),
            Some(format!("http://{addr}/v1")),
            shutdown.clone(),
        )));
    }
    let delivery = Arc::new(chat::delivery::CronDelivery::new(directory, &config.raw));
    background.push(tokio::spawn(chat::scheduler::run(
        runtime.clone(),
        spec,
        delivery,
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

fn spawn_signal_handler(shutdown: CancellationToken) {
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
    profile: Option<String>,
) -> Result<ApiServerConfig, CliError> {
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
    })
}

/// One request, one fresh session of the gateway's runtime (nobody to ask for approvals),
/// recorded with source `api`.
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
        let mut session = self
            .runtime
            .open_session(self.spec.clone(), Arc::new(Unattended))
            .await
            .map_err(|e| RunnerError {
                message: e.to_string(),
            })?;
        let mut history = Vec::with_capacity(input.history.len() + 1);
        // The request's system messages come first, after the agent's own system prompt.
        if let Some(system) = input.system.filter(|s| !s.trim().is_empty()) {
            history.push(Message::system(system));
        }
        history.extend(input.history);
        session.continue_from(history);
        let report = session.turn(&input.user, events.as_ref(), cancel).await;
        let session_id = session.session_id();
        session.close().await;
        Ok(TurnOutcome {
            final_text: report.final_text,
            end: report.end,
            usage: report.usage,
            session_id: Some(session_id),
        })
    }
}
