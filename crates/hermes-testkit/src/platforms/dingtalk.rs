//! A DingTalk double on 127.0.0.1, following DingTalk's open platform documentation
//! (<https://open.dingtalk.com/document/direction/stream-mode-protocol-access-description>, the
//! robot's message APIs):
//!
//! - `POST /v1.0/gateway/connections/open` `{"clientId", "clientSecret", "subscriptions", "ua",
//!   "localIp"}` → `{"endpoint": "ws://…/connect", "ticket"}`; wrong credentials: HTTP 401
//!   `{"code": "InvalidAuthentication", "message": …}`. A ticket opens one connection.
//! - WebSocket `GET /connect?ticket=…`: frames `{"specVersion": "1.0", "type", "headers":
//!   {"appId", "connectionId", "contentType", "messageId", "time", "topic"}, "data": "<JSON>"}`;
//!   [`DingTalkMock::send_message`] pushes a robot message (a CALLBACK on
//!   `/v1.0/im/bot/messages/get`), [`DingTalkMock::ping`] and
//!   [`DingTalkMock::ask_disconnect`] the SYSTEM topics, [`DingTalkMock::drop_connection`]
//!   cuts it. Every acknowledgement the client sends is recorded ([`DingTalkMock::acks`]).
//! - `POST /v1.0/oauth2/accessToken` `{"appKey", "appSecret"}` → `{"accessToken",
//!   "expireIn": 7200}`; robot calls need `x-acs-dingtalk-access-token`, else 401
//!   `{"code": "InvalidAuthentication"}`: `POST /v1.0/robot/groupMessages/send` and
//!   `/v1.0/robot/oToMessages/batchSend` (`msgKey`, `msgParam` a JSON string, `robotCode`) →
//!   `{"processQueryKey"}`; `POST /v1.0/robot/messageFiles/download` (`downloadCode`,
//!   `robotCode`) → `{"downloadUrl"}` of a file added with [`DingTalkMock::add_file`].
//! - The session webhooks it hands out in messages: `POST /robot/sendBySession?session=…`
//!   (`{"msgtype": "markdown", "markdown": {"title", "text"}}` or `text`) → `{"errcode": 0,
//!   "errmsg": "ok"}`; an unknown session: `{"errcode": 300001, "errmsg": "session不存在"}`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};

pub const CLIENT_ID: &str = "dingz8qmkr7ypfxkd0o3";
pub const BOT_TOPIC: &str = "/v1.0/im/bot/messages/get";

/// A request the double received (session webhooks included).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub token: Option<String>,
    pub body: Value,
}

enum Outgoing {
    Text(String),
    Drop,
}

#[derive(Default)]
struct State {
    requests: Vec<ApiRequest>,
    tickets: Vec<String>,
    live: Option<(u64, mpsc::UnboundedSender<Outgoing>)>,
    next_conn: u64,
    connections: usize,
    acks: Vec<Value>,
    token_serial: u64,
    files: HashMap<String, (String, Vec<u8>)>,
    next_id: u64,
    /// Session → conversation id.
    sessions: HashMap<String, String>,
}

struct Shared {
    secret: String,
    state: Mutex<State>,
    /// The double's own port (the endpoint and download URLs point back at it), set once bound.
    port: AtomicU16,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn error(status: u16, code: &str, message: &str) -> MockResponse {
    MockResponse::json(
        status,
        &json!({"code": code, "message": message, "requestid": "7C8F4C1E-0D1A-4A4B-9F8E-3B2E1D0C9A8B"}),
    )
}

struct DingService {
    shared: Arc<Shared>,
}

impl DingService {
    fn port(&self) -> u16 {
        self.shared.port.load(Ordering::Relaxed)
    }

    fn handle(&self, req: &MockRequest) -> MockResponse {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let token = req
            .header("x-acs-dingtalk-access-token")
            .map(str::to_string);
        let mut st = self.shared.lock();
        st.requests.push(ApiRequest {
            method: req.method.clone(),
            path: req.path().to_string(),
            query: req.query(),
            token: token.clone(),
            body: body.clone(),
        });
        let credentials_ok = |id: &Value, secret: &Value| {
            id.as_str() == Some(CLIENT_ID) && secret.as_str() == Some(self.shared.secret.as_str())
        };
        match (req.method.as_str(), req.path()) {
            ("POST", "/v1.0/gateway/connections/open") => {
                if !credentials_ok(&body["clientId"], &body["clientSecret"]) {
                    return error(
                        401,
                        "InvalidAuthentication",
                        "clientId or clientSecret is invalid",
                    );
                }
                if !body["subscriptions"].is_array() {
                    return error(400, "MissingParameter", "subscriptions is mandatory");
                }
                st.next_id += 1;
                let ticket = format!("tk-{}+{}/=", st.next_id, fastrand_like(st.next_id));
                st.tickets.push(ticket.clone());
                MockResponse::json(
                    200,
                    &json!({"endpoint": format!("ws://127.0.0.1:{}/connect", self.port()), "ticket": ticket}),
                )
            }
            ("POST", "/v1.0/oauth2/accessToken") => {
                if !credentials_ok(&body["appKey"], &body["appSecret"]) {
                    return error(
                        400,
                        "invalidClientIdOrSecret",
                        "无效的clientId或者clientSecret",
                    );
                }
                MockResponse::json(
                    200,
                    &json!({"accessToken": format!("at-{}", st.token_serial), "expireIn": 7200}),
                )
            }
            ("POST", "/robot/sendBySession") => {
                let session = req
                    .query()
                    .into_iter()
                    .find(|(k, _)| k == "session")
                    .map(|(_, v)| v)
                    .unwrap_or_default();
                if !st.sessions.contains_key(&session) {
                    return MockResponse::json(
                        200,
                        &json!({"errcode": 300001, "errmsg": "session不存在"}),
                    );
                }
                let ok = match body["msgtype"].as_str() {
                    Some("markdown") => {
                        body["markdown"]["title"].is_string()
                            && body["markdown"]["text"].is_string()
                    }
                    Some("text") => body["text"]["content"].is_string(),
                    _ => false,
                };
                if !ok {
                    return MockResponse::json(
                        200,
                        &json!({"errcode": 40035, "errmsg": "缺少参数 json"}),
                    );
                }
                MockResponse::json(200, &json!({"errcode": 0, "errmsg": "ok"}))
            }
            ("POST", path) if path.starts_with("/v1.0/robot/") => {
                if token.as_deref() != Some(format!("at-{}", st.token_serial).as_str()) {
                    return error(401, "InvalidAuthentication", "不合法的access_token");
                }
                if body["robotCode"].as_str() != Some(CLIENT_ID) {
                    return error(400, "resource.not.found", "robot 不存在");
                }
                st.next_id += 1;
                let key = format!("pqk-{}", st.next_id);
                match path {
                    "/v1.0/robot/groupMessages/send" | "/v1.0/robot/oToMessages/batchSend" => {
                        let param_ok = body["msgParam"]
                            .as_str()
                            .and_then(|p| serde_json::from_str::<Value>(p).ok())
                            .is_some_and(|p| p.is_object());
                        if !param_ok || !body["msgKey"].is_string() {
                            return error(400, "invalidParameter.msgParam", "msgParam is invalid");
                        }
                        if path.ends_with("batchSend") {
                            MockResponse::json(
                                200,
                                &json!({"processQueryKey": key, "invalidStaffIdList": [], "flowControlledStaffIdList": []}),
                            )
                        } else {
                            MockResponse::json(200, &json!({"processQueryKey": key}))
                        }
                    }
                    "/v1.0/robot/messageFiles/download" => {
                        let code = body["downloadCode"].as_str().unwrap_or_default();
                        if !st.files.contains_key(code) {
                            return error(
                                400,
                                "invalidParameter.downloadCode",
                                "downloadCode is invalid",
                            );
                        }
                        MockResponse::json(
                            200,
                            &json!({"downloadUrl": format!("http://127.0.0.1:{}/files/{code}", self.port())}),
                        )
                    }
                    _ => error(404, "NotFound", "api not found"),
                }
            }
            ("GET", path) if path.starts_with("/files/") => {
                match st.files.get(&path["/files/".len()..]) {
                    Some((mime, bytes)) => MockResponse::bytes(200, mime, bytes.clone()),
                    None => MockResponse::empty(404),
                }
            }
            _ => error(404, "NotFound", "api not found"),
        }
    }

    async fn socket(self: Arc<Self>, req: MockRequest, mut ws: WebSocketStream<TcpStream>) {
        let ticket = req
            .query()
            .into_iter()
            .find(|(k, _)| k == "ticket")
            .map(|(_, v)| v)
            .unwrap_or_default();
        let (tx, mut rx) = mpsc::unbounded_channel::<Outgoing>();
        let conn = {
            let mut st = self.shared.lock();
            match st.tickets.iter().position(|t| *t == ticket) {
                Some(at) => {
                    // One connection per ticket.
                    st.tickets.remove(at);
                    st.next_conn += 1;
                    st.connections += 1;
                    st.live = Some((st.next_conn, tx));
                    Some(st.next_conn)
                }
                None => None,
            }
        };
        let Some(conn) = conn else {
            let _ = ws.close(None).await;
            return;
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
                        if let Ok(v) = serde_json::from_str::<Value>(&t) {
                            self.shared.lock().acks.push(v);
                        }
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

/// A ticket-looking suffix (with characters that need URL encoding).
fn fastrand_like(n: u64) -> String {
    format!("{:x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

impl Service for DingService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.handle(&req) })
    }

    fn websocket(
        self: Arc<Self>,
        req: MockRequest,
        ws: WebSocketStream<TcpStream>,
    ) -> BoxFuture<()> {
        Box::pin(self.socket(req, ws))
    }
}

/// What a user sends to the robot.
#[derive(Debug, Clone)]
pub struct UserMessage {
    pub msg_id: String,
    pub conversation_id: String,
    pub group: bool,
    pub sender_staff_id: String,
    pub sender_nick: String,
    pub text: String,
    /// The robot was @mentioned (`isInAtList`).
    pub at_bot: bool,
}

/// The DingTalk double.
pub struct DingTalkMock {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for DingTalkMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DingTalkMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl DingTalkMock {
    /// A DingTalk where app [`CLIENT_ID`] has the secret `client_secret`.
    #[allow(clippy::expect_used)]
    pub fn start(client_secret: &str) -> DingTalkMock {
        let shared = Arc::new(Shared {
            secret: client_secret.to_string(),
            state: Mutex::new(State::default()),
            port: AtomicU16::new(0),
        });
        let server = Server::start(
            "dingtalk",
            Arc::new(DingService {
                shared: Arc::clone(&shared),
            }),
        )
        .expect("start the DingTalk mock");
        shared.port.store(server.addr.port(), Ordering::Relaxed);
        DingTalkMock { server, shared }
    }

    /// The value for `platforms.dingtalk.extra.api_url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    /// Whether a Stream connection is open.
    pub fn connected(&self) -> bool {
        self.shared.lock().live.is_some()
    }

    /// Stream connections opened so far.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    fn push(&self, frame: Value) -> bool {
        let st = self.shared.lock();
        match st.live.as_ref() {
            Some((_, tx)) => tx.send(Outgoing::Text(frame.to_string())).is_ok(),
            None => false,
        }
    }

    fn frame(&self, kind: &str, topic: &str, message_id: &str, data: &Value) -> Value {
        json!({
            "specVersion": "1.0",
            "type": kind,
            "headers": {
                "appId": "a1b2c3d4-0000-4000-8000-000000000001",
                "connectionId": "c0ffee00-1111-4222-8333-444455556666",
                "contentType": "application/json",
                "messageId": message_id,
                "time": "1764756000000",
                "topic": topic,
            },
            "data": data.to_string(),
        })
    }

    /// The data of a robot message as DingTalk sends it, with a session webhook on this
    /// double (valid for an hour).
    pub fn message_data(&self, m: &UserMessage) -> Value {
        let session = format!("sess-{}", m.msg_id);
        self.shared
            .lock()
            .sessions
            .insert(session.clone(), m.conversation_id.clone());
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        json!({
            "conversationId": m.conversation_id,
            "atUsers": if m.at_bot { json!([{"dingtalkId": "$:LWCP_v1:$bot"}]) } else { json!([]) },
            "chatbotCorpId": "ding9f50b15bccd16741",
            "chatbotUserId": "$:LWCP_v1:$bot",
            "msgId": m.msg_id,
            "senderNick": m.sender_nick,
            "isAdmin": false,
            "senderStaffId": m.sender_staff_id,
            "sessionWebhookExpiredTime": now_ms + 3_600_000,
            "createAt": now_ms,
            "senderCorpId": "ding9f50b15bccd16741",
            "conversationType": if m.group { "2" } else { "1" },
            "senderId": format!("$:LWCP_v1:${}", m.sender_staff_id),
            "sessionWebhook": format!("{}/robot/sendBySession?session={session}", self.url()),
            "robotCode": CLIENT_ID,
            "msgtype": "text",
            "text": {"content": m.text},
            "isInAtList": m.at_bot,
            "conversationTitle": if m.group { "Hermes testers" } else { "" },
        })
    }

    /// Pushes a robot message on the live connection; false when none is open.
    pub fn send_message(&self, m: &UserMessage) -> bool {
        let data = self.message_data(m);
        self.send_data(&format!("frame-{}", m.msg_id), &data)
    }

    /// Pushes a robot message with any `data` (a picture, rich text).
    pub fn send_data(&self, message_id: &str, data: &Value) -> bool {
        let frame = self.frame("CALLBACK", BOT_TOPIC, message_id, data);
        self.push(frame)
    }

    /// A SYSTEM `ping`.
    pub fn ping(&self, message_id: &str) -> bool {
        let frame = self.frame("SYSTEM", "ping", message_id, &json!({"opaque": message_id}));
        self.push(frame)
    }

    /// A SYSTEM `disconnect`: the client should open a new connection.
    pub fn ask_disconnect(&self) -> bool {
        let frame = self.frame(
            "SYSTEM",
            "disconnect",
            "sys-disconnect",
            &json!({"reason": "server restart"}),
        );
        self.push(frame)
    }

    /// Cuts the live connection.
    pub fn drop_connection(&self) {
        if let Some((_, tx)) = self.shared.lock().live.take() {
            let _ = tx.send(Outgoing::Drop);
        }
    }

    /// The client's acknowledgements, in order.
    pub fn acks(&self) -> Vec<Value> {
        self.shared.lock().acks.clone()
    }

    pub fn requests(&self) -> Vec<ApiRequest> {
        self.shared.lock().requests.clone()
    }

    /// The current access token stops working.
    pub fn expire_token(&self) {
        self.shared.lock().token_serial += 1;
    }

    /// A file users can send, by download code.
    pub fn add_file(&self, download_code: &str, mime: &str, bytes: Vec<u8>) {
        self.shared
            .lock()
            .files
            .insert(download_code.to_string(), (mime.to_string(), bytes));
    }

    /// The texts posted to conversation `conversation_id`'s session webhooks and sent to it
    /// through the robot API, in order.
    pub fn texts_to(&self, conversation_id: &str) -> Vec<String> {
        let st = self.shared.lock();
        st.requests
            .iter()
            .filter_map(|r| {
                let to = match r.path.as_str() {
                    "/robot/sendBySession" => {
                        let session = r.query.iter().find(|(k, _)| k == "session")?.1.clone();
                        st.sessions.get(&session)?.clone()
                    }
                    "/v1.0/robot/groupMessages/send" => {
                        r.body["openConversationId"].as_str()?.to_string()
                    }
                    _ => return None,
                };
                if to != conversation_id {
                    return None;
                }
                Some(text_of(&r.body))
            })
            .collect()
    }
}

/// The text a user sees of a webhook or robot API body.
pub fn text_of(body: &Value) -> String {
    if let Some(t) = body["markdown"]["text"].as_str() {
        return t.to_string();
    }
    if let Some(t) = body["text"]["content"].as_str() {
        return t.to_string();
    }
    body["msgParam"]
        .as_str()
        .and_then(|p| serde_json::from_str::<Value>(p).ok())
        .and_then(|p| p["text"].as_str().map(str::to_string))
        .unwrap_or_default()
}
