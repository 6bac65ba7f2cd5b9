//! The engine under every platform mock: a dedicated OS thread with its own tokio runtime, a
//! listener on 127.0.0.1, HTTP/1.1 requests (keep-alive) handed to the mock's [`Service`],
//! WebSocket upgrades on the same port handed to it as a server-side stream, and requests a
//! mock answers by streaming (Server-Sent Events) handed to it with the raw connection.
//! Dropping the [`Server`] stops the runtime, closing every connection.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

use crate::http;

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A request as a mock sees it.
#[derive(Debug, Clone)]
pub struct MockRequest {
    pub method: String,
    /// As sent, query included.
    pub target: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl MockRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        http::header_in(&self.headers, name)
    }

    /// The target without its query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// Decoded query parameters.
    pub fn query(&self) -> Vec<(String, String)> {
        self.target
            .split_once('?')
            .map(|(_, q)| parse_urlencoded(q))
            .unwrap_or_default()
    }

    /// The body's parameters as a JSON object, whatever the encoding: JSON,
    /// `application/x-www-form-urlencoded` or `multipart/form-data` (file parts become
    /// `{"filename", "content_type", "size", "text"}` objects, `text` when the bytes are
    /// UTF-8), with the query string's parameters underneath.
    pub fn params(&self) -> Value {
        let mut map = serde_json::Map::new();
        for (k, v) in self.query() {
            map.insert(k, Value::String(v));
        }
        let ctype = self
            .header("content-type")
            .unwrap_or("")
            .to_ascii_lowercase();
        if ctype.starts_with("multipart/form-data") {
            if let Some(boundary) = ctype
                .split(';')
                .filter_map(|p| p.trim().strip_prefix("boundary="))
                .next()
            {
                // The boundary keeps its original case.
                let original = self
                    .header("content-type")
                    .and_then(|c| {
                        let lower = c.to_ascii_lowercase();
                        let at = lower.find("boundary=")? + "boundary=".len();
                        Some(
                            c[at..]
                                .split(';')
                                .next()?
                                .trim()
                                .trim_matches('"')
                                .to_string(),
                        )
                    })
                    .unwrap_or_else(|| boundary.trim_matches('"').to_string());
                for part in parse_multipart(&self.body, &original) {
                    map.insert(part.0, part.1);
                }
            }
        } else if ctype.starts_with("application/x-www-form-urlencoded") {
            for (k, v) in parse_urlencoded(&String::from_utf8_lossy(&self.body)) {
                map.insert(k, Value::String(v));
            }
        } else if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(&self.body) {
            map.extend(obj);
        }
        Value::Object(map)
    }
}

/// What a mock answers.
#[derive(Debug, Clone)]
pub struct MockResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl MockResponse {
    pub fn json(status: u16, body: &Value) -> MockResponse {
        MockResponse {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
        }
    }

    pub fn empty(status: u16) -> MockResponse {
        MockResponse {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> MockResponse {
        MockResponse {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body,
        }
    }

    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> MockResponse {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A platform mock's behaviour.
pub(crate) trait Service: Send + Sync + 'static {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse>;
    /// A WebSocket connection upgraded from `req`; an HTTP-only mock just closes it.
    fn websocket(
        self: Arc<Self>,
        _req: MockRequest,
        ws: WebSocketStream<TcpStream>,
    ) -> BoxFuture<()> {
        Box::pin(async move { drop(ws) })
    }

    /// Whether the mock answers `req` itself on the raw connection ([`Service::stream`]),
    /// for responses that never end (Server-Sent Events).
    fn streams(&self, _req: &MockRequest) -> bool {
        false
    }

    /// Writes the whole response to `req` on `conn`; the connection closes when it returns.
    fn stream(self: Arc<Self>, _req: MockRequest, _conn: TcpStream) -> BoxFuture<()> {
        Box::pin(async {})
    }
}

/// A running mock server; dropping it stops it.
pub(crate) struct Server {
    pub addr: SocketAddr,
    pub runtime: tokio::runtime::Handle,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

fn log(msg: &str) {
    eprintln!("[hermes-testkit platform mock] {msg}");
}

impl Server {
    /// Starts serving `service` on a free port; returns once it listens.
    pub fn start<S: Service>(name: &str, service: Arc<S>) -> io::Result<Server> {
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
        let thread = std::thread::Builder::new()
            .name(format!("mock-{name}-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    tokio::select! {
                        _ = shutdown_rx => {}
                        () = accept_loop(listener, service) => {}
                    }
                });
                drop(runtime);
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Server {
                addr,
                runtime: handle,
                shutdown: Some(shutdown_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(io::Error::other("mock thread exited before listening"))
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            log("server thread panicked");
        }
    }
}

async fn accept_loop<S: Service>(listener: TcpListener, service: Arc<S>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve_connection(stream, Arc::clone(&service)));
            }
            Err(e) => {
                log(&format!("accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn serve_connection<S: Service>(stream: TcpStream, service: Arc<S>) {
    let _ = stream.set_nodelay(true);
    let mut conn = BufReader::new(stream);
    loop {
        let req = match http::read_request(&mut conn).await {
            Ok(Some(req)) => req,
            Ok(None) => break,
            Err(e) => {
                log(&format!("bad request, closing: {e}"));
                break;
            }
        };
        let close = req.wants_close();
        let mock_req = MockRequest {
            method: req.method.clone(),
            target: req.target.clone(),
            headers: req.headers.clone(),
            body: req.body.clone(),
        };
        if service.streams(&mock_req) {
            let stream = conn.into_inner();
            Arc::clone(&service).stream(mock_req, stream).await;
            return;
        }
        let upgrade = req
            .header("upgrade")
            .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
        if upgrade {
            let Some(key) = req.header("sec-websocket-key") else {
                let _ = http::write_response(conn.get_mut(), 400, &[], b"missing key", true).await;
                break;
            };
            let accept = derive_accept_key(key.as_bytes());
            let head = format!(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
            );
            if conn.get_mut().write_all(head.as_bytes()).await.is_err() {
                break;
            }
            let leftover = conn.buffer().to_vec();
            let stream = conn.into_inner();
            let ws =
                WebSocketStream::from_partially_read(stream, leftover, Role::Server, None).await;
            service.websocket(mock_req, ws).await;
            return;
        }
        let resp = Arc::clone(&service).http(mock_req).await;
        if let Err(e) = http::write_response(
            conn.get_mut(),
            resp.status,
            &resp.headers,
            &resp.body,
            close,
        )
        .await
        {
            log(&format!("write failed: {e}"));
            break;
        }
        if close {
            break;
        }
    }
    let _ = conn.get_mut().shutdown().await;
}

/// `a=1&b=x%20y` into pairs (`+` is a space).
pub(crate) fn parse_urlencoded(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `multipart/form-data` parts as `(name, value)`: text fields as strings, files as objects.
fn parse_multipart(body: &[u8], boundary: &str) -> Vec<(String, Value)> {
    let delimiter = format!("--{boundary}");
    let mut out = Vec::new();
    let mut rest = body;
    let Some(first) = find(rest, delimiter.as_bytes()) else {
        return out;
    };
    rest = &rest[first + delimiter.len()..];
    loop {
        if rest.starts_with(b"--") {
            break;
        }
        let rest_after_crlf = rest.strip_prefix(b"\r\n").unwrap_or(rest);
        let Some(end) = find(rest_after_crlf, format!("\r\n{delimiter}").as_bytes()) else {
            break;
        };
        let part = &rest_after_crlf[..end];
        rest = &rest_after_crlf[end + 2 + delimiter.len()..];
        let Some(head_end) = find(part, b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..head_end]).into_owned();
        let content = &part[head_end + 4..];
        let mut name = None;
        let mut filename = None;
        let mut ctype = None;
        for line in head.split("\r\n") {
            let lower = line.to_ascii_lowercase();
            if lower.starts_with("content-disposition:") {
                for attr in line.split(';').skip(1) {
                    let attr = attr.trim();
                    if let Some(v) = attr.strip_prefix("name=") {
                        name = Some(v.trim_matches('"').to_string());
                    } else if let Some(v) = attr.strip_prefix("filename=") {
                        filename = Some(v.trim_matches('"').to_string());
                    }
                }
            } else if lower.starts_with("content-type:") {
                ctype = Some(line["content-type:".len()..].trim().to_string());
            }
        }
        let Some(name) = name else { continue };
        let value = match filename {
            Some(f) => serde_json::json!({
                "filename": f,
                "content_type": ctype,
                "size": content.len(),
                "text": std::str::from_utf8(content).ok(),
            }),
            None => Value::String(String::from_utf8_lossy(content).into_owned()),
        };
        out.push((name, value));
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Posts `body` to `url` (`http://host:port/path`) with `headers`; returns the status (0 when
/// the connection failed). For mocks that call the code under test (webhooks).
pub(crate) async fn post(url: &str, headers: &[(String, String)], body: &[u8]) -> u16 {
    let Some(rest) = url.strip_prefix("http://") else {
        return 0;
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let Ok(Ok(mut stream)) =
        tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(authority)).await
    else {
        return 0;
    };
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    if stream.write_all(&bytes).await.is_err() {
        return 0;
    }
    let mut reply = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        use tokio::io::AsyncReadExt;
        stream.read_to_end(&mut reply).await
    })
    .await;
    if !matches!(read, Ok(Ok(_))) && reply.is_empty() {
        return 0;
    }
    let text = String::from_utf8_lossy(&reply);
    text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urlencoded_and_multipart_parameters() {
        assert_eq!(
            parse_urlencoded("a=1&b=x%20y+z&c"),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y z".into()),
                ("c".into(), "".into())
            ]
        );
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"chat_id\"\r\n\r\n42\r\n--XyZ\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\nPNGDATA\r\n--XyZ--\r\n";
        let req = MockRequest {
            method: "POST".into(),
            target: "/x?q=1".into(),
            headers: vec![(
                "content-type".into(),
                "multipart/form-data; boundary=XyZ".into(),
            )],
            body: body.to_vec(),
        };
        let p = req.params();
        assert_eq!(p["chat_id"], "42");
        assert_eq!(p["q"], "1");
        assert_eq!(p["photo"]["filename"], "a.png");
        assert_eq!(p["photo"]["size"], 7);
        assert_eq!(p["photo"]["content_type"], "image/png");
    }
}
