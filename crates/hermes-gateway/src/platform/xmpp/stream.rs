//! Opening an XMPP client session (RFC 6120): TCP to the server, the stream header, STARTTLS
//! when the server offers it (required unless plaintext is allowed for a loopback server; the
//! certificate is checked against the JID's domain), SASL (SCRAM-SHA-256, SCRAM-SHA-1, then
//! PLAIN only over TLS or with plaintext allowed), the stream restart, and resource binding.
//! What comes out is the stream and the reader holding whatever the server sent after the
//! bind answer; [`super`] runs the session on it.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::sasl::{self, Scram, ScramHash};
use super::settings::{Jid, XmppSettings};
use super::xml::{Element, Event, XmlReader, escape};
use crate::platform::ws::{self, Stream};

pub(crate) const NS_CLIENT: &str = "jabber:client";
const NS_TLS: &str = "urn:ietf:params:xml:ns:xmpp-tls";
const NS_SASL: &str = "urn:ietf:params:xml:ns:xmpp-sasl";
const NS_BIND: &str = "urn:ietf:params:xml:ns:xmpp-bind";
const NS_SESSION: &str = "urn:ietf:params:xml:ns:xmpp-session";

const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for any answer during negotiation.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes read from the socket at once.
pub(crate) const READ_CHUNK: usize = 16 * 1024;

/// Why a session could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum OpenError {
    /// Worth retrying with backoff (network, a server restarting).
    #[error("{0}")]
    Retry(String),
    /// Retrying will not help (wrong password, no TLS where it is required).
    #[error("{0}")]
    Fatal(String),
}

/// An open, authenticated and bound session.
pub(crate) struct Session {
    pub stream: Box<dyn Stream>,
    pub reader: XmlReader,
    /// The full JID the server bound.
    pub jid: String,
}

/// The stream during negotiation: writes, and reads the next top-level element.
struct Negotiator {
    stream: Box<dyn Stream>,
    reader: XmlReader,
    domain: String,
}

impl Negotiator {
    async fn send(&mut self, data: &str) -> Result<(), OpenError> {
        match tokio::time::timeout(STEP_TIMEOUT, self.stream.write_all(data.as_bytes())).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(OpenError::Retry(format!("write: {e}"))),
            Err(_) => Err(OpenError::Retry("the server stopped reading".into())),
        }
    }

    async fn event(&mut self) -> Result<Event, OpenError> {
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            match self.reader.next() {
                Ok(Some(e)) => return Ok(e),
                Ok(None) => {}
                Err(e) => return Err(OpenError::Retry(format!("from the server: {e}"))),
            }
            let n = match tokio::time::timeout(STEP_TIMEOUT, self.stream.read(&mut buf)).await {
                Ok(Ok(0)) => {
                    return Err(OpenError::Retry(
                        "the server closed the connection during login".into(),
                    ));
                }
                Ok(Ok(n)) => n,
                Ok(Err(e)) => return Err(OpenError::Retry(format!("read: {e}"))),
                Err(_) => {
                    return Err(OpenError::Retry(
                        "the server did not answer during login".into(),
                    ));
                }
            };
            self.reader
                .feed(&buf[..n])
                .map_err(|e| OpenError::Retry(format!("from the server: {e}")))?;
        }
    }

    /// The next top-level element; a stream error or end is an error.
    async fn element(&mut self) -> Result<Element, OpenError> {
        match self.event().await? {
            Event::Stanza(el) if is_stream_error(&el) => Err(stream_error(&el)),
            Event::Stanza(el) => Ok(el),
            Event::StreamStart(_) => Err(OpenError::Retry("a second stream header".into())),
            Event::StreamEnd => Err(OpenError::Retry("the server closed the stream".into())),
        }
    }

    /// Sends a stream header and reads the server's header and features.
    async fn open(&mut self) -> Result<Element, OpenError> {
        self.reader = XmlReader::new();
        let header = format!(
            "<?xml version='1.0'?><stream:stream to='{}' version='1.0' xml:lang='en' xmlns='{NS_CLIENT}' xmlns:stream='http://etherx.jabber.org/streams'>",
            escape(&self.domain)
        );
        self.send(&header).await?;
        match self.event().await? {
            Event::StreamStart(_) => {}
            _ => return Err(OpenError::Retry("no stream header from the server".into())),
        }
        let features = self.element().await?;
        if features.local_name() != "features" {
            return Err(OpenError::Retry(format!(
                "expected stream features, got <{}>",
                features.name
            )));
        }
        Ok(features)
    }
}

/// Whether a top-level element is `<stream:error>` (whatever the prefix).
pub(crate) fn is_stream_error(el: &Element) -> bool {
    el.local_name() == "error" && el.name.contains(':')
}

/// A `<stream:error>` as an error: conditions that mean the configuration is wrong are fatal.
pub(crate) fn stream_error(el: &Element) -> OpenError {
    let condition = el
        .children
        .iter()
        .find(|c| c.local_name() != "text")
        .map_or("undefined-condition", |c| c.local_name())
        .to_string();
    let text = el
        .child("text", None)
        .map(|t| format!(": {}", t.text.chars().take(200).collect::<String>()))
        .unwrap_or_default();
    let message = format!("stream error {condition}{text}");
    match condition.as_str() {
        "host-unknown" | "not-authorized" | "policy-violation" | "unsupported-version" => {
            OpenError::Fatal(message)
        }
        _ => OpenError::Retry(message),
    }
}

/// Connects, secures, authenticates and binds.
pub(crate) async fn open(settings: &XmppSettings, resource: &str) -> Result<Session, OpenError> {
    let host = settings.host.trim_matches(['[', ']']);
    let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((host, settings.port)))
        .await
    {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => {
            return Err(OpenError::Retry(format!(
                "cannot connect to {}:{}: {e}",
                settings.host, settings.port
            )));
        }
        Err(_) => {
            return Err(OpenError::Retry(format!(
                "no connection to {}:{} within {CONNECT_TIMEOUT:?}",
                settings.host, settings.port
            )));
        }
    };
    let _ = tcp.set_nodelay(true);
    let mut n = Negotiator {
        stream: Box::new(tcp),
        reader: XmlReader::new(),
        domain: settings.jid.domain.clone(),
    };
    let mut tls = false;
    let mut authenticated = false;
    loop {
        let features = n.open().await?;
        if !tls {
            if features.child("starttls", Some(NS_TLS)).is_some() {
                n.send(&format!("<starttls xmlns='{NS_TLS}'/>")).await?;
                let answer = n.element().await?;
                if answer.local_name() != "proceed" {
                    return Err(OpenError::Retry("the server refused STARTTLS".into()));
                }
                let plain = std::mem::replace(&mut n.stream, Box::new(tokio::io::duplex(1).0));
                n.stream = tokio::time::timeout(CONNECT_TIMEOUT, ws::tls_wrap(plain, &n.domain))
                    .await
                    .map_err(|_| OpenError::Retry("the TLS handshake timed out".into()))?
                    .map_err(|e| {
                        // A certificate the platform does not trust will not change by itself.
                        if e.contains("certificate") || e.contains("Certificate") {
                            OpenError::Fatal(e)
                        } else {
                            OpenError::Retry(e)
                        }
                    })?;
                tls = true;
                continue;
            }
            if !settings.allow_plaintext {
                return Err(OpenError::Fatal(format!(
                    "{}:{} does not offer STARTTLS (XMPP_ALLOW_PLAINTEXT allows a loopback test server)",
                    settings.host, settings.port
                )));
            }
        }
        if !authenticated {
            authenticate(&mut n, settings, &features, tls).await?;
            authenticated = true;
            continue;
        }
        let jid = bind(&mut n, &features, resource).await?;
        return Ok(Session {
            stream: n.stream,
            reader: n.reader,
            jid,
        });
    }
}

async fn authenticate(
    n: &mut Negotiator,
    settings: &XmppSettings,
    features: &Element,
    tls: bool,
) -> Result<(), OpenError> {
    let offered: Vec<&str> = features
        .child("mechanisms", Some(NS_SASL))
        .map(|m| {
            m.children
                .iter()
                .filter(|c| c.local_name() == "mechanism")
                .map(|c| c.text.trim())
                .collect()
        })
        .unwrap_or_default();
    let user = settings.jid.local.clone().unwrap_or_default();
    let scram = [ScramHash::Sha256, ScramHash::Sha1]
        .into_iter()
        .find(|h| offered.contains(&h.mechanism()));
    if let Some(hash) = scram {
        let mut scram = Scram::new(hash, &user, &settings.password);
        n.send(&format!(
            "<auth xmlns='{NS_SASL}' mechanism='{}'>{}</auth>",
            hash.mechanism(),
            B64.encode(scram.client_first())
        ))
        .await?;
        let challenge = sasl_step(n).await?;
        let SaslStep::Challenge(server_first) = challenge else {
            return Err(OpenError::Retry(
                "SCRAM: the server skipped its challenge".into(),
            ));
        };
        let reply = scram
            .respond(&server_first)
            .map_err(|e| OpenError::Fatal(format!("SCRAM: {e}")))?;
        n.send(&format!(
            "<response xmlns='{NS_SASL}'>{}</response>",
            B64.encode(reply)
        ))
        .await?;
        let server_final = match sasl_step(n).await? {
            SaslStep::Success(data) => data,
            SaslStep::Challenge(data) => {
                // Some servers send the final message as a challenge, then success.
                n.send(&format!("<response xmlns='{NS_SASL}'/>")).await?;
                match sasl_step(n).await? {
                    SaslStep::Success(_) => data,
                    SaslStep::Challenge(_) => {
                        return Err(OpenError::Retry("SCRAM: too many challenges".into()));
                    }
                }
            }
        };
        return scram
            .verify(&server_final)
            .map_err(|e| OpenError::Fatal(format!("SCRAM: {e}")));
    }
    if offered.contains(&"PLAIN") {
        if !tls && !settings.allow_plaintext {
            return Err(OpenError::Fatal(
                "the server offers only PLAIN login on an unencrypted connection".into(),
            ));
        }
        n.send(&format!(
            "<auth xmlns='{NS_SASL}' mechanism='PLAIN'>{}</auth>",
            sasl::plain(&user, &settings.password)
        ))
        .await?;
        return match sasl_step(n).await? {
            SaslStep::Success(_) => Ok(()),
            SaslStep::Challenge(_) => Err(OpenError::Retry("PLAIN: unexpected challenge".into())),
        };
    }
    Err(OpenError::Fatal(format!(
        "no SASL mechanism this client supports (the server offers {})",
        if offered.is_empty() {
            "none".to_string()
        } else {
            offered.join(", ")
        }
    )))
}

enum SaslStep {
    Challenge(String),
    Success(String),
}

/// The server's next SASL answer, decoded; `<failure>` is fatal (wrong credentials).
async fn sasl_step(n: &mut Negotiator) -> Result<SaslStep, OpenError> {
    let el = n.element().await?;
    let decode = |el: &Element| -> Result<String, OpenError> {
        let text = el.text.trim();
        if text.is_empty() || text == "=" {
            return Ok(String::new());
        }
        let bytes = B64
            .decode(text)
            .map_err(|_| OpenError::Retry("SASL: the server sent bad base64".into()))?;
        String::from_utf8(bytes).map_err(|_| OpenError::Retry("SASL: not UTF-8".into()))
    };
    match el.local_name() {
        "challenge" => Ok(SaslStep::Challenge(decode(&el)?)),
        "success" => Ok(SaslStep::Success(decode(&el)?)),
        "failure" => {
            let condition = el
                .children
                .iter()
                .find(|c| c.local_name() != "text")
                .map_or("failure", |c| c.local_name());
            let hint = match condition {
                "not-authorized" | "credentials-expired" | "account-disabled" => {
                    " (check XMPP_JID and XMPP_PASSWORD)"
                }
                _ => "",
            };
            Err(OpenError::Fatal(format!(
                "the server refused the login: {condition}{hint}"
            )))
        }
        other => Err(OpenError::Retry(format!("SASL: unexpected <{other}>"))),
    }
}

async fn bind(n: &mut Negotiator, features: &Element, resource: &str) -> Result<String, OpenError> {
    if features.child("bind", Some(NS_BIND)).is_none() {
        return Err(OpenError::Retry(
            "the server offers no resource binding".into(),
        ));
    }
    n.send(&format!(
        "<iq type='set' id='bind-1'><bind xmlns='{NS_BIND}'><resource>{}</resource></bind></iq>",
        escape(resource)
    ))
    .await?;
    let jid = loop {
        let el = n.element().await?;
        if el.local_name() != "iq" || el.attr("id") != Some("bind-1") {
            continue;
        }
        if el.attr("type") != Some("result") {
            return Err(OpenError::Retry(
                "the server refused the resource binding".into(),
            ));
        }
        let jid = el
            .child("bind", Some(NS_BIND))
            .and_then(|b| b.child("jid", None))
            .map(|j| j.text.trim().to_string())
            .filter(|j| Jid::parse(j).is_some())
            .ok_or_else(|| OpenError::Retry("the bind answer has no JID".into()))?;
        break jid;
    };
    // RFC 3921's session, for old servers that still require it.
    if let Some(session) = features.child("session", Some(NS_SESSION))
        && session.child("optional", None).is_none()
    {
        n.send(&format!(
            "<iq type='set' id='session-1'><session xmlns='{NS_SESSION}'/></iq>"
        ))
        .await?;
        loop {
            let el = n.element().await?;
            if el.local_name() == "iq" && el.attr("id") == Some("session-1") {
                if el.attr("type") != Some("result") {
                    return Err(OpenError::Retry("the server refused the session".into()));
                }
                break;
            }
        }
    }
    Ok(jid)
}
