//! The webhook platform's HTTP server, driven by signed requests like GitHub, GitLab, Svix and
//! generic senders make them: signatures refused and accepted, the prompt template, the
//! answer's destinations (log, another platform, a signed callback, the HTTP response), the
//! event filter, duplicates, rate limits, size limits and agent-created routes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod platform_support;

use std::sync::Arc;
use std::time::Duration;

use hermes_gateway::platform::webhook::{WebhookAdapter, WebhookSettings};
use hermes_gateway::platform::{
    ChatType, InboundEvent, OutboundMessage, PlatformAdapter, PlatformError,
};
use hermes_testkit::http_client::{HttpReply, http};
use hermes_testkit::platforms::webhook::{
    CallbackReceiver, github_signature, now, svix_signature, v1_signature, v2_signature,
};
use platform_support::{Running, platform_settings};
use serde_json::{Value, json};

struct Server {
    adapter: Arc<WebhookAdapter>,
    run: Running,
    addr: String,
    _home: tempfile::TempDir,
}

async fn start(routes_yaml: &str) -> Server {
    start_with(routes_yaml, |_| {}).await
}

async fn start_with(routes_yaml: &str, prepare_home: impl FnOnce(&std::path::Path)) -> Server {
    let home = tempfile::tempdir().unwrap();
    prepare_home(home.path());
    let yaml = format!(
        "platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n      rate_limit: 5\n      max_body_bytes: 2048\n      response_timeout: 20\n      routes:\n{routes_yaml}"
    );
    let (p, _env) = platform_settings("webhook", &yaml, &[("WEBHOOK_SECRET", "global-secret")]);
    let (settings, problems) = WebhookSettings::from_platform(&p, Some(home.path())).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let adapter = Arc::new(
        WebhookAdapter::new(settings)
            .unwrap()
            .with_listener(listener),
    );
    let run = Running::start(adapter.clone());
    Server {
        adapter,
        run,
        addr,
        _home: home,
    }
}

async fn post(addr: &str, path: &str, headers: Vec<(String, String)>, body: &str) -> HttpReply {
    let addr = addr.to_string();
    let path = path.to_string();
    let body = body.to_string();
    tokio::task::spawn_blocking(move || {
        let lines: Vec<String> = headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        http(&addr, "POST", &path, &refs, &body)
    })
    .await
    .unwrap()
}

const GH_ROUTE: &str = "        github:\n          secret: gh-secret\n          events: [pull_request]\n          prompt: 'Review PR #{pull_request.number} \"{pull_request.title}\" by {sender.login} ({event_type}, action {action})'\n";

fn pr_payload() -> Value {
    json!({"action": "opened", "pull_request": {"number": 42, "title": "Fix the parser"}, "sender": {"login": "octo"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_signature_is_refused_and_a_good_one_becomes_a_prompt() {
    let mut s = start(GH_ROUTE).await;
    let body = pr_payload().to_string();

    // Signed with another secret, or not at all: 401, nothing reaches the core.
    let mut headers = vec![
        github_signature("wrong", body.as_bytes()),
        ("X-GitHub-Event".into(), "pull_request".into()),
    ];
    let reply = post(&s.addr, "/webhooks/github", headers.clone(), &body).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json(), json!({"error": "Invalid signature"}));
    let unsigned = post(&s.addr, "/webhooks/github", vec![], &body).await;
    assert_eq!(unsigned.status, 401);
    assert!(s.run.maybe_next(Duration::from_millis(200)).await.is_none());

    headers[0] = github_signature("gh-secret", body.as_bytes());
    headers.push(("X-GitHub-Delivery".into(), "d-1".into()));
    let reply = post(&s.addr, "/webhooks/github", headers, &body).await;
    assert_eq!(reply.status, 202);
    assert_eq!(
        reply.json(),
        json!({"status": "accepted", "route": "github", "event": "pull_request", "delivery_id": "d-1"})
    );
    let m = s.run.next_message().await;
    assert_eq!(
        m.text,
        "Review PR #42 \"Fix the parser\" by octo (pull_request, action opened)"
    );
    assert_eq!(m.chat.platform, "webhook");
    assert_eq!(m.chat.chat_type, ChatType::Webhook);
    assert_eq!(m.chat.chat_id, "github:d-1");
    assert_eq!(m.message_id, "d-1");
    assert_eq!(m.user_id, "webhook:github");
    assert_eq!(m.deliver_to, None);

    // The answer goes to the log (Python's default `deliver`).
    let sent = s
        .adapter
        .send(&m.chat, &OutboundMessage::text("LGTM"))
        .await
        .unwrap();
    assert_eq!(sent.message_id, "d-1");
    assert!(matches!(
        s.adapter.edit(&m.chat, "d-1", "x").await,
        Err(PlatformError::Unsupported { .. })
    ));
    assert_eq!(s.adapter.status().received, 1);
    s.run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_signature_scheme_of_the_python_hermes_is_accepted() {
    let mut s = start("        any:\n          prompt: '{msg}'\n").await;
    let body = json!({"msg": "hi"}).to_string();
    let b = body.as_bytes();
    let schemes: Vec<Vec<(String, String)>> = vec![
        vec![github_signature("global-secret", b)],
        vec![("X-Gitlab-Token".into(), "global-secret".into())],
        v2_signature("global-secret", b, now()),
        vec![v1_signature("global-secret", b)],
        svix_signature("global-secret", "msg_1", b, now()),
    ];
    for (i, mut headers) in schemes.into_iter().enumerate() {
        headers.push(("X-Request-ID".into(), format!("r{i}")));
        let reply = post(&s.addr, "/webhooks/any", headers, &body).await;
        assert_eq!(reply.status, 202, "scheme {i}: {}", reply.body);
        assert_eq!(s.run.next_message().await.text, "hi");
    }
    // A V2 signature outside the 5-minute window is a replay.
    let old = v2_signature("global-secret", b, now() - 3600);
    assert_eq!(post(&s.addr, "/webhooks/any", old, &body).await.status, 401);
    s.run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_can_be_the_http_response() {
    let mut s = start("        ask:\n          secret: s1\n          prompt: 'Q: {question}'\n          deliver: response\n").await;
    let body = json!({"question": "2+2?"}).to_string();
    let headers = v2_signature("s1", body.as_bytes(), now());
    let addr = s.addr.clone();
    let pending = tokio::spawn(async move { post(&addr, "/webhooks/ask", headers, &body).await });
    let m = s.run.next_message().await;
    assert_eq!(m.text, "Q: 2+2?");
    s.adapter
        .send(&m.chat, &OutboundMessage::text("4"))
        .await
        .unwrap();
    let reply = pending.await.unwrap();
    assert_eq!(reply.status, 200);
    let j = reply.json();
    assert_eq!(
        (
            j["status"].as_str(),
            j["response"].as_str(),
            j["route"].as_str()
        ),
        (Some("ok"), Some("4"), Some("ask"))
    );
    s.run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_can_go_to_a_signed_callback() {
    let receiver = CallbackReceiver::start();
    let route = format!(
        "        cb:\n          secret: cb-secret\n          deliver: callback\n          deliver_extra:\n            url: {}\n",
        receiver.url()
    );
    let mut s = start(&route).await;
    let body = json!({"type": "alert", "x": 1}).to_string();
    let mut headers = vec![v1_signature("cb-secret", body.as_bytes())];
    headers.push(("X-Request-ID".into(), "req-9".into()));
    assert_eq!(
        post(&s.addr, "/webhooks/cb", headers, &body).await.status,
        202
    );
    let m = s.run.next_message().await;
    // No template: the default prompt with the payload.
    assert!(
        m.text
            .starts_with("Webhook event 'alert' on route 'cb':\n\n```json\n{"),
        "{}",
        m.text
    );
    s.adapter
        .send(&m.chat, &OutboundMessage::text("handled"))
        .await
        .unwrap();
    assert!(receiver.wait_for(1, Duration::from_secs(10)));
    let cb = &receiver.requests()[0];
    let sent_body = String::from_utf8(cb.body.clone()).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&sent_body).unwrap(),
        json!({"route": "cb", "delivery_id": "req-9", "event": "alert", "response": "handled"})
    );
    // Signed with the route's secret, V2 scheme: the receiver can check it.
    let ts: i64 = cb.header("x-webhook-timestamp").unwrap().parse().unwrap();
    let expected = v2_signature("cb-secret", sent_body.as_bytes(), ts);
    assert_eq!(
        cb.header("x-webhook-signature-v2"),
        Some(expected[1].1.as_str())
    );
    s.run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_can_deliver_to_another_platform_with_or_without_the_agent() {
    let mut s = start(
        "        alerts:\n          deliver: telegram\n          deliver_extra: {chat_id: '{chat}', thread_id: '7'}\n          prompt: 'Alert: {text}'\n          skills: [triage]\n        push:\n          deliver: telegram\n          deliver_only: true\n          prompt: 'Build {status}'\n",
    )
    .await;
    let body = json!({"chat": "-100123", "text": "disk full"}).to_string();
    let reply = post(
        &s.addr,
        "/webhooks/alerts",
        vec![v1_signature("global-secret", body.as_bytes())],
        &body,
    )
    .await;
    assert_eq!(reply.status, 202);
    let m = s.run.next_message().await;
    assert_eq!(m.text, "Alert: disk full");
    assert_eq!(m.skills, vec!["triage".to_string()]);
    let to = m.deliver_to.clone().unwrap();
    assert_eq!(
        (
            to.platform.as_str(),
            to.chat_id.as_str(),
            to.thread_id.as_deref()
        ),
        ("telegram", "-100123", Some("7"))
    );
    assert!(matches!(
        s.adapter.send(&m.chat, &OutboundMessage::text("x")).await,
        Err(PlatformError::Unsupported { .. })
    ));

    let body = json!({"status": "green"}).to_string();
    let reply = post(
        &s.addr,
        "/webhooks/push",
        vec![v1_signature("global-secret", body.as_bytes())],
        &body,
    )
    .await;
    assert_eq!(reply.status, 202);
    assert_eq!(reply.json()["target"], json!("telegram"));
    match s.run.next().await {
        InboundEvent::Deliver { to, text } => {
            assert_eq!(text, "Build green");
            assert_eq!(
                (to.platform.as_str(), to.chat_id.as_str()),
                ("telegram", ""),
                "no chat id: the home channel"
            );
        }
        other => panic!("expected a delivery, got {other:?}"),
    }
    s.run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_duplicates_limits_and_unknown_routes() {
    let mut s = start(GH_ROUTE).await;
    let sign = |body: &str, delivery: &str, event: &str| {
        vec![
            github_signature("gh-secret", body.as_bytes()),
            ("X-GitHub-Delivery".to_string(), delivery.to_string()),
            ("X-GitHub-Event".to_string(), event.to_string()),
        ]
    };
    let body = pr_payload().to_string();
    // Another event type: ignored.
    let reply = post(&s.addr, "/webhooks/github", sign(&body, "a", "push"), &body).await;
    assert_eq!(
        (reply.status, reply.json()),
        (200, json!({"status": "ignored", "event": "push"}))
    );
    // The same delivery twice: handled once.
    assert_eq!(
        post(
            &s.addr,
            "/webhooks/github",
            sign(&body, "b", "pull_request"),
            &body
        )
        .await
        .status,
        202
    );
    let dup = post(
        &s.addr,
        "/webhooks/github",
        sign(&body, "b", "pull_request"),
        &body,
    )
    .await;
    assert_eq!(
        (dup.status, dup.json()["status"].clone()),
        (200, json!("duplicate"))
    );
    assert_eq!(s.run.next_message().await.message_id, "b");
    assert!(s.run.maybe_next(Duration::from_millis(200)).await.is_none());
    // 5 per minute on this route (3 used): then 429.
    let mut statuses = Vec::new();
    for i in 0..4 {
        statuses.push(
            post(
                &s.addr,
                "/webhooks/github",
                sign(&body, &format!("c{i}"), "pull_request"),
                &body,
            )
            .await
            .status,
        );
    }
    assert_eq!(statuses, vec![202, 202, 429, 429]);
    // Too large: 413 (before anything else is looked at).
    let big = json!({"x": "y".repeat(5000)}).to_string();
    assert_eq!(
        post(
            &s.addr,
            "/webhooks/github",
            sign(&big, "z", "pull_request"),
            &big
        )
        .await
        .status,
        413
    );
    assert_eq!(
        post(&s.addr, "/webhooks/nope", vec![], "{}").await.status,
        404
    );
    let health = tokio::task::spawn_blocking({
        let addr = s.addr.clone();
        move || http(&addr, "GET", "/health", &[], "")
    })
    .await
    .unwrap();
    assert_eq!(
        health.json(),
        json!({"status": "ok", "platform": "webhook"})
    );
    s.run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_made_by_the_agent_are_read_from_the_home() {
    let mut s = start_with("        fixed:\n          prompt: x\n", |home| {
        std::fs::write(
            home.join("webhook_subscriptions.json"),
            json!({"dyn": {"secret": "d-secret", "prompt": "dynamic {v}"}, "nosecret": {"prompt": "x", "secret": ""}}).to_string(),
        )
        .unwrap();
    })
    .await;
    let body = json!({"v": 1}).to_string();
    let reply = post(
        &s.addr,
        "/webhooks/dyn",
        vec![v1_signature("d-secret", body.as_bytes())],
        &body,
    )
    .await;
    assert_eq!(reply.status, 202, "{}", reply.body);
    assert_eq!(s.run.next_message().await.text, "dynamic 1");
    // A route whose secret is empty is left off (it would accept anyone).
    let reply = post(
        &s.addr,
        "/webhooks/nosecret",
        vec![v1_signature("d-secret", body.as_bytes())],
        &body,
    )
    .await;
    assert_eq!(reply.status, 404);
    let (_, problem) = s.adapter.status().last_error.unwrap();
    assert!(
        problem.contains("nosecret") && problem.contains("no HMAC secret"),
        "{problem}"
    );
    s.run.stop().await;
}
