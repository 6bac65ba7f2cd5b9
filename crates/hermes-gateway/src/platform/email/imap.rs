//! The IMAP side (async-imap over our own TCP/TLS stream): connect (implicit TLS, STARTTLS or
//! plain), log in, select INBOX; list unseen mail, read each one bounded (`RFC822.SIZE` and at
//! most `max_message_bytes` of `BODY.PEEK[]`, so reading never marks a mail seen by itself),
//! mark it seen once handled; and wait for news with IDLE where the server has it. Every
//! command has a deadline, so a dead server ends the session instead of hanging it.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_imap::extensions::idle::IdleResponse;
use async_imap::{Client, Session};
use futures_util::TryStreamExt;
use rustls::pki_types::ServerName;
use rustls_platform_verifier::BuilderVerifierExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

use super::settings::{EmailSettings, Security};
use crate::platform::ws::{self, Stream};

/// Deadline of connect + TLS + greeting + login, and of each later command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest IDLE before it is renewed (RFC 2177 asks for under 29 minutes).
const MAX_IDLE: Duration = Duration::from_secs(25 * 60);

/// The connection's byte stream, as async-imap wants it (`Debug`).
pub(crate) struct ImapStream(Box<dyn Stream>);

impl fmt::Debug for ImapStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ImapStream")
    }
}

impl AsyncRead for ImapStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for ImapStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

pub(crate) type ImapSession = Session<ImapStream>;

/// Why a session ended or could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ImapError {
    /// The server refused the login: retrying soon will not help.
    #[error("IMAP login as {user} refused: {message} (check EMAIL_ADDRESS and EMAIL_PASSWORD)")]
    Login { user: String, message: String },
    #[error("IMAP {host}:{port}: {message}")]
    Connection {
        host: String,
        port: u16,
        message: String,
    },
    #[error("IMAP: no answer to {0} within {COMMAND_TIMEOUT:?}")]
    Timeout(&'static str),
    #[error("IMAP: {0}")]
    Protocol(#[from] async_imap::error::Error),
}

async fn deadline<T>(
    what: &'static str,
    fut: impl Future<Output = Result<T, async_imap::error::Error>>,
) -> Result<T, ImapError> {
    match tokio::time::timeout(COMMAND_TIMEOUT, fut).await {
        Ok(r) => r.map_err(ImapError::from),
        Err(_) => Err(ImapError::Timeout(what)),
    }
}

/// TLS over an established stream (STARTTLS), with the platform's certificate verifier.
async fn upgrade(stream: Box<dyn Stream>, host: &str) -> Result<Box<dyn Stream>, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS setup: {e}"))?
    .with_platform_verifier()
    .map_err(|e| format!("TLS setup: {e}"))?
    .with_no_client_auth();
    let name = ServerName::try_from(host.trim_matches(['[', ']']).to_string())
        .map_err(|e| format!("bad TLS server name {host}: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await
        .map_err(|e| format!("TLS with {host}: {e}"))?;
    Ok(Box::new(tls))
}

/// Reads the server's greeting (`* OK ...`).
async fn greeting(client: &mut Client<ImapStream>) -> Result<(), ImapError> {
    match tokio::time::timeout(COMMAND_TIMEOUT, client.read_response()).await {
        Ok(Ok(Some(_))) => Ok(()),
        Ok(Ok(None)) => Err(ImapError::Timeout("the greeting (the server closed)")),
        Ok(Err(e)) => Err(ImapError::Protocol(e.into())),
        Err(_) => Err(ImapError::Timeout("the greeting")),
    }
}

/// A logged-in session with INBOX selected.
pub(crate) struct Opened {
    pub session: ImapSession,
    /// The server has IDLE.
    pub idle: bool,
    /// INBOX's UIDVALIDITY (UIDs are only unique with it).
    pub uid_validity: u32,
}

/// Connects, logs in and selects INBOX.
pub(crate) async fn open(s: &EmailSettings) -> Result<Opened, ImapError> {
    let conn_err = |message: String| ImapError::Connection {
        host: s.imap_host.clone(),
        port: s.imap_port,
        message,
    };
    let tls_first = s.imap_security == Security::Tls;
    let stream = tokio::time::timeout(
        COMMAND_TIMEOUT,
        ws::connect_stream(&s.imap_host, s.imap_port, tls_first),
    )
    .await
    .map_err(|_| ImapError::Timeout("connect"))?
    .map_err(conn_err)?;
    let mut client = Client::new(ImapStream(stream));
    greeting(&mut client).await?;
    if s.imap_security == Security::StartTls {
        deadline(
            "STARTTLS",
            client.run_command_and_check_ok("STARTTLS", None),
        )
        .await?;
        let plain = client.into_inner().0;
        let tls = tokio::time::timeout(COMMAND_TIMEOUT, upgrade(plain, &s.imap_host))
            .await
            .map_err(|_| ImapError::Timeout("TLS"))?
            .map_err(conn_err)?;
        client = Client::new(ImapStream(tls));
    }
    let mut session =
        match tokio::time::timeout(COMMAND_TIMEOUT, client.login(&s.address, &s.password)).await {
            Err(_) => return Err(ImapError::Timeout("LOGIN")),
            Ok(Err((e, _))) => {
                return Err(match e {
                    async_imap::error::Error::No(message)
                    | async_imap::error::Error::Bad(message) => ImapError::Login {
                        user: s.address.clone(),
                        message,
                    },
                    other => ImapError::Protocol(other),
                });
            }
            Ok(Ok(session)) => session,
        };
    let idle = deadline("CAPABILITY", session.capabilities())
        .await?
        .has_str("IDLE");
    let inbox = deadline("SELECT", session.select("INBOX")).await?;
    Ok(Opened {
        session,
        idle,
        uid_validity: inbox.uid_validity.unwrap_or_default(),
    })
}

/// The UIDs of unseen mail in INBOX, oldest first.
pub(crate) async fn unseen(session: &mut ImapSession) -> Result<Vec<u32>, ImapError> {
    let mut uids: Vec<u32> = deadline("UID SEARCH", session.uid_search("UNSEEN"))
        .await?
        .into_iter()
        .collect();
    uids.sort_unstable();
    Ok(uids)
}

/// One mail's bytes, at most `max` of them, and its full size (bigger when cut).
pub(crate) async fn read(
    session: &mut ImapSession,
    uid: u32,
    max: u64,
) -> Result<Option<(Vec<u8>, u64)>, ImapError> {
    let query = format!("(UID RFC822.SIZE BODY.PEEK[]<0.{max}>)");
    let fetches: Vec<_> = deadline("UID FETCH", async {
        session
            .uid_fetch(uid.to_string(), &query)
            .await?
            .try_collect::<Vec<_>>()
            .await
    })
    .await?;
    Ok(fetches.iter().find(|f| f.uid == Some(uid)).and_then(|f| {
        let body = f.body()?.to_vec();
        let size = f.size.map_or(body.len() as u64, u64::from);
        Some((body, size))
    }))
}

/// Flags the mail `\Seen`.
pub(crate) async fn mark_seen(session: &mut ImapSession, uid: u32) -> Result<(), ImapError> {
    deadline("UID STORE", async {
        session
            .uid_store(uid.to_string(), "+FLAGS.SILENT (\\Seen)")
            .await?
            .try_collect::<Vec<_>>()
            .await
    })
    .await?;
    Ok(())
}

/// How a wait for news ended.
pub(crate) enum Wake {
    /// Something may have arrived (or it is time to look again).
    Check(ImapSession),
    Shutdown,
}

/// Waits for news: IDLE where the server has it, ended after `poll_interval` at the latest
/// (mail that lands between the search and the IDLE is then found without waiting for the
/// next push), else `poll_interval` then a `NOOP` that proves the connection is alive.
pub(crate) async fn wait(
    mut session: ImapSession,
    idle: bool,
    poll_interval: Duration,
    shutdown: &CancellationToken,
) -> Result<Wake, ImapError> {
    if !idle {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(Wake::Shutdown),
            _ = tokio::time::sleep(poll_interval) => {}
        }
        deadline("NOOP", session.noop()).await?;
        return Ok(Wake::Check(session));
    }
    let mut handle = session.idle();
    deadline("IDLE", handle.init()).await?;
    let outcome = {
        let (fut, _stop) = handle.wait_with_timeout(poll_interval.min(MAX_IDLE));
        tokio::select! {
            _ = shutdown.cancelled() => None,
            r = fut => Some(r),
        }
    };
    match outcome {
        None => Ok(Wake::Shutdown),
        Some(Err(e)) => Err(e.into()),
        Some(Ok(response)) => {
            // A closed connection ends the wait like an interrupt; DONE then fails and the
            // session ends with that error.
            let session = deadline("DONE", handle.done()).await?;
            if let IdleResponse::NewData(data) = &response {
                tracing::debug!("email: IDLE woke: {:?}", data.parsed());
            }
            Ok(Wake::Check(session))
        }
    }
}
