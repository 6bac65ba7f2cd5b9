//! The Feishu / Lark Open API calls (<https://open.feishu.cn/document/server-docs/im-v1/message/create>),
//! each with `Authorization: Bearer <tenant_access_token>`:
//!
//! - `POST /open-apis/auth/v3/tenant_access_token/internal` `{"app_id", "app_secret"}` →
//!   `{"code": 0, "tenant_access_token", "expire": <seconds>}`: cached, refreshed five
//!   minutes before it expires (Feishu hands out the same token until its last half hour);
//! - `POST /open-apis/im/v1/messages?receive_id_type=chat_id`, `POST
//!   /open-apis/im/v1/messages/{id}/reply`, `PUT /open-apis/im/v1/messages/{id}` (text and
//!   post edits), `PATCH /open-apis/im/v1/messages/{id}` (card edits), `DELETE
//!   /open-apis/im/v1/messages/{id}`;
//! - `GET /open-apis/im/v1/messages/{id}/resources/{key}?type=image|file` (inbound files);
//! - `POST /open-apis/im/v1/images` and `/open-apis/im/v1/files` (multipart uploads);
//! - `GET /open-apis/bot/v3/info` (the bot's name and open id).
//!
//! Every answer is `{"code", "msg", "data"}`: `code` 0 is success. The token codes (99991661
//! missing, 99991663 invalid, 99991668 expired) make the caller refresh the token and try
//! once more, then [`PlatformError::Unauthorized`] naming `FEISHU_APP_SECRET`; 99991400 and
//! HTTP 429 are [`PlatformError::RateLimited`]; any other code is [`PlatformError::Api`]
//! with Feishu's `msg`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::settings::{FeishuSettings, PLATFORM};
use crate::platform::error::PlatformError;
use crate::platform::http::{MAX_API_BODY, network, read_limited, retry_after};

const CALL_TIMEOUT: Duration = Duration::from_secs(30);
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(300);
/// How long before its expiry a token is replaced.
const REFRESH_EARLY: Duration = Duration::from_secs(300);
/// The variable a refused app credential is fixed in.
pub(crate) const SECRET_VAR: &str = "FEISHU_APP_SECRET";
/// Token errors: the cached token is dropped and the call made once more.
const TOKEN_CODES: &[i64] = &[99991661, 99991663, 99991668];
const RATE_LIMIT_CODE: i64 = 99991400;

#[derive(Debug)]
struct Token {
    value: String,
    refresh_at: Instant,
}

/// An HTTP method of the calls below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

/// A request body.
pub(crate) enum Body {
    None,
    Json(Value),
    Form(Box<dyn Fn() -> reqwest::multipart::Form + Send + Sync>),
}

pub(crate) struct OpenApi {
    pub client: reqwest::Client,
    pub base: String,
    app_id: String,
    app_secret: String,
    token: Mutex<Option<Token>>,
}

impl std::fmt::Debug for OpenApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenApi")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl OpenApi {
    pub fn new(client: reqwest::Client, s: &FeishuSettings) -> OpenApi {
        OpenApi {
            client,
            base: s.base_url.clone(),
            app_id: s.app_id.clone(),
            app_secret: s.app_secret.clone(),
            token: Mutex::new(None),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The cached tenant token, fetched when missing or about to expire.
    async fn token(&self) -> Result<String, PlatformError> {
        let mut cached = self.token.lock().await;
        if let Some(t) = cached.as_ref()
            && Instant::now() < t.refresh_at
        {
            return Ok(t.value.clone());
        }
        let response = self
            .client
            .post(self.url("/open-apis/auth/v3/tenant_access_token/internal"))
            .json(&json!({"app_id": self.app_id, "app_secret": self.app_secret}))
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = read_limited(PLATFORM, response, MAX_API_BODY).await?;
        let answer = match classify("tenant_access_token", status, &headers, &body) {
            Ok(v) => v,
            // Any refusal of the app credentials is the credentials.
            Err(PlatformError::Api { message, .. }) => {
                return Err(PlatformError::Unauthorized {
                    platform: PLATFORM,
                    hint: SECRET_VAR,
                    message,
                });
            }
            Err(e) => return Err(e),
        };
        let value = answer["tenant_access_token"]
            .as_str()
            .filter(|t| !t.is_empty() && t.len() <= 4096)
            .ok_or(PlatformError::Protocol {
                platform: PLATFORM,
                message: "tenant_access_token: no token in the answer".into(),
            })?
            .to_string();
        let expire = Duration::from_secs(answer["expire"].as_u64().unwrap_or(7200).min(86_400));
        *cached = Some(Token {
            value: value.clone(),
            refresh_at: Instant::now() + expire.saturating_sub(REFRESH_EARLY),
        });
        Ok(value)
    }

    async fn forget_token(&self) {
        *self.token.lock().await = None;
    }

    async fn send_once(
        &self,
        method: Method,
        path: &str,
        body: &Body,
    ) -> Result<reqwest::Response, PlatformError> {
        let token = self.token().await?;
        let url = self.url(path);
        let request = match method {
            Method::Get => self.client.get(url),
            Method::Post => self.client.post(url),
            Method::Put => self.client.put(url),
            Method::Patch => self.client.patch(url),
            Method::Delete => self.client.delete(url),
        };
        let request = request.bearer_auth(token);
        let request = match body {
            Body::None => request.timeout(CALL_TIMEOUT),
            Body::Json(v) => request
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/json; charset=utf-8",
                )
                .body(v.to_string())
                .timeout(CALL_TIMEOUT),
            Body::Form(form) => request.multipart(form()).timeout(UPLOAD_TIMEOUT),
        };
        request.send().await.map_err(|e| network(PLATFORM, e))
    }

    /// A `GET` of a file with the current token, for [`download::fetch`] to stream.
    ///
    /// [`download::fetch`]: crate::platform::download::fetch
    pub async fn file_request(&self, path: &str) -> Result<reqwest::RequestBuilder, PlatformError> {
        let token = self.token().await?;
        Ok(self.client.get(self.url(path)).bearer_auth(token))
    }

    /// One JSON call: the answer's `data` (the whole answer when it has none).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Body,
        what: &str,
    ) -> Result<Value, PlatformError> {
        let mut refreshed = false;
        loop {
            let response = self.send_once(method, path, &body).await?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let bytes = read_limited(PLATFORM, response, MAX_API_BODY).await?;
            match classify(what, status, &headers, &bytes) {
                Err(PlatformError::Unauthorized { .. }) if !refreshed => {
                    refreshed = true;
                    self.forget_token().await;
                }
                Err(e) => return Err(e),
                Ok(answer) => {
                    return Ok(match answer.get("data") {
                        Some(data) if !data.is_null() => data.clone(),
                        _ => answer,
                    });
                }
            }
        }
    }
}

/// A Feishu answer: its JSON when `code` is 0, else the typed error.
pub(crate) fn classify(
    what: &str,
    status: u16,
    headers: &reqwest::header::HeaderMap,
    body: &[u8],
) -> Result<Value, PlatformError> {
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let code = json["code"].as_i64();
    if (200..300).contains(&status) && code == Some(0) {
        return Ok(json);
    }
    let msg: String = json["msg"]
        .as_str()
        .unwrap_or("no message")
        .chars()
        .take(500)
        .collect();
    let detail = match code {
        Some(code) => format!("{what}: code {code} (HTTP {status}): {msg}"),
        None if (200..300).contains(&status) => {
            return Err(PlatformError::Protocol {
                platform: PLATFORM,
                message: format!("{what}: HTTP {status} without a code"),
            });
        }
        None => format!("{what}: HTTP {status}"),
    };
    if status == 429 || code == Some(RATE_LIMIT_CODE) {
        return Err(PlatformError::RateLimited {
            platform: PLATFORM,
            retry_after: retry_after(headers)
                .or_else(|| {
                    // Feishu says when the window resets.
                    headers
                        .get("x-ogw-ratelimit-reset")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(|s| Duration::from_secs(s.min(3600)))
                })
                .unwrap_or(Duration::from_secs(1)),
        });
    }
    if status == 401 || code.is_some_and(|c| TOKEN_CODES.contains(&c)) {
        return Err(PlatformError::Unauthorized {
            platform: PLATFORM,
            hint: SECRET_VAR,
            message: detail,
        });
    }
    Err(PlatformError::Api {
        platform: PLATFORM,
        status,
        message: detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderMap;

    fn err(status: u16, code: i64) -> PlatformError {
        let body = json!({"code": code, "msg": "the msg", "data": {}});
        classify(
            "POST messages",
            status,
            &HeaderMap::new(),
            body.to_string().as_bytes(),
        )
        .unwrap_err()
    }

    #[test]
    fn feishu_codes_are_typed() {
        for code in [99991663, 99991661] {
            match err(400, code) {
                PlatformError::Unauthorized { hint, message, .. } => {
                    assert_eq!(hint, SECRET_VAR);
                    assert!(message.contains(&code.to_string()), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(
            err(400, 99991400),
            PlatformError::RateLimited { .. }
        ));
        assert!(matches!(err(429, 1), PlatformError::RateLimited { .. }));
        match err(400, 230001) {
            PlatformError::Api {
                status, message, ..
            } => {
                assert_eq!(status, 400);
                assert!(
                    message.contains("the msg") && message.contains("230001"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        // Code 0 with HTTP 200 is the only success.
        let ok = classify(
            "x",
            200,
            &HeaderMap::new(),
            br#"{"code":0,"msg":"ok","data":{"a":1}}"#,
        );
        assert_eq!(ok.unwrap()["data"]["a"], 1);
        assert!(matches!(
            err(200, 230002),
            PlatformError::Api { status: 200, .. }
        ));
    }

    #[test]
    fn hostile_answers_do_not_panic() {
        let h = HeaderMap::new();
        assert!(classify("x", 200, &h, b"\xff\xfe").is_err());
        assert!(classify("x", 200, &h, b"").is_err());
        assert!(matches!(
            classify("x", 502, &h, b"<html>").unwrap_err(),
            PlatformError::Api { status: 502, .. }
        ));
        assert!(classify("x", 200, &h, br#"{"code": "0"}"#).is_err());
        let long = format!(r#"{{"code": 1, "msg": "{}"}}"#, "é".repeat(100_000));
        match classify("x", 400, &h, long.as_bytes()).unwrap_err() {
            PlatformError::Api { message, .. } => assert!(message.chars().count() < 600),
            other => panic!("{other:?}"),
        }
    }
}
