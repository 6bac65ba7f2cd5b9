//! One connection to Home Assistant's WebSocket API
//! (<https://developers.home-assistant.io/docs/api/websocket>): `GET /api/websocket`, the
//! server's `auth_required`, our `auth` with the access token, `auth_ok` (or `auth_invalid`:
//! a wrong token, not retried soon), then `subscribe_events` for `state_changed` and its
//! `result`. Events follow, each through the [`EventGate`]. We send HA's `ping` command every
//! 30 s and give the connection up after 90 s without any message (a `pong` counts).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_util::sync::CancellationToken;

use super::events::EventGate;
use super::settings::{HomeAssistantSettings, PLATFORM};
use crate::platform::deliver;
use crate::platform::error::PlatformError;
use crate::platform::status::StatusCell;
use crate::platform::types::{ConnectionState, InboundEvent};
use crate::platform::ws;

const CONNECT_DEADLINE: Duration = Duration::from_secs(30);
const STEP_DEADLINE: Duration = Duration::from_secs(30);
const PING_EVERY: Duration = Duration::from_secs(30);
const SILENCE_LIMIT: Duration = Duration::from_secs(90);
/// The id of our subscription (ids only have to grow within a connection).
const SUBSCRIPTION: u64 = 1;

pub(crate) enum End {
    Shutdown,
    Lost(String),
    Fatal(PlatformError),
}

/// What the connection needs from the adapter.
pub(crate) struct Link<'a> {
    pub settings: &'a HomeAssistantSettings,
    pub gate: &'a Mutex<EventGate>,
    pub convert: &'a (dyn Fn(String, String) -> InboundEvent + Send + Sync),
    pub inbound: &'a mpsc::Sender<InboundEvent>,
    pub status: &'a StatusCell,
    pub shutdown: &'a CancellationToken,
}

pub(crate) async fn connect(link: &Link<'_>) -> End {
    let mut socket = match ws::connect(&link.settings.websocket_url(), CONNECT_DEADLINE).await {
        Ok(s) => s,
        Err(e) => return End::Lost(e),
    };
    // The handshake: each step within its deadline, in order.
    macro_rules! next_json {
        ($what:expr) => {{
            let frame = tokio::select! {
                _ = link.shutdown.cancelled() => return End::Shutdown,
                f = tokio::time::timeout(STEP_DEADLINE, socket.next()) => f,
            };
            match frame {
                Ok(Some(Ok(WsMessage::Text(t)))) => match serde_json::from_str::<Value>(&t) {
                    Ok(v) => v,
                    Err(_) => return End::Lost(format!("unreadable {}", $what)),
                },
                Ok(Some(Ok(_))) => {
                    return End::Lost(format!("expected {}, got a non-text frame", $what));
                }
                Ok(Some(Err(e))) => {
                    return End::Lost(format!("WebSocket error before {}: {e}", $what));
                }
                Ok(None) => {
                    return End::Lost(format!(
                        "Home Assistant closed the connection before {}",
                        $what
                    ));
                }
                Err(_) => {
                    return End::Lost(format!("no {} within {}s", $what, STEP_DEADLINE.as_secs()));
                }
            }
        }};
    }
    let greeting = next_json!("auth_required");
    if greeting["type"] != "auth_required" {
        return End::Lost(format!("expected auth_required, got {}", greeting["type"]));
    }
    let auth = json!({"type": "auth", "access_token": link.settings.token});
    if socket
        .send(WsMessage::Text(auth.to_string().into()))
        .await
        .is_err()
    {
        return End::Lost("could not send the auth message".into());
    }
    let answer = next_json!("auth_ok");
    match answer["type"].as_str() {
        Some("auth_ok") => {}
        Some("auth_invalid") => {
            let _ = socket.close(None).await;
            return End::Fatal(PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "HASS_TOKEN",
                message: answer["message"]
                    .as_str()
                    .unwrap_or("Home Assistant refused the token")
                    .to_string(),
            });
        }
        _ => return End::Lost(format!("expected auth_ok, got {}", answer["type"])),
    }
    let subscribe =
        json!({"id": SUBSCRIPTION, "type": "subscribe_events", "event_type": "state_changed"});
    if socket
        .send(WsMessage::Text(subscribe.to_string().into()))
        .await
        .is_err()
    {
        return End::Lost("could not subscribe to state_changed".into());
    }
    let result = next_json!("the subscription's result");
    if result["id"] != json!(SUBSCRIPTION) || result["success"] != json!(true) {
        return End::Lost(format!(
            "the subscription to state_changed failed: {}",
            result["error"]["message"]
                .as_str()
                .unwrap_or("no reason given")
        ));
    }
    link.status.set_state(ConnectionState::Connected);

    let mut next_id = SUBSCRIPTION + 1;
    let mut heard = tokio::time::Instant::now();
    let mut next_ping = heard + PING_EVERY;
    loop {
        let frame = tokio::select! {
            _ = link.shutdown.cancelled() => {
                let _ = socket.close(None).await;
                return End::Shutdown;
            }
            _ = tokio::time::sleep_until(heard + SILENCE_LIMIT) => {
                return End::Lost("no traffic from Home Assistant".into());
            }
            _ = tokio::time::sleep_until(next_ping) => {
                next_ping += PING_EVERY;
                let ping = json!({"id": next_id, "type": "ping"});
                next_id += 1;
                if socket.send(WsMessage::Text(ping.to_string().into())).await.is_err() {
                    return End::Lost("ping failed".into());
                }
                continue;
            }
            f = socket.next() => f,
        };
        heard = tokio::time::Instant::now();
        let text = match frame {
            Some(Ok(WsMessage::Text(t))) => t,
            Some(Ok(WsMessage::Close(_))) | None => {
                return End::Lost("Home Assistant closed the connection".into());
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return End::Lost(format!("WebSocket connection lost: {e}")),
        };
        let Ok(msg) = serde_json::from_str::<Value>(&text) else {
            link.status.error("unreadable WebSocket message");
            continue;
        };
        if msg["type"] != "event" || msg["id"] != json!(SUBSCRIPTION) {
            continue;
        }
        let admitted = link
            .gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .admit(link.settings, &msg["event"], Instant::now());
        if let Some((entity, text)) = admitted {
            if !deliver(link.inbound, (link.convert)(entity, text), link.shutdown).await {
                return End::Shutdown;
            }
            link.status.add_received();
        }
    }
}
