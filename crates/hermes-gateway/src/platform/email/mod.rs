//! Email: mail in over IMAP ([`imap`]), answers out over SMTP ([`smtp`]), each mail read with
//! mail-parser ([`parse`]). The adapter waits for mail with IDLE (polling every
//! `EMAIL_POLL_INTERVAL` where the server has no IDLE), reads unseen mail in INBOX, drops its
//! own, automated senders' and (unless turned off) mail whose `From:` the receiving server did
//! not authenticate, hands the rest to the core (which applies `EMAIL_ALLOWED_USERS` and
//! pairing) and marks it seen. A conversation is one mail thread: the chat is the sender's
//! address and the thread its root `Message-ID`, so each thread is its own session. Answers are
//! one mail each, whatever their length (mail has no message limit worth splitting at), with
//! the threading headers that keep them in the user's thread. Mail has no edits, deletions,
//! typing or buttons; the chat gateway sends each answer once, complete, without progress
//! lines.

pub(crate) mod imap;
pub(crate) mod parse;
pub mod settings;
pub(crate) mod smtp;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::imap::{ImapError, ImapSession, Wake};
use self::parse::ParsedMail;
pub use self::settings::EmailSettings;
use self::settings::PLATFORM;
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::download::safe_file_name;
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, AttachmentKind, Capabilities, ChatRef, ChatType, ConnectionState,
    Dialect, FileSource, InboundEvent, InboundMessage, InlineBytes, LengthUnit, OutboundMessage,
    SentMessage,
};
use crate::platform::{PlatformAdapter, deliver};

/// Threads remembered for replies (the oldest are forgotten first; a later mail in a
/// forgotten thread brings it back).
const MAX_THREADS: usize = 2000;
/// Mail handed to the core whose `\Seen` flag may not have stuck (a connection lost right
/// after): remembered so it is not handed over twice.
const MAX_DELIVERED: usize = 5000;

/// What an answer needs to continue a thread.
#[derive(Debug, Clone)]
struct ThreadContext {
    subject: String,
    /// The user's latest mail in the thread.
    last_id: String,
    /// The thread's `References` up to and including `last_id`.
    references: Vec<String>,
}

#[derive(Default)]
struct Threads {
    by_root: HashMap<String, ThreadContext>,
    order: VecDeque<String>,
}

impl Threads {
    fn remember(&mut self, root: &str, context: ThreadContext) {
        if self.by_root.insert(root.to_string(), context).is_none() {
            self.order.push_back(root.to_string());
            while self.order.len() > MAX_THREADS {
                if let Some(old) = self.order.pop_front() {
                    self.by_root.remove(&old);
                }
            }
        }
    }
}

#[derive(Default)]
struct Delivered {
    set: HashSet<(u32, u32)>,
    order: VecDeque<(u32, u32)>,
}

impl Delivered {
    fn insert(&mut self, key: (u32, u32)) {
        if self.set.insert(key) {
            self.order.push_back(key);
            while self.order.len() > MAX_DELIVERED {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }
}

/// How one session ended.
enum SessionEnd {
    Shutdown,
    /// The reason, and whether the session had logged in (the backoff restarts).
    Retry(ImapError, bool),
}

/// The email adapter.
pub struct EmailAdapter {
    settings: EmailSettings,
    caps: Capabilities,
    status: Arc<StatusCell>,
    threads: Mutex<Threads>,
    delivered: Mutex<Delivered>,
}

impl std::fmt::Debug for EmailAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailAdapter")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A fresh `Message-ID` (without brackets) under `domain`.
fn new_message_id(domain: &str) -> String {
    format!(
        "hermes-{:016x}{:08x}@{domain}",
        fastrand::u64(..),
        fastrand::u32(..)
    )
}

impl EmailAdapter {
    pub fn new(settings: EmailSettings) -> Result<EmailAdapter, PlatformConfigError> {
        if !settings.address.contains('@') {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("EMAIL_ADDRESS {:?} is not an address", settings.address),
            });
        }
        Ok(EmailAdapter {
            caps: Capabilities {
                // One mail per answer: no limit worth splitting at.
                max_message_len: 10_000_000,
                length_unit: LengthUnit::Chars,
                markdown: Dialect::Plain,
                can_edit: false,
                can_delete: false,
                buttons: false,
                threads: true,
                typing: false,
                typing_interval: Duration::from_secs(60),
                min_edit_interval: Duration::from_secs(1),
                // Every send is a mail: tool progress lines would flood the inbox.
                progress_messages: false,
            },
            settings,
            status: Arc::new(StatusCell::default()),
            threads: Mutex::new(Threads::default()),
            delivered: Mutex::new(Delivered::default()),
        })
    }

    /// The mail as what the core must see, or `None` when it is not for the agent.
    fn convert(&self, mail: ParsedMail, uid: u32, size: u64, read: usize) -> Option<InboundEvent> {
        let s = &self.settings;
        if mail.from.is_empty() || !mail.from.contains('@') {
            tracing::info!("email: mail {uid} has no sender address; skipped");
            return None;
        }
        if mail.from == s.address {
            return None;
        }
        if parse::is_automated(&mail) {
            tracing::debug!("email: skipping automated sender {}", mail.from);
            return None;
        }
        if s.require_authenticated_sender
            && !s.allow_all
            && let Err(why) = parse::sender_authenticated(&mail, s.authserv_id.as_deref())
        {
            tracing::warn!(
                "email: dropping mail from {} whose From: is not authenticated ({why}); if your \
                 mail server does not add Authentication-Results, set EMAIL_TRUST_FROM_HEADER=true",
                mail.from
            );
            self.status.error(format!(
                "mail from {} dropped: From: not authenticated",
                mail.from
            ));
            return None;
        }
        let message_id = mail
            .message_id
            .clone()
            .unwrap_or_else(|| format!("imap-{uid}@{}", s.message_id_domain()));
        let root = mail
            .thread_root()
            .map(str::to_string)
            .unwrap_or_else(|| message_id.clone());
        let mut references = mail.references.clone();
        if !references.contains(&message_id) {
            references.push(message_id.clone());
        }
        {
            let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
            let subject = if mail.subject.is_empty() {
                threads
                    .by_root
                    .get(&root)
                    .map(|t| t.subject.clone())
                    .unwrap_or_default()
            } else {
                mail.subject.clone()
            };
            threads.remember(
                &root,
                ThreadContext {
                    subject,
                    last_id: message_id.clone(),
                    references,
                },
            );
        }
        if mail.from_html {
            tracing::debug!("email: mail {uid} is HTML only; converted to text");
        }
        let mut text = mail.text.clone();
        if !mail.subject.is_empty()
            && !mail
                .subject
                .get(..3)
                .is_some_and(|p| p.eq_ignore_ascii_case("re:"))
        {
            text = format!("[Subject: {}]\n\n{text}", mail.subject);
        }
        if (size as usize) > read {
            text.push_str(&format!(
                "\n\n[This mail is {size} bytes; only the first {read} were read.]"
            ));
        }
        if text.trim().is_empty() && mail.attachments.is_empty() {
            text = "(empty email)".into();
        }
        let attachments = mail
            .attachments
            .into_iter()
            .map(|a| Attachment {
                kind: AttachmentKind::from_mime(a.mime.as_deref()),
                size: Some(a.bytes.len() as u64),
                file_name: a.file_name,
                mime: a.mime,
                source: FileSource::Inline(InlineBytes(a.bytes)),
            })
            .collect();
        self.status.add_received();
        Some(InboundEvent::Message(InboundMessage {
            chat: ChatRef::new(PLATFORM, ChatType::Direct, mail.from.clone())
                .with_thread(Some(root)),
            chat_name: Some(mail.from_name.clone().unwrap_or_else(|| mail.from.clone())),
            message_id,
            user_id: mail.from.clone(),
            user_name: Some(mail.from_name.unwrap_or(mail.from)),
            text: text.trim().to_string(),
            attachments,
            reply_to: mail.in_reply_to,
            mentions_bot: true,
            replies_to_bot: false,
            from_bot: false,
            deliver_to: None,
            skills: Vec::new(),
            received_at: SystemTime::now(),
        }))
    }

    /// Hands every unseen mail to the core (or drops it), marking each seen.
    async fn check_inbox(
        &self,
        session: &mut ImapSession,
        uid_validity: u32,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> Result<bool, ImapError> {
        for uid in imap::unseen(session).await? {
            let key = (uid_validity, uid);
            let seen_before = self
                .delivered
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .set
                .contains(&key);
            if !seen_before {
                let Some((raw, size)) =
                    imap::read(session, uid, self.settings.max_message_bytes).await?
                else {
                    continue;
                };
                let event = match parse::parse(&raw, self.settings.skip_attachments) {
                    Some(mail) => self.convert(mail, uid, size, raw.len()),
                    None => {
                        tracing::info!("email: mail {uid} is not a readable message; skipped");
                        None
                    }
                };
                if let Some(event) = event
                    && !deliver(inbound, event, shutdown).await
                {
                    return Ok(false);
                }
                self.delivered
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key);
            }
            imap::mark_seen(session, uid).await?;
        }
        Ok(true)
    }

    async fn session(
        &self,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> SessionEnd {
        let s = &self.settings;
        let opened = tokio::select! {
            _ = shutdown.cancelled() => return SessionEnd::Shutdown,
            o = imap::open(s) => o,
        };
        let opened = match opened {
            Ok(o) => o,
            Err(e) => return SessionEnd::Retry(e, false),
        };
        let (mut session, idle, uid_validity) = (opened.session, opened.idle, opened.uid_validity);
        self.status.set_state(ConnectionState::Connected);
        tracing::info!(
            "email: connected to {}:{} as {} ({})",
            s.imap_host,
            s.imap_port,
            s.address,
            if idle { "IDLE" } else { "polling" }
        );
        loop {
            match self
                .check_inbox(&mut session, uid_validity, inbound, shutdown)
                .await
            {
                Ok(true) => {}
                Ok(false) => return SessionEnd::Shutdown,
                Err(e) => return SessionEnd::Retry(e, true),
            }
            match imap::wait(session, idle, s.poll_interval, shutdown).await {
                Ok(Wake::Check(next)) => session = next,
                Ok(Wake::Shutdown) => return SessionEnd::Shutdown,
                Err(e) => return SessionEnd::Retry(e, true),
            }
        }
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for EmailAdapter {
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
            match self.session(&inbound, &shutdown).await {
                SessionEnd::Shutdown => break,
                SessionEnd::Retry(e @ ImapError::Login { .. }, _) => {
                    tracing::warn!("email: {e}");
                    self.status.set_state(ConnectionState::Failed);
                    self.status.error(e.to_string());
                    if !sleep_or_shutdown(FATAL_RETRY, &shutdown).await {
                        break;
                    }
                }
                SessionEnd::Retry(e, logged_in) => {
                    if logged_in {
                        backoff.reset();
                    }
                    tracing::info!("email: {e}; reconnecting");
                    self.status.set_state(ConnectionState::Reconnecting);
                    self.status.error(e.to_string());
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
        let to = chat.chat_id.trim();
        if !to.contains('@') || to.contains(['\r', '\n', ',', ';', '<', '>']) {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: format!("{to:?} is not an email address"),
            });
        }
        if message.text.trim().is_empty() && message.files.is_empty() {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "nothing to send: the message has no text".into(),
            });
        }
        let context = chat.thread_id.as_ref().and_then(|root| {
            self.threads
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .by_root
                .get(root)
                .cloned()
        });
        let (subject, in_reply_to, mut references) = match context {
            Some(t) => {
                let parent = message.reply_to.clone().unwrap_or(t.last_id);
                (parse::reply_subject(&t.subject), Some(parent), t.references)
            }
            // A delivery outside a thread (cron, send_message to an address).
            None => (
                "Hermes Agent".to_string(),
                message.reply_to.clone(),
                Vec::new(),
            ),
        };
        if let Some(parent) = &in_reply_to
            && !references.contains(parent)
        {
            references.push(parent.clone());
        }
        let message_id = new_message_id(self.settings.message_id_domain());
        let mail = smtp::OutgoingMail {
            to,
            subject,
            message_id: message_id.clone(),
            in_reply_to,
            references,
            body: &message.text,
            files: message.files.iter().map(|f| f.path.as_path()).collect(),
        };
        if let Err(e) = smtp::send(&self.settings, &mail).await {
            self.status.error(format!("sending to {to}: {e}"));
            return Err(e);
        }
        self.status.add_sent(1);
        Ok(SentMessage {
            message_id: message_id.clone(),
            message_ids: vec![message_id],
        })
    }

    async fn edit(&self, _chat: &ChatRef, _id: &str, _text: &str) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM,
            operation: "edit sent mail",
        })
    }

    async fn delete(&self, _chat: &ChatRef, _id: &str) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM,
            operation: "delete sent mail",
        })
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dir: &Path,
        max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        let FileSource::Inline(InlineBytes(bytes)) = &attachment.source else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "not an email attachment".into(),
            });
        };
        let name = safe_file_name(attachment.file_name.as_deref());
        if max_bytes > 0 && bytes.len() as u64 > max_bytes {
            return Err(PlatformError::TooLarge {
                what: name,
                size: bytes.len() as u64,
                limit: max_bytes,
            });
        }
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| PlatformError::io(dir, e))?;
        let unique = format!("{:016x}", fastrand::u64(..));
        let path = dir.join(format!("{unique}_{name}"));
        let part = dir.join(format!("{unique}_{name}.part"));
        let write = async {
            let mut file = tokio::fs::File::create(&part).await?;
            file.write_all(bytes).await?;
            file.flush().await
        };
        if let Err(e) = write.await {
            let _ = tokio::fs::remove_file(&part).await;
            return Err(PlatformError::io(&part, e));
        }
        tokio::fs::rename(&part, &path)
            .await
            .map_err(|e| PlatformError::io(&path, e))?;
        Ok(path)
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let s = &self.settings;
        let network = |message: String| PlatformError::Network {
            platform: PLATFORM,
            message,
        };
        let mut opened = imap::open(s).await.map_err(|e| match e {
            ImapError::Login { .. } => PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "EMAIL_ADDRESS and EMAIL_PASSWORD",
                message: e.to_string(),
            },
            other => network(other.to_string()),
        })?;
        let _ = opened.session.logout().await;
        smtp::transport(s)?
            .test_connection()
            .await
            .map_err(|e| network(format!("SMTP {}:{}: {e}", s.smtp_host, s.smtp_port)))?;
        Ok(format!(
            "{} logs in to IMAP {}:{} and SMTP {}:{}",
            s.address, s.imap_host, s.imap_port, s.smtp_host, s.smtp_port
        ))
    }
}
