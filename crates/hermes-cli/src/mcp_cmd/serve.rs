//! `hermes mcp serve [--http [--port N] [--key KEY]]`: Hermes as an MCP server
//! ([`hermes_mcp::serve`]) for other MCP clients (Claude Desktop, Cursor, agents). Stdio by
//! default; `--http` serves Streamable HTTP at `http://127.0.0.1:PORT/mcp` (the port is the
//! first line on stdout, so `--port 0` can pick a free one), with a bearer key from `--key`
//! or `HERMES_MCP_SERVE_KEY`. Ctrl-C or SIGTERM stops it. Live messaging answers that the
//! gateway is not running until the gateway provides its bridge.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use hermes_mcp::serve::{HermesServer, NoGateway};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;

/// The port `--http` listens on unless `--port` says otherwise (the API server's plus one).
const DEFAULT_PORT: u16 = 8643;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP on 127.0.0.1 instead of stdio.
    #[arg(long)]
    pub http: bool,
    /// The port of `--http` (0: a free one).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// A bearer key every HTTP request must carry (default: $HERMES_MCP_SERVE_KEY).
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
}

pub fn run(common: &CommonArgs, args: &ServeArgs) -> Result<ExitCode, CliError> {
    let hermes = crate::session::runtime(common)?;
    let common = CommonArgs {
        resume: None,
        continue_last: false,
        ..common.clone()
    };
    let spec = common.spec(
        hermes_runtime::Platform::Gateway("mcp".into()),
        crate::session::working_dir(hermes.config())?,
    );
    let env = hermes.env().clone();
    let server = HermesServer::new(
        hermes.home().root(),
        Arc::new(NoGateway),
        Arc::new(super::chat::RuntimeChat {
            runtime: hermes.clone(),
            spec,
        }),
    )
    .with_store(hermes.store_location().clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(format!("cannot start the async runtime: {e}")))?;
    if !args.http {
        runtime
            .block_on(server.serve_stdio())
            .map_err(|e| CliError::runtime(e.to_string()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let key = args
        .key
        .clone()
        .or_else(|| env.var("HERMES_MCP_SERVE_KEY"))
        .filter(|k| !k.trim().is_empty());
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
            .await
            .map_err(|e| {
                CliError::config(format!("cannot listen on 127.0.0.1:{}: {e}", args.port))
            })?;
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(args.port);
        println!("{port}");
        eprintln!(
            "hermes: MCP server on http://127.0.0.1:{port}/mcp{}",
            if key.is_some() {
                " (bearer key required)"
            } else {
                ""
            }
        );
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            stop_signal().await;
            stop.cancel();
        });
        server
            .serve_http(listener, key, shutdown)
            .await
            .map_err(|e| CliError::runtime(e.to_string()))
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
