//! A Telegram Bot API double on 127.0.0.1, following <https://core.telegram.org/bots/api>:
//! `POST|GET /bot<token>/<method>` with JSON, form or multipart parameters, answers
//! `{"ok": true, "result": ...}` or `{"ok": false, "error_code", "description", "parameters"}`.
//!
//! - Updates: scripted messages and button presses become `Update`s with increasing
//!   `update_id`; `getUpdates` long-polls (`timeout`), and an `offset` confirms (forgets)
//!   every update below it, as Telegram does, so an update is delivered again only when the
//!   client did not confirm it.
//! - Webhook mode: `setWebhook` makes the mock POST each update to the URL with the
//!   `X-Telegram-Bot-Api-Secret-Token` header (retrying until the receiver answers 200), and
//!   `getUpdates` is refused with 409 while a webhook is set.
//! - Messages: `sendMessage`, `editMessageText`, `deleteMessage`, `sendChatAction`,
//!   `answerCallbackQuery`, `getFile` (+ `/file/bot<token>/<path>` downloads), `sendPhoto`,
//!   `sendDocument`, `sendVoice`; MarkdownV2 is parsed like Telegram does (a badly escaped
//!   text is refused with Telegram's `can't parse entities` error), texts over 4096 UTF-16
//!   units, empty texts, unknown messages and `callback_data` over 64 bytes are refused.
//! - Faults: [`TelegramMock::fail_next`] (any error, including 429 with `retry_after`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_tungstenite::WebSocketStream;

use super::server::{self, BoxFuture, MockRequest, MockResponse, Server, Service};
use super::telegram_markdown;

/// The bot's user id and username in every mock.
pub const BOT_ID: i64 = 7_000_001;
pub const BOT_USERNAME: &str = "hermes_test_bot";

/// One Bot API call as received.
#[derive(Debug, Clone)]
pub struct BotCall {
    pub method: String,
    /// All parameters, whatever their encoding (see [`MockRequest::params`]).
    pub params: Value,
    pub at: Instant,
}

/// A message the bot sent, as the mock keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct BotMessage {
    pub chat_id: i64,
    pub message_id: i64,
    /// The text as sent (markup included) for the current version.
    pub raw_text: String,
    /// The text Telegram shows (markup parsed away).
    pub text: String,
    pub parse_mode: Option<String>,
    pub reply_markup: Option<Value>,
    pub reply_to: Option<i64>,
    pub thread_id: Option<i64>,
    /// `photo`, `document` or `voice` for media messages.
    pub media: Option<String>,
    /// Earlier texts, oldest first (one per successful edit).
    pub edits: Vec<String>,
    pub deleted: bool,
}

#[derive(Debug, Clone)]
struct Fault {
    status: u16,
    description: String,
    retry_after: Option<u64>,
}

#[derive(Debug, Clone)]
struct Webhook {
    url: String,
    secret: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    next_update_id: i64,
    next_message_id: i64,
    /// Unconfirmed updates, oldest first.
    queue: VecDeque<Value>,
    calls: Vec<BotCall>,
    /// chat id -> chat object (from scripted updates).
    chats: HashMap<i64, Value>,
    messages: Vec<BotMessage>,
    /// User messages by (chat, id), for callback queries and replies.
    user_messages: HashMap<(i64, i64), Value>,
    faults: HashMap<String, VecDeque<Fault>>,
    files: HashMap<String, (String, Vec<u8>)>,
    open_callbacks: Vec<String>,
    answered_callbacks: Vec<Value>,
    webhook: Option<Webhook>,
    /// Status of every webhook POST, in order.
    deliveries: Vec<u16>,
    /// Updates being posted to the webhook right now.
    in_flight: std::collections::HashSet<i64>,
}

struct Shared {
    token: String,
    state: Mutex<State>,
    arrived: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running Telegram Bot API double.
pub struct TelegramMock {
    server: Server,
    service: Arc<TgService>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for TelegramMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// A `User` object.
pub fn user(id: i64, first_name: &str, username: Option<&str>) -> Value {
    let mut u = json!({"id": id, "is_bot": false, "first_name": first_name});
    if let Some(name) = username {
        u["username"] = json!(name);
    }
    u
}

/// The bot's own `User` object.
pub fn bot_user() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": "Hermes", "username": BOT_USERNAME})
}

impl TelegramMock {
    /// Starts a mock accepting `token`. Panics when it cannot (a test helper).
    #[allow(clippy::expect_used)]
    pub fn start(token: &str) -> TelegramMock {
        let shared = Arc::new(Shared {
            token: token.to_string(),
            state: Mutex::new(State {
                next_update_id: 500_000,
                next_message_id: 100,
                ..State::default()
            }),
            arrived: Notify::new(),
        });
        let service = Arc::new(TgService {
            shared: Arc::clone(&shared),
            runtime: Mutex::new(None),
        });
        let server =
            Server::start("telegram", Arc::clone(&service)).expect("start the Telegram mock");
        *service
            .runtime
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(server.runtime.clone());
        TelegramMock {
            server,
            service,
            shared,
        }
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    /// The value for `platforms.telegram.extra.base_url` (`http://127.0.0.1:PORT/bot`, the
    /// token is appended, as with a local Bot API server).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/bot", self.port())
    }

    /// The value for `platforms.telegram.extra.base_file_url`.
    pub fn base_file_url(&self) -> String {
        format!("http://127.0.0.1:{}/file/bot", self.port())
    }

    fn remember_chat(&self, chat: &Value) {
        if let Some(id) = chat["id"].as_i64() {
            self.shared.lock().chats.insert(id, chat.clone());
        }
    }

    /// Queues an update (its `update_id` is assigned) and returns the id.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut st = self.shared.lock();
            st.next_update_id += 1;
            let id = st.next_update_id;
            update["update_id"] = json!(id);
            if let Some(msg) = update.get("message")
                && let (Some(chat), Some(mid)) =
                    (msg["chat"]["id"].as_i64(), msg["message_id"].as_i64())
            {
                st.user_messages.insert((chat, mid), msg.clone());
            }
            st.queue.push_back(update);
            id
        };
        self.shared.arrived.notify_waiters();
        self.service.deliver_webhook();
        id
    }

    fn next_message_id(&self) -> i64 {
        let mut st = self.shared.lock();
        st.next_message_id += 1;
        st.next_message_id
    }

    /// A message from `from` in `chat` (extra fields merged in); returns its `message_id`.
    pub fn push_message(&self, chat: Value, from: Value, text: &str, extra: Value) -> i64 {
        self.remember_chat(&chat);
        let message_id = self.next_message_id();
        let mut message = json!({
            "message_id": message_id,
            "from": from,
            "chat": chat,
            "date": now_secs(),
            "text": text,
        });
        if let (Some(m), Some(e)) = (message.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        self.push_update(json!({"message": message}));
        message_id
    }

    /// A private message from user `user_id`; returns its `message_id`.
    pub fn dm(&self, user_id: i64, first_name: &str, text: &str) -> i64 {
        let chat = json!({"id": user_id, "type": "private", "first_name": first_name});
        self.push_message(chat, user(user_id, first_name, None), text, json!({}))
    }

    /// A private media message from `user_id`: `media` holds the media fields (`photo`,
    /// `voice`, `document`, ...), `caption` the text, if any (Telegram sends no `text` then).
    pub fn media_dm(&self, user_id: i64, first_name: &str, caption: &str, media: Value) -> i64 {
        let chat = json!({"id": user_id, "type": "private", "first_name": first_name});
        self.remember_chat(&chat);
        let message_id = self.next_message_id();
        let mut message = json!({
            "message_id": message_id,
            "from": user(user_id, first_name, None),
            "chat": chat,
            "date": now_secs(),
        });
        if !caption.is_empty() {
            message["caption"] = json!(caption);
        }
        if let (Some(m), Some(e)) = (message.as_object_mut(), media.as_object()) {
            m.extend(e.clone());
        }
        self.push_update(json!({"message": message}));
        message_id
    }

    /// A message in supergroup `chat_id`; `extra` adds fields (entities, reply_to_message,
    /// message_thread_id...).
    pub fn group_message(
        &self,
        chat_id: i64,
        title: &str,
        user_id: i64,
        text: &str,
        extra: Value,
    ) -> i64 {
        let chat = json!({"id": chat_id, "type": "supergroup", "title": title});
        self.push_message(chat, user(user_id, "Member", None), text, extra)
    }

    /// A user presses a button of the bot's message; returns the callback query id.
    pub fn press_button(&self, chat_id: i64, user_id: i64, message_id: i64, data: &str) -> String {
        let (message, query_id) = {
            let mut st = self.shared.lock();
            let chat = st
                .chats
                .get(&chat_id)
                .cloned()
                .unwrap_or_else(|| json!({"id": chat_id, "type": "private"}));
            let text = st
                .messages
                .iter()
                .find(|m| m.chat_id == chat_id && m.message_id == message_id)
                .map(|m| m.text.clone())
                .unwrap_or_default();
            let query_id = format!(
                "cbq{}",
                st.open_callbacks.len() + st.answered_callbacks.len() + 1
            );
            st.open_callbacks.push(query_id.clone());
            (
                json!({"message_id": message_id, "from": bot_user(), "chat": chat, "date": now_secs(), "text": text}),
                query_id,
            )
        };
        self.push_update(json!({"callback_query": {
            "id": query_id,
            "from": user(user_id, "Presser", None),
            "message": message,
            "chat_instance": "ci-1",
            "data": data,
        }}));
        query_id
    }

    /// Serves a file: `getFile` gives `file_path`, `/file/bot<token>/<file_path>` the bytes.
    pub fn add_file(&self, file_id: &str, file_path: &str, bytes: Vec<u8>) {
        self.shared
            .lock()
            .files
            .insert(file_id.to_string(), (file_path.to_string(), bytes));
    }

    /// The next call of `method` fails with this error (`retry_after` for 429s).
    pub fn fail_next(
        &self,
        method: &str,
        status: u16,
        description: &str,
        retry_after: Option<u64>,
    ) {
        self.shared
            .lock()
            .faults
            .entry(method.to_ascii_lowercase())
            .or_default()
            .push_back(Fault {
                status,
                description: description.to_string(),
                retry_after,
            });
    }

    /// Every call, in arrival order.
    pub fn calls(&self) -> Vec<BotCall> {
        self.shared.lock().calls.clone()
    }

    /// Calls of one method (case-insensitive).
    pub fn calls_to(&self, method: &str) -> Vec<BotCall> {
        self.shared
            .lock()
            .calls
            .iter()
            .filter(|c| c.method.eq_ignore_ascii_case(method))
            .cloned()
            .collect()
    }

    /// Waits (polling) until `method` was called `n` times; false on timeout.
    pub fn wait_for_calls(&self, method: &str, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.calls_to(method).len() >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Messages the bot sent to `chat_id`, in order (deleted ones included, marked).
    pub fn messages(&self, chat_id: i64) -> Vec<BotMessage> {
        self.shared
            .lock()
            .messages
            .iter()
            .filter(|m| m.chat_id == chat_id)
            .cloned()
            .collect()
    }

    /// Answered callback queries (`answerCallbackQuery` parameters).
    pub fn answered_callbacks(&self) -> Vec<Value> {
        self.shared.lock().answered_callbacks.clone()
    }

    /// The webhook URL and secret set with `setWebhook`.
    pub fn webhook(&self) -> Option<(String, Option<String>)> {
        self.shared
            .lock()
            .webhook
            .as_ref()
            .map(|w| (w.url.clone(), w.secret.clone()))
    }

    /// Statuses of the webhook POSTs so far.
    pub fn webhook_deliveries(&self) -> Vec<u16> {
        self.shared.lock().deliveries.clone()
    }

    /// Updates not yet confirmed by an offset (or delivered to a webhook).
    pub fn pending_updates(&self) -> usize {
        self.shared.lock().queue.len()
    }
}

struct TgService {
    shared: Arc<Shared>,
    runtime: Mutex<Option<tokio::runtime::Handle>>,
}

fn ok(result: Value) -> MockResponse {
    MockResponse::json(200, &json!({"ok": true, "result": result}))
}

fn error(status: u16, description: &str) -> MockResponse {
    MockResponse::json(
        status,
        &json!({"ok": false, "error_code": status, "description": description}),
    )
}

fn bad_request(description: &str) -> MockResponse {
    error(400, &format!("Bad Request: {description}"))
}

/// `chat_id` as a number (Telegram accepts strings too).
fn int_param(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A JSON parameter that may arrive serialised as a string (form and multipart encodings).
fn json_param(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::String(s) => serde_json::from_str(s).ok(),
        other => Some(other.clone()),
    }
}

impl TgService {
    fn deliver_webhook(&self) {
        let (url, secret, updates) = {
            let mut st = self.shared.lock();
            let Some(hook) = &st.webhook else { return };
            let (url, secret) = (hook.url.clone(), hook.secret.clone());
            let updates: Vec<Value> = st
                .queue
                .iter()
                .filter(|u| {
                    !st.in_flight
                        .contains(&u["update_id"].as_i64().unwrap_or_default())
                })
                .cloned()
                .collect();
            for u in &updates {
                st.in_flight
                    .insert(u["update_id"].as_i64().unwrap_or_default());
            }
            (url, secret, updates)
        };
        let Some(rt) = self
            .runtime
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        else {
            return;
        };
        let shared = Arc::clone(&self.shared);
        rt.spawn(async move {
            for update in updates {
                let id = update["update_id"].as_i64().unwrap_or_default();
                let mut headers =
                    vec![("Content-Type".to_string(), "application/json".to_string())];
                if let Some(s) = &secret {
                    headers.push(("X-Telegram-Bot-Api-Secret-Token".into(), s.clone()));
                }
                // Telegram retries a failed delivery; a few tries are enough for tests.
                for _ in 0..20 {
                    let status = server::post(&url, &headers, update.to_string().as_bytes()).await;
                    shared.lock().deliveries.push(status);
                    if status == 200 {
                        shared
                            .lock()
                            .queue
                            .retain(|u| u["update_id"].as_i64() != Some(id));
                        break;
                    }
                    if status == 401 || status == 403 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                shared.lock().in_flight.remove(&id);
            }
        });
    }

    async fn handle(self: Arc<Self>, req: MockRequest) -> MockResponse {
        let path = req.path().to_string();
        if let Some(rest) = path.strip_prefix("/file/bot") {
            return self.file_download(rest);
        }
        let Some(rest) = path.strip_prefix("/bot") else {
            return error(404, "Not Found");
        };
        let Some((token, method)) = rest.split_once('/') else {
            return error(404, "Not Found");
        };
        if token != self.shared.token {
            return error(401, "Unauthorized");
        }
        let params = req.params();
        let method_lc = method.to_ascii_lowercase();
        {
            let mut st = self.shared.lock();
            st.calls.push(BotCall {
                method: method.to_string(),
                params: params.clone(),
                at: Instant::now(),
            });
            if let Some(fault) = st.faults.get_mut(&method_lc).and_then(VecDeque::pop_front) {
                let mut body = json!({"ok": false, "error_code": fault.status, "description": fault.description});
                if let Some(after) = fault.retry_after {
                    body["parameters"] = json!({"retry_after": after});
                }
                return MockResponse::json(fault.status, &body);
            }
        }
        match method_lc.as_str() {
            "getme" => ok(bot_user()),
            "getupdates" => self.get_updates(&params).await,
            "setwebhook" => self.set_webhook(&params),
            "deletewebhook" => {
                let mut st = self.shared.lock();
                st.webhook = None;
                if params["drop_pending_updates"] == json!(true)
                    || params["drop_pending_updates"] == json!("true")
                {
                    st.queue.clear();
                }
                ok(json!(true))
            }
            "getwebhookinfo" => {
                let st = self.shared.lock();
                ok(json!({
                    "url": st.webhook.as_ref().map(|w| w.url.clone()).unwrap_or_default(),
                    "has_custom_certificate": false,
                    "pending_update_count": st.queue.len(),
                }))
            }
            "sendmessage" => self.send_message(&params, None),
            "sendphoto" => self.send_message(&params, Some("photo")),
            "senddocument" => self.send_message(&params, Some("document")),
            "sendvoice" => self.send_message(&params, Some("voice")),
            "editmessagetext" => self.edit_message(&params),
            "deletemessage" => self.delete_message(&params),
            "sendchataction" => {
                if int_param(&params["chat_id"]).is_none() {
                    return bad_request("chat not found");
                }
                ok(json!(true))
            }
            "answercallbackquery" => {
                let mut st = self.shared.lock();
                let id = params["callback_query_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if let Some(pos) = st.open_callbacks.iter().position(|c| *c == id) {
                    st.open_callbacks.remove(pos);
                    st.answered_callbacks.push(params.clone());
                    ok(json!(true))
                } else {
                    bad_request(
                        "query is too old and response timeout expired or query ID is invalid",
                    )
                }
            }
            "getfile" => {
                let st = self.shared.lock();
                let id = params["file_id"].as_str().unwrap_or_default();
                match st.files.get(id) {
                    Some((path, bytes)) => ok(json!({
                        "file_id": id,
                        "file_unique_id": format!("u-{id}"),
                        "file_size": bytes.len(),
                        "file_path": path,
                    })),
                    None => bad_request("invalid file_id"),
                }
            }
            _ => error(404, "Not Found"),
        }
    }

    fn file_download(&self, rest: &str) -> MockResponse {
        let Some((token, path)) = rest.split_once('/') else {
            return MockResponse::empty(404);
        };
        if token != self.shared.token {
            return MockResponse::empty(401);
        }
        let st = self.shared.lock();
        match st.files.values().find(|(p, _)| p == path) {
            Some((_, bytes)) => MockResponse::bytes(200, "application/octet-stream", bytes.clone()),
            None => MockResponse::empty(404),
        }
    }

    async fn get_updates(&self, params: &Value) -> MockResponse {
        if self.shared.lock().webhook.is_some() {
            return error(
                409,
                "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
            );
        }
        let offset = int_param(&params["offset"]);
        let limit = int_param(&params["limit"]).unwrap_or(100).clamp(1, 100) as usize;
        let timeout = int_param(&params["timeout"]).unwrap_or(0).clamp(0, 50) as u64;
        let deadline = Instant::now() + Duration::from_secs(timeout);
        loop {
            let notified = self.shared.arrived.notified();
            {
                let mut st = self.shared.lock();
                if let Some(offset) = offset
                    && offset > 0
                {
                    st.queue
                        .retain(|u| u["update_id"].as_i64().is_some_and(|id| id >= offset));
                }
                let ready: Vec<Value> = st.queue.iter().take(limit).cloned().collect();
                if !ready.is_empty() || Instant::now() >= deadline {
                    return ok(Value::Array(ready));
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let _ = tokio::time::timeout(left, notified).await;
        }
    }

    fn set_webhook(&self, params: &Value) -> MockResponse {
        let Some(url) = params["url"].as_str().filter(|u| !u.is_empty()) else {
            let mut st = self.shared.lock();
            st.webhook = None;
            return ok(json!(true));
        };
        if !(url.starts_with("https://") || url.starts_with("http://127.0.0.1")) {
            return bad_request("bad webhook: An HTTPS URL must be provided for webhook");
        }
        {
            let mut st = self.shared.lock();
            if params["drop_pending_updates"] == json!(true) {
                st.queue.clear();
            }
            st.webhook = Some(Webhook {
                url: url.to_string(),
                secret: params["secret_token"].as_str().map(str::to_string),
            });
        }
        self.deliver_webhook();
        MockResponse::json(
            200,
            &json!({"ok": true, "result": true, "description": "Webhook was set"}),
        )
    }

    /// Validates text/caption with its parse mode; the shown text, or the error.
    fn parse_text(text: &str, parse_mode: Option<&str>) -> Result<String, MockResponse> {
        let shown = match parse_mode {
            Some(m) if m.eq_ignore_ascii_case("MarkdownV2") => {
                telegram_markdown::parse(text).map_err(|e| bad_request(&e))?
            }
            Some("") | None => text.to_string(),
            Some(other) => {
                if !["Markdown", "HTML"]
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(other))
                {
                    return Err(bad_request("unsupported parse_mode"));
                }
                text.to_string()
            }
        };
        Ok(shown)
    }

    fn check_markup(markup: &Option<Value>) -> Result<(), MockResponse> {
        let Some(m) = markup else { return Ok(()) };
        let Some(rows) = m["inline_keyboard"].as_array() else {
            return Ok(());
        };
        for row in rows {
            for button in row.as_array().into_iter().flatten() {
                if button["text"].as_str().is_none_or(str::is_empty) {
                    return Err(bad_request("BUTTON_TEXT_INVALID"));
                }
                if let Some(d) = button["callback_data"].as_str()
                    && (d.is_empty() || d.len() > 64)
                {
                    return Err(bad_request("BUTTON_DATA_INVALID"));
                }
            }
        }
        Ok(())
    }

    fn send_message(&self, p: &Value, media: Option<&str>) -> MockResponse {
        let Some(chat_id) = int_param(&p["chat_id"]) else {
            return bad_request("chat not found");
        };
        let parse_mode = p["parse_mode"].as_str();
        let (raw, shown) = match media {
            None => {
                let text = p["text"].as_str().unwrap_or_default();
                if text.trim().is_empty() {
                    return bad_request("message text is empty");
                }
                let shown = match Self::parse_text(text, parse_mode) {
                    Ok(s) => s,
                    Err(r) => return r,
                };
                if shown.encode_utf16().count() > 4096 {
                    return bad_request("message is too long");
                }
                (text.to_string(), shown)
            }
            Some(kind) => {
                if p[kind].is_null() {
                    return bad_request(&format!("there is no {kind} in the request"));
                }
                let caption = p["caption"].as_str().unwrap_or_default();
                let shown = match Self::parse_text(caption, parse_mode) {
                    Ok(s) => s,
                    Err(r) => return r,
                };
                if shown.encode_utf16().count() > 1024 {
                    return bad_request("message caption is too long");
                }
                (caption.to_string(), shown)
            }
        };
        let markup = json_param(&p["reply_markup"]);
        if let Err(r) = Self::check_markup(&markup) {
            return r;
        }
        let reply_to = int_param(&p["reply_to_message_id"]).or_else(|| {
            json_param(&p["reply_parameters"]).and_then(|r| int_param(&r["message_id"]))
        });
        let thread_id = int_param(&p["message_thread_id"]);
        let mut st = self.shared.lock();
        st.next_message_id += 1;
        let message_id = st.next_message_id;
        let chat = st
            .chats
            .get(&chat_id)
            .cloned()
            .unwrap_or_else(|| json!({"id": chat_id, "type": "private"}));
        st.messages.push(BotMessage {
            chat_id,
            message_id,
            raw_text: raw,
            text: shown.clone(),
            parse_mode: parse_mode.map(str::to_string),
            reply_markup: markup.clone(),
            reply_to,
            thread_id,
            media: media.map(str::to_string),
            edits: Vec::new(),
            deleted: false,
        });
        let mut msg = json!({
            "message_id": message_id,
            "from": bot_user(),
            "chat": chat,
            "date": now_secs(),
        });
        match media {
            None => msg["text"] = json!(shown),
            Some(kind) => {
                let file_id = format!("sent-{message_id}");
                let size = p[kind]["size"].as_u64().unwrap_or_default();
                msg[kind] = match kind {
                    // `photo` is the array of sizes Telegram made of the upload.
                    "photo" => {
                        json!([{"file_id": file_id, "file_unique_id": format!("u{file_id}"), "width": 90, "height": 90, "file_size": size}])
                    }
                    "voice" => {
                        json!({"file_id": file_id, "file_unique_id": format!("u{file_id}"), "duration": 1, "mime_type": "audio/ogg", "file_size": size})
                    }
                    _ => {
                        json!({"file_id": file_id, "file_unique_id": format!("u{file_id}"), "file_name": p[kind]["filename"], "file_size": size})
                    }
                };
                if !shown.is_empty() {
                    msg["caption"] = json!(shown);
                }
            }
        }
        if let Some(m) = markup {
            msg["reply_markup"] = m;
        }
        if let Some(t) = thread_id {
            msg["message_thread_id"] = json!(t);
        }
        ok(msg)
    }

    fn edit_message(&self, p: &Value) -> MockResponse {
        let (Some(chat_id), Some(message_id)) =
            (int_param(&p["chat_id"]), int_param(&p["message_id"]))
        else {
            return bad_request("message to edit not found");
        };
        let text = p["text"].as_str().unwrap_or_default();
        if text.trim().is_empty() {
            return bad_request("message text is empty");
        }
        let shown = match Self::parse_text(text, p["parse_mode"].as_str()) {
            Ok(s) => s,
            Err(r) => return r,
        };
        if shown.encode_utf16().count() > 4096 {
            return bad_request("MESSAGE_TOO_LONG");
        }
        let markup = json_param(&p["reply_markup"]);
        if let Err(r) = Self::check_markup(&markup) {
            return r;
        }
        let mut st = self.shared.lock();
        let Some(msg) = st
            .messages
            .iter_mut()
            .find(|m| m.chat_id == chat_id && m.message_id == message_id && !m.deleted)
        else {
            return bad_request("message to edit not found");
        };
        if msg.text == shown && msg.reply_markup == markup {
            return bad_request(
                "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
            );
        }
        let old = std::mem::replace(&mut msg.raw_text, text.to_string());
        msg.edits.push(old);
        msg.text = shown.clone();
        msg.reply_markup = markup;
        ok(
            json!({"message_id": message_id, "from": bot_user(), "chat": {"id": chat_id}, "date": now_secs(), "text": shown}),
        )
    }

    fn delete_message(&self, p: &Value) -> MockResponse {
        let (Some(chat_id), Some(message_id)) =
            (int_param(&p["chat_id"]), int_param(&p["message_id"]))
        else {
            return bad_request("message to delete not found");
        };
        let mut st = self.shared.lock();
        match st
            .messages
            .iter_mut()
            .find(|m| m.chat_id == chat_id && m.message_id == message_id && !m.deleted)
        {
            Some(m) => {
                m.deleted = true;
                ok(json!(true))
            }
            None => bad_request("message to delete not found"),
        }
    }
}

impl Service for TgService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(self.handle(req))
    }

    fn websocket(
        self: Arc<Self>,
        _req: MockRequest,
        ws: WebSocketStream<TcpStream>,
    ) -> BoxFuture<()> {
        // The Bot API has no websocket.
        Box::pin(async move { drop(ws) })
    }
}
