//! The Mattermost REST API v4 (<https://api.mattermost.com>): `<url>/api/v4/<path>` with
//! `Authorization: Bearer <token>`; errors are JSON `{"id", "message", "status_code"}` with
//! the HTTP status, rate limits HTTP 429 with `Retry-After` (or `X-Ratelimit-Reset`).

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use super::settings::PLATFORM;
use crate::platform::error::PlatformError;
use crate::platform::http::{MAX_API_BODY, network, read_limited, retry_after};

const CALL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub(crate) struct RestApi {
    pub client: reqwest::Client,
    pub url: String,
    pub token: String,
}

impl RestApi {
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}/api/v4/{}", self.url, path.trim_start_matches('/'))
    }

    /// `method path` with an optional JSON body; the answer's JSON.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, PlatformError> {
        let mut request = self
            .client
            .request(method.clone(), self.endpoint(path))
            .bearer_auth(&self.token)
            .timeout(CALL_TIMEOUT);
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.map_err(|e| network(PLATFORM, e))?;
        decode(&format!("{method} {path}"), response).await
    }

    /// `POST /files`: uploads one file to `channel_id`; its file id.
    pub async fn upload(
        &self,
        channel_id: &str,
        name: &str,
        bytes: Vec<u8>,
    ) -> Result<String, PlatformError> {
        let form = reqwest::multipart::Form::new()
            .text("channel_id", channel_id.to_string())
            .part(
                "files",
                reqwest::multipart::Part::bytes(bytes).file_name(name.to_string()),
            );
        let response = self
            .client
            .post(self.endpoint("files"))
            .bearer_auth(&self.token)
            .multipart(form)
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        let answer = decode("POST files", response).await?;
        answer["file_infos"][0]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| PlatformError::Protocol {
                platform: PLATFORM,
                message: "POST files gave no file id".into(),
            })
    }
}

async fn decode(what: &str, response: reqwest::Response) -> Result<Value, PlatformError> {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = read_limited(PLATFORM, response, MAX_API_BODY).await?;
    if status == 429 {
        let reset = headers
            .get("x-ratelimit-reset")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        return Err(PlatformError::RateLimited {
            platform: PLATFORM,
            retry_after: retry_after(&headers)
                .or(reset)
                .unwrap_or(Duration::from_secs(1)),
        });
    }
    let json: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).map_err(|_| PlatformError::Api {
            platform: PLATFORM,
            status,
            message: format!("{what}: HTTP {status}, not a Mattermost answer"),
        })?
    };
    if (200..300).contains(&status) {
        return Ok(json);
    }
    let message = json["message"]
        .as_str()
        .or(json["id"].as_str())
        .unwrap_or("no error message")
        .to_string();
    Err(match status {
        401 => PlatformError::Unauthorized {
            platform: PLATFORM,
            hint: "MATTERMOST_TOKEN",
            message: format!("{what}: {message}"),
        },
        _ => PlatformError::Api {
            platform: PLATFORM,
            status,
            message: format!("{what}: {message}"),
        },
    })
}
