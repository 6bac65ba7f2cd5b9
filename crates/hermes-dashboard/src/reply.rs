//! How handlers answer: JSON bodies, errors as the Python dashboard's `{"detail": "..."}`,
//! request bodies read as JSON within the size cap, and work on files and databases run on the
//! blocking pool under a deadline so a locked database cannot hold a request for ever.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The largest request body (a config.yaml or memory file edit fits many times over).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// How long a client may take to send a request's body once its headers are in.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one request's file and database work may take.
pub const WORK_TIMEOUT: Duration = Duration::from_secs(20);

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub detail: String,
    /// Extra fields (a config validation error's `key`).
    pub extra: Option<Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> ApiError {
        ApiError {
            status,
            detail: detail.into(),
            extra: None,
        }
    }

    pub fn bad_request(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, detail)
    }

    pub fn not_found(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, detail)
    }

    pub fn internal(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, detail)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"detail": self.detail});
        if let (Some(Value::Object(extra)), Some(map)) = (self.extra, body.as_object_mut()) {
            map.extend(extra);
        }
        (self.status, Json(body)).into_response()
    }
}

pub type ApiResult = Result<Json<Value>, ApiError>;

/// The request body as `T`: JSON within [`MAX_BODY_BYTES`] (the router's body limit).
pub fn body<T: DeserializeOwned>(raw: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let bytes = raw.map_err(|e| ApiError::new(e.status(), e.body_text()))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "the request body is not what this route takes: {e}"
        ))
    })
}

/// Runs `f` on the blocking pool; 504 when it takes longer than [`WORK_TIMEOUT`] (it finishes
/// in the background, its answer dropped).
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::time::timeout(WORK_TIMEOUT, tokio::task::spawn_blocking(f)).await {
        Err(_) => Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "the home's files did not answer within {} s (a database locked by another process?)",
                WORK_TIMEOUT.as_secs()
            ),
        )),
        Ok(Err(e)) => Err(ApiError::internal(format!("the work failed: {e}"))),
        Ok(Ok(result)) => result,
    }
}
