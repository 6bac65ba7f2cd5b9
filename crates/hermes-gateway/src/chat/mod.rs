//! The chat gateway: every configured platform adapter feeding one [`Runtime`]. Events from all
//! adapters arrive on one bounded channel; each message is authorised (allowlists, pairing)
//! before anything reaches a model, then handed to its chat's worker (one task per live chat,
//! keyed as the Python Hermes keys sessions). Live chats are capped (128, least recently active
//! unloaded first) and unloaded after an hour idle; their conversations continue from the store.
//!
//! - [`routes`]: session keys and which stored session each chat is in (`sessions/sessions.json`),
//!   the reset policy;
//! - [`auth`]: who may talk; [`crate::pairing`]: the pairing codes;
//! - [`worker`]: one chat's turns, interrupts and queue; [`commands`]: slash commands;
//! - [`ask`]: approvals and questions in the chat; [`stream`]: answers streamed by edits;
//! - [`delivery`]: cron answers and `send_message` to chats; [`scheduler`]: cron inside the
//!   gateway; [`state`]: what `hermes gateway status` reads.

pub mod ask;
pub mod auth;
pub mod commands;
pub mod delivery;
pub mod kanban;
pub mod media;
pub mod routes;
pub mod scheduler;
pub mod settings;
pub mod state;
pub mod stream;
pub mod worker;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use hermes_runtime::{Runtime, SessionSpec};
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use crate::pairing::{NoCode, PairingStore};
use crate::platform::settings::PlatformsConfig;
use crate::platform::{InboundEvent, InboundMessage, OutboundMessage, PlatformAdapter};
use routes::Routes;
use settings::ChatSettings;
use worker::{ChatInput, Shared, WorkerHandle};

/// Events waiting for the dispatcher (beyond this adapters wait).
const INBOUND: usize = 256;

/// The chat side of `hermes gateway`.
pub struct ChatGateway {
    shared: Arc<Shared>,
    adapters: HashMap<String, Arc<dyn PlatformAdapter>>,
    platforms: PlatformsConfig,
    pairing: Arc<PairingStore>,
    workers: Mutex<HashMap<String, WorkerHandle>>,
}

impl ChatGateway {
    pub fn new(
        runtime: Runtime,
        base: SessionSpec,
        adapters: Vec<Arc<dyn PlatformAdapter>>,
        platforms: PlatformsConfig,
    ) -> ChatGateway {
        let home = runtime.home().root().to_path_buf();
        let settings = ChatSettings::from_config(&runtime.config().raw);
        ChatGateway {
            shared: Arc::new(Shared {
                base,
                settings,
                routes: Arc::new(Routes::load(&home)),
                attachments: home.join("cache").join("gateway"),
                transcriber: stt_enabled(&runtime.config().raw).then(|| {
                    hermes_web::media::Transcriber::new(
                        hermes_web::api::ApiClient::new(std::time::Duration::from_secs(120)),
                        runtime.config(),
                        runtime.env(),
                    )
                }),
                runtime,
            }),
            adapters: adapters
                .into_iter()
                .map(|a| (a.name().to_string(), a))
                .collect(),
            platforms,
            pairing: Arc::new(PairingStore::for_home(&home)),
            workers: Mutex::new(HashMap::new()),
        }
    }

    pub fn adapters(&self) -> impl Iterator<Item = &Arc<dyn PlatformAdapter>> {
        self.adapters.values()
    }

    pub fn routes(&self) -> &Arc<Routes> {
        &self.shared.routes
    }

    /// Runs every adapter and answers their chats until `shutdown`; then lets each chat
    /// finish (or stop) its turn and closes its session.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let (tx, mut rx) = mpsc::channel::<InboundEvent>(INBOUND);
        let mut tasks = Vec::new();
        for adapter in self.adapters.values() {
            let adapter = adapter.clone();
            let tx = tx.clone();
            let stop = shutdown.clone();
            tasks.push(tokio::spawn(async move { adapter.run(tx, stop).await }));
        }
        drop(tx);
        let mut sweep = tokio::time::interval(Duration::from_secs(30));
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = sweep.tick() => self.sweep().await,
                event = rx.recv() => match event {
                    Some(event) => self.dispatch(event, &shutdown).await,
                    None => break,
                },
            }
        }
        let workers: Vec<WorkerHandle> =
            self.workers.lock().await.drain().map(|(_, w)| w).collect();
        for w in workers {
            drop(w.tx);
            let _ = tokio::time::timeout(Duration::from_secs(30), w.task).await;
        }
        for t in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
        }
    }

    async fn dispatch(&self, event: InboundEvent, shutdown: &CancellationToken) {
        match event {
            InboundEvent::Button {
                chat,
                user_id,
                data,
                ..
            } => {
                if !auth::may_answer(&self.platforms, &self.pairing, &chat, &user_id) {
                    tracing::debug!(
                        "{}: ignored a button press from unauthorised user {user_id}",
                        chat.platform
                    );
                    return;
                }
                let key = routes::key_for(&chat, Some(&user_id), self.shared.settings.keys);
                let workers = self.workers.lock().await;
                if let Some(w) = workers.get(&key) {
                    let _ = w.tx.try_send(ChatInput::Button(data));
                }
            }
            InboundEvent::Message(message) => self.on_message(message, shutdown).await,
            InboundEvent::Deliver { to, text } => {
                if let Err(e) = self.directory().send(&target_spec(&to), &text).await {
                    tracing::warn!("{}: delivery failed: {e}", to.platform);
                }
            }
        }
    }

    /// Where messages can go: the adapters, home channels and chats seen.
    pub fn directory(&self) -> delivery::Directory {
        delivery::Directory {
            adapters: self.adapters.clone(),
            platforms: self.platforms.clone(),
            routes: self.shared.routes.clone(),
        }
    }

    async fn on_message(&self, message: InboundMessage, shutdown: &CancellationToken) {
        let Some(source) = self.adapters.get(&message.chat.platform).cloned() else {
            return;
        };
        match auth::decide(&self.platforms, &self.pairing, &message) {
            auth::Access::Allowed => {}
            auth::Access::Ignore => {
                tracing::debug!(
                    "{}: ignored a message from unauthorised user {}",
                    message.chat.platform,
                    message.user_id
                );
                return;
            }
            auth::Access::Pair => {
                let name = message.user_name.clone().unwrap_or_default();
                let text = match self
                    .pairing
                    .issue(&message.chat.platform, &message.user_id, &name)
                {
                    Ok(Ok(code)) => auth::pairing_message(&message.chat.platform, &code),
                    Ok(Err(NoCode::RateLimited)) => return,
                    Ok(Err(NoCode::TooManyPending)) => {
                        "Too many people are waiting to be approved right now; try again later."
                            .into()
                    }
                    Ok(Err(NoCode::LockedOut)) => {
                        "Pairing is locked for a while after too many wrong codes; try again later."
                            .into()
                    }
                    Err(e) => {
                        tracing::warn!("pairing: {e}");
                        return;
                    }
                };
                if let Err(e) = source
                    .send(&message.chat, &OutboundMessage::text(text))
                    .await
                {
                    tracing::warn!("{}: pairing code not sent: {e}", message.chat.platform);
                }
                return;
            }
        }
        // Webhook routes may deliver their answer to another platform's chat (an empty chat
        // id: its home channel).
        let (adapter, chat) = match &message.deliver_to {
            Some(target) => match self.directory().resolve(&target_spec(target)) {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(
                        "{}: cannot deliver to {}: {e}",
                        message.chat.platform,
                        target.platform
                    );
                    (source, message.chat.clone())
                }
            },
            None => (source, message.chat.clone()),
        };
        let key = self.shared.settings.keys.key(&message);
        let mut workers = self.workers.lock().await;
        let finished = workers
            .get(&key)
            .is_some_and(|w| w.task.is_finished() || w.tx.is_closed());
        if finished {
            workers.remove(&key);
        }
        if !workers.contains_key(&key) {
            self.make_room(&mut workers);
            let handle = worker::spawn(
                self.shared.clone(),
                key.clone(),
                chat.clone(),
                adapter.clone(),
                shutdown.clone(),
            );
            workers.insert(key.clone(), handle);
        }
        let Some(w) = workers.get(&key) else { return };
        if let Err(mpsc::error::TrySendError::Full(_)) =
            w.tx.try_send(ChatInput::Message(Box::new(message)))
        {
            drop(workers);
            let _ = adapter
                .send(&chat, &OutboundMessage::text("I'm still catching up with your earlier messages; this one was dropped, please send it again in a moment."))
                .await;
        }
    }

    /// Keeps at most `max_live_chats` loaded: the least recently active go first (their
    /// session closes; the next message reloads it from the store).
    fn make_room(&self, workers: &mut HashMap<String, WorkerHandle>) {
        let max = self.shared.settings.max_live_chats.max(1);
        while workers.len() >= max {
            let Some(oldest) = workers
                .iter()
                .max_by_key(|(_, w)| w.idle_for())
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            // Dropping the sender lets the worker finish and close its session.
            workers.remove(&oldest);
        }
    }

    /// Forgets workers that ended (idle, or their channel closed).
    async fn sweep(&self) {
        self.workers
            .lock()
            .await
            .retain(|_, w| !w.task.is_finished());
    }

    /// Chats loaded now.
    pub async fn live_chats(&self) -> usize {
        self.workers.lock().await.len()
    }
}

/// `platform`, `platform:chat_id` or `platform:chat_id:thread` for a chat reference (an empty
/// chat id names the platform's home channel).
fn target_spec(chat: &crate::platform::ChatRef) -> String {
    match (chat.chat_id.is_empty(), &chat.thread_id) {
        (true, _) => chat.platform.clone(),
        (false, Some(t)) => format!("{}:{}:{t}", chat.platform, chat.chat_id),
        (false, None) => format!("{}:{}", chat.platform, chat.chat_id),
    }
}

/// `stt.enabled` (default on, as in the Python Hermes): voice messages are transcribed for
/// the agent; off, the agent is told where the audio file was saved.
fn stt_enabled(raw: &serde_json::Value) -> bool {
    raw.pointer("/stt/enabled")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(true)
}
