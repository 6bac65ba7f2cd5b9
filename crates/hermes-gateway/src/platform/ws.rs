//! Client connections: WebSockets for the gateway-style platforms (Discord, Slack), `ws://` or
//! `wss://` (rustls with the ring provider and the platform's certificate verifier), with a
//! deadline on connect + TLS + upgrade and bounded message sizes; and the plain TCP/TLS
//! stream under them, which IRC uses as it is.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls_platform_verifier::BuilderVerifierExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// A byte stream, plain or TLS.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

pub(crate) type WsStream = WebSocketStream<Box<dyn Stream>>;

/// Largest message accepted from a platform (Discord's READY for a bot in many guilds is
/// the largest: a few MiB).
const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// A TCP connection to `host:port`, wrapped in TLS (rustls with the platform's certificate
/// verifier, the host as the server name) when `tls` is set. Errors are one line.
pub(crate) async fn connect_stream(
    host: &str,
    port: u16,
    tls: bool,
) -> Result<Box<dyn Stream>, String> {
    let tcp = TcpStream::connect((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    if !tls {
        return Ok(Box::new(tcp));
    }
    tls_wrap(Box::new(tcp), host).await
}

/// Wraps a connected stream in TLS (rustls with the ring provider and the platform's
/// certificate verifier), checking the certificate against `name` (the host, or for XMPP's
/// STARTTLS the JID's domain). Errors are one line.
pub(crate) async fn tls_wrap(
    stream: Box<dyn Stream>,
    name: &str,
) -> Result<Box<dyn Stream>, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS setup: {e}"))?
    .with_platform_verifier()
    .map_err(|e| format!("TLS setup: {e}"))?
    .with_no_client_auth();
    let server_name = ServerName::try_from(name.trim_matches(['[', ']']).to_string())
        .map_err(|e| format!("bad TLS server name {name}: {e}"))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    Ok(Box::new(
        connector
            .connect(server_name, stream)
            .await
            .map_err(|e| format!("TLS with {name}: {e}"))?,
    ))
}

/// Opens a WebSocket to `url` within `deadline`. Errors are one line, without the query
/// string (Slack's carries a ticket).
pub(crate) async fn connect(url: &str, deadline: Duration) -> Result<WsStream, String> {
    match tokio::time::timeout(deadline, connect_inner(url)).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "no connection to {} within {deadline:?}",
            redact(url)
        )),
    }
}

fn redact(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}

async fn connect_inner(url: &str) -> Result<WsStream, String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("bad websocket URL {}: {e}", redact(url)))?;
    let tls = match parsed.scheme() {
        "wss" => true,
        "ws" => false,
        other => {
            return Err(format!(
                "websocket URL must be ws:// or wss://, not {other}://"
            ));
        }
    };
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("websocket URL {} has no host", redact(url)))?
        .to_string();
    let port = parsed
        .port_or_known_default()
        .ok_or_else(|| format!("websocket URL {} has no port", redact(url)))?;
    let stream = connect_stream(&host, port, tls).await?;
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let (ws, _response) = tokio_tungstenite::client_async_with_config(url, stream, Some(config))
        .await
        .map_err(|e| format!("websocket handshake with {}: {e}", redact(url)))?;
    Ok(ws)
}
