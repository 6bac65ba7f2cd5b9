//! The Slack Web API (<https://docs.slack.dev/reference/methods>): `POST <base>/<method>` with
//! a JSON body (or a form for the methods that only read forms) and `Authorization: Bearer`;
//! errors come as `{"ok": false, "error": "..."}` with HTTP 200, rate limits as HTTP 429
//! with `Retry-After`.

use std::time::Duration;

use serde_json::Value;

use super::settings::PLATFORM;
use crate::platform::error::PlatformError;
use crate::platform::http::{MAX_API_BODY, network, read_limited, retry_after};

const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Which token a call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token {
    Bot,
    App,
}

#[derive(Debug, Clone)]
pub(crate) struct WebApi {
    pub client: reqwest::Client,
    pub base_url: String,
    pub bot_token: String,
    pub app_token: String,
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

impl WebApi {
    fn token(&self, which: Token) -> &str {
        match which {
            Token::Bot => &self.bot_token,
            Token::App => &self.app_token,
        }
    }

    /// Calls `method` with a JSON body.
    pub async fn call(
        &self,
        method: &str,
        body: &Value,
        token: Token,
    ) -> Result<Value, PlatformError> {
        let response = self
            .client
            .post(format!("{}/{method}", self.base_url))
            .bearer_auth(self.token(token))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/json; charset=utf-8",
            )
            .body(body.to_string())
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        Self::decode(method, token, response).await
    }

    /// Calls `method` with form parameters (methods that do not read JSON bodies).
    pub async fn call_form(
        &self,
        method: &str,
        pairs: &[(&str, String)],
        token: Token,
    ) -> Result<Value, PlatformError> {
        let body = pairs
            .iter()
            .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let response = self
            .client
            .post(format!("{}/{method}", self.base_url))
            .bearer_auth(self.token(token))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        Self::decode(method, token, response).await
    }

    async fn decode(
        method: &str,
        token: Token,
        response: reqwest::Response,
    ) -> Result<Value, PlatformError> {
        let status = response.status().as_u16();
        let wait = retry_after(response.headers());
        let body = read_limited(PLATFORM, response, MAX_API_BODY).await?;
        if status == 429 {
            return Err(PlatformError::RateLimited {
                platform: PLATFORM,
                retry_after: wait.unwrap_or(Duration::from_secs(1)),
            });
        }
        let json: Value = serde_json::from_slice(&body).map_err(|_| PlatformError::Api {
            platform: PLATFORM,
            status,
            message: format!("{method}: HTTP {status}, not a Slack answer"),
        })?;
        if json["ok"] == Value::Bool(true) {
            return Ok(json);
        }
        let error = json["error"]
            .as_str()
            .unwrap_or("unknown_error")
            .to_string();
        let hint = match token {
            Token::Bot => "SLACK_BOT_TOKEN",
            Token::App => "SLACK_APP_TOKEN",
        };
        Err(match error.as_str() {
            "invalid_auth"
            | "not_authed"
            | "account_inactive"
            | "token_revoked"
            | "token_expired"
            | "not_allowed_token_type" => PlatformError::Unauthorized {
                platform: PLATFORM,
                hint,
                message: format!("{method}: {error}"),
            },
            "ratelimited" => PlatformError::RateLimited {
                platform: PLATFORM,
                retry_after: wait.unwrap_or(Duration::from_secs(1)),
            },
            _ => PlatformError::Api {
                platform: PLATFORM,
                status: if status == 200 { 0 } else { status },
                message: format!("{method}: {error}"),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::form_encode;

    #[test]
    fn form_values_are_percent_encoded() {
        assert_eq!(form_encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
