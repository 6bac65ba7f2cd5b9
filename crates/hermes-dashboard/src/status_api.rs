//! The status routes: `/api/status` (version, home, whether a gateway runs for this home and
//! what its state file says, kanban and cron counts), `/api/mcp/servers` (the `mcp_servers` of
//! config.yaml as hermes-mcp reads them; no server is started or contacted) and
//! `/api/messaging/platforms` (the chat platforms config.yaml and `.env` enable, each with
//! whether it can start and, while a gateway runs, its live state: what `hermes gateway
//! status` shows).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use hermes_gateway::platform::{BuiltAdapters, build_adapters};
use hermes_kanban::{Board, BoardPaths, ProcessEnv};
use serde_json::{Value, json};

use crate::App;
use crate::reply::{ApiError, ApiResult, blocking};

fn load(app: &App) -> Result<(hermes_config::Config, hermes_config::Environment), ApiError> {
    hermes_config::load(&app.home).map_err(|e| ApiError::internal(format!("config: {e}")))
}

/// The gateway's state file and pid, as `hermes gateway status` reads them.
fn gateway(app: &App) -> (Option<Value>, Option<u32>) {
    hermes_gateway::chat::state::read(app.home.root())
}

/// `GET /api/status`.
pub(crate) async fn status(State(app): State<Arc<App>>) -> ApiResult {
    let answer = blocking(move || {
        let (state, pid) = gateway(&app);
        let running = pid.is_some();
        let platforms = state
            .as_ref()
            .and_then(|s| s.get("platforms").cloned())
            .filter(|_| running)
            .unwrap_or(Value::Array(Vec::new()));
        let kanban = BoardPaths::resolve(
            &hermes_kanban::kanban_root(app.home.root()),
            None,
            &ProcessEnv,
        )
        .ok()
        .filter(|p| p.db.is_file())
        .and_then(|p| Board::open(p).ok())
        .and_then(|b| b.stats().ok())
        .map(|stats| {
            stats
                .into_iter()
                .map(|(status, n)| (status, json!(n)))
                .collect::<serde_json::Map<String, Value>>()
        })
        .unwrap_or_default();
        let cron_jobs = load(&app).ok().and_then(|(config, env)| {
            let (store, _) = hermes_runtime::cron::open_store(&app.home, &config, &env);
            store.list().ok().map(|jobs| jobs.len())
        });
        Ok(json!({
            "version": env!("CARGO_PKG_VERSION"),
            "home": app.home.root().display().to_string(),
            "config_path": app.home.config_path().display().to_string(),
            "gateway_running": running,
            "gateway_pid": pid,
            "gateway_state": if running { "running" } else { "stopped" },
            "gateway_platforms": platforms,
            "gateway_started_at": state.as_ref().and_then(|s| s.get("started_at").cloned()),
            "api_server": state.as_ref().and_then(|s| s.get("api_server").cloned()),
            "kanban": kanban,
            "cron_jobs": cron_jobs,
            "auth_required": true,
        }))
    })
    .await?;
    Ok(Json(answer))
}

/// `GET /api/mcp/servers`: `{"servers": [{name, transport, enabled, toolset, include,
/// exclude, timeout, connect_timeout}], "warnings"}`.
pub(crate) async fn mcp_servers(State(app): State<Arc<App>>) -> ApiResult {
    let answer = blocking(move || {
        let (config, _) = load(&app)?;
        let (servers, warnings) = hermes_mcp::parse_servers(&config.raw);
        let servers: Vec<Value> = servers
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "transport": s.transport_label(),
                    "enabled": s.enabled,
                    "toolset": s.toolset(),
                    "include": s.include,
                    "exclude": s.exclude,
                    "timeout": s.timeout.as_secs(),
                    "connect_timeout": s.connect_timeout.as_secs(),
                })
            })
            .collect();
        Ok(json!({"servers": servers, "warnings": warnings}))
    })
    .await?;
    Ok(Json(answer))
}

/// `GET /api/messaging/platforms`: `{"gateway_running", "platforms": [{name, configured,
/// error, state, received, sent, reconnects, last_error}], "warnings"}`.
pub(crate) async fn platforms(State(app): State<Arc<App>>) -> ApiResult {
    let answer = blocking(move || {
        let (config, env) = load(&app)?;
        let BuiltAdapters {
            adapters,
            errors,
            warnings,
            ..
        } = build_adapters(&config, &env);
        let (state, pid) = gateway(&app);
        let live: Vec<Value> = state
            .as_ref()
            .filter(|_| pid.is_some())
            .and_then(|s| s.get("platforms"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let live_of = |name: &str| live.iter().find(|p| p["name"].as_str() == Some(name));
        let mut out: Vec<Value> = Vec::new();
        for a in &adapters {
            let l = live_of(a.name());
            out.push(json!({
                "name": a.name(),
                "configured": true,
                "error": Value::Null,
                "state": l.map_or(json!(if pid.is_some() { "not running" } else { "ready to start" }), |l| l["state"].clone()),
                "received": l.map_or(Value::Null, |l| l["received"].clone()),
                "sent": l.map_or(Value::Null, |l| l["sent"].clone()),
                "reconnects": l.map_or(Value::Null, |l| l["reconnects"].clone()),
                "last_error": l.map_or(Value::Null, |l| l["last_error"].clone()),
            }));
        }
        for e in &errors {
            out.push(json!({
                "name": e.platform(),
                "configured": true,
                "error": e.to_string(),
                "state": "cannot start",
                "received": Value::Null,
                "sent": Value::Null,
                "reconnects": Value::Null,
                "last_error": Value::Null,
            }));
        }
        Ok(json!({"gateway_running": pid.is_some(), "platforms": out, "warnings": warnings}))
    })
    .await?;
    Ok(Json(answer))
}
