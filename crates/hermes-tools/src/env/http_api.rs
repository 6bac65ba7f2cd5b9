//! The HTTP side of the cloud backends (Daytona's REST and toolbox APIs, the Modal tool
//! gateway): one client, JSON calls with a bearer token, bounded response bodies, and errors
//! that quote the service's own message. The token only ever goes to the configured API host.

use std::time::Duration;

use serde_json::Value;

use super::EnvError;

/// The most bytes of a response body read (command output comes back in one JSON body).
pub const MAX_BODY: usize = 64 * 1024 * 1024;
/// Connection limit of every call.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// A reply: status and (bounded) body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON (`Null` when empty or not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The service's message: `message`, `error` or `code` of a JSON body, else the text.
    pub fn message(&self) -> String {
        let v = self.json();
        for key in ["message", "error", "code"] {
            match &v[key] {
                Value::String(s) if !s.is_empty() => return s.clone(),
                Value::Array(items) if !items.is_empty() => {
                    return items
                        .iter()
                        .map(|i| i.as_str().map(str::to_string).unwrap_or(i.to_string()))
                        .collect::<Vec<_>>()
                        .join("; ");
                }
                _ => {}
            }
        }
        let text = String::from_utf8_lossy(&self.body).trim().to_string();
        if text.is_empty() {
            format!("HTTP {}", self.status)
        } else {
            crate::output::shorten_line(&text, 500)
        }
    }
}

/// A JSON API with a bearer token.
#[derive(Debug, Clone)]
pub struct Api {
    pub service: &'static str,
    client: reqwest::Client,
    token: String,
}

impl Api {
    pub fn new(service: &'static str, token: &str) -> Result<Api, EnvError> {
        // Installing twice is harmless; the first provider stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("hermes-rs/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EnvError::Io(format!("cannot build the HTTP client: {e}")))?;
        Ok(Api {
            service,
            client,
            token: token.to_string(),
        })
    }

    /// One call: `body` as JSON, `headers` besides the token, within `timeout`.
    pub async fn call(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Reply, EnvError> {
        let mut request = self
            .client
            .request(method, url)
            .bearer_auth(&self.token)
            .timeout(timeout);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if let Some(body) = body {
            request = request
                .header("Content-Type", "application/json")
                .body(body.to_string());
        }
        self.send(request, url).await
    }

    /// A `multipart/form-data` upload of `bytes` as the form's `field` (file name `name`).
    pub async fn upload(
        &self,
        url: &str,
        field: &str,
        name: &str,
        bytes: Vec<u8>,
        timeout: Duration,
    ) -> Result<Reply, EnvError> {
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name.to_string())
            .mime_str("application/octet-stream")
            .map_err(|e| EnvError::Io(format!("cannot build the upload: {e}")))?;
        let form = reqwest::multipart::Form::new().part(field.to_string(), part);
        let request = self
            .client
            .post(url)
            .bearer_auth(&self.token)
            .timeout(timeout)
            .multipart(form);
        self.send(request, url).await
    }

    async fn send(&self, request: reqwest::RequestBuilder, url: &str) -> Result<Reply, EnvError> {
        let unreachable = |detail: String| EnvError::ApiUnreachable {
            service: self.service,
            url: strip_query(url),
            detail,
        };
        let mut response = request
            .send()
            .await
            .map_err(|e| unreachable(describe(&e)))?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| unreachable(describe(&e)))?
        {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(unreachable(format!(
                    "the response is larger than {MAX_BODY} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Reply { status, body })
    }

    /// `reply` as JSON when it succeeded, else the service's refusal.
    pub fn expect_json(&self, reply: Reply) -> Result<Value, EnvError> {
        if reply.ok() {
            Ok(reply.json())
        } else {
            Err(self.refused(&reply))
        }
    }

    pub fn refused(&self, reply: &Reply) -> EnvError {
        EnvError::Api {
            service: self.service,
            status: reply.status,
            message: reply.message(),
        }
    }
}

/// The error chain of a reqwest error, in one line.
fn describe(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "no answer in time".to_string()
    } else {
        e.to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn strip_query(url: &str) -> String {
    url.split('?').next().unwrap_or(url).to_string()
}

/// `base` + `path` with the query parameters encoded.
pub fn with_query(base: &str, params: &[(&str, &str)]) -> Result<String, EnvError> {
    let mut url = reqwest::Url::parse(base).map_err(|e| EnvError::Io(format!("{base}: {e}")))?;
    url.query_pairs_mut().extend_pairs(params.iter());
    Ok(url.to_string())
}

/// 16 random bytes as a version-4 UUID (exec ids, idempotency keys).
pub fn uuid4() -> String {
    let mut b = [0u8; 16];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .is_ok();
    if !filled {
        // No /dev/urandom: time and pid still make ids unique per process.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
            ^ (u128::from(std::process::id()) << 64);
        b = seed.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}
