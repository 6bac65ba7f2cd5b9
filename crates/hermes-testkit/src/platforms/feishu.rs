//! A Feishu / Lark Open API double on 127.0.0.1, following Feishu's server API reference
//! (<https://open.feishu.cn/document/server-docs/im-v1/message/create>), and the other half of
//! the conversation: Feishu's event deliveries to the gateway, encrypted and signed as Feishu
//! does.
//!
//! - `POST /open-apis/auth/v3/tenant_access_token/internal` `{"app_id", "app_secret"}` →
//!   `{"code": 0, "msg": "ok", "tenant_access_token": "t-…", "expire": 7200}`; wrong
//!   credentials: HTTP 400 `{"code": 10014, "msg": "app secret invalid"}`.
//! - Every other call needs `Authorization: Bearer <the current token>`, else HTTP 400
//!   `{"code": 99991663, "msg": "Invalid access token for authorization…"}`;
//!   [`FeishuMock::expire_token`] makes the current token invalid, as at its expiry.
//! - `POST /open-apis/im/v1/messages?receive_id_type=chat_id` (`receive_id`, `msg_type`,
//!   `content` a JSON string: `text` non-empty, `post` with a locale holding `content` rows,
//!   `interactive` with `elements`, `image` with `image_key`, `file`/`audio` with `file_key`;
//!   text at most 150 KB, cards 30 KB; otherwise HTTP 400 code 230001) and `POST
//!   /open-apis/im/v1/messages/{id}/reply` → `{"code": 0, "data": {"message_id": "om_…",
//!   "chat_id", "msg_type", "body": {"content"}, …}}`;
//! - `PUT` (text, post) and `PATCH` (cards) `/open-apis/im/v1/messages/{id}`, `DELETE` (recall);
//! - `GET /open-apis/im/v1/messages/{id}/resources/{key}?type=image|file`: the bytes of a
//!   resource added with [`FeishuMock::add_resource`];
//! - `POST /open-apis/im/v1/images` (`image_type`, `image`) and `/open-apis/im/v1/files`
//!   (`file_type`, `file_name`, `file`) → `{"image_key"}` / `{"file_key"}`;
//! - `GET /open-apis/bot/v3/info` → `{"code": 0, "bot": {"app_name", "open_id", …}}`.
//! - Faults: the next request to a path answers a Feishu error (`fail_next`), e.g. code
//!   99991400 (rate limited) or 230011 (the message replied to was withdrawn).
//! - [`EventSender`]: posts events to the gateway's request URL, `{"encrypt": …}` when it has an
//!   Encrypt Key (AES-256-CBC, key SHA-256(encrypt key), random IV first, base64), with
//!   `X-Lark-Request-Timestamp`, `X-Lark-Request-Nonce` and `X-Lark-Signature` (hex SHA-256 of
//!   timestamp + nonce + encrypt key + body). [`text_message`], [`card_action`] and
//!   [`url_verification`] build the payloads Feishu sends.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine;
use ring::digest;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Value, json};

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};
use crate::http_client::{HttpReply, http};

pub const APP_ID: &str = "cli_a5f8b2c3d4e5f601";
pub const BOT_OPEN_ID: &str = "ou_7d8a6e6df7621556ce0d21922b676706ccs";
pub const BOT_NAME: &str = "Hermes Test";

type Aes256CbcEnc = cbc::Encryptor<aes::Aes256>;

/// A request the double received.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenApiRequest {
    pub method: String,
    /// Without the query.
    pub path: String,
    pub query: Vec<(String, String)>,
    pub authorization: Option<String>,
    /// JSON bodies as sent; multipart bodies as `{field: value}`.
    pub body: Value,
}

/// A message the bot sent (created or replied).
#[derive(Debug, Clone, PartialEq)]
pub struct SentMessage {
    pub message_id: String,
    pub chat_id: String,
    /// The message replied to.
    pub reply_to: Option<String>,
    pub msg_type: String,
    /// `content` parsed.
    pub content: Value,
    /// The request body as sent.
    pub body: Value,
}

impl SentMessage {
    /// The text a user sees: a text's `text`, a post's `md`/`text` elements, a card's
    /// markdown.
    pub fn text(&self) -> String {
        match self.msg_type.as_str() {
            "text" => self.content["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            "post" => {
                let body = self
                    .content
                    .as_object()
                    .and_then(|o| o.values().next())
                    .cloned()
                    .unwrap_or(Value::Null);
                body["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|row| {
                        row.as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|e| e["text"].as_str())
                            .collect::<String>()
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            "interactive" => self.content["elements"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }

    /// A card's buttons: `(label, value)`.
    pub fn buttons(&self) -> Vec<(String, Value)> {
        self.content["elements"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["tag"] == "action")
            .flat_map(|e| e["actions"].as_array().cloned().unwrap_or_default())
            .map(|b| {
                (
                    b["text"]["content"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    b["value"].clone(),
                )
            })
            .collect()
    }
}

#[derive(Debug, Default)]
struct State {
    requests: Vec<OpenApiRequest>,
    sent: Vec<SentMessage>,
    edits: Vec<(String, String, Value)>,
    recalled: Vec<String>,
    /// (message id, key) → (mime, bytes).
    resources: HashMap<(String, String), (String, Vec<u8>)>,
    uploads: HashMap<String, Vec<u8>>,
    faults: HashMap<String, VecDeque<(u16, i64, String)>>,
    token_serial: u64,
    next_id: u64,
}

/// Messages users sent (through [`EventSender`]): message id → chat id, so replies to them
/// land in the right chat.
type Inbound = Arc<Mutex<HashMap<String, String>>>;

struct Shared {
    app_secret: String,
    state: Mutex<State>,
    inbound: Inbound,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Feishu's error body.
pub fn feishu_error(status: u16, code: i64, msg: &str) -> MockResponse {
    MockResponse::json(status, &json!({"code": code, "msg": msg, "data": {}}))
}

fn invalid(msg: &str) -> MockResponse {
    feishu_error(
        400,
        230001,
        &format!("Your request contains an invalid request parameter, ext={msg}"),
    )
}

fn token_of(serial: u64) -> String {
    format!("t-g1044ghJRUIJJ5ELPZ5GQX2OW7GNSSD{serial:04}")
}

/// Checks a message's `msg_type` and `content` against the documented rules.
fn check_content(msg_type: &str, content: &str) -> Result<Value, String> {
    let parsed: Value =
        serde_json::from_str(content).map_err(|_| "content is not a JSON string".to_string())?;
    match msg_type {
        "text" => {
            if parsed["text"].as_str().is_none_or(str::is_empty) {
                return Err("text is empty".into());
            }
            if content.len() > 150 * 1024 {
                return Err("text over 150 KB".into());
            }
        }
        "post" => {
            let ok = parsed.as_object().is_some_and(|o| {
                !o.is_empty()
                    && o.values().all(|v| {
                        v["content"]
                            .as_array()
                            .is_some_and(|rows| rows.iter().all(Value::is_array))
                    })
            });
            if !ok {
                return Err("the content format of the post type is incorrect".into());
            }
        }
        "interactive" => {
            if !parsed["elements"].is_array() {
                return Err("card has no elements".into());
            }
            if content.len() > 30 * 1024 {
                return Err("card over 30 KB".into());
            }
        }
        "image" => {
            if parsed["image_key"].as_str().is_none_or(str::is_empty) {
                return Err("image_key missing".into());
            }
        }
        "file" | "audio" | "media" => {
            if parsed["file_key"].as_str().is_none_or(str::is_empty) {
                return Err("file_key missing".into());
            }
        }
        other => return Err(format!("msg_type {other:?} unsupported by this double")),
    }
    Ok(parsed)
}

struct OpenApiService {
    shared: Arc<Shared>,
}

impl OpenApiService {
    fn handle(&self, req: &MockRequest) -> MockResponse {
        let path = req.path().to_string();
        let authorization = req.header("authorization").map(str::to_string);
        let multipart = req
            .header("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("multipart/"));
        let body = if multipart {
            req.params()
        } else {
            serde_json::from_slice(&req.body).unwrap_or(Value::Null)
        };
        let query = req.query();
        let mut st = self.shared.lock();
        st.requests.push(OpenApiRequest {
            method: req.method.clone(),
            path: path.clone(),
            query: query.clone(),
            authorization: authorization.clone(),
            body: body.clone(),
        });
        if let Some((status, code, msg)) = st.faults.get_mut(&path).and_then(VecDeque::pop_front) {
            return feishu_error(status, code, &msg);
        }
        if req.method == "POST" && path == "/open-apis/auth/v3/tenant_access_token/internal" {
            if body["app_id"] != APP_ID || body["app_secret"] != self.shared.app_secret.as_str() {
                return feishu_error(400, 10014, "app secret invalid");
            }
            return MockResponse::json(
                200,
                &json!({"code": 0, "msg": "ok", "tenant_access_token": token_of(st.token_serial), "expire": 7200}),
            );
        }
        if authorization.as_deref() != Some(&format!("Bearer {}", token_of(st.token_serial))) {
            return feishu_error(
                400,
                99991663,
                "Invalid access token for authorization. Please make a request with token attached.",
            );
        }
        let q = |k: &str| {
            query
                .iter()
                .find(|(name, _)| name == k)
                .map(|(_, v)| v.clone())
        };
        let rest = path.strip_prefix("/open-apis/").unwrap_or_default();
        let segments: Vec<&str> = rest.split('/').collect();
        match (req.method.as_str(), segments.as_slice()) {
            ("GET", ["bot", "v3", "info"]) => MockResponse::json(
                200,
                &json!({"code": 0, "msg": "ok", "bot": {
                    "activate_status": 2, "app_name": BOT_NAME, "avatar_url": "https://example.invalid/a.png",
                    "ip_white_list": [], "open_id": BOT_OPEN_ID}}),
            ),
            ("POST", ["im", "v1", "messages"]) => {
                let Some(id_type) = q("receive_id_type") else {
                    return invalid("receive_id_type is required");
                };
                if id_type != "chat_id" {
                    return invalid("this double knows receive_id_type=chat_id only");
                }
                let Some(chat) = body["receive_id"].as_str().filter(|c| c.starts_with("oc_"))
                else {
                    return invalid("receive_id is not a chat id");
                };
                self.accept(&mut st, chat.to_string(), None, &body)
            }
            ("POST", ["im", "v1", "messages", parent, "reply"]) => {
                let known = self
                    .shared
                    .inbound
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(*parent)
                    .cloned();
                let chat = known.or_else(|| {
                    st.sent
                        .iter()
                        .find(|m| m.message_id == *parent)
                        .map(|m| m.chat_id.clone())
                });
                let Some(chat) = chat else {
                    return feishu_error(400, 230002, "The message is not found.");
                };
                self.accept(&mut st, chat, Some(parent.to_string()), &body)
            }
            ("PUT" | "PATCH", ["im", "v1", "messages", id]) => {
                let (msg_type, content) = if req.method == "PUT" {
                    let t = body["msg_type"].as_str().unwrap_or_default();
                    if !matches!(t, "text" | "post") {
                        return invalid("only text and post messages can be updated");
                    }
                    (t.to_string(), body["content"].as_str().unwrap_or_default())
                } else {
                    (
                        "interactive".to_string(),
                        body["content"].as_str().unwrap_or_default(),
                    )
                };
                match check_content(&msg_type, content) {
                    Ok(parsed) => {
                        // What the chat shows from now on.
                        if let Some(m) = st.sent.iter_mut().find(|m| m.message_id == *id) {
                            m.msg_type = msg_type.clone();
                            m.content = parsed.clone();
                        }
                        st.edits.push((id.to_string(), msg_type, parsed));
                        MockResponse::json(200, &json!({"code": 0, "msg": "success", "data": {}}))
                    }
                    Err(why) => invalid(&why),
                }
            }
            ("DELETE", ["im", "v1", "messages", id]) => {
                st.recalled.push(id.to_string());
                MockResponse::json(200, &json!({"code": 0, "msg": "success", "data": {}}))
            }
            ("GET", ["im", "v1", "messages", id, "resources", key]) => {
                let Some(kind) = q("type").filter(|t| t == "image" || t == "file") else {
                    return invalid("type must be image or file");
                };
                let _ = kind;
                match st.resources.get(&(id.to_string(), key.to_string())) {
                    Some((mime, bytes)) => MockResponse::bytes(200, mime, bytes.clone()),
                    None => feishu_error(400, 234003, "File not in msg."),
                }
            }
            ("POST", ["im", "v1", "images"]) => {
                if body["image_type"] != "message" || !body["image"].is_object() {
                    return invalid("image_type and image are required");
                }
                st.next_id += 1;
                let key = format!("img_v3_02{:06x}", st.next_id);
                let bytes = body["image"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .as_bytes()
                    .to_vec();
                st.uploads.insert(key.clone(), bytes);
                MockResponse::json(
                    200,
                    &json!({"code": 0, "msg": "success", "data": {"image_key": key}}),
                )
            }
            ("POST", ["im", "v1", "files"]) => {
                if body["file_type"].as_str().is_none() || !body["file"].is_object() {
                    return invalid("file_type and file are required");
                }
                st.next_id += 1;
                let key = format!("file_v3_00{:06x}", st.next_id);
                let bytes = body["file"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .as_bytes()
                    .to_vec();
                st.uploads.insert(key.clone(), bytes);
                MockResponse::json(
                    200,
                    &json!({"code": 0, "msg": "success", "data": {"file_key": key}}),
                )
            }
            _ => feishu_error(404, 1254000, "404 page not found"),
        }
    }

    fn accept(
        &self,
        st: &mut State,
        chat_id: String,
        reply_to: Option<String>,
        body: &Value,
    ) -> MockResponse {
        let msg_type = body["msg_type"].as_str().unwrap_or_default().to_string();
        let content = match body["content"].as_str() {
            Some(c) => c,
            None => return invalid("content must be a string"),
        };
        let parsed = match check_content(&msg_type, content) {
            Ok(p) => p,
            Err(why) => return invalid(&why),
        };
        st.next_id += 1;
        let message_id = format!("om_dc13264520392913993dd051dba2{:04x}", st.next_id);
        st.sent.push(SentMessage {
            message_id: message_id.clone(),
            chat_id: chat_id.clone(),
            reply_to: reply_to.clone(),
            msg_type: msg_type.clone(),
            content: parsed,
            body: body.clone(),
        });
        MockResponse::json(
            200,
            &json!({"code": 0, "msg": "success", "data": {
                "message_id": message_id, "root_id": reply_to, "parent_id": reply_to,
                "msg_type": msg_type, "create_time": "1609073151345", "update_time": "1609073151345",
                "deleted": false, "updated": false, "chat_id": chat_id,
                "sender": {"id": APP_ID, "id_type": "app_id", "sender_type": "app", "tenant_key": "736588c9260f175e"},
                "body": {"content": content}, "mentions": []}}),
        )
    }
}

impl Service for OpenApiService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.handle(&req) })
    }
}

/// The Open API double.
pub struct FeishuMock {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for FeishuMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeishuMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl FeishuMock {
    /// An Open API where app [`APP_ID`] has the secret `app_secret`.
    #[allow(clippy::expect_used)]
    pub fn start(app_secret: &str) -> FeishuMock {
        let shared = Arc::new(Shared {
            app_secret: app_secret.to_string(),
            state: Mutex::new(State::default()),
            inbound: Inbound::default(),
        });
        let service = Arc::new(OpenApiService {
            shared: Arc::clone(&shared),
        });
        let server = Server::start("feishu", service).expect("start the Feishu mock");
        FeishuMock { server, shared }
    }

    /// Feishu's deliveries to the gateway's request URL at `addr` (`127.0.0.1:PORT`), encrypted
    /// and signed with `encrypt_key` (empty: plain JSON, unsigned); the messages delivered
    /// become known to this API, so replies to them work.
    pub fn sender(&self, addr: &str, path: &str, encrypt_key: &str) -> EventSender {
        EventSender {
            addr: addr.to_string(),
            path: path.to_string(),
            encrypt_key: encrypt_key.to_string(),
            inbound: Arc::clone(&self.shared.inbound),
        }
    }

    /// The value for `platforms.feishu.extra.base_url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    /// A file a user sent in message `message_id` under `key`.
    pub fn add_resource(&self, message_id: &str, key: &str, mime: &str, bytes: Vec<u8>) {
        self.shared.lock().resources.insert(
            (message_id.to_string(), key.to_string()),
            (mime.to_string(), bytes),
        );
    }

    /// The current tenant token stops working (a new one is handed out from now on).
    pub fn expire_token(&self) {
        self.shared.lock().token_serial += 1;
    }

    pub fn requests(&self) -> Vec<OpenApiRequest> {
        self.shared.lock().requests.clone()
    }

    /// Messages the bot sent, in order, with their edits applied.
    pub fn sent(&self) -> Vec<SentMessage> {
        self.shared.lock().sent.clone()
    }

    /// Ids of the messages the bot recalled.
    pub fn recalled(&self) -> Vec<String> {
        self.shared.lock().recalled.clone()
    }

    /// Texts of the messages sent to `chat_id` (replies included) as the chat shows them:
    /// edits applied, recalled messages gone.
    pub fn texts_to(&self, chat_id: &str) -> Vec<String> {
        let recalled = self.recalled();
        self.sent()
            .iter()
            .filter(|m| m.chat_id == chat_id && !recalled.contains(&m.message_id))
            .map(SentMessage::text)
            .collect()
    }

    /// Edits: (message id, msg_type, content).
    pub fn edits(&self) -> Vec<(String, String, Value)> {
        self.shared.lock().edits.clone()
    }

    /// Uploaded bytes by key.
    pub fn upload(&self, key: &str) -> Option<Vec<u8>> {
        self.shared.lock().uploads.get(key).cloned()
    }

    /// The next request to `path` answers HTTP `status` with Feishu error `code`.
    pub fn fail_next(&self, path: &str, status: u16, code: i64, msg: &str) {
        self.shared
            .lock()
            .faults
            .entry(path.to_string())
            .or_default()
            .push_back((status, code, msg.to_string()));
    }
}

/// `{"encrypt": base64(iv ‖ AES-256-CBC(plain))}` with key SHA-256(`encrypt_key`).
#[allow(clippy::expect_used)]
pub fn encrypt(encrypt_key: &str, plain: &str) -> String {
    let key = digest::digest(&digest::SHA256, encrypt_key.as_bytes());
    let mut iv = [0u8; 16];
    SystemRandom::new().fill(&mut iv).expect("random IV");
    let mut buf = plain.as_bytes().to_vec();
    let len = buf.len();
    buf.resize(len + 16, 0);
    let ct = Aes256CbcEnc::new_from_slices(key.as_ref(), &iv)
        .expect("key and IV sizes")
        .encrypt_padded_mut::<Pkcs7>(&mut buf, len)
        .expect("room for padding")
        .to_vec();
    let mut raw = iv.to_vec();
    raw.extend(ct);
    base64::engine::general_purpose::STANDARD.encode(raw)
}

/// Feishu's `X-Lark-Signature`: hex SHA-256 of timestamp + nonce + encrypt key + body.
pub fn signature(timestamp: &str, nonce: &str, encrypt_key: &str, body: &str) -> String {
    let mut ctx = digest::Context::new(&digest::SHA256);
    for part in [timestamp, nonce, encrypt_key, body] {
        ctx.update(part.as_bytes());
    }
    ctx.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Feishu's side of the request URL (made by [`FeishuMock::sender`]).
#[derive(Clone)]
pub struct EventSender {
    /// `127.0.0.1:PORT`
    pub addr: String,
    pub path: String,
    /// Empty: deliveries go in plain JSON, unsigned.
    pub encrypt_key: String,
    inbound: Inbound,
}

impl std::fmt::Debug for EventSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSender")
            .field("addr", &self.addr)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl EventSender {
    /// The body Feishu would post for `payload`: encrypted when there is a key.
    pub fn body(&self, payload: &Value) -> String {
        if self.encrypt_key.is_empty() {
            payload.to_string()
        } else {
            json!({"encrypt": encrypt(&self.encrypt_key, &payload.to_string())}).to_string()
        }
    }

    /// Posts `payload` as Feishu does: encrypted and signed when there is a key.
    pub fn deliver(&self, payload: &Value) -> HttpReply {
        let message = &payload["event"]["message"];
        if let (Some(id), Some(chat)) =
            (message["message_id"].as_str(), message["chat_id"].as_str())
        {
            self.inbound
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id.to_string(), chat.to_string());
        }
        let body = self.body(payload);
        let timestamp = now_secs().to_string();
        let nonce = format!("{:x}", now_nanos());
        let sig = signature(&timestamp, &nonce, &self.encrypt_key, &body);
        self.deliver_raw(&body, &timestamp, &nonce, &sig)
    }

    /// Posts `body` with the given signature headers (empty ones left out).
    pub fn deliver_raw(&self, body: &str, timestamp: &str, nonce: &str, sig: &str) -> HttpReply {
        let mut headers = vec!["Content-Type: application/json; charset=utf-8".to_string()];
        for (name, value) in [
            ("X-Lark-Request-Timestamp", timestamp),
            ("X-Lark-Request-Nonce", nonce),
            ("X-Lark-Signature", sig),
        ] {
            if !value.is_empty() {
                headers.push(format!("{name}: {value}"));
            }
        }
        let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
        http(&self.addr, "POST", &self.path, &refs, body)
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// The challenge Feishu sends when the request URL is saved.
pub fn url_verification(challenge: &str, token: &str) -> Value {
    json!({"challenge": challenge, "token": token, "type": "url_verification"})
}

fn header(event_id: &str, event_type: &str, token: &str) -> Value {
    json!({"event_id": event_id, "event_type": event_type, "create_time": (now_secs() * 1000).to_string(),
           "token": token, "app_id": APP_ID, "tenant_key": "736588c9260f175e"})
}

/// An `im.message.receive_v1` text from `sender` (an open id) in `chat_id`; `group` for a
/// group chat, `mentions` as `(key, open_id, name)` for the `@_user_N` placeholders in `text`.
#[allow(clippy::too_many_arguments)]
pub fn text_message(
    token: &str,
    event_id: &str,
    message_id: &str,
    chat_id: &str,
    group: bool,
    sender: &str,
    text: &str,
    mentions: &[(&str, &str, &str)],
) -> Value {
    message_event(
        token,
        event_id,
        message_id,
        chat_id,
        group,
        sender,
        "text",
        &json!({"text": text}),
        mentions,
    )
}

/// An `im.message.receive_v1` of any type with `content` (serialised into the string Feishu
/// sends).
#[allow(clippy::too_many_arguments)]
pub fn message_event(
    token: &str,
    event_id: &str,
    message_id: &str,
    chat_id: &str,
    group: bool,
    sender: &str,
    message_type: &str,
    content: &Value,
    mentions: &[(&str, &str, &str)],
) -> Value {
    let mentions: Vec<Value> = mentions
        .iter()
        .map(|(key, open_id, name)| {
            json!({"key": key, "id": {"union_id": "on_8ed6aa67826108097d9ee143816345", "user_id": null, "open_id": open_id},
                   "name": name, "tenant_key": "736588c9260f175e"})
        })
        .collect();
    json!({
        "schema": "2.0",
        "header": header(event_id, "im.message.receive_v1", token),
        "event": {
            "sender": {"sender_id": {"union_id": "on_8ed6aa67826108097d9ee143816345", "user_id": null, "open_id": sender},
                       "sender_type": "user", "tenant_key": "736588c9260f175e"},
            "message": {
                "message_id": message_id, "root_id": null, "parent_id": null,
                "create_time": (now_secs() * 1000).to_string(), "update_time": (now_secs() * 1000).to_string(),
                "chat_id": chat_id, "chat_type": if group { "group" } else { "p2p" },
                "message_type": message_type, "content": content.to_string(),
                "mentions": mentions, "user_agent": "Mozilla/5.0 Lark/7.1.0",
            },
        },
    })
}

/// A `card.action.trigger` callback: `operator` pressed the button with `value` on card
/// `message_id` in `chat_id`.
pub fn card_action(
    token: &str,
    event_id: &str,
    operator: &str,
    chat_id: &str,
    message_id: &str,
    value: &Value,
) -> Value {
    json!({
        "schema": "2.0",
        "header": header(event_id, "card.action.trigger", token),
        "event": {
            "operator": {"tenant_key": "736588c9260f175e", "user_id": null, "open_id": operator, "union_id": "on_x"},
            "token": format!("c-{event_id}"),
            "action": {"value": value, "tag": "button"},
            "host": "im_message",
            "context": {"open_message_id": message_id, "open_chat_id": chat_id},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encryption_round_trips_with_the_documented_scheme() {
        use aes::cipher::BlockDecryptMut;
        let enc = encrypt("test key", "hello world");
        let raw = base64::engine::general_purpose::STANDARD
            .decode(enc)
            .unwrap();
        let key = digest::digest(&digest::SHA256, b"test key");
        let mut buf = raw[16..].to_vec();
        let plain = cbc::Decryptor::<aes::Aes256>::new_from_slices(key.as_ref(), &raw[..16])
            .unwrap()
            .decrypt_padded_mut::<Pkcs7>(&mut buf)
            .unwrap();
        assert_eq!(plain, b"hello world");
    }
}
