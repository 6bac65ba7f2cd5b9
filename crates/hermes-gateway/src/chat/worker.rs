//! One chat's conversation, on a task of its own: it owns the chat's [`Session`] (loaded when
//! the first message comes, continued from the store after a restart, started over by `/new`
//! or the reset policy, closed when the chat goes idle), runs one turn at a time while the
//! platform keeps delivering, and applies Hermes's rule for messages that arrive mid-turn: the
//! running turn is interrupted and the new message (with any others that came) is answered
//! next. Answers to the agent's questions (`/approve`, buttons, a reply to `clarify`) and
//! `/stop` are taken at once; the other chat commands wait for the turn to end.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_protocol::{TurnEnd, Usage};
use hermes_runtime::{Platform, Resume, Runtime, Session, SessionSpec, TurnReport};
use hermes_tools::ApprovalAnswer;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::ask::{ChatInteraction, Questions};
use super::commands::{self, Command};
use super::routes::{Origin, Routes};
use super::settings::ChatSettings;
use super::stream::ChatStream;
use crate::platform::{AttachmentKind, ChatRef, InboundMessage, OutboundMessage, PlatformAdapter};

/// Messages waiting for a chat's worker (beyond this the platform is slowed down).
pub const QUEUE: usize = 64;

/// What every chat worker shares.
pub struct Shared {
    pub runtime: Runtime,
    /// What every chat session starts from (model choice, toolsets, working directory).
    pub base: SessionSpec,
    pub settings: ChatSettings,
    pub routes: Arc<Routes>,
    /// Where attachments are saved (`$HERMES_HOME/cache/gateway`).
    pub attachments: PathBuf,
    /// Transcribes voice messages and audio files (`None` when `stt.enabled: false`).
    pub transcriber: Option<hermes_web::media::Transcriber>,
}

/// What the user said in a batch of messages: the text (attachments named in it, voice
/// transcribed) and the images to give the model.
#[derive(Default)]
struct Said {
    text: String,
    images: Vec<hermes_protocol::Image>,
}

/// What reaches a chat's worker. (Nearly every input is a message: boxing it would cost an
/// allocation per message to save stack space on the rare button press.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum ChatInput {
    Message(Box<InboundMessage>),
    /// A press of one of the gateway's buttons.
    Button(String),
}

/// A running worker, as the gateway holds it.
pub struct WorkerHandle {
    pub tx: mpsc::Sender<ChatInput>,
    pub last_active: Arc<Mutex<Instant>>,
    pub task: tokio::task::JoinHandle<()>,
}

impl WorkerHandle {
    pub fn idle_for(&self) -> Duration {
        self.last_active
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default()
    }
}

/// Starts the worker of the chat `key`.
pub fn spawn(
    shared: Arc<Shared>,
    key: String,
    chat: ChatRef,
    adapter: Arc<dyn PlatformAdapter>,
    shutdown: CancellationToken,
) -> WorkerHandle {
    let (tx, rx) = mpsc::channel(QUEUE);
    let last_active = Arc::new(Mutex::new(Instant::now()));
    let worker = Worker {
        shared,
        key,
        chat,
        adapter,
        questions: Arc::new(Questions::default()),
        session: None,
        last_active: last_active.clone(),
        totals: Totals::default(),
        last: None,
        origin: None,
    };
    let task = tokio::spawn(worker.run(rx, shutdown));
    WorkerHandle {
        tx,
        last_active,
        task,
    }
}

/// Token use over the chat's turns, for `/usage`.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    pub turns: u32,
    pub api_calls: u32,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

pub struct Worker {
    pub(super) shared: Arc<Shared>,
    pub(super) key: String,
    pub(super) chat: ChatRef,
    pub(super) adapter: Arc<dyn PlatformAdapter>,
    pub(super) questions: Arc<Questions>,
    pub(super) session: Option<Session>,
    last_active: Arc<Mutex<Instant>>,
    pub(super) totals: Totals,
    pub(super) last: Option<TurnReport>,
    origin: Option<Origin>,
}

impl Worker {
    async fn run(mut self, mut rx: mpsc::Receiver<ChatInput>, shutdown: CancellationToken) {
        let idle = self.shared.settings.chat_idle;
        loop {
            let input = tokio::select! {
                _ = shutdown.cancelled() => break,
                input = tokio::time::timeout(idle, rx.recv()) => match input {
                    Ok(Some(input)) => input,
                    // Idle (or the gateway let go of this chat): unload; the store keeps it.
                    Ok(None) | Err(_) => break,
                },
            };
            self.touch();
            match input {
                ChatInput::Button(data) => {
                    self.questions.answer_button(&data);
                }
                ChatInput::Message(message) => {
                    self.on_message(*message, &mut rx, &shutdown).await;
                }
            }
        }
        if let Some(session) = self.session.take() {
            session.close().await;
        }
    }

    fn touch(&self) {
        if let Ok(mut t) = self.last_active.lock() {
            *t = Instant::now();
        }
    }

    pub(super) async fn say(&self, text: &str) {
        if let Err(e) = self
            .adapter
            .send(&self.chat, &OutboundMessage::text(text))
            .await
        {
            tracing::warn!(
                "{}: cannot reply in {}: {e}",
                self.chat.platform,
                self.chat.chat_id
            );
        }
    }

    async fn on_message(
        &mut self,
        message: InboundMessage,
        rx: &mut mpsc::Receiver<ChatInput>,
        shutdown: &CancellationToken,
    ) {
        self.origin = Some(Origin {
            chat: message.chat.clone(),
            chat_name: message.chat_name.clone(),
            user_id: Some(message.user_id.clone()),
            user_name: message.user_name.clone(),
        });
        let mut pending = vec![message];
        while !pending.is_empty() {
            let batch = std::mem::take(&mut pending);
            let Some(first) = batch.first() else { break };
            let reply_to = Some(first.message_id.clone());
            // A lone command is a command; anything else is said to the agent.
            if batch.len() == 1
                && let Some(command) = commands::parse(&first.text)
            {
                match self.command(command).await {
                    Some(text) => {
                        pending = self
                            .turn_with_images(text, Vec::new(), reply_to, rx, shutdown)
                            .await;
                    }
                    None => break,
                }
                continue;
            }
            let mut said = Said::default();
            for m in &batch {
                self.with_attachments(m, &mut said).await;
            }
            pending = self
                .turn_with_images(said.text, said.images, reply_to, rx, shutdown)
                .await;
        }
    }

    /// Adds `message` to what was said: its text, its attachments saved and named, voice
    /// and audio transcribed as the Python Hermes does (the transcript as a quoted line, a
    /// neutral marker when it fails), images kept for the model.
    async fn with_attachments(&self, message: &InboundMessage, said: &mut Said) {
        let mut parts: Vec<String> = Vec::new();
        let dir = self.shared.attachments.join(&self.chat.platform);
        for attachment in &message.attachments {
            let what = match attachment.kind {
                AttachmentKind::Image => "an image",
                AttachmentKind::Audio => "an audio file",
                AttachmentKind::Voice => "a voice message",
                AttachmentKind::Video => "a video",
                AttachmentKind::Document => "a file",
            };
            let path = match self
                .adapter
                .download(attachment, &dir, self.shared.settings.max_attachment_bytes)
                .await
            {
                Ok(path) => path,
                Err(e) => {
                    parts.push(format!(
                        "[The user sent {what}{} that could not be downloaded: {e}]",
                        attachment
                            .file_name
                            .as_deref()
                            .map(|n| format!(" ({n})"))
                            .unwrap_or_default()
                    ));
                    continue;
                }
            };
            let spoken = matches!(
                attachment.kind,
                AttachmentKind::Voice | AttachmentKind::Audio
            );
            match (&self.shared.transcriber, attachment.kind) {
                (Some(stt), _) if spoken => match stt.transcribe(&path).await {
                    Ok(transcript) => parts.push(format!("\"{}\"", transcript.trim())),
                    Err(e) => {
                        // The cause goes to the log, not into the conversation, where it
                        // would keep the model talking about transcription.
                        tracing::info!("voice message in {} not transcribed: {e}", self.key);
                        parts.push("[voice message could not be transcribed]".into());
                    }
                },
                (_, AttachmentKind::Image) => {
                    match hermes_core::images::load(&path) {
                        Ok(image) => said.images.push(image),
                        Err(e) => {
                            tracing::info!("image in {} not given to the model: {e}", self.key)
                        }
                    }
                    parts.push(format!(
                        "[The user sent {what}, saved at {}]",
                        path.display()
                    ));
                }
                _ => parts.push(format!(
                    "[The user sent {what}, saved at {}]",
                    path.display()
                )),
            }
        }
        if !message.text.is_empty() {
            parts.push(message.text.clone());
        }
        for part in parts {
            if !said.text.is_empty() {
                said.text.push_str("\n\n");
            }
            said.text.push_str(&part);
        }
    }

    /// The chat's session, loaded (or started) when needed; the reset policy starts a new
    /// stored session when the last one went quiet for too long.
    pub(super) async fn session(&mut self) -> Result<&mut Session, String> {
        let route = self.shared.routes.get(&self.key);
        let expired = route.as_ref().and_then(|r| {
            self.shared
                .settings
                .reset
                .expired(r.updated_at, chrono::Utc::now())
        });
        if let Some(reason) = expired {
            if let Some(session) = self.session.as_mut() {
                let id = session.new_conversation();
                self.shared.routes.set(&self.key, &id, self.origin.clone());
            } else {
                self.shared.routes.remove(&self.key);
            }
            self.say(&format!(
                "◐ Started a fresh conversation (the last one ended after {}).",
                if reason == "idle" {
                    "a quiet spell"
                } else {
                    "the daily reset"
                }
            ))
            .await;
        }
        if self.session.is_none() {
            let resume = match self.shared.routes.get(&self.key) {
                Some(r) => Resume::Session(r.session_id),
                None => Resume::New,
            };
            let session = match self.open(resume.clone()).await {
                Ok(s) => s,
                // The stored session is gone (deleted, pruned): start a new one.
                Err(_) if resume != Resume::New => self.open(Resume::New).await?,
                Err(e) => return Err(e),
            };
            self.session = Some(session);
        }
        self.session
            .as_mut()
            .ok_or_else(|| "the conversation could not be loaded".to_string())
    }

    async fn open(&self, resume: Resume) -> Result<Session, String> {
        let spec = SessionSpec {
            platform: Platform::Gateway(self.chat.platform.clone()),
            resume,
            origin: Some(hermes_tools::ChatOrigin {
                platform: self.chat.platform.clone(),
                chat_id: self.chat.chat_id.clone(),
                chat_type: self.chat.chat_type.as_str().to_string(),
                chat_name: None,
                thread_id: self.chat.thread_id.clone(),
                user_id: self.origin.as_ref().and_then(|o| o.user_id.clone()),
            }),
            chat_key: Some(self.key.clone()),
            ..self.shared.base.clone()
        };
        let interaction = Arc::new(ChatInteraction {
            adapter: self.adapter.clone(),
            chat: self.chat.clone(),
            questions: self.questions.clone(),
            timeout: self.shared.settings.approval_timeout,
        });
        self.shared
            .runtime
            .open_session(spec, interaction)
            .await
            .map_err(|e| e.to_string())
    }

    /// Runs one turn on `text`, streaming the answer; returns the messages that arrived while
    /// it ran (they interrupted it and are answered next).
    async fn turn_with_images(
        &mut self,
        text: String,
        images: Vec<hermes_protocol::Image>,
        reply_to: Option<String>,
        rx: &mut mpsc::Receiver<ChatInput>,
        shutdown: &CancellationToken,
    ) -> Vec<InboundMessage> {
        let progress = self.shared.settings.tool_progress(&self.chat.platform);
        let adapter = self.adapter.clone();
        let chat = self.chat.clone();
        let questions = self.questions.clone();
        let session = match self.session().await {
            Ok(s) => s,
            Err(e) => {
                self.say(&format!("⚠️ {e}")).await;
                return Vec::new();
            }
        };
        let stream = ChatStream::new(adapter.clone(), chat.clone(), reply_to, progress);
        let sink = stream.sink();
        let cancel = CancellationToken::new();
        let done = CancellationToken::new();
        let typing = spawn_typing(adapter.clone(), chat.clone(), done.clone());
        let mut queued: Vec<InboundMessage> = Vec::new();
        let mut stopped = false;
        let mut report: Option<TurnReport> = None;
        let mut closed = false;
        let on_screen = {
            let turn = session.turn_with_images(&text, images, &sink, cancel.clone());
            let editor = stream.run(done.clone());
            tokio::pin!(turn);
            tokio::pin!(editor);
            loop {
                tokio::select! {
                    r = &mut turn, if report.is_none() => {
                        report = Some(r);
                        questions.cancel();
                        done.cancel();
                    }
                    shown = &mut editor => break shown,
                    input = rx.recv(), if report.is_none() && !closed => match input {
                        Some(ChatInput::Button(data)) => {
                            questions.answer_button(&data);
                        }
                        Some(ChatInput::Message(m)) => {
                            match commands::parse(&m.text) {
                                Some(Command::Approve(answer)) => {
                                    if !questions.answer_approval(answer) {
                                        reply(&adapter, &chat, "Nothing is waiting for approval.").await;
                                    }
                                }
                                Some(Command::Deny) => {
                                    questions.answer_approval(ApprovalAnswer::Deny);
                                }
                                Some(Command::Stop) => {
                                    stopped = true;
                                    queued.clear();
                                    questions.cancel();
                                    cancel.cancel();
                                }
                                _ if questions.clarify_open() => {
                                    questions.answer_text(&m.text);
                                }
                                _ => {
                                    // Hermes's rule: a new message interrupts and is next.
                                    queued.push(*m);
                                    questions.cancel();
                                    cancel.cancel();
                                }
                            }
                        }
                        None => {
                            closed = true;
                            cancel.cancel();
                        }
                    },
                    _ = shutdown.cancelled(), if report.is_none() && !cancel.is_cancelled() => {
                        cancel.cancel();
                    }
                }
            }
        };
        typing.abort();
        let report = report.unwrap_or_default();
        let note = match &report.end {
            TurnEnd::Completed => None,
            TurnEnd::BudgetExhausted => Some(format!(
                "_(stopped after {} model calls: the answer above is the wrap-up)_",
                report.api_calls
            )),
            TurnEnd::Interrupted if stopped => Some("⏹️ Stopped.".to_string()),
            TurnEnd::Interrupted => None,
            TurnEnd::Failed(f) => Some(format!("⚠️ {}", f.message)),
        };
        let final_text = if report.end == TurnEnd::Interrupted && !queued.is_empty() {
            ""
        } else {
            report.final_text.as_str()
        };
        stream.finish(on_screen, final_text, note.as_deref()).await;
        let files = super::media::produced_files(&report.added);
        if !files.is_empty() {
            let message = OutboundMessage {
                files,
                ..OutboundMessage::default()
            };
            if let Err(e) = adapter.send(&chat, &message).await {
                tracing::warn!("{}: cannot send the turn's files: {e}", chat.platform);
            }
        }
        // The answer is delivered: the review the turn made due starts now, in the background;
        // each of its notices is a message to the chat, sent in order by one task.
        if session.review_due().is_some() {
            let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
            let (adapter, chat) = (adapter.clone(), chat.clone());
            tokio::spawn(async move {
                while let Some(text) = lines.recv().await {
                    reply(&adapter, &chat, &text).await;
                }
            });
            let notices = move |line: &str| {
                let _ = tx.send(line.to_string());
            };
            drop(session.start_review(Arc::new(notices)));
        }
        let session_id = session.session_id();
        self.shared
            .routes
            .set(&self.key, &session_id, self.origin.clone());
        self.count(&report);
        self.last = Some(report);
        queued
    }

    fn count(&mut self, report: &TurnReport) {
        let t = &mut self.totals;
        t.cost_usd = match (t.turns, t.cost_usd, report.cost_usd) {
            (0, _, c) => c,
            (_, Some(a), Some(b)) => Some(a + b),
            (_, keep, None) if report.api_calls == 0 => keep,
            _ => None,
        };
        t.turns += 1;
        t.api_calls += report.api_calls;
        t.usage += report.usage;
    }
}

async fn reply(adapter: &Arc<dyn PlatformAdapter>, chat: &ChatRef, text: &str) {
    if let Err(e) = adapter.send(chat, &OutboundMessage::text(text)).await {
        tracing::warn!("{}: cannot reply: {e}", chat.platform);
    }
}

/// "typing…" while the agent works, renewed as the platform lets it fade.
fn spawn_typing(
    adapter: Arc<dyn PlatformAdapter>,
    chat: ChatRef,
    done: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let caps = adapter.capabilities().clone();
        if !caps.typing {
            return;
        }
        let every = caps.typing_interval.max(Duration::from_secs(1));
        loop {
            let _ = adapter.typing(&chat).await;
            tokio::select! {
                _ = done.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    })
}
