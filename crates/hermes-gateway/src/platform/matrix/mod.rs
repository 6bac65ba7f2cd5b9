//! Matrix through the client-server API on the workspace's HTTP client (no Matrix SDK): login
//! with an access token (`whoami`) or a password (`m.login.password`, the device id kept), the
//! `/sync` long-poll loop with its `next_batch` token persisted under the home ([`state`]),
//! invites auto-joined only from allowed users (and DM invites from strangers, who then get a
//! pairing code, unless `unauthorized_dm_behavior: ignore`), DMs (`m.direct`, `is_direct` invites, two-member
//! rooms) and rooms with the mention rules, threads (`m.thread`), answers as `m.text` with
//! markdown as `formatted_body` (`org.matrix.custom.html`), edits with `m.replace` (so answers
//! stream), redactions, typing, attachments through the media repository (downloads bounded).
//!
//! End-to-end encrypted rooms need a Matrix crypto stack this build does not have: such a room
//! is refused with a log line naming it, and its messages are never handed to the agent.

mod api;
mod events;
pub mod settings;
mod state;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::api::{Api, CALL_TIMEOUT, Event, SyncResponse, is_not_found};
pub use self::settings::MatrixSettings;
use self::settings::{MatrixAuth, PLATFORM};
use self::state::SavedState;
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::gate::{self, GateInput, RecentSet};
use crate::platform::http::{self, with_rate_limit};
use crate::platform::settings::ReplyToMode;
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Capabilities, ChatRef, ChatType, ConnectionState, Dialect,
    FileSource, InboundEvent, InboundMessage, LengthUnit, OutboundFile, OutboundFileKind,
    OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, deliver, download, markdown, split};

/// Rate limits up to this long are waited out by sends.
const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(30);
/// A `formatted_body` is left off when body and HTML together would pass this many bytes
/// (Matrix events are limited to 65,535 bytes).
const MAX_CONTENT_BYTES: usize = 60_000;
/// Rooms remembered (membership, encryption, names); beyond it the memory starts over.
const MAX_ROOMS: usize = 4096;
/// Display names remembered per room.
const MAX_NAMES: usize = 512;
/// How long one typing notice lasts.
const TYPING_MS: u64 = 30_000;
/// What `/sync` returns: our rooms' timelines and state, `m.direct`, no presence.
const SYNC_FILTER: &str = r#"{"room":{"timeline":{"limit":50}},"presence":{"not_types":["*"]},"account_data":{"types":["m.direct"]}}"#;

/// What the adapter knows about one joined room.
#[derive(Debug, Default)]
struct RoomInfo {
    encrypted: bool,
    /// Joined members; `None` until asked (and after a membership change).
    members: Option<usize>,
    names: HashMap<String, String>,
}

/// The adapter's bounded memory of rooms and of its own messages.
struct Memory {
    rooms: HashMap<String, RoomInfo>,
    /// DM rooms: `m.direct` and invites marked `is_direct`.
    direct: HashSet<String>,
    /// Events the bot sent (a reply to one addresses the bot).
    bot_events: RecentSet,
    /// Threads the bot answered in (following messages there need no mention).
    bot_threads: RecentSet,
    /// Events already handled (a `/sync` retried after a failure can repeat them).
    seen: RecentSet,
    /// Encrypted rooms already reported.
    refused: HashSet<String>,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            rooms: HashMap::new(),
            direct: HashSet::new(),
            bot_events: RecentSet::new(2048),
            bot_threads: RecentSet::new(1024),
            seen: RecentSet::new(4096),
            refused: HashSet::new(),
        }
    }
}

/// How one connection ended.
enum SessionEnd {
    Shutdown,
    Fatal(PlatformError),
    Retry(String),
}

/// The Matrix adapter.
pub struct MatrixAdapter {
    api: Api,
    settings: MatrixSettings,
    reply_to_mode: ReplyToMode,
    caps: Capabilities,
    status: Arc<StatusCell>,
    me: Mutex<Option<String>>,
    memory: Mutex<Memory>,
    txn_prefix: String,
    txn: AtomicU64,
}

impl std::fmt::Debug for MatrixAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixAdapter")
            .field("homeserver", &self.settings.homeserver)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct WhoAmI {
    user_id: String,
    device_id: Option<String>,
}

#[derive(Deserialize)]
struct LoginAnswer {
    user_id: String,
    access_token: String,
    device_id: Option<String>,
}

#[derive(Deserialize)]
struct EventId {
    event_id: String,
}

#[derive(Deserialize)]
struct JoinedMembers {
    #[serde(default)]
    joined: HashMap<String, Value>,
}

impl MatrixAdapter {
    pub fn new(
        settings: MatrixSettings,
        reply_to_mode: ReplyToMode,
    ) -> Result<MatrixAdapter, PlatformConfigError> {
        let client = http::client(PLATFORM)?;
        let hint = match settings.auth {
            MatrixAuth::Token(_) => "MATRIX_ACCESS_TOKEN",
            MatrixAuth::Password { .. } => "MATRIX_USER_ID / MATRIX_PASSWORD",
        };
        let api = Api::new(client, &settings.homeserver, hint).ok_or_else(|| {
            PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("MATRIX_HOMESERVER {:?} is not a URL", settings.homeserver),
            }
        })?;
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        Ok(MatrixAdapter {
            api,
            caps: Capabilities {
                max_message_len: settings.max_message_len,
                length_unit: LengthUnit::Chars,
                // The body is the markdown as written; the HTML goes in `formatted_body`.
                markdown: Dialect::Plain,
                can_edit: true,
                can_delete: true,
                buttons: false,
                threads: true,
                typing: true,
                typing_interval: Duration::from_millis(TYPING_MS - 5_000),
                min_edit_interval: Duration::from_millis(1500),
                progress_messages: true,
            },
            settings,
            reply_to_mode,
            status: Arc::new(StatusCell::default()),
            me: Mutex::new(None),
            memory: Mutex::new(Memory::default()),
            txn_prefix: format!("hermes{started:x}{:04x}", fastrand::u16(..)),
            txn: AtomicU64::new(0),
        })
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn me(&self) -> Result<String, PlatformError> {
        self.me
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or(PlatformError::Network {
                platform: PLATFORM,
                message: "not logged in yet".into(),
            })
    }

    fn next_txn(&self) -> String {
        format!(
            "{}.{}",
            self.txn_prefix,
            self.txn.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn saved(&self) -> SavedState {
        self.settings
            .state_path
            .as_deref()
            .map(SavedState::load)
            .unwrap_or_default()
    }

    fn save(&self, state: &SavedState) {
        if let Some(path) = &self.settings.state_path
            && let Err(e) = state.save(path)
        {
            self.status
                .error(format!("cannot save {}: {e}", path.display()));
        }
    }

    /// Logs in (or checks the token) and returns the bot's user id and device.
    async fn authenticate(&self) -> Result<(String, Option<String>), PlatformError> {
        match &self.settings.auth {
            MatrixAuth::Token(token) => {
                self.api.set_token(Some(token.clone()));
                let who: WhoAmI = self.api.get(&["account", "whoami"]).await?;
                if let Some(configured) = &self.settings.user_id
                    && configured != &who.user_id
                {
                    tracing::warn!(
                        "matrix: MATRIX_USER_ID is {configured} but the token belongs to {}",
                        who.user_id
                    );
                }
                Ok((who.user_id, who.device_id))
            }
            MatrixAuth::Password { user_id, password } => {
                if self.api.has_token() {
                    match self.api.get::<WhoAmI>(&["account", "whoami"]).await {
                        Ok(who) => return Ok((who.user_id, who.device_id)),
                        Err(PlatformError::Unauthorized { .. }) => self.api.set_token(None),
                        Err(e) => return Err(e),
                    }
                }
                let saved = self.saved();
                let device = self.settings.device_id.clone().or_else(|| {
                    saved
                        .device_id
                        .filter(|_| saved.user_id.as_deref() == Some(user_id.as_str()))
                });
                let mut body = json!({
                    "type": "m.login.password",
                    "identifier": {"type": "m.id.user", "user": user_id},
                    "password": password,
                    "initial_device_display_name": "Hermes",
                });
                if let Some(d) = device {
                    body["device_id"] = json!(d);
                }
                let answer: LoginAnswer = self.api.post(&["login"], &body).await?;
                self.api.set_token(Some(answer.access_token));
                Ok((answer.user_id, answer.device_id))
            }
        }
    }

    async fn session(
        &self,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
        backoff: &mut Backoff,
    ) -> SessionEnd {
        let (me, device) = match self.authenticate().await {
            Ok(x) => x,
            Err(e @ PlatformError::Unauthorized { .. }) => return SessionEnd::Fatal(e),
            Err(e) => return SessionEnd::Retry(format!("login: {e}")),
        };
        *self.me.lock().unwrap_or_else(PoisonError::into_inner) = Some(me.clone());
        let mut saved = self.saved();
        if saved.user_id.as_deref() != Some(me.as_str()) {
            // Another account's token would skip or repeat this one's messages.
            saved = SavedState {
                user_id: Some(me.clone()),
                ..SavedState::default()
            };
        }
        if device.is_some() {
            saved.device_id = device;
        }
        if self.settings.e2ee_requested {
            tracing::warn!(
                "matrix: this build has no end-to-end encryption; encrypted rooms will be refused"
            );
        }
        loop {
            let initial = saved.next_batch.is_none();
            let timeout = if initial {
                Duration::ZERO
            } else {
                self.settings.sync_timeout
            };
            let result = tokio::select! {
                _ = shutdown.cancelled() => return SessionEnd::Shutdown,
                r = self.sync(saved.next_batch.as_deref(), timeout) => r,
            };
            match result {
                Ok(sync) => {
                    backoff.reset();
                    self.status.set_state(ConnectionState::Connected);
                    let next = sync.next_batch.clone();
                    if !self.process(sync, &me, initial, inbound, shutdown).await {
                        return SessionEnd::Shutdown;
                    }
                    saved.next_batch = Some(next);
                    self.save(&saved);
                }
                Err(PlatformError::RateLimited { retry_after, .. }) => {
                    self.status
                        .error(format!("sync rate limited for {}s", retry_after.as_secs()));
                    if !sleep_or_shutdown(retry_after, shutdown).await {
                        return SessionEnd::Shutdown;
                    }
                }
                Err(e @ PlatformError::Unauthorized { .. }) => {
                    if matches!(self.settings.auth, MatrixAuth::Password { .. }) {
                        // The session was logged out: log in again.
                        self.api.set_token(None);
                        return SessionEnd::Retry(format!("sync: {e}"));
                    }
                    return SessionEnd::Fatal(e);
                }
                Err(e) => return SessionEnd::Retry(format!("sync: {e}")),
            }
        }
    }

    async fn sync(
        &self,
        since: Option<&str>,
        timeout: Duration,
    ) -> Result<SyncResponse, PlatformError> {
        let mut url = self.api.client_url(&["sync"])?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("filter", SYNC_FILTER)
                .append_pair("timeout", &timeout.as_millis().to_string());
            if let Some(s) = since {
                query.append_pair("since", s);
            }
        }
        let request = self.api.request(reqwest::Method::GET, url);
        self.api.send(request, timeout + CALL_TIMEOUT).await
    }

    /// Handles one `/sync` answer; false when shutdown interrupted delivery.
    async fn process(
        &self,
        sync: SyncResponse,
        me: &str,
        initial: bool,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> bool {
        for raw in &sync.account_data.events {
            if raw["type"] == "m.direct"
                && let Some(map) = raw["content"].as_object()
            {
                let mut memory = self.memory();
                for rooms in map.values() {
                    for room in rooms.as_array().into_iter().flatten() {
                        if let Some(r) = room.as_str() {
                            memory.direct.insert(r.to_string());
                        }
                    }
                }
            }
        }
        for (room_id, invited) in &sync.rooms.invite {
            self.on_invite(room_id, &invited.invite_state.events, me)
                .await;
        }
        for (room_id, room) in sync.rooms.join {
            let state: Vec<Event> = room.state.events.iter().filter_map(api::event).collect();
            let timeline: Vec<Event> = room.timeline.events.iter().filter_map(api::event).collect();
            for ev in state.iter().chain(timeline.iter()) {
                self.note_state(&room_id, ev);
            }
            if initial {
                // History from before this gateway's first start is not answered.
                continue;
            }
            // In a room joined in this batch, what precedes the bot's join is history.
            let start = timeline
                .iter()
                .rposition(|ev| {
                    ev.kind == "m.room.member"
                        && ev.state_key.as_deref() == Some(me)
                        && ev.content["membership"] == "join"
                })
                .map_or(0, |i| i + 1);
            for ev in &timeline[start..] {
                if let Some(event) = self.convert(&room_id, ev, me).await
                    && !self.push(inbound, event, shutdown).await
                {
                    return false;
                }
            }
        }
        true
    }

    async fn push(
        &self,
        inbound: &mpsc::Sender<InboundEvent>,
        event: InboundEvent,
        shutdown: &CancellationToken,
    ) -> bool {
        let delivered = deliver(inbound, event, shutdown).await;
        if delivered {
            self.status.add_received();
        }
        delivered
    }

    async fn on_invite(&self, room_id: &str, state: &[Value], me: &str) {
        let invite = state.iter().filter_map(api::event).find(|ev| {
            ev.kind == "m.room.member"
                && ev.state_key.as_deref() == Some(me)
                && ev.content["membership"] == "invite"
        });
        let Some(invite) = invite else {
            return;
        };
        let direct = invite.content["is_direct"].as_bool() == Some(true);
        if !self.settings.accepts_invite_from(&invite.sender, direct) {
            tracing::warn!(
                "matrix: not joining {room_id}: invited by {}, who is not in MATRIX_ALLOWED_USERS",
                invite.sender
            );
            return;
        }
        let empty = json!({});
        let joined = with_rate_limit(MAX_RATE_LIMIT_WAIT, || {
            self.api.post::<Value>(&["join", room_id], &empty)
        })
        .await;
        match joined {
            Ok(_) => {
                tracing::info!("matrix: joined {room_id} (invited by {})", invite.sender);
                if direct {
                    self.memory().direct.insert(room_id.to_string());
                }
            }
            Err(e) => self.status.error(format!("joining {room_id}: {e}")),
        }
    }

    /// Keeps the room's encryption, membership and names current.
    fn note_state(&self, room_id: &str, ev: &Event) {
        let mut memory = self.memory();
        if !memory.rooms.contains_key(room_id) && memory.rooms.len() >= MAX_ROOMS {
            memory.rooms.clear();
        }
        match ev.kind.as_str() {
            "m.room.encryption" if ev.state_key.as_deref() == Some("") => {
                memory
                    .rooms
                    .entry(room_id.to_string())
                    .or_default()
                    .encrypted = true;
            }
            "m.room.member" => {
                let Some(user) = ev.state_key.clone() else {
                    return;
                };
                let info = memory.rooms.entry(room_id.to_string()).or_default();
                info.members = None;
                if ev.content["membership"] == "join" {
                    if let Some(name) = ev.content["displayname"].as_str()
                        && info.names.len() < MAX_NAMES
                    {
                        info.names.insert(user, name.to_string());
                    }
                } else {
                    info.names.remove(&user);
                }
            }
            _ => {}
        }
    }

    /// Encryption and member count of a room, asked from the server when not known.
    async fn room_facts(&self, room_id: &str) -> (bool, usize) {
        let known = {
            let memory = self.memory();
            memory
                .rooms
                .get(room_id)
                .and_then(|r| r.members.map(|m| (r.encrypted, m)))
        };
        if let Some(facts) = known {
            return facts;
        }
        let members = self
            .api
            .get::<JoinedMembers>(&["rooms", room_id, "joined_members"])
            .await;
        let encrypted = match self
            .api
            .get::<Value>(&["rooms", room_id, "state", "m.room.encryption", ""])
            .await
        {
            Ok(_) => true,
            Err(e) if is_not_found(&e) => false,
            Err(e) => {
                self.status
                    .error(format!("{room_id}: encryption state unknown: {e}"));
                false
            }
        };
        let mut memory = self.memory();
        let info = memory.rooms.entry(room_id.to_string()).or_default();
        info.encrypted |= encrypted;
        match members {
            Ok(m) => {
                for (user, profile) in &m.joined {
                    if info.names.len() >= MAX_NAMES {
                        break;
                    }
                    if let Some(name) = profile["display_name"].as_str() {
                        info.names.insert(user.clone(), name.to_string());
                    }
                }
                info.members = Some(m.joined.len());
                (info.encrypted, m.joined.len())
            }
            Err(e) => {
                self.status
                    .error(format!("{room_id}: members unknown: {e}"));
                // Unknown: treated as a shared room (mention rules apply).
                (info.encrypted, usize::MAX)
            }
        }
    }

    fn refuse_encrypted(&self, room_id: &str) {
        if self.memory().refused.insert(room_id.to_string()) {
            let message = format!(
                "room {room_id} is end-to-end encrypted and this build has no Matrix encryption: its messages are ignored"
            );
            tracing::warn!("matrix: {message}");
            self.status.error(message);
        }
    }

    /// One timeline event as what the core must see, if it is a message for the bot.
    async fn convert(&self, room_id: &str, ev: &Event, me: &str) -> Option<InboundEvent> {
        if ev.sender == me || ev.event_id.is_empty() {
            return None;
        }
        if ev.kind == "m.room.encrypted" {
            self.refuse_encrypted(room_id);
            return None;
        }
        if ev.kind != "m.room.message" || !self.memory().seen.insert(&ev.event_id) {
            return None;
        }
        let content = &ev.content;
        let msgtype = content["msgtype"].as_str().unwrap_or_default();
        if msgtype == "m.notice" && !self.settings.process_notices {
            return None;
        }
        let relation = events::relation(content);
        if relation.is_edit {
            return None;
        }
        let (encrypted, members) = self.room_facts(room_id).await;
        if encrypted {
            self.refuse_encrypted(room_id);
            return None;
        }
        let direct = members <= 2 || self.memory().direct.contains(room_id);
        let body = content["body"].as_str().unwrap_or_default();
        let body = events::strip_reply_fallback(body);
        let attachment = events::attachment(content);
        let mentioned = events::mentions(me, content, body)
            || gate::matches_patterns(&self.settings.mentions, body);
        let (replied_to_bot, in_bot_thread) = {
            let memory = self.memory();
            (
                relation
                    .reply_to
                    .as_deref()
                    .is_some_and(|r| memory.bot_events.contains(r)),
                relation
                    .thread_root
                    .as_deref()
                    .is_some_and(|t| memory.bot_threads.contains(t)),
            )
        };
        let admitted = gate::admits(
            &self.settings.mentions,
            &GateInput {
                chat_ids: vec![room_id],
                direct,
                mentioned,
                replied_to_bot,
                in_bot_thread,
            },
        );
        if !admitted {
            return None;
        }
        let user_name = self
            .memory()
            .rooms
            .get(room_id)
            .and_then(|r| r.names.get(&ev.sender).cloned())
            .or_else(|| {
                ev.sender
                    .split(':')
                    .next()
                    .map(|l| l.trim_start_matches('@').to_string())
            });
        let mut text = if attachment.is_some() {
            String::new()
        } else if mentioned {
            events::strip_mention(me, body)
        } else {
            body.trim().to_string()
        };
        if msgtype == "m.emote" {
            text = format!("* {} {text}", user_name.as_deref().unwrap_or(&ev.sender));
        }
        let auto_thread = if direct {
            self.settings.dm_auto_thread
        } else {
            self.settings.auto_thread
        };
        let thread = relation
            .thread_root
            .clone()
            .or_else(|| auto_thread.then(|| ev.event_id.clone()));
        let chat_type = if direct {
            ChatType::Direct
        } else {
            ChatType::Group
        };
        let received_at = ev
            .origin_server_ts
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
            .unwrap_or_else(SystemTime::now);
        Some(InboundEvent::Message(InboundMessage {
            chat: ChatRef::new(PLATFORM, chat_type, room_id).with_thread(thread),
            chat_name: None,
            message_id: ev.event_id.clone(),
            user_id: ev.sender.clone(),
            user_name,
            text,
            attachments: attachment.into_iter().collect(),
            reply_to: relation.reply_to.clone(),
            mentions_bot: mentioned,
            replies_to_bot: replied_to_bot,
            from_bot: false,
            deliver_to: None,
            skills: Vec::new(),
            received_at,
        }))
    }

    /// Sends one event into a room; returns its id.
    async fn send_event(
        &self,
        room_id: &str,
        kind: &str,
        content: &Value,
    ) -> Result<String, PlatformError> {
        // One transaction id for every retry: the server deduplicates them.
        let txn = self.next_txn();
        let sent: EventId = with_rate_limit(MAX_RATE_LIMIT_WAIT, || {
            self.api
                .put(&["rooms", room_id, "send", kind, &txn], content)
        })
        .await?;
        self.memory().bot_events.insert(&sent.event_id);
        self.status.add_sent(1);
        Ok(sent.event_id)
    }

    async fn upload(&self, file: &OutboundFile) -> Result<Value, PlatformError> {
        let meta = tokio::fs::metadata(&file.path)
            .await
            .map_err(|e| PlatformError::io(&file.path, e))?;
        if meta.len() > self.settings.max_media_bytes {
            return Err(PlatformError::TooLarge {
                what: file.path.display().to_string(),
                size: meta.len(),
                limit: self.settings.max_media_bytes,
            });
        }
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|e| PlatformError::io(&file.path, e))?;
        let name = download::safe_file_name(file.path.file_name().and_then(|n| n.to_str()));
        let mime = mime_of(&name);
        let mut url = self.api.url(&["_matrix", "media", "v3", "upload"])?;
        url.query_pairs_mut().append_pair("filename", &name);
        #[derive(Deserialize)]
        struct Uploaded {
            content_uri: String,
        }
        let size = bytes.len();
        let uploaded: Uploaded = with_rate_limit(MAX_RATE_LIMIT_WAIT, || {
            let request = self
                .api
                .request(reqwest::Method::POST, url.clone())
                .header(reqwest::header::CONTENT_TYPE, mime)
                .body(bytes.clone());
            self.api.send(request, Duration::from_secs(300))
        })
        .await?;
        let msgtype = match file.kind {
            OutboundFileKind::Photo => "m.image",
            OutboundFileKind::Voice => "m.audio",
            OutboundFileKind::Document => "m.file",
        };
        Ok(json!({
            "msgtype": msgtype,
            "body": name,
            "filename": name,
            "url": uploaded.content_uri,
            "info": {"mimetype": mime, "size": size},
        }))
    }
}

/// A message's content: the markdown as `body`, its HTML as `formatted_body` when the
/// markdown formats anything.
fn text_content(markdown_text: &str) -> Value {
    let html = markdown::render_html(markdown_text);
    let mut plain = String::new();
    for c in markdown_text.chars() {
        match c {
            '&' => plain.push_str("&amp;"),
            '<' => plain.push_str("&lt;"),
            '>' => plain.push_str("&gt;"),
            '"' => plain.push_str("&quot;"),
            '\n' => plain.push_str("<br>"),
            c => plain.push(c),
        }
    }
    let mut content = json!({"msgtype": "m.text", "body": markdown_text});
    if html != plain && markdown_text.len() + html.len() <= MAX_CONTENT_BYTES {
        content["format"] = json!("org.matrix.custom.html");
        content["formatted_body"] = json!(html);
    }
    content
}

/// Places a message in its thread, or makes it a reply.
fn relate(content: &mut Value, chat: &ChatRef, reply_to: Option<&str>) {
    if let Some(root) = &chat.thread_id {
        content["m.relates_to"] = json!({
            "rel_type": "m.thread",
            "event_id": root,
            "is_falling_back": reply_to.is_none(),
            "m.in_reply_to": {"event_id": reply_to.unwrap_or(root)},
        });
    } else if let Some(r) = reply_to {
        content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": r}});
    }
}

/// An `m.replace` edit of `id` to `markdown_text`.
fn edit_content(id: &str, markdown_text: &str) -> Value {
    let new = text_content(markdown_text);
    let mut content = new.clone();
    content["body"] = json!(format!("* {markdown_text}"));
    if let Some(html) = new["formatted_body"].as_str() {
        content["formatted_body"] = json!(format!("* {html}"));
    }
    content["m.new_content"] = new;
    content["m.relates_to"] = json!({"rel_type": "m.replace", "event_id": id});
    content
}

/// The MIME type of an upload, by its extension.
fn mime_of(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ogg" | "oga" | "opus" => "audio/ogg",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "pdf" => "application/pdf",
        "txt" | "md" => "text/plain",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for MatrixAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let mut backoff = Backoff::transient();
        while !shutdown.is_cancelled() {
            self.status.set_state(ConnectionState::Connecting);
            match self.session(&inbound, &shutdown, &mut backoff).await {
                SessionEnd::Shutdown => break,
                SessionEnd::Fatal(e) => {
                    self.status.set_state(ConnectionState::Failed);
                    tracing::warn!("matrix: {e}");
                    self.status.error(e.to_string());
                    if !sleep_or_shutdown(FATAL_RETRY, &shutdown).await {
                        break;
                    }
                }
                SessionEnd::Retry(e) => {
                    self.status.set_state(ConnectionState::Reconnecting);
                    self.status.error(e);
                    if !backoff.wait(&shutdown).await {
                        break;
                    }
                }
            }
        }
        self.status.set_state(ConnectionState::Stopped);
    }

    async fn send(
        &self,
        chat: &ChatRef,
        message: &OutboundMessage,
    ) -> Result<SentMessage, PlatformError> {
        let parts = split::render_parts(
            &message.text,
            Dialect::Plain,
            self.caps.max_message_len,
            LengthUnit::Chars,
            true,
        );
        let mut ids = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let mut content = text_content(part);
            let reply = message
                .reply_to
                .as_deref()
                .filter(|_| self.reply_to_mode.applies_to(i));
            relate(&mut content, chat, reply);
            ids.push(
                self.send_event(&chat.chat_id, "m.room.message", &content)
                    .await?,
            );
        }
        for file in &message.files {
            let mut content = self.upload(file).await?;
            relate(&mut content, chat, None);
            ids.push(
                self.send_event(&chat.chat_id, "m.room.message", &content)
                    .await?,
            );
        }
        if let Some(thread) = &chat.thread_id
            && !ids.is_empty()
        {
            self.memory().bot_threads.insert(thread);
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text and no files".into(),
        })
    }

    async fn edit(&self, chat: &ChatRef, id: &str, text: &str) -> Result<(), PlatformError> {
        let text = crate::platform::edit_text(text, &self.caps).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "an edit needs a text".into(),
        })?;
        self.send_event(&chat.chat_id, "m.room.message", &edit_content(id, &text))
            .await?;
        Ok(())
    }

    async fn delete(&self, chat: &ChatRef, id: &str) -> Result<(), PlatformError> {
        let txn = self.next_txn();
        let empty = json!({});
        with_rate_limit(MAX_RATE_LIMIT_WAIT, || {
            self.api
                .put::<Value>(&["rooms", &chat.chat_id, "redact", id, &txn], &empty)
        })
        .await?;
        Ok(())
    }

    async fn typing(&self, chat: &ChatRef) -> Result<(), PlatformError> {
        let me = self.me()?;
        self.api
            .put::<Value>(
                &["rooms", &chat.chat_id, "typing", &me],
                &json!({"typing": true, "timeout": TYPING_MS}),
            )
            .await?;
        Ok(())
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dir: &Path,
        max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        let FileSource::Url(url) = &attachment.source else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "not a Matrix media URL".into(),
            });
        };
        let (server, media) = events::parse_mxc(url).ok_or_else(|| PlatformError::Invalid {
            platform: PLATFORM,
            message: format!("{url:?} is not an mxc:// URL"),
        })?;
        let cap = match max_bytes {
            0 => self.settings.max_media_bytes,
            n => n.min(self.settings.max_media_bytes),
        };
        if let Some(size) = attachment.size
            && size > cap
        {
            return Err(PlatformError::TooLarge {
                what: attachment
                    .file_name
                    .clone()
                    .unwrap_or_else(|| "attachment".into()),
                size,
                limit: cap,
            });
        }
        // Authenticated media (Matrix 1.11); servers have frozen the unauthenticated route.
        let url = self.api.url(&[
            "_matrix", "client", "v1", "media", "download", server, media,
        ])?;
        download::fetch(
            PLATFORM,
            self.api.request(reqwest::Method::GET, url),
            "media",
            dir,
            attachment.file_name.as_deref(),
            cap,
        )
        .await
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let server = crate::platform::url_host(&self.settings.homeserver);
        match &self.settings.auth {
            MatrixAuth::Token(token) => {
                self.api.set_token(Some(token.clone()));
                let who: WhoAmI = self.api.get(&["account", "whoami"]).await?;
                Ok(format!("{} on {server}", who.user_id))
            }
            // A password login makes a new device and token each time: only the server is
            // checked; the login happens when the gateway starts.
            MatrixAuth::Password { user_id, .. } => {
                let url = self.api.url(&["_matrix", "client", "versions"])?;
                let _: serde_json::Value = self
                    .api
                    .send(self.api.request(reqwest::Method::GET, url), CALL_TIMEOUT)
                    .await?;
                Ok(format!(
                    "{server} answers; {user_id} logs in with MATRIX_PASSWORD when the gateway starts"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_goes_to_formatted_body_and_plain_text_stays_plain() {
        let c = text_content("Hello **Ann**");
        assert_eq!(c["body"], "Hello **Ann**");
        assert_eq!(c["format"], "org.matrix.custom.html");
        assert_eq!(c["formatted_body"], "Hello <strong>Ann</strong>");
        let c = text_content("just text\nand a line");
        assert_eq!(
            c,
            json!({"msgtype": "m.text", "body": "just text\nand a line"})
        );
    }

    #[test]
    fn threads_replies_and_edits_have_their_relations() {
        let chat =
            ChatRef::new(PLATFORM, ChatType::Group, "!r:h").with_thread(Some("$root".into()));
        let mut c = text_content("x");
        relate(&mut c, &chat, None);
        assert_eq!(
            c["m.relates_to"],
            json!({"rel_type": "m.thread", "event_id": "$root", "is_falling_back": true,
                   "m.in_reply_to": {"event_id": "$root"}})
        );
        let dm = ChatRef::new(PLATFORM, ChatType::Direct, "!d:h");
        let mut c = text_content("x");
        relate(&mut c, &dm, Some("$q"));
        assert_eq!(
            c["m.relates_to"],
            json!({"m.in_reply_to": {"event_id": "$q"}})
        );
        let e = edit_content("$m", "now *more*");
        assert_eq!(e["body"], "* now *more*");
        assert_eq!(e["m.new_content"]["body"], "now *more*");
        assert_eq!(e["m.new_content"]["formatted_body"], "now <em>more</em>");
        assert_eq!(
            e["m.relates_to"],
            json!({"rel_type": "m.replace", "event_id": "$m"})
        );
    }
}
