//! A Slack double on 127.0.0.1, following <https://docs.slack.dev/apis>:
//!
//! - Web API `POST /api/<method>` (JSON or form bodies; the token as `Authorization: Bearer`
//!   or a `token` parameter): `auth.test`, `apps.connections.open` (app-level token),
//!   `chat.postMessage`, `chat.update`, `chat.delete`, `assistant.threads.setStatus`,
//!   `users.info`, `files.getUploadURLExternal` + the upload URL +
//!   `files.completeUploadExternal`, and `url_private` file downloads (bot token required).
//!   Errors are HTTP 200 with `{"ok": false, "error"}`; rate limits are HTTP 429 with
//!   `Retry-After`.
//! - Socket Mode: `apps.connections.open` hands out single-use `wss` tickets; a connection
//!   gets `hello`, then `events_api` / `interactive` envelopes, each of which the client must
//!   acknowledge with its `envelope_id`. Envelopes not acknowledged are delivered again on the
//!   next connection with `retry_attempt` + 1 and `retry_reason: "timeout"` (as Slack retries).
//!   `disconnect` (`refresh_requested`, ...) asks the client to reconnect.
//! - Faults: drop the socket, send `disconnect`, 429 or any error on a method.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};

pub const TEAM_ID: &str = "T0HERMES";
pub const APP_ID: &str = "A0HERMES";
/// The bot's user id and bot id.
pub const BOT_USER_ID: &str = "U0BOT";
pub const BOT_ID: &str = "B0BOT";

/// One Web API call as received.
#[derive(Debug, Clone)]
pub struct ApiCall {
    pub method: String,
    pub params: Value,
    pub at: Instant,
}

/// A message in the mock's channels.
#[derive(Debug, Clone, PartialEq)]
pub struct SlackMessage {
    pub channel: String,
    pub ts: String,
    pub user: String,
    pub text: String,
    pub blocks: Option<Value>,
    pub thread_ts: Option<String>,
    pub files: Vec<String>,
    pub edits: Vec<String>,
    pub deleted: bool,
}

/// An envelope and how it went.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub envelope_id: String,
    pub kind: String,
    pub payload: Value,
    /// Times it was sent on a connection.
    pub deliveries: u32,
    pub acked: bool,
}

#[derive(Debug)]
enum Outgoing {
    Text(String),
    Drop,
}

#[derive(Debug)]
struct Live {
    id: usize,
    tx: mpsc::UnboundedSender<Outgoing>,
}

#[derive(Debug, Clone)]
enum Fault {
    RateLimited(u64),
    Error(String),
}

#[derive(Debug, Default)]
struct State {
    calls: Vec<ApiCall>,
    messages: Vec<SlackMessage>,
    users: HashMap<String, Value>,
    envelopes: Vec<Envelope>,
    acks: Vec<String>,
    tickets: HashSet<String>,
    next_ticket: u64,
    next_ts: u64,
    next_id: u64,
    live: Option<Live>,
    next_connection: usize,
    connections: usize,
    faults: HashMap<String, VecDeque<Fault>>,
    files: HashMap<String, Vec<u8>>,
    uploads: HashMap<String, (String, Option<Vec<u8>>)>,
    statuses: Vec<Value>,
}

impl State {
    fn ts(&mut self) -> String {
        self.next_ts += 1;
        format!("1700000000.{:06}", self.next_ts)
    }

    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{:08}", self.next_id)
    }

    fn send_envelope(&mut self, index: usize) {
        let Some(live) = &self.live else { return };
        let env = &mut self.envelopes[index];
        let attempt = env.deliveries;
        let frame = json!({
            "envelope_id": env.envelope_id,
            "payload": env.payload,
            "type": env.kind,
            "accepts_response_payload": false,
            "retry_attempt": attempt,
            "retry_reason": if attempt == 0 { "" } else { "timeout" },
        });
        if live.tx.send(Outgoing::Text(frame.to_string())).is_ok() {
            env.deliveries += 1;
        }
    }
}

struct Shared {
    bot_token: String,
    app_token: String,
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

/// A running Slack double.
pub struct SlackMock {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SlackMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl SlackMock {
    /// A mock accepting the bot token (`xoxb-…`) and the app-level token (`xapp-…`).
    #[allow(clippy::expect_used)]
    pub fn start(bot_token: &str, app_token: &str) -> SlackMock {
        let shared = Arc::new(Shared {
            bot_token: bot_token.to_string(),
            app_token: app_token.to_string(),
            port: Mutex::new(0),
            state: Mutex::new(State::default()),
        });
        let server = Server::start(
            "slack",
            Arc::new(SlackService {
                shared: Arc::clone(&shared),
            }),
        )
        .expect("start the Slack mock");
        *shared.port.lock().unwrap_or_else(PoisonError::into_inner) = server.addr.port();
        SlackMock { server, shared }
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    /// The value for `platforms.slack.extra.base_url`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/api", self.port())
    }

    /// A workspace member `users.info` knows.
    pub fn add_user(&self, id: &str, name: &str, real_name: &str) {
        self.shared.lock().users.insert(
            id.to_string(),
            json!({"id": id, "team_id": TEAM_ID, "name": name, "real_name": real_name, "is_bot": false,
                   "profile": {"display_name": name, "real_name": real_name}}),
        );
    }

    /// Queues an `events_api` envelope around `event`; returns its envelope id.
    pub fn push_event(&self, event: Value) -> String {
        let mut st = self.shared.lock();
        let event_id = st.id("Ev");
        let payload = json!({
            "token": "verification-token",
            "team_id": TEAM_ID,
            "api_app_id": APP_ID,
            "event": event,
            "type": "event_callback",
            "event_id": event_id,
            "event_time": 1_700_000_000,
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": true}],
        });
        Self::push(&mut st, "events_api", payload)
    }

    fn push(st: &mut State, kind: &str, payload: Value) -> String {
        let envelope_id = format!("env-{}", st.id(""));
        st.envelopes.push(Envelope {
            envelope_id: envelope_id.clone(),
            kind: kind.to_string(),
            payload,
            deliveries: 0,
            acked: false,
        });
        let index = st.envelopes.len() - 1;
        st.send_envelope(index);
        envelope_id
    }

    fn record_user_message(
        st: &mut State,
        channel: &str,
        user: &str,
        text: &str,
        thread_ts: Option<&str>,
    ) -> String {
        let ts = st.ts();
        st.messages.push(SlackMessage {
            channel: channel.to_string(),
            ts: ts.clone(),
            user: user.to_string(),
            text: text.to_string(),
            blocks: None,
            thread_ts: thread_ts.map(str::to_string),
            files: Vec::new(),
            edits: Vec::new(),
            deleted: false,
        });
        ts
    }

    /// A direct message from `user` (in the IM channel `D<user>`); returns its `ts`.
    pub fn dm(&self, user: &str, text: &str) -> String {
        self.message(&format!("D{user}"), "im", user, text, None, json!({}))
    }

    /// A message event in `channel` (`channel_type`: `im`, `mpim`, `channel`, `group`);
    /// `extra` is merged into the event (files, bot_id, subtype...). Returns its `ts`.
    pub fn message(
        &self,
        channel: &str,
        channel_type: &str,
        user: &str,
        text: &str,
        thread_ts: Option<&str>,
        extra: Value,
    ) -> String {
        let ts = {
            let mut st = self.shared.lock();
            Self::record_user_message(&mut st, channel, user, text, thread_ts)
        };
        let mut event = json!({
            "type": "message",
            "channel": channel,
            "user": user,
            "text": text,
            "ts": ts,
            "event_ts": ts,
            "channel_type": channel_type,
            "team": TEAM_ID,
        });
        if let Some(t) = thread_ts {
            event["thread_ts"] = json!(t);
        }
        if let (Some(e), Some(x)) = (event.as_object_mut(), extra.as_object()) {
            e.extend(x.clone());
        }
        self.push_event(event);
        ts
    }

    /// A user clicks a button of the bot's message (a `block_actions` interactive envelope).
    pub fn press_button(
        &self,
        channel: &str,
        message_ts: &str,
        user: &str,
        action_id: &str,
        value: &str,
    ) -> String {
        let mut st = self.shared.lock();
        let thread_ts = st
            .messages
            .iter()
            .find(|m| m.channel == channel && m.ts == message_ts)
            .and_then(|m| m.thread_ts.clone());
        let mut message =
            json!({"type": "message", "ts": message_ts, "user": BOT_USER_ID, "bot_id": BOT_ID});
        let mut container = json!({"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": false});
        if let Some(t) = &thread_ts {
            message["thread_ts"] = json!(t);
            container["thread_ts"] = json!(t);
        }
        let payload = json!({
            "type": "block_actions",
            "user": {"id": user, "username": format!("name-{user}"), "name": format!("name-{user}"), "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "token": "verification-token",
            "container": container,
            "trigger_id": "trigger-1",
            "team": {"id": TEAM_ID, "domain": "hermes"},
            "channel": {"id": channel, "name": "chan"},
            "message": message,
            "response_url": format!("http://127.0.0.1:{}/response", self.shared.port()),
            "actions": [{"action_id": action_id, "block_id": "hermes_actions", "value": value, "type": "button",
                         "text": {"type": "plain_text", "text": "button"}, "action_ts": "1700000000.1"}],
        });
        Self::push(&mut st, "interactive", payload)
    }

    /// Serves a private file (bot token required); returns its `url_private`.
    pub fn add_file(&self, path: &str, bytes: Vec<u8>) -> String {
        self.shared.lock().files.insert(path.to_string(), bytes);
        format!("http://127.0.0.1:{}/files-pri/{path}", self.port())
    }

    fn send(&self, out: Outgoing) {
        if let Some(live) = &self.shared.lock().live {
            let _ = live.tx.send(out);
        }
    }

    /// Forgets that `envelope_id` was acknowledged (as when an ack is lost on the way), so
    /// the next connection gets it again.
    pub fn forget_ack(&self, envelope_id: &str) {
        if let Some(e) = self
            .shared
            .lock()
            .envelopes
            .iter_mut()
            .find(|e| e.envelope_id == envelope_id)
        {
            e.acked = false;
        }
    }

    /// Drops the socket without a close frame.
    pub fn drop_connection(&self) {
        self.send(Outgoing::Drop);
    }

    /// Sends a `disconnect` message (`refresh_requested`, `warning`, `link_disabled`).
    pub fn send_disconnect(&self, reason: &str) {
        self.send(Outgoing::Text(
            json!({"type": "disconnect", "reason": reason, "debug_info": {"host": "mock"}})
                .to_string(),
        ));
    }

    /// The next call of `method` is rate limited (HTTP 429, `Retry-After`).
    pub fn rate_limit_next(&self, method: &str, retry_after_secs: u64) {
        self.shared
            .lock()
            .faults
            .entry(method.to_string())
            .or_default()
            .push_back(Fault::RateLimited(retry_after_secs));
    }

    /// The next call of `method` answers `{"ok": false, "error": error}`.
    pub fn fail_next(&self, method: &str, error: &str) {
        self.shared
            .lock()
            .faults
            .entry(method.to_string())
            .or_default()
            .push_back(Fault::Error(error.to_string()));
    }

    pub fn calls(&self) -> Vec<ApiCall> {
        self.shared.lock().calls.clone()
    }

    pub fn calls_to(&self, method: &str) -> Vec<ApiCall> {
        self.shared
            .lock()
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// Messages the bot posted in `channel`.
    pub fn bot_messages(&self, channel: &str) -> Vec<SlackMessage> {
        self.shared
            .lock()
            .messages
            .iter()
            .filter(|m| m.channel == channel && m.user == BOT_USER_ID)
            .cloned()
            .collect()
    }

    pub fn envelopes(&self) -> Vec<Envelope> {
        self.shared.lock().envelopes.clone()
    }

    /// Acknowledged envelope ids, in the order the acks arrived.
    pub fn acks(&self) -> Vec<String> {
        self.shared.lock().acks.clone()
    }

    /// Socket Mode connections opened so far.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    pub fn connected(&self) -> bool {
        self.shared.lock().live.is_some()
    }

    /// `assistant.threads.setStatus` calls.
    pub fn statuses(&self) -> Vec<Value> {
        self.shared.lock().statuses.clone()
    }
}

struct SlackService {
    shared: Arc<Shared>,
}

fn ok(mut v: Value) -> MockResponse {
    v["ok"] = json!(true);
    MockResponse::json(200, &v)
}

fn fail(error: &str) -> MockResponse {
    MockResponse::json(200, &json!({"ok": false, "error": error}))
}

/// A Block Kit check of what chat.postMessage/update accept (enough for sections and
/// buttons).
fn check_blocks(blocks: &Value) -> Result<(), MockResponse> {
    let Some(list) = blocks.as_array() else {
        return if blocks.is_null() {
            Ok(())
        } else {
            Err(fail("invalid_blocks_format"))
        };
    };
    if list.len() > 50 {
        return Err(fail("invalid_blocks"));
    }
    for b in list {
        match b["type"].as_str() {
            Some("section") => {
                let t = b["text"]["text"].as_str().unwrap_or_default();
                if t.is_empty() || t.chars().count() > 3000 {
                    return Err(fail("invalid_blocks"));
                }
            }
            Some("actions") => {
                let els = b["elements"].as_array().cloned().unwrap_or_default();
                if els.is_empty() || els.len() > 25 {
                    return Err(fail("invalid_blocks"));
                }
                for e in els {
                    let label = e["text"]["text"].as_str().unwrap_or_default();
                    let ok = e["type"] == json!("button")
                        && e["text"]["type"] == json!("plain_text")
                        && !label.is_empty()
                        && label.chars().count() <= 75
                        && e["action_id"]
                            .as_str()
                            .is_some_and(|a| !a.is_empty() && a.len() <= 255)
                        && e["value"]
                            .as_str()
                            .is_none_or(|v| v.chars().count() <= 2000);
                    if !ok {
                        return Err(fail("invalid_blocks"));
                    }
                }
            }
            _ => return Err(fail("invalid_blocks")),
        }
    }
    Ok(())
}

/// A parameter that may be JSON text in a form body.
fn json_param(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
        other => other.clone(),
    }
}

impl SlackService {
    fn token(req: &MockRequest, params: &Value) -> Option<String> {
        req.header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::to_string)
            .or_else(|| params["token"].as_str().map(str::to_string))
    }

    fn handle(&self, req: &MockRequest) -> MockResponse {
        let path = req.path().to_string();
        if let Some(file) = path.strip_prefix("/files-pri/") {
            if req.header("authorization") != Some(&format!("Bearer {}", self.shared.bot_token)) {
                return MockResponse::empty(401);
            }
            return match self.shared.lock().files.get(file) {
                Some(b) => MockResponse::bytes(200, "application/octet-stream", b.clone()),
                None => MockResponse::empty(404),
            };
        }
        if let Some(file_id) = path.strip_prefix("/upload/") {
            let mut st = self.shared.lock();
            return match st.uploads.get_mut(file_id) {
                Some((_, data)) => {
                    *data = Some(req.body.clone());
                    MockResponse::bytes(
                        200,
                        "text/plain",
                        format!("OK - {}", req.body.len()).into_bytes(),
                    )
                }
                None => MockResponse::empty(404),
            };
        }
        let Some(method) = path.strip_prefix("/api/") else {
            return MockResponse::empty(404);
        };
        let params = req.params();
        {
            let mut st = self.shared.lock();
            st.calls.push(ApiCall {
                method: method.to_string(),
                params: params.clone(),
                at: Instant::now(),
            });
            if let Some(fault) = st.faults.get_mut(method).and_then(VecDeque::pop_front) {
                return match fault {
                    Fault::RateLimited(after) => {
                        MockResponse::json(429, &json!({"ok": false, "error": "ratelimited"}))
                            .with_header("Retry-After", after.to_string())
                    }
                    Fault::Error(e) => fail(&e),
                };
            }
        }
        let token = Self::token(req, &params);
        if method == "apps.connections.open" {
            return match token {
                None => fail("not_authed"),
                Some(t) if t != self.shared.app_token => fail("invalid_auth"),
                Some(_) => {
                    let mut st = self.shared.lock();
                    st.next_ticket += 1;
                    let ticket = format!("ticket-{}", st.next_ticket);
                    st.tickets.insert(ticket.clone());
                    ok(
                        json!({"url": format!("ws://127.0.0.1:{}/link/?ticket={ticket}&app_id={APP_ID}", self.shared.port())}),
                    )
                }
            };
        }
        match token {
            None => return fail("not_authed"),
            Some(t) if t == self.shared.app_token => return fail("not_allowed_token_type"),
            Some(t) if t != self.shared.bot_token => return fail("invalid_auth"),
            Some(_) => {}
        }
        let mut st = self.shared.lock();
        match method {
            "auth.test" => ok(json!({
                "url": "https://hermes.slack.com/", "team": "Hermes", "user": "hermes",
                "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID, "is_enterprise_install": false,
            })),
            "users.info" => match params["user"].as_str().and_then(|u| st.users.get(u)) {
                Some(u) => ok(json!({"user": u})),
                None => fail("user_not_found"),
            },
            "chat.postMessage" => {
                let Some(channel) = params["channel"].as_str().filter(|c| !c.is_empty()) else {
                    return fail("channel_not_found");
                };
                let text = params["text"].as_str().unwrap_or_default();
                let blocks = json_param(&params["blocks"]);
                if text.is_empty() && blocks.is_null() {
                    return fail("no_text");
                }
                if text.chars().count() > 40_000 {
                    return fail("msg_too_long");
                }
                if let Err(r) = check_blocks(&blocks) {
                    return r;
                }
                let ts = st.ts();
                let thread_ts = params["thread_ts"].as_str().map(str::to_string);
                st.messages.push(SlackMessage {
                    channel: channel.to_string(),
                    ts: ts.clone(),
                    user: BOT_USER_ID.to_string(),
                    text: text.to_string(),
                    blocks: (!blocks.is_null()).then(|| blocks.clone()),
                    thread_ts: thread_ts.clone(),
                    files: Vec::new(),
                    edits: Vec::new(),
                    deleted: false,
                });
                let mut message = json!({"type": "message", "text": text, "user": BOT_USER_ID, "bot_id": BOT_ID, "ts": ts, "team": TEAM_ID});
                if let Some(t) = thread_ts {
                    message["thread_ts"] = json!(t);
                }
                if !blocks.is_null() {
                    message["blocks"] = blocks;
                }
                ok(json!({"channel": channel, "ts": ts, "message": message}))
            }
            "chat.update" => {
                let (Some(channel), Some(ts)) = (params["channel"].as_str(), params["ts"].as_str())
                else {
                    return fail("message_not_found");
                };
                let blocks = json_param(&params["blocks"]);
                if let Err(r) = check_blocks(&blocks) {
                    return r;
                }
                let text = params["text"].as_str().unwrap_or_default();
                if text.chars().count() > 40_000 {
                    return fail("msg_too_long");
                }
                let Some(m) = st
                    .messages
                    .iter_mut()
                    .find(|m| m.channel == channel && m.ts == ts && !m.deleted)
                else {
                    return fail("message_not_found");
                };
                if m.user != BOT_USER_ID {
                    return fail("cant_update_message");
                }
                let old = std::mem::replace(&mut m.text, text.to_string());
                m.edits.push(old);
                // An empty list removes the blocks; no field keeps them (Slack's rule).
                match blocks {
                    Value::Null => {}
                    Value::Array(a) if a.is_empty() => m.blocks = None,
                    b => m.blocks = Some(b),
                }
                ok(json!({"channel": channel, "ts": ts, "text": text}))
            }
            "chat.delete" => {
                let (Some(channel), Some(ts)) = (params["channel"].as_str(), params["ts"].as_str())
                else {
                    return fail("message_not_found");
                };
                match st
                    .messages
                    .iter_mut()
                    .find(|m| m.channel == channel && m.ts == ts && !m.deleted)
                {
                    Some(m) if m.user != BOT_USER_ID => fail("cant_delete_message"),
                    Some(m) => {
                        m.deleted = true;
                        ok(json!({"channel": channel, "ts": ts}))
                    }
                    None => fail("message_not_found"),
                }
            }
            "assistant.threads.setStatus" => {
                if params["channel_id"].as_str().is_none() || params["thread_ts"].as_str().is_none()
                {
                    return fail("invalid_arguments");
                }
                st.statuses.push(params.clone());
                ok(json!({}))
            }
            "files.getUploadURLExternal" => {
                let (Some(name), Some(len)) = (
                    params["filename"].as_str(),
                    params["length"]
                        .as_str()
                        .and_then(|l| l.parse::<u64>().ok())
                        .or(params["length"].as_u64()),
                ) else {
                    return fail("invalid_arguments");
                };
                let _ = len;
                let file_id = st.id("F");
                st.uploads.insert(file_id.clone(), (name.to_string(), None));
                ok(
                    json!({"upload_url": format!("http://127.0.0.1:{}/upload/{file_id}", self.shared.port()), "file_id": file_id}),
                )
            }
            "files.completeUploadExternal" => {
                let files = json_param(&params["files"]);
                let Some(list) = files.as_array().filter(|l| !l.is_empty()) else {
                    return fail("invalid_arguments");
                };
                let channel = params["channel_id"].as_str().map(str::to_string);
                let mut out = Vec::new();
                let mut ids = Vec::new();
                for f in list {
                    let Some(id) = f["id"].as_str() else {
                        return fail("invalid_arguments");
                    };
                    match st.uploads.get(id) {
                        Some((name, Some(_))) => {
                            out.push(json!({"id": id, "name": name, "title": f["title"].as_str().unwrap_or(name)}));
                            ids.push(id.to_string());
                        }
                        _ => return fail("file_not_found"),
                    }
                }
                if let Some(channel) = channel {
                    let ts = st.ts();
                    let thread_ts = params["thread_ts"].as_str().map(str::to_string);
                    st.messages.push(SlackMessage {
                        channel: channel.clone(),
                        ts: ts.clone(),
                        user: BOT_USER_ID.to_string(),
                        text: params["initial_comment"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        blocks: None,
                        thread_ts,
                        files: ids,
                        edits: Vec::new(),
                        deleted: false,
                    });
                    for f in &mut out {
                        f["shares"] = json!({"private": {channel.clone(): [{"ts": ts}]}});
                    }
                }
                ok(json!({"files": out}))
            }
            _ => fail("unknown_method"),
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
            // Tickets are single-use.
            if st.tickets.remove(&ticket) {
                let id = st.next_connection;
                st.next_connection += 1;
                st.connections += 1;
                st.live = Some(Live { id, tx: tx.clone() });
                Some(id)
            } else {
                None
            }
        };
        let Some(conn) = conn else {
            let _ = ws.close(None).await;
            return;
        };
        let hello = json!({"type": "hello", "num_connections": 1,
            "debug_info": {"host": "mock", "build_number": 1, "approximate_connection_time": 18060},
            "connection_info": {"app_id": APP_ID}});
        let _ = tx.send(Outgoing::Text(hello.to_string()));
        {
            // Everything not acknowledged is delivered (again) on the new connection.
            let mut st = self.shared.lock();
            let pending: Vec<usize> = (0..st.envelopes.len())
                .filter(|i| !st.envelopes[*i].acked && st.envelopes[*i].deliveries <= 3)
                .collect();
            for i in pending {
                st.send_envelope(i);
            }
        }
        loop {
            tokio::select! {
                out = rx.recv() => match out {
                    Some(Outgoing::Text(t)) => {
                        if ws.send(WsMessage::Text(t.into())).await.is_err() { break; }
                    }
                    Some(Outgoing::Drop) | None => break,
                },
                frame = ws.next() => match frame {
                    Some(Ok(WsMessage::Text(text))) => {
                        if let Ok(v) = serde_json::from_str::<Value>(&text)
                            && let Some(id) = v["envelope_id"].as_str()
                        {
                            let mut st = self.shared.lock();
                            st.acks.push(id.to_string());
                            if let Some(e) = st.envelopes.iter_mut().find(|e| e.envelope_id == id) {
                                e.acked = true;
                            }
                        }
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
}

impl Service for SlackService {
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

/// Waits (polling) until `cond` holds; false after `timeout`.
pub fn wait_for(timeout: Duration, cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}
