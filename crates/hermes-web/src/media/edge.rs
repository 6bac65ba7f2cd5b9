//! Edge TTS: Microsoft Edge's read-aloud voices, keyless, over the WebSocket endpoint Edge uses
//! (`wss://speech.platform.bing.com/consumer/speech/synthesize/readaloud/edge/v1`, with the
//! trusted client token, the time-based `Sec-MS-GEC` token and a connection id). One exchange:
//! a `speech.config` message asking for 24 kHz MP3, one SSML message with the text, then text
//! frames `turn.start` … `turn.end` around binary frames that carry audio after a 2-byte
//! big-endian header length and the header. The base URL can be replaced (a test server).

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, http};

pub const DEFAULT_BASE: &str =
    "wss://speech.platform.bing.com/consumer/speech/synthesize/readaloud/edge/v1";
pub const DEFAULT_VOICE: &str = "en-US-AriaNeural";
const TRUSTED_CLIENT_TOKEN: &str = "6A5AA1D4EAFF4E9FB37E23D68491D6F4";
const CHROMIUM_FULL_VERSION: &str = "130.0.2849.68";
/// Largest audio kept (a 5,000-character text is far below it).
const MAX_AUDIO_BYTES: usize = 32 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EdgeError {
    #[error("Edge TTS: {0}")]
    Connect(String),
    #[error("Edge TTS: {0}")]
    Protocol(String),
    #[error("Edge TTS: no answer within {} s", TIMEOUT.as_secs())]
    Timeout,
}

/// `Sec-MS-GEC`: SHA-256 of the Windows file time (100 ns ticks since 1601) rounded down to
/// five minutes, followed by the trusted client token; uppercase hex.
pub fn sec_ms_gec(unix_secs: u64) -> String {
    let ticks = (unix_secs + 11_644_473_600) * 10_000_000;
    let ticks = ticks - ticks % 3_000_000_000;
    let digest = Sha256::digest(format!("{ticks}{TRUSTED_CLIENT_TOKEN}").as_bytes());
    digest.iter().map(|b| format!("{b:02X}")).collect()
}

/// The voice as the service names it: `en-US-AriaNeural` becomes
/// `Microsoft Server Speech Text to Speech Voice (en-US, AriaNeural)`.
pub fn long_voice_name(voice: &str) -> String {
    let parts: Vec<&str> = voice.splitn(3, '-').collect();
    match parts.as_slice() {
        [lang, region, name]
            if lang.len() == 2 && region.len() == 2 && name.ends_with("Neural") =>
        {
            let (region, name) = match name.split_once('-') {
                Some((extra, rest)) => (format!("{region}-{extra}"), rest.to_string()),
                None => (region.to_string(), name.to_string()),
            };
            format!("Microsoft Server Speech Text to Speech Voice ({lang}-{region}, {name})")
        }
        _ => voice.to_string(),
    }
}

fn escape_xml(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            // Control characters the service rejects.
            c if (c as u32) < 32 && c != '\n' && c != '\r' && c != '\t' => " ".to_string(),
            c => c.to_string(),
        })
        .collect()
}

fn timestamp() -> String {
    // A JavaScript-style date in UTC; the service only checks that one is there.
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{secs}")
}

fn connection_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let digest = Sha256::digest(format!("{nanos}{}", std::process::id()).as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The text and binary messages of one exchange, and the audio they carried.
pub async fn synthesize(base: &str, voice: &str, text: &str) -> Result<Vec<u8>, EdgeError> {
    tokio::time::timeout(TIMEOUT, exchange(base, voice, text))
        .await
        .map_err(|_| EdgeError::Timeout)?
}

async fn exchange(base: &str, voice: &str, text: &str) -> Result<Vec<u8>, EdgeError> {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let url = format!(
        "{base}?TrustedClientToken={TRUSTED_CLIENT_TOKEN}&Sec-MS-GEC={}&Sec-MS-GEC-Version=1-{CHROMIUM_FULL_VERSION}&ConnectionId={}",
        sec_ms_gec(unix),
        connection_id()
    );
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| EdgeError::Connect(format!("bad URL: {e}")))?;
    let headers = request.headers_mut();
    for (k, v) in [
        ("Pragma", "no-cache"),
        ("Cache-Control", "no-cache"),
        (
            "Origin",
            "chrome-extension://jdiccldimpdaibmpdkjnbmckianbfold",
        ),
        (
            "User-Agent",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 Edg/130.0.0.0",
        ),
    ] {
        if let Ok(value) = http::HeaderValue::from_str(v) {
            headers.insert(k, value);
        }
    }
    let stream = connect(request.uri()).await?;
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(MAX_AUDIO_BYTES))
        .max_frame_size(Some(MAX_AUDIO_BYTES));
    let (mut ws, _) = tokio_tungstenite::client_async_with_config(request, stream, Some(ws_config))
        .await
        .map_err(|e| EdgeError::Connect(e.to_string()))?;
    let date = timestamp();
    let config = format!(
        "X-Timestamp:{date}\r\nContent-Type:application/json; charset=utf-8\r\nPath:speech.config\r\n\r\n{{\"context\":{{\"synthesis\":{{\"audio\":{{\"metadataoptions\":{{\"sentenceBoundaryEnabled\":false,\"wordBoundaryEnabled\":false}},\"outputFormat\":\"audio-24khz-48kbitrate-mono-mp3\"}}}}}}}}\r\n"
    );
    let ssml = format!(
        "<speak version='1.0' xmlns='http://www.w3.org/2001/10/synthesis' xml:lang='en-US'><voice name='{}'><prosody pitch='+0Hz' rate='+0%' volume='+0%'>{}</prosody></voice></speak>",
        long_voice_name(voice),
        escape_xml(text)
    );
    let request = format!(
        "X-RequestId:{}\r\nContent-Type:application/ssml+xml\r\nX-Timestamp:{date}Z\r\nPath:ssml\r\n\r\n{ssml}",
        connection_id()
    );
    let send = |e: tokio_tungstenite::tungstenite::Error| EdgeError::Connect(e.to_string());
    ws.send(Message::text(config)).await.map_err(send)?;
    ws.send(Message::text(request)).await.map_err(send)?;

    let mut audio = Vec::new();
    let mut started = false;
    while let Some(msg) = ws.next().await {
        match msg.map_err(|e| EdgeError::Protocol(e.to_string()))? {
            Message::Text(t) => {
                let path = header(t.as_str(), "Path");
                match path.as_deref() {
                    Some("turn.start") => started = true,
                    Some("turn.end") => break,
                    _ => {}
                }
            }
            Message::Binary(b) => {
                if !started {
                    return Err(EdgeError::Protocol("audio before turn.start".into()));
                }
                if b.len() < 2 {
                    return Err(EdgeError::Protocol(
                        "a binary frame without its header length".into(),
                    ));
                }
                let head = usize::from(u16::from_be_bytes([b[0], b[1]]));
                if b.len() < head + 2 {
                    return Err(EdgeError::Protocol(
                        "a binary frame shorter than its header".into(),
                    ));
                }
                let headers = String::from_utf8_lossy(&b[2..head + 2]);
                if header(&headers, "Path").as_deref() == Some("audio") {
                    if audio.len() + b.len() > MAX_AUDIO_BYTES {
                        return Err(EdgeError::Protocol("the audio is too large".into()));
                    }
                    audio.extend_from_slice(&b[head + 2..]);
                }
            }
            Message::Close(_) => break,
            _ => {}
        }
    }
    let _ = ws.close(None).await;
    if audio.is_empty() {
        return Err(EdgeError::Protocol(
            "no audio was received (check tts.edge.voice)".into(),
        ));
    }
    Ok(audio)
}

/// The value of `name` in a `Key:value\r\n` header block (up to the blank line).
fn header(block: &str, name: &str) -> Option<String> {
    block
        .split("\r\n\r\n")
        .next()?
        .split("\r\n")
        .find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
}

/// A byte stream under the WebSocket: plain TCP for `ws://`, TLS for `wss://`.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// TCP to the URI's host and port, then TLS (our rustls with the platform verifier) for `wss`.
async fn connect(uri: &http::Uri) -> Result<Box<dyn Io>, EdgeError> {
    let tls = match uri.scheme_str() {
        Some("wss") => true,
        Some("ws") => false,
        other => {
            return Err(EdgeError::Connect(format!(
                "the URL must be ws:// or wss://, not {}",
                other.unwrap_or("none")
            )));
        }
    };
    let host = uri
        .host()
        .ok_or_else(|| EdgeError::Connect("the URL has no host".into()))?
        .trim_matches(['[', ']'])
        .to_string();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| EdgeError::Connect(format!("cannot connect to {host}:{port}: {e}")))?;
    let _ = tcp.set_nodelay(true);
    if !tls {
        return Ok(Box::new(tcp));
    }
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| EdgeError::Connect(e.to_string()))?
        .with_platform_verifier()
        .map_err(|e| EdgeError::Connect(e.to_string()))?
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.clone())
        .map_err(|e| EdgeError::Connect(format!("bad server name {host}: {e}")))?;
    let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| EdgeError::Connect(format!("TLS with {host}: {e}")))?;
    Ok(Box::new(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_and_voice_names() {
        // 2024-11-08T00:00:00Z, rounded to the five minutes it falls in.
        let a = sec_ms_gec(1_731_024_000);
        assert_eq!(a, sec_ms_gec(1_731_024_000 + 299));
        assert_ne!(a, sec_ms_gec(1_731_024_000 + 300));
        assert_eq!(a.len(), 64);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        );
        assert_eq!(
            long_voice_name("en-US-AriaNeural"),
            "Microsoft Server Speech Text to Speech Voice (en-US, AriaNeural)"
        );
        assert_eq!(
            long_voice_name("zh-CN-shaanxi-XiaoniNeural"),
            "Microsoft Server Speech Text to Speech Voice (zh-CN-shaanxi, XiaoniNeural)"
        );
        assert_eq!(escape_xml("a<b & 'c'\u{b}"), "a&lt;b &amp; &apos;c&apos; ");
        assert_eq!(
            header("X-RequestId:1\r\nPath:turn.end\r\n\r\n{}", "path").as_deref(),
            Some("turn.end")
        );
    }
}
