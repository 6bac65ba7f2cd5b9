//! Webhook mode's endpoint: Telegram POSTs each update as JSON to our URL with the
//! `X-Telegram-Bot-Api-Secret-Token` header set to the secret given to `setWebhook`. Requests
//! without the right secret get 403 (python-telegram-bot's answer); an update is answered 200
//! once the core has it (so Telegram retries when we could not take it), and a retried update
//! is delivered once.

use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Dispatcher;
use crate::platform::gate::RecentSet;
use crate::platform::http::constant_time_eq;

/// Largest update body accepted.
const MAX_UPDATE: usize = 1024 * 1024;

struct Endpoint {
    secret: String,
    dispatcher: Arc<Dispatcher>,
    seen: Mutex<RecentSet>,
}

async fn receive(State(ep): State<Arc<Endpoint>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let given = headers
        .get("x-telegram-bot-api-secret-token")
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !constant_time_eq(given, ep.secret.as_bytes()) {
        return StatusCode::FORBIDDEN;
    }
    let Ok(update) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST;
    };
    if let Some(id) = update.get("update_id").and_then(Value::as_i64) {
        let first_time = ep
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(&id.to_string());
        if !first_time {
            return StatusCode::OK;
        }
    }
    if ep.dispatcher.handle(update).await {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

/// Serves `path` until `shutdown`.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    path: String,
    secret: String,
    dispatcher: Arc<Dispatcher>,
    shutdown: CancellationToken,
) -> Result<(), String> {
    let endpoint = Arc::new(Endpoint {
        secret,
        dispatcher,
        seen: Mutex::new(RecentSet::new(1024)),
    });
    let app = Router::new()
        .route(&path, post(receive))
        .layer(DefaultBodyLimit::max(MAX_UPDATE))
        .with_state(endpoint);
    // The API server's connection handling: header deadline and a connection cap, so idle
    // sockets from the internet cannot exhaust the process.
    crate::api_server::listener::serve(listener, app, Default::default(), shutdown).await;
    Ok(())
}
