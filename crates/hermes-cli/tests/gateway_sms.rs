//! `hermes gateway` on SMS through Twilio, end to end: the real binary, the testkit's double of
//! Twilio's REST API, Twilio's signed webhook requests, and the scripted model. A signed SMS
//! is answered with exactly the documented `Messages.json` form (Basic auth, our number, the
//! markdown flattened); a bad or missing signature is 403 and never reaches the model; the
//! same `MessageSid` twice is answered once; a stranger gets a pairing code and reaches the
//! model once approved; a long answer is split under Twilio's 1,600 characters with nothing
//! lost; a rate-limited send is retried; `hermes doctor` names the number and account.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use base64::Engine;
use common::gateway::Gateway;
use common::*;
use hermes_testkit::http_client::http;
use hermes_testkit::platforms::twilio::{
    ACCOUNT_SID, AUTH_TOKEN, FRIENDLY_NAME, PHONE_NUMBER, TwilioMock, TwilioWebhook,
};
use hermes_testkit::{MockServer, Script, TestHome, Turn};

const ANN: &str = "+447700900123";
const BOB: &str = "+447700900456";
/// What the user entered in Twilio's console (and what Twilio signs).
const PUBLIC_URL: &str = "https://hermes.example.com/webhooks/twilio";

fn home_for(twilio: &TwilioMock, model: &MockServer, port: u16) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}platforms:\n  sms:\n    extra:\n      api_base: {}\n",
        hermes_testkit::mock_config_yaml(model),
        twilio.api_base()
    ));
    home.write_file(
        ".env",
        &format!(
            "TWILIO_ACCOUNT_SID={ACCOUNT_SID}\nTWILIO_AUTH_TOKEN={AUTH_TOKEN}\nTWILIO_PHONE_NUMBER={PHONE_NUMBER}\n\
             SMS_WEBHOOK_PORT={port}\nSMS_WEBHOOK_URL={PUBLIC_URL}\nSMS_ALLOWED_USERS={ANN}\n"
        ),
    );
    home
}

#[test]
fn sms_signed_messages_duplicates_pairing_long_answers_and_rate_limits() {
    let long = format!("{}\n\n{}", "a".repeat(1200), "b".repeat(1200));
    let model = MockServer::start(Script::new(vec![
        Turn::text("**Hello**, Ann. See [the docs](https://example.com/docs)."),
        Turn::text("Welcome, Bob."),
        Turn::text(long.clone()),
        Turn::text("Still here."),
    ]));
    let twilio = TwilioMock::start();
    let port = free_port();
    let home = home_for(&twilio, &model, port);
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "sms started");
    let addr = format!("127.0.0.1:{port}");
    wait("the webhook listener", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    assert_eq!(http(&addr, "GET", "/health", &[], "").status, 200);
    let hook = TwilioWebhook {
        addr: addr.clone(),
        signed_url: PUBLIC_URL.into(),
        auth_token: AUTH_TOKEN.into(),
    };

    // A signed SMS: answered with the documented REST call.
    let reply = hook.deliver(ANN, "hi there", "SM0001");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.body.contains("<Response></Response>"), "{reply:?}");
    wait("the answer", || !twilio.bodies_to(ANN).is_empty());
    let sent = twilio.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].from, PHONE_NUMBER);
    assert_eq!(sent[0].to, ANN);
    assert_eq!(
        sent[0].body,
        "Hello, Ann. See the docs (https://example.com/docs)."
    );
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{ACCOUNT_SID}:{AUTH_TOKEN}"));
    assert_eq!(sent[0].authorization, format!("Basic {basic}"));
    let request = &model.chat_requests()[0];
    let last = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"].as_str().unwrap().contains("hi there"),
        "{last}"
    );

    // The same SMS again (Twilio retrying), a forged one, an unsigned one: no new turn.
    assert_eq!(hook.deliver(ANN, "hi there", "SM0001").status, 200);
    let forged = TwilioWebhook::form(ANN, "transfer everything", "SM0002");
    assert_eq!(
        hook.deliver_signed(&forged, "bm90IGEgc2lnbmF0dXJl").status,
        403
    );
    assert_eq!(hook.deliver_signed(&forged, "").status, 403);
    // Signed for another URL: refused too.
    let elsewhere = TwilioWebhook {
        signed_url: "https://attacker.example/webhooks/twilio".into(),
        ..hook.clone()
    };
    assert_eq!(elsewhere.deliver(ANN, "hi", "SM0003").status, 403);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        model.chat_request_count(),
        1,
        "a duplicate or forgery reached the model"
    );

    // A stranger: a pairing code, not the model.
    assert_eq!(hook.deliver(BOB, "hello?", "SM0004").status, 200);
    wait("the pairing code", || {
        twilio
            .bodies_to(BOB)
            .iter()
            .any(|t| t.contains("pairing code is"))
    });
    assert_eq!(
        model.chat_request_count(),
        1,
        "a stranger reached the model"
    );
    let text = twilio.bodies_to(BOB)[0].clone();
    let code: String = text
        .split("pairing code is ")
        .nth(1)
        .unwrap()
        .trim_start_matches(['*', '`'])
        .chars()
        .take(8)
        .collect();
    let approved = run(&home, &["pairing", "approve", "sms", &code]);
    assert!(approved.status.success(), "{approved:?}");
    hook.deliver(BOB, "hello again", "SM0005");
    wait("Bob's answer", || {
        twilio.bodies_to(BOB).iter().any(|t| t == "Welcome, Bob.")
    });

    // A long answer: parts under 1,600 characters, nothing lost.
    hook.deliver(ANN, "long please", "SM0006");
    wait("the long answer", || {
        twilio.bodies_to(ANN).iter().any(|t| t.contains('b'))
    });
    let parts: Vec<String> = twilio
        .bodies_to(ANN)
        .into_iter()
        .filter(|t| t.contains("aaaa") || t.contains("bbbb"))
        .collect();
    assert!(parts.len() >= 2, "{parts:?}");
    assert!(parts.iter().all(|p| p.chars().count() <= 1600));
    let joined: String = parts.concat();
    assert_eq!(joined.matches('a').count(), 1200);
    assert_eq!(joined.matches('b').count(), 1200);

    // Twilio rate-limits one send: retried, delivered.
    twilio.fail_next(429, 20429, "Too Many Requests");
    hook.deliver(ANN, "still there?", "SM0007");
    wait("the answer after the rate limit", || {
        twilio.bodies_to(ANN).iter().any(|t| t == "Still here.")
    });
    drop(gateway);

    // doctor: the number and the account.
    let o = run(&home, &["doctor"]);
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "✓ sms          {PHONE_NUMBER} on 127.0.0.1:{} (account {FRIENDLY_NAME}, active)",
            twilio
                .api_base()
                .split(':')
                .nth(2)
                .unwrap()
                .split('/')
                .next()
                .unwrap()
        )),
        "{out}"
    );
}

#[test]
fn sms_without_a_webhook_url_refuses_to_start_and_names_the_fix() {
    let model = MockServer::start(Script::new(vec![Turn::text("unused")]));
    let twilio = TwilioMock::start();
    let home = home_for(&twilio, &model, free_port());
    home.write_file(
        ".env",
        &format!(
            "TWILIO_ACCOUNT_SID={ACCOUNT_SID}\nTWILIO_AUTH_TOKEN={AUTH_TOKEN}\nTWILIO_PHONE_NUMBER={PHONE_NUMBER}\n"
        ),
    );
    let o = run(&home, &["gateway", "status"]);
    let out = stdout(&o);
    assert!(
        out.contains("  sms        cannot start: platforms.sms is enabled but SMS_WEBHOOK_URL (the public URL Twilio posts to and signs; or SMS_INSECURE_NO_SIGNATURE=true for local development) is not set"),
        "{out}"
    );
}
