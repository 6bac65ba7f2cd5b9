//! The generic webhook platform: an HTTP server (`POST /webhooks/<route>`, `GET /health`)
//! that turns signed requests from other services (GitHub, GitLab, Svix, anything that can
//! sign with HMAC-SHA256) into agent prompts, the Python Hermes's way: the signature checked
//! before anything else (401), a per-route rate limit (429), body cap (413), event filter,
//! duplicate deliveries ignored, the route's prompt template filled from the payload. The
//! answer goes where the route says: the log, another platform's chat (the event carries
//! `deliver_to`), a GitHub comment, a signed callback POST, or the HTTP response itself.

pub mod settings;
pub mod signature;
pub mod template;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use self::settings::WebhookSettings;
use self::settings::{Deliver, INSECURE_NO_AUTH, PLATFORM, Route, read_dynamic};
use crate::platform::backoff::Backoff;
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::http::{self, network};
use crate::platform::listener::ListenerSlot;
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Capabilities, ChatRef, ChatType, ConnectionState, Dialect,
    InboundEvent, InboundMessage, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, deliver};

/// How long deliveries are remembered (idempotency and where answers go).
const MEMORY: Duration = Duration::from_secs(3600);
/// Deliveries remembered at most.
const MAX_DELIVERIES: usize = 10_000;
const GH_TIMEOUT: Duration = Duration::from_secs(30);

/// Where one delivery's answer goes.
#[derive(Debug, Clone)]
struct DeliveryInfo {
    route: String,
    delivery_id: String,
    event: String,
    deliver: Deliver,
    extra: Map<String, Value>,
    secret: String,
}

#[derive(Debug, Default)]
struct Deliveries {
    info: HashMap<String, DeliveryInfo>,
    seen: HashMap<String, Instant>,
    order: VecDeque<(Instant, String, String)>,
}

impl Deliveries {
    fn prune(&mut self, now: Instant) {
        while let Some((at, chat, id)) = self.order.front().cloned() {
            if now.duration_since(at) < MEMORY && self.order.len() <= MAX_DELIVERIES {
                break;
            }
            self.order.pop_front();
            self.info.remove(&chat);
            self.seen.remove(&id);
        }
    }
}

#[derive(Debug, Default)]
struct Dynamic {
    mtime: Option<SystemTime>,
    routes: BTreeMap<String, Route>,
}

/// State shared by the HTTP handlers and `send`.
#[derive(Debug)]
struct Shared {
    settings: WebhookSettings,
    status: Arc<StatusCell>,
    dynamic: Mutex<Dynamic>,
    deliveries: Mutex<Deliveries>,
    pending: Mutex<HashMap<String, oneshot::Sender<String>>>,
    rates: Mutex<HashMap<String, VecDeque<Instant>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// The route by name: configured ones first, then the agent's (file read again when
    /// it changed).
    fn route(&self, name: &str) -> Option<Route> {
        if let Some(r) = self.settings.routes.get(name) {
            return Some(r.clone());
        }
        let path = self.settings.dynamic_routes.as_ref()?;
        let mtime = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let mut dynamic = lock(&self.dynamic);
        if mtime != dynamic.mtime {
            let (routes, problems) = match mtime {
                Some(_) => read_dynamic(path, &self.settings),
                None => (BTreeMap::new(), Vec::new()),
            };
            for p in problems {
                self.status.error(format!("{}: {p}", path.display()));
            }
            dynamic.routes = routes;
            dynamic.mtime = mtime;
        }
        dynamic.routes.get(name).cloned()
    }

    /// Counts a hit; false when the route is over its limit for this minute.
    fn within_rate(&self, route: &str) -> bool {
        let now = Instant::now();
        let mut rates = lock(&self.rates);
        let window = rates.entry(route.to_string()).or_default();
        while window
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(60))
        {
            window.pop_front();
        }
        if window.len() >= self.settings.rate_limit as usize {
            return false;
        }
        window.push_back(now);
        true
    }
}

/// The webhook adapter.
pub struct WebhookAdapter {
    shared: Arc<Shared>,
    caps: Capabilities,
    client: reqwest::Client,
    listener: ListenerSlot,
}

impl std::fmt::Debug for WebhookAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookAdapter").finish_non_exhaustive()
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
}

/// A JSON body, else a form body as an object.
fn parse_payload(body: &[u8]) -> Option<Value> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Some(v);
    }
    let text = std::str::from_utf8(body).ok()?;
    let mut map = Map::new();
    for pair in text.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        map.insert(percent_decode(k)?, Value::String(percent_decode(v)?));
    }
    Some(Value::Object(map))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Each string of `extra` rendered with the payload.
fn render_extra(extra: &Map<String, Value>, payload: &Value) -> Map<String, Value> {
    extra
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => Value::String(template::render(s, payload, "", "")),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// The chat another platform's answer goes to (`chat_id` empty: that platform's home channel).
fn target_chat(platform: &str, extra: &Map<String, Value>) -> ChatRef {
    let text = |k: &str| {
        extra
            .get(k)
            .and_then(crate::platform::settings::scalar_string)
    };
    ChatRef::new(
        platform,
        ChatType::Group,
        text("chat_id").unwrap_or_default(),
    )
    .with_thread(text("thread_id"))
}

struct Endpoint {
    shared: Arc<Shared>,
    inbound: mpsc::Sender<InboundEvent>,
    shutdown: CancellationToken,
}

async fn health() -> Response {
    axum::Json(json!({"status": "ok", "platform": "webhook"})).into_response()
}

async fn receive_profiled(
    state: State<Arc<Endpoint>>,
    UrlPath((_profile, route)): UrlPath<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // A single-profile gateway serves /p/<profile>/ like the plain path (Python's rule when
    // profiles are not multiplexed).
    receive(state, UrlPath(route), headers, body).await
}

async fn receive(
    State(ep): State<Arc<Endpoint>>,
    UrlPath(route_name): UrlPath<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let shared = &ep.shared;
    let Some(route) = shared.route(&route_name) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("Unknown route: {route_name}"),
        );
    };
    if !route.enabled {
        return error(
            StatusCode::FORBIDDEN,
            &format!("Route disabled: {route_name}"),
        );
    }
    let body = match body {
        Ok(b) => b,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(StatusCode::PAYLOAD_TOO_LARGE, "Payload too large");
        }
        Err(_) => return error(StatusCode::BAD_REQUEST, "Bad request"),
    };
    if body.len() > shared.settings.max_body_bytes {
        return error(StatusCode::PAYLOAD_TOO_LARGE, "Payload too large");
    }
    // The signature before anything else looks at the payload.
    if route.secret != INSECURE_NO_AUTH
        && signature::verify(&headers, &body, &route.secret, now_secs()).is_err()
    {
        shared
            .status
            .error(format!("invalid signature on route {route_name}"));
        return error(StatusCode::UNAUTHORIZED, "Invalid signature");
    }
    if !shared.within_rate(&route_name) {
        return error(StatusCode::TOO_MANY_REQUESTS, "Rate limit exceeded");
    }
    let Some(payload) = parse_payload(&body) else {
        return error(StatusCode::BAD_REQUEST, "Cannot parse body");
    };
    let event_type = header(&headers, "x-github-event")
        .or_else(|| header(&headers, "x-gitlab-event"))
        .map(str::to_string)
        .or_else(|| {
            payload["event_type"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        })
        .or_else(|| {
            payload["type"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".to_string());
    if !route.events.is_empty() && !route.events.contains(&event_type) {
        return axum::Json(json!({"status": "ignored", "event": event_type})).into_response();
    }
    let prompt = template::render(&route.prompt, &payload, &event_type, &route_name);
    let delivery_id = header(&headers, "x-github-delivery")
        .or_else(|| header(&headers, "svix-id"))
        .or_else(|| header(&headers, "x-request-id"))
        .map(str::to_string)
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis().to_string())
                .unwrap_or_default()
        });
    let extra = render_extra(&route.deliver_extra, &payload);
    let chat_id = format!("{route_name}:{delivery_id}");
    {
        let now = Instant::now();
        let mut d = lock(&shared.deliveries);
        d.prune(now);
        let key = format!("{route_name}:{delivery_id}");
        if d.seen.contains_key(&key) {
            return axum::Json(json!({"status": "duplicate", "delivery_id": delivery_id}))
                .into_response();
        }
        d.seen.insert(key, now);
        d.order
            .push_back((now, chat_id.clone(), format!("{route_name}:{delivery_id}")));
        d.info.insert(
            chat_id.clone(),
            DeliveryInfo {
                route: route_name.clone(),
                delivery_id: delivery_id.clone(),
                event: event_type.clone(),
                deliver: route.deliver.clone(),
                extra: extra.clone(),
                secret: route.secret.clone(),
            },
        );
    }

    if route.deliver_only {
        let to = match &route.deliver {
            Deliver::Platform(p) => target_chat(p, &extra),
            // Callback and GitHub targets are answered by this adapter's send.
            _ => ChatRef::new(PLATFORM, ChatType::Webhook, chat_id.clone()),
        };
        let target = to.platform.clone();
        if !deliver(
            &ep.inbound,
            InboundEvent::Deliver { to, text: prompt },
            &ep.shutdown,
        )
        .await
        {
            return error(StatusCode::SERVICE_UNAVAILABLE, "Gateway is stopping");
        }
        shared.status.add_received();
        return (
            StatusCode::ACCEPTED,
            axum::Json(json!({"status": "accepted", "route": route_name, "target": target, "delivery_id": delivery_id})),
        )
            .into_response();
    }

    let waiting = if route.deliver == Deliver::Response {
        let (tx, rx) = oneshot::channel();
        lock(&shared.pending).insert(chat_id.clone(), tx);
        Some(rx)
    } else {
        None
    };
    let deliver_to = match &route.deliver {
        Deliver::Platform(p) => Some(target_chat(p, &extra)),
        _ => None,
    };
    let message = InboundMessage {
        chat: ChatRef::new(PLATFORM, ChatType::Webhook, chat_id.clone()),
        chat_name: Some(format!("webhook/{route_name}")),
        message_id: delivery_id.clone(),
        user_id: format!("webhook:{route_name}"),
        user_name: Some(route_name.clone()),
        text: prompt,
        attachments: Vec::new(),
        reply_to: None,
        mentions_bot: true,
        replies_to_bot: false,
        from_bot: false,
        deliver_to,
        skills: route.skills.clone(),
        received_at: SystemTime::now(),
    };
    if !deliver(&ep.inbound, InboundEvent::Message(message), &ep.shutdown).await {
        lock(&shared.pending).remove(&chat_id);
        return error(StatusCode::SERVICE_UNAVAILABLE, "Gateway is stopping");
    }
    shared.status.add_received();
    let Some(rx) = waiting else {
        return (
            StatusCode::ACCEPTED,
            axum::Json(json!({"status": "accepted", "route": route_name, "event": event_type, "delivery_id": delivery_id})),
        )
            .into_response();
    };
    let answer = tokio::select! {
        _ = ep.shutdown.cancelled() => None,
        r = tokio::time::timeout(shared.settings.response_timeout, rx) => r.ok().and_then(Result::ok),
    };
    lock(&shared.pending).remove(&chat_id);
    match answer {
        Some(text) => axum::Json(json!({"status": "ok", "route": route_name, "delivery_id": delivery_id, "response": text}))
            .into_response(),
        None => (
            StatusCode::GATEWAY_TIMEOUT,
            axum::Json(json!({"status": "timeout", "route": route_name, "delivery_id": delivery_id})),
        )
            .into_response(),
    }
}

impl WebhookAdapter {
    pub fn new(settings: WebhookSettings) -> Result<WebhookAdapter, PlatformConfigError> {
        Ok(WebhookAdapter {
            shared: Arc::new(Shared {
                settings,
                status: Arc::new(StatusCell::default()),
                dynamic: Mutex::new(Dynamic::default()),
                deliveries: Mutex::new(Deliveries::default()),
                pending: Mutex::new(HashMap::new()),
                rates: Mutex::new(HashMap::new()),
            }),
            caps: Capabilities {
                max_message_len: 1_000_000,
                length_unit: LengthUnit::Chars,
                markdown: Dialect::Plain,
                can_edit: false,
                can_delete: false,
                buttons: false,
                threads: false,
                typing: false,
                typing_interval: Duration::ZERO,
                min_edit_interval: Duration::ZERO,
                progress_messages: false,
            },
            client: http::client(PLATFORM)?,
            listener: ListenerSlot::default(),
        })
    }

    /// Serves on an already bound listener instead of `host:port`.
    pub fn with_listener(self, listener: std::net::TcpListener) -> WebhookAdapter {
        self.listener.preset(listener);
        self
    }

    /// Where the server listens, once it does.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr()
    }

    async fn callback(&self, info: &DeliveryInfo, text: &str) -> Result<(), PlatformError> {
        let url = info
            .extra
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let body = json!({
            "route": info.route,
            "delivery_id": info.delivery_id,
            "event": info.event,
            "response": text,
        })
        .to_string();
        let mut request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(Duration::from_secs(30));
        if info.secret != INSECURE_NO_AUTH {
            let (ts, sig) = signature::sign_v2(&info.secret, body.as_bytes(), now_secs());
            request = request
                .header("X-Webhook-Timestamp", ts)
                .header("X-Webhook-Signature-V2", sig);
        }
        let response = request
            .body(body)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(PlatformError::Api {
                platform: PLATFORM,
                status: response.status().as_u16(),
                message: format!("callback to {url} refused"),
            })
        }
    }

    async fn github_comment(&self, info: &DeliveryInfo, text: &str) -> Result<(), PlatformError> {
        let get = |k: &str| {
            info.extra
                .get(k)
                .and_then(crate::platform::settings::scalar_string)
        };
        let (Some(repo), Some(pr)) = (get("repo"), get("pr_number")) else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "github_comment needs deliver_extra.repo and pr_number".into(),
            });
        };
        let valid_repo = repo.split_once('/').is_some_and(|(o, n)| {
            let ok = |s: &str| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            };
            ok(o) && ok(n)
        });
        let pr: u64 = pr
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| PlatformError::Invalid {
                platform: PLATFORM,
                message: format!("invalid pr_number {pr:?}"),
            })?;
        if !valid_repo {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: format!("invalid repo {repo:?}"),
            });
        }
        let run = tokio::process::Command::new("gh")
            .args([
                "pr",
                "comment",
                &pr.to_string(),
                "--repo",
                &repo,
                "--body",
                text,
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(GH_TIMEOUT, run)
            .await
            .map_err(|_| PlatformError::Network {
                platform: PLATFORM,
                message: "gh pr comment timed out".into(),
            })?
            .map_err(|e| PlatformError::io(PathBuf::from("gh"), e))?;
        if output.status.success() {
            Ok(())
        } else {
            let err: String = String::from_utf8_lossy(&output.stderr)
                .chars()
                .take(300)
                .collect();
            Err(PlatformError::Api {
                platform: PLATFORM,
                status: 0,
                message: format!("gh pr comment: {}", err.trim()),
            })
        }
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for WebhookAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let status = Arc::clone(&self.shared.status);
        let mut backoff = Backoff::transient();
        while !shutdown.is_cancelled() {
            status.set_state(ConnectionState::Connecting);
            let Some(listener) = self
                .listener
                .bind_retrying(
                    &self.shared.settings.host,
                    self.shared.settings.port,
                    &status,
                    &mut backoff,
                    &shutdown,
                )
                .await
            else {
                break;
            };
            let endpoint = Arc::new(Endpoint {
                shared: Arc::clone(&self.shared),
                inbound: inbound.clone(),
                shutdown: shutdown.clone(),
            });
            let app = Router::new()
                .route("/health", get(health))
                .route("/webhooks/{route}", post(receive))
                .route("/p/{profile}/webhooks/{route}", post(receive_profiled))
                .layer(DefaultBodyLimit::max(self.shared.settings.max_body_bytes))
                .with_state(endpoint);
            status.set_state(ConnectionState::Connected);
            backoff.reset();
            // The API server's connection handling (header deadline, connection cap): returns
            // at shutdown.
            crate::api_server::listener::serve(listener, app, Default::default(), shutdown.clone())
                .await;
        }
        status.set_state(ConnectionState::Stopped);
    }

    async fn send(
        &self,
        chat: &ChatRef,
        message: &OutboundMessage,
    ) -> Result<SentMessage, PlatformError> {
        if !message.files.is_empty() {
            return Err(PlatformError::Unsupported {
                platform: PLATFORM,
                operation: "send files",
            });
        }
        let info = lock(&self.shared.deliveries)
            .info
            .get(&chat.chat_id)
            .cloned()
            .ok_or_else(|| PlatformError::Invalid {
                platform: PLATFORM,
                message: format!(
                    "no webhook delivery {:?} (answers go back within an hour)",
                    chat.chat_id
                ),
            })?;
        let text = message.text.as_str();
        match &info.deliver {
            Deliver::Log => {
                let preview: String = text.chars().take(200).collect();
                eprintln!(
                    "[webhook] answer for {}/{}: {preview}",
                    info.route, info.delivery_id
                );
            }
            Deliver::Response => {
                let waiter = lock(&self.shared.pending).remove(&chat.chat_id);
                let answered = waiter.is_some_and(|tx| tx.send(text.to_string()).is_ok());
                if !answered {
                    // The caller gave up (timeout) or was answered already: keep it in the log.
                    let preview: String = text.chars().take(200).collect();
                    eprintln!(
                        "[webhook] late answer for {}/{}: {preview}",
                        info.route, info.delivery_id
                    );
                }
            }
            Deliver::Callback => self.callback(&info, text).await?,
            Deliver::GithubComment => self.github_comment(&info, text).await?,
            Deliver::Platform(_) => {
                return Err(PlatformError::Unsupported {
                    platform: PLATFORM,
                    operation: "answer here: this route delivers to another platform (see deliver_to)",
                });
            }
        }
        self.shared.status.add_sent(1);
        Ok(SentMessage {
            message_id: info.delivery_id.clone(),
            message_ids: vec![info.delivery_id],
        })
    }

    async fn edit(&self, _chat: &ChatRef, _id: &str, _text: &str) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM,
            operation: "edit a delivered answer",
        })
    }

    async fn delete(&self, _chat: &ChatRef, _id: &str) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM,
            operation: "delete a delivered answer",
        })
    }

    async fn typing(&self, _chat: &ChatRef) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM,
            operation: "show typing",
        })
    }

    async fn download(
        &self,
        _attachment: &Attachment,
        _dir: &Path,
        _max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM,
            operation: "download attachments (webhook payloads carry none)",
        })
    }

    fn status(&self) -> AdapterStatus {
        self.shared.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let s = &self.shared.settings;
        Ok(format!(
            "receives on http://{}:{} ({})",
            s.host,
            s.port,
            match s.routes.len() {
                1 => "1 route".to_string(),
                n => format!("{n} routes"),
            }
        ))
    }
}
