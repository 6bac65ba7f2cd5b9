//! XMPP (RFC 6120/6121) with our own small client on tokio: [`stream`] opens the session
//! (STARTTLS, SASL SCRAM from [`sasl`], resource binding) over the bounded incremental XML
//! reader of [`xml`]; this module runs it: available presence, the configured MUC rooms
//! joined after every connect (without history), `chat` messages and addressed `groupchat`
//! messages handed to the core ([`inbound`]), answers written as `<message>` stanzas
//! ([`stanzas`]) split at `max_message_length`, "typing" as XEP-0085 `<composing/>`, edits as
//! XEP-0308 corrections when `corrections` is on, the server's pings answered, a whitespace
//! keepalive while idle and our own ping when the server is silent (no answer: reconnect with
//! backoff). No files (no XEP-0363 upload in this build), no deletions.

pub(crate) mod inbound;
pub(crate) mod sasl;
pub mod settings;
pub(crate) mod stanzas;
pub(crate) mod stream;
pub(crate) mod xml;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::inbound::{PresenceAction, Rooms};
pub use self::settings::XmppSettings;
use self::settings::{Jid, PLATFORM};
use self::stream::{OpenError, READ_CHUNK};
use self::xml::{Element, Event, XmlReader};
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Capabilities, ChatRef, ChatType, ConnectionState, Dialect,
    InboundEvent, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::ws::Stream;
use crate::platform::{PlatformAdapter, deliver, split};

/// Silence after which the bot pings the server; a second silence as long ends the connection.
const IDLE_PING: Duration = Duration::from_secs(90);
/// An idle writer sends one space this often (RFC 6120 §4.6.1), keeping NATs and the
/// server's idle timer happy.
const KEEPALIVE: Duration = Duration::from_secs(45);
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Stanzas waiting for the writer (sends wait when it is full).
const QUEUE: usize = 256;

/// How one connection ended.
enum SessionEnd {
    Shutdown,
    Fatal(String),
    /// The reason, and whether the session had been established (the backoff restarts).
    Retry(String, bool),
}

/// The XMPP adapter.
pub struct XmppAdapter {
    settings: XmppSettings,
    caps: Capabilities,
    status: Arc<StatusCell>,
    /// The live session's writer queue; `None` while disconnected.
    out: Mutex<Option<mpsc::Sender<String>>>,
    rooms: Mutex<Rooms>,
    resource: String,
    /// Makes our stanza ids unique across restarts (corrections refer to them).
    id_prefix: String,
    counter: AtomicU64,
}

impl std::fmt::Debug for XmppAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XmppAdapter")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

async fn writer(
    mut w: WriteHalf<Box<dyn Stream>>,
    mut rx: mpsc::Receiver<String>,
    stop: CancellationToken,
) {
    loop {
        let data = tokio::select! {
            _ = stop.cancelled() => break,
            d = rx.recv() => match d {
                Some(d) => d,
                None => break,
            },
            _ = tokio::time::sleep(KEEPALIVE) => " ".to_string(),
        };
        match tokio::time::timeout(WRITE_TIMEOUT, w.write_all(data.as_bytes())).await {
            Ok(Ok(())) => {}
            _ => {
                // The reader is told through `stop`: the session is over.
                stop.cancel();
                break;
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), w.shutdown()).await;
}

impl XmppAdapter {
    pub fn new(settings: XmppSettings) -> Result<XmppAdapter, PlatformConfigError> {
        Ok(XmppAdapter {
            caps: Capabilities {
                max_message_len: settings.max_message_length,
                length_unit: LengthUnit::Chars,
                markdown: Dialect::Plain,
                can_edit: settings.corrections,
                can_delete: false,
                buttons: false,
                threads: false,
                typing: true,
                // Clients show "composing" until another state arrives; repeat it now and
                // then for the clients that let it fade.
                typing_interval: Duration::from_secs(20),
                min_edit_interval: Duration::from_secs(1),
                progress_messages: true,
            },
            rooms: Mutex::new(Rooms::new(&settings.rooms, &settings.nick)),
            resource: settings
                .jid
                .resource
                .clone()
                .unwrap_or_else(|| "hermes".into()),
            id_prefix: format!("{:08x}", fastrand::u32(..)),
            settings,
            status: Arc::new(StatusCell::default()),
            out: Mutex::new(None),
            counter: AtomicU64::new(0),
        })
    }

    fn rooms(&self) -> std::sync::MutexGuard<'_, Rooms> {
        self.rooms.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_out(&self, out: Option<mpsc::Sender<String>>) {
        *self.out.lock().unwrap_or_else(PoisonError::into_inner) = out;
    }

    fn out(&self) -> Result<mpsc::Sender<String>, PlatformError> {
        self.out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or(PlatformError::Network {
                platform: PLATFORM,
                message: "not connected".into(),
            })
    }

    fn next_id(&self) -> String {
        format!(
            "hermes-{}-{}",
            self.id_prefix,
            self.counter.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// The address to write to and whether it is a room.
    fn target(&self, chat: &ChatRef) -> Result<(String, bool), PlatformError> {
        let jid = Jid::parse(&chat.chat_id).ok_or_else(|| PlatformError::Invalid {
            platform: PLATFORM,
            message: format!("{:?} is not a JID", chat.chat_id),
        })?;
        // A home channel or a `send_message` target names a room without saying so.
        let room = jid.resource.is_none()
            && (chat.chat_type == ChatType::Group || self.rooms().is_room(&jid.bare()));
        let to = match &jid.resource {
            Some(r) => format!("{}/{r}", jid.bare()),
            None => jid.bare(),
        };
        Ok((to, room))
    }

    async fn write(&self, out: &mpsc::Sender<String>, stanza: String) -> Result<(), PlatformError> {
        out.send(stanza).await.map_err(|_| PlatformError::Network {
            platform: PLATFORM,
            message: "the connection closed".into(),
        })
    }

    async fn connection(
        &self,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> SessionEnd {
        let s = &self.settings;
        let opened = tokio::select! {
            _ = shutdown.cancelled() => return SessionEnd::Shutdown,
            r = stream::open(s, &self.resource) => r,
        };
        let session = match opened {
            Ok(session) => session,
            Err(OpenError::Fatal(e)) => return SessionEnd::Fatal(e),
            Err(OpenError::Retry(e)) => return SessionEnd::Retry(e, false),
        };
        let (read_half, write_half) = tokio::io::split(session.stream);
        let (tx, rx) = mpsc::channel::<String>(QUEUE);
        // Not a child of `shutdown`: at shutdown the writer still closes the stream.
        let stop = CancellationToken::new();
        let writer = tokio::spawn(writer(write_half, rx, stop.clone()));
        let joins = {
            let mut rooms = self.rooms();
            rooms.reset();
            rooms.joins()
        };
        let _ = tx.send(stanzas::available()).await;
        for join in joins {
            let _ = tx.send(join).await;
        }
        self.set_out(Some(tx.clone()));
        self.status.set_state(ConnectionState::Connected);
        tracing::info!(
            "xmpp: connected to {}:{} as {}, joining {}",
            s.host,
            s.port,
            session.jid,
            s.rooms.join(",")
        );
        let end = self
            .converse(read_half, session.reader, &tx, &stop, inbound, shutdown)
            .await;
        self.set_out(None);
        if matches!(end, SessionEnd::Shutdown) {
            let _ = tx.try_send("<presence type='unavailable'/></stream:stream>".into());
        }
        drop(tx);
        // The writer ends once the queue is drained (the closing tag included), or is stopped.
        if tokio::time::timeout(Duration::from_secs(3), writer)
            .await
            .is_err()
        {
            stop.cancel();
        }
        stop.cancel();
        end
    }

    /// Reads and handles stanzas until the connection ends.
    async fn converse(
        &self,
        mut read_half: ReadHalf<Box<dyn Stream>>,
        mut reader: XmlReader,
        tx: &mpsc::Sender<String>,
        stop: &CancellationToken,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> SessionEnd {
        let mut buf = vec![0u8; READ_CHUNK];
        let mut pinged = false;
        loop {
            loop {
                let event = match reader.next() {
                    Ok(Some(event)) => event,
                    Ok(None) => break,
                    Err(e) => return SessionEnd::Retry(format!("from the server: {e}"), true),
                };
                match event {
                    Event::StreamEnd => {
                        return SessionEnd::Retry("the server closed the stream".into(), true);
                    }
                    Event::StreamStart(_) => {
                        return SessionEnd::Retry("a second stream header".into(), true);
                    }
                    Event::Stanza(el) => {
                        if let Some(end) = self.handle(el, tx, inbound, shutdown).await {
                            return end;
                        }
                    }
                }
            }
            let read = tokio::select! {
                _ = shutdown.cancelled() => return SessionEnd::Shutdown,
                _ = stop.cancelled() => {
                    return SessionEnd::Retry("the connection failed while writing".into(), true);
                }
                r = tokio::time::timeout(IDLE_PING, read_half.read(&mut buf)) => r,
            };
            match read {
                Err(_) if pinged => {
                    return SessionEnd::Retry("the server stopped answering".into(), true);
                }
                Err(_) => {
                    pinged = true;
                    let _ = tx
                        .send(stanzas::ping(&self.settings.jid.domain, &self.next_id()))
                        .await;
                }
                Ok(Ok(0)) => {
                    return SessionEnd::Retry("the server closed the connection".into(), true);
                }
                Ok(Err(e)) => return SessionEnd::Retry(format!("read: {e}"), true),
                Ok(Ok(n)) => {
                    pinged = false;
                    if let Err(e) = reader.feed(&buf[..n]) {
                        return SessionEnd::Retry(format!("from the server: {e}"), true);
                    }
                }
            }
        }
    }

    /// One top-level element of an established session; `Some` ends the session.
    async fn handle(
        &self,
        el: Element,
        tx: &mpsc::Sender<String>,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> Option<SessionEnd> {
        if stream::is_stream_error(&el) {
            return Some(match stream::stream_error(&el) {
                OpenError::Fatal(e) => SessionEnd::Fatal(e),
                OpenError::Retry(e) => SessionEnd::Retry(e, true),
            });
        }
        match el.local_name() {
            "message" => {
                let message = self.rooms().convert(&el, &self.settings, || self.next_id());
                if let Some(message) = message {
                    self.status.add_received();
                    if !deliver(inbound, InboundEvent::Message(message), shutdown).await {
                        return Some(SessionEnd::Shutdown);
                    }
                }
            }
            "presence" => {
                let action = self.rooms().on_presence(&el);
                match action {
                    PresenceAction::None => {}
                    PresenceAction::Send(stanza) => {
                        let _ = tx.send(stanza).await;
                    }
                    PresenceAction::Joined(room) => tracing::info!("xmpp: joined {room}"),
                    PresenceAction::Problem(e) => {
                        tracing::warn!("xmpp: {e}");
                        self.status.error(e);
                    }
                }
            }
            "iq" => {
                if let Some(answer) = self.answer_iq(&el) {
                    let _ = tx.send(answer).await;
                }
            }
            _ => {}
        }
        None
    }

    /// The answer to a server's or contact's `iq` get/set (results and errors need none).
    fn answer_iq(&self, el: &Element) -> Option<String> {
        let kind = el.attr("type")?;
        if kind != "get" && kind != "set" {
            return None;
        }
        let id = el.attr("id").unwrap_or_default();
        let from = el.attr("from");
        let payload = el.children.first();
        let ns = payload.and_then(|p| p.attr("xmlns"));
        Some(match (kind, ns) {
            ("get", Some(stanzas::NS_PING)) => stanzas::iq_result(from, id),
            ("get", Some(stanzas::NS_DISCO_INFO)) => {
                stanzas::disco_info(from, id, self.settings.corrections)
            }
            _ => stanzas::iq_unsupported(from, id),
        })
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for XmppAdapter {
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
            match self.connection(&inbound, &shutdown).await {
                SessionEnd::Shutdown => break,
                SessionEnd::Fatal(e) => {
                    tracing::warn!("xmpp: {e}");
                    self.status.set_state(ConnectionState::Failed);
                    self.status.error(e);
                    if !sleep_or_shutdown(FATAL_RETRY, &shutdown).await {
                        break;
                    }
                }
                SessionEnd::Retry(e, established) => {
                    if established {
                        backoff.reset();
                    }
                    tracing::info!("xmpp: {e}; reconnecting");
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
        let (to, room) = self.target(chat)?;
        if !message.files.is_empty() {
            self.status
                .error("XMPP file upload is not supported; only the text was sent");
        }
        let parts = split::render_parts(
            &message.text,
            Dialect::Plain,
            self.settings.max_message_length,
            LengthUnit::Chars,
            true,
        );
        let out = self.out()?;
        let mut ids = Vec::new();
        for part in parts {
            let id = self.next_id();
            self.write(&out, stanzas::message(&to, room, &id, &part, None))
                .await?;
            self.status.add_sent(1);
            ids.push(id);
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text".into(),
        })
    }

    async fn edit(&self, chat: &ChatRef, id: &str, text: &str) -> Result<(), PlatformError> {
        if !self.settings.corrections {
            return Err(PlatformError::Unsupported {
                platform: PLATFORM,
                operation: "edit messages (set platforms.xmpp.extra.corrections)",
            });
        }
        let (to, room) = self.target(chat)?;
        let text = crate::platform::edit_text(text, &self.caps).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "an edit needs a text".into(),
        })?;
        let out = self.out()?;
        self.write(
            &out,
            stanzas::message(&to, room, &self.next_id(), &text, Some(id)),
        )
        .await
    }

    async fn typing(&self, chat: &ChatRef) -> Result<(), PlatformError> {
        let (to, room) = self.target(chat)?;
        let out = self.out()?;
        self.write(&out, stanzas::composing(&to, room)).await
    }

    async fn download(
        &self,
        _attachment: &Attachment,
        _dir: &Path,
        _max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM,
            operation: "carry files",
        })
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let s = &self.settings;
        // Another resource than the gateway's own: binding the same one would log a running
        // gateway out.
        let resource = format!("{}-doctor", self.resource);
        match stream::open(s, &resource).await {
            Ok(mut session) => {
                let _ = session.stream.write_all(b"</stream:stream>").await;
                Ok(format!("{} logs in to {}:{}", s.jid.bare(), s.host, s.port))
            }
            Err(OpenError::Retry(message)) => Err(PlatformError::Network {
                platform: PLATFORM,
                message: format!("{}:{}: {message}", s.host, s.port),
            }),
            Err(OpenError::Fatal(message)) => Err(PlatformError::Invalid {
                platform: PLATFORM,
                message,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::{Config, Environment};
    use tokio::io::AsyncBufReadExt;

    /// A scripted server on loopback: no STARTTLS (plaintext allowed), SCRAM-SHA-1 with the
    /// RFC 5802 exchange, binding, then a DM in and the answer out, a ping answered, and the
    /// stream closed at shutdown.
    #[tokio::test]
    async fn negotiates_and_exchanges_messages_with_a_scripted_server() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let env = Environment::isolated([
            ("XMPP_JID", "bot@localhost"),
            ("XMPP_PASSWORD", "pencil"),
            ("XMPP_SERVER", &*format!("127.0.0.1:{port}")),
            ("XMPP_ALLOW_PLAINTEXT", "true"),
        ]);
        let config = Config::from_yaml(Path::new("/h/config.yaml"), "", &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let settings = XmppSettings::from_platform(platforms.get(PLATFORM).unwrap(), &env).unwrap();
        let adapter = Arc::new(XmppAdapter::new(settings).unwrap());
        let (tx, mut rx) = mpsc::channel(8);
        let shutdown = CancellationToken::new();
        let run = tokio::spawn({
            let adapter = Arc::clone(&adapter);
            let shutdown = shutdown.clone();
            async move { adapter.run(tx, shutdown).await }
        });
        let (sock, _) = listener.accept().await.unwrap();
        let (r, mut w) = sock.into_split();
        let mut r = tokio::io::BufReader::new(r);
        // Reads until `needle` has arrived; returns everything read.
        let mut seen = String::new();
        let mut until = async |needle: &str| -> String {
            while !seen.contains(needle) {
                let mut chunk = Vec::new();
                let n = r.read_until(b'>', &mut chunk).await.unwrap();
                assert!(n > 0, "closed before {needle}: {seen}");
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
            let idx = seen.find(needle).unwrap() + needle.len();
            let got = seen[..idx].to_string();
            seen = seen[idx..].to_string();
            got
        };
        let header = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' from='localhost' id='s' version='1.0'>";
        until("xmlns:stream='http://etherx.jabber.org/streams'>").await;
        w.write_all(format!("{header}<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>PLAIN</mechanism><mechanism>SCRAM-SHA-1</mechanism></mechanisms></stream:features>").as_bytes()).await.unwrap();
        let auth = until("</auth>").await;
        assert!(auth.contains("mechanism='SCRAM-SHA-1'"), "{auth}");
        let first = auth
            .split("'>")
            .last()
            .unwrap()
            .trim_end_matches("</auth>")
            .to_string();
        let first = String::from_utf8(
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, first).unwrap(),
        )
        .unwrap();
        let nonce = first.rsplit("r=").next().unwrap().to_string();
        // The server's side of the exchange, computed with the client's own nonce.
        let server_first = format!("r={nonce}srv,s=QSXCR+Q6sek8bf92,i=4096");
        let mut mirror = sasl::Scram::with_nonce(sasl::ScramHash::Sha1, "bot", "pencil", &nonce);
        let expected_final = mirror.respond(&server_first).unwrap();
        let b64 = |s: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s);
        w.write_all(
            format!(
                "<challenge xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>{}</challenge>",
                b64(&server_first)
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        let response = until("</response>").await;
        assert!(response.contains(&b64(&expected_final)), "{response}");
        // The server signature, as a real server computes it.
        let v = server_signature(&nonce, &server_first, &expected_final);
        w.write_all(
            format!(
                "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>{}</success>",
                b64(&format!("v={v}"))
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        until("xmlns:stream='http://etherx.jabber.org/streams'>").await;
        w.write_all(format!("{header}<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></stream:features>").as_bytes()).await.unwrap();
        let bind = until("</iq>").await;
        assert!(bind.contains("<resource>hermes</resource>"), "{bind}");
        w.write_all(b"<iq type='result' id='bind-1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>bot@localhost/hermes</jid></bind></iq>").await.unwrap();
        until("<presence/>").await;
        w.write_all(b"<iq type='get' id='p1' from='localhost'><ping xmlns='urn:xmpp:ping'/></iq> <message from='ann@localhost/x' type='chat' id='a1'><body>hello &amp; hi</body></message>").await.unwrap();
        let pong = until("/>").await;
        assert!(pong.contains("type='result' id='p1'"), "{pong}");
        let Some(InboundEvent::Message(m)) = rx.recv().await else {
            panic!("no message")
        };
        assert_eq!(m.text, "hello & hi");
        assert_eq!(
            m.chat,
            ChatRef::new(PLATFORM, ChatType::Direct, "ann@localhost")
        );
        adapter.typing(&m.chat).await.unwrap();
        assert!(until("</message>").await.contains("<composing"));
        let sent = adapter
            .send(&m.chat, &OutboundMessage::text("a < b"))
            .await
            .unwrap();
        let out = until("</message>").await;
        assert!(out.contains("to='ann@localhost' type='chat'"), "{out}");
        assert!(out.contains("<body>a &lt; b</body>"), "{out}");
        assert!(out.contains(&sent.message_id), "{out}");
        assert_eq!(adapter.status().state, ConnectionState::Connected);
        shutdown.cancel();
        until("</stream:stream>").await;
        run.await.unwrap();
        assert_eq!(adapter.status().state, ConnectionState::Stopped);
    }

    /// ServerSignature = HMAC(HMAC(SaltedPassword, "Server Key"), AuthMessage).
    fn server_signature(nonce: &str, server_first: &str, client_final: &str) -> String {
        use ring::{hmac, pbkdf2};
        let salt = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            "QSXCR+Q6sek8bf92",
        )
        .unwrap();
        let mut salted = [0u8; 20];
        pbkdf2::derive(
            pbkdf2::PBKDF2_HMAC_SHA1,
            std::num::NonZeroU32::new(4096).unwrap(),
            &salt,
            b"pencil",
            &mut salted,
        );
        let key = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &salted),
            b"Server Key",
        );
        let without_proof = client_final.rsplit_once(",p=").unwrap().0;
        let auth = format!("n=bot,r={nonce},{server_first},{without_proof}");
        let sig = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, key.as_ref()),
            auth.as_bytes(),
        );
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, sig)
    }
}
