//! DingTalk's server API (<https://open.dingtalk.com/document/orgapp/>): the Stream gateway's
//! `POST /v1.0/gateway/connections/open` (client id and secret → a WebSocket endpoint and a
//! one-time ticket), the app access token (`POST /v1.0/oauth2/accessToken`, cached until five
//! minutes before it expires, dropped when a call says it is invalid), and the robot's calls
//! with it in `x-acs-dingtalk-access-token`: group and one-to-one sends and the download URL
//! of a file a user sent. Errors are `{"code", "message", "requestid"}` with an HTTP status.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::settings::{DingTalkSettings, PLATFORM};
use crate::platform::error::PlatformError;
use crate::platform::http;

/// A token is renewed this long before DingTalk says it expires (the SDK's margin).
const TOKEN_MARGIN: Duration = Duration::from_secs(300);
/// The Stream topic of messages to the robot.
pub(crate) const BOT_TOPIC: &str = "/v1.0/im/bot/messages/get";

/// Where the Stream connection goes.
#[derive(Debug, Clone)]
pub(crate) struct Ticket {
    pub endpoint: String,
    pub ticket: String,
}

impl Ticket {
    /// `endpoint?ticket=…` (the ticket URL-encoded, as the SDK does).
    pub fn url(&self) -> String {
        let sep = if self.endpoint.contains('?') {
            '&'
        } else {
            '?'
        };
        let ticket: String = form_urlencoded::byte_serialize(self.ticket.as_bytes()).collect();
        format!("{}{sep}ticket={ticket}", self.endpoint)
    }
}

pub(crate) struct OpenApi {
    client: reqwest::Client,
    settings: DingTalkSettings,
    token: Mutex<Option<(String, Instant)>>,
}

/// An error answer as a [`PlatformError`]: 401/403 and the codes of refused credentials
/// (`invalidClientIdOrSecret` comes with a 400) are the credentials, 429 a rate limit.
fn classify(what: &str, status: u16, body: &[u8]) -> PlatformError {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let code = v["code"].as_str().unwrap_or_default();
    let message = v["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
    let message = format!("{what}: {code} {message}").trim().to_string();
    let credentials = matches!(
        code,
        "invalidClientIdOrSecret" | "InvalidAuthentication" | "invalidAppKeyOrSecret"
    );
    match status {
        _ if credentials => PlatformError::Unauthorized {
            platform: PLATFORM,
            hint: "DINGTALK_CLIENT_ID / DINGTALK_CLIENT_SECRET",
            message,
        },
        401 | 403 => PlatformError::Unauthorized {
            platform: PLATFORM,
            hint: "DINGTALK_CLIENT_ID / DINGTALK_CLIENT_SECRET",
            message,
        },
        429 => PlatformError::RateLimited {
            platform: PLATFORM,
            retry_after: Duration::from_secs(1),
        },
        _ => PlatformError::Api {
            platform: PLATFORM,
            status,
            message,
        },
    }
}

impl OpenApi {
    pub fn new(client: reqwest::Client, settings: &DingTalkSettings) -> OpenApi {
        OpenApi {
            client,
            settings: settings.clone(),
            token: Mutex::new(None),
        }
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// POSTs JSON to `url` and reads the JSON answer (any 2xx), with `token` in DingTalk's header.
    pub async fn post(
        &self,
        what: &str,
        url: &str,
        token: Option<&str>,
        body: &Value,
    ) -> Result<Value, PlatformError> {
        let mut request = self
            .client
            .post(url)
            .timeout(Duration::from_secs(30))
            .json(body);
        if let Some(token) = token {
            request = request.header("x-acs-dingtalk-access-token", token);
        }
        let response = request
            .send()
            .await
            .map_err(|e| http::network(PLATFORM, e))?;
        let status = response.status().as_u16();
        let bytes = http::read_limited(PLATFORM, response, http::MAX_API_BODY).await?;
        if !(200..300).contains(&status) {
            return Err(classify(what, status, &bytes));
        }
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&bytes).map_err(|_| PlatformError::Protocol {
            platform: PLATFORM,
            message: format!("{what}: the answer is not JSON"),
        })
    }

    /// Registers a Stream connection: its endpoint and ticket.
    pub async fn open_connection(&self) -> Result<Ticket, PlatformError> {
        let s = &self.settings;
        let body = json!({
            "clientId": s.client_id,
            "clientSecret": s.client_secret,
            "subscriptions": [{"type": "CALLBACK", "topic": BOT_TOPIC}],
            "ua": concat!("hermes-rs/", env!("CARGO_PKG_VERSION")),
            "localIp": "",
        });
        let url = format!("{}/v1.0/gateway/connections/open", s.api_url);
        let answer = self
            .post("POST gateway/connections/open", &url, None, &body)
            .await?;
        match (answer["endpoint"].as_str(), answer["ticket"].as_str()) {
            (Some(endpoint), Some(ticket)) if !endpoint.is_empty() && !ticket.is_empty() => {
                Ok(Ticket {
                    endpoint: endpoint.to_string(),
                    ticket: ticket.to_string(),
                })
            }
            _ => Err(PlatformError::Protocol {
                platform: PLATFORM,
                message: "connections/open gave no endpoint and ticket".into(),
            }),
        }
    }

    /// The app's access token, cached.
    pub async fn token(&self) -> Result<String, PlatformError> {
        let mut cached = self.token.lock().await;
        if let Some((token, until)) = cached.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let s = &self.settings;
        let url = format!("{}/v1.0/oauth2/accessToken", s.api_url);
        let answer = self
            .post(
                "POST oauth2/accessToken",
                &url,
                None,
                &json!({"appKey": s.client_id, "appSecret": s.client_secret}),
            )
            .await?;
        let token = answer["accessToken"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or(PlatformError::Protocol {
                platform: PLATFORM,
                message: "oauth2/accessToken gave no accessToken".into(),
            })?
            .to_string();
        let life = Duration::from_secs(answer["expireIn"].as_u64().unwrap_or(7200));
        *cached = Some((
            token.clone(),
            Instant::now() + life.saturating_sub(TOKEN_MARGIN),
        ));
        Ok(token)
    }

    /// A robot API call with the token; a token DingTalk calls invalid is fetched again once.
    pub async fn call(&self, what: &str, path: &str, body: &Value) -> Result<Value, PlatformError> {
        let url = format!("{}{path}", self.settings.api_url);
        let token = self.token().await?;
        match self.post(what, &url, Some(&token), body).await {
            Err(PlatformError::Unauthorized { .. }) => {
                *self.token.lock().await = None;
                let token = self.token().await?;
                self.post(what, &url, Some(&token), body).await
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticket_urls_and_errors() {
        let t = Ticket {
            endpoint: "wss://wss-open-connection.dingtalk.com:443/connect".into(),
            ticket: "a+b/c=".into(),
        };
        assert_eq!(
            t.url(),
            "wss://wss-open-connection.dingtalk.com:443/connect?ticket=a%2Bb%2Fc%3D"
        );
        let e = classify(
            "POST x",
            401,
            br#"{"code":"InvalidAuthentication","message":"bad"}"#,
        );
        assert!(matches!(e, PlatformError::Unauthorized { .. }), "{e}");
        assert!(e.to_string().contains("InvalidAuthentication"));
        let e = classify(
            "POST x",
            400,
            br#"{"code":"invalidClientIdOrSecret","message":"bad"}"#,
        );
        assert!(matches!(e, PlatformError::Unauthorized { .. }), "{e}");
        let e = classify("POST x", 400, b"oops");
        assert!(e.to_string().contains("oops"), "{e}");
    }
}
