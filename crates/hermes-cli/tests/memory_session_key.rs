//! `X-Hermes-Session-Key` through `hermes gateway`: the API server refuses it without
//! `API_SERVER_KEY` (403) and refuses malformed keys (400); otherwise it is echoed on the
//! answer of `/v1/chat/completions`, `/v1/responses`, `/v1/runs` and `/api/sessions/{id}/chat`,
//! and scopes the memory
//! provider: facts a turn stores under one key are recalled only for that key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::gateway::Gateway;
use common::requests::user_message;

use hermes_testkit::http_client::{HttpReply, http};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::json;

fn home_for(server: &MockServer, env: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}memory:\n  provider: holographic\n",
        hermes_testkit::mock_config_yaml(server)
    ));
    home.write_file(".env", env);
    home
}

fn chat_body(text: &str) -> String {
    json!({"messages": [{"role": "user", "content": text}]}).to_string()
}

fn responses_body(text: &str) -> String {
    json!({"input": text}).to_string()
}

fn echoed(r: &HttpReply) -> Option<String> {
    r.head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("x-hermes-session-key")
            .then(|| value.trim().to_string())
    })
}

#[test]
fn the_header_needs_a_server_key() {
    let server = MockServer::start(Script::new(vec![]));
    let home = home_for(&server, "");
    let gw = Gateway::start(&home, &[]);
    let key = "X-Hermes-Session-Key: alice";
    for (path, body) in [
        ("/v1/chat/completions", chat_body("hi")),
        ("/v1/responses", responses_body("hi")),
        ("/v1/runs", responses_body("hi")),
        (
            "/api/sessions/abc/chat",
            json!({"message": "hi"}).to_string(),
        ),
    ] {
        let r = http(&gw.addr, "POST", path, &[key], &body);
        assert_eq!(r.status, 403, "{path}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], "session_key_forbidden");
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("API_SERVER_KEY")
        );
    }
    assert!(server.chat_requests().is_empty());
    let caps = http(&gw.addr, "GET", "/v1/capabilities", &[], "").json();
    assert_eq!(
        caps["features"]["session_key_header"],
        "X-Hermes-Session-Key"
    );
    gw.terminate();
}

#[test]
fn bad_keys_are_refused_and_two_keys_keep_their_facts_apart() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "fact_store",
            json!({"action": "add", "content": "The user's dog is called Rex"}),
        ),
        Turn::text("Noted."),
        Turn::text("I don't know."),
        Turn::text("Rex."),
        Turn::text("Rex, still."),
    ]));
    let home = home_for(&server, "API_SERVER_KEY=k1\n");
    let gw = Gateway::start(&home, &[]);
    let auth = "Authorization: Bearer k1";

    let long = format!("X-Hermes-Session-Key: {}", "k".repeat(257));
    for bad in ["X-Hermes-Session-Key: a\tb", long.as_str()] {
        let r = http(
            &gw.addr,
            "POST",
            "/v1/chat/completions",
            &[auth, bad],
            &chat_body("hi"),
        );
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.json()["error"]["code"], "invalid_session_key");
    }
    assert!(server.chat_requests().is_empty());

    let alice = "X-Hermes-Session-Key: alice";
    let r = http(
        &gw.addr,
        "POST",
        "/v1/chat/completions",
        &[auth, alice],
        &chat_body("My dog is called Rex"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(echoed(&r).as_deref(), Some("alice"));

    let r = http(
        &gw.addr,
        "POST",
        "/v1/responses",
        &[auth, "X-Hermes-Session-Key: bob"],
        &responses_body("What is my dog called?"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(echoed(&r).as_deref(), Some("bob"));
    assert_eq!(
        user_message(&server.chat_requests()[2]),
        "What is my dog called?",
        "bob does not see alice's fact"
    );

    let r = http(
        &gw.addr,
        "POST",
        "/v1/runs",
        &[auth, alice],
        &responses_body("What is my dog called?"),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(echoed(&r).as_deref(), Some("alice"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.chat_requests().len() < 4 {
        assert!(Instant::now() < deadline, "the run never reached the model");
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = user_message(&server.chat_requests()[3]);
    assert!(
        sent.contains("- [0.50] The user's dog is called Rex"),
        "alice recalls her fact: {sent}"
    );

    // The fact is stored under alice's scope.
    let db = home.hermes_home().join("memory_store.db");
    let conn = rusqlite::Connection::open(db).unwrap();
    let scope: String = conn
        .query_row("SELECT scope FROM facts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(scope, "alice");

    // A turn in a stored session is scoped the same way.
    let r = http(
        &gw.addr,
        "POST",
        "/api/sessions",
        &[auth],
        &json!({"id": "scoped"}).to_string(),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let r = http(
        &gw.addr,
        "POST",
        "/api/sessions/scoped/chat",
        &[auth, alice],
        &json!({"message": "And my dog?"}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(echoed(&r).as_deref(), Some("alice"));
    let sent = user_message(&server.chat_requests()[4]);
    assert!(
        sent.contains("The user's dog is called Rex"),
        "recalled in the session turn: {sent}"
    );
    gw.terminate();
}
