//! `hermes gateway` on DingTalk in Stream mode, end to end: the real binary, the testkit's
//! double of DingTalk (Stream gateway, WebSocket frames, robot API, session webhooks) and the
//! scripted model. The connection is registered with the app's credentials and every frame is
//! acknowledged in the documented shape (pings echoed); a DM is answered with exactly the
//! documented markdown message on its session webhook; a stranger gets a pairing code; with
//! `require_mention` a group message needs the @mention; a long answer is split at 20,000
//! characters; a dropped connection and a `disconnect` request are survived with a new ticket;
//! a redelivered message is answered once; a proactive send goes through the robot API with an
//! access token; a picture reaches the model through the robot's file API; wrong credentials
//! are refused and named by `hermes doctor`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use base64::Engine;
use common::gateway::Gateway;
use common::*;
use hermes_testkit::platforms::dingtalk::{self as dt, DingTalkMock, UserMessage};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const SECRET: &str = "Xv9s0dGfQ2kLm4Np6Rt8Vw0Yz2Ab4Cd6Ef8Gh0Ij2Kl4Mn6";
const ANN: &str = "manager4711";
const BOB: &str = "staff0815";
const ANN_DM: &str = "cidAnnDm0PqRsTuVwXyZ+1==";
const BOB_DM: &str = "cidBobDm1AbCdEfGhIjKl+2==";
const GROUP: &str = "cidGroup2MnOpQrStUvWx+3==";
const HOME_GROUP: &str = "cidHomeGroup7XyZ==";

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

fn start(api: &DingTalkMock, model: &MockServer, secret: &str, env: &str) -> (TestHome, Gateway) {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}platforms:\n  dingtalk:\n    extra:\n      api_url: {}\n",
        hermes_testkit::mock_config_yaml(model),
        api.url()
    ));
    home.write_file(
        ".env",
        &format!(
            "DINGTALK_CLIENT_ID={}\nDINGTALK_CLIENT_SECRET={secret}\nDINGTALK_ALLOWED_USERS={ANN}\n{env}",
            dt::CLIENT_ID
        ),
    );
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "dingtalk started");
    (home, gateway)
}

fn msg(
    id: &str,
    conversation: &str,
    group: bool,
    staff: &str,
    text: &str,
    at: bool,
) -> UserMessage {
    UserMessage {
        msg_id: id.into(),
        conversation_id: conversation.into(),
        group,
        sender_staff_id: staff.into(),
        sender_nick: staff.to_uppercase(),
        text: text.into(),
        at_bot: at,
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

#[test]
fn dingtalk_stream_dm_pairing_groups_long_answers_and_reconnects() {
    let long = format!("{}\n\n{}", "a".repeat(15000), "b".repeat(15000));
    let api = DingTalkMock::start(SECRET);
    let model = MockServer::start(Script::new(vec![
        Turn::text("Hello **Ann**"),
        Turn::text("Welcome, Bob."),
        Turn::text("Hi group."),
        Turn::text(&long),
        Turn::text("Still here."),
        Turn::text("And again."),
        Turn::text("A tiny transparent square."),
    ]));
    let (home, gateway) = start(&api, &model, SECRET, "DINGTALK_REQUIRE_MENTION=true\n");
    wait("the stream connection", || api.connected());

    // Registered with the app's credentials, for the robot's topic.
    let open = api
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1.0/gateway/connections/open")
        .unwrap();
    assert_eq!(open.body["clientId"], dt::CLIENT_ID);
    assert_eq!(open.body["clientSecret"], SECRET);
    assert_eq!(
        open.body["subscriptions"],
        json!([{"type": "CALLBACK", "topic": dt::BOT_TOPIC}])
    );

    // A ping is acknowledged with its own data.
    assert!(api.ping("ping-1"));
    wait("the ping's ack", || !api.acks().is_empty());
    assert_eq!(
        api.acks()[0],
        json!({"code": 200, "headers": {"contentType": "application/json", "messageId": "ping-1"},
               "message": "OK", "data": "{\"opaque\":\"ping-1\"}"})
    );

    // A DM: acknowledged, answered with exactly the documented markdown message.
    assert!(api.send_message(&msg("msgAnn1", ANN_DM, false, ANN, "hi", false)));
    wait("the answer", || !api.texts_to(ANN_DM).is_empty());
    let reply = api
        .requests()
        .into_iter()
        .find(|r| r.path == "/robot/sendBySession")
        .unwrap();
    assert_eq!(reply.method, "POST");
    assert_eq!(
        reply.query,
        vec![("session".to_string(), "sess-msgAnn1".to_string())]
    );
    assert_eq!(
        reply.body,
        json!({"msgtype": "markdown", "markdown": {"title": "Hermes", "text": "Hello **Ann**"}})
    );
    assert!(api.acks().contains(&json!({
        "code": 200, "headers": {"contentType": "application/json", "messageId": "frame-msgAnn1"},
        "message": "OK", "data": "{\"response\":null}"})));
    assert_eq!(
        last_user(&model.last_chat_request().unwrap())["content"],
        "hi"
    );

    // Redelivered: answered once.
    assert!(api.send_message(&msg("msgAnn1", ANN_DM, false, ANN, "hi", false)));
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(model.chat_request_count(), 1);

    // A stranger: a pairing code, not the model; approved, the model.
    api.send_message(&msg("msgBob1", BOB_DM, false, BOB, "hello?", false));
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
    let approved = run(&home, &["pairing", "approve", "dingtalk", &code]);
    assert!(approved.status.success(), "{approved:?}");
    api.send_message(&msg("msgBob2", BOB_DM, false, BOB, "hello again", false));
    wait("Bob's answer", || {
        api.texts_to(BOB_DM).iter().any(|t| t == "Welcome, Bob.")
    });

    // A group with require_mention: nothing without the @mention, an answer with it.
    api.send_message(&msg("msgG1", GROUP, true, ANN, "just chatting", false));
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        model.chat_request_count(),
        2,
        "an unaddressed group message reached the model"
    );
    api.send_message(&msg("msgG2", GROUP, true, ANN, "hello bot", true));
    wait("the group answer", || {
        api.texts_to(GROUP).iter().any(|t| t == "Hi group.")
    });

    // A long answer: split at 20,000 characters, nothing lost.
    api.send_message(&msg("msgAnn2", ANN_DM, false, ANN, "long please", false));
    let parts = || -> Vec<String> {
        api.texts_to(ANN_DM)
            .into_iter()
            .filter(|t| t.starts_with('a') || t.starts_with('b'))
            .collect()
    };
    wait("the long answer", || parts().len() >= 2);
    let parts = parts();
    assert!(
        parts.iter().all(|p| p.chars().count() <= 20_000),
        "{}",
        parts.len()
    );
    assert_eq!(parts.concat().matches('a').count(), 15000);
    assert_eq!(parts.concat().matches('b').count(), 15000);

    // The connection drops: a new ticket, a new connection, and messages flow again.
    api.drop_connection();
    wait("a new connection", || {
        api.connections() == 2 && api.connected()
    });
    api.send_message(&msg("msgAnn3", ANN_DM, false, ANN, "still there?", false));
    wait("the answer after the drop", || {
        api.texts_to(ANN_DM).iter().any(|t| t == "Still here.")
    });
    // DingTalk asks for a new connection (a server update): acknowledged, reconnected.
    assert!(api.ask_disconnect());
    wait("the connection after disconnect", || {
        api.connections() == 3 && api.connected()
    });
    assert!(
        api.acks()
            .iter()
            .any(|a| a["headers"]["messageId"] == "sys-disconnect")
    );
    api.send_message(&msg("msgAnn4", ANN_DM, false, ANN, "and now?", false));
    wait("the answer after disconnect", || {
        api.texts_to(ANN_DM).iter().any(|t| t == "And again.")
    });
    let tickets = api
        .requests()
        .iter()
        .filter(|r| r.path == "/v1.0/gateway/connections/open")
        .count();
    assert_eq!(tickets, 3);

    // A picture: fetched through the robot's file API, given to the model as an image.
    api.add_file("dcPng1", "image/png", PNG.to_vec());
    let mut picture = api.message_data(&msg("msgPic1", ANN_DM, false, ANN, "", false));
    picture["msgtype"] = json!("picture");
    picture.as_object_mut().unwrap().remove("text");
    picture["content"] = json!({"downloadCode": "dcPng1", "pictureDownloadCode": "pdcPng1"});
    assert!(api.send_data("frame-msgPic1", &picture));
    wait("the picture's answer", || {
        api.texts_to(ANN_DM)
            .iter()
            .any(|t| t == "A tiny transparent square.")
    });
    let fetch = api
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1.0/robot/messageFiles/download")
        .expect("the file download");
    assert_eq!(
        fetch.body,
        json!({"downloadCode": "dcPng1", "robotCode": dt::CLIENT_ID})
    );
    assert!(fetch.token.is_some_and(|t| t.starts_with("at-")));
    let user = last_user(&model.last_chat_request().unwrap());
    let parts = user["content"].as_array().unwrap();
    assert!(
        parts.iter().any(|p| p["image_url"]["url"]
            == format!(
                "data:image/png;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(PNG)
            )),
        "{user}"
    );

    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn dingtalk_cron_goes_through_the_robot_api_and_bad_credentials_are_named() {
    let api = DingTalkMock::start(SECRET);
    let model = MockServer::start(Script::new(vec![Turn::text("Daily report: all good.")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}cron:\n  tick_interval: 1\nplatforms:\n  dingtalk:\n    extra:\n      api_url: {}\n",
        hermes_testkit::mock_config_yaml(&model),
        api.url()
    ));
    home.write_file(
        ".env",
        &format!(
            "DINGTALK_CLIENT_ID={}\nDINGTALK_CLIENT_SECRET={SECRET}\n",
            dt::CLIENT_ID
        ),
    );
    let added = run(
        &home,
        &[
            "cron",
            "add",
            "1m",
            "report please",
            "--name",
            "report",
            "--deliver",
            &format!("dingtalk:{HOME_GROUP}"),
        ],
    );
    assert!(added.status.success(), "{added:?}");
    let jobs_path = home.hermes_home().join("cron/jobs.json");
    let mut jobs: Value =
        serde_json::from_str(&std::fs::read_to_string(&jobs_path).unwrap()).unwrap();
    for job in jobs["jobs"].as_array_mut().unwrap() {
        job["next_run_at"] = json!("2000-01-01T00:00:00+00:00");
    }
    std::fs::write(&jobs_path, serde_json::to_string(&jobs).unwrap()).unwrap();
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "dingtalk started");
    // A group no message came from: the robot API, with an access token from the app's
    // credentials.
    let sent = || {
        api.requests()
            .into_iter()
            .find(|r| r.path == "/v1.0/robot/groupMessages/send")
    };
    wait("the cron delivery", || sent().is_some());
    let sent = sent().unwrap();
    assert_eq!(sent.token.as_deref(), Some("at-0"));
    assert_eq!(sent.body["openConversationId"], HOME_GROUP);
    assert_eq!(sent.body["robotCode"], dt::CLIENT_ID);
    assert_eq!(sent.body["msgKey"], "sampleMarkdown");
    let param: Value = serde_json::from_str(sent.body["msgParam"].as_str().unwrap()).unwrap();
    assert_eq!(param["title"], "Hermes");
    assert!(
        param["text"]
            .as_str()
            .unwrap()
            .contains("Daily report: all good."),
        "{param}"
    );
    let token = api
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1.0/oauth2/accessToken")
        .unwrap();
    assert_eq!(
        token.body,
        json!({"appKey": dt::CLIENT_ID, "appSecret": SECRET})
    );
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");

    let doctor = run(&home, &["doctor"]);
    let out = stdout(&doctor);
    assert!(
        out.contains(&format!(
            "app {} (robot {}) on 127.0.0.1:",
            dt::CLIENT_ID,
            dt::CLIENT_ID
        )),
        "{out}"
    );

    // Wrong credentials: the stream is refused, and doctor names the variables to check.
    home.write_file(
        ".env",
        &format!(
            "DINGTALK_CLIENT_ID={}\nDINGTALK_CLIENT_SECRET=wrong\n",
            dt::CLIENT_ID
        ),
    );
    let doctor = run(&home, &["doctor"]);
    let out = stdout(&doctor);
    assert_eq!(doctor.status.code(), Some(1), "{out}");
    assert!(
        out.contains("fix: check DINGTALK_CLIENT_ID / DINGTALK_CLIENT_SECRET"),
        "{out}"
    );
    let before = api.connections();
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "dingtalk started");
    wait("the refused registration", || {
        api.requests()
            .iter()
            .filter(|r| {
                r.path == "/v1.0/gateway/connections/open" && r.body["clientSecret"] == "wrong"
            })
            .count()
            >= 1
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        api.connections(),
        before,
        "a connection without valid credentials"
    );
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
