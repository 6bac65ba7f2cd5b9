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

/// The state of the process now (`chats`: its chat gateway, when platforms are configured).
pub async fn snapshot(
    chats: Option<&ChatGateway>,
    started: SystemTime,
    api: Option<&str>,
) -> Value {
    let mut platforms = Vec::new();
    let mut live_chats = 0;
    for adapter in chats.into_iter().flat_map(ChatGateway::adapters) {
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
    if let Some(gateway) = chats {
        live_chats = gateway.live_chats().await;
    }
    json!({
        "pid": std::process::id(),
        "started_at": secs(started),
        "updated_at": secs(SystemTime::now()),
        "api_server": api,
        "platforms": platforms,
        "live_chats": live_chats,
    })
}

/// Writes the state file every 5 s (and the pid file once) until `shutdown`; removes both
/// after.
pub async fn keep_written(
    chats: Option<Arc<ChatGateway>>,
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
        let state = snapshot(chats.as_deref(), started, api.as_deref()).await;
        let text = serde_json::to_string_pretty(&state).unwrap_or_default();
        let _ = hermes_config::atomic_write(&home.join(STATE_FILE), text.as_bytes());
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }
    let _ = std::fs::remove_file(home.join(PID_FILE));
    let mut last = snapshot(chats.as_deref(), started, api.as_deref()).await;
    last["stopped_at"] = json!(secs(SystemTime::now()));
    let _ = hermes_config::atomic_write(
        &home.join(STATE_FILE),
        serde_json::to_string_pretty(&last)
            .unwrap_or_default()
            .as_bytes(),
    );
}

/// The state file of `home`, and the pid of its gateway when that is running (the pid file
/// names a live process; a gateway killed without its cleanup leaves a stale one).
pub fn read(home: &Path) -> (Option<Value>, Option<u32>) {
    let state = std::fs::read_to_string(home.join(STATE_FILE))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    (state, running_pid(home))
}

/// The pid in `gateway.pid` when that process is alive and is a gateway of this home.
pub fn running_pid(home: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(home.join(PID_FILE)).ok()?;
    let pid: u32 = text.trim().parse().ok()?;
    if pid == std::process::id() {
        return None;
    }
    if !alive(pid) {
        return None;
    }
    // A recycled pid belongs to some other program: only a process whose command line
    // mentions `gateway` counts.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cmdline = String::from_utf8_lossy(&cmdline);
    cmdline.contains("gateway").then_some(pid)
}

/// Whether process `pid` is running: it exists and has not exited (an exited process its
/// parent has not reaped yet is a zombie, state `Z`, and counts as gone).
pub fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state ...`: comm may hold spaces and parentheses, the state follows the last `)`.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state != "Z" && state != "X")
}
