//! IRC over tokio TCP (rustls for TLS) with our own line protocol ([`proto`]): registration
//! (`PASS`, `NICK`/`USER`, SASL PLAIN through `CAP REQ :sasl` when a SASL password is set,
//! another nick when ours is taken), NickServ identification, `PING`/`PONG` both ways (a silent
//! server is taken for dead), the configured channels joined after every connect (and again
//! after a kick), messages in channels answered when they address the bot (`nick: ...`, or
//! the nick as a word, or a mention pattern) and private messages always; answers as
//! `PRIVMSG` lines cut under the 512-byte limit and paced by a token bucket. IRC has no
//! edits, deletions, typing or files: the chat gateway sends each answer once, whole.

pub(crate) mod proto;
pub mod settings;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncWriteExt, WriteHalf};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::proto::{LineReader, Message, TokenBucket};
pub use self::settings::IrcSettings;
use self::settings::PLATFORM;
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::gate::{self, GateInput};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Capabilities, ChatRef, ChatType, ConnectionState, Dialect,
    InboundEvent, InboundMessage, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::ws::{self, Stream};
use crate::platform::{PlatformAdapter, deliver};

/// Deadlines of the connection's phases.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const REGISTER_TIMEOUT: Duration = Duration::from_secs(60);
/// Silence after which the bot pings the server; a second silence as long ends the connection.
const IDLE_PING: Duration = Duration::from_secs(120);
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Lines waiting for the writer (sends wait when it is full).
const QUEUE: usize = 256;

/// How one connection ended.
enum SessionEnd {
    Shutdown,
    Fatal(String),
    /// The reason, and whether the connection had been registered (the backoff restarts).
    Retry(String, bool),
}

/// The IRC adapter.
pub struct IrcAdapter {
    settings: IrcSettings,
    caps: Capabilities,
    status: Arc<StatusCell>,
    /// The live connection's writer queue; `None` while disconnected.
    out: Mutex<Option<mpsc::Sender<String>>>,
    /// The nick the server gave us (ours, or an alternative when it was taken).
    nick: Mutex<String>,
    counter: AtomicU64,
}

impl std::fmt::Debug for IrcAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IrcAdapter")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Where a registration stands.
#[derive(Default)]
struct Registration {
    done: bool,
    /// Alternative nicks tried after `433`.
    attempts: u32,
}

fn is_channel(target: &str) -> bool {
    target.starts_with(['#', '&', '+', '!'])
}

/// Whether `word` is in `text` as a whole word (ASCII case-insensitive; nicks are ASCII).
fn has_word(text: &str, word: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let word = word.to_ascii_lowercase();
    let inside = |c: char| c.is_ascii_alphanumeric() || "-_[]\\`^{}|".contains(c);
    lower.match_indices(&word).any(|(i, _)| {
        !lower[..i].chars().next_back().is_some_and(inside)
            && !lower[i + word.len()..].chars().next().is_some_and(inside)
    })
}

/// `text` without a leading `nick:`, `nick,` or `nick ` address; `None` when not addressed.
fn strip_address<'a>(text: &'a str, nick: &str) -> Option<&'a str> {
    let head = text.get(..nick.len())?;
    if !head.eq_ignore_ascii_case(nick) {
        return None;
    }
    let rest = &text[nick.len()..];
    let rest = rest
        .strip_prefix(':')
        .or_else(|| rest.strip_prefix(','))
        .or_else(|| rest.strip_prefix(' '))?;
    Some(rest.trim())
}

async fn writer(
    mut w: WriteHalf<Box<dyn Stream>>,
    mut rx: mpsc::Receiver<String>,
    mut bucket: TokenBucket,
    stop: CancellationToken,
) {
    loop {
        let line = tokio::select! {
            _ = stop.cancelled() => break,
            l = rx.recv() => match l {
                Some(l) => l,
                None => break,
            },
        };
        // Messages are paced; protocol replies (PONG, JOIN, ...) go at once.
        if line.starts_with("PRIVMSG ") || line.starts_with("NOTICE ") {
            let wait = bucket.take(Instant::now());
            if !wait.is_zero() && !sleep_or_shutdown(wait, &stop).await {
                break;
            }
        }
        let mut bytes = line.into_bytes();
        bytes.truncate(proto::LINE_LIMIT - 2);
        bytes.extend_from_slice(b"\r\n");
        match tokio::time::timeout(WRITE_TIMEOUT, w.write_all(&bytes)).await {
            Ok(Ok(())) => {}
            _ => break,
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), w.shutdown()).await;
}

impl IrcAdapter {
    pub fn new(settings: IrcSettings) -> Result<IrcAdapter, PlatformConfigError> {
        Ok(IrcAdapter {
            caps: Capabilities {
                max_message_len: settings.max_message_length,
                length_unit: LengthUnit::Chars,
                markdown: Dialect::Plain,
                can_edit: false,
                can_delete: false,
                buttons: false,
                threads: false,
                typing: false,
                typing_interval: Duration::from_secs(60),
                min_edit_interval: Duration::from_secs(1),
                progress_messages: true,
            },
            nick: Mutex::new(settings.nickname.clone()),
            settings,
            status: Arc::new(StatusCell::default()),
            out: Mutex::new(None),
            counter: AtomicU64::new(0),
        })
    }

    fn nick(&self) -> String {
        self.nick
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_nick(&self, nick: &str) {
        *self.nick.lock().unwrap_or_else(PoisonError::into_inner) = nick.to_string();
    }

    fn set_out(&self, out: Option<mpsc::Sender<String>>) {
        *self.out.lock().unwrap_or_else(PoisonError::into_inner) = out;
    }

    fn next_id(&self) -> String {
        format!("irc-{}", self.counter.fetch_add(1, Ordering::Relaxed))
    }

    async fn connection(
        &self,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> SessionEnd {
        let s = &self.settings;
        let stream = tokio::select! {
            _ = shutdown.cancelled() => return SessionEnd::Shutdown,
            r = tokio::time::timeout(CONNECT_TIMEOUT, ws::connect_stream(&s.server, s.port, s.use_tls)) => r,
        };
        let stream = match stream {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return SessionEnd::Retry(e, false),
            Err(_) => {
                return SessionEnd::Retry(
                    format!(
                        "no connection to {}:{} within {CONNECT_TIMEOUT:?}",
                        s.server, s.port
                    ),
                    false,
                );
            }
        };
        let (read_half, write_half) = tokio::io::split(stream);
        let (tx, rx) = mpsc::channel::<String>(QUEUE);
        // Not a child of `shutdown`: at shutdown the writer still sends QUIT, then stops.
        let stop = CancellationToken::new();
        let writer = tokio::spawn(writer(
            write_half,
            rx,
            TokenBucket::new(s.flood_burst, s.flood_interval),
            stop.clone(),
        ));
        let end = self
            .converse(LineReader::new(read_half), &tx, inbound, shutdown)
            .await;
        self.set_out(None);
        if matches!(end, SessionEnd::Shutdown) {
            let _ = tx.try_send("QUIT :Hermes Agent shutting down".into());
        }
        drop(tx);
        // The writer ends once the queue is drained (QUIT included), or is stopped.
        if tokio::time::timeout(Duration::from_secs(3), writer)
            .await
            .is_err()
        {
            stop.cancel();
        }
        stop.cancel();
        end
    }

    /// Registers, joins and reads until the connection ends.
    async fn converse(
        &self,
        mut reader: LineReader<tokio::io::ReadHalf<Box<dyn Stream>>>,
        tx: &mpsc::Sender<String>,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> SessionEnd {
        let s = &self.settings;
        let send = |line: String| {
            let tx = tx.clone();
            async move { tx.send(line).await.is_ok() }
        };
        self.set_nick(&s.nickname);
        if s.sasl.is_some() {
            send("CAP REQ :sasl".into()).await;
        }
        if let Some(pass) = &s.server_password {
            send(format!("PASS {}", proto::clean(pass))).await;
        }
        send(format!("NICK {}", s.nickname)).await;
        send(format!("USER {} 0 * :Hermes Agent", s.nickname)).await;

        let mut reg = Registration::default();
        let registered_by = Instant::now() + REGISTER_TIMEOUT;
        let mut pinged = false;
        loop {
            let wait = if reg.done {
                IDLE_PING
            } else {
                registered_by.saturating_duration_since(Instant::now())
            };
            let line = tokio::select! {
                _ = shutdown.cancelled() => return SessionEnd::Shutdown,
                r = tokio::time::timeout(wait, reader.next_line()) => r,
            };
            let line = match line {
                Err(_) if !reg.done => {
                    return SessionEnd::Retry(
                        "the server did not finish registration".into(),
                        false,
                    );
                }
                Err(_) if pinged => {
                    return SessionEnd::Retry("the server stopped answering".into(), true);
                }
                Err(_) => {
                    pinged = true;
                    send("PING :hermes".into()).await;
                    continue;
                }
                Ok(Err(e)) => return SessionEnd::Retry(format!("read: {e}"), reg.done),
                Ok(Ok(None)) => {
                    return SessionEnd::Retry("the server closed the connection".into(), reg.done);
                }
                Ok(Ok(Some(line))) => line,
            };
            pinged = false;
            let Some(msg) = proto::parse(&line) else {
                continue;
            };
            match msg.command.as_str() {
                "PING" => {
                    send(format!(
                        "PONG :{}",
                        msg.params.last().map_or("", String::as_str)
                    ))
                    .await;
                }
                "CAP" => {
                    let sub = msg.param(1).unwrap_or_default().to_ascii_uppercase();
                    let caps = msg.params.last().map_or("", String::as_str);
                    if caps.split(' ').any(|c| c.eq_ignore_ascii_case("sasl")) {
                        match sub.as_str() {
                            "ACK" => {
                                send("AUTHENTICATE PLAIN".into()).await;
                            }
                            "NAK" => {
                                return SessionEnd::Fatal(
                                    "the server does not offer SASL (unset IRC_SASL_PASSWORD)"
                                        .into(),
                                );
                            }
                            _ => {}
                        }
                    }
                }
                "AUTHENTICATE" if msg.param(0) == Some("+") => {
                    if let Some((user, password)) = &s.sasl {
                        for piece in proto::sasl_plain(user, password) {
                            send(format!("AUTHENTICATE {piece}")).await;
                        }
                    }
                }
                "903" => {
                    send("CAP END".into()).await;
                }
                "902" | "904" | "905" | "906" => {
                    return SessionEnd::Fatal(format!(
                        "SASL login failed: {}",
                        msg.params.last().map_or("", String::as_str)
                    ));
                }
                "464" => {
                    return SessionEnd::Fatal("the server refused IRC_SERVER_PASSWORD".into());
                }
                "433" | "432" if !reg.done => {
                    reg.attempts += 1;
                    if reg.attempts > 20 {
                        return SessionEnd::Fatal("no free nickname".into());
                    }
                    let base = s
                        .nickname
                        .trim_end_matches(|c: char| c == '_' || c.is_ascii_digit());
                    let base = if base.is_empty() { "hermes" } else { base };
                    let next = if reg.attempts == 1 {
                        format!("{}_", s.nickname)
                    } else {
                        format!("{base}_{}", reg.attempts - 1)
                    };
                    self.set_nick(&next);
                    send(format!("NICK {next}")).await;
                }
                "001" => {
                    reg.done = true;
                    if let Some(nick) = msg.param(0) {
                        self.set_nick(nick);
                    }
                    if let Some(pw) = &s.nickserv_password {
                        send(format!("PRIVMSG NickServ :IDENTIFY {}", proto::clean(pw))).await;
                    }
                    send(format!("JOIN {}", s.channels.join(","))).await;
                    self.set_out(Some(tx.clone()));
                    self.status.set_state(ConnectionState::Connected);
                    tracing::info!(
                        "irc: connected to {}:{} as {}, joining {}",
                        s.server,
                        s.port,
                        self.nick(),
                        s.channels.join(",")
                    );
                }
                "NICK" => {
                    if msg
                        .nick()
                        .is_some_and(|n| n.eq_ignore_ascii_case(&self.nick()))
                        && let Some(new) = msg.param(0)
                    {
                        self.set_nick(new);
                    }
                }
                "KICK" => {
                    if let (Some(channel), Some(who)) = (msg.param(0), msg.param(1))
                        && who.eq_ignore_ascii_case(&self.nick())
                    {
                        self.status.error(format!("kicked from {channel}"));
                        send(format!("JOIN {channel}")).await;
                    }
                }
                "ERROR" => {
                    return SessionEnd::Retry(
                        format!(
                            "server error: {}",
                            msg.params.last().map_or("", String::as_str)
                        ),
                        reg.done,
                    );
                }
                "PRIVMSG" if reg.done => {
                    if let Some(event) = self.convert(&msg)
                        && !deliver(inbound, event, shutdown).await
                    {
                        return SessionEnd::Shutdown;
                    }
                }
                _ => {}
            }
        }
    }

    /// A `PRIVMSG` as what the core must see, if it is for the bot.
    fn convert(&self, msg: &Message) -> Option<InboundEvent> {
        let sender = msg.nick()?;
        let target = msg.param(0)?;
        let mut text = msg.param(1)?.to_string();
        let me = self.nick();
        if sender.eq_ignore_ascii_case(&me)
            || (sender.contains('.') && !msg.prefix.as_deref()?.contains('!'))
        {
            // Our own echo, or a server notice.
            return None;
        }
        if let Some(action) = text
            .strip_prefix("\u{1}ACTION ")
            .and_then(|t| t.strip_suffix('\u{1}'))
        {
            text = format!("* {sender} {action}");
        } else if text.starts_with('\u{1}') {
            // Other CTCP requests (VERSION, PING, ...) are not for the agent.
            return None;
        }
        let s = &self.settings;
        if !s.allowed_users.is_empty() && !s.allowed_users.contains(&sender.to_ascii_lowercase()) {
            return None;
        }
        let channel = is_channel(target);
        let (chat, text, mentioned) = if channel {
            let lower = target.to_ascii_lowercase();
            let addressed = strip_address(&text, &me).map(str::to_string);
            let mentioned = addressed.is_some()
                || has_word(&text, &me)
                || gate::matches_patterns(&s.mentions, &text);
            let admitted = gate::admits(
                &s.mentions,
                &GateInput {
                    chat_ids: vec![lower.as_str()],
                    direct: false,
                    mentioned,
                    replied_to_bot: false,
                    in_bot_thread: false,
                },
            );
            if !admitted {
                return None;
            }
            (
                ChatRef::new(PLATFORM, ChatType::Group, target),
                addressed.unwrap_or(text),
                mentioned,
            )
        } else {
            (ChatRef::new(PLATFORM, ChatType::Direct, sender), text, true)
        };
        self.status.add_received();
        Some(InboundEvent::Message(InboundMessage {
            chat_name: Some(if channel { target } else { sender }.to_string()),
            chat,
            message_id: self.next_id(),
            user_id: sender.to_string(),
            user_name: Some(sender.to_string()),
            text: text.trim().to_string(),
            attachments: Vec::new(),
            reply_to: None,
            mentions_bot: mentioned,
            replies_to_bot: false,
            from_bot: false,
            deliver_to: None,
            skills: Vec::new(),
            received_at: SystemTime::now(),
        }))
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for IrcAdapter {
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
                    tracing::warn!("irc: {e}");
                    self.status.set_state(ConnectionState::Failed);
                    self.status.error(e);
                    if !sleep_or_shutdown(FATAL_RETRY, &shutdown).await {
                        break;
                    }
                }
                SessionEnd::Retry(e, registered) => {
                    if registered {
                        backoff.reset();
                    }
                    tracing::info!("irc: {e}; reconnecting");
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
        let target = chat.chat_id.as_str();
        if target.is_empty() || target.contains([' ', ',', '\r', '\n', '\0']) {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: format!("{target:?} is not an IRC channel or nick"),
            });
        }
        if !message.files.is_empty() {
            self.status
                .error("IRC cannot carry files; only the text was sent");
        }
        let text = proto::strip_markdown(&message.text);
        let limit = proto::body_limit(target, &self.nick(), self.settings.max_message_length);
        let lines = proto::split_lines(&text, limit);
        let out = self
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or(PlatformError::Network {
                platform: PLATFORM,
                message: "not connected".into(),
            })?;
        let mut ids = Vec::new();
        for line in lines {
            out.send(format!("PRIVMSG {target} :{line}"))
                .await
                .map_err(|_| PlatformError::Network {
                    platform: PLATFORM,
                    message: "the connection closed".into(),
                })?;
            self.status.add_sent(1);
            ids.push(self.next_id());
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text".into(),
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
            operation: "carry files",
        })
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let s = &self.settings;
        tokio::time::timeout(
            CONNECT_TIMEOUT,
            ws::connect_stream(&s.server, s.port, s.use_tls),
        )
        .await
        .map_err(|_| format!("no connection within {CONNECT_TIMEOUT:?}"))
        .and_then(|r| r)
        .map_err(|message| PlatformError::Network {
            platform: PLATFORM,
            message: format!("{}:{}: {message}", s.server, s.port),
        })?;
        Ok(format!(
            "{}:{} accepts connections{}",
            s.server,
            s.port,
            if s.use_tls { " (TLS)" } else { "" }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, BufReader};

    #[test]
    fn addresses_and_words() {
        assert_eq!(
            strip_address("hermes-bot: hi there", "hermes-bot"),
            Some("hi there")
        );
        assert_eq!(strip_address("Hermes-Bot, hi", "hermes-bot"), Some("hi"));
        assert_eq!(strip_address("hermes-bots: hi", "hermes-bot"), None);
        assert!(has_word("ask hermes-bot please", "hermes-bot"));
        assert!(!has_word("ask hermes-bot_ please", "hermes-bot"));
    }

    /// A scripted server on loopback: SASL PLAIN, a taken nick, the join, a PING, a channel
    /// message and a private message; then the answers the adapter writes.
    #[tokio::test]
    async fn registers_with_sasl_answers_ping_and_delivers_messages() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let env = hermes_config::Environment::isolated([
            ("IRC_SERVER", "127.0.0.1"),
            ("IRC_CHANNEL", "#hermes"),
            ("IRC_PORT", &*port.to_string()),
            ("IRC_USE_TLS", "no"),
            ("IRC_NICKNAME", "bot"),
            ("IRC_SASL_PASSWORD", "secret"),
        ]);
        let config =
            hermes_config::Config::from_yaml(Path::new("/h/config.yaml"), "", &env).unwrap();
        let platforms = crate::platform::PlatformsConfig::load(&config, &env);
        let settings = IrcSettings::from_platform(platforms.get("irc").unwrap(), &env).unwrap();
        let adapter = Arc::new(IrcAdapter::new(settings).unwrap());
        let (tx, mut rx) = mpsc::channel(8);
        let shutdown = CancellationToken::new();
        let run = tokio::spawn({
            let adapter = Arc::clone(&adapter);
            let shutdown = shutdown.clone();
            async move { adapter.run(tx, shutdown).await }
        });
        let (sock, _) = listener.accept().await.unwrap();
        let (r, mut w) = sock.into_split();
        let mut lines = BufReader::new(r).lines();
        let mut expect = async |want: &str| {
            let got = lines.next_line().await.unwrap().unwrap();
            assert_eq!(got, want);
        };
        expect("CAP REQ :sasl").await;
        expect("NICK bot").await;
        expect("USER bot 0 * :Hermes Agent").await;
        w.write_all(b":srv CAP * ACK :sasl\r\n").await.unwrap();
        expect("AUTHENTICATE PLAIN").await;
        w.write_all(b"AUTHENTICATE +\r\n").await.unwrap();
        expect("AUTHENTICATE Ym90AGJvdABzZWNyZXQ=").await;
        w.write_all(b":srv 903 * :SASL authentication successful\r\n:srv 433 * bot :Nickname is already in use\r\n")
            .await
            .unwrap();
        expect("CAP END").await;
        expect("NICK bot_").await;
        w.write_all(b":srv 001 bot_ :Welcome\r\nPING :srv\r\n")
            .await
            .unwrap();
        expect("JOIN #hermes").await;
        expect("PONG :srv").await;
        w.write_all(
            b":ann!a@h PRIVMSG #hermes :just chatting\r\n:ann!a@h PRIVMSG #hermes :bot_: what is 2+2?\r\n:ann!a@h PRIVMSG bot_ :\x01VERSION\x01\r\n:ann!a@h PRIVMSG bot_ :hello in private\r\n",
        )
        .await
        .unwrap();
        let Some(InboundEvent::Message(first)) = rx.recv().await else {
            panic!("no message")
        };
        assert_eq!(first.text, "what is 2+2?");
        assert_eq!(
            first.chat,
            ChatRef::new(PLATFORM, ChatType::Group, "#hermes")
        );
        assert_eq!(first.user_id, "ann");
        let Some(InboundEvent::Message(second)) = rx.recv().await else {
            panic!("no message")
        };
        assert_eq!(second.text, "hello in private");
        assert_eq!(second.chat, ChatRef::new(PLATFORM, ChatType::Direct, "ann"));
        let sent = adapter
            .send(&second.chat, &OutboundMessage::text("**four**\n\nline two"))
            .await
            .unwrap();
        assert_eq!(sent.message_ids.len(), 2);
        expect("PRIVMSG ann :four").await;
        expect("PRIVMSG ann :line two").await;
        shutdown.cancel();
        expect("QUIT :Hermes Agent shutting down").await;
        run.await.unwrap();
        assert_eq!(adapter.status().state, ConnectionState::Stopped);
    }
}
