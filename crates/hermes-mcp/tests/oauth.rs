//! OAuth 2.1 against an authorization server and a protected MCP server written here: the
//! 401 challenge leads to the protected-resource metadata (RFC 9728) and the authorization
//! server's metadata (RFC 8414), the client registers itself (RFC 7591), a "browser"
//! follows the authorization URL to the loopback callback, the code is exchanged with its
//! PKCE verifier (S256 checked by the server), the tokens land owner-only in
//! `mcp-tokens/`, and a token the server stops accepting is refreshed on the 401.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use hermes_mcp::{AuthPrompt, Hub, HubOptions, OAuthSettings, ServerConfig, Status, Transport};
use hermes_tools::{Tool, ToolContext};
use serde_json::{Value, json};

#[derive(Default)]
struct Server {
    base: String,
    registrations: Vec<Value>,
    authorize_queries: Vec<HashMap<String, String>>,
    challenge: Option<String>,
    token_requests: Vec<HashMap<String, String>>,
    /// The access token the MCP endpoint accepts now.
    valid: String,
}

type Shared = Arc<Mutex<Server>>;

fn unauthorized(base: &str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(
            header::WWW_AUTHENTICATE,
            format!(
                r#"Bearer error="invalid_token", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
            ),
        )],
        "unauthorized",
    )
        .into_response()
}

async fn mcp(State(s): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let (base, valid) = {
        let s = s.lock().unwrap();
        (s.base.clone(), s.valid.clone())
    };
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if valid.is_empty() || auth != format!("Bearer {valid}") {
        return unauthorized(&base);
    }
    let msg: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match msg["method"].as_str().unwrap_or_default() {
        "initialize" => json!({"protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "guarded", "version": "1"}}),
        "tools/list" => json!({"tools": [{"name": "whoami", "description": "The token you sent.",
            "inputSchema": {"type": "object", "properties": {}}}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": auth}]}),
        _ => json!({}),
    };
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::HeaderName::from_static("mcp-session-id"), "s-1"),
        ],
        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
    )
        .into_response()
}

async fn resource_metadata(State(s): State<Shared>) -> Response {
    let base = s.lock().unwrap().base.clone();
    axum::Json(
        json!({"resource": format!("{base}/mcp"), "authorization_servers": [base],
                      "scopes_supported": ["mcp:tools"]}),
    )
    .into_response()
}

async fn server_metadata(State(s): State<Shared>) -> Response {
    let base = s.lock().unwrap().base.clone();
    axum::Json(json!({"issuer": base, "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"), "registration_endpoint": format!("{base}/register"),
        "code_challenge_methods_supported": ["S256"], "response_types_supported": ["code"]}))
    .into_response()
}

async fn register(State(s): State<Shared>, axum::Json(body): axum::Json<Value>) -> Response {
    s.lock().unwrap().registrations.push(body.clone());
    (
        StatusCode::CREATED,
        axum::Json(
            json!({"client_id": "client-1", "redirect_uris": body["redirect_uris"],
                          "client_name": body["client_name"]}),
        ),
    )
        .into_response()
}

async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut s = s.lock().unwrap();
    s.challenge = q.get("code_challenge").cloned();
    s.authorize_queries.push(q.clone());
    let target = format!(
        "{}?code=code-1&state={}",
        q["redirect_uri"],
        q.get("state").cloned().unwrap_or_default()
    );
    (StatusCode::FOUND, [(header::LOCATION, target)]).into_response()
}

async fn token(State(s): State<Shared>, Form(f): Form<HashMap<String, String>>) -> Response {
    let mut s = s.lock().unwrap();
    s.token_requests.push(f.clone());
    match f.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let digest = ring::digest::digest(
                &ring::digest::SHA256,
                f.get("code_verifier")
                    .cloned()
                    .unwrap_or_default()
                    .as_bytes(),
            );
            let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref());
            if f.get("code").map(String::as_str) != Some("code-1")
                || s.challenge.as_deref() != Some(expected.as_str())
            {
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": "invalid_grant"})),
                )
                    .into_response();
            }
            s.valid = "at-1".into();
            axum::Json(json!({"access_token": "at-1", "token_type": "Bearer",
                              "expires_in": 3600, "refresh_token": "rt-1"}))
            .into_response()
        }
        Some("refresh_token") if f.get("refresh_token").map(String::as_str) == Some("rt-1") => {
            s.valid = "at-2".into();
            axum::Json(json!({"access_token": "at-2", "token_type": "Bearer", "expires_in": 3600}))
                .into_response()
        }
        _ => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response(),
    }
}

/// The authorization and MCP server on a thread of its own.
fn start_server() -> (String, Shared) {
    let shared: Shared = Arc::new(Mutex::new(Server::default()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    shared.lock().unwrap().base = base.clone();
    let app = Router::new()
        .route(
            "/mcp",
            post(mcp).get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(shared.clone());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (base, shared)
}

/// The "browser": follows the authorization URL, redirects and all, to our callback.
#[derive(Default)]
struct Browser {
    opened: Mutex<Vec<String>>,
}

impl AuthPrompt for Browser {
    fn show(&self, _server: &str, url: &str) {
        self.opened.lock().unwrap().push(url.to_string());
        let url = url.to_string();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let _ = rustls::crypto::ring::default_provider().install_default();
                let client = reqwest::Client::new();
                let _ = client.get(url).send().await;
            });
        });
    }
}

fn whoami(hub: &Hub) -> Result<Value, String> {
    let tool: Arc<dyn Tool> = hub
        .tools()
        .into_iter()
        .find(|t| t.name() == "mcp__guarded__whoami")
        .expect("the tool");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(tool.call(json!({}), &ToolContext::new(std::env::temp_dir())))
        .map_err(|e| e.0)
}

#[test]
fn discovery_registration_pkce_storage_and_refresh_on_401() {
    let (base, server) = start_server();
    let home = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(
        "guarded",
        Transport::Http {
            url: format!("{base}/mcp"),
            headers: vec![],
        },
    );
    config.oauth = Some(OAuthSettings {
        timeout: Duration::from_secs(30),
        ..OAuthSettings::default()
    });
    config.connect_timeout = Duration::from_secs(30);
    let browser = Arc::new(Browser::default());
    let hub = Hub::connect(
        std::slice::from_ref(&config),
        HubOptions {
            home: Some(home.path().to_path_buf()),
            auth_prompt: Some(browser.clone()),
            wait: Some(Duration::from_secs(60)),
            ..HubOptions::default()
        },
    );
    assert_eq!(
        hub.servers()[0].status,
        Status::Connected,
        "{:?}",
        hub.servers()
    );

    {
        let s = server.lock().unwrap();
        assert_eq!(s.registrations.len(), 1);
        let reg = &s.registrations[0];
        assert_eq!(reg["client_name"], "Hermes Agent");
        assert_eq!(reg["token_endpoint_auth_method"], "none");
        let redirect = reg["redirect_uris"][0].as_str().unwrap();
        assert!(redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"));
        let q = &s.authorize_queries[0];
        assert_eq!(q["client_id"], "client-1");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["resource"], format!("{base}/mcp"));
        assert_eq!(q["scope"], "mcp:tools");
        let exchange = &s.token_requests[0];
        assert_eq!(exchange["grant_type"], "authorization_code");
        assert_eq!(exchange["redirect_uri"], redirect);
    }
    assert_eq!(browser.opened.lock().unwrap().len(), 1);
    assert_eq!(whoami(&hub).unwrap(), json!({"result": "Bearer at-1"}));

    let tokens = home.path().join("mcp-tokens/guarded.json");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    assert_eq!(stored["access_token"], "at-1");
    assert_eq!(stored["refresh_token"], "rt-1");
    assert!(stored["expires_at"].as_f64().unwrap() > 0.0);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the token file is owner-only");
    }
    let client: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join("mcp-tokens/guarded.client.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(client["client_id"], "client-1");

    // The server stops accepting at-1: the next call meets a 401, refreshes, and goes on.
    server.lock().unwrap().valid = "at-0-revoked".into();
    // The refresh grant makes at-2 valid; a call in between is answered 401 first.
    let after = whoami(&hub);
    let s = server.lock().unwrap();
    let refresh = s
        .token_requests
        .iter()
        .find(|r| r["grant_type"] == "refresh_token")
        .expect("a refresh");
    assert_eq!(refresh["refresh_token"], "rt-1");
    assert_eq!(refresh["client_id"], "client-1");
    drop(s);
    assert_eq!(after.unwrap(), json!({"result": "Bearer at-2"}));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    assert_eq!(stored["access_token"], "at-2");
    assert_eq!(stored["refresh_token"], "rt-1", "the refresh token is kept");

    // Another process (no one to open a browser) uses the stored token as it is.
    let again = Hub::connect(
        &[config],
        HubOptions {
            home: Some(home.path().to_path_buf()),
            wait: Some(Duration::from_secs(30)),
            ..HubOptions::default()
        },
    );
    assert_eq!(
        again.servers()[0].status,
        Status::Connected,
        "{:?}",
        again.servers()
    );
    assert_eq!(
        browser.opened.lock().unwrap().len(),
        1,
        "no second authorization"
    );
}

#[test]
fn without_tokens_or_a_browser_the_server_names_the_login_command() {
    let (base, _server) = start_server();
    let home = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(
        "guarded",
        Transport::Http {
            url: format!("{base}/mcp"),
            headers: vec![],
        },
    );
    config.oauth = Some(OAuthSettings::default());
    let hub = Hub::connect(
        &[config],
        HubOptions {
            home: Some(home.path().to_path_buf()),
            wait: Some(Duration::from_secs(30)),
            ..HubOptions::default()
        },
    );
    let warnings = hub.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("run `hermes mcp login guarded` in a terminal"),
        "{warnings:?}"
    );
}
