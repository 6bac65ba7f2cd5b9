//! The loopback redirect target of an authorization: a one-shot HTTP listener on 127.0.0.1
//! that waits (with a deadline) for `GET /callback?code=...&state=...`, answers the browser
//! with a short page and hands back the code. Requests are read with a size bound; anything
//! else (a favicon, a scanner) gets a 404 and the wait goes on.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::OAuthError;

/// The most bytes of one request the listener reads.
const MAX_REQUEST: usize = 16 * 1024;

/// A bound callback listener.
pub struct Callback {
    listener: TcpListener,
    path: String,
}

/// What the authorization server sent back.
#[derive(Debug, Clone, PartialEq)]
pub struct CallbackParams {
    pub code: String,
    pub state: Option<String>,
}

impl Callback {
    /// Listens on 127.0.0.1:`port` (0: any free port) for requests to `path`.
    pub async fn bind(port: u16, path: &str) -> Result<Callback, OAuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            OAuthError::Callback(format!(
                "cannot listen on 127.0.0.1:{port} for the OAuth callback ({e}); set a free \
                 `oauth.redirect_port`"
            ))
        })?;
        Ok(Callback {
            listener,
            path: path.to_string(),
        })
    }

    pub fn port(&self) -> u16 {
        self.listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or_default()
    }

    /// Waits for the redirect, at most `deadline`.
    pub async fn wait(self, deadline: Duration) -> Result<CallbackParams, OAuthError> {
        tokio::time::timeout(deadline, self.serve())
            .await
            .map_err(|_| {
                OAuthError::Callback(format!(
                    "no authorization arrived within {} s (was the browser step completed?)",
                    deadline.as_secs()
                ))
            })?
    }

    async fn serve(self) -> Result<CallbackParams, OAuthError> {
        loop {
            let Ok((mut stream, _)) = self.listener.accept().await else {
                continue;
            };
            let Ok(Ok(target)) =
                tokio::time::timeout(Duration::from_secs(10), request_target(&mut stream)).await
            else {
                continue;
            };
            let (path, query) = target.split_once('?').unwrap_or((&target, ""));
            if path != self.path {
                let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
                continue;
            }
            let params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let get = |k: &str| {
                params
                    .iter()
                    .find(|(name, _)| name == k)
                    .map(|(_, v)| v.clone())
            };
            if let Some(error) = get("error") {
                let _ = respond(
                    &mut stream,
                    "200 OK",
                    "Authorization failed. You can close this tab.",
                )
                .await;
                let detail = get("error_description")
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                return Err(OAuthError::Denied(format!("{error}{detail}")));
            }
            let Some(code) = get("code") else {
                let _ = respond(&mut stream, "400 Bad Request", "No authorization code.").await;
                continue;
            };
            let _ = respond(
                &mut stream,
                "200 OK",
                "Authorization successful. You can close this tab and return to Hermes.",
            )
            .await;
            return Ok(CallbackParams {
                code,
                state: get("state"),
            });
        }
    }
}

/// The request target of `GET <target> HTTP/1.1` (headers read and ignored, bounded).
async fn request_target(stream: &mut tokio::net::TcpStream) -> std::io::Result<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() >= MAX_REQUEST {
            return Err(std::io::Error::other("request too large"));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let line = head.lines().next().unwrap_or_default();
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => Ok(target.to_string()),
        _ => Err(std::io::Error::other("not a GET request")),
    }
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: &str,
    text: &str,
) -> std::io::Result<()> {
    let body = format!("<!doctype html><html><body><h2>Hermes</h2><p>{text}</p></body></html>");
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn the_code_and_state_come_back_and_strays_are_ignored() {
        let cb = Callback::bind(0, "/callback").await.unwrap();
        let port = cb.port();
        let waiter = tokio::spawn(cb.wait(Duration::from_secs(20)));
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        let page = get(port, "/callback?code=c%2F1&state=s").await;
        assert!(page.contains("Authorization successful"), "{page}");
        let got = waiter.await.unwrap().unwrap();
        assert_eq!(
            got,
            CallbackParams {
                code: "c/1".into(),
                state: Some("s".into())
            }
        );
    }

    #[tokio::test]
    async fn a_denial_and_a_timeout_are_errors() {
        let cb = Callback::bind(0, "/callback").await.unwrap();
        let port = cb.port();
        let waiter = tokio::spawn(cb.wait(Duration::from_secs(20)));
        get(port, "/callback?error=access_denied&error_description=no").await;
        assert_eq!(
            waiter.await.unwrap().unwrap_err().to_string(),
            "the authorization was refused: access_denied: no"
        );
        let cb = Callback::bind(0, "/callback").await.unwrap();
        let err = cb.wait(Duration::from_millis(50)).await.unwrap_err();
        assert!(
            err.to_string().contains("no authorization arrived"),
            "{err}"
        );
    }
}
