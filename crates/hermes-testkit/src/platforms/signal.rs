//! A `signal-cli daemon --http` double on 127.0.0.1, following `signal-cli-jsonrpc(5)` and
//! signal-cli's HTTP server:
//!
//! - `POST /api/v1/rpc`: one JSON-RPC 2.0 request (`Content-Type: application/json`, else 415;
//!   other methods 405), answered `{"jsonrpc", "result", "id"}` or `{"jsonrpc", "error":
//!   {"code", "message", "data"}, "id"}`. Methods: `send` (`recipient` or `groupId`,
//!   `message`, `textStyle` entries `start:length:STYLE`, `attachments` paths the daemon
//!   reads; the result `{"timestamp", "results": [{"recipientAddress", "type": "SUCCESS"}]}`),
//!   `sendTyping`, `sendReceipt`, `sendReaction`, `getAttachment` (`{"data": base64}`),
//!   `listContacts`, `listGroups`; others `-32601`. An `account` other than the daemon's is
//!   refused, as in multi-account mode.
//! - `GET /api/v1/events[?account=…]`: Server-Sent Events (chunked), each
//!   `id:{start}-{seq}`, `event:receive`, `data:{"envelope": …, "account": …}`, a `:`
//!   keep-alive every 15 s. The daemon records events while nobody listens and keeps the
//!   last 1,000; a client reconnecting with `Last-Event-ID` first gets those after that id
//!   (all of them when the id is unknown); a client without it gets only new ones.
//! - `GET /api/v1/check`: 200.
//! - Faults: drop every open event stream; fail the next call of a method.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};
use crate::http;

/// Events the daemon keeps for `Last-Event-ID` replays (`SseEventBuffer.MAX_EVENTS`).
const KEPT_EVENTS: usize = 1000;
const KEEPALIVE: Duration = Duration::from_secs(15);

/// A Signal user the scripted messages come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contact {
    pub number: String,
    pub uuid: String,
    pub name: String,
}

impl Contact {
    pub fn new(number: &str, name: &str) -> Contact {
        let digits: String = number.chars().filter(char::is_ascii_digit).collect();
        Contact {
            number: number.to_string(),
            uuid: format!(
                "00000000-0000-4000-8000-{:0>12}",
                &digits[digits.len().saturating_sub(12)..]
            ),
            name: name.to_string(),
        }
    }
}

/// An attachment a scripted message carries.
#[derive(Debug, Clone)]
pub struct FileIn {
    pub content_type: String,
    pub filename: Option<String>,
    pub bytes: Vec<u8>,
}

#[derive(Debug)]
enum Outgoing {
    Event(String),
    Drop,
}

#[derive(Debug, Default)]
struct State {
    /// (seq, data) of recorded events.
    events: VecDeque<(u64, String)>,
    next_seq: u64,
    live: Vec<(usize, mpsc::UnboundedSender<Outgoing>)>,
    next_client: usize,
    connections: usize,
    resumed: usize,
    requests: Vec<Value>,
    attachments: HashMap<String, Vec<u8>>,
    /// group id → name.
    groups: HashMap<String, String>,
    contacts: Vec<Contact>,
    clock: u64,
    faults: HashMap<String, VecDeque<Value>>,
}

impl State {
    /// A fresh message timestamp (milliseconds, increasing).
    fn now(&mut self) -> u64 {
        self.clock += 1;
        1_700_000_000_000 + self.clock * 1000
    }
}

struct Shared {
    account: String,
    /// The id prefix of this daemon run.
    run: String,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn frame(&self, seq: u64, data: &str) -> String {
        format!("id:{}{seq}\nevent:receive\ndata:{data}\n\n", self.run)
    }

    /// Records an envelope and sends it to every open stream.
    fn record(&self, envelope: Value) {
        let data = json!({"envelope": envelope, "account": self.account}).to_string();
        let mut st = self.lock();
        st.next_seq += 1;
        let seq = st.next_seq;
        st.events.push_back((seq, data.clone()));
        while st.events.len() > KEPT_EVENTS {
            st.events.pop_front();
        }
        let frame = self.frame(seq, &data);
        st.live
            .retain(|(_, tx)| tx.send(Outgoing::Event(frame.clone())).is_ok());
    }
}

/// A running signal-cli double.
pub struct SignalMock {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SignalMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl SignalMock {
    /// A daemon serving the registered `account` (`+15550000000`).
    #[allow(clippy::expect_used)]
    pub fn start(account: &str) -> SignalMock {
        let shared = Arc::new(Shared {
            account: account.to_string(),
            run: format!("{}-", 1_700_000_000_000u64 + u64::from(fastrand_u16())),
            state: Mutex::new(State::default()),
        });
        let server = Server::start(
            "signal",
            Arc::new(SignalService {
                shared: Arc::clone(&shared),
            }),
        )
        .expect("start the signal-cli mock");
        SignalMock { server, shared }
    }

    /// The value for `SIGNAL_HTTP_URL`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    /// A contact the daemon knows (listed by `listContacts`).
    pub fn add_contact(&self, contact: &Contact) {
        self.shared.lock().contacts.push(contact.clone());
    }

    /// A group the account is a member of.
    pub fn add_group(&self, group_id: &str, name: &str) {
        self.shared
            .lock()
            .groups
            .insert(group_id.to_string(), name.to_string());
    }

    fn envelope(&self, from: &Contact, data_message: Value, ts: u64) -> Value {
        json!({
            "source": from.number, "sourceNumber": from.number, "sourceUuid": from.uuid,
            "sourceName": from.name, "sourceDevice": 1, "timestamp": ts,
            "serverReceivedTimestamp": ts + 150, "serverDeliveredTimestamp": ts + 160,
            "dataMessage": data_message,
        })
    }

    fn data_message(ts: u64, text: &str) -> Value {
        json!({"timestamp": ts, "message": text, "expiresInSeconds": 0,
            "isExpirationUpdate": false, "viewOnce": false})
    }

    /// `from` writes `text` to the bot; returns the message's timestamp.
    pub fn dm(&self, from: &Contact, text: &str) -> u64 {
        self.dm_with_files(from, text, Vec::new())
    }

    /// `from` sends `text` with `files` to the bot; the daemon keeps the files for
    /// `getAttachment`.
    pub fn dm_with_files(&self, from: &Contact, text: &str, files: Vec<FileIn>) -> u64 {
        let ts = self.shared.lock().now();
        let mut dm = Self::data_message(ts, text);
        if !files.is_empty() {
            let mut list = Vec::new();
            let mut st = self.shared.lock();
            for (i, f) in files.into_iter().enumerate() {
                let id = format!("att{ts}x{i}");
                list.push(
                    json!({"contentType": f.content_type, "filename": f.filename,
                    "id": id, "size": f.bytes.len(), "width": null, "height": null,
                    "caption": null, "uploadTimestamp": ts}),
                );
                st.attachments.insert(id, f.bytes);
            }
            dm["attachments"] = Value::Array(list);
        }
        let envelope = self.envelope(from, dm, ts);
        self.shared.record(envelope);
        ts
    }

    /// `from` writes `text` in group `group_id`; `mentions` as signal-cli gives them
    /// (`[{"start", "length", "number", "uuid", "name"}]`, the text holding U+FFFC there).
    pub fn group_message(
        &self,
        group_id: &str,
        from: &Contact,
        text: &str,
        mentions: Value,
    ) -> u64 {
        let (ts, name) = {
            let mut st = self.shared.lock();
            let name = st.groups.get(group_id).cloned().unwrap_or_default();
            (st.now(), name)
        };
        let mut dm = Self::data_message(ts, text);
        dm["mentions"] = mentions;
        dm["groupInfo"] =
            json!({"groupId": group_id, "groupName": name, "revision": 1, "type": "DELIVER"});
        let envelope = self.envelope(from, dm, ts);
        self.shared.record(envelope);
        ts
    }

    /// Records any envelope as it is (typing, receipts, sync messages).
    pub fn push_envelope(&self, envelope: Value) {
        self.shared.record(envelope);
    }

    /// Every JSON-RPC request received, whole.
    pub fn rpc_requests(&self) -> Vec<Value> {
        self.shared.lock().requests.clone()
    }

    /// The `params` of each `send`.
    pub fn sends(&self) -> Vec<Value> {
        self.calls("send")
    }

    /// The `params` of each call of `method`.
    pub fn calls(&self, method: &str) -> Vec<Value> {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| r["method"] == method)
            .map(|r| r["params"].clone())
            .collect()
    }

    /// Whether an event stream is open.
    pub fn connected(&self) -> bool {
        !self.shared.lock().live.is_empty()
    }

    /// Event streams opened, and how many of them came with `Last-Event-ID`.
    pub fn connections(&self) -> (usize, usize) {
        let st = self.shared.lock();
        (st.connections, st.resumed)
    }

    /// Closes every open event stream (the daemon restarting its listener, a proxy cutting
    /// the connection).
    pub fn drop_streams(&self) {
        let mut st = self.shared.lock();
        for (_, tx) in st.live.drain(..) {
            let _ = tx.send(Outgoing::Drop);
        }
    }

    /// The next call of `method` fails with this JSON-RPC `error` object.
    pub fn fail_next(&self, method: &str, error: Value) {
        self.shared
            .lock()
            .faults
            .entry(method.to_string())
            .or_default()
            .push_back(error);
    }
}

/// A little randomness for the run id without a dependency.
fn fastrand_u16() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    (nanos % 65_521) as u16
}

struct SignalService {
    shared: Arc<Shared>,
}

fn rpc_result(id: &Value, result: Value) -> MockResponse {
    MockResponse::json(200, &json!({"jsonrpc": "2.0", "result": result, "id": id}))
}

fn rpc_error(id: &Value, code: i64, message: &str) -> MockResponse {
    MockResponse::json(
        200,
        &json!({"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": null}, "id": id}),
    )
}

/// A `textStyle` entry: `start:length:STYLE`.
fn valid_style(s: &Value) -> bool {
    let Some(s) = s.as_str() else { return false };
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 3
        && parts[0].parse::<u32>().is_ok()
        && parts[1].parse::<u32>().is_ok()
        && matches!(
            parts[2],
            "BOLD" | "ITALIC" | "SPOILER" | "STRIKETHROUGH" | "MONOSPACE"
        )
}

impl SignalService {
    fn rpc(&self, req: &MockRequest) -> MockResponse {
        if req.method != "POST" {
            return MockResponse::empty(405);
        }
        if !req
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/json"))
        {
            return MockResponse::empty(415);
        }
        let Ok(call) = serde_json::from_slice::<Value>(&req.body) else {
            return rpc_error(&Value::Null, -32700, "Parse error");
        };
        let id = call["id"].clone();
        let Some(method) = call["method"].as_str().map(str::to_string) else {
            return rpc_error(&Value::Null, -32600, "method field must be set");
        };
        let params = call["params"].clone();
        let mut st = self.shared.lock();
        st.requests.push(call.clone());
        if let Some(error) = st.faults.get_mut(&method).and_then(VecDeque::pop_front) {
            return MockResponse::json(200, &json!({"jsonrpc": "2.0", "error": error, "id": id}));
        }
        if let Some(account) = params["account"].as_str()
            && account != self.shared.account
        {
            return rpc_error(&id, -32602, "Specified account does not exist");
        }
        let target = |st: &State| -> Result<Value, &'static str> {
            if let Some(group) = params["groupId"].as_str() {
                return if st.groups.contains_key(group) {
                    Ok(json!({"groupId": group}))
                } else {
                    Err("Invalid group id")
                };
            }
            let recipients: Vec<String> = match &params["recipient"] {
                Value::String(r) => vec![r.clone()],
                Value::Array(list) => list
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
                _ => Vec::new(),
            };
            if recipients.is_empty() {
                return Err("No recipients given");
            }
            Ok(json!({"recipients": recipients}))
        };
        match method.as_str() {
            "send" => {
                let to = match target(&st) {
                    Ok(t) => t,
                    Err(e) => return rpc_error(&id, -1, e),
                };
                let styles = match &params["textStyle"] {
                    Value::Null => Vec::new(),
                    Value::Array(a) => a.clone(),
                    one => vec![one.clone()],
                };
                if !styles.iter().all(valid_style) {
                    return rpc_error(&id, -1, "Invalid text style");
                }
                let files = match &params["attachments"] {
                    Value::Null => Vec::new(),
                    Value::Array(a) => a.clone(),
                    one => vec![one.clone()],
                };
                for f in &files {
                    let ok = f
                        .as_str()
                        .is_some_and(|p| std::path::Path::new(p).is_file());
                    if !ok {
                        return rpc_error(
                            &id,
                            -1,
                            &format!("Failed to send message: attachment {f} not found"),
                        );
                    }
                }
                if params["message"].as_str().unwrap_or_default().is_empty() && files.is_empty() {
                    return rpc_error(&id, -1, "Failed to send message: empty message");
                }
                let ts = st.now();
                let results: Vec<Value> = match to["recipients"].as_array() {
                    Some(list) => list
                        .iter()
                        .map(|r| {
                            let known = st.contacts.iter().find(|c| &c.number == r || &c.uuid == r);
                            json!({"recipientAddress": {
                                "uuid": known.map(|c| c.uuid.clone()),
                                "number": known.map_or_else(|| r.as_str().unwrap_or_default().to_string(), |c| c.number.clone())},
                                "type": "SUCCESS"})
                        })
                        .collect(),
                    None => vec![json!({"recipientAddress": {"uuid": null, "number": null},
                        "groupId": to["groupId"], "type": "SUCCESS"})],
                };
                rpc_result(&id, json!({"timestamp": ts, "results": results}))
            }
            "sendTyping" | "sendReceipt" | "sendReaction" => match target(&st) {
                Ok(_) => rpc_result(&id, json!({})),
                Err(e) => rpc_error(&id, -1, e),
            },
            "getAttachment" => {
                let Some(att) = params["id"].as_str().and_then(|a| st.attachments.get(a)) else {
                    return rpc_error(&id, -3, "An error occurred reading attachment");
                };
                let data = base64::engine::general_purpose::STANDARD.encode(att);
                rpc_result(&id, json!({"data": data}))
            }
            "listContacts" => {
                let list: Vec<Value> = st
                    .contacts
                    .iter()
                    .map(|c| {
                        json!({"number": c.number, "uuid": c.uuid, "name": c.name,
                        "isBlocked": false, "profile": {"givenName": c.name}})
                    })
                    .collect();
                rpc_result(&id, Value::Array(list))
            }
            "listGroups" => {
                let list: Vec<Value> = st
                    .groups
                    .iter()
                    .map(|(gid, name)| json!({"id": gid, "name": name, "isMember": true}))
                    .collect();
                rpc_result(&id, Value::Array(list))
            }
            _ => rpc_error(&id, -32601, "Method not found"),
        }
    }

    async fn events(self: Arc<Self>, req: MockRequest, mut conn: TcpStream) {
        if let Some((_, account)) = req.query().into_iter().find(|(k, _)| k == "account")
            && account != self.shared.account
        {
            let _ = http::write_response(&mut conn, 400, &[], b"", true).await;
            return;
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        let backlog: Vec<String> = {
            let mut st = self.shared.lock();
            st.connections += 1;
            let last = req.header("last-event-id").map(str::to_string);
            let backlog = match &last {
                None => Vec::new(),
                Some(id) => {
                    st.resumed += 1;
                    let after = id
                        .strip_prefix(&self.shared.run)
                        .and_then(|s| s.parse::<u64>().ok())
                        .unwrap_or(0);
                    st.events
                        .iter()
                        .filter(|(seq, _)| *seq > after)
                        .map(|(seq, data)| self.shared.frame(*seq, data))
                        .collect()
                }
            };
            st.next_client += 1;
            let client = st.next_client;
            st.live.push((client, tx));
            backlog
        };
        if http::write_sse_head(&mut conn, true).await.is_err() {
            return;
        }
        for frame in backlog {
            if http::write_chunk(&mut conn, frame.as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
        loop {
            let next = tokio::time::timeout(KEEPALIVE, rx.recv()).await;
            let bytes = match next {
                Err(_) => ":\n".to_string(),
                Ok(Some(Outgoing::Event(frame))) => frame,
                Ok(Some(Outgoing::Drop)) | Ok(None) => break,
            };
            if http::write_chunk(&mut conn, bytes.as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
        // A dropped stream ends abruptly, without the last chunk, as a cut connection does.
        drop(conn);
    }
}

impl Service for SignalService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move {
            match req.path() {
                "/api/v1/rpc" => self.rpc(&req),
                "/api/v1/check" if req.method == "GET" => MockResponse::empty(200),
                "/api/v1/check" | "/api/v1/events" => MockResponse::empty(405),
                _ => MockResponse::empty(404),
            }
        })
    }

    fn websocket(
        self: Arc<Self>,
        _req: MockRequest,
        _ws: WebSocketStream<TcpStream>,
    ) -> BoxFuture<()> {
        Box::pin(async {})
    }

    fn streams(&self, req: &MockRequest) -> bool {
        req.method == "GET" && req.path() == "/api/v1/events"
    }

    fn stream(self: Arc<Self>, req: MockRequest, conn: TcpStream) -> BoxFuture<()> {
        Box::pin(self.events(req, conn))
    }
}
