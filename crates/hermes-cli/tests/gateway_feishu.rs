//! `hermes gateway` on Feishu / Lark, end to end: the real binary, the testkit's double of the
//! Open API, Feishu's encrypted and signed event deliveries, and the scripted model. The
//! request URL's `url_verification` challenge is answered only with the right token; an
//! encrypted p2p text is answered with exactly the documented reply request (after a tenant
//! token was fetched with the app's credentials); a bad or missing signature is 401 and never
//! reaches the model; a redelivered event is answered once; a stranger gets a pairing code;
//! a group message needs the bot's @mention; an expired token is refreshed; a long answer is
//! split at 8,000 characters; an approval is a card whose button callback answers it; an
//! image reaches the model through the message resource API; `hermes doctor` names the bot.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use base64::Engine;
use common::gateway::Gateway;
use common::*;
use hermes_testkit::http_client::http;
use hermes_testkit::platforms::feishu::{
    self as fs, BOT_OPEN_ID, EventSender, FeishuMock, SentMessage,
};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const SECRET: &str = "dskLLdkasdjlasdKK2ruhj";
const ENCRYPT_KEY: &str = "kudryavka-encrypt-key";
const VT: &str = "rvaYgkND1GOiu5MM0E1rncYC6PLtF7JV";
const ANN: &str = "ou_84aad35d084aa403a838cf73ee18467";
const BOB: &str = "ou_55bd3ba9c6d95a2c8a8ea1f5c2f5d9e";
const ANN_DM: &str = "oc_a0553eda9014c201e6969b478895c230";
const BOB_DM: &str = "oc_b1664feb0125d312f7a7ac589906d341";
const GROUP: &str = "oc_5ce6d572455d361153b7cb51da133945";

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
    feishu: EventSender,
}

fn start(api: &FeishuMock, model: &MockServer) -> Rig {
    start_with(api, model, ENCRYPT_KEY)
}

/// The gateway with `encrypt_key` (empty: the verification token alone, plain events).
fn start_with(api: &FeishuMock, model: &MockServer, encrypt_key: &str) -> Rig {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}platforms:\n  feishu:\n    extra:\n      base_url: {}\n",
        hermes_testkit::mock_config_yaml(model),
        api.url()
    ));
    let port = free_port();
    home.write_file(
        ".env",
        &format!(
            "FEISHU_APP_ID={}\nFEISHU_APP_SECRET={SECRET}\nFEISHU_CONNECTION_MODE=webhook\n\
             FEISHU_ENCRYPT_KEY={encrypt_key}\nFEISHU_VERIFICATION_TOKEN={VT}\n\
             FEISHU_WEBHOOK_PORT={port}\nFEISHU_ALLOWED_USERS={ANN}\n",
            fs::APP_ID
        ),
    );
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "feishu started");
    let addr = format!("127.0.0.1:{port}");
    wait("the webhook listener", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let health = http(&addr, "GET", "/feishu/webhook", &[], "");
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(
        health.json()["encrypt_key_configured"],
        !encrypt_key.is_empty()
    );
    Rig {
        home,
        gateway,
        feishu: api.sender(&addr, "/feishu/webhook", encrypt_key),
    }
}

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

fn sent_to(api: &FeishuMock, chat: &str) -> Vec<SentMessage> {
    api.sent()
        .into_iter()
        .filter(|m| m.chat_id == chat)
        .collect()
}

fn dm(event: &str, message: &str, chat: &str, sender: &str, text: &str) -> Value {
    fs::text_message(VT, event, message, chat, false, sender, text, &[])
}

#[test]
fn feishu_challenge_encrypted_messages_signatures_pairing_groups_and_long_answers() {
    let long = format!("{}\n\n{}", "a".repeat(6000), "b".repeat(6000));
    let api = FeishuMock::start(SECRET);
    let model = MockServer::start(Script::new(vec![
        Turn::text("Hello Ann"),
        Turn::text("Welcome, Bob."),
        Turn::text("Hi group."),
        Turn::text(&long),
    ]));
    let rig = start(&api, &model);
    let feishu = &rig.feishu;

    // The request URL's challenge (encrypted, as Feishu sends it with an Encrypt Key).
    let ok = feishu.deliver(&fs::url_verification("ch-3f1a", VT));
    assert_eq!(ok.status, 200, "{ok:?}");
    assert_eq!(ok.json(), json!({"challenge": "ch-3f1a"}));
    assert_eq!(
        feishu
            .deliver(&fs::url_verification("ch-x", "wrong"))
            .status,
        401
    );

    // An encrypted p2p text: a token is fetched, then exactly the documented reply goes out.
    let hi = dm("ev-ann-1", "om_ann1", ANN_DM, ANN, "hi");
    let reply = feishu.deliver(&hi);
    assert_eq!(
        (reply.status, reply.json()["code"].clone()),
        (200, json!(0))
    );
    wait("the answer", || !sent_to(&api, ANN_DM).is_empty());
    let sent = sent_to(&api, ANN_DM);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].reply_to.as_deref(), Some("om_ann1"));
    let mut body = sent[0].body.clone();
    let uuid = body.as_object_mut().unwrap().remove("uuid").unwrap();
    assert!(
        uuid.as_str()
            .is_some_and(|u| !u.is_empty() && u.len() <= 50)
    );
    assert_eq!(
        body,
        json!({"msg_type": "text", "content": "{\"text\":\"Hello Ann\"}"})
    );
    let requests = api.requests();
    assert_eq!(
        requests[0].path,
        "/open-apis/auth/v3/tenant_access_token/internal"
    );
    assert_eq!(
        requests[0].body,
        json!({"app_id": fs::APP_ID, "app_secret": SECRET})
    );
    let send = requests
        .iter()
        .find(|r| r.path == "/open-apis/im/v1/messages/om_ann1/reply")
        .unwrap();
    assert_eq!(send.method, "POST");
    assert!(
        send.authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Bearer t-")),
        "{send:?}"
    );
    assert_eq!(
        last_user(&model.last_chat_request().unwrap())["content"],
        "hi"
    );

    // Redelivered: answered once. Forged or unsigned: 401, never the model.
    assert_eq!(feishu.deliver(&hi).status, 200);
    let forged = feishu.body(&dm(
        "ev-forged",
        "om_forged",
        ANN_DM,
        ANN,
        "rm -rf everything",
    ));
    assert_eq!(
        feishu
            .deliver_raw(&forged, "1700000000", "abc", &"0".repeat(64))
            .status,
        401
    );
    assert_eq!(feishu.deliver_raw(&forged, "", "", "").status, 401);
    let signed_with_other_key = fs::signature("1700000000", "abc", "not-the-key", &forged);
    assert_eq!(
        feishu
            .deliver_raw(&forged, "1700000000", "abc", &signed_with_other_key)
            .status,
        401
    );
    // Not decryptable with our key: refused too.
    let other = api.sender(&feishu.addr, &feishu.path, "another-key");
    assert_eq!(
        other
            .deliver(&dm("ev-other", "om_other", ANN_DM, ANN, "x"))
            .status,
        400
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        model.chat_request_count(),
        1,
        "a duplicate or forgery reached the model"
    );
    assert_eq!(sent_to(&api, ANN_DM).len(), 1);

    // A stranger: a pairing code, not the model; approved, the model.
    feishu.deliver(&dm("ev-bob-1", "om_bob1", BOB_DM, BOB, "hello?"));
    wait("the pairing code", || {
        api.texts_to(BOB_DM)
            .iter()
            .any(|t| t.contains("pairing code is"))
    });
    assert_eq!(
        model.chat_request_count(),
        1,
        "a stranger reached the model"
    );
    let text = api.texts_to(BOB_DM)[0].clone();
    let code: String = text
        .split("pairing code is ")
        .nth(1)
        .unwrap()
        .trim_start_matches(['*', '`'])
        .chars()
        .take(8)
        .collect();
    let approved = run(&rig.home, &["pairing", "approve", "feishu", &code]);
    assert!(approved.status.success(), "{approved:?}");
    feishu.deliver(&dm("ev-bob-2", "om_bob2", BOB_DM, BOB, "hello again"));
    wait("Bob's answer", || {
        api.texts_to(BOB_DM).iter().any(|t| t == "Welcome, Bob.")
    });

    // A group: nothing without the bot's @mention, an answer with it (the mention removed).
    feishu.deliver(&fs::text_message(
        VT,
        "ev-g-1",
        "om_g1",
        GROUP,
        true,
        ANN,
        "@_user_1 what about you",
        &[("@_user_1", "ou_someone_else", "Carol")],
    ));
    feishu.deliver(&fs::text_message(
        VT,
        "ev-g-2",
        "om_g2",
        GROUP,
        true,
        ANN,
        "just chatting",
        &[],
    ));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        model.chat_request_count(),
        2,
        "an unaddressed group message reached the model"
    );
    feishu.deliver(&fs::text_message(
        VT,
        "ev-g-3",
        "om_g3",
        GROUP,
        true,
        ANN,
        "@_user_1 hello bot",
        &[("@_user_1", BOT_OPEN_ID, fs::BOT_NAME)],
    ));
    wait("the group answer", || {
        api.texts_to(GROUP).iter().any(|t| t == "Hi group.")
    });
    assert_eq!(
        last_user(&model.last_chat_request().unwrap())["content"],
        "hello bot"
    );

    // The token expires: refreshed once, and the long answer arrives split, nothing lost.
    api.expire_token();
    feishu.deliver(&dm("ev-ann-2", "om_ann2", ANN_DM, ANN, "long please"));
    wait("the long answer", || {
        api.texts_to(ANN_DM)
            .iter()
            .filter(|t| t.starts_with('a') || t.starts_with('b'))
            .count()
            >= 2
    });
    let parts: Vec<String> = api
        .texts_to(ANN_DM)
        .into_iter()
        .filter(|t| t.starts_with('a') || t.starts_with('b'))
        .collect();
    assert!(parts.iter().all(|p| p.chars().count() <= 8000), "{parts:?}");
    let shown: Vec<String> = parts
        .iter()
        .map(|p| {
            format!(
                "{}…{} ({})",
                &p[..20.min(p.len())],
                &p[p.len().saturating_sub(40)..],
                p.len()
            )
        })
        .collect();
    assert_eq!(parts.concat().matches('a').count(), 6000, "{shown:?}");
    assert_eq!(parts.concat().matches('b').count(), 6000);
    let token_fetches = api
        .requests()
        .iter()
        .filter(|r| r.path == "/open-apis/auth/v3/tenant_access_token/internal")
        .count();
    assert_eq!(
        token_fetches, 2,
        "the token was not cached, or not refreshed"
    );

    let (code, stderr) = rig.gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn feishu_approvals_are_card_buttons() {
    let scratch = tempfile::tempdir().unwrap();
    let victim = scratch.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let api = FeishuMock::start(SECRET);
    let model = MockServer::start(Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": format!("rm -rf {}", victim.display())}),
        ),
        Turn::text("Finished."),
    ]));
    let rig = start(&api, &model);
    rig.feishu
        .deliver(&dm("ev-ask", "om_ask", ANN_DM, ANN, "clean up"));
    wait("the approval card", || {
        sent_to(&api, ANN_DM)
            .iter()
            .any(|m| m.msg_type == "interactive")
    });
    assert!(victim.exists(), "ran before approval");
    let card = sent_to(&api, ANN_DM)
        .into_iter()
        .find(|m| m.msg_type == "interactive")
        .unwrap();
    assert!(card.text().contains("rm -rf"), "{card:?}");
    let (_, value) = card
        .buttons()
        .into_iter()
        .find(|(label, _)| label == "Approve once")
        .unwrap_or_else(|| panic!("{:?}", card.buttons()));
    let answer = rig.feishu.deliver(&fs::card_action(
        VT,
        "ev-press",
        ANN,
        ANN_DM,
        &card.message_id,
        &value,
    ));
    assert_eq!(answer.status, 200, "{answer:?}");
    wait("the answer after approval", || {
        api.texts_to(ANN_DM).iter().any(|t| t == "Finished.")
    });
    assert!(!victim.exists(), "the approved command did not run");
    let (code, stderr) = rig.gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn feishu_images_reach_the_model_and_doctor_names_the_bot() {
    let api = FeishuMock::start(SECRET);
    api.add_resource("om_img1", "img_v2_041b28e3", "image/png", PNG.to_vec());
    let model = MockServer::start(Script::new(vec![Turn::text("A tiny transparent square.")]));
    let rig = start(&api, &model);
    let image = fs::message_event(
        VT,
        "ev-img",
        "om_img1",
        ANN_DM,
        false,
        ANN,
        "image",
        &json!({"image_key": "img_v2_041b28e3"}),
        &[],
    );
    assert_eq!(rig.feishu.deliver(&image).status, 200);
    wait("the answer", || {
        api.texts_to(ANN_DM)
            .iter()
            .any(|t| t == "A tiny transparent square.")
    });
    let fetch = api
        .requests()
        .into_iter()
        .find(|r| r.path == "/open-apis/im/v1/messages/om_img1/resources/img_v2_041b28e3")
        .expect("the resource download");
    assert_eq!(fetch.query, vec![("type".to_string(), "image".to_string())]);
    let user = last_user(&model.last_chat_request().unwrap());
    let parts = user["content"].as_array().unwrap();
    assert!(
        parts[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("[The user sent an image, saved at "),
        "{user}"
    );
    assert_eq!(
        parts[1]["image_url"]["url"],
        format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(PNG)
        )
    );
    let (code, stderr) = rig.gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");

    let doctor = run(&rig.home, &["doctor"]);
    let out = stdout(&doctor);
    assert!(
        out.contains(&format!("{} ({BOT_OPEN_ID})", fs::BOT_NAME)),
        "{out}"
    );
}

#[test]
fn feishu_plain_events_need_the_verification_token() {
    let api = FeishuMock::start(SECRET);
    let model = MockServer::start(Script::new(vec![Turn::text("**Plain** works.")]));
    let rig = start_with(&api, &model, "");
    let feishu = &rig.feishu;
    assert_eq!(
        feishu.deliver(&fs::url_verification("c1", VT)).json(),
        json!({"challenge": "c1"})
    );
    assert_eq!(feishu.deliver(&fs::url_verification("c2", "")).status, 401);
    // The wrong token: refused, and the model never called.
    let wrong = fs::text_message(
        "not-the-token",
        "ev-w",
        "om_w",
        ANN_DM,
        false,
        ANN,
        "hi",
        &[],
    );
    assert_eq!(feishu.deliver(&wrong).status, 401);
    // Encrypted while no key is configured: refused.
    let encrypted = api.sender(&feishu.addr, &feishu.path, "some-key");
    assert_eq!(
        encrypted
            .deliver(&dm("ev-e", "om_e", ANN_DM, ANN, "hi"))
            .status,
        400
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(model.chat_request_count(), 0);
    // The right token: answered, markdown as a post.
    assert_eq!(
        feishu
            .deliver(&dm("ev-ok", "om_ok", ANN_DM, ANN, "hi"))
            .status,
        200
    );
    wait("the answer", || !sent_to(&api, ANN_DM).is_empty());
    let sent = &sent_to(&api, ANN_DM)[0];
    assert_eq!(sent.msg_type, "post");
    assert_eq!(
        sent.content,
        json!({"zh_cn": {"content": [[{"tag": "md", "text": "**Plain** works."}]]}})
    );
    let (code, stderr) = rig.gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
