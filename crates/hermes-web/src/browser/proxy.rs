//! The launched browser's only way out: an HTTP proxy on a loopback port that Chromium is
//! told to use for everything (loopback included). Each connection's destination is resolved
//! and checked by the [`Fetcher`] here, and the proxy connects to one of the checked
//! addresses, so a name that resolves to a public address for the check and to a private one
//! a moment later (DNS rebinding) never reaches the private one: Chromium never resolves a
//! name itself. `CONNECT host:port` (HTTPS, WebSockets over TLS) is tunnelled after the check;
//! a plain-HTTP request is forwarded as one request with `Connection: close`, so a kept-alive
//! connection cannot carry a request for another host. A refused destination gets 403 (the
//! request gate names the reason to the model). Heads are bounded, connections limited.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use url::Url;

use crate::net::Fetcher;

/// The largest request head read from the browser.
const MAX_HEAD: usize = 32 * 1024;
/// Connections open at once.
const MAX_CONNECTIONS: usize = 128;
/// Time for the browser to send a head, and for a destination to accept a connection.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// A running proxy; stops when dropped.
pub struct GateProxy {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for GateProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl GateProxy {
    /// Listens on a free loopback port.
    pub async fn start(fetcher: Fetcher) -> std::io::Result<GateProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let task = tokio::spawn(async move {
            loop {
                let Ok(permit) = slots.clone().acquire_owned().await else {
                    return;
                };
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let fetcher = fetcher.clone();
                tokio::spawn(async move {
                    let _permit = permit;
                    if let Err(e) = serve(stream, &fetcher).await {
                        tracing::debug!("browser proxy: {e}");
                    }
                });
            }
        });
        Ok(GateProxy { addr, task })
    }

    /// Chromium's switches for it.
    pub fn chromium_args(&self) -> [(&'static str, String); 2] {
        [
            ("proxy-server", format!("http://{}", self.addr)),
            // Chromium sends loopback addresses around a proxy unless told not to.
            ("proxy-bypass-list", "<-loopback>".to_string()),
        ]
    }
}

#[derive(Debug, thiserror::Error)]
enum ProxyError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("a request head that is too large, incomplete or late")]
    BadHead,
}

/// One browser connection.
async fn serve(mut browser: TcpStream, fetcher: &Fetcher) -> Result<(), ProxyError> {
    let (head, rest) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut browser))
        .await
        .map_err(|_| ProxyError::BadHead)??;
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let (method, target, version) = (
        first.next().unwrap_or(""),
        first.next().unwrap_or(""),
        first.next().unwrap_or("HTTP/1.1"),
    );
    let tunnel = method.eq_ignore_ascii_case("CONNECT");
    let url = if tunnel {
        Url::parse(&format!("https://{target}/")).ok()
    } else {
        Url::parse(target).ok().filter(|u| u.scheme() == "http")
    };
    let Some(url) = url else {
        browser
            .write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await?;
        return Ok(());
    };
    let upstream = match fetcher.connect_addrs(&url).await {
        Ok(addrs) => connect(&addrs).await,
        Err(e) => {
            tracing::debug!("browser proxy refused {url}: {e}");
            None
        }
    };
    let Some(mut upstream) = upstream else {
        browser
            .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await?;
        return Ok(());
    };
    if tunnel {
        browser
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
    } else {
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let mut out = format!("{method} {path} {version}\r\n");
        for line in lines.filter(|l| !l.is_empty()) {
            let name = line.split(':').next().unwrap_or("").trim();
            if name.eq_ignore_ascii_case("proxy-connection")
                || name.eq_ignore_ascii_case("connection")
                || name.eq_ignore_ascii_case("keep-alive")
            {
                continue;
            }
            out.push_str(line);
            out.push_str("\r\n");
        }
        out.push_str("Connection: close\r\n\r\n");
        upstream.write_all(out.as_bytes()).await?;
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut browser, &mut upstream).await?;
    Ok(())
}

/// The head (through the blank line) and any bytes read after it.
async fn read_head(stream: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), ProxyError> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            buf.truncate(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(ProxyError::BadHead);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(ProxyError::BadHead);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The first of the checked addresses that accepts a connection.
async fn connect(addrs: &[SocketAddr]) -> Option<TcpStream> {
    for addr in addrs {
        if let Ok(Ok(stream)) =
            tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await
        {
            return Some(stream);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{StaticResolver, UrlPolicy};

    async fn origin() -> (SocketAddr, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let (head, _) = read_head(&mut s).await.unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .await
                .unwrap();
            head
        });
        (addr, task)
    }

    async fn ask(proxy: &GateProxy, request: &str) -> String {
        let mut s = TcpStream::connect(proxy.addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn names_are_resolved_and_checked_here_and_private_ones_refused() {
        let (origin, seen) = origin().await;
        let resolver = StaticResolver::new()
            .with("harbour.example.com", &["127.0.0.1".parse().unwrap()])
            .with("rebound.example.com", &["10.0.0.7".parse().unwrap()]);
        let fetcher =
            Fetcher::with_resolver(UrlPolicy::strict().trusting(origin), Arc::new(resolver));
        let proxy = GateProxy::start(fetcher).await.unwrap();

        let answer = ask(
            &proxy,
            &format!(
                "GET http://harbour.example.com:{}/form?a=1 HTTP/1.1\r\nHost: harbour.example.com\r\nProxy-Connection: keep-alive\r\n\r\n",
                origin.port()
            ),
        )
        .await;
        assert!(answer.ends_with("\r\n\r\nok"), "{answer}");
        let head = String::from_utf8(seen.await.unwrap()).unwrap();
        assert_eq!(
            head,
            "GET /form?a=1 HTTP/1.1\r\nHost: harbour.example.com\r\nConnection: close"
        );

        for request in [
            "GET http://rebound.example.com/ HTTP/1.1\r\n\r\n".to_string(),
            "CONNECT rebound.example.com:443 HTTP/1.1\r\n\r\n".to_string(),
            "CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n".to_string(),
            // Trusted is that exact address and port, not the whole machine.
            format!(
                "GET http://127.0.0.1:{}/ HTTP/1.1\r\n\r\n",
                origin.port().wrapping_add(1)
            ),
        ] {
            let answer = ask(&proxy, &request).await;
            assert!(answer.starts_with("HTTP/1.1 403"), "{request}: {answer}");
        }
        let answer = ask(&proxy, "GET ftp://x/ HTTP/1.1\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    }
}
