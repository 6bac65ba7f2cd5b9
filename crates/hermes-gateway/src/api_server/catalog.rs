//! What the server offers, for clients that discover instead of asking the model:
//! `GET /v1/skills` (installed skills the API's sessions may load: name, description,
//! category), `GET /v1/toolsets` (each toolset with its tools, whether API sessions get it and
//! whether its tools can run here), and `GET /health/detailed` (the gateway's platforms and
//! their state, uptime, turns in flight, live chats, versions).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use hermes_core::skills::{Library, SkillSettings};
use hermes_runtime::Platform;
use serde_json::{Map, Value, json};

use super::{Shared, check_auth, error_response, json_response};

fn unavailable(what: &str) -> Response {
    error_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("Failed to enumerate {what}"),
        "server_error",
        None,
    )
}

/// `GET /v1/skills`: sorted by category, then name; disabled skills and those for another
/// platform or environment are left out (the agent would not load them).
pub(crate) async fn skills(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let Some(runtime) = s.config.backing.runtime.clone() else {
        return unavailable("skills");
    };
    let listed = tokio::task::spawn_blocking(move || {
        let home = runtime.home();
        let library = Library::for_home(
            home,
            SkillSettings::from_config(runtime.config(), home.root(), Platform::Api.name()),
        );
        library
            .load()
            .active()
            .map(|skill| {
                json!({
                    "name": skill.name,
                    "description": skill.description,
                    "category": skill.category,
                })
            })
            .collect::<Vec<_>>()
    })
    .await;
    match listed {
        Ok(data) => json_response(StatusCode::OK, json!({"object": "list", "data": data})),
        Err(_) => unavailable("skills"),
    }
}

/// `GET /v1/toolsets`: every toolset of this build in catalogue order, `enabled` when the
/// API's sessions get it (`platform_toolsets.api`, else `toolsets`), `configured` when its
/// tools can run here (their keys are set, their programs found).
pub(crate) async fn toolsets(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let Some(runtime) = s.config.backing.runtime.clone() else {
        return unavailable("toolsets");
    };
    let listed = tokio::task::spawn_blocking(move || {
        let every = hermes_runtime::catalogue(&runtime, &Platform::Api);
        let (chosen, _) =
            hermes_runtime::tools::configured_toolsets(None, &Platform::Api, runtime.config());
        let selected = every.select(&chosen).map(|(r, _)| r).ok();
        let mut order: Vec<&str> = Vec::new();
        for name in every.names() {
            if let Some(t) = every.get(name)
                && !order.contains(&t.toolset())
            {
                order.push(t.toolset());
            }
        }
        order
            .into_iter()
            .map(|toolset| {
                let mut tools: Vec<&str> = every
                    .names()
                    .into_iter()
                    .filter(|n| every.get(n).is_some_and(|t| t.toolset() == toolset))
                    .collect();
                let enabled = selected
                    .as_ref()
                    .is_some_and(|r| tools.iter().any(|n| r.get(n).is_some()));
                let configured = tools.iter().all(|n| {
                    every
                        .get(n)
                        .is_some_and(|t| every.is_available(t.as_ref(), runtime.env()))
                });
                tools.sort_unstable();
                json!({
                    "name": toolset,
                    "label": toolset,
                    "description": "",
                    "enabled": enabled,
                    "configured": configured,
                    "tools": tools,
                })
            })
            .collect::<Vec<_>>()
    })
    .await;
    match listed {
        Ok(data) => json_response(
            StatusCode::OK,
            json!({"object": "list", "platform": "api_server", "data": data}),
        ),
        Err(_) => unavailable("toolsets"),
    }
}

fn secs(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// `GET /health/detailed`: Python's fields that this gateway truly has. `platforms` maps each
/// chat platform to its connection state; `active_agents` counts the turns running now (API
/// requests, runs, chats answered through this server); the gateway answering is `running`.
pub(crate) async fn health_detailed(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let mut platforms = Map::new();
    let mut live_chats = 0;
    if let Some(chats) = &s.config.backing.chats {
        for adapter in chats.adapters() {
            let st = adapter.status();
            platforms.insert(
                adapter.name().to_string(),
                json!({
                    "state": st.state.as_str(),
                    "since": secs(st.since),
                    "received": st.received,
                    "sent": st.sent,
                    "reconnects": st.reconnects,
                    "error_message": st.last_error.as_ref().map(|(_, e)| e.clone()),
                }),
            );
        }
        live_chats = chats.live_chats().await;
    }
    platforms.insert("api_server".into(), json!({"state": "connected"}));
    let active = s.active.load(Ordering::Relaxed);
    let now = SystemTime::now();
    let uptime = now
        .duration_since(s.started)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    json_response(
        StatusCode::OK,
        json!({
            "status": "ok",
            "platform": "hermes-agent",
            "version": s.config.version,
            "gateway_state": "running",
            "platforms": Value::Object(platforms),
            "active_agents": active,
            "active_runs": s.runs.running(),
            "live_chats": live_chats,
            "gateway_busy": active > 0,
            "gateway_drainable": true,
            "exit_reason": null,
            "started_at": secs(s.started),
            "uptime_seconds": uptime,
            "updated_at": secs(now),
            "pid": std::process::id(),
        }),
    )
}
