//! The page: one HTML file, one script and one stylesheet (vanilla JavaScript, its charts drawn
//! as SVG by the script itself), compiled into the binary, so the dashboard works offline and
//! nothing is fetched from anywhere but this server.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

pub const INDEX_HTML: &str = include_str!("../assets/index.html");
pub const APP_JS: &str = include_str!("../assets/app.js");
pub const APP_CSS: &str = include_str!("../assets/app.css");
pub const ICON_SVG: &str = include_str!("../assets/favicon.svg");

fn asset(text: &'static str, content_type: &'static str) -> Response {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

pub(crate) fn page() -> Response {
    asset(INDEX_HTML, "text/html; charset=utf-8")
}

pub(crate) async fn script() -> Response {
    asset(APP_JS, "text/javascript; charset=utf-8")
}

pub(crate) async fn style() -> Response {
    asset(APP_CSS, "text/css; charset=utf-8")
}

pub(crate) async fn icon() -> Response {
    asset(ICON_SVG, "image/svg+xml")
}
