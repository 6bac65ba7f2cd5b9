//! A Home Assistant double on 127.0.0.1, following its developer documentation
//! (<https://developers.home-assistant.io/docs/api/websocket>, `/docs/api/rest`):
//!
//! - WebSocket `GET /api/websocket`: `{"type": "auth_required", "ha_version"}`, then our
//!   `{"type": "auth", "access_token"}` answered `auth_ok` or `{"type": "auth_invalid",
//!   "message": "Invalid access token or password"}` (and closed); commands with ids:
//!   `subscribe_events` → `{"id", "type": "result", "success": true, "result": null}`, `ping`
//!   → `{"id", "type": "pong"}`, anything else → a result with `success: false`. Events for a
//!   subscription: `{"id", "type": "event", "event": {"event_type": "state_changed", "data":
//!   {"entity_id", "old_state", "new_state"}, "origin": "LOCAL", "time_fired"}}`
//!   ([`HomeAssistantMock::change_state`]). [`HomeAssistantMock::drop_connection`] cuts it.
//! - REST with `Authorization: Bearer <token>` (else 401 `401: Unauthorized`): `GET /api/config`
//!   (`location_name`, `version`, ...), `POST /api/services/persistent_notification/create`
//!   and `/dismiss` (recorded; answered `[]`, the changed states).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};

pub const HA_VERSION: &str = "2025.11.2";
pub const LOCATION_NAME: &str = "Test Home";

enum Outgoing {
    Text(String),
    Drop,
}

#[derive(Default)]
struct State {
    /// The live, authenticated connection and its subscription id.
    live: Option<(u64, mpsc::UnboundedSender<Outgoing>, Option<u64>)>,
    next_conn: u64,
    connections: usize,
    notifications: Vec<Value>,
    dismissed: Vec<Value>,
    pings: usize,
}

struct Shared {
    token: String,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct HaService {
    shared: Arc<Shared>,
}

impl HaService {
    fn handle(&self, req: &MockRequest) -> MockResponse {
        let authorized =
            req.header("authorization") == Some(&format!("Bearer {}", self.shared.token));
        if !authorized {
            return MockResponse::bytes(401, "text/plain", b"401: Unauthorized".to_vec());
        }
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        match (req.method.as_str(), req.path()) {
            ("GET", "/api/config") => MockResponse::json(
                200,
                &json!({"location_name": LOCATION_NAME, "version": HA_VERSION, "time_zone": "UTC",
                        "unit_system": {"temperature": "°C"}, "components": ["persistent_notification"]}),
            ),
            ("POST", "/api/services/persistent_notification/create") => {
                if !body["message"].is_string() {
                    return MockResponse::bytes(400, "text/plain", b"400: Bad Request".to_vec());
                }
                self.shared.lock().notifications.push(body);
                MockResponse::json(200, &json!([]))
            }
            ("POST", "/api/services/persistent_notification/dismiss") => {
                self.shared.lock().dismissed.push(body);
                MockResponse::json(200, &json!([]))
            }
            _ => MockResponse::bytes(404, "text/plain", b"404: Not Found".to_vec()),
        }
    }

    async fn socket(self: Arc<Self>, mut ws: WebSocketStream<TcpStream>) {
        let greeting = json!({"type": "auth_required", "ha_version": HA_VERSION});
        if ws
            .send(WsMessage::Text(greeting.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
        let first = tokio::time::timeout(Duration::from_secs(10), ws.next()).await;
        let authed = match first {
            Ok(Some(Ok(WsMessage::Text(t)))) => {
                serde_json::from_str::<Value>(&t).ok().is_some_and(|v| {
                    v["type"] == "auth"
                        && v["access_token"].as_str() == Some(self.shared.token.as_str())
                })
            }
            _ => false,
        };
        if !authed {
            let no = json!({"type": "auth_invalid", "message": "Invalid access token or password"});
            let _ = ws.send(WsMessage::Text(no.to_string().into())).await;
            let _ = ws.close(None).await;
            return;
        }
        let ok = json!({"type": "auth_ok", "ha_version": HA_VERSION});
        if ws
            .send(WsMessage::Text(ok.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<Outgoing>();
        let conn = {
            let mut st = self.shared.lock();
            st.next_conn += 1;
            st.connections += 1;
            st.live = Some((st.next_conn, tx.clone(), None));
            st.next_conn
        };
        loop {
            tokio::select! {
                out = rx.recv() => match out {
                    Some(Outgoing::Text(t)) => {
                        if ws.send(WsMessage::Text(t.into())).await.is_err() { break; }
                    }
                    Some(Outgoing::Drop) | None => break,
                },
                frame = ws.next() => match frame {
                    Some(Ok(WsMessage::Text(t))) => {
                        let Ok(cmd) = serde_json::from_str::<Value>(&t) else { continue };
                        let id = cmd["id"].clone();
                        let answer = match cmd["type"].as_str() {
                            Some("subscribe_events") => {
                                if let Some(live) = self.shared.lock().live.as_mut().filter(|l| l.0 == conn) {
                                    live.2 = id.as_u64();
                                }
                                json!({"id": id, "type": "result", "success": true, "result": null})
                            }
                            Some("ping") => {
                                self.shared.lock().pings += 1;
                                json!({"id": id, "type": "pong"})
                            }
                            _ => json!({"id": id, "type": "result", "success": false,
                                        "error": {"code": "unknown_command", "message": "Unknown command."}}),
                        };
                        if ws.send(WsMessage::Text(answer.to_string().into())).await.is_err() { break; }
                    }
                    Some(Ok(WsMessage::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                },
            }
        }
        let mut st = self.shared.lock();
        if st.live.as_ref().is_some_and(|l| l.0 == conn) {
            st.live = None;
        }
    }
}

impl Service for HaService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.handle(&req) })
    }

    fn websocket(
        self: Arc<Self>,
        _req: MockRequest,
        ws: WebSocketStream<TcpStream>,
    ) -> BoxFuture<()> {
        Box::pin(self.socket(ws))
    }
}

/// The Home Assistant double.
pub struct HomeAssistantMock {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HomeAssistantMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HomeAssistantMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl HomeAssistantMock {
    /// A server accepting the long-lived access token `token`.
    #[allow(clippy::expect_used)]
    pub fn start(token: &str) -> HomeAssistantMock {
        let shared = Arc::new(Shared {
            token: token.to_string(),
            state: Mutex::new(State::default()),
        });
        let server = Server::start(
            "homeassistant",
            Arc::new(HaService {
                shared: Arc::clone(&shared),
            }),
        )
        .expect("start the Home Assistant mock");
        HomeAssistantMock { server, shared }
    }

    /// The value for `HASS_URL`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    /// Whether a client is connected, authenticated and subscribed.
    pub fn subscribed(&self) -> bool {
        self.shared
            .lock()
            .live
            .as_ref()
            .is_some_and(|l| l.2.is_some())
    }

    /// WebSocket connections authenticated so far.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Sends a `state_changed` event for `entity` to the subscribed client; false when none is.
    pub fn change_state(&self, entity: &str, old: &str, new: &str, attributes: Value) -> bool {
        let st = self.shared.lock();
        let Some((_, tx, Some(sub))) = st.live.as_ref() else {
            return false;
        };
        let event = json!({
            "id": sub,
            "type": "event",
            "event": {
                "event_type": "state_changed",
                "data": {
                    "entity_id": entity,
                    "old_state": {"entity_id": entity, "state": old, "attributes": attributes.clone()},
                    "new_state": {"entity_id": entity, "state": new, "attributes": attributes},
                },
                "origin": "LOCAL",
                "time_fired": "2026-12-03T10:00:00.000000+00:00",
                "context": {"id": "01JCONTEXT", "parent_id": null, "user_id": null},
            },
        });
        tx.send(Outgoing::Text(event.to_string())).is_ok()
    }

    /// Cuts the live connection.
    pub fn drop_connection(&self) {
        if let Some((_, tx, _)) = self.shared.lock().live.take() {
            let _ = tx.send(Outgoing::Drop);
        }
    }

    /// The bodies of `persistent_notification.create` calls, in order.
    pub fn notifications(&self) -> Vec<Value> {
        self.shared.lock().notifications.clone()
    }
}
