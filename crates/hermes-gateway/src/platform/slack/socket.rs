//! One Socket Mode connection (<https://docs.slack.dev/apis/events-api/using-socket-mode>):
//! `apps.connections.open` with the app-level token gives a single-use `wss` URL; Slack greets
//! with `hello`, then sends envelopes. Each envelope is handed to the core first and then
//! acknowledged with its `envelope_id`, so an envelope lost with the connection is sent again
//! by Slack (and recognised as already delivered when it was). `disconnect` asks for a fresh
//! connection, which is opened at once.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_util::sync::CancellationToken;

use super::events::Converter;
use super::web::Token;
use crate::platform::deliver;
use crate::platform::error::PlatformError;
use crate::platform::status::StatusCell;
use crate::platform::types::{ConnectionState, InboundEvent};
use crate::platform::ws;

const CONNECT_DEADLINE: Duration = Duration::from_secs(30);
const HELLO_DEADLINE: Duration = Duration::from_secs(30);
/// We ping this often; Slack's pong (or anything else) must come within `SILENCE_LIMIT`.
const PING_EVERY: Duration = Duration::from_secs(20);
const SILENCE_LIMIT: Duration = Duration::from_secs(60);

pub(crate) enum End {
    Shutdown,
    /// Slack asked for a new connection (`disconnect`): reconnect right away.
    Refresh(String),
    Lost(String),
    Fatal(PlatformError),
}

pub(crate) async fn connect(
    conv: &Converter<'_>,
    inbound: &mpsc::Sender<InboundEvent>,
    status: &StatusCell,
    shutdown: &CancellationToken,
) -> End {
    let url = match conv
        .web
        .call("apps.connections.open", &json!({}), Token::App)
        .await
    {
        Ok(v) => match v["url"].as_str() {
            Some(u) => u.to_string(),
            None => return End::Lost("apps.connections.open gave no url".into()),
        },
        Err(e @ PlatformError::Unauthorized { .. }) => return End::Fatal(e),
        Err(e) => return End::Lost(format!("apps.connections.open: {e}")),
    };
    let mut socket = match ws::connect(&url, CONNECT_DEADLINE).await {
        Ok(s) => s,
        Err(e) => return End::Lost(e),
    };
    let mut greeted = false;
    let hello_by = tokio::time::Instant::now() + HELLO_DEADLINE;
    let mut heard = tokio::time::Instant::now();
    let mut next_ping = heard + PING_EVERY;
    loop {
        let deadline = if greeted {
            heard + SILENCE_LIMIT
        } else {
            hello_by
        };
        let frame = tokio::select! {
            _ = shutdown.cancelled() => {
                let _ = socket.close(None).await;
                return End::Shutdown;
            }
            _ = tokio::time::sleep_until(deadline) => {
                return End::Lost(if greeted { "no traffic from Slack".into() } else { "no hello from Slack".into() });
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
                return End::Lost("Slack closed the connection".into());
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return End::Lost(format!("Socket Mode connection lost: {e}")),
        };
        let Ok(msg) = serde_json::from_str::<Value>(&text) else {
            status.error("unreadable Socket Mode message");
            continue;
        };
        match msg["type"].as_str() {
            Some("hello") => {
                greeted = true;
                status.set_state(ConnectionState::Connected);
                continue;
            }
            Some("disconnect") => {
                let reason = msg["reason"].as_str().unwrap_or("unknown").to_string();
                let _ = socket.close(None).await;
                return End::Refresh(format!("Slack asked to reconnect ({reason})"));
            }
            _ => {}
        }
        let Some(envelope_id) = msg["envelope_id"].as_str() else {
            continue;
        };
        let kind = msg["type"].as_str().unwrap_or_default();
        if let Some(event) = conv.convert(kind, &msg["payload"]).await {
            if !deliver(inbound, event, shutdown).await {
                // Not acknowledged: Slack sends it again to the next connection.
                return End::Shutdown;
            }
            status.add_received();
        }
        let ack = json!({"envelope_id": envelope_id}).to_string();
        if socket.send(WsMessage::Text(ack.into())).await.is_err() {
            return End::Lost("could not acknowledge an envelope".into());
        }
    }
}
