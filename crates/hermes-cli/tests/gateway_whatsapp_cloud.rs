//! `hermes gateway` on the WhatsApp Cloud API, end to end: the real binary, the testkit's
//! double of Meta's Graph API, Meta's signed webhook deliveries, and the scripted model. The
//! subscription handshake echoes the challenge only for the right token; a signed text is
//! answered with exactly the Graph `messages` request Meta documents (formatting converted,
//! the user's message quoted, marked read with a typing indicator); a bad signature is 401 and
//! never reaches the model; the same message delivered twice is answered once; a stranger gets
//! a pairing code and reaches the model once approved; a long answer is split at WhatsApp's
//! 4,096 characters; an image goes media id → URL → bytes and reaches the model as an image;
//! an approval is asked with interactive buttons and a tap answers it; `hermes doctor` names
//! the business number.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use base64::Engine;
use common::gateway::Gateway;
use common::*;
use hermes_testkit::http_client::http;
use hermes_testkit::platforms::whatsapp_cloud::{
    self as wa, PHONE_NUMBER_ID, WebhookSender, WhatsAppCloudMock,
};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const TOKEN: &str = "EAAG-test-system-user-token";
const APP_SECRET: &str = "0123456789abcdef0123456789abcdef";
const VERIFY: &str = "hermes-verify-token";
const ANN: &str = "447700900123";
const BOB: &str = "447700900456";

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

struct Rig {
    home: TestHome,
    gateway: Gateway,
    meta: WebhookSender,
}

fn start(graph: &WhatsAppCloudMock, model: &MockServer) -> Rig {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}platforms:\n  whatsapp_cloud:\n    extra:\n      graph_url: {}\n",
        hermes_testkit::mock_config_yaml(model),
        graph.url()
    ));
    let port = free_port();
    home.write_file(
        ".env",
        &format!(
            "WHATSAPP_CLOUD_PHONE_NUMBER_ID={PHONE_NUMBER_ID}\nWHATSAPP_CLOUD_ACCESS_TOKEN={TOKEN}\n\
             WHATSAPP_CLOUD_APP_SECRET={APP_SECRET}\nWHATSAPP_CLOUD_VERIFY_TOKEN={VERIFY}\n\
             WHATSAPP_CLOUD_WEBHOOK_HOST=127.0.0.1\nWHATSAPP_CLOUD_WEBHOOK_PORT={port}\n\
             WHATSAPP_CLOUD_ALLOWED_USERS=\"+44 7700 900123\"\n"
        ),
    );
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "whatsapp_cloud started");
    let addr = format!("127.0.0.1:{port}");
    wait("the webhook listener", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let health = http(&addr, "GET", "/health", &[], "");
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(health.json()["app_secret_configured"], true);
    Rig {
        home,
        gateway,
        meta: WebhookSender {
            addr,
            path: "/whatsapp/webhook".into(),
            app_secret: APP_SECRET.into(),
        },
    }
}

/// [`wa::button_reply`] or [`wa::list_reply`].
type Reply = fn(&str, &str, &str, &str, &str, &str) -> Value;

fn last_user(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone()
}

#[test]
fn whatsapp_cloud_handshake_signed_messages_duplicates_pairing_and_long_answers() {
    let long = format!("{}\n\n{}", "a".repeat(3000), "b".repeat(3000));
    let graph = WhatsAppCloudMock::start(TOKEN);
    let model = MockServer::start(Script::new(vec![
        Turn::text("Hello **Ann**, see ~~this~~."),
        Turn::text("Welcome, Bob."),
        Turn::text(&long),
    ]));
    let rig = start(&graph, &model);
    let meta = &rig.meta;

    // The subscription handshake.
    let ok = meta.verify("subscribe", VERIFY, "1158201444");
    assert_eq!((ok.status, ok.body.as_str()), (200, "1158201444"), "{ok:?}");
    assert_eq!(meta.verify("subscribe", "wrong", "1158201444").status, 403);
    assert_eq!(meta.verify("unsubscribe", VERIFY, "1").status, 400);

    // A signed text: exactly the documented Graph request comes out.
    let hi = wa::text_message(ANN, "Ann", "wamid.ANN1", "hi");
    assert_eq!(meta.deliver(&hi).status, 200);
    wait("the answer", || !graph.messages_to(ANN).is_empty());
    let sent = graph.messages_to(ANN);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        sent[0],
        json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": ANN,
            "type": "text",
            "text": {"body": "Hello *Ann*, see ~this~.", "preview_url": true},
            "context": {"message_id": "wamid.ANN1"},
        })
    );
    let send_request = graph
        .requests()
        .into_iter()
        .find(|r| {
            r.method == "POST"
                && r.path == WhatsAppCloudMock::messages_path()
                && r.body["type"] == "text"
        })
        .unwrap();
    assert_eq!(
        send_request.authorization.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(
        last_user(&model.last_chat_request().unwrap())["content"],
        "hi"
    );
    // Marked read with a typing indicator while the model worked.
    assert!(
        graph
            .receipts()
            .iter()
            .any(|r| r["message_id"] == "wamid.ANN1" && r["typing_indicator"]["type"] == "text"),
        "{:?}",
        graph.receipts()
    );

    // Meta redelivers it: answered once.
    assert_eq!(meta.deliver(&hi).status, 200);
    // A forged delivery: 401, and the model never sees it.
    let forged = wa::text_message(ANN, "Ann", "wamid.FORGED", "rm -rf everything");
    let body = forged.to_string();
    let reply = meta.deliver_signed(&body, &wa::signature("not-the-app-secret", body.as_bytes()));
    assert_eq!(reply.status, 401);
    assert_eq!(meta.deliver_signed(&body, "").status, 401);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        model.chat_request_count(),
        1,
        "a duplicate or forgery reached the model"
    );
    assert_eq!(graph.messages_to(ANN).len(), 1);

    // A stranger: a pairing code, not the model.
    assert_eq!(
        meta.deliver(&wa::text_message(BOB, "Bob", "wamid.BOB1", "hello?"))
            .status,
        200
    );
    wait("the pairing code", || {
        graph
            .texts_to(BOB)
            .iter()
            .any(|t| t.contains("pairing code is"))
    });
    assert_eq!(
        model.chat_request_count(),
        1,
        "a stranger reached the model"
    );
    let text = graph.texts_to(BOB)[0].clone();
    let code: String = text
        .split("pairing code is ")
        .nth(1)
        .unwrap()
        .trim_start_matches(['*', '`'])
        .chars()
        .take(8)
        .collect();
    let approved = run(&rig.home, &["pairing", "approve", "whatsapp_cloud", &code]);
    assert!(approved.status.success(), "{approved:?}");
    meta.deliver(&wa::text_message(BOB, "Bob", "wamid.BOB2", "hello again"));
    wait("Bob's answer", || {
        graph.texts_to(BOB).iter().any(|t| t == "Welcome, Bob.")
    });

    // A long answer: two messages under WhatsApp's limit, nothing lost.
    meta.deliver(&wa::text_message(ANN, "Ann", "wamid.ANN2", "long please"));
    wait("the long answer", || {
        graph
            .texts_to(ANN)
            .iter()
            .filter(|t| t.starts_with('a') || t.starts_with('b'))
            .count()
            >= 2
    });
    let parts: Vec<String> = graph
        .texts_to(ANN)
        .into_iter()
        .filter(|t| t.starts_with('a') || t.starts_with('b'))
        .collect();
    assert!(parts.iter().all(|p| p.chars().count() <= 4096), "{parts:?}");
    assert_eq!(parts.concat().matches('a').count(), 3000);
    assert_eq!(parts.concat().matches('b').count(), 3000);

    let (code, stderr) = rig.gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn whatsapp_cloud_images_reach_the_model_and_doctor_names_the_number() {
    let graph = WhatsAppCloudMock::start(TOKEN);
    graph.add_media("1234567890123", "image/png", PNG.to_vec());
    let model = MockServer::start(Script::new(vec![Turn::text("A tiny transparent square.")]));
    let rig = start(&graph, &model);

    let delivery = wa::image_message(
        ANN,
        "Ann",
        "wamid.IMG1",
        "1234567890123",
        "image/png",
        "what is this?",
    );
    assert_eq!(rig.meta.deliver(&delivery).status, 200);
    wait("the answer", || {
        graph
            .texts_to(ANN)
            .iter()
            .any(|t| t == "A tiny transparent square.")
    });
    // Media id → URL → bytes, each with the token.
    let requests = graph.requests();
    let meta_lookup = requests
        .iter()
        .find(|r| r.method == "GET" && r.path == "/v20.0/1234567890123")
        .expect("GET /{media-id}");
    let bytes = requests
        .iter()
        .find(|r| r.path == "/media-download/1234567890123")
        .expect("the download");
    for r in [meta_lookup, bytes] {
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {TOKEN}").as_str())
        );
    }
    let user = last_user(&model.last_chat_request().unwrap());
    let parts = user["content"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{user}");
    let text = parts[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("[The user sent an image, saved at "),
        "{text}"
    );
    assert!(text.ends_with("]\n\nwhat is this?"), "{text}");
    assert_eq!(
        parts[1]["image_url"]["url"],
        format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(PNG)
        )
    );
    let (code, stderr) = rig.gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");

    // Doctor's check: GET /{phone-number-id} with the token.
    let doctor = run(&rig.home, &["doctor"]);
    let out = stdout(&doctor);
    assert!(
        out.contains(&format!(
            "{} ({})",
            wa::DISPLAY_PHONE_NUMBER,
            wa::VERIFIED_NAME
        )),
        "{out}"
    );
}

#[test]
fn whatsapp_cloud_approvals_are_interactive_buttons() {
    let scratch = tempfile::tempdir().unwrap();
    let victim = scratch.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let graph = WhatsAppCloudMock::start(TOKEN);
    let model = MockServer::start(Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": format!("rm -rf {}", victim.display())}),
        ),
        Turn::text("Finished."),
    ]));
    let rig = start(&graph, &model);
    rig.meta
        .deliver(&wa::text_message(ANN, "Ann", "wamid.ASK1", "clean up"));
    wait("the approval prompt", || {
        graph
            .messages_to(ANN)
            .iter()
            .any(|m| m["type"] == "interactive")
    });
    assert!(victim.exists(), "ran before approval");
    let prompt = graph
        .messages_to(ANN)
        .into_iter()
        .find(|m| m["type"] == "interactive")
        .unwrap();
    let inter = &prompt["interactive"];
    assert!(
        inter["body"]["text"].as_str().unwrap().contains("rm -rf"),
        "{prompt}"
    );
    // Four choices (once, session, always, deny): more than three reply buttons allow, so a list.
    let (id, reply): (String, Reply) = match inter["type"].as_str() {
        Some("button") => (
            inter["action"]["buttons"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["reply"]["title"] == "Approve once")
                .unwrap()["reply"]["id"]
                .as_str()
                .unwrap()
                .to_string(),
            wa::button_reply,
        ),
        Some("list") => (
            inter["action"]["sections"][0]["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["title"] == "Approve once")
                .unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string(),
            wa::list_reply,
        ),
        other => panic!("{other:?}"),
    };
    // The prompt's wamid, as the mock answered it: the n-th accepted message.
    let index = graph
        .messages()
        .iter()
        .position(|m| m["type"] == "interactive")
        .unwrap();
    let prompt_wamid = format!("wamid.HBgLMTU1NTAxMDAwMDAV{:08X}", index + 1);
    rig.meta.deliver(&reply(
        ANN,
        "Ann",
        "wamid.TAP1",
        &prompt_wamid,
        &id,
        "Approve once",
    ));
    wait("the answer after approval", || {
        graph.texts_to(ANN).iter().any(|t| t == "Finished.")
    });
    assert!(!victim.exists(), "the approved command did not run");
    let (code, stderr) = rig.gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
