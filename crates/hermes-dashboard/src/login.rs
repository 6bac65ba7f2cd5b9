//! Logging in and out: the login link (`GET /?token=T`, answered with the session cookie and a
//! redirect to `/` so the token leaves the address bar and the history), `POST /api/auth/login`
//! for a page that asks for the token, `POST /api/auth/logout`, and the answers for unknown
//! paths.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::App;
use crate::auth::{Auth, cookie_header, session_cookie};
use crate::reply::{ApiError, body};

fn html(status: StatusCode, text: &'static str) -> Response {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

const BAD_LINK: &str = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Hermes dashboard</title></head><body><h1>This login link is not valid</h1><p>Each start of <code>hermes dashboard</code> prints a new link; open the one it printed last.</p></body></html>";

/// `GET /`: the app, or with `?token=T` the exchange of the token for a session cookie.
pub(crate) async fn index(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(token) = query.get("token") else {
        return crate::assets::page();
    };
    // A link opened from another site must not log the browser in (login CSRF).
    if !Auth::same_origin(&headers) || !app.auth.token_matches(token) {
        return html(StatusCode::UNAUTHORIZED, BAD_LINK);
    }
    match app.auth.new_session() {
        Ok(session) => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::SEE_OTHER;
            r.headers_mut()
                .insert(header::LOCATION, header::HeaderValue::from_static("/"));
            r.headers_mut()
                .insert(header::SET_COOKIE, cookie_header(Some(&session)));
            r
        }
        Err(e) => e.into_response(),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct LoginBody {
    #[serde(default)]
    token: String,
}

/// `POST /api/auth/login {"token": T}`: the session cookie for the token.
pub(crate) async fn login(
    State(app): State<Arc<App>>,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let given: Result<LoginBody, ApiError> = body(raw);
    let valid = given
        .as_ref()
        .is_ok_and(|b| app.auth.token_matches(&b.token));
    if !valid {
        return ApiError::new(StatusCode::UNAUTHORIZED, "Invalid token").into_response();
    }
    match app.auth.new_session() {
        Ok(session) => {
            let mut r = Json(json!({"ok": true})).into_response();
            r.headers_mut()
                .insert(header::SET_COOKIE, cookie_header(Some(&session)));
            r
        }
        Err(e) => e.into_response(),
    }
}

/// `POST /api/auth/logout`: this browser's session ends.
pub(crate) async fn logout(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(session) = session_cookie(&headers) {
        app.auth.end_session(&session);
    }
    let mut r = Json(json!({"ok": true})).into_response();
    r.headers_mut()
        .insert(header::SET_COOKIE, cookie_header(None));
    r
}

pub(crate) async fn unknown_api() -> ApiError {
    ApiError::not_found("No such API route")
}

pub(crate) async fn unknown_page() -> Response {
    html(
        StatusCode::NOT_FOUND,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Not found</title></head><body><p>Not found. <a href=\"/\">The dashboard</a></p></body></html>",
    )
}
