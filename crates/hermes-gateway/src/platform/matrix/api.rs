//! A thin client of the Matrix client-server API (<https://spec.matrix.org/latest/client-server-api/>):
//! requests with the bearer token, path segments percent-encoded (room ids hold `!` and `:`),
//! bounded JSON answers, and the standard error body `{"errcode", "error", "retry_after_ms"}`
//! mapped to typed errors (`M_UNKNOWN_TOKEN` / `M_MISSING_TOKEN` are rejected credentials,
//! `M_LIMIT_EXCEEDED` a rate limit). Our serde types for the parts of `/sync` the adapter
//! reads.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::settings::PLATFORM;
use crate::platform::error::PlatformError;
use crate::platform::http::{MAX_API_BODY, network, read_limited, retry_after};

/// Timeout of an ordinary call.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) struct Api {
    pub client: reqwest::Client,
    base: reqwest::Url,
    token: Mutex<Option<String>>,
    /// The variable to fix when the server rejects the credentials.
    hint: &'static str,
}

#[derive(Debug, Deserialize)]
struct MatrixErrorBody {
    #[serde(default)]
    errcode: String,
    #[serde(default)]
    error: String,
    retry_after_ms: Option<u64>,
}

impl Api {
    pub fn new(client: reqwest::Client, homeserver: &str, hint: &'static str) -> Option<Api> {
        Some(Api {
            client,
            base: reqwest::Url::parse(homeserver).ok()?,
            token: Mutex::new(None),
            hint,
        })
    }

    pub fn set_token(&self, token: Option<String>) {
        *self.token.lock().unwrap_or_else(PoisonError::into_inner) = token;
    }

    pub fn has_token(&self) -> bool {
        self.token
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    fn bearer(&self) -> Option<String> {
        self.token
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `base` + the segments, each percent-encoded as one segment.
    pub fn url(&self, segments: &[&str]) -> Result<reqwest::Url, PlatformError> {
        let mut url = self.base.clone();
        {
            let mut path = url
                .path_segments_mut()
                .map_err(|_| PlatformError::Invalid {
                    platform: PLATFORM,
                    message: "the homeserver URL cannot take a path".into(),
                })?;
            path.pop_if_empty();
            for s in segments {
                path.push(s);
            }
        }
        Ok(url)
    }

    /// `/_matrix/client/v3/<segments>`.
    pub fn client_url(&self, segments: &[&str]) -> Result<reqwest::Url, PlatformError> {
        let mut all = vec!["_matrix", "client", "v3"];
        all.extend_from_slice(segments);
        self.url(&all)
    }

    /// A request with the bearer token when there is one.
    pub fn request(&self, method: reqwest::Method, url: reqwest::Url) -> reqwest::RequestBuilder {
        let builder = self.client.request(method, url);
        match self.bearer() {
            Some(token) => builder.bearer_auth(token),
            None => builder,
        }
    }

    /// Sends `builder` and reads the JSON answer (or the Matrix error).
    pub async fn send<T: DeserializeOwned>(
        &self,
        builder: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<T, PlatformError> {
        let response = builder
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        let status = response.status();
        let wait = retry_after(response.headers());
        let body = read_limited(PLATFORM, response, MAX_API_BODY).await?;
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|e| PlatformError::Protocol {
                platform: PLATFORM,
                message: format!("unreadable answer: {e}"),
            });
        }
        let err: MatrixErrorBody =
            serde_json::from_slice(&body).unwrap_or_else(|_| MatrixErrorBody {
                errcode: String::new(),
                error: String::from_utf8_lossy(&body).chars().take(300).collect(),
                retry_after_ms: None,
            });
        Err(self.error(status.as_u16(), err, wait))
    }

    fn error(&self, status: u16, err: MatrixErrorBody, wait: Option<Duration>) -> PlatformError {
        let message = if err.errcode.is_empty() {
            format!("HTTP {status}: {}", err.error)
        } else {
            format!("{}: {}", err.errcode, err.error)
        };
        match (status, err.errcode.as_str()) {
            (_, "M_UNKNOWN_TOKEN" | "M_MISSING_TOKEN") | (401, _) => PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: self.hint,
                message,
            },
            (429, _) | (_, "M_LIMIT_EXCEEDED") => PlatformError::RateLimited {
                platform: PLATFORM,
                retry_after: err
                    .retry_after_ms
                    .map(Duration::from_millis)
                    .or(wait)
                    .unwrap_or(Duration::from_secs(1)),
            },
            _ => PlatformError::Api {
                platform: PLATFORM,
                status,
                message,
            },
        }
    }

    // The calls build their URL before returning the future, so the segments (often a
    // temporary array) need not outlive it.

    pub fn get<'a, T: DeserializeOwned + 'a>(
        &'a self,
        segments: &[&str],
    ) -> impl Future<Output = Result<T, PlatformError>> + Send + 'a + use<'a, T> {
        let url = self.client_url(segments);
        async move {
            let request = self.request(reqwest::Method::GET, url?);
            self.send(request, CALL_TIMEOUT).await
        }
    }

    pub fn post<'a, T: DeserializeOwned + 'a>(
        &'a self,
        segments: &[&str],
        body: &'a Value,
    ) -> impl Future<Output = Result<T, PlatformError>> + Send + 'a + use<'a, T> {
        let url = self.client_url(segments);
        async move {
            let request = self.request(reqwest::Method::POST, url?).json(body);
            self.send(request, CALL_TIMEOUT).await
        }
    }

    pub fn put<'a, T: DeserializeOwned + 'a>(
        &'a self,
        segments: &[&str],
        body: &'a Value,
    ) -> impl Future<Output = Result<T, PlatformError>> + Send + 'a + use<'a, T> {
        let url = self.client_url(segments);
        async move {
            let request = self.request(reqwest::Method::PUT, url?).json(body);
            self.send(request, CALL_TIMEOUT).await
        }
    }
}

/// Whether an error is the server's "not found" (an absent state event).
pub(crate) fn is_not_found(e: &PlatformError) -> bool {
    matches!(e, PlatformError::Api { status: 404, .. })
}

/// One event as `/sync` gives it (only the fields the adapter reads).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Event {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub sender: String,
    #[serde(default)]
    pub event_id: String,
    pub state_key: Option<String>,
    #[serde(default)]
    pub content: Value,
    pub origin_server_ts: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Events {
    #[serde(default)]
    pub events: Vec<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct JoinedRoom {
    #[serde(default)]
    pub state: Events,
    #[serde(default)]
    pub timeline: Events,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct InvitedRoom {
    #[serde(default)]
    pub invite_state: Events,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Rooms {
    #[serde(default)]
    pub join: HashMap<String, JoinedRoom>,
    #[serde(default)]
    pub invite: HashMap<String, InvitedRoom>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SyncResponse {
    pub next_batch: String,
    #[serde(default)]
    pub rooms: Rooms,
    #[serde(default)]
    pub account_data: Events,
}

/// Reads one raw event; malformed ones are skipped by the caller.
pub(crate) fn event(raw: &Value) -> Option<Event> {
    serde_json::from_value(raw.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_ids_are_one_encoded_segment() {
        let api = Api::new(
            crate::platform::http::client(PLATFORM).unwrap(),
            "http://h:8008/base/",
            "X",
        )
        .unwrap();
        let url = api
            .client_url(&["rooms", "!abc:localhost", "send", "m.room.message", "t/1"])
            .unwrap();
        assert_eq!(
            url.as_str(),
            "http://h:8008/base/_matrix/client/v3/rooms/!abc:localhost/send/m.room.message/t%2F1"
        );
    }

    #[test]
    fn matrix_errors_become_typed_errors() {
        let api = Api::new(
            crate::platform::http::client(PLATFORM).unwrap(),
            "http://h",
            "MATRIX_ACCESS_TOKEN",
        )
        .unwrap();
        let e = api.error(
            401,
            MatrixErrorBody {
                errcode: "M_UNKNOWN_TOKEN".into(),
                error: "Invalid access token".into(),
                retry_after_ms: None,
            },
            None,
        );
        assert!(matches!(
            e,
            PlatformError::Unauthorized {
                hint: "MATRIX_ACCESS_TOKEN",
                ..
            }
        ));
        let e = api.error(
            429,
            MatrixErrorBody {
                errcode: "M_LIMIT_EXCEEDED".into(),
                error: String::new(),
                retry_after_ms: Some(1500),
            },
            None,
        );
        assert!(
            matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_millis(1500))
        );
        let e = api.error(
            404,
            MatrixErrorBody {
                errcode: "M_NOT_FOUND".into(),
                error: "no".into(),
                retry_after_ms: None,
            },
            None,
        );
        assert!(is_not_found(&e));
    }
}
