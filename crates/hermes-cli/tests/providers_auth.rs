//! The Python Hermes's `auth.json` sign-ins through the binary, against a mock authorization
//! server: Nous Portal and OpenAI Codex tokens read, refreshed at the token endpoint when they
//! expire and written back in the same format (atomically, owner-only), and `hermes login
//! nous|codex` running the device-code sign-in.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use base64::Engine;
use hermes_testkit::{Canned, MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// An unsigned JWT with these claims (the tokens are only decoded, never verified).
fn jwt(claims: Value) -> String {
    let part = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.sig", part(&json!({"alg": "none"})), part(&claims))
}

fn nous_token(exp: u64, tag: &str) -> String {
    jwt(json!({"exp": exp, "scope": "inference:invoke", "sub": tag}))
}

fn root(server: &MockServer) -> String {
    format!("http://127.0.0.1:{}", server.port())
}

fn auth_json(home: &TestHome) -> Value {
    serde_json::from_str(&std::fs::read_to_string(home.hermes_home().join("auth.json")).unwrap())
        .unwrap()
}

fn form(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace("%3A", ":").replace('+', " ")))
        .collect()
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn an_expired_nous_token_is_refreshed_used_and_written_back() {
    let fresh = nous_token(now() + 3600, "fresh");
    let server = MockServer::start(
        Script::new(vec![
            Turn::text("hello from the portal"),
            Turn::text("again"),
        ])
        .with_route(
            "/api/oauth/token",
            vec![Canned::json(
                200,
                &json!({"access_token": fresh, "refresh_token": "rt-2", "token_type": "Bearer",
                        "expires_in": 3600, "scope": "inference:invoke",
                        "inference_base_url": "https://attacker.example/v1"}),
            )],
        ),
    );
    let home = TestHome::new();
    let expired = nous_token(now() - 60, "old");
    home.write_file(
        "auth.json",
        &serde_json::to_string_pretty(&json!({
            "version": 1,
            "active_provider": "nous",
            "providers": {
                "nous": {
                    "access_token": expired, "refresh_token": "rt-1", "token_type": "Bearer",
                    "scope": "inference:invoke", "client_id": "hermes-cli",
                    "portal_base_url": root(&server),
                    "inference_base_url": "https://inference-api.nousresearch.com/v1",
                    "expires_at": "2020-01-01T00:00:00+00:00", "label": "mine"
                },
                "spotify": {"access_token": "keep-me"}
            },
            "credential_pool": {"openrouter": []}
        }))
        .unwrap(),
    );
    home.write_config(&format!(
        "model:\n  provider: nous\n  base_url: {}\n  default: Hermes-4-70B\n",
        server.base_url()
    ));
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "hello from the portal\n");

    let refreshes = server.requests_to("/api/oauth/token");
    assert_eq!(refreshes.len(), 1);
    assert_eq!(refreshes[0].header("x-nous-refresh-token"), Some("rt-1"));
    let sent = form(&refreshes[0].raw_body);
    assert!(
        sent.contains(&("grant_type".into(), "refresh_token".into())),
        "{sent:?}"
    );
    assert!(
        sent.contains(&("client_id".into(), "hermes-cli".into())),
        "{sent:?}"
    );
    let chat = &server.requests()[1];
    assert_eq!(
        chat.header("authorization"),
        Some(format!("Bearer {fresh}").as_str())
    );

    let doc = auth_json(&home);
    let nous = &doc["providers"]["nous"];
    assert_eq!(nous["access_token"], fresh.as_str());
    assert_eq!(
        nous["refresh_token"], "rt-2",
        "the rotated refresh token is kept"
    );
    assert_eq!(nous["agent_key"], fresh.as_str());
    assert_eq!(nous["label"], "mine", "unknown fields are kept");
    assert_eq!(
        nous["inference_base_url"], "https://inference-api.nousresearch.com/v1",
        "an inference URL on a foreign host is refused"
    );
    assert_eq!(doc["providers"]["spotify"]["access_token"], "keep-me");
    assert_eq!(doc["credential_pool"], json!({"openrouter": []}));
    assert_eq!(doc["version"], 1);
    assert!(doc["updated_at"].as_str().unwrap().ends_with("+00:00"));
    #[cfg(unix)]
    assert_eq!(mode(&home.hermes_home().join("auth.json")), 0o600);

    // A valid token is used as it is: no second refresh.
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server.requests_to("/api/oauth/token").len(), 1);
}

#[test]
fn a_refused_nous_refresh_asks_for_a_new_sign_in() {
    let server = MockServer::start(Script::new(vec![]).with_route(
        "/api/oauth/token",
        vec![Canned::json(
            400,
            &json!({"error": "invalid_grant", "error_description": "refresh token expired"}),
        )],
    ));
    let home = TestHome::new();
    home.write_file(
        "auth.json",
        &json!({"version": 1, "providers": {"nous": {
            "access_token": nous_token(now() - 60, "old"), "refresh_token": "rt-1",
            "portal_base_url": root(&server)}}})
        .to_string(),
    );
    home.write_config(&format!(
        "model:\n  provider: nous\n  base_url: {}\n  default: Hermes-4-70B\n",
        server.base_url()
    ));
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("invalid_grant") && err.contains("hermes login"),
        "{err}"
    );
    assert_eq!(server.chat_request_count(), 0);
}

#[test]
fn without_a_sign_in_the_user_is_told_how_to_sign_in() {
    let home = TestHome::new();
    home.write_config("model:\n  provider: nous\n  default: Hermes-4-70B\n");
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("hermes login nous") && err.contains("NOUS_API_KEY"),
        "{err}"
    );
}

#[test]
fn codex_tokens_are_refreshed_and_the_responses_wire_carries_the_chatgpt_headers() {
    let account = json!({"chatgpt_account_id": "acct_42"});
    let fresh = jwt(json!({"exp": now() + 3600, "https://api.openai.com/auth": account}));
    let server = MockServer::start(Script::new(vec![Turn::text("hi from codex")]).with_route(
        "/oauth/token",
        vec![Canned::json(
            200,
            &json!({"access_token": fresh, "refresh_token": "crt-2", "id_token": "idt"}),
        )],
    ));
    let home = TestHome::new();
    let expired = jwt(json!({"exp": now() - 10, "https://api.openai.com/auth": account}));
    home.write_file(
        "auth.json",
        &json!({"version": 1, "providers": {"openai-codex": {
            "tokens": {"access_token": expired, "refresh_token": "crt-1", "account_id": "acct_42"},
            "last_refresh": "2025-01-01T00:00:00Z", "auth_mode": "chatgpt"}}})
        .to_string(),
    );
    home.write_config(&format!(
        "model:\n  provider: openai-codex\n  base_url: {}\n  default: gpt-5.5\n",
        server.base_url()
    ));
    let o = home
        .command(bin())
        .args(["-z", "hi"])
        .env("HERMES_CODEX_AUTH_URL", root(&server))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "hi from codex\n");

    let refresh = &server.requests_to("/oauth/token")[0];
    let sent = form(&refresh.raw_body);
    assert!(
        sent.contains(&("grant_type".into(), "refresh_token".into())),
        "{sent:?}"
    );
    assert!(
        sent.contains(&("refresh_token".into(), "crt-1".into())),
        "{sent:?}"
    );
    assert!(sent.contains(&("client_id".into(), "app_EMoamEEZ73f0CkXaXp7hrann".into())));

    let chat = server.requests().into_iter().find(|r| r.is_chat()).unwrap();
    assert_eq!(chat.path, "/v1/responses");
    assert_eq!(
        chat.header("authorization"),
        Some(format!("Bearer {fresh}").as_str())
    );
    assert_eq!(chat.header("originator"), Some("codex_cli_rs"));
    assert_eq!(chat.header("chatgpt-account-id"), Some("acct_42"));
    assert_eq!(chat.body["store"], false);

    let doc = auth_json(&home);
    let codex = &doc["providers"]["openai-codex"];
    assert_eq!(codex["tokens"]["access_token"], fresh.as_str());
    assert_eq!(codex["tokens"]["refresh_token"], "crt-2");
    assert_eq!(
        codex["tokens"]["account_id"], "acct_42",
        "other token fields are kept"
    );
    assert_eq!(codex["auth_mode"], "chatgpt");
    assert!(codex["last_refresh"].as_str().unwrap().ends_with('Z'));
    assert_ne!(codex["last_refresh"], "2025-01-01T00:00:00Z");
}

#[test]
fn hermes_login_nous_runs_the_device_code_sign_in() {
    let token = nous_token(now() + 3600, "new");
    let server = MockServer::start(
        Script::new(vec![])
            .with_route(
                "/api/oauth/device/code",
                vec![Canned::json(
                    200,
                    &json!({"device_code": "dev-1", "user_code": "WXYZ-1234",
                            "verification_uri": "https://portal.example/device",
                            "verification_uri_complete": "https://portal.example/device?code=WXYZ-1234",
                            "expires_in": 60, "interval": 1}),
                )],
            )
            .with_route(
                "/api/oauth/token",
                vec![
                    Canned::json(400, &json!({"error": "authorization_pending"})),
                    Canned::json(
                        200,
                        &json!({"access_token": token, "refresh_token": "rt-new", "expires_in": 3600,
                                "token_type": "Bearer", "scope": "inference:invoke"}),
                    ),
                ],
            ),
    );
    let home = TestHome::new();
    home.write_config("model:\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n  api_key: sk-old\n  default: m\n");
    let o = home
        .command(bin())
        .args(["login", "nous"])
        .env("HERMES_PORTAL_BASE_URL", root(&server))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("https://portal.example/device?code=WXYZ-1234") && out.contains("WXYZ-1234"),
        "{out}"
    );
    assert!(out.contains("Signed in to Nous Portal"), "{out}");

    let polls = server.requests_to("/api/oauth/token");
    assert_eq!(polls.len(), 2, "pending, then the token");
    let sent = form(&polls[0].raw_body);
    assert!(
        sent.contains(&("device_code".into(), "dev-1".into())),
        "{sent:?}"
    );
    assert!(sent.contains(&(
        "grant_type".into(),
        "urn:ietf:params:oauth:grant-type:device_code".into()
    )));

    let doc = auth_json(&home);
    assert_eq!(doc["active_provider"], "nous");
    let nous = &doc["providers"]["nous"];
    assert_eq!(nous["access_token"], token.as_str());
    assert_eq!(nous["agent_key"], token.as_str());
    assert_eq!(nous["refresh_token"], "rt-new");
    assert_eq!(nous["portal_base_url"], root(&server));
    assert_eq!(nous["client_id"], "hermes-cli");
    let config = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert!(config.contains("provider: nous"), "{config}");
    assert!(
        !config.contains("base_url") && !config.contains("sk-old"),
        "{config}"
    );
}

#[test]
fn hermes_login_codex_runs_the_device_code_sign_in() {
    let server = MockServer::start(
        Script::new(vec![])
            .with_route(
                "/api/accounts/deviceauth/usercode",
                vec![Canned::json(
                    200,
                    &json!({"user_code": "CODE-77", "device_auth_id": "da-1", "interval": "1"}),
                )],
            )
            .with_route(
                "/api/accounts/deviceauth/token",
                vec![
                    Canned::json(403, &json!({})),
                    Canned::json(
                        200,
                        &json!({"authorization_code": "ac-1", "code_verifier": "cv-1"}),
                    ),
                ],
            )
            .with_route(
                "/oauth/token",
                vec![Canned::json(
                    200,
                    &json!({"access_token": "at-codex", "refresh_token": "rt-codex"}),
                )],
            ),
    );
    let home = TestHome::new();
    home.write_config("model:\n  provider: openrouter\n  default: anthropic/claude-sonnet-4.5\n");
    let o = home
        .command(bin())
        .args(["login", "codex"])
        .env("HERMES_CODEX_AUTH_URL", root(&server))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("{}/codex/device", root(&server))) && out.contains("CODE-77"),
        "{out}"
    );

    let start = &server.requests_to("/api/accounts/deviceauth/usercode")[0];
    assert_eq!(start.body["client_id"], "app_EMoamEEZ73f0CkXaXp7hrann");
    let polls = server.requests_to("/api/accounts/deviceauth/token");
    assert_eq!(polls.len(), 2);
    assert_eq!(
        polls[1].body,
        json!({"device_auth_id": "da-1", "user_code": "CODE-77"})
    );
    let exchange = form(&server.requests_to("/oauth/token")[0].raw_body);
    for pair in [
        ("grant_type", "authorization_code"),
        ("code", "ac-1"),
        ("code_verifier", "cv-1"),
    ] {
        assert!(
            exchange.contains(&(pair.0.into(), pair.1.into())),
            "{exchange:?}"
        );
    }

    let doc = auth_json(&home);
    assert_eq!(doc["active_provider"], "openai-codex");
    let codex = &doc["providers"]["openai-codex"];
    assert_eq!(
        codex["tokens"],
        json!({"access_token": "at-codex", "refresh_token": "rt-codex"})
    );
    assert_eq!(codex["auth_mode"], "chatgpt");
    let config = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert!(
        config.contains("provider: openai-codex") && config.contains("default: gpt-5.5"),
        "{config}"
    );
}
