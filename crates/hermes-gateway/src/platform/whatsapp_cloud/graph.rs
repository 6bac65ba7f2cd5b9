//! The Graph API calls of the WhatsApp Cloud API
//! (<https://developers.facebook.com/docs/whatsapp/cloud-api/reference>), each with
//! `Authorization: Bearer <access token>`:
//!
//! - `POST /{version}/{phone-number-id}/messages`: text, media, interactive messages, and
//!   `{"status": "read", "message_id", "typing_indicator"}`; the answer is
//!   `{"messaging_product", "contacts": [{"input", "wa_id"}], "messages": [{"id": "wamid…"}]}`;
//! - `POST /{version}/{phone-number-id}/media` (multipart `file`, `type`,
//!   `messaging_product`) → `{"id"}`;
//! - `GET /{version}/{media-id}` → `{"url", "mime_type", "sha256", "file_size", "id"}`, then
//!   `GET <url>` with the token for the bytes;
//! - `GET /{version}/{phone-number-id}` → `{"display_phone_number", "verified_name", …}`.
//!
//! Errors are `{"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}`:
//! HTTP 401 or code 190 (the token expired or is wrong) become
//! [`PlatformError::Unauthorized`] naming `WHATSAPP_CLOUD_ACCESS_TOKEN`; the throttling
//! codes (4, 80007, 130429, 131048, 131056) and HTTP 429 become
//! [`PlatformError::RateLimited`].

use std::time::Duration;

use serde_json::Value;

use super::settings::{PLATFORM, WhatsAppCloudSettings};
use crate::platform::error::PlatformError;
use crate::platform::http::{MAX_API_BODY, network, read_limited, retry_after};

const CALL_TIMEOUT: Duration = Duration::from_secs(30);
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(300);
/// The variable a rejected token is fixed in.
pub(crate) const TOKEN_VAR: &str = "WHATSAPP_CLOUD_ACCESS_TOKEN";

/// What `GET /{media-id}` says about an inbound file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MediaInfo {
    pub url: String,
    pub mime: Option<String>,
    pub size: Option<u64>,
}

#[derive(Debug, Clone)]
pub(crate) struct Graph {
    pub client: reqwest::Client,
    /// `https://graph.facebook.com/v20.0`
    pub base: String,
    pub phone_number_id: String,
    pub token: String,
}

impl Graph {
    pub fn new(client: reqwest::Client, s: &WhatsAppCloudSettings) -> Graph {
        Graph {
            client,
            base: format!("{}/{}", s.graph_url, s.api_version),
            phone_number_id: s.phone_number_id.clone(),
            token: s.access_token.clone(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }

    /// `POST /{phone-number-id}/messages` with `body`; the answer's JSON.
    pub async fn messages(&self, body: &Value) -> Result<Value, PlatformError> {
        let response = self
            .client
            .post(self.url(&format!("{}/messages", self.phone_number_id)))
            .bearer_auth(&self.token)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        decode("POST messages", response).await
    }

    /// Sends one message; its `wamid`.
    pub async fn send(&self, body: &Value) -> Result<String, PlatformError> {
        let answer = self.messages(body).await?;
        answer["messages"][0]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| PlatformError::Protocol {
                platform: PLATFORM,
                message: "POST messages gave no message id".into(),
            })
    }

    /// `POST /{phone-number-id}/media`: the uploaded file's media id.
    pub async fn upload(
        &self,
        name: &str,
        mime: &str,
        bytes: Vec<u8>,
    ) -> Result<String, PlatformError> {
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name.to_string())
            .mime_str(mime)
            .map_err(|e| PlatformError::Invalid {
                platform: PLATFORM,
                message: format!("MIME type {mime:?}: {e}"),
            })?;
        let form = reqwest::multipart::Form::new()
            .text("messaging_product", "whatsapp")
            .text("type", mime.to_string())
            .part("file", part);
        let response = self
            .client
            .post(self.url(&format!("{}/media", self.phone_number_id)))
            .bearer_auth(&self.token)
            .multipart(form)
            .timeout(UPLOAD_TIMEOUT)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        let answer = decode("POST media", response).await?;
        answer["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| PlatformError::Protocol {
                platform: PLATFORM,
                message: "POST media gave no media id".into(),
            })
    }

    /// `GET /{media-id}`: where an inbound file's bytes are (a URL valid for minutes).
    pub async fn media_info(&self, media_id: &str) -> Result<MediaInfo, PlatformError> {
        let answer = self.get(media_id, "GET media").await?;
        let url = answer["url"]
            .as_str()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| PlatformError::Protocol {
                platform: PLATFORM,
                message: "GET media gave no url".into(),
            })?
            .to_string();
        let size = match &answer["file_size"] {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        Ok(MediaInfo {
            url,
            mime: answer["mime_type"].as_str().map(str::to_string),
            size,
        })
    }

    /// `GET /{phone-number-id}`: the business number's profile.
    pub async fn phone_number(&self) -> Result<Value, PlatformError> {
        self.get(&self.phone_number_id, "GET phone number").await
    }

    async fn get(&self, path: &str, what: &str) -> Result<Value, PlatformError> {
        let response = self
            .client
            .get(self.url(path))
            .bearer_auth(&self.token)
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        decode(what, response).await
    }
}

/// A Graph error body's parts.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct GraphError {
    pub message: String,
    pub code: Option<i64>,
    pub subcode: Option<i64>,
}

impl GraphError {
    pub fn parse(body: &Value) -> GraphError {
        let e = &body["error"];
        GraphError {
            message: e["message"]
                .as_str()
                .map(|m| m.chars().take(500).collect())
                .unwrap_or_else(|| "no error message".into()),
            code: e["code"].as_i64(),
            subcode: e["error_subcode"].as_i64(),
        }
    }
}

/// How long to wait for each throttling code when Meta gives no `Retry-After`: the pair
/// limit allows about one message every six seconds to one user; the app and account limits
/// are hourly, so those are reported rather than waited out.
fn throttle_wait(code: i64) -> Option<Duration> {
    match code {
        130429 => Some(Duration::from_secs(1)),
        131056 => Some(Duration::from_secs(6)),
        131048 => Some(Duration::from_secs(60)),
        4 | 80007 => Some(Duration::from_secs(300)),
        _ => None,
    }
}

/// A Graph answer: its JSON on 2xx, else the typed error.
pub(crate) fn classify(
    what: &str,
    status: u16,
    headers: &reqwest::header::HeaderMap,
    body: &[u8],
) -> Result<Value, PlatformError> {
    let json: Value = if body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) if (200..300).contains(&status) => {
                return Err(PlatformError::Protocol {
                    platform: PLATFORM,
                    message: format!("{what}: HTTP {status}, not JSON"),
                });
            }
            Err(_) => Value::Null,
        }
    };
    if (200..300).contains(&status) && json.get("error").is_none() {
        return Ok(json);
    }
    let err = GraphError::parse(&json);
    let mut detail = match err.code {
        Some(code) => format!(
            "{what}: graph error {code} (HTTP {status}): {}",
            err.message
        ),
        None => format!("{what}: HTTP {status}: {}", err.message),
    };
    if let Some(sub) = err.subcode {
        detail.push_str(&format!(" (subcode {sub})"));
    }
    if status == 401 || err.code == Some(190) {
        return Err(PlatformError::Unauthorized {
            platform: PLATFORM,
            hint: TOKEN_VAR,
            message: detail,
        });
    }
    let throttled = err.code.and_then(throttle_wait);
    if status == 429 || throttled.is_some() {
        return Err(PlatformError::RateLimited {
            platform: PLATFORM,
            retry_after: retry_after(headers)
                .or(throttled)
                .unwrap_or(Duration::from_secs(1)),
        });
    }
    Err(PlatformError::Api {
        platform: PLATFORM,
        status,
        message: detail,
    })
}

async fn decode(what: &str, response: reqwest::Response) -> Result<Value, PlatformError> {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = read_limited(PLATFORM, response, MAX_API_BODY).await?;
    classify(what, status, &headers, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderMap;
    use serde_json::json;

    fn err(status: u16, code: i64) -> PlatformError {
        let body = json!({"error": {"message": "m", "type": "OAuthException", "code": code, "error_subcode": 2494010, "fbtrace_id": "A"}});
        classify(
            "POST messages",
            status,
            &HeaderMap::new(),
            body.to_string().as_bytes(),
        )
        .unwrap_err()
    }

    #[test]
    fn graph_errors_are_typed() {
        match err(401, 190) {
            PlatformError::Unauthorized { hint, message, .. } => {
                assert_eq!(hint, TOKEN_VAR);
                assert!(message.contains("graph error 190"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // A token error Meta reports with HTTP 400 is still the token.
        assert!(matches!(err(400, 190), PlatformError::Unauthorized { .. }));
        match err(400, 131056) {
            PlatformError::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Duration::from_secs(6))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            err(429, 130429),
            PlatformError::RateLimited { .. }
        ));
        match err(400, 100) {
            PlatformError::Api {
                status, message, ..
            } => {
                assert_eq!(status, 400);
                assert!(message.contains("subcode 2494010"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hostile_answers_do_not_panic() {
        let h = HeaderMap::new();
        assert!(classify("x", 200, &h, b"\xff\xfe").is_err());
        assert!(matches!(
            classify("x", 500, &h, b"<html>").unwrap_err(),
            PlatformError::Api { status: 500, .. }
        ));
        assert!(classify("x", 200, &h, b"").unwrap().is_null());
        assert!(classify("x", 200, &h, br#"{"error": "x"}"#).is_err());
        assert!(matches!(
            classify("x", 502, &h, br#"{"error": {"code": "nan"}}"#).unwrap_err(),
            PlatformError::Api { .. }
        ));
    }
}
