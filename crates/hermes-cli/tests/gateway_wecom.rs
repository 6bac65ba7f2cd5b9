//! `hermes gateway` on WeCom through a self-built app in callback mode, end to end: the real
//! binary, the testkit's double of WeCom's API, WeCom's signed and encrypted callbacks, and the
//! scripted model. The URL check echoes the decrypted `echostr` only with a valid signature; a
//! user's text is answered with exactly the documented `message/send` request (after a token
//! was fetched with the corp's credentials); a forged, unsigned or foreign callback is refused
//! and never reaches the model; a retried callback is answered once; entering the app starts
//! nothing; a stranger gets a pairing code; an expired token is refreshed; a long answer is
//! split at 2,048 bytes; the listener survives a restart of the gateway; `hermes doctor` names
//! the app, and Python's Smart Robot mode is refused with the way to this one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::gateway::Gateway;
use common::*;
use hermes_testkit::http_client::http;
use hermes_testkit::platforms::wecom::{self as wc, CallbackSender, WeComMock};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const SECRET: &str = "Kq3vR8mZ0pXyL5tNw2bC7dF1gH4jS6aE9uI0oP2lM8n";
const TOKEN: &str = "QDG6eK2pRw";
const AES_KEY: &str = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C";
const ANN: &str = "ZhangSan";
const BOB: &str = "LiSi";

struct Rig {
    home: TestHome,
    gateway: Gateway,
    wecom: CallbackSender,
    port: u16,
}

fn start(api: &WeComMock, model: &MockServer) -> Rig {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}platforms:\n  wecom_callback:\n    extra:\n      api_url: {}\n",
        hermes_testkit::mock_config_yaml(model),
        api.url()
    ));
    let port = free_port();
    home.write_file(
        ".env",
        &format!(
            "WECOM_CALLBACK_CORP_ID={}\nWECOM_CALLBACK_CORP_SECRET={SECRET}\n\
             WECOM_CALLBACK_AGENT_ID={}\nWECOM_CALLBACK_TOKEN={TOKEN}\n\
             WECOM_CALLBACK_ENCODING_AES_KEY={AES_KEY}\nWECOM_CALLBACK_HOST=127.0.0.1\n\
             WECOM_CALLBACK_PORT={port}\nWECOM_CALLBACK_ALLOWED_USERS={ANN}\n",
            wc::CORP_ID,
            wc::AGENT_ID
        ),
    );
    let gateway = start_gateway(&home, port);
    Rig {
        home,
        gateway,
        wecom: sender(port, wc::CORP_ID),
        port,
    }
}

fn start_gateway(home: &TestHome, port: u16) -> Gateway {
    let mut gateway = Gateway::start(home, &[]);
    assert_eq!(gateway.next_line(), "wecom_callback started");
    let addr = format!("127.0.0.1:{port}");
    wait("the callback listener", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    gateway
}

fn sender(port: u16, corp: &str) -> CallbackSender {
    CallbackSender {
        addr: format!("127.0.0.1:{port}"),
        path: "/wecom/callback".into(),
        token: TOKEN.into(),
        encoding_aes_key: AES_KEY.into(),
        corp_id: corp.into(),
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
fn wecom_callbacks_crypto_pairing_tokens_long_answers_and_restarts() {
    let long = format!("{}\n\n{}", "a".repeat(1500), "好".repeat(1000));
    let api = WeComMock::start(SECRET);
    let model = MockServer::start(Script::new(vec![
        Turn::text("Hello Zhang"),
        Turn::text("Welcome, Li."),
        Turn::text(&long),
        Turn::text("Back again."),
    ]));
    let rig = start(&api, &model);
    let wecom = &rig.wecom;

    // The URL check: the decrypted echostr with the right signature, 403 otherwise.
    let echo = wecom.verify_url("5927782489442352469");
    assert_eq!(
        (echo.status, echo.body.as_str()),
        (200, "5927782489442352469")
    );
    let forged_check = http(
        &wecom.addr,
        "GET",
        "/wecom/callback?msg_signature=0000&timestamp=1&nonce=2&echostr=AAAA",
        &[],
        "",
    );
    assert_eq!(forged_check.status, 403);

    // A text: a token is fetched, then exactly the documented send goes out.
    let reply = wecom.deliver(&wc::text_xml(wc::CORP_ID, ANN, "7000000000000000001", "hi"));
    assert_eq!((reply.status, reply.body.as_str()), (200, "success"));
    wait("the answer", || !api.texts_to(ANN).is_empty());
    let requests = api.requests();
    assert_eq!(requests[0].path, "/cgi-bin/gettoken");
    assert_eq!(requests[0].param("corpid"), Some(wc::CORP_ID));
    assert_eq!(requests[0].param("corpsecret"), Some(SECRET));
    let send = requests
        .iter()
        .find(|r| r.path == "/cgi-bin/message/send")
        .unwrap();
    assert_eq!(send.method, "POST");
    assert_eq!(send.param("access_token"), Some("wtok-0"));
    assert_eq!(
        send.body,
        json!({"touser": ANN, "msgtype": "text", "agentid": wc::AGENT_ID,
               "text": {"content": "Hello Zhang"}, "safe": 0})
    );
    assert_eq!(
        last_user(&model.last_chat_request().unwrap())["content"],
        "hi"
    );

    // Retried by WeCom: answered once. Forged, unsigned, or for another corp: refused.
    wecom.deliver(&wc::text_xml(wc::CORP_ID, ANN, "7000000000000000001", "hi"));
    let (body, _) = wecom.envelope(&wc::text_xml(
        wc::CORP_ID,
        ANN,
        "7000000000000000002",
        "rm -rf ~",
    ));
    assert_eq!(wecom.deliver_raw(&body, &"0".repeat(40)).status, 400);
    assert_eq!(wecom.deliver_raw(&body, "").status, 400);
    let foreign = sender(rig.port, "ww_another_corp");
    assert_eq!(
        foreign
            .deliver(&wc::text_xml(
                "ww_another_corp",
                ANN,
                "7000000000000000003",
                "x"
            ))
            .status,
        400
    );
    let wrong_key = CallbackSender {
        encoding_aes_key: "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG".into(),
        ..wecom.clone()
    };
    assert_eq!(
        wrong_key
            .deliver(&wc::text_xml(wc::CORP_ID, ANN, "7000000000000000004", "x"))
            .status,
        400
    );
    // Entering the app is acknowledged and starts nothing.
    assert_eq!(
        wecom
            .deliver(&wc::event_xml(wc::CORP_ID, ANN, "enter_agent"))
            .status,
        200
    );
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        model.chat_request_count(),
        1,
        "a duplicate, forgery or event reached the model"
    );

    // A stranger: a pairing code, not the model; approved, the model.
    wecom.deliver(&wc::text_xml(
        wc::CORP_ID,
        BOB,
        "7000000000000000010",
        "hello?",
    ));
    wait("the pairing code", || {
        api.texts_to(BOB)
            .iter()
            .any(|t| t.contains("pairing code is"))
    });
    assert_eq!(
        model.chat_request_count(),
        1,
        "a stranger reached the model"
    );
    let text = api.texts_to(BOB)[0].clone();
    let code: String = text
        .split("pairing code is ")
        .nth(1)
        .unwrap()
        .trim_start_matches(['*', '`'])
        .chars()
        .take(8)
        .collect();
    let approved = run(&rig.home, &["pairing", "approve", "wecom_callback", &code]);
    assert!(approved.status.success(), "{approved:?}");
    wecom.deliver(&wc::text_xml(
        wc::CORP_ID,
        BOB,
        "7000000000000000011",
        "hello again",
    ));
    wait("Li's answer", || {
        api.texts_to(BOB).iter().any(|t| t == "Welcome, Li.")
    });

    // The token expires: refreshed once; the long answer arrives in parts of at most 2,048
    // bytes, nothing lost.
    api.expire_token();
    wecom.deliver(&wc::text_xml(
        wc::CORP_ID,
        ANN,
        "7000000000000000020",
        "long please",
    ));
    let parts = || -> Vec<String> {
        api.texts_to(ANN)
            .into_iter()
            .filter(|t| t.contains('a') || t.contains('好'))
            .filter(|t| t.len() > 100)
            .collect()
    };
    wait("the long answer", || {
        let p = parts().concat();
        p.matches('a').count() >= 1500 && p.matches('好').count() >= 1000
    });
    let parts = parts();
    assert!(
        parts.len() >= 2 && parts.iter().all(|p| p.len() <= 2048),
        "{:?}",
        parts.iter().map(String::len).collect::<Vec<_>>()
    );
    let refused: Vec<Value> = api
        .sent_to(ANN)
        .into_iter()
        .filter(|b| {
            b["text"]["content"]
                .as_str()
                .is_some_and(|t| t.len() > 2048)
        })
        .collect();
    assert!(refused.is_empty(), "a part over the limit was sent");
    let token_fetches = api
        .requests()
        .iter()
        .filter(|r| r.path == "/cgi-bin/gettoken")
        .count();
    assert_eq!(
        token_fetches, 2,
        "the token was not cached, or not refreshed"
    );

    // The gateway restarts: the callback URL answers again and the conversation goes on.
    let Rig {
        home,
        gateway,
        wecom,
        port,
    } = rig;
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    let gateway = start_gateway(&home, port);
    wecom.deliver(&wc::text_xml(
        wc::CORP_ID,
        ANN,
        "7000000000000000030",
        "you there?",
    ));
    wait("the answer after the restart", || {
        api.texts_to(ANN).iter().any(|t| t == "Back again.")
    });
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");

    let doctor = run(&home, &["doctor"]);
    let out = stdout(&doctor);
    assert!(
        out.contains(&format!(
            "agent {} of corp {} on 127.0.0.1:",
            wc::AGENT_ID,
            wc::CORP_ID
        )),
        "{out}"
    );
}

#[test]
fn wecom_smart_robot_mode_is_refused_with_the_way_to_callback_mode() {
    let model = MockServer::start(Script::new(vec![Turn::text("unused")]));
    let home = TestHome::new();
    home.write_config(&hermes_testkit::mock_config_yaml(&model));
    home.write_file(".env", "WECOM_BOT_ID=aibot123\nWECOM_SECRET=s\n");
    let status = run(&home, &["gateway", "status"]);
    let out = stdout(&status);
    assert!(out.contains("wecom"), "{out}");
    assert!(out.contains("WECOM_CALLBACK_CORP_ID"), "{out}");
    let doctor = run(&home, &["doctor", "--offline"]);
    let out = stdout(&doctor);
    assert_eq!(doctor.status.code(), Some(1), "{out}");
    assert!(out.contains("Smart Robot"), "{out}");
}
