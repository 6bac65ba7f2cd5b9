//! The one table of the dashboard's API routes ([`API_ROUTES`]) and the router built from it,
//! so the table a test walks is exactly what the server answers. Route paths and JSON field
//! names are the Python dashboard's where a page maps to one of its routes (`/api/status`,
//! `/api/sessions...`, `/api/analytics/usage`, `/api/skills...`, `/api/cron/jobs...`,
//! `/api/memory`, `/api/config...`, `/api/mcp/servers`, `/api/messaging/platforms`); the
//! kanban plugin's routes sit under `/api/kanban`.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get};

use crate::reply::MAX_BODY_BYTES;
use crate::{App, assets, auth, config_api, cron_api, kanban_api, login, memory_api};
use crate::{sessions_api, skills_api, status_api};

/// One API route: its method (upper case) and axum path (`{name}` for a parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
}

macro_rules! api_routes {
    ($( $method:ident $path:literal => $handler:path ),* $(,)?) => {
        /// Every API route; each one passes [`auth::api_guard`].
        pub const API_ROUTES: &[Route] = &[
            $( Route { method: method_name(stringify!($method)), path: $path } ),*
        ];

        fn api_router() -> Router<Arc<App>> {
            Router::new() $( .route($path, axum::routing::$method($handler)) )*
        }
    };
}

/// `get` → `GET` (the routing function's name is the method's).
const fn method_name(routing_fn: &'static str) -> &'static str {
    match routing_fn.as_bytes() {
        b"get" => "GET",
        b"post" => "POST",
        b"put" => "PUT",
        b"patch" => "PATCH",
        b"delete" => "DELETE",
        _ => "?",
    }
}

api_routes! {
    post "/api/auth/login" => login::login,
    post "/api/auth/logout" => login::logout,
    get "/api/status" => status_api::status,
    get "/api/sessions" => sessions_api::list,
    get "/api/sessions/search" => sessions_api::search,
    get "/api/sessions/{session_id}" => sessions_api::get_one,
    get "/api/sessions/{session_id}/messages" => sessions_api::messages,
    delete "/api/sessions/{session_id}" => sessions_api::delete,
    get "/api/analytics/usage" => sessions_api::usage,
    get "/api/kanban/board" => kanban_api::board,
    get "/api/kanban/tasks/{task_id}" => kanban_api::task,
    patch "/api/kanban/tasks/{task_id}" => kanban_api::update,
    post "/api/kanban/tasks/{task_id}/comments" => kanban_api::comment,
    get "/api/skills" => skills_api::list,
    put "/api/skills/toggle" => skills_api::toggle,
    get "/api/skills/content" => skills_api::content,
    post "/api/skills/hub/install" => skills_api::hub_install,
    get "/api/cron/jobs" => cron_api::list,
    post "/api/cron/jobs" => cron_api::create,
    get "/api/cron/jobs/{job_id}" => cron_api::get_one,
    post "/api/cron/jobs/{job_id}/pause" => cron_api::pause,
    post "/api/cron/jobs/{job_id}/resume" => cron_api::resume,
    post "/api/cron/jobs/{job_id}/trigger" => cron_api::trigger,
    get "/api/cron/jobs/{job_id}/runs" => cron_api::runs,
    get "/api/memory" => memory_api::get_files,
    put "/api/memory" => memory_api::put_file,
    get "/api/config" => config_api::get_config,
    put "/api/config" => config_api::put_config,
    get "/api/config/raw" => config_api::get_raw,
    put "/api/config/raw" => config_api::put_raw,
    get "/api/mcp/servers" => status_api::mcp_servers,
    get "/api/messaging/platforms" => status_api::platforms,
}

/// The whole server: the page and its assets, and the API behind its guard.
pub(crate) fn router(app: Arc<App>) -> Router {
    let api = api_router()
        .route("/api/{*rest}", any(login::unknown_api))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::api_guard,
        ));
    let pages = Router::new()
        .route("/", get(login::index))
        .route("/app.js", get(assets::script))
        .route("/app.css", get(assets::style))
        .route("/favicon.svg", get(assets::icon))
        .fallback(login::unknown_page)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::page_guard,
        ));
    Router::new()
        .merge(api)
        .merge(pages)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(app)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_a_known_method_and_an_api_path() {
        assert!(API_ROUTES.len() >= 30);
        for r in API_ROUTES {
            assert_ne!(r.method, "?", "{r:?}");
            assert!(r.path.starts_with("/api/"), "{r:?}");
        }
        let mut seen = std::collections::HashSet::new();
        for r in API_ROUTES {
            assert!(seen.insert((r.method, r.path)), "twice: {r:?}");
        }
    }
}
