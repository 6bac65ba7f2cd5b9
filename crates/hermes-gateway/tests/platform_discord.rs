//! The Discord adapter against the testkit's gateway + REST double: IDENTIFY, what arrives,
//! the exact REST calls, RESUME after faults without losing or duplicating a message, auto
//! threads, buttons, rate limits and files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod platform_support;

use std::sync::Arc;
use std::time::Duration;

use hermes_gateway::platform::discord::{DiscordAdapter, DiscordSettings};
use hermes_gateway::platform::{
    AttachmentKind, Button, ButtonStyle, ChatType, ConnectionState, InboundEvent, OutboundMessage,
    PlatformAdapter, PlatformError,
};
use hermes_testkit::platforms::discord::{BOT_ID, DiscordMock, GUILD_ID, user};
use platform_support::{Running, platform_settings, wait_until};
use serde_json::json;

const TOKEN: &str = "discord-test-token";

fn adapter_with(mock: &DiscordMock, yaml_extra: &str) -> Arc<DiscordAdapter> {
    let yaml = format!(
        "platforms:\n  discord:\n    extra:\n      base_url: {}\n{yaml_extra}",
        mock.base_url()
    );
    let (p, env) = platform_settings("discord", &yaml, &[("DISCORD_BOT_TOKEN", TOKEN)]);
    Arc::new(DiscordAdapter::new(DiscordSettings::from_platform(&p, &env).unwrap()).unwrap())
}

fn adapter(mock: &DiscordMock) -> Arc<DiscordAdapter> {
    adapter_with(mock, "")
}

async fn ready(mock: &DiscordMock) {
    wait_until("READY", || mock.connected() && mock.ready_count() >= 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identify_then_a_dm_arrives_and_the_reply_is_sent() {
    let mock = DiscordMock::start(TOKEN, 45_000);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    ready(&mock).await;

    let identify = &mock.frames(2)[0].payload;
    assert_eq!(identify["d"]["token"], json!(TOKEN));
    // GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT
    assert_eq!(identify["d"]["intents"], json!(37377));
    assert_eq!(identify["d"]["properties"]["browser"], json!("hermes"));
    assert_eq!(mock.connections(), vec!["/?v=10&encoding=json".to_string()]);
    assert_eq!(mock.rest_calls_to("GET", "/gateway/bot").len(), 1);

    let (channel, mid) = mock.dm("555", "ann", "hello bot");
    let m = run.next_message().await;
    assert_eq!(m.chat.chat_type, ChatType::Direct);
    assert_eq!(m.chat.chat_id, channel);
    assert_eq!(m.user_id, "555");
    assert_eq!(m.user_name.as_deref(), Some("ann"));
    assert_eq!(m.text, "hello bot");
    assert_eq!(m.message_id, mid);
    assert_eq!(m.chat.session_key(), format!("discord:dm:{channel}"));

    adapter
        .send(
            &m.chat,
            &OutboundMessage::text("Hi **ann**, @everyone").replying_to(mid.clone()),
        )
        .await
        .unwrap();
    let post = &mock.rest_calls_to("POST", &format!("/channels/{channel}/messages"))[0];
    assert_eq!(
        post.header_value("authorization"),
        Some(format!("Bot {TOKEN}"))
    );
    assert_eq!(
        post.body,
        json!({
            "content": "Hi **ann**, @everyone",
            "allowed_mentions": {"parse": ["users"], "replied_user": true},
            "message_reference": {"message_id": mid, "fail_if_not_exists": false},
        })
    );
    assert_eq!(
        mock.bot_messages_in(&channel)[0].content,
        "Hi **ann**, @everyone"
    );
    assert_eq!(adapter.status().state, ConnectionState::Connected);
    run.stop().await;
}

trait HeaderValue {
    fn header_value(&self, name: &str) -> Option<String>;
}

impl HeaderValue for hermes_testkit::platforms::discord::RestCall {
    fn header_value(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_delete_and_typing() {
    let mock = DiscordMock::start(TOKEN, 45_000);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    ready(&mock).await;
    mock.dm("1", "bo", "hi");
    let chat = run.next_message().await.chat;

    let sent = adapter
        .send(
            &chat,
            &OutboundMessage::text("pick").with_buttons(vec![Button::new("A", "a")]),
        )
        .await
        .unwrap();
    adapter
        .edit(&chat, &sent.message_id, "picked **A**")
        .await
        .unwrap();
    let patch = &mock.rest_calls_to("PATCH", &sent.message_id)[0];
    assert_eq!(
        patch.body,
        json!({"content": "picked **A**", "components": []})
    );
    let msg = &mock.bot_messages_in(&chat.chat_id)[0];
    assert_eq!(msg.content, "picked **A**");
    assert_eq!(msg.components, json!([]));
    assert_eq!(msg.edits, vec!["pick".to_string()]);

    adapter.typing(&chat).await.unwrap();
    assert_eq!(
        mock.rest_calls_to("POST", &format!("/channels/{}/typing", chat.chat_id))
            .len(),
        1
    );

    adapter.delete(&chat, &sent.message_id).await.unwrap();
    assert!(mock.bot_messages_in(&chat.chat_id)[0].deleted);
    let err = adapter.delete(&chat, &sent.message_id).await.unwrap_err();
    assert!(
        err.to_string().contains("Unknown Message (code 10008)"),
        "{err}"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_button_press_is_acknowledged_and_arrives_as_a_button_event() {
    let mock = DiscordMock::start(TOKEN, 45_000);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    ready(&mock).await;
    mock.dm("2", "cy", "delete build?");
    let chat = run.next_message().await.chat;

    let sent = adapter
        .send(
            &chat,
            &OutboundMessage::text("Run `rm -rf build`?").with_buttons(vec![
                Button::new("Allow", "approve:once").styled(ButtonStyle::Primary),
                Button::new("Deny", "deny").styled(ButtonStyle::Danger),
            ]),
        )
        .await
        .unwrap();
    let post = &mock.rest_calls_to("POST", "/messages")[0];
    assert_eq!(
        post.body["components"],
        json!([{"type": 1, "components": [
            {"type": 2, "style": 1, "label": "Allow", "custom_id": "approve:once"},
            {"type": 2, "style": 4, "label": "Deny", "custom_id": "deny"},
        ]}])
    );
    let interaction = mock.press_button(&chat.chat_id, &sent.message_id, "2", "deny");
    match run.next().await {
        InboundEvent::Button {
            chat: c,
            user_id,
            message_id,
            data,
            ..
        } => {
            assert_eq!(c, chat);
            assert_eq!((user_id.as_str(), data.as_str()), ("2", "deny"));
            assert_eq!(message_id, sent.message_id);
        }
        other => panic!("expected a button, got {other:?}"),
    }
    let ack = &mock.rest_calls_to("POST", &format!("/interactions/{interaction}/"))[0];
    assert_eq!(ack.body, json!({"type": 6}));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_is_split_at_2000_with_code_blocks_intact() {
    let mock = DiscordMock::start(TOKEN, 45_000);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    ready(&mock).await;
    mock.dm("3", "di", "long");
    let chat = run.next_message().await.chat;

    let mut answer = String::new();
    let mut blocks = 0;
    while answer.len() < 10_000 {
        answer.push_str("Intro paragraph with **bold** text.\n\n```rust\n");
        for i in 0..25 {
            answer.push_str(&format!("let value_{blocks}_{i} = {i};\n"));
        }
        answer.push_str("```\n\n");
        blocks += 1;
    }
    adapter
        .send(&chat, &OutboundMessage::text(answer))
        .await
        .unwrap();
    let sent = mock.bot_messages_in(&chat.chat_id);
    let n = sent.len();
    assert!(n >= 5, "{n} parts");
    let mut lines = 0;
    for (i, m) in sent.iter().enumerate() {
        assert!(m.content.chars().count() <= 2000);
        assert_eq!(m.content.matches("```").count() % 2, 0, "part {i} balanced");
        assert!(m.content.ends_with(&format!("({}/{n})", i + 1)));
        lines += m.content.matches("let value_").count();
    }
    assert_eq!(lines, blocks * 25);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_websocket_resumes_without_losing_or_duplicating_messages() {
    let mock = DiscordMock::start(TOKEN, 45_000);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    ready(&mock).await;
    let ready_session = mock.frames(2).len();
    assert_eq!(ready_session, 1);
    mock.dm("4", "ed", "one");
    assert_eq!(run.next_message().await.text, "one");

    mock.drop_connection();
    // Sent while the bot is away: Discord keeps them for the session.
    mock.dm("4", "ed", "two");
    mock.dm("4", "ed", "three");
    assert_eq!(run.next_message().await.text, "two");
    assert_eq!(run.next_message().await.text, "three");
    mock.dm("4", "ed", "four");
    assert_eq!(run.next_message().await.text, "four");
    assert!(
        run.maybe_next(Duration::from_millis(300)).await.is_none(),
        "no duplicates"
    );

    let resumes = mock.frames(6);
    assert_eq!(resumes.len(), 1);
    let d = &resumes[0].payload["d"];
    assert_eq!(d["token"], json!(TOKEN));
    assert!(d["session_id"].as_str().unwrap().starts_with("session-"));
    // READY (1) + MESSAGE_CREATE "one" (2): the last sequence received.
    assert_eq!(d["seq"], json!(2));
    assert_eq!(mock.ready_count(), 1, "resumed, not identified again");
    assert_eq!(
        mock.connections()[1],
        "/resume/?v=10&encoding=json",
        "resume_gateway_url was used"
    );
    assert!(adapter.status().reconnects >= 1);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_zombie_and_invalid_session_are_handled() {
    let mock = DiscordMock::start(TOKEN, 300);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    ready(&mock).await;

    // Heartbeats carry the last sequence number.
    wait_until("two heartbeats", || mock.frames(1).len() >= 2).await;
    assert_eq!(mock.frames(1)[1].payload, json!({"op": 1, "d": 1}));

    // RECONNECT: resume on a new connection.
    mock.send_reconnect();
    wait_until("a RESUME", || mock.frames(6).len() == 1).await;
    mock.dm("5", "fa", "after reconnect");
    assert_eq!(run.next_message().await.text, "after reconnect");

    // No HEARTBEAT_ACK: the connection is a zombie and is replaced (resumed).
    mock.set_zombie(true);
    wait_until("a second RESUME", || mock.frames(6).len() == 2).await;
    mock.set_zombie(false);
    mock.dm("5", "fa", "after zombie");
    assert_eq!(run.next_message().await.text, "after zombie");

    // INVALID_SESSION (not resumable): a new IDENTIFY after 1-5 s.
    mock.invalidate_session(false);
    wait_until("a new session", || mock.ready_count() == 2).await;
    mock.dm("5", "fa", "new session");
    assert_eq!(run.next_message().await.text, "new session");
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_token_closes_with_4004_and_is_reported() {
    let mock = DiscordMock::start("another-token", 45_000);
    let yaml = format!(
        "platforms:\n  discord:\n    extra:\n      base_url: {}\n      gateway_url: ws://127.0.0.1:{}\n",
        mock.base_url(),
        mock.port()
    );
    let (p, env) = platform_settings("discord", &yaml, &[("DISCORD_BOT_TOKEN", TOKEN)]);
    let adapter =
        Arc::new(DiscordAdapter::new(DiscordSettings::from_platform(&p, &env).unwrap()).unwrap());
    let run = Running::start(adapter.clone());
    wait_until("the failure", || {
        adapter.status().state == ConnectionState::Failed
    })
    .await;
    let (_, err) = adapter.status().last_error.unwrap();
    assert!(
        err.contains("DISCORD_BOT_TOKEN") && err.contains("4004"),
        "{err}"
    );
    assert!(!err.contains(TOKEN));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_in_a_channel_opens_a_thread_that_needs_no_more_mentions() {
    let mock = DiscordMock::start(TOKEN, 45_000);
    mock.add_channel("1001", "general");
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    ready(&mock).await;

    mock.message("1001", user("7", "gi"), "just chatting", json!({}));
    let asked = mock.message(
        "1001",
        user("7", "gi"),
        &format!("<@{BOT_ID}> summarise the logs\nplease"),
        json!({"mentions": [{"id": BOT_ID, "username": "hermes", "bot": true}]}),
    );
    let m = run.next_message().await;
    assert!(m.mentions_bot);
    assert_eq!(m.text, "summarise the logs\nplease");
    assert_eq!(m.chat.chat_type, ChatType::Group);
    assert_eq!(m.chat.chat_id, "1001");
    assert_eq!(m.chat.thread_id.as_deref(), Some(asked.as_str()));
    let thread_call =
        &mock.rest_calls_to("POST", &format!("/channels/1001/messages/{asked}/threads"))[0];
    assert_eq!(
        thread_call.body,
        json!({"name": "summarise the logs", "auto_archive_duration": 1440})
    );
    assert_eq!(mock.channel(&asked).unwrap()["parent_id"], json!("1001"));

    adapter
        .send(&m.chat, &OutboundMessage::text("On it."))
        .await
        .unwrap();
    assert_eq!(
        mock.bot_messages_in(&asked).len(),
        1,
        "the answer went to the thread"
    );

    // In the bot's thread, no mention is needed; outside it, it is.
    mock.message(
        &asked,
        user("7", "gi"),
        "and the errors?",
        json!({"guild_id": GUILD_ID}),
    );
    let t = run.next_message().await;
    assert_eq!(t.text, "and the errors?");
    assert_eq!(t.chat.thread_id.as_deref(), Some(asked.as_str()));
    assert_eq!(t.chat.session_key(), format!("discord:group:1001:{asked}"));
    mock.message("1001", user("7", "gi"), "more chatting", json!({}));
    assert!(run.maybe_next(Duration::from_millis(400)).await.is_none());
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_waited_out() {
    let mock = DiscordMock::start(TOKEN, 45_000);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    ready(&mock).await;
    let (channel, _) = mock.dm("6", "ha", "hi");
    let chat = run.next_message().await.chat;
    let route = format!("/channels/{channel}/messages");

    // A 429 with retry_after: the same request again after the wait.
    mock.rate_limit_next("POST", &route, 0.6);
    adapter
        .send(&chat, &OutboundMessage::text("first"))
        .await
        .unwrap();
    let calls = mock.rest_calls_to("POST", &route);
    assert_eq!(calls.len(), 2);
    assert!(calls[1].at.duration_since(calls[0].at) >= Duration::from_millis(600));

    // An exhausted bucket (X-RateLimit-Remaining: 0): the next call waits for the reset
    // without earning a 429.
    mock.exhaust_bucket_next("POST", &route, 0.8);
    adapter
        .send(&chat, &OutboundMessage::text("second"))
        .await
        .unwrap();
    adapter
        .send(&chat, &OutboundMessage::text("third"))
        .await
        .unwrap();
    let calls = mock.rest_calls_to("POST", &route);
    assert_eq!(calls.len(), 4);
    assert!(calls[3].at.duration_since(calls[2].at) >= Duration::from_millis(800));
    let texts: Vec<String> = mock
        .bot_messages_in(&channel)
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(texts, vec!["first", "second", "third"]);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_download_and_files_upload() {
    let mock = DiscordMock::start(TOKEN, 45_000);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    ready(&mock).await;
    let att = mock.add_attachment(
        "1/2/notes.txt",
        "notes.txt",
        "text/plain",
        b"remember the milk".to_vec(),
    );
    let (channel, _) = mock.dm("8", "io", "hello");
    assert_eq!(run.next_message().await.text, "hello");
    mock.message(
        &channel,
        user("8", "io"),
        "see file",
        json!({"attachments": [att]}),
    );
    let m = run.next_message().await;
    assert_eq!(m.text, "see file");
    assert_eq!(m.attachments[0].kind, AttachmentKind::Document);
    let dir = tempfile::tempdir().unwrap();
    let path = adapter
        .download(&m.attachments[0], dir.path(), 1000)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"remember the milk");
    assert!(matches!(
        adapter.download(&m.attachments[0], dir.path(), 5).await,
        Err(PlatformError::TooLarge { .. })
    ));

    let file = dir.path().join("report.csv");
    std::fs::write(&file, "a,b\n1,2\n").unwrap();
    adapter
        .send(
            &m.chat,
            &OutboundMessage::text("")
                .with_file(hermes_gateway::platform::OutboundFileKind::Document, &file),
        )
        .await
        .unwrap();
    let upload = mock
        .rest_calls_to("POST", &format!("/channels/{channel}/messages"))
        .pop()
        .unwrap();
    assert_eq!(
        upload.body["attachments"],
        json!([{"id": 0, "filename": "report.csv"}])
    );
    assert_eq!(upload.body["_files"][0]["filename"], json!("report.csv"));
    assert_eq!(upload.body["_files"][0]["text"], json!("a,b\n1,2\n"));
    run.stop().await;
}
