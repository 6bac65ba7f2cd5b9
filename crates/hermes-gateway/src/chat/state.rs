//! What `hermes gateway status` reads: `$HERMES_HOME/gateway_state.json`, rewritten every few
//! seconds by the running gateway (its pid, when it started, the API server's address, each
//! adapter's connection state, last error and message counts, the chats loaded) and
//! `gateway.pid`, as the Python Hermes keeps it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::ChatGateway;

pub const STATE_FILE: &str = "gateway_state.json";
pub const PID_FILE: &str = "gateway.pid";

fn secs(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The state of `gateway` now.
pub async fn snapshot(gateway: &ChatGateway, started: SystemTime, api: Option<&str>) -> Value {
    let mut platforms = Vec::new();
    for adapter in gateway.adapters() {
        let s = adapter.status();
        platforms.push(json!({
            "name": adapter.name(),
            "state": s.state.as_str(),
            "since": secs(s.since),
            "last_error": s.last_error.as_ref().map(|(t, e)| json!({"at": secs(*t), "error": e})),
            "received": s.received,
            "sent": s.sent,
            "reconnects": s.reconnects,
        }));
    }
    json!({
        "pid": std::process::id(),
        "started_at": secs(started),
        "updated_at": secs(SystemTime::now()),
        "api_server": api,
        "platforms": platforms,
        "live_chats": gateway.live_chats().await,
    })
}

/// Writes the state file every 5 s (and the pid file once) until `shutdown`; removes both
/// after.
pub async fn keep_written(
    gateway: Arc<ChatGateway>,
    home: PathBuf,
    api: Option<String>,
    shutdown: CancellationToken,
) {
    let started = SystemTime::now();
    let _ = hermes_config::atomic_write(
        &home.join(PID_FILE),
        std::process::id().to_string().as_bytes(),
    );
    loop {
        let state = snapshot(&gateway, started, api.as_deref()).await;
        let text = serde_json::to_string_pretty(&state).unwrap_or_default();
        let _ = hermes_config::atomic_write(&home.join(STATE_FILE), text.as_bytes());
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }
    let _ = std::fs::remove_file(home.join(PID_FILE));
    let mut last = snapshot(&gateway, started, api.as_deref()).await;
    last["stopped_at"] = json!(secs(SystemTime::now()));
    let _ = hermes_config::atomic_write(
        &home.join(STATE_FILE),
        serde_json::to_string_pretty(&last)
            .unwrap_or_default()
            .as_bytes(),
    );
}

/// The state file of `home`, and whether its gateway is running (its pid alive).
pub fn read(home: &Path) -> Option<(Value, bool)> {
    let text = std::fs::read_to_string(home.join(STATE_FILE)).ok()?;
    let state: Value = serde_json::from_str(&text).ok()?;
    let running = state.get("stopped_at").is_none()
        && state
            .get("pid")
            .and_then(Value::as_u64)
            .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
    Some((state, running))
}
