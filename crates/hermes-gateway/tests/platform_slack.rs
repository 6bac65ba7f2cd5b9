//! The Slack adapter against the testkit's Web API + Socket Mode double: what arrives, the
//! exact Web API calls, acknowledgements, reconnection after a dropped socket or a
//! `disconnect` without losing or duplicating an event, threads, buttons, rate limits, files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod platform_support;

use std::sync::Arc;
use std::time::Duration;

use hermes_gateway::platform::slack::{SlackAdapter, SlackSettings};
use hermes_gateway::platform::{
    AttachmentKind, Button, ButtonStyle, ChatRef, ChatType, ConnectionState, FileSource,
    InboundEvent, OutboundFileKind, OutboundMessage, PlatformAdapter, PlatformError,
};
use hermes_testkit::platforms::slack::{BOT_USER_ID, SlackMock};
use platform_support::{Running, platform_settings, wait_until};
use serde_json::json;

const BOT: &str = "xoxb-test-bot";
const APP: &str = "xapp-test-app";

fn adapter_with(mock: &SlackMock, yaml_extra: &str, app_token: &str) -> Arc<SlackAdapter> {
    let yaml = format!(
        "platforms:\n  slack:\n    extra:\n      base_url: {}\n{yaml_extra}",
        mock.base_url()
    );
    let (p, _env) = platform_settings(
        "slack",
        &yaml,
        &[("SLACK_BOT_TOKEN", BOT), ("SLACK_APP_TOKEN", app_token)],
    );
    Arc::new(SlackAdapter::new(SlackSettings::from_platform(&p).unwrap()).unwrap())
}

fn adapter(mock: &SlackMock) -> Arc<SlackAdapter> {
    adapter_with(mock, "", APP)
}

async fn connected(mock: &SlackMock) {
    wait_until("the Socket Mode connection", || mock.connected()).await;
}

fn envelope_of(mock: &SlackMock, ts: &str) -> String {
    mock.envelopes()
        .into_iter()
        .find(|e| e.payload["event"]["ts"] == json!(ts))
        .map(|e| e.envelope_id)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dm_arrives_is_acknowledged_and_the_reply_goes_to_its_thread() {
    let mock = SlackMock::start(BOT, APP);
    mock.add_user("U1", "ann", "Ann Lee");
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    connected(&mock).await;

    let ts = mock.dm("U1", "hello <there> & more");
    let m = run.next_message().await;
    assert_eq!(m.chat.chat_type, ChatType::Direct);
    assert_eq!(m.chat.chat_id, "DU1");
    // Each top-level DM is its own thread (dm_top_level_threads_as_sessions).
    assert_eq!(m.chat.thread_id.as_deref(), Some(ts.as_str()));
    assert_eq!(m.user_id, "U1");
    assert_eq!(m.user_name.as_deref(), Some("ann"));
    assert_eq!(m.text, "hello <there> & more");
    assert_eq!(m.message_id, ts);
    wait_until("the ack", || mock.acks().contains(&envelope_of(&mock, &ts))).await;

    adapter
        .send(&m.chat, &OutboundMessage::text("Hi **Ann** <3 & `a<b`"))
        .await
        .unwrap();
    let post = &mock.calls_to("chat.postMessage")[0].params;
    assert_eq!(
        post,
        &json!({"channel": "DU1", "text": "Hi *Ann* &lt;3 &amp; `a&lt;b`", "mrkdwn": true, "thread_ts": ts})
    );
    let sent = mock.bot_messages("DU1");
    assert_eq!(sent[0].thread_ts.as_deref(), Some(ts.as_str()));
    assert_eq!(mock.calls_to("auth.test").len(), 1);
    assert_eq!(mock.calls_to("apps.connections.open").len(), 1);
    assert_eq!(adapter.status().state, ConnectionState::Connected);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_delete_and_the_thinking_status() {
    let mock = SlackMock::start(BOT, APP);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    connected(&mock).await;
    mock.dm("U2", "hi");
    let chat = run.next_message().await.chat;

    adapter.typing(&chat).await.unwrap();
    assert_eq!(
        mock.statuses()[0],
        json!({"channel_id": "DU2", "thread_ts": chat.thread_id.clone().unwrap(), "status": "is thinking..."})
    );
    let sent = adapter
        .send(
            &chat,
            &OutboundMessage::text("pick").with_buttons(vec![Button::new("A", "a")]),
        )
        .await
        .unwrap();
    adapter
        .edit(&chat, &sent.message_id, "picked ~~B~~ **A**")
        .await
        .unwrap();
    assert_eq!(
        mock.calls_to("chat.update")[0].params,
        json!({"channel": "DU2", "ts": sent.message_id, "text": "picked ~B~ *A*", "blocks": []})
    );
    let msg = &mock.bot_messages("DU2")[0];
    assert_eq!(msg.text, "picked ~B~ *A*");
    assert_eq!(msg.blocks, None, "the buttons are gone");
    adapter.delete(&chat, &sent.message_id).await.unwrap();
    assert!(mock.bot_messages("DU2")[0].deleted);
    let err = adapter.delete(&chat, &sent.message_id).await.unwrap_err();
    assert!(err.to_string().contains("message_not_found"), "{err}");
    // No thread, no status line.
    let top = ChatRef::new("slack", ChatType::Group, "C9");
    assert!(matches!(
        adapter.typing(&top).await,
        Err(PlatformError::Unsupported { .. })
    ));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_button_click_arrives_as_a_button_event() {
    let mock = SlackMock::start(BOT, APP);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    connected(&mock).await;
    mock.dm("U3", "deploy?");
    let chat = run.next_message().await.chat;

    let sent = adapter
        .send(
            &chat,
            &OutboundMessage::text("Deploy now?").with_buttons(vec![
                Button::new("Deploy", "approve:once").styled(ButtonStyle::Primary),
                Button::new("Cancel", "deny").styled(ButtonStyle::Danger),
            ]),
        )
        .await
        .unwrap();
    let post = &mock.calls_to("chat.postMessage")[0].params;
    assert_eq!(
        post["blocks"],
        json!([
            {"type": "section", "text": {"type": "mrkdwn", "text": "Deploy now?"}},
            {"type": "actions", "block_id": "hermes_actions", "elements": [
                {"type": "button", "text": {"type": "plain_text", "text": "Deploy"}, "action_id": "hermes_button_0", "value": "approve:once", "style": "primary"},
                {"type": "button", "text": {"type": "plain_text", "text": "Cancel"}, "action_id": "hermes_button_1", "value": "deny", "style": "danger"},
            ]},
        ])
    );
    let envelope = mock.press_button("DU3", &sent.message_id, "U3", "hermes_button_1", "deny");
    match run.next().await {
        InboundEvent::Button {
            chat: c,
            user_id,
            message_id,
            data,
            ..
        } => {
            assert_eq!(c, chat);
            assert_eq!((user_id.as_str(), data.as_str()), ("U3", "deny"));
            assert_eq!(message_id, sent.message_id);
        }
        other => panic!("expected a button, got {other:?}"),
    }
    wait_until("the ack", || mock.acks().contains(&envelope)).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_answers_are_split_at_39000_with_code_blocks_intact() {
    let mock = SlackMock::start(BOT, APP);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    connected(&mock).await;
    mock.dm("U4", "long");
    let chat = run.next_message().await.chat;

    // 10,000 characters fit in one Slack message...
    let mut short = String::new();
    while short.len() < 10_000 {
        short.push_str("Some **text** & <tags>.\n```\nlet a = b < c;\n```\n");
    }
    adapter
        .send(&chat, &OutboundMessage::text(short))
        .await
        .unwrap();
    assert_eq!(mock.bot_messages("DU4").len(), 1);
    // ... 100,000 do not.
    let mut long = String::new();
    let mut blocks = 0;
    while long.len() < 100_000 {
        long.push_str("Paragraph with **bold** text.\n\n```python\n");
        for i in 0..40 {
            long.push_str(&format!("x_{blocks}_{i} = {i}  # a<b\n"));
        }
        long.push_str("```\n\n");
        blocks += 1;
    }
    adapter
        .send(&chat, &OutboundMessage::text(long))
        .await
        .unwrap();
    let parts: Vec<String> = mock
        .bot_messages("DU4")
        .into_iter()
        .skip(1)
        .map(|m| m.text)
        .collect();
    let n = parts.len();
    assert!(n >= 3, "{n}");
    let mut lines = 0;
    for (i, p) in parts.iter().enumerate() {
        assert!(p.chars().count() <= 39_000);
        assert_eq!(p.matches("```").count() % 2, 0, "part {i}");
        assert!(p.ends_with(&format!("({}/{n})", i + 1)));
        assert!(!p.contains("a<b"), "escaped for mrkdwn");
        lines += p.matches("# a&lt;b").count();
    }
    assert_eq!(lines, blocks * 40);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_socket_reconnects_and_nothing_is_lost_or_duplicated() {
    let mock = SlackMock::start(BOT, APP);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    connected(&mock).await;
    let first = mock.dm("U5", "one");
    assert_eq!(run.next_message().await.text, "one");
    let env_one = envelope_of(&mock, &first);
    wait_until("the ack of one", || mock.acks().contains(&env_one)).await;

    // The socket dies and Slack did not see the ack of "one" (it was lost on the way): it
    // sends "one" again on the next connection, with "two", sent while the bot was away.
    mock.forget_ack(&env_one);
    mock.drop_connection();
    wait_until("the drop", || !mock.connected()).await;
    let second = mock.dm("U5", "two");
    assert_eq!(run.next_message().await.text, "two");
    mock.dm("U5", "three");
    assert_eq!(run.next_message().await.text, "three");
    assert!(
        run.maybe_next(Duration::from_millis(400)).await.is_none(),
        "one is not delivered twice"
    );

    let envelopes = mock.envelopes();
    let one = envelopes.iter().find(|e| e.envelope_id == env_one).unwrap();
    assert_eq!(one.deliveries, 2, "redelivered with retry_attempt 1");
    assert!(one.acked, "and acknowledged again");
    assert!(mock.acks().contains(&envelope_of(&mock, &second)));
    assert_eq!(mock.connections(), 2);
    assert_eq!(
        mock.calls_to("apps.connections.open").len(),
        2,
        "a fresh ticket per connection"
    );

    // `disconnect` (refresh_requested): a new connection right away, no event lost.
    mock.send_disconnect("refresh_requested");
    wait_until("the refresh", || {
        mock.connections() == 3 && mock.connected()
    })
    .await;
    mock.dm("U5", "four");
    assert_eq!(run.next_message().await.text, "four");
    assert!(adapter.status().reconnects >= 2);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_messages_need_a_mention_and_threads_follow_it() {
    let mock = SlackMock::start(BOT, APP);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    connected(&mock).await;

    mock.message("C1", "channel", "U6", "just chatting", None, json!({}));
    let asked = mock.message(
        "C1",
        "channel",
        "U6",
        &format!("<@{BOT_USER_ID}> status?"),
        None,
        json!({}),
    );
    let m = run.next_message().await;
    assert!(m.mentions_bot);
    assert_eq!(m.text, "status?");
    assert_eq!(m.chat.chat_type, ChatType::Group);
    // reply_in_thread: the message is the root of the answer's thread.
    assert_eq!(m.chat.thread_id.as_deref(), Some(asked.as_str()));
    assert_eq!(m.chat.session_key(), format!("slack:group:C1:{asked}"));
    adapter
        .send(&m.chat, &OutboundMessage::text("all good"))
        .await
        .unwrap();
    assert_eq!(
        mock.bot_messages("C1")[0].thread_ts.as_deref(),
        Some(asked.as_str())
    );

    // In that thread no mention is needed; at the top level it is.
    mock.message(
        "C1",
        "channel",
        "U6",
        "and the disk?",
        Some(&asked),
        json!({}),
    );
    let t = run.next_message().await;
    assert_eq!(t.text, "and the disk?");
    assert!(t.replies_to_bot);
    assert_eq!(t.chat.thread_id.as_deref(), Some(asked.as_str()));
    mock.message("C1", "channel", "U6", "unrelated", None, json!({}));
    // Other bots stay out.
    mock.message(
        "C1",
        "channel",
        "",
        &format!("<@{BOT_USER_ID}> hi"),
        None,
        json!({"bot_id": "B9", "subtype": "bot_message"}),
    );
    assert!(run.maybe_next(Duration::from_millis(400)).await.is_none());
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_wait_retry_after() {
    let mock = SlackMock::start(BOT, APP);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    connected(&mock).await;
    mock.dm("U7", "hi");
    let chat = run.next_message().await.chat;
    mock.rate_limit_next("chat.postMessage", 1);
    adapter
        .send(&chat, &OutboundMessage::text("ok"))
        .await
        .unwrap();
    let calls = mock.calls_to("chat.postMessage");
    assert_eq!(calls.len(), 2);
    assert!(calls[1].at.duration_since(calls[0].at) >= Duration::from_secs(1));
    assert_eq!(mock.bot_messages("DU7").len(), 1);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_download_with_the_bot_token_only_from_slack_and_upload() {
    let mock = SlackMock::start(BOT, APP);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    connected(&mock).await;
    let url = mock.add_file("T1-F1/notes.txt", b"slack file".to_vec());
    mock.message(
        "DU8",
        "im",
        "U8",
        "see attached",
        None,
        json!({"subtype": "file_share", "files": [{"id": "F1", "name": "notes.txt", "mimetype": "text/plain", "size": 10, "url_private": url}]}),
    );
    let m = run.next_message().await;
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(m.attachments[0].kind, AttachmentKind::Document);
    let dir = tempfile::tempdir().unwrap();
    let path = adapter
        .download(&m.attachments[0], dir.path(), 100)
        .await
        .unwrap();
    assert_eq!(std::fs::read(path).unwrap(), b"slack file");
    // The token never goes to another host.
    let mut foreign = m.attachments[0].clone();
    foreign.source = FileSource::Url("https://evil.example/steal".into());
    assert!(matches!(
        adapter.download(&foreign, dir.path(), 100).await,
        Err(PlatformError::Invalid { .. })
    ));

    let file = dir.path().join("plot.png");
    std::fs::write(&file, b"PNGDATA").unwrap();
    let sent = adapter
        .send(
            &m.chat,
            &OutboundMessage::text("").with_file(OutboundFileKind::Photo, &file),
        )
        .await
        .unwrap();
    let get = &mock.calls_to("files.getUploadURLExternal")[0].params;
    assert_eq!(
        (get["filename"].as_str(), get["length"].as_str()),
        (Some("plot.png"), Some("7"))
    );
    let done = &mock.calls_to("files.completeUploadExternal")[0].params;
    assert_eq!(done["channel_id"], json!("DU8"));
    assert_eq!(done["thread_ts"], json!(m.chat.thread_id.clone().unwrap()));
    let shared = mock.bot_messages("DU8").pop().unwrap();
    assert_eq!(shared.files.len(), 1);
    assert_eq!(sent.message_id, shared.ts);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_app_token_is_reported() {
    let mock = SlackMock::start(BOT, APP);
    let adapter = adapter_with(&mock, "", "xapp-wrong");
    let run = Running::start(adapter.clone());
    wait_until("the failure", || {
        adapter.status().state == ConnectionState::Failed
    })
    .await;
    let (_, err) = adapter.status().last_error.unwrap();
    assert!(
        err.contains("SLACK_APP_TOKEN") && err.contains("invalid_auth"),
        "{err}"
    );
    run.stop().await;
}
