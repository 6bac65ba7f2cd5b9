//! Discord's REST API (v10) with its rate limits
//! (<https://discord.com/developers/docs/topics/rate-limits>): each route's bucket is tracked
//! from the `X-RateLimit-Remaining` / `X-RateLimit-Reset-After` headers, so a request on an
//! exhausted bucket waits for the reset instead of earning a 429; a 429 still reports its
//! `retry_after` (the callers retry through [`with_rate_limit`](crate::platform::http)).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::settings::{DiscordSettings, PLATFORM};
use crate::platform::error::PlatformError;
use crate::platform::http::{MAX_API_BODY, network, read_limited, retry_after};

const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Buckets remembered at most (routes are per channel).
const MAX_BUCKETS: usize = 1024;

/// The request body.
pub(crate) enum Body {
    None,
    Json(Value),
    Multipart(reqwest::multipart::Form),
}

#[derive(Debug)]
pub(crate) struct Rest {
    client: reqwest::Client,
    base_url: String,
    token: String,
    max_wait: Duration,
    /// Route key -> when its exhausted bucket resets.
    blocked: Mutex<HashMap<String, Instant>>,
}

/// The rate-limit route of a request: the method and path with ids replaced, except the
/// channel id (a major parameter, which has its own buckets).
pub(crate) fn route_key(method: &reqwest::Method, path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 8);
    out.push_str(method.as_str());
    out.push(' ');
    let mut previous = "";
    for segment in path.trim_start_matches('/').split('/') {
        out.push('/');
        let is_id = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
        if is_id && !matches!(previous, "channels" | "guilds" | "webhooks") {
            out.push_str("{id}");
        } else {
            out.push_str(segment);
        }
        previous = segment;
    }
    out
}

impl Rest {
    pub fn new(client: reqwest::Client, settings: &DiscordSettings) -> Rest {
        Rest {
            client,
            base_url: settings.base_url.clone(),
            token: settings.token.clone(),
            max_wait: settings.max_rate_limit_wait,
            blocked: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for the route's bucket when it is known to be empty.
    async fn wait_for_bucket(&self, key: &str) -> Result<(), PlatformError> {
        let until = self
            .blocked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .copied();
        if let Some(until) = until {
            let now = Instant::now();
            if until > now {
                let wait = until - now;
                if wait > self.max_wait {
                    return Err(PlatformError::RateLimited {
                        platform: PLATFORM,
                        retry_after: wait,
                    });
                }
                tokio::time::sleep(wait).await;
            }
        }
        Ok(())
    }

    fn note_bucket(&self, key: &str, headers: &reqwest::header::HeaderMap) {
        let get = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
        };
        let remaining = get("x-ratelimit-remaining").and_then(|v| v.parse::<u64>().ok());
        let reset_after = get("x-ratelimit-reset-after")
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Duration::from_secs_f64(s.min(3600.0)));
        let mut blocked = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        match (remaining, reset_after) {
            (Some(0), Some(after)) => {
                if blocked.len() >= MAX_BUCKETS {
                    let now = Instant::now();
                    blocked.retain(|_, until| *until > now);
                }
                blocked.insert(key.to_string(), Instant::now() + after);
            }
            (Some(_), _) => {
                blocked.remove(key);
            }
            _ => {}
        }
    }

    /// One request; the JSON answer (`None` for 204).
    pub async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Body,
    ) -> Result<Option<Value>, PlatformError> {
        let key = route_key(&method, path);
        self.wait_for_bucket(&key).await?;
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base_url))
            .header(
                reqwest::header::AUTHORIZATION,
                format!("Bot {}", self.token),
            )
            .timeout(CALL_TIMEOUT);
        request = match body {
            Body::None => request,
            Body::Json(v) => request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(v.to_string()),
            Body::Multipart(form) => request.multipart(form).timeout(Duration::from_secs(300)),
        };
        let response = request.send().await.map_err(|e| network(PLATFORM, e))?;
        let status = response.status().as_u16();
        self.note_bucket(&key, response.headers());
        let header_wait = retry_after(response.headers());
        let bytes = read_limited(PLATFORM, response, MAX_API_BODY).await?;
        if status == 204 {
            return Ok(None);
        }
        let json: Option<Value> = serde_json::from_slice(&bytes).ok();
        if (200..300).contains(&status) {
            return json.map(Some).ok_or_else(|| PlatformError::Protocol {
                platform: PLATFORM,
                message: format!("{path}: answer is not JSON"),
            });
        }
        if status == 429 {
            let wait = json
                .as_ref()
                .and_then(|j| j["retry_after"].as_f64())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| Duration::from_secs_f64(s.min(86_400.0)))
                .or(header_wait)
                .unwrap_or(Duration::from_secs(1));
            return Err(PlatformError::RateLimited {
                platform: PLATFORM,
                retry_after: wait,
            });
        }
        let message = match &json {
            Some(j) => match (j["message"].as_str(), j["code"].as_u64()) {
                (Some(m), Some(c)) => format!("{m} (code {c})"),
                (Some(m), None) => m.to_string(),
                _ => format!("HTTP {status}"),
            },
            None => format!("HTTP {status}"),
        };
        Err(match status {
            401 => PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "DISCORD_BOT_TOKEN",
                message,
            },
            _ => PlatformError::Api {
                platform: PLATFORM,
                status,
                message: format!("{path}: {message}"),
            },
        })
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_keep_the_channel_and_hide_other_ids() {
        assert_eq!(
            route_key(&reqwest::Method::PATCH, "/channels/123/messages/456"),
            "PATCH /channels/123/messages/{id}"
        );
        assert_eq!(
            route_key(&reqwest::Method::POST, "/interactions/9/tok/callback"),
            "POST /interactions/{id}/tok/callback"
        );
    }
}
