//! The legacy HTTP+SSE transport of MCP (protocol 2024-11-05), which rmcp no longer ships a
//! client for: a GET opens an event stream whose first `endpoint` event names where to POST
//! JSON-RPC messages (same origin only: a server cannot send our headers elsewhere); the
//! answers arrive as `message` events on the stream. Implemented as an rmcp [`Transport`] on
//! the workspace's reqwest, with optional OAuth and a bounded event parser.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use crate::oauth::{OAuth, OAuthError};

/// The largest single event (or line) accepted on the stream.
const MAX_EVENT: usize = 16 << 20;
/// Messages read ahead of the client.
const QUEUE: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum SseTransportError {
    #[error("HTTP {0}{1}")]
    Status(u16, String),
    #[error("{0}")]
    Request(String),
    #[error("{0}")]
    Protocol(String),
    #[error(transparent)]
    Auth(#[from] OAuthError),
}

/// One event of an event stream.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// An incremental, bounded `text/event-stream` parser.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feeds bytes; returns the events they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, String> {
        let mut out = Vec::new();
        for &b in bytes {
            if b != b'\n' {
                if self.line.len() >= MAX_EVENT {
                    return Err(format!("an event stream line is over {MAX_EVENT} bytes"));
                }
                self.line.push(b);
                continue;
            }
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                if self.has_data {
                    let mut data = std::mem::take(&mut self.data);
                    if data.ends_with('\n') {
                        data.pop();
                    }
                    let event = std::mem::take(&mut self.event);
                    out.push(SseEvent {
                        event: if event.is_empty() {
                            "message".into()
                        } else {
                            event
                        },
                        data,
                    });
                } else {
                    self.event.clear();
                }
                self.has_data = false;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_ref(), ""),
            };
            match field {
                "event" => self.event = value.to_string(),
                "data" => {
                    if self.data.len() + value.len() >= MAX_EVENT {
                        return Err(format!("an event is over {MAX_EVENT} bytes"));
                    }
                    self.data.push_str(value);
                    self.data.push('\n');
                    self.has_data = true;
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

/// A connected legacy SSE session.
pub struct SseTransport {
    endpoint: Url,
    http: reqwest::Client,
    headers: HeaderMap,
    oauth: Option<Arc<OAuth>>,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl SseTransport {
    /// Opens the stream at `url` and waits for its `endpoint` event (the caller bounds the
    /// wait). `headers` go with every request.
    pub async fn connect(
        url: &str,
        http: reqwest::Client,
        headers: HeaderMap,
        oauth: Option<Arc<OAuth>>,
    ) -> Result<SseTransport, SseTransportError> {
        let base = Url::parse(url)
            .map_err(|e| SseTransportError::Protocol(format!("`{url}` is not a URL: {e}")))?;
        let open = |token: Option<String>| {
            let mut req = http
                .get(base.clone())
                .headers(headers.clone())
                .header(ACCEPT, "text/event-stream");
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            req.send()
        };
        let token = match &oauth {
            Some(o) => o.bearer().await?,
            None => None,
        };
        let mut resp = open(token.clone()).await.map_err(request_error)?;
        if resp.status() == reqwest::StatusCode::UNAUTHORIZED
            && let Some(o) = &oauth
        {
            let challenge = www_authenticate(&resp);
            let fresh = o.recover(token.as_deref(), &challenge).await?;
            resp = open(Some(fresh)).await.map_err(request_error)?;
        }
        let status = resp.status();
        if !status.is_success() {
            let reason = status
                .canonical_reason()
                .map(|r| format!(" {r}"))
                .unwrap_or_default();
            return Err(SseTransportError::Status(status.as_u16(), reason));
        }
        let mut parser = SseParser::default();
        let mut pending = Vec::new();
        let endpoint = loop {
            let chunk = resp.chunk().await.map_err(request_error)?.ok_or_else(|| {
                SseTransportError::Protocol(
                    "the event stream ended before its `endpoint` event".into(),
                )
            })?;
            let mut events = parser
                .push(&chunk)
                .map_err(SseTransportError::Protocol)?
                .into_iter();
            if let Some(at) = events.by_ref().find(|e| e.event == "endpoint") {
                pending.extend(events);
                break at.data;
            }
        };
        let endpoint = base.join(endpoint.trim()).map_err(|e| {
            SseTransportError::Protocol(format!("the endpoint `{endpoint}` is not a URL: {e}"))
        })?;
        if endpoint.origin() != base.origin() {
            return Err(SseTransportError::Protocol(format!(
                "the server named an endpoint on another origin ({}), refused",
                endpoint.origin().ascii_serialization()
            )));
        }
        let (tx, incoming) = mpsc::channel(QUEUE);
        let reader = tokio::spawn(read_stream(resp, parser, pending, tx));
        Ok(SseTransport {
            endpoint,
            http,
            headers,
            oauth,
            incoming,
            reader,
        })
    }
}

/// Forwards the `message` events of the stream until it ends or the client goes.
async fn read_stream(
    mut resp: reqwest::Response,
    mut parser: SseParser,
    pending: Vec<SseEvent>,
    tx: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
) {
    let forward = |events: Vec<SseEvent>| {
        let tx = tx.clone();
        async move {
            for e in events.into_iter().filter(|e| e.event == "message") {
                // A message we cannot read is dropped; the request it answered times out.
                if let Ok(msg) = serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&e.data)
                    && tx.send(msg).await.is_err()
                {
                    return false;
                }
            }
            true
        }
    };
    if !forward(pending).await {
        return;
    }
    while let Ok(Some(chunk)) = resp.chunk().await {
        let Ok(events) = parser.push(&chunk) else {
            return;
        };
        if !forward(events).await {
            return;
        }
    }
}

fn request_error(e: reqwest::Error) -> SseTransportError {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text = format!("{e}: {s}");
        source = s.source();
    }
    SseTransportError::Request(text)
}

fn www_authenticate(resp: &reqwest::Response) -> String {
    resp.headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseTransportError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let http = self.http.clone();
        let endpoint = self.endpoint.clone();
        let headers = self.headers.clone();
        let oauth = self.oauth.clone();
        async move {
            let body = serde_json::to_string(&item)
                .map_err(|e| SseTransportError::Protocol(e.to_string()))?;
            let post = |token: Option<String>| {
                let mut req = http
                    .post(endpoint.clone())
                    .headers(headers.clone())
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone());
                if let Some(t) = token {
                    req = req.bearer_auth(t);
                }
                tokio::time::timeout(Duration::from_secs(60), req.send())
            };
            let token = match &oauth {
                Some(o) => o.bearer().await?,
                None => None,
            };
            let timed_out =
                || SseTransportError::Request("the POST got no answer within 60 s".into());
            let mut resp = post(token.clone())
                .await
                .map_err(|_| timed_out())?
                .map_err(request_error)?;
            if resp.status() == reqwest::StatusCode::UNAUTHORIZED
                && let Some(o) = &oauth
            {
                let fresh = o
                    .recover(token.as_deref(), &www_authenticate(&resp))
                    .await?;
                resp = post(Some(fresh))
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(request_error)?;
            }
            let status = resp.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(SseTransportError::Status(
                    status.as_u16(),
                    status
                        .canonical_reason()
                        .map(|r| format!(" {r}"))
                        .unwrap_or_default(),
                ))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}

/// `headers` as a header map, values marked sensitive (kept out of debug output).
pub(crate) fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let Ok(key) = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()) else {
            return Err(format!("`{name}` is not a valid HTTP header name"));
        };
        let Ok(mut value) = HeaderValue::from_str(value.trim()) else {
            return Err(format!("the value of header `{name}` is not valid"));
        };
        value.set_sensitive(true);
        map.insert(key, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_parsed_across_chunks_and_line_endings() {
        let mut p = SseParser::default();
        let mut all = Vec::new();
        for chunk in [
            &b": comment\r\nevent: endpoint\r\ndata: /message?s"[..],
            b"=1\r\n\r\ndata: {\"a\":\n",
            b"data: 1}\n\nevent: x\n\n",
            b"data\n\n",
        ] {
            all.extend(p.push(chunk).unwrap());
        }
        assert_eq!(
            all,
            [
                SseEvent {
                    event: "endpoint".into(),
                    data: "/message?s=1".into()
                },
                SseEvent {
                    event: "message".into(),
                    data: "{\"a\":\n1}".into()
                },
                SseEvent {
                    event: "message".into(),
                    data: String::new()
                },
            ]
        );
    }

    #[test]
    fn oversized_lines_are_refused() {
        let mut p = SseParser::default();
        let big = vec![b'x'; MAX_EVENT + 1];
        assert!(p.push(&big).is_err());
    }
}
