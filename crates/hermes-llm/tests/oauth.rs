//! The OAuth provider against the mock server and a mock token endpoint: a token the provider
//! rejects with 401 is refreshed once and the request sent again; a refresh that another
//! process already made is picked up from auth.json instead of refreshing twice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use futures_util::StreamExt;
use hermes_llm::auth_store::AuthStore;
use hermes_llm::oauth::{AuthProvider, Endpoints, OAuthProvider};
use hermes_llm::{Provider, ProviderOptions, ProviderSpec, ResponseAccumulator, WireFormat};
use hermes_testkit::{Canned, Fault, MockServer, Script, Turn};
use serde_json::{Value, json};

fn token(tag: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let claims = json!({"exp": exp, "scope": "inference:invoke", "sub": tag});
    format!(
        "e30.{}.sig",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

fn nous_provider(server: &MockServer, home: &std::path::Path) -> OAuthProvider {
    let spec = ProviderSpec {
        provider: "nous".into(),
        base_url: server.base_url(),
        api_key: None,
        model: "Hermes-4-70B".into(),
        wire: WireFormat::OpenAiChat,
        chosen_by: "test".into(),
        key_source: None,
    };
    OAuthProvider::new(
        AuthProvider::Nous,
        &spec,
        &ProviderOptions::default(),
        AuthStore::for_home(home),
        Endpoints::default(),
        false,
    )
    .unwrap()
}

fn write_state(home: &std::path::Path, server: &MockServer, access: &str) {
    std::fs::write(
        home.join("auth.json"),
        json!({"version": 1, "providers": {"nous": {
            "access_token": access, "agent_key": access, "refresh_token": "rt-1",
            "portal_base_url": format!("http://127.0.0.1:{}", server.port())}}})
        .to_string(),
    )
    .unwrap();
}

async fn answer(p: &dyn Provider) -> Result<String, hermes_llm::LlmError> {
    let messages = common::one_message();
    let mut stream = p.stream(&common::plain_request(&messages)).await?;
    let mut acc = ResponseAccumulator::new();
    while let Some(ev) = stream.next().await {
        acc.push(&ev?);
    }
    Ok(acc.finish().text)
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_once_and_the_request_sent_again() {
    let old = token("old");
    let fresh = token("fresh");
    let server = MockServer::start(
        Script::new(vec![
            Fault::http(401, "token revoked").into(),
            Turn::text("ok"),
        ])
        .with_route(
            "/api/oauth/token",
            vec![Canned::json(
                200,
                &json!({"access_token": fresh, "refresh_token": "rt-2", "expires_in": 3600}),
            )],
        ),
    );
    let home = tempfile::tempdir().unwrap();
    write_state(home.path(), &server, &old);
    let provider = nous_provider(&server, home.path());
    assert_eq!(answer(&provider).await.unwrap(), "ok");
    let chats: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.is_chat())
        .collect();
    assert_eq!(
        chats[0].header("authorization"),
        Some(format!("Bearer {old}").as_str())
    );
    assert_eq!(
        chats[1].header("authorization"),
        Some(format!("Bearer {fresh}").as_str())
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("auth.json")).unwrap())
            .unwrap();
    assert_eq!(doc["providers"]["nous"]["refresh_token"], "rt-2");
}

#[tokio::test]
async fn a_token_refreshed_by_another_process_is_used_without_refreshing_again() {
    let old = token("old");
    let theirs = token("theirs");
    let server = MockServer::start(
        Script::new(vec![Turn::text("first"), Turn::text("second")]).with_route(
            "/api/oauth/token",
            vec![Canned::json(500, &json!({"error": "should not be called"}))],
        ),
    );
    let home = tempfile::tempdir().unwrap();
    write_state(home.path(), &server, &old);
    let provider = nous_provider(&server, home.path());
    assert_eq!(answer(&provider).await.unwrap(), "first");
    // Another hermes refreshed and saved new tokens meanwhile.
    write_state(home.path(), &server, &theirs);
    assert_eq!(answer(&provider).await.unwrap(), "second");
    let chats: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.is_chat())
        .collect();
    assert_eq!(
        chats[1].header("authorization"),
        Some(format!("Bearer {theirs}").as_str())
    );
    assert!(server.requests_to("/api/oauth/token").is_empty());
}
