//! `hermes gateway` on Signal, end to end: the real binary against the testkit's double of a
//! `signal-cli daemon --http` (JSON-RPC and Server-Sent Events) and the scripted model. A DM
//! is answered with one exact JSON-RPC `send` (markdown as Signal text styles) after a
//! typing indicator; a stranger gets a pairing code and reaches the model only once approved;
//! a long answer is split at 8,000 characters; a picture comes in through `getAttachment`; an
//! allowed group is answered into the group; a dropped event stream comes back with
//! `Last-Event-ID` and the message sent meanwhile is replayed by the daemon and answered
//! exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::gateway::Gateway;
use common::*;
use hermes_testkit::platforms::signal::{Contact, FileIn, SignalMock};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const ACCOUNT: &str = "+15550000000";
const GROUP: &str = "Z3JvdXAtb25lLWlkLWJhc2U2NA==";
/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

fn ann() -> Contact {
    Contact::new("+15551110001", "Ann")
}

fn bob() -> Contact {
    Contact::new("+15552220002", "Bob")
}

fn start(sig: &SignalMock, model: &MockServer, extra_env: &str) -> (TestHome, Gateway) {
    let home = TestHome::new();
    home.write_config(&hermes_testkit::mock_config_yaml(model));
    home.write_file(
        ".env",
        &format!(
            "SIGNAL_HTTP_URL={}\nSIGNAL_ACCOUNT={ACCOUNT}\nSIGNAL_ALLOWED_USERS={}\n{extra_env}",
            sig.url(),
            ann().number
        ),
    );
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "signal started");
    wait("the event stream", || sig.connected());
    (home, gateway)
}

/// The texts sent to a DM recipient.
fn sent_to(sig: &SignalMock, number: &str) -> Vec<String> {
    sig.sends()
        .iter()
        .filter(|p| p["recipient"] == json!([number]))
        .map(|p| p["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn last_user_message(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or_default()
}

#[test]
fn signal_dms_pairing_long_answers_pictures_and_groups() {
    let long = format!("{}\n\n{}", "a".repeat(6000), "b".repeat(6000));
    let sig = SignalMock::start(ACCOUNT);
    sig.add_contact(&ann());
    sig.add_group(GROUP, "Friends");
    let model = MockServer::start(Script::new(vec![
        Turn::text("Hello **Ann**."),
        Turn::text("Welcome, Bob."),
        Turn::text(&long),
        Turn::text("A red square."),
        Turn::text("Hi, group."),
    ]));
    let (home, gateway) = start(
        &sig,
        &model,
        &format!("SIGNAL_GROUP_ALLOWED_USERS={GROUP}\n"),
    );
    let ann = ann();
    let bob = bob();

    sig.dm(&ann, "hi");
    wait("the DM answer", || !sent_to(&sig, &ann.number).is_empty());
    let request = sig
        .rpc_requests()
        .into_iter()
        .find(|r| r["method"] == "send")
        .unwrap();
    assert!(request["id"].is_u64(), "{request}");
    assert_eq!(
        request,
        json!({"jsonrpc": "2.0", "method": "send", "id": request["id"], "params": {
            "account": ACCOUNT, "recipient": [ann.number], "message": "Hello Ann.",
            "textStyle": ["6:3:BOLD"]}})
    );
    assert_eq!(
        last_user_message(&model.last_chat_request().unwrap())["content"],
        "hi"
    );
    // The typing indicator went to Ann while the model worked.
    assert!(
        sig.calls("sendTyping")
            .iter()
            .any(|p| p == &json!({"account": ACCOUNT, "recipient": [ann.number]})),
        "{:?}",
        sig.calls("sendTyping")
    );

    // A stranger: a pairing code, not the model.
    sig.dm(&bob, "hello?");
    wait("the pairing code", || {
        sent_to(&sig, &bob.number)
            .iter()
            .any(|m| m.contains("pairing code is"))
    });
    assert_eq!(
        model.chat_request_count(),
        1,
        "a stranger reached the model"
    );
    let text = sent_to(&sig, &bob.number)[0].clone();
    let code: String = text
        .split("pairing code is ")
        .nth(1)
        .unwrap()
        .chars()
        .take(8)
        .collect();
    let approved = run(&home, &["pairing", "approve", "signal", &code]);
    assert!(approved.status.success(), "{approved:?}");
    sig.dm(&bob, "hello again");
    wait("Bob's answer", || {
        sent_to(&sig, &bob.number)
            .iter()
            .any(|m| m == "Welcome, Bob.")
    });

    // A long answer: two messages within 8,000 characters, nothing lost.
    sig.dm(&ann, "long please");
    wait("the long answer", || {
        sent_to(&sig, &ann.number)
            .iter()
            .filter(|m| m.starts_with('a') || m.starts_with('b'))
            .count()
            >= 2
    });
    let parts: Vec<String> = sent_to(&sig, &ann.number)
        .into_iter()
        .filter(|m| m.starts_with('a') || m.starts_with('b'))
        .collect();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(parts.iter().all(|p| p.chars().count() <= 8000));
    assert_eq!(parts.concat().matches('a').count(), 6000);
    assert_eq!(parts.concat().matches('b').count(), 6000);

    // A picture: fetched from the daemon with getAttachment and shown to the model.
    sig.dm_with_files(
        &ann,
        "what is this?",
        vec![FileIn {
            content_type: "image/png".into(),
            filename: Some("red.png".into()),
            bytes: PNG.to_vec(),
        }],
    );
    wait("the picture answer", || {
        sent_to(&sig, &ann.number)
            .iter()
            .any(|m| m == "A red square.")
    });
    assert_eq!(sig.calls("getAttachment").len(), 1);
    let user = last_user_message(&model.last_chat_request().unwrap()).to_string();
    assert!(user.contains("what is this?"), "{user}");
    assert!(user.contains("data:image/png;base64,"), "{user}");

    // The allowed group: answered into the group (Signal groups need no mention by default).
    sig.group_message(GROUP, &ann, "hello all", json!([]));
    wait("the group answer", || {
        sig.sends()
            .iter()
            .any(|p| p["groupId"] == GROUP && p["message"] == "Hi, group.")
    });
    // A group the bot is not told to listen in is ignored.
    sig.add_group("b3RoZXI=", "Other");
    sig.group_message("b3RoZXI=", &ann, "anyone?", json!([]));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(model.chat_request_count(), 5);
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn signal_replays_what_arrived_while_the_event_stream_was_down() {
    let sig = SignalMock::start(ACCOUNT);
    let model = MockServer::start(Script::new(vec![
        Turn::text("Answer one."),
        Turn::text("Answer two."),
    ]));
    let (_home, gateway) = start(&sig, &model, "");
    let ann = ann();
    sig.dm(&ann, "one");
    let shown = |text: &str| {
        sent_to(&sig, &ann.number)
            .iter()
            .filter(|m| *m == text)
            .count()
    };
    wait("the first answer", || shown("Answer one.") == 1);

    sig.drop_streams();
    // Received by the daemon while the gateway is away: replayed on the resumed stream.
    sig.dm(&ann, "two");
    wait("the second answer", || shown("Answer two.") == 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        model.chat_request_count(),
        2,
        "a message was answered twice"
    );
    assert_eq!(shown("Answer one."), 1);
    let (connections, resumed) = sig.connections();
    assert!(
        connections >= 2 && resumed >= 1,
        "{connections} connections, {resumed} resumed"
    );
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
