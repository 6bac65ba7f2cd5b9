//! JSON-RPC 2.0 over `POST /api/v1/rpc` of `signal-cli daemon --http`
//! (`signal-cli-jsonrpc(5)`): one request per call, `params` in camelCase as the CLI's
//! options, the answer's `result` or its `error` (`{code, message, data}`) as a typed error.
//! A `send` can succeed as a call yet fail per recipient (`results[].type` other than
//! `SUCCESS`); that is an error too, and `RATE_LIMIT_FAILURE` a rate limit. Bodies are read
//! up to a cap given per call (attachments come back base64 inside the JSON).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::settings::PLATFORM;
use crate::platform::error::PlatformError;
use crate::platform::http::{network, read_limited};

/// How long one call may take (a send to a large group waits for every recipient).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// When signal-cli reports a rate limit without saying how long.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The daemon's JSON-RPC endpoint.
#[derive(Debug)]
pub(crate) struct Rpc {
    pub client: reqwest::Client,
    pub url: String,
    next_id: AtomicU64,
}

impl Rpc {
    pub fn new(client: reqwest::Client, http_url: &str) -> Rpc {
        Rpc {
            client,
            url: format!("{http_url}/api/v1/rpc"),
            next_id: AtomicU64::new(1),
        }
    }

    /// Calls `method` with `params`; the `result` (null when the daemon gave none).
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        max_body: usize,
    ) -> Result<Value, PlatformError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id});
        let response = self
            .client
            .post(&self.url)
            .json(&request)
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        let status = response.status().as_u16();
        // 201: the daemon had no answer to give (a notification).
        if status == 201 {
            return Ok(Value::Null);
        }
        let body = read_limited(PLATFORM, response, max_body).await?;
        if !(200..300).contains(&status) {
            return Err(PlatformError::Api {
                platform: PLATFORM,
                status,
                message: format!(
                    "{method}: HTTP {status} {}",
                    String::from_utf8_lossy(&body[..body.len().min(200)])
                ),
            });
        }
        let answer: Value = serde_json::from_slice(&body).map_err(|e| PlatformError::Protocol {
            platform: PLATFORM,
            message: format!("{method}: the answer is not JSON: {e}"),
        })?;
        if let Some(error) = answer.get("error").filter(|e| !e.is_null()) {
            return Err(rpc_error(method, error));
        }
        let result = answer.get("result").cloned().unwrap_or(Value::Null);
        check_send_results(method, &result)?;
        Ok(result)
    }
}

/// Signal's rate limit as signal-cli reports it: `[429]` or `RateLimitException` in the
/// message (Python's `_is_signal_rate_limit_error`).
fn is_rate_limit(message: &str) -> bool {
    message.contains("[429]") || message.contains("RateLimitException")
}

/// A JSON-RPC error object as a [`PlatformError`].
fn rpc_error(method: &str, error: &Value) -> PlatformError {
    let message = error["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string());
    if is_rate_limit(&message) {
        return PlatformError::RateLimited {
            platform: PLATFORM,
            retry_after: retry_after_in(&error["data"]).unwrap_or(DEFAULT_RETRY_AFTER),
        };
    }
    let code = error["code"].as_i64().unwrap_or_default();
    PlatformError::Api {
        platform: PLATFORM,
        status: 0,
        message: format!("{method}: {message} (code {code})"),
    }
}

/// `retryAfterSeconds` anywhere in an error's data or a send result.
fn retry_after_in(value: &Value) -> Option<Duration> {
    let direct = value["retryAfterSeconds"].as_u64();
    let nested = || {
        value["response"]["results"]
            .as_array()?
            .iter()
            .find_map(|r| r["retryAfterSeconds"].as_u64())
    };
    direct
        .or_else(nested)
        .map(|s| Duration::from_secs(s.min(86_400)))
}

/// A send's per-recipient results: any failure is the call's failure.
fn check_send_results(method: &str, result: &Value) -> Result<(), PlatformError> {
    let Some(results) = result["results"].as_array() else {
        return Ok(());
    };
    for r in results {
        let kind = r["type"].as_str().unwrap_or("SUCCESS");
        if kind == "SUCCESS" {
            continue;
        }
        if kind == "RATE_LIMIT_FAILURE" {
            return Err(PlatformError::RateLimited {
                platform: PLATFORM,
                retry_after: retry_after_in(r).unwrap_or(DEFAULT_RETRY_AFTER),
            });
        }
        return Err(PlatformError::Api {
            platform: PLATFORM,
            status: 0,
            message: format!("{method}: delivery failed: {kind}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_failed_recipients_are_typed() {
        let e = rpc_error(
            "send",
            &json!({"code": -1, "message": "Invalid group id", "data": null}),
        );
        assert!(matches!(e, PlatformError::Api { .. }), "{e}");
        assert!(e.to_string().contains("Invalid group id"));
        let e = rpc_error(
            "send",
            &json!({"code": -5, "message": "Failed: [429] Rate limit exceeded", "data": {"retryAfterSeconds": 7}}),
        );
        assert!(
            matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_secs(7))
        );
        assert!(check_send_results("send", &json!({"timestamp": 1})).is_ok());
        assert!(
            check_send_results(
                "send",
                &json!({"results": [{"type": "SUCCESS"}, {"type": "UNREGISTERED_FAILURE"}]})
            )
            .unwrap_err()
            .to_string()
            .contains("UNREGISTERED_FAILURE")
        );
        assert!(matches!(
            check_send_results(
                "send",
                &json!({"results": [{"type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 3}]})
            ),
            Err(PlatformError::RateLimited { retry_after, .. }) if retry_after == Duration::from_secs(3)
        ));
    }
}
