//! One WebSocket connection (<https://developers.mattermost.com/api-documentation/#/#websocket>):
//! `GET /api/v4/websocket`, then `authentication_challenge` with the token as the first
//! message (seq 1); the server answers `{"status": "OK", "seq_reply": 1}` (`FAIL` for a bad
//! token) and greets with a `hello` event carrying a `connection_id`. Events follow, each with
//! a `seq`; `posted` ones go to the core. Reconnecting with `connection_id` and the next
//! `sequence_number` gets the events missed meanwhile replayed (reliable WebSockets). We
//! ping every 30 s (the Python adapter's heartbeat) and give the connection up after 90 s
//! without any frame.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_util::sync::CancellationToken;

use super::events::Converter;
use super::settings::PLATFORM;
use crate::platform::deliver;
use crate::platform::error::PlatformError;
use crate::platform::status::StatusCell;
use crate::platform::types::{ConnectionState, InboundEvent};
use crate::platform::ws;

const CONNECT_DEADLINE: Duration = Duration::from_secs(30);
const AUTH_DEADLINE: Duration = Duration::from_secs(30);
const PING_EVERY: Duration = Duration::from_secs(30);
const SILENCE_LIMIT: Duration = Duration::from_secs(90);

pub(crate) enum End {
    Shutdown,
    Lost(String),
    Fatal(PlatformError),
}

pub(crate) async fn connect(
    conv: &Converter<'_>,
    token: &str,
    inbound: &mpsc::Sender<InboundEvent>,
    status: &StatusCell,
    shutdown: &CancellationToken,
) -> End {
    // Reliable WebSockets: coming back with the last connection id and the next seq, the
    // server replays the events we missed while away (from its queue of recent ones).
    let url = match conv.memory.resume_query() {
        Some(query) => format!("{}?{query}", conv.settings.websocket_url()),
        None => conv.settings.websocket_url(),
    };
    let mut socket = match ws::connect(&url, CONNECT_DEADLINE).await {
        Ok(s) => s,
        Err(e) => return End::Lost(e),
    };
    let challenge = json!({
        "seq": 1,
        "action": "authentication_challenge",
        "data": {"token": token},
    });
    if socket
        .send(WsMessage::Text(challenge.to_string().into()))
        .await
        .is_err()
    {
        return End::Lost("could not send the authentication challenge".into());
    }
    let mut authenticated = false;
    let auth_by = tokio::time::Instant::now() + AUTH_DEADLINE;
    let mut heard = tokio::time::Instant::now();
    let mut next_ping = heard + PING_EVERY;
    loop {
        let deadline = if authenticated {
            heard + SILENCE_LIMIT
        } else {
            auth_by
        };
        let frame = tokio::select! {
            _ = shutdown.cancelled() => {
                let _ = socket.close(None).await;
                return End::Shutdown;
            }
            _ = tokio::time::sleep_until(deadline) => {
                return End::Lost(if authenticated {
                    "no traffic from Mattermost".into()
                } else {
                    "Mattermost did not answer the authentication challenge".into()
                });
            }
            _ = tokio::time::sleep_until(next_ping) => {
                next_ping += PING_EVERY;
                if socket.send(WsMessage::Ping(Vec::new().into())).await.is_err() {
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
                return End::Lost("Mattermost closed the connection".into());
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return End::Lost(format!("WebSocket connection lost: {e}")),
        };
        let Ok(msg) = serde_json::from_str::<Value>(&text) else {
            status.error("unreadable WebSocket message");
            continue;
        };
        if msg["seq_reply"] == json!(1) {
            if msg["status"] == json!("OK") {
                authenticated = true;
                status.set_state(ConnectionState::Connected);
                continue;
            }
            let _ = socket.close(None).await;
            return End::Fatal(PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "MATTERMOST_TOKEN",
                message: format!(
                    "the WebSocket refused the token: {}",
                    msg["error"]["message"]
                        .as_str()
                        .unwrap_or("no reason given")
                ),
            });
        }
        conv.memory.heard(&msg);
        if msg["event"] == json!("hello") {
            // Servers that authenticate from the upgrade's header greet without a reply.
            authenticated = true;
            status.set_state(ConnectionState::Connected);
            continue;
        }
        if let Some(event) = conv.convert(&msg) {
            if !deliver(inbound, event, shutdown).await {
                return End::Shutdown;
            }
            status.add_received();
        }
    }
}
