//! A Mattermost double on 127.0.0.1, following <https://api.mattermost.com> (REST API v4) and
//! <https://developers.mattermost.com/api-documentation/#/#websocket>:
//!
//! - REST `…/api/v4/…` with `Authorization: Bearer <token>`: `GET users/me`, `POST posts`
//!   (a `root_id` must name a root post, as the server requires; 16,383 characters at most),
//!   `PUT posts/{id}/patch`, `DELETE posts/{id}`, `POST users/{id}/typing`, `POST files`
//!   (multipart `channel_id` + `files`), `GET files/{id}` and `GET files/{id}/info`. Errors are
//!   `{"id", "message", "status_code"}` with the HTTP status; rate limits HTTP 429 with
//!   `X-Ratelimit-Reset`.
//! - WebSocket `/api/v4/websocket`: the first message must be `authentication_challenge`
//!   (seq 1) with the token; the answer is `{"status": "OK", "seq_reply": 1}` then a `hello`
//!   event carrying the `connection_id`. Events carry an increasing `seq`. Reliable
//!   reconnects: a client that comes back with `?connection_id=…&sequence_number=N` gets the
//!   events from N on that it missed (the server's dead queue); a client without them gets a
//!   new connection id and misses them. Every post, the bot's own included, is broadcast as a
//!   `posted` event whose `post` is a JSON string.
//! - Faults: drop the socket, rate-limit or fail the next call to a path.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};

pub const BOT_USER_ID: &str = "botuserid0000000000000000a";
pub const BOT_USERNAME: &str = "hermes";
pub const TEAM_ID: &str = "teamid00000000000000000000";
/// Events kept for reliable reconnects (the server's dead queue holds 128).
const DEAD_QUEUE: usize = 128;

/// A post in the mock's channels.
#[derive(Debug, Clone, PartialEq)]
pub struct Post {
    pub id: String,
    pub channel_id: String,
    pub user_id: String,
    pub message: String,
    pub root_id: String,
    pub file_ids: Vec<String>,
    pub edits: Vec<String>,
    pub deleted: bool,
}

#[derive(Debug)]
enum Outgoing {
    Text(String),
    Drop,
}

#[derive(Debug, Clone)]
enum Fault {
    RateLimited(u64),
    Status(u16),
}

#[derive(Debug, Default)]
struct State {
    posts: Vec<Post>,
    /// channel id → (type `D`/`O`/`P`/`G`, display name).
    channels: HashMap<String, (String, String)>,
    users: HashMap<String, String>,
    files: HashMap<String, (String, String, Vec<u8>)>,
    typing: Vec<Value>,
    requests: Vec<(String, String, Value)>,
    faults: HashMap<String, VecDeque<Fault>>,
    next_id: u64,
    seq: u64,
    connection_id: String,
    /// Recent events with their seq, for reliable reconnects.
    dead_queue: VecDeque<(u64, String)>,
    live: Option<(usize, mpsc::UnboundedSender<Outgoing>)>,
    next_conn: usize,
    connections: usize,
    resumed: usize,
}

impl State {
    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("{:026x}", self.next_id)
    }

    /// Sends (or queues, when nobody is connected) an event with the next seq.
    fn broadcast(&mut self, event: &str, data: Value, channel_id: &str) {
        let seq = self.seq;
        self.seq += 1;
        let frame = json!({
            "event": event,
            "data": data,
            "broadcast": {"omit_users": null, "user_id": "", "channel_id": channel_id, "team_id": ""},
            "seq": seq,
        })
        .to_string();
        self.dead_queue.push_back((seq, frame.clone()));
        while self.dead_queue.len() > DEAD_QUEUE {
            self.dead_queue.pop_front();
        }
        if let Some((_, tx)) = &self.live {
            let _ = tx.send(Outgoing::Text(frame));
        }
    }

    fn post_json(&self, p: &Post) -> Value {
        json!({
            "id": p.id, "create_at": 1_700_000_000_000u64, "update_at": 1_700_000_000_000u64,
            "edit_at": 0, "delete_at": 0, "is_pinned": false, "user_id": p.user_id,
            "channel_id": p.channel_id, "root_id": p.root_id, "original_id": "", "message": p.message,
            "type": "", "props": {}, "hashtags": "", "pending_post_id": "", "reply_count": 0,
            "file_ids": p.file_ids,
            "metadata": {"files": p.file_ids.iter().filter_map(|f| self.files.get(f).map(|(name, mime, bytes)|
                json!({"id": f, "name": name, "mime_type": mime, "size": bytes.len()}))).collect::<Vec<_>>()},
        })
    }

    fn announce(&mut self, index: usize) {
        let post = self.posts[index].clone();
        let (kind, display) = self
            .channels
            .get(&post.channel_id)
            .cloned()
            .unwrap_or_else(|| ("O".into(), "Town Square".into()));
        let sender = self
            .users
            .get(&post.user_id)
            .cloned()
            .unwrap_or_else(|| BOT_USERNAME.to_string());
        let data = json!({
            "channel_display_name": display,
            "channel_name": post.channel_id,
            "channel_type": kind,
            "post": self.post_json(&post).to_string(),
            "sender_name": format!("@{sender}"),
            "set_online": true,
            "team_id": TEAM_ID,
        });
        self.broadcast("posted", data, &post.channel_id);
    }
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

/// A running Mattermost double.
pub struct MattermostMock {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MattermostMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MattermostMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl MattermostMock {
    /// A server whose bot account has the access token `token`.
    #[allow(clippy::expect_used)]
    pub fn start(token: &str) -> MattermostMock {
        let shared = Arc::new(Shared {
            token: token.to_string(),
            state: Mutex::new(State::default()),
        });
        let server = Server::start(
            "mattermost",
            Arc::new(MattermostService {
                shared: Arc::clone(&shared),
            }),
        )
        .expect("start the Mattermost mock");
        MattermostMock { server, shared }
    }

    /// The value for `MATTERMOST_URL`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    /// A user (id → username) and their direct channel with the bot; returns the channel id.
    pub fn add_user(&self, user_id: &str, username: &str) -> String {
        let mut st = self.shared.lock();
        st.users.insert(user_id.to_string(), username.to_string());
        let channel = format!("{BOT_USER_ID}__{user_id}");
        st.channels
            .insert(channel.clone(), ("D".into(), format!("@{username}")));
        channel
    }

    /// An open channel (`O`) named `display`.
    pub fn add_channel(&self, channel_id: &str, display: &str) {
        self.shared
            .lock()
            .channels
            .insert(channel_id.to_string(), ("O".into(), display.to_string()));
    }

    /// `user_id` posts `message` in `channel_id` (under `root_id`); returns the post id.
    pub fn post(
        &self,
        channel_id: &str,
        user_id: &str,
        message: &str,
        root_id: Option<&str>,
    ) -> String {
        let mut st = self.shared.lock();
        let id = st.id();
        st.posts.push(Post {
            id: id.clone(),
            channel_id: channel_id.to_string(),
            user_id: user_id.to_string(),
            message: message.to_string(),
            root_id: root_id.unwrap_or_default().to_string(),
            file_ids: Vec::new(),
            edits: Vec::new(),
            deleted: false,
        });
        let index = st.posts.len() - 1;
        st.announce(index);
        id
    }

    /// Posts the bot made in `channel_id` (deleted ones included, marked).
    pub fn bot_posts(&self, channel_id: &str) -> Vec<Post> {
        self.shared
            .lock()
            .posts
            .iter()
            .filter(|p| p.channel_id == channel_id && p.user_id == BOT_USER_ID)
            .cloned()
            .collect()
    }

    /// Every request as `(method, path, params)`.
    pub fn requests(&self) -> Vec<(String, String, Value)> {
        self.shared.lock().requests.clone()
    }

    pub fn typing_calls(&self) -> Vec<Value> {
        self.shared.lock().typing.clone()
    }

    /// A file's name and bytes as uploaded.
    pub fn file(&self, id: &str) -> Option<(String, Vec<u8>)> {
        self.shared
            .lock()
            .files
            .get(id)
            .map(|(n, _, b)| (n.clone(), b.clone()))
    }

    pub fn connected(&self) -> bool {
        self.shared.lock().live.is_some()
    }

    /// WebSocket connections opened so far, and how many of them resumed.
    pub fn connections(&self) -> (usize, usize) {
        let st = self.shared.lock();
        (st.connections, st.resumed)
    }

    /// Drops the WebSocket without a close frame.
    pub fn drop_connection(&self) {
        let mut st = self.shared.lock();
        if let Some((_, tx)) = st.live.take() {
            let _ = tx.send(Outgoing::Drop);
        }
    }

    /// The next request to `path` (e.g. `/api/v4/posts`) answers HTTP 429.
    pub fn rate_limit_next(&self, path: &str, reset_secs: u64) {
        self.shared
            .lock()
            .faults
            .entry(path.to_string())
            .or_default()
            .push_back(Fault::RateLimited(reset_secs));
    }

    /// The next request to `path` answers `status` with a Mattermost error body.
    pub fn fail_next(&self, path: &str, status: u16) {
        self.shared
            .lock()
            .faults
            .entry(path.to_string())
            .or_default()
            .push_back(Fault::Status(status));
    }
}

struct MattermostService {
    shared: Arc<Shared>,
}

fn error(status: u16, id: &str, message: &str) -> MockResponse {
    MockResponse::json(
        status,
        &json!({"id": id, "message": message, "detailed_error": "", "request_id": "mockrequestid", "status_code": status}),
    )
}

impl MattermostService {
    fn handle(&self, req: &MockRequest) -> MockResponse {
        let path = req.path().to_string();
        let params = req.params();
        let mut st = self.shared.lock();
        st.requests
            .push((req.method.clone(), path.clone(), params.clone()));
        if let Some(fault) = st.faults.get_mut(&path).and_then(VecDeque::pop_front) {
            return match fault {
                Fault::RateLimited(reset) => {
                    error(429, "api.context.rate_limit.app_error", "Too many requests")
                        .with_header("X-Ratelimit-Reset", reset.to_string())
                }
                Fault::Status(s) => error(s, "api.mock.fault.app_error", "injected fault"),
            };
        }
        if req.header("authorization") != Some(&format!("Bearer {}", self.shared.token)) {
            return error(
                401,
                "api.context.session_expired.app_error",
                "Invalid or expired session, please login again.",
            );
        }
        let Some(rest) = path.strip_prefix("/api/v4/") else {
            return error(
                404,
                "api.context.404.app_error",
                "Sorry, we could not find the page.",
            );
        };
        let parts: Vec<&str> = rest.split('/').collect();
        match (req.method.as_str(), parts.as_slice()) {
            ("GET", ["users", "me"]) => MockResponse::json(
                200,
                &json!({"id": BOT_USER_ID, "username": BOT_USERNAME, "is_bot": true, "roles": "system_user"}),
            ),
            ("POST", ["posts"]) => {
                let Some(channel) = params["channel_id"].as_str().filter(|c| !c.is_empty()) else {
                    return error(
                        400,
                        "api.context.invalid_body_param.app_error",
                        "Invalid or missing channel_id in request body.",
                    );
                };
                let message = params["message"].as_str().unwrap_or_default();
                let file_ids: Vec<String> = params["file_ids"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect();
                if message.is_empty() && file_ids.is_empty() {
                    return error(400, "model.post.is_valid.msg.app_error", "Invalid message.");
                }
                if message.chars().count() > 16_383 {
                    return error(400, "model.post.is_valid.msg.app_error", "Invalid message.");
                }
                if file_ids.len() > 5 || file_ids.iter().any(|f| !st.files.contains_key(f)) {
                    return error(
                        400,
                        "model.post.is_valid.file_ids.app_error",
                        "Invalid file ids.",
                    );
                }
                let root = params["root_id"].as_str().unwrap_or_default().to_string();
                if !root.is_empty()
                    && !st
                        .posts
                        .iter()
                        .any(|p| p.id == root && p.root_id.is_empty() && p.channel_id == channel)
                {
                    return error(
                        400,
                        "api.post.create_post.root_id.app_error",
                        "Invalid RootId parameter.",
                    );
                }
                let id = st.id();
                let post = Post {
                    id,
                    channel_id: channel.to_string(),
                    user_id: BOT_USER_ID.to_string(),
                    message: message.to_string(),
                    root_id: root,
                    file_ids,
                    edits: Vec::new(),
                    deleted: false,
                };
                let body = st.post_json(&post);
                st.posts.push(post);
                let index = st.posts.len() - 1;
                st.announce(index);
                MockResponse::json(201, &body)
            }
            ("PUT", ["posts", id, "patch"]) => {
                let message = params["message"].as_str().unwrap_or_default().to_string();
                if message.chars().count() > 16_383 {
                    return error(400, "model.post.is_valid.msg.app_error", "Invalid message.");
                }
                let Some(index) = st.posts.iter().position(|p| p.id == *id && !p.deleted) else {
                    return error(404, "app.post.get.app_error", "Unable to get the post.");
                };
                if st.posts[index].user_id != BOT_USER_ID {
                    return error(
                        403,
                        "api.context.permissions.app_error",
                        "You do not have the appropriate permissions.",
                    );
                }
                let old = std::mem::replace(&mut st.posts[index].message, message);
                st.posts[index].edits.push(old);
                let body = st.post_json(&st.posts[index]);
                MockResponse::json(200, &body)
            }
            ("DELETE", ["posts", id]) => {
                match st.posts.iter_mut().find(|p| p.id == *id && !p.deleted) {
                    Some(p) if p.user_id != BOT_USER_ID => error(
                        403,
                        "api.context.permissions.app_error",
                        "You do not have the appropriate permissions.",
                    ),
                    Some(p) => {
                        p.deleted = true;
                        MockResponse::json(200, &json!({"status": "OK"}))
                    }
                    None => error(404, "app.post.get.app_error", "Unable to get the post."),
                }
            }
            ("POST", ["users", user, "typing"]) => {
                if *user != BOT_USER_ID && *user != "me" {
                    return error(
                        403,
                        "api.context.permissions.app_error",
                        "You do not have the appropriate permissions.",
                    );
                }
                if params["channel_id"].as_str().is_none() {
                    return error(
                        400,
                        "api.context.invalid_body_param.app_error",
                        "Invalid or missing channel_id in request body.",
                    );
                }
                st.typing.push(params.clone());
                MockResponse::json(200, &json!({"status": "OK"}))
            }
            ("POST", ["files"]) => {
                let file = &params["files"];
                let (Some(name), Some(channel)) =
                    (file["filename"].as_str(), params["channel_id"].as_str())
                else {
                    return error(
                        400,
                        "api.file.upload_file.incorrect_number_of_files.app_error",
                        "Unable to upload files.",
                    );
                };
                let bytes = file["text"]
                    .as_str()
                    .unwrap_or_default()
                    .as_bytes()
                    .to_vec();
                let mime = file["content_type"]
                    .as_str()
                    .unwrap_or("application/octet-stream")
                    .to_string();
                let id = st.id();
                st.files
                    .insert(id.clone(), (name.to_string(), mime.clone(), bytes.clone()));
                MockResponse::json(
                    201,
                    &json!({"file_infos": [{"id": id, "user_id": BOT_USER_ID, "channel_id": channel, "name": name, "mime_type": mime, "size": bytes.len()}], "client_ids": []}),
                )
            }
            ("GET", ["files", id]) => match st.files.get(*id) {
                Some((_, mime, bytes)) => MockResponse::bytes(200, mime, bytes.clone()),
                None => error(
                    404,
                    "app.file_info.get.app_error",
                    "Unable to get the file info.",
                ),
            },
            ("GET", ["files", id, "info"]) => match st.files.get(*id) {
                Some((name, mime, bytes)) => MockResponse::json(
                    200,
                    &json!({"id": id, "name": name, "mime_type": mime, "size": bytes.len()}),
                ),
                None => error(
                    404,
                    "app.file_info.get.app_error",
                    "Unable to get the file info.",
                ),
            },
            _ => error(
                404,
                "api.context.404.app_error",
                "Sorry, we could not find the page.",
            ),
        }
    }

    async fn socket(self: Arc<Self>, req: MockRequest, mut ws: WebSocketStream<TcpStream>) {
        // The first message must authenticate.
        let first = tokio::time::timeout(Duration::from_secs(10), ws.next()).await;
        let authed = match first {
            Ok(Some(Ok(WsMessage::Text(t)))) => {
                serde_json::from_str::<Value>(&t).ok().is_some_and(|v| {
                    v["action"] == json!("authentication_challenge")
                        && v["data"]["token"].as_str() == Some(self.shared.token.as_str())
                })
            }
            _ => false,
        };
        if !authed {
            let fail = json!({"status": "FAIL", "seq_reply": 1, "error": {"id": "api.web_socket_router.not_authenticated.app_error", "message": "The connection is not authenticated."}});
            let _ = ws.send(WsMessage::Text(fail.to_string().into())).await;
            let _ = ws.close(None).await;
            return;
        }
        let query: HashMap<String, String> = req.query().into_iter().collect();
        let (tx, mut rx) = mpsc::unbounded_channel::<Outgoing>();
        let conn = {
            let mut st = self.shared.lock();
            let conn = st.next_conn;
            st.next_conn += 1;
            st.connections += 1;
            let resume_from = query
                .get("connection_id")
                .filter(|c| **c == st.connection_id && !c.is_empty())
                .and_then(|_| query.get("sequence_number"))
                .and_then(|n| n.parse::<u64>().ok());
            let _ = tx.send(Outgoing::Text(
                json!({"status": "OK", "seq_reply": 1}).to_string(),
            ));
            match resume_from {
                Some(from) if st.dead_queue.front().is_none_or(|(s, _)| *s <= from) => {
                    st.resumed += 1;
                    for (seq, frame) in st.dead_queue.iter() {
                        if *seq >= from {
                            let _ = tx.send(Outgoing::Text(frame.clone()));
                        }
                    }
                }
                _ => {
                    st.connection_id = format!("conn{:022}", conn + 1);
                    let connection_id = st.connection_id.clone();
                    st.live = Some((conn, tx.clone()));
                    st.broadcast(
                        "hello",
                        json!({"server_version": "10.5.0.mock", "connection_id": connection_id}),
                        "",
                    );
                }
            }
            st.live = Some((conn, tx.clone()));
            conn
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
                    Some(Ok(WsMessage::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                },
            }
        }
        let mut st = self.shared.lock();
        if st.live.as_ref().is_some_and(|(id, _)| *id == conn) {
            st.live = None;
        }
    }
}

impl Service for MattermostService {
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
