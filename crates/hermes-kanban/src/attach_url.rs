//! `kanban_attach_url`'s download: through the home's SSRF-safe fetcher (every hop's address
//! checked against `security` URL policy: no private, loopback or metadata addresses unless
//! allowed), http(s) only, at most the attachment cap (the body read stops past it), a
//! minute for the whole exchange.

use std::time::Duration;

use hermes_web::net::{FetchError, FetchLimits, Fetched, Fetcher};
use url::Url;

use crate::board::ATTACHMENT_MAX_BYTES;

/// Fetches `url` for an attachment.
pub async fn download(fetcher: &Fetcher, url: &str) -> Result<Fetched, FetchError> {
    let limits = FetchLimits {
        max_bytes: ATTACHMENT_MAX_BYTES as usize,
        timeout: Duration::from_secs(60),
        max_redirects: 5,
    };
    fetcher.get_limited(url, &limits).await
}

/// The URL's last path segment, else `download`.
pub fn file_name(url: &Url) -> String {
    url.path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|s| !s.is_empty())
        .map(|s| s.to_string())
        .unwrap_or_else(|| "download".to_string())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use hermes_web::net::UrlPolicy;

    use super::*;

    /// A one-shot HTTP server on loopback answering `body`.
    fn serve(body: &'static [u8]) -> std::net::SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = listener.accept() {
                let mut buf = [0u8; 2048];
                let _ = s.read(&mut buf);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(body);
            }
        });
        addr
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_trusted_server_is_fetched_and_a_private_address_refused() {
        let addr = serve(b"a,b\n1,2\n");
        let fetcher = Fetcher::new(UrlPolicy::strict().trusting(addr));
        let got = download(&fetcher, &format!("http://{addr}/data/prices.csv"))
            .await
            .unwrap();
        assert_eq!(got.body, b"a,b\n1,2\n");
        assert_eq!(got.content_type.as_deref(), Some("text/csv"));
        assert_eq!(file_name(&got.url), "prices.csv");
        let strict = Fetcher::new(UrlPolicy::strict());
        let refused = download(&strict, "http://127.0.0.1:9/x").await.unwrap_err();
        assert!(refused.is_refusal(), "{refused}");
        assert!(download(&strict, "file:///etc/passwd").await.is_err());
    }
}
