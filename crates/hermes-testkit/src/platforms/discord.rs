//! A Discord double on 127.0.0.1, following <https://discord.com/developers/docs>:
//!
//! - REST under `/api/v10` with `Authorization: Bot <token>`: `GET /gateway/bot`,
//!   `GET /users/@me`, `GET /channels/{id}`, messages (`POST`/`PATCH`/`DELETE
//!   /channels/{id}/messages[/{id}]`, JSON or multipart with `payload_json` and `files[n]`,
//!   content at most 2000 characters, components checked), `POST /channels/{id}/typing`,
//!   `POST /channels/{id}/messages/{id}/threads`, `POST /interactions/{id}/{token}/callback`;
//!   every answer carries the `X-RateLimit-*` headers; 429s carry `retry_after` and
//!   `Retry-After`.
//! - The gateway (a WebSocket on the same port): HELLO with `heartbeat_interval`, IDENTIFY
//!   (token and intents checked, close 4004 on a bad token) answered by READY with
//!   `session_id` and `resume_gateway_url`, HEARTBEAT answered by HEARTBEAT_ACK, DISPATCH
//!   events with sequence numbers kept per session, RESUME replaying every event after the
//!   client's `seq` then RESUMED (or INVALID_SESSION when the session is gone).
//! - Faults: drop the connection, close with a code, RECONNECT, INVALID_SESSION, stop
//!   acknowledging heartbeats, 429s and exhausted rate-limit buckets on REST routes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};

/// The bot's user id in every mock.
pub const BOT_ID: &str = "900000000000000001";
pub const APPLICATION_ID: &str = "900000000000000002";
/// The guild every guild channel belongs to.
pub const GUILD_ID: &str = "800000000000000001";

/// One REST call as received.
#[derive(Debug, Clone)]
pub struct RestCall {
    pub method: String,
    /// Path under `/api/v10` (e.g. `/channels/1/messages`), query removed.
    pub path: String,
    /// JSON body, or the multipart parameters (`payload_json` parsed into the object).
    pub body: Value,
    pub headers: Vec<(String, String)>,
    pub at: Instant,
}

/// A message as the mock keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscordMessage {
    pub id: String,
    pub channel_id: String,
    pub author_id: String,
    pub content: String,
    pub components: Value,
    pub message_reference: Option<Value>,
    pub attachments: Vec<Value>,
    /// Earlier contents, oldest first.
    pub edits: Vec<String>,
    pub deleted: bool,
}

/// A gateway payload a client sent, with when it arrived.
#[derive(Debug, Clone)]
pub struct GatewayFrame {
    pub payload: Value,
    pub at: Instant,
    /// Which connection (0 = the first).
    pub connection: usize,
}

#[derive(Debug)]
enum Outgoing {
    Text(String),
    Close(u16, String),
    /// Drop the TCP connection without a close frame.
    Drop,
}

#[derive(Debug, Default)]
struct Session {
    seq: u64,
    /// Every dispatch of the session (for RESUME replays).
    events: Vec<(u64, Value)>,
    valid: bool,
}

#[derive(Debug)]
struct Live {
    id: usize,
    tx: mpsc::UnboundedSender<Outgoing>,
    session: Option<String>,
}

#[derive(Debug, Clone)]
struct RestFault {
    method: String,
    path_prefix: String,
    kind: FaultKind,
}

#[derive(Debug, Clone)]
enum FaultKind {
    /// 429 with this `retry_after`.
    RateLimited(f64),
    /// A success whose headers say the bucket is empty for this long.
    Exhausted(f64),
    Error(u16, Value),
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    channels: HashMap<String, Value>,
    messages: Vec<DiscordMessage>,
    rest: Vec<RestCall>,
    frames: Vec<GatewayFrame>,
    /// Paths the gateway was connected on, in order.
    connections: Vec<String>,
    sessions: HashMap<String, Session>,
    last_session: Option<String>,
    live: Option<Live>,
    next_connection: usize,
    faults: VecDeque<RestFault>,
    zombie: bool,
    files: HashMap<String, Vec<u8>>,
    open_interactions: HashMap<String, String>,
    ready_count: usize,
}

struct Shared {
    token: String,
    heartbeat_ms: u64,
    port: Mutex<u16>,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn port(&self) -> u16 {
        *self.port.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn snowflake(&mut self) -> String {
        self.next_id += 1;
        self.next_id.to_string()
    }

    /// Assigns the next sequence number of the latest session, records the event and sends
    /// it when that session's connection is live.
    fn dispatch(&mut self, t: &str, d: Value) {
        let Some(sid) = self.last_session.clone() else {
            return;
        };
        let Some(session) = self.sessions.get_mut(&sid) else {
            return;
        };
        session.seq += 1;
        let payload = json!({"op": 0, "t": t, "s": session.seq, "d": d});
        session.events.push((session.seq, payload.clone()));
        if let Some(live) = &self.live
            && live.session.as_deref() == Some(sid.as_str())
        {
            let _ = live.tx.send(Outgoing::Text(payload.to_string()));
        }
    }
}

/// The bot's `User` object.
pub fn bot_user() -> Value {
    json!({"id": BOT_ID, "username": "hermes", "discriminator": "0", "global_name": "Hermes", "bot": true, "avatar": null})
}

/// A user object.
pub fn user(id: &str, name: &str) -> Value {
    json!({"id": id, "username": name, "discriminator": "0", "global_name": name, "avatar": null})
}

/// A running Discord double.
pub struct DiscordMock {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for DiscordMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscordMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl DiscordMock {
    /// A mock accepting `token`, asking for heartbeats every `heartbeat_ms`.
    #[allow(clippy::expect_used)]
    pub fn start(token: &str, heartbeat_ms: u64) -> DiscordMock {
        let shared = Arc::new(Shared {
            token: token.to_string(),
            heartbeat_ms,
            port: Mutex::new(0),
            state: Mutex::new(State {
                next_id: 1_200_000_000_000_000_000,
                ..State::default()
            }),
        });
        let service = Arc::new(DcService {
            shared: Arc::clone(&shared),
        });
        let server = Server::start("discord", service).expect("start the Discord mock");
        *shared.port.lock().unwrap_or_else(PoisonError::into_inner) = server.addr.port();
        DiscordMock { server, shared }
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    /// The value for `platforms.discord.extra.base_url`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v10", self.port())
    }

    /// A guild text channel (type 0).
    pub fn add_channel(&self, channel_id: &str, name: &str) {
        self.shared.lock().channels.insert(
            channel_id.to_string(),
            json!({"id": channel_id, "type": 0, "guild_id": GUILD_ID, "name": name}),
        );
    }

    fn dm_channel(st: &mut State, user_id: &str) -> String {
        let id = format!("7{user_id}");
        st.channels
            .entry(id.clone())
            .or_insert_with(|| json!({"id": id, "type": 1, "recipients": [{"id": user_id}]}));
        id
    }

    /// A user's DM to the bot; returns `(channel_id, message_id)`.
    pub fn dm(&self, user_id: &str, username: &str, content: &str) -> (String, String) {
        let mut st = self.shared.lock();
        let channel = Self::dm_channel(&mut st, user_id);
        let id = Self::user_message(
            &mut st,
            &channel,
            user(user_id, username),
            content,
            json!({}),
        );
        (channel, id)
    }

    /// A message by `author` in `channel_id` (guild channels get `guild_id`); `extra` fields
    /// are merged in (mentions, message_reference, referenced_message, attachments...).
    pub fn message(&self, channel_id: &str, author: Value, content: &str, extra: Value) -> String {
        let mut st = self.shared.lock();
        Self::user_message(&mut st, channel_id, author, content, extra)
    }

    fn user_message(
        st: &mut State,
        channel_id: &str,
        author: Value,
        content: &str,
        extra: Value,
    ) -> String {
        let id = st.snowflake();
        let guild = st
            .channels
            .get(channel_id)
            .and_then(|c| c["guild_id"].as_str().map(str::to_string));
        let mut d = json!({
            "id": id,
            "channel_id": channel_id,
            "author": author,
            "content": content,
            "timestamp": "2026-01-01T00:00:00.000000+00:00",
            "edited_timestamp": null,
            "tts": false,
            "mention_everyone": false,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": false,
            "type": 0,
        });
        if let Some(g) = guild {
            d["guild_id"] = json!(g);
        }
        if let (Some(m), Some(e)) = (d.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        st.messages.push(DiscordMessage {
            id: id.clone(),
            channel_id: channel_id.to_string(),
            author_id: d["author"]["id"].as_str().unwrap_or_default().to_string(),
            content: content.to_string(),
            components: json!([]),
            message_reference: d.get("message_reference").cloned(),
            attachments: d["attachments"].as_array().cloned().unwrap_or_default(),
            edits: Vec::new(),
            deleted: false,
        });
        st.dispatch("MESSAGE_CREATE", d);
        id
    }

    /// Sends any dispatch event (`t`, `d`) on the current session.
    pub fn dispatch(&self, t: &str, d: Value) {
        self.shared.lock().dispatch(t, d);
    }

    /// A user presses a button (component interaction); returns the interaction id.
    pub fn press_button(
        &self,
        channel_id: &str,
        message_id: &str,
        user_id: &str,
        custom_id: &str,
    ) -> String {
        let mut st = self.shared.lock();
        let id = st.snowflake();
        let token = format!("itoken-{id}");
        st.open_interactions.insert(id.clone(), token.clone());
        let channel = st
            .channels
            .get(channel_id)
            .cloned()
            .unwrap_or_else(|| json!({"id": channel_id, "type": 0}));
        let message = st
            .messages
            .iter()
            .find(|m| m.id == message_id)
            .map(|m| json!({"id": m.id, "channel_id": m.channel_id, "content": m.content, "author": bot_user(), "components": m.components}))
            .unwrap_or_else(|| json!({"id": message_id, "channel_id": channel_id}));
        let mut d = json!({
            "id": id,
            "application_id": APPLICATION_ID,
            "type": 3,
            "data": {"custom_id": custom_id, "component_type": 2},
            "channel_id": channel_id,
            "channel": channel,
            "message": message,
            "token": token,
            "version": 1,
        });
        match channel["guild_id"].as_str() {
            Some(g) => {
                d["guild_id"] = json!(g);
                d["member"] = json!({"user": user(user_id, "presser"), "roles": []});
            }
            None => d["user"] = user(user_id, "presser"),
        }
        st.dispatch("INTERACTION_CREATE", d);
        id
    }

    /// Serves bytes at `/attachments/<path>` and returns the attachment object for messages.
    pub fn add_attachment(
        &self,
        path: &str,
        filename: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Value {
        let url = format!("http://127.0.0.1:{}/attachments/{path}", self.port());
        let mut st = self.shared.lock();
        let id = st.snowflake();
        let size = bytes.len();
        st.files.insert(path.to_string(), bytes);
        json!({"id": id, "filename": filename, "size": size, "url": url, "proxy_url": url, "content_type": content_type})
    }

    fn send(&self, out: Outgoing) {
        if let Some(live) = &self.shared.lock().live {
            let _ = live.tx.send(out);
        }
    }

    /// Drops the gateway connection without a close frame (a network failure).
    pub fn drop_connection(&self) {
        self.send(Outgoing::Drop);
    }

    /// Closes the gateway connection with a close code (4000: resumable; 4004: bad token;
    /// 4007/4009: the session is gone).
    pub fn close_connection(&self, code: u16, reason: &str) {
        if matches!(code, 4007 | 4009) {
            let mut st = self.shared.lock();
            if let Some(sid) = st.last_session.clone()
                && let Some(s) = st.sessions.get_mut(&sid)
            {
                s.valid = false;
            }
        }
        self.send(Outgoing::Close(code, reason.to_string()));
    }

    /// Opcode 7 RECONNECT.
    pub fn send_reconnect(&self) {
        self.send(Outgoing::Text(json!({"op": 7, "d": null}).to_string()));
    }

    /// Opcode 9 INVALID_SESSION; a non-resumable one also forgets the session.
    pub fn invalidate_session(&self, resumable: bool) {
        if !resumable {
            let mut st = self.shared.lock();
            if let Some(sid) = st.last_session.clone()
                && let Some(s) = st.sessions.get_mut(&sid)
            {
                s.valid = false;
            }
        }
        self.send(Outgoing::Text(json!({"op": 9, "d": resumable}).to_string()));
    }

    /// Stops (or resumes) acknowledging heartbeats.
    pub fn set_zombie(&self, zombie: bool) {
        self.shared.lock().zombie = zombie;
    }

    /// The next matching REST call gets a 429 with `retry_after` seconds.
    pub fn rate_limit_next(&self, method: &str, path_prefix: &str, retry_after: f64) {
        self.push_fault(method, path_prefix, FaultKind::RateLimited(retry_after));
    }

    /// The next matching REST call succeeds but says its bucket is empty for `reset_after`.
    pub fn exhaust_bucket_next(&self, method: &str, path_prefix: &str, reset_after: f64) {
        self.push_fault(method, path_prefix, FaultKind::Exhausted(reset_after));
    }

    /// The next matching REST call fails with this status and JSON body.
    pub fn fail_next(&self, method: &str, path_prefix: &str, status: u16, body: Value) {
        self.push_fault(method, path_prefix, FaultKind::Error(status, body));
    }

    fn push_fault(&self, method: &str, path_prefix: &str, kind: FaultKind) {
        self.shared.lock().faults.push_back(RestFault {
            method: method.to_ascii_uppercase(),
            path_prefix: path_prefix.to_string(),
            kind,
        });
    }

    pub fn rest_calls(&self) -> Vec<RestCall> {
        self.shared.lock().rest.clone()
    }

    /// REST calls with this method whose path contains `path_part`.
    pub fn rest_calls_to(&self, method: &str, path_part: &str) -> Vec<RestCall> {
        self.shared
            .lock()
            .rest
            .iter()
            .filter(|c| c.method.eq_ignore_ascii_case(method) && c.path.contains(path_part))
            .cloned()
            .collect()
    }

    /// Gateway payloads the client sent with this opcode.
    pub fn frames(&self, op: u64) -> Vec<GatewayFrame> {
        self.shared
            .lock()
            .frames
            .iter()
            .filter(|f| f.payload["op"].as_u64() == Some(op))
            .cloned()
            .collect()
    }

    /// The paths of every gateway connection, in order.
    pub fn connections(&self) -> Vec<String> {
        self.shared.lock().connections.clone()
    }

    /// How many READY events were sent (new sessions).
    pub fn ready_count(&self) -> usize {
        self.shared.lock().ready_count
    }

    /// Whether a session's connection is live right now.
    pub fn connected(&self) -> bool {
        self.shared
            .lock()
            .live
            .as_ref()
            .is_some_and(|l| l.session.is_some())
    }

    /// Messages in a channel (the bot's and users'), in order.
    pub fn messages_in(&self, channel_id: &str) -> Vec<DiscordMessage> {
        self.shared
            .lock()
            .messages
            .iter()
            .filter(|m| m.channel_id == channel_id)
            .cloned()
            .collect()
    }

    /// Messages the bot sent in a channel.
    pub fn bot_messages_in(&self, channel_id: &str) -> Vec<DiscordMessage> {
        self.messages_in(channel_id)
            .into_iter()
            .filter(|m| m.author_id == BOT_ID)
            .collect()
    }

    /// The channel object the mock knows (threads the bot made included).
    pub fn channel(&self, id: &str) -> Option<Value> {
        self.shared.lock().channels.get(id).cloned()
    }

    /// Polls until `cond` holds on the mock; false after `timeout`.
    pub fn wait(&self, timeout: Duration, cond: impl Fn(&DiscordMock) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        while !cond(self) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

struct DcService {
    shared: Arc<Shared>,
}

fn api_error(status: u16, message: &str, code: u64) -> MockResponse {
    MockResponse::json(status, &json!({"message": message, "code": code}))
}

fn with_bucket(resp: MockResponse, remaining: u32, reset_after: f64) -> MockResponse {
    resp.with_header("X-RateLimit-Limit", "5")
        .with_header("X-RateLimit-Remaining", remaining.to_string())
        .with_header("X-RateLimit-Reset-After", format!("{reset_after:.3}"))
        .with_header("X-RateLimit-Bucket", "mockbucket")
}

/// The body of a message create/edit: JSON, or multipart with `payload_json` + `files[n]`.
fn message_body(req: &MockRequest) -> Value {
    let params = req.params();
    let Some(payload) = params.get("payload_json").and_then(Value::as_str) else {
        return params;
    };
    let mut body: Value = serde_json::from_str(payload).unwrap_or(json!({}));
    let files: Vec<Value> = params
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.starts_with("files["))
                .map(|(_, v)| v.clone())
                .collect()
        })
        .unwrap_or_default();
    body["_files"] = Value::Array(files);
    body
}

fn check_components(components: &Value) -> Result<(), MockResponse> {
    let Some(rows) = components.as_array() else {
        return Ok(());
    };
    let invalid = || {
        Err(MockResponse::json(
            400,
            &json!({"message": "Invalid Form Body", "code": 50035, "errors": {"components": {"_errors": [{"code": "BASE_TYPE_BAD_LENGTH", "message": "Must be between 1 and 5 in length."}]}}}),
        ))
    };
    if rows.len() > 5 {
        return invalid();
    }
    for row in rows {
        let buttons = row["components"].as_array().cloned().unwrap_or_default();
        if row["type"] != json!(1) || buttons.is_empty() || buttons.len() > 5 {
            return invalid();
        }
        for b in buttons {
            let label_ok = b["label"]
                .as_str()
                .is_some_and(|l| !l.is_empty() && l.chars().count() <= 80);
            let id_ok = b["custom_id"]
                .as_str()
                .is_some_and(|c| !c.is_empty() && c.chars().count() <= 100);
            if b["type"] != json!(2) || !label_ok || !id_ok {
                return invalid();
            }
        }
    }
    Ok(())
}

impl DcService {
    fn rest(&self, req: &MockRequest) -> MockResponse {
        let full = req.path().to_string();
        if let Some(file) = full.strip_prefix("/attachments/") {
            return match self.shared.lock().files.get(file) {
                Some(b) => MockResponse::bytes(200, "application/octet-stream", b.clone()),
                None => MockResponse::empty(404),
            };
        }
        let Some(path) = full.strip_prefix("/api/v10") else {
            return api_error(404, "404: Not Found", 0);
        };
        let path = path.to_string();
        let is_interaction = path.starts_with("/interactions/");
        let body = message_body(req);
        {
            let mut st = self.shared.lock();
            st.rest.push(RestCall {
                method: req.method.clone(),
                path: path.clone(),
                body: body.clone(),
                headers: req.headers.clone(),
                at: Instant::now(),
            });
        }
        if !is_interaction
            && req.header("authorization") != Some(&format!("Bot {}", self.shared.token))
        {
            return api_error(401, "401: Unauthorized", 0);
        }
        let fault = {
            let mut st = self.shared.lock();
            let pos = st.faults.iter().position(|f| {
                f.method.eq_ignore_ascii_case(&req.method) && path.starts_with(&f.path_prefix)
            });
            pos.and_then(|p| st.faults.remove(p))
        };
        let mut exhausted = None;
        if let Some(f) = fault {
            match f.kind {
                FaultKind::RateLimited(after) => {
                    return with_bucket(
                        MockResponse::json(
                            429,
                            &json!({"message": "You are being rate limited.", "retry_after": after, "global": false}),
                        ),
                        0,
                        after,
                    )
                    .with_header("Retry-After", format!("{}", after.ceil() as u64))
                    .with_header("X-RateLimit-Scope", "user");
                }
                FaultKind::Exhausted(after) => exhausted = Some(after),
                FaultKind::Error(status, body) => return MockResponse::json(status, &body),
            }
        }
        let resp = self.route(&req.method, &path, &body);
        match exhausted {
            Some(after) => with_bucket(resp, 0, after),
            None if is_interaction => resp,
            None => with_bucket(resp, 4, 1.0),
        }
    }

    fn route(&self, method: &str, path: &str, body: &Value) -> MockResponse {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let mut st = self.shared.lock();
        match (method, parts.as_slice()) {
            ("GET", ["gateway", "bot"]) => MockResponse::json(
                200,
                &json!({
                    "url": format!("ws://127.0.0.1:{}", self.shared.port()),
                    "shards": 1,
                    "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1},
                }),
            ),
            ("GET", ["users", "@me"]) => MockResponse::json(200, &bot_user()),
            ("GET", ["channels", id]) => match st.channels.get(*id) {
                Some(c) => MockResponse::json(200, c),
                None => api_error(404, "Unknown Channel", 10003),
            },
            ("POST", ["channels", id, "typing"]) => {
                if st.channels.contains_key(*id) {
                    MockResponse::empty(204)
                } else {
                    api_error(404, "Unknown Channel", 10003)
                }
            }
            ("POST", ["channels", id, "messages"]) => self.create_message(&mut st, id, body),
            ("PATCH", ["channels", id, "messages", mid]) => {
                let content = body["content"].as_str();
                if content.is_some_and(|c| c.chars().count() > 2000) {
                    return too_long();
                }
                if let Err(r) = check_components(&body["components"]) {
                    return r;
                }
                let Some(m) = st
                    .messages
                    .iter_mut()
                    .find(|m| m.channel_id == *id && m.id == *mid && !m.deleted)
                else {
                    return api_error(404, "Unknown Message", 10008);
                };
                if m.author_id != BOT_ID {
                    return api_error(403, "Cannot edit a message authored by another user", 50005);
                }
                if let Some(c) = content {
                    let old = std::mem::replace(&mut m.content, c.to_string());
                    m.edits.push(old);
                }
                if !body["components"].is_null() {
                    m.components = body["components"].clone();
                }
                let out = json!({"id": m.id, "channel_id": m.channel_id, "content": m.content, "author": bot_user(), "components": m.components});
                MockResponse::json(200, &out)
            }
            ("DELETE", ["channels", id, "messages", mid]) => {
                match st
                    .messages
                    .iter_mut()
                    .find(|m| m.channel_id == *id && m.id == *mid && !m.deleted)
                {
                    Some(m) => {
                        m.deleted = true;
                        MockResponse::empty(204)
                    }
                    None => api_error(404, "Unknown Message", 10008),
                }
            }
            ("POST", ["channels", id, "messages", mid, "threads"]) => {
                let Some(parent) = st.channels.get(*id).cloned() else {
                    return api_error(404, "Unknown Channel", 10003);
                };
                if !st
                    .messages
                    .iter()
                    .any(|m| m.id == *mid && m.channel_id == *id)
                {
                    return api_error(404, "Unknown Message", 10008);
                }
                let name = body["name"].as_str().unwrap_or_default();
                if name.is_empty() || name.chars().count() > 100 {
                    return MockResponse::json(
                        400,
                        &json!({"message": "Invalid Form Body", "code": 50035}),
                    );
                }
                // A thread started from a message has that message's id.
                let thread = json!({
                    "id": mid,
                    "type": 11,
                    "guild_id": parent["guild_id"],
                    "parent_id": id,
                    "name": name,
                    "owner_id": BOT_ID,
                    "thread_metadata": {"archived": false, "auto_archive_duration": body["auto_archive_duration"].as_u64().unwrap_or(1440), "locked": false},
                });
                st.channels.insert((*mid).to_string(), thread.clone());
                let mut created = thread.clone();
                created["newly_created"] = json!(true);
                st.dispatch("THREAD_CREATE", created);
                MockResponse::json(201, &thread)
            }
            ("POST", ["interactions", iid, token, "callback"]) => {
                if st.open_interactions.get(*iid).map(String::as_str) == Some(*token) {
                    st.open_interactions.remove(*iid);
                    MockResponse::empty(204)
                } else {
                    api_error(404, "Unknown interaction", 10062)
                }
            }
            _ => api_error(404, "404: Not Found", 0),
        }
    }

    fn create_message(&self, st: &mut State, channel_id: &str, body: &Value) -> MockResponse {
        if !st.channels.contains_key(channel_id) {
            return api_error(404, "Unknown Channel", 10003);
        }
        let content = body["content"].as_str().unwrap_or_default();
        if content.chars().count() > 2000 {
            return too_long();
        }
        let files = body["_files"].as_array().cloned().unwrap_or_default();
        let components = body.get("components").cloned().unwrap_or(json!([]));
        if content.is_empty() && files.is_empty() && components.as_array().is_none_or(Vec::is_empty)
        {
            return api_error(400, "Cannot send an empty message", 50006);
        }
        if let Err(r) = check_components(&components) {
            return r;
        }
        let id = st.snowflake();
        let attachments: Vec<Value> = files
            .iter()
            .enumerate()
            .map(
                |(i, f)| json!({"id": i.to_string(), "filename": f["filename"], "size": f["size"]}),
            )
            .collect();
        let message_reference = body
            .get("message_reference")
            .cloned()
            .filter(|v| !v.is_null());
        st.messages.push(DiscordMessage {
            id: id.clone(),
            channel_id: channel_id.to_string(),
            author_id: BOT_ID.to_string(),
            content: content.to_string(),
            components: components.clone(),
            message_reference: message_reference.clone(),
            attachments: attachments.clone(),
            edits: Vec::new(),
            deleted: false,
        });
        let mut out = json!({
            "id": id,
            "channel_id": channel_id,
            "author": bot_user(),
            "content": content,
            "components": components,
            "attachments": attachments,
            "type": if message_reference.is_some() { 19 } else { 0 },
        });
        if let Some(r) = message_reference {
            out["message_reference"] = r;
        }
        MockResponse::json(200, &out)
    }

    async fn gateway(self: Arc<Self>, req: MockRequest, mut ws: WebSocketStream<TcpStream>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Outgoing>();
        let conn = {
            let mut st = self.shared.lock();
            let id = st.next_connection;
            st.next_connection += 1;
            st.connections.push(req.target.clone());
            st.live = Some(Live {
                id,
                tx: tx.clone(),
                session: None,
            });
            id
        };
        let hello = json!({"op": 10, "d": {"heartbeat_interval": self.shared.heartbeat_ms}});
        if ws
            .send(WsMessage::Text(hello.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
        loop {
            tokio::select! {
                out = rx.recv() => match out {
                    Some(Outgoing::Text(t)) => {
                        if ws.send(WsMessage::Text(t.into())).await.is_err() { break; }
                    }
                    Some(Outgoing::Close(code, reason)) => {
                        let frame = CloseFrame { code: CloseCode::from(code), reason: reason.into() };
                        let _ = ws.send(WsMessage::Close(Some(frame))).await;
                        break;
                    }
                    Some(Outgoing::Drop) | None => break,
                },
                frame = ws.next() => match frame {
                    Some(Ok(WsMessage::Text(text))) => {
                        let Ok(payload) = serde_json::from_str::<Value>(&text) else {
                            let _ = tx.send(Outgoing::Close(4002, "Error while decoding payload.".into()));
                            continue;
                        };
                        self.client_payload(conn, payload, &tx);
                    }
                    Some(Ok(WsMessage::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                },
            }
        }
        let mut st = self.shared.lock();
        if st.live.as_ref().is_some_and(|l| l.id == conn) {
            st.live = None;
        }
    }

    fn client_payload(&self, conn: usize, payload: Value, tx: &mpsc::UnboundedSender<Outgoing>) {
        let mut st = self.shared.lock();
        st.frames.push(GatewayFrame {
            payload: payload.clone(),
            at: Instant::now(),
            connection: conn,
        });
        let d = &payload["d"];
        match payload["op"].as_u64() {
            Some(1) if !st.zombie => {
                let _ = tx.send(Outgoing::Text(json!({"op": 11}).to_string()));
            }
            Some(2) => {
                if d["token"].as_str() != Some(self.shared.token.as_str()) {
                    let _ = tx.send(Outgoing::Close(4004, "Authentication failed.".into()));
                    return;
                }
                if !d["intents"].is_u64() {
                    let _ = tx.send(Outgoing::Close(4013, "Invalid intent(s).".into()));
                    return;
                }
                let sid = format!("session-{}", st.snowflake());
                st.sessions.insert(
                    sid.clone(),
                    Session {
                        valid: true,
                        ..Session::default()
                    },
                );
                st.last_session = Some(sid.clone());
                if let Some(live) = st.live.as_mut().filter(|l| l.id == conn) {
                    live.session = Some(sid.clone());
                }
                st.ready_count += 1;
                let port = self.shared.port();
                st.dispatch(
                    "READY",
                    json!({
                        "v": 10,
                        "user": bot_user(),
                        "guilds": [{"id": GUILD_ID, "unavailable": true}],
                        "session_id": sid,
                        "resume_gateway_url": format!("ws://127.0.0.1:{port}/resume"),
                        "application": {"id": APPLICATION_ID, "flags": 0},
                    }),
                );
            }
            Some(6) => {
                let sid = d["session_id"].as_str().unwrap_or_default().to_string();
                let seq = d["seq"].as_u64().unwrap_or(0);
                let ok = d["token"].as_str() == Some(self.shared.token.as_str())
                    && st.sessions.get(&sid).is_some_and(|s| s.valid);
                if !ok {
                    let _ = tx.send(Outgoing::Text(json!({"op": 9, "d": false}).to_string()));
                    return;
                }
                if let Some(live) = st.live.as_mut().filter(|l| l.id == conn) {
                    live.session = Some(sid.clone());
                }
                st.last_session = Some(sid.clone());
                let replay: Vec<Value> = st.sessions[&sid]
                    .events
                    .iter()
                    .filter(|(s, _)| *s > seq)
                    .map(|(_, p)| p.clone())
                    .collect();
                for p in replay {
                    let _ = tx.send(Outgoing::Text(p.to_string()));
                }
                st.dispatch("RESUMED", json!({}));
            }
            _ => {}
        }
    }
}

fn too_long() -> MockResponse {
    MockResponse::json(
        400,
        &json!({"message": "Invalid Form Body", "code": 50035, "errors": {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}}}),
    )
}

impl Service for DcService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.rest(&req) })
    }

    fn websocket(
        self: Arc<Self>,
        req: MockRequest,
        ws: WebSocketStream<TcpStream>,
    ) -> BoxFuture<()> {
        Box::pin(self.gateway(req, ws))
    }
}
