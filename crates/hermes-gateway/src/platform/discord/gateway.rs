//! One connection to the Discord gateway (<https://discord.com/developers/docs/events/gateway>):
//! HELLO gives the heartbeat interval; the first HEARTBEAT goes after `interval × jitter`, the
//! next ones every interval carrying the last sequence number, and a missing HEARTBEAT_ACK
//! marks the connection dead (zombied) so it is dropped and resumed. A new session sends
//! IDENTIFY (token, intents, properties); a known one RESUMEs on `resume_gateway_url` with its
//! `session_id` and `seq`, after which Discord replays what was missed. RECONNECT, a dropped
//! socket and resumable close codes resume; INVALID_SESSION (not resumable) and close codes
//! 4007/4009 start a new session; 4004 and the other fatal codes stop retrying fast.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_util::sync::CancellationToken;

use super::settings::{DiscordSettings, PLATFORM};
use crate::platform::error::PlatformError;
use crate::platform::status::StatusCell;
use crate::platform::types::ConnectionState;
use crate::platform::ws;

/// The resumable state of a gateway session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Session {
    pub id: String,
    /// The last sequence number received.
    pub seq: Option<u64>,
    pub resume_url: String,
}

/// An event for the processor.
#[derive(Debug)]
pub(crate) struct Dispatch {
    pub t: String,
    pub d: Value,
}

/// How a connection ended.
#[derive(Debug)]
pub(crate) enum End {
    Shutdown,
    /// Reconnect and RESUME (the session is kept).
    Resume(String),
    /// Reconnect with a new session (IDENTIFY).
    Reidentify(String),
    /// Retrying will not help (bad token, disallowed intents).
    Fatal(PlatformError),
}

const HELLO_DEADLINE: Duration = Duration::from_secs(20);
const CONNECT_DEADLINE: Duration = Duration::from_secs(30);

/// `url` with the version and encoding Discord asks for.
fn versioned(url: &str) -> String {
    format!("{}/?v=10&encoding=json", url.trim_end_matches('/'))
}

fn identify(settings: &DiscordSettings) -> Value {
    json!({
        "op": 2,
        "d": {
            "token": settings.token,
            "intents": settings.intents,
            "properties": {"os": std::env::consts::OS, "browser": "hermes", "device": "hermes"},
        }
    })
}

fn close_code_end(code: u16, reason: &str) -> End {
    let what = format!("gateway closed the connection: {code} {reason}");
    match code {
        4004 => End::Fatal(PlatformError::Unauthorized {
            platform: PLATFORM,
            hint: "DISCORD_BOT_TOKEN",
            message: what,
        }),
        4010..=4014 => End::Fatal(PlatformError::Api {
            platform: PLATFORM,
            status: code,
            message: format!(
                "{what} (4013/4014: enable the Message Content intent for the bot in the Developer Portal)"
            ),
        }),
        4007 | 4009 => End::Reidentify(what),
        _ => End::Resume(what),
    }
}

/// Runs one connection until it ends. `session` is updated as READY and dispatches arrive;
/// events go to `events` in order.
pub(crate) async fn connect(
    gateway_url: &str,
    settings: &DiscordSettings,
    session: &mut Option<Session>,
    events: &mpsc::Sender<Dispatch>,
    status: &StatusCell,
    shutdown: &CancellationToken,
) -> End {
    let url = match session {
        Some(s) => versioned(&s.resume_url),
        None => versioned(gateway_url),
    };
    let mut socket = match ws::connect(&url, CONNECT_DEADLINE).await {
        Ok(s) => s,
        Err(e) => return End::Resume(e),
    };

    // HELLO first.
    let interval = match tokio::time::timeout(HELLO_DEADLINE, socket.next()).await {
        Ok(Some(Ok(WsMessage::Text(text)))) => {
            let hello: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            match hello["d"]["heartbeat_interval"].as_u64() {
                Some(ms) if hello["op"] == json!(10) && ms > 0 => Duration::from_millis(ms),
                _ => {
                    return End::Resume(format!(
                        "expected HELLO, got {}",
                        text.chars().take(200).collect::<String>()
                    ));
                }
            }
        }
        Ok(Some(Ok(WsMessage::Close(frame)))) => {
            let (code, reason) = frame
                .map(|f| (u16::from(f.code), f.reason.to_string()))
                .unwrap_or((1000, String::new()));
            return close_code_end(code, &reason);
        }
        Ok(_) => return End::Resume("the gateway closed before HELLO".into()),
        Err(_) => return End::Resume("no HELLO from the gateway".into()),
    };

    let opening = match session {
        Some(s) => {
            json!({"op": 6, "d": {"token": settings.token, "session_id": s.id, "seq": s.seq}})
        }
        None => identify(settings),
    };
    if socket
        .send(WsMessage::Text(opening.to_string().into()))
        .await
        .is_err()
    {
        return End::Resume("could not send IDENTIFY/RESUME".into());
    }

    let mut next_beat = Instant::now() + interval.mul_f64(fastrand::f64());
    let mut acked = true;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => {
                // 1000 ends the session on Discord's side: right for a shutdown.
                let _ = socket.close(None).await;
                return End::Shutdown;
            }
            _ = tokio::time::sleep_until(next_beat) => {
                if !acked {
                    return End::Resume("no HEARTBEAT_ACK since the last heartbeat".into());
                }
                let seq = session.as_ref().and_then(|s| s.seq);
                if socket.send(WsMessage::Text(json!({"op": 1, "d": seq}).to_string().into())).await.is_err() {
                    return End::Resume("heartbeat send failed".into());
                }
                acked = false;
                next_beat += interval;
            }
            frame = socket.next() => {
                let text = match frame {
                    Some(Ok(WsMessage::Text(t))) => t,
                    Some(Ok(WsMessage::Close(frame))) => {
                        let (code, reason) = frame
                            .map(|f| (u16::from(f.code), f.reason.to_string()))
                            .unwrap_or((1006, String::new()));
                        return close_code_end(code, &reason);
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => return End::Resume(format!("gateway connection lost: {e}")),
                    None => return End::Resume("gateway connection closed".into()),
                };
                let payload: Value = match serde_json::from_str(&text) {
                    Ok(v) => v,
                    Err(e) => {
                        status.error(format!("unreadable gateway payload: {e}"));
                        continue;
                    }
                };
                match payload["op"].as_u64() {
                    Some(0) => {
                        let t = payload["t"].as_str().unwrap_or_default().to_string();
                        let d = payload["d"].clone();
                        let s = payload["s"].as_u64();
                        match t.as_str() {
                            "READY" => {
                                let (Some(id), Some(url)) = (d["session_id"].as_str(), d["resume_gateway_url"].as_str()) else {
                                    return End::Reidentify("READY without session_id".into());
                                };
                                *session = Some(Session { id: id.to_string(), seq: s, resume_url: url.to_string() });
                                status.set_state(ConnectionState::Connected);
                            }
                            "RESUMED" => status.set_state(ConnectionState::Connected),
                            _ => {}
                        }
                        // Queue first, then count the event as received (what RESUME asks for).
                        let queued = tokio::select! {
                            _ = shutdown.cancelled() => return End::Shutdown,
                            r = events.send(Dispatch { t, d }) => r.is_ok(),
                        };
                        if !queued {
                            return End::Shutdown;
                        }
                        if let (Some(sess), Some(s)) = (session.as_mut(), s) {
                            sess.seq = Some(sess.seq.map_or(s, |old| old.max(s)));
                        }
                    }
                    Some(1) => {
                        // Discord asks for a heartbeat now.
                        let seq = session.as_ref().and_then(|s| s.seq);
                        if socket.send(WsMessage::Text(json!({"op": 1, "d": seq}).to_string().into())).await.is_err() {
                            return End::Resume("heartbeat send failed".into());
                        }
                    }
                    Some(7) => return End::Resume("Discord asked to reconnect (RECONNECT)".into()),
                    Some(9) => {
                        if payload["d"] == json!(true) {
                            return End::Resume("INVALID_SESSION (resumable)".into());
                        }
                        *session = None;
                        status.error("INVALID_SESSION: starting a new session");
                        // Discord asks for a pause of 1–5 s before identifying again.
                        let pause = Duration::from_millis(1000 + fastrand::u64(..4000));
                        tokio::select! {
                            _ = shutdown.cancelled() => return End::Shutdown,
                            _ = tokio::time::sleep(pause) => {}
                        }
                        if socket.send(WsMessage::Text(identify(settings).to_string().into())).await.is_err() {
                            return End::Reidentify("could not send IDENTIFY".into());
                        }
                        // The pause swallowed heartbeat time: start the rhythm again.
                        acked = true;
                        next_beat = Instant::now() + interval;
                    }
                    Some(11) => acked = true,
                    _ => {}
                }
            }
        }
    }
}
