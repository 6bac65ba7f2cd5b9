//! The Telegram adapter against the testkit's Bot API double: what arrives, the exact calls
//! sent, offsets, rate limits, webhook mode, group rules, buttons and files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod platform_support;

use std::sync::Arc;
use std::time::Duration;

use hermes_gateway::platform::telegram::{TelegramAdapter, TelegramSettings};
use hermes_gateway::platform::{
    AttachmentKind, Button, ChatType, ConnectionState, InboundEvent, OutboundFileKind,
    OutboundMessage, PlatformAdapter, PlatformError,
};
use hermes_testkit::platforms::telegram::{BOT_ID, BOT_USERNAME, TelegramMock};
use platform_support::{Running, platform_settings, wait_until};
use serde_json::json;

const TOKEN: &str = "123456:TEST-token";

fn adapter_with(
    mock: &TelegramMock,
    yaml_extra: &str,
    vars: &[(&str, &str)],
) -> Arc<TelegramAdapter> {
    let yaml = format!(
        "platforms:\n  telegram:\n    extra:\n      base_url: {}\n      base_file_url: {}\n{yaml_extra}",
        mock.base_url(),
        mock.base_file_url()
    );
    let mut all = vec![("TELEGRAM_BOT_TOKEN", TOKEN)];
    all.extend_from_slice(vars);
    let (p, env) = platform_settings("telegram", &yaml, &all);
    Arc::new(TelegramAdapter::new(TelegramSettings::from_platform(&p, &env).unwrap()).unwrap())
}

fn adapter(mock: &TelegramMock) -> Arc<TelegramAdapter> {
    adapter_with(mock, "", &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dm_arrives_and_the_reply_is_sent_as_markdown_v2() {
    let mock = TelegramMock::start(TOKEN);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());

    let user_msg = mock.dm(4242, "Ann", "hello there");
    let m = run.next_message().await;
    assert_eq!(m.chat.platform, "telegram");
    assert_eq!(m.chat.chat_type, ChatType::Direct);
    assert_eq!(m.chat.chat_id, "4242");
    assert_eq!(m.chat.thread_id, None);
    assert_eq!(m.user_id, "4242");
    assert_eq!(m.user_name.as_deref(), Some("Ann"));
    assert_eq!(m.text, "hello there");
    assert_eq!(m.message_id, user_msg.to_string());
    assert!(!m.mentions_bot && !m.replies_to_bot && !m.from_bot);
    assert_eq!(m.chat.session_key(), "telegram:dm:4242");

    let sent = adapter
        .send(
            &m.chat,
            &OutboundMessage::text("Hi **Ann**. (1+1=2)").replying_to(m.message_id.clone()),
        )
        .await
        .unwrap();
    let calls = mock.calls_to("sendMessage");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].params,
        json!({
            "chat_id": 4242,
            "text": "Hi *Ann*\\. \\(1\\+1\\=2\\)",
            "parse_mode": "MarkdownV2",
            "reply_parameters": {"message_id": user_msg, "allow_sending_without_reply": true},
        })
    );
    let shown = mock.messages(4242);
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].text, "Hi Ann. (1+1=2)");
    assert_eq!(sent.message_id, shown[0].message_id.to_string());
    assert_eq!(adapter.status().sent, 1);
    assert_eq!(adapter.status().received, 1);
    assert_eq!(adapter.status().state, ConnectionState::Connected);

    adapter.typing(&m.chat).await.unwrap();
    assert_eq!(
        mock.calls_to("sendChatAction")[0].params,
        json!({"chat_id": 4242, "action": "typing"})
    );
    run.stop().await;
    assert_eq!(adapter.status().state, ConnectionState::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_and_delete() {
    let mock = TelegramMock::start(TOKEN);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    mock.dm(7, "Bo", "hi");
    let chat = run.next_message().await.chat;

    let sent = adapter
        .send(&chat, &OutboundMessage::text("working…"))
        .await
        .unwrap();
    adapter
        .edit(&chat, &sent.message_id, "done: `x.y`")
        .await
        .unwrap();
    let edit = &mock.calls_to("editMessageText")[0].params;
    assert_eq!(
        edit,
        &json!({"chat_id": 7, "message_id": sent.message_id.parse::<i64>().unwrap(), "text": "done: `x.y`", "parse_mode": "MarkdownV2"})
    );
    let msg = &mock.messages(7)[0];
    assert_eq!(msg.text, "done: x.y");
    assert_eq!(msg.edits, vec!["working…".to_string()]);
    // The same text again is not an error (Telegram's "message is not modified").
    adapter
        .edit(&chat, &sent.message_id, "done: `x.y`")
        .await
        .unwrap();

    adapter.delete(&chat, &sent.message_id).await.unwrap();
    assert!(mock.messages(7)[0].deleted);
    let err = adapter.delete(&chat, &sent.message_id).await.unwrap_err();
    assert!(
        err.to_string().contains("message to delete not found"),
        "{err}"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_button_press_arrives_as_a_button_event_and_is_answered() {
    let mock = TelegramMock::start(TOKEN);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    mock.dm(11, "Cy", "rm -rf build?");
    let chat = run.next_message().await.chat;

    let prompt = OutboundMessage::text("Run `rm -rf build`?").with_buttons(vec![
        Button::new("Allow", "approve:once"),
        Button::new("Deny", "deny"),
    ]);
    let sent = adapter.send(&chat, &prompt).await.unwrap();
    let call = &mock.calls_to("sendMessage")[0].params;
    assert_eq!(
        call["reply_markup"],
        json!({"inline_keyboard": [[
            {"text": "Allow", "callback_data": "approve:once"},
            {"text": "Deny", "callback_data": "deny"},
        ]]})
    );
    let mid: i64 = sent.message_id.parse().unwrap();
    let query = mock.press_button(11, 11, mid, "approve:once");
    match run.next().await {
        InboundEvent::Button {
            chat: c,
            user_id,
            message_id,
            data,
            ..
        } => {
            assert_eq!(c, chat);
            assert_eq!(user_id, "11");
            assert_eq!(message_id, sent.message_id);
            assert_eq!(data, "approve:once");
        }
        other => panic!("expected a button, got {other:?}"),
    }
    assert_eq!(
        mock.answered_callbacks(),
        vec![json!({"callback_query_id": query})]
    );

    // Editing the prompt removes its buttons.
    adapter
        .edit(&chat, &sent.message_id, "Allowed.")
        .await
        .unwrap();
    assert_eq!(mock.messages(11)[0].reply_markup, None);

    // Telegram's 64-byte limit on callback data is checked before sending.
    let too_long = OutboundMessage::text("x").with_buttons(vec![Button::new("b", "d".repeat(65))]);
    assert!(matches!(
        adapter.send(&chat, &too_long).await,
        Err(PlatformError::Invalid { .. })
    ));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_markdown_answer_is_split_escaped_and_accepted_by_telegram() {
    let mock = TelegramMock::start(TOKEN);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    mock.dm(5, "Di", "write a lot");
    let chat = run.next_message().await.chat;

    let mut answer = String::new();
    let mut section = 0;
    while answer.chars().count() < 10_000 {
        answer.push_str(&format!(
            "## Part {section}\nSome **bold** and *italic* text (with specials: a_b, 1+1=2, x.y!)\n\n```python\n"
        ));
        for line in 0..12 {
            answer.push_str(&format!("print(\"line {section}.{line}\")  # a_b [x]\n"));
        }
        answer.push_str("```\n\n");
        section += 1;
    }
    let sent = adapter
        .send(&chat, &OutboundMessage::text(answer.clone()))
        .await
        .unwrap();
    let messages = mock.messages(5);
    let n = messages.len();
    assert!(n >= 3, "split into {n}");
    assert_eq!(sent.message_ids.len(), n);
    let mut printed = 0;
    for (i, m) in messages.iter().enumerate() {
        // Accepted by the MarkdownV2 parser of the mock (a bad escape is a 400), within 4096.
        assert_eq!(m.parse_mode.as_deref(), Some("MarkdownV2"));
        assert!(m.raw_text.encode_utf16().count() <= 4096);
        assert!(m.text.ends_with(&format!("({}/{n})", i + 1)), "{}", m.text);
        // Code fences balanced in every part.
        assert_eq!(m.raw_text.matches("```").count() % 2, 0, "part {i}");
        printed += m.text.matches("print(\"line ").count();
    }
    assert_eq!(printed, section * 12, "every code line arrived once");
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_confirm_updates_so_none_is_delivered_twice() {
    let mock = TelegramMock::start(TOKEN);
    let first = adapter(&mock);
    let mut run = Running::start(first.clone());
    let ids: Vec<i64> = (0..3).map(|i| mock.dm(1, "Ed", &format!("m{i}"))).collect();
    for i in 0..3 {
        assert_eq!(run.next_message().await.text, format!("m{i}"));
    }
    // The next getUpdates carries offset = last update_id + 1, which confirms them.
    wait_until("the batch to be confirmed", || mock.pending_updates() == 0).await;
    let polls = mock.calls_to("getUpdates");
    let offsets: Vec<Option<i64>> = polls.iter().map(|c| c.params["offset"].as_i64()).collect();
    assert_eq!(offsets[0], None);
    let last = offsets.iter().flatten().max().copied().unwrap();
    assert!(ids.len() == 3 && last > 500_000);
    assert_eq!(
        polls[0].params["allowed_updates"],
        json!(["message", "callback_query"])
    );
    run.stop().await;

    // A new process (a new adapter) gets nothing old, then exactly the new message.
    let second = adapter(&mock);
    let mut run = Running::start(second);
    assert!(run.maybe_next(Duration::from_millis(800)).await.is_none());
    mock.dm(1, "Ed", "m3");
    assert_eq!(run.next_message().await.text, "m3");
    assert!(run.maybe_next(Duration::from_millis(300)).await.is_none());
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_wait_retry_after() {
    let mock = TelegramMock::start(TOKEN);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    mock.dm(3, "Fa", "hi");
    let chat = run.next_message().await.chat;

    mock.fail_next(
        "sendMessage",
        429,
        "Too Many Requests: retry after 1",
        Some(1),
    );
    adapter
        .send(&chat, &OutboundMessage::text("ok"))
        .await
        .unwrap();
    let calls = mock.calls_to("sendMessage");
    assert_eq!(calls.len(), 2);
    assert!(calls[1].at.duration_since(calls[0].at) >= Duration::from_secs(1));
    assert_eq!(mock.messages(3).len(), 1, "sent once");

    // getUpdates too: the poller waits, then goes on without losing a message.
    mock.fail_next(
        "getUpdates",
        429,
        "Too Many Requests: retry after 1",
        Some(1),
    );
    mock.dm(3, "Fa", "one");
    assert_eq!(run.next_message().await.text, "one");
    mock.dm(3, "Fa", "two");
    assert_eq!(run.next_message().await.text, "two");
    let polls = mock.calls_to("getUpdates");
    let waited = polls.windows(2).any(|w| {
        w[0].params["offset"] == w[1].params["offset"]
            && w[1].at.duration_since(w[0].at) >= Duration::from_secs(1)
    });
    assert!(
        waited,
        "the poll after the 429 came at least retry_after later"
    );

    // A wait longer than the configured cap goes back to the caller.
    mock.fail_next(
        "sendMessage",
        429,
        "Too Many Requests: retry after 3600",
        Some(3600),
    );
    match adapter.send(&chat, &OutboundMessage::text("later")).await {
        Err(PlatformError::RateLimited { retry_after, .. }) => {
            assert_eq!(retry_after, Duration::from_secs(3600))
        }
        other => panic!("expected a rate limit, got {other:?}"),
    }
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_mode_registers_the_secret_and_refuses_forged_updates() {
    let mock = TelegramMock::start(TOKEN);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/tg-hook");
    let adapter = Arc::new(
        {
            let yaml = format!(
                "platforms:\n  telegram:\n    extra:\n      base_url: {}\n",
                mock.base_url()
            );
            let (p, env) = platform_settings(
                "telegram",
                &yaml,
                &[
                    ("TELEGRAM_BOT_TOKEN", TOKEN),
                    ("TELEGRAM_WEBHOOK_URL", &url),
                    ("TELEGRAM_WEBHOOK_SECRET", "s3cret"),
                ],
            );
            TelegramAdapter::new(TelegramSettings::from_platform(&p, &env).unwrap()).unwrap()
        }
        .with_webhook_listener(listener),
    );
    let mut run = Running::start(adapter.clone());
    wait_until("setWebhook", || !mock.calls_to("setWebhook").is_empty()).await;
    let set = &mock.calls_to("setWebhook")[0].params;
    assert_eq!(set["url"], json!(url));
    assert_eq!(set["secret_token"], json!("s3cret"));
    assert_eq!(set["allowed_updates"], json!(["message", "callback_query"]));

    mock.dm(77, "Gi", "via webhook");
    let m = run.next_message().await;
    assert_eq!(
        (m.chat.chat_id.as_str(), m.text.as_str()),
        ("77", "via webhook")
    );
    wait_until("the delivery to be acknowledged", || {
        mock.webhook_deliveries().contains(&200)
    })
    .await;
    assert!(mock.calls_to("getUpdates").is_empty());

    // A forged update without the secret is refused and never reaches the core.
    let forged = json!({"update_id": 1, "message": {"message_id": 1, "chat": {"id": 1, "type": "private"}, "from": {"id": 1, "first_name": "X"}, "date": 0, "text": "forged"}});
    let addr = format!("127.0.0.1:{port}");
    let reply = tokio::task::spawn_blocking(move || {
        hermes_testkit::http_client::http(&addr, "POST", "/tg-hook", &[], &forged.to_string())
    })
    .await
    .unwrap();
    assert_eq!(reply.status, 403);
    assert!(run.maybe_next(Duration::from_millis(300)).await.is_none());
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_messages_follow_the_mention_rules() {
    let mock = TelegramMock::start(TOKEN);
    let adapter = adapter_with(&mock, "telegram:\n  require_mention: true\n", &[]);
    let mut run = Running::start(adapter.clone());

    mock.group_message(-1001, "Team", 5, "chatter not for the bot", json!({}));
    let mention = format!("@{BOT_USERNAME} what is 2+2");
    mock.group_message(
        -1001,
        "Team",
        5,
        &mention,
        json!({"entities": [{"type": "mention", "offset": 0, "length": BOT_USERNAME.len() + 1}]}),
    );
    let m = run.next_message().await;
    assert_eq!(m.chat.chat_type, ChatType::Group);
    assert_eq!(m.chat.chat_id, "-1001");
    assert_eq!(m.chat_name.as_deref(), Some("Team"));
    assert!(m.mentions_bot);
    assert_eq!(m.text, "what is 2+2");

    // A reply to the bot's message is for the bot too; in a forum topic, the topic is the
    // thread.
    let sent = adapter
        .send(&m.chat, &OutboundMessage::text("4"))
        .await
        .unwrap();
    mock.group_message(
        -1001,
        "Team",
        5,
        "and 3+3?",
        json!({
            "reply_to_message": {"message_id": sent.message_id.parse::<i64>().unwrap(), "from": {"id": BOT_ID, "is_bot": true, "first_name": "Hermes"}, "chat": {"id": -1001, "type": "supergroup"}, "date": 0, "text": "4"},
        }),
    );
    let r = run.next_message().await;
    assert!(r.replies_to_bot && !r.mentions_bot);
    assert_eq!(r.reply_to.as_deref(), Some(sent.message_id.as_str()));

    mock.push_message(
        json!({"id": -1002, "type": "supergroup", "title": "Forum", "is_forum": true}),
        json!({"id": 6, "is_bot": false, "first_name": "Ha"}),
        "/new@hermes_test_bot",
        json!({"message_thread_id": 44, "is_topic_message": true, "entities": [{"type": "bot_command", "offset": 0, "length": 20}]}),
    );
    let t = run.next_message().await;
    assert_eq!(t.chat.thread_id.as_deref(), Some("44"));
    assert_eq!(t.text, "/new");
    assert_eq!(t.chat.session_key(), "telegram:group:-1002:44");
    adapter
        .send(&t.chat, &OutboundMessage::text("new session"))
        .await
        .unwrap();
    let call = mock.calls_to("sendMessage").last().unwrap().params.clone();
    assert_eq!(call["message_thread_id"], json!(44));

    // Other bots stay out unless allowed.
    mock.group_message(-1001, "Team", 5, "ignored chatter", json!({}));
    mock.push_message(
        json!({"id": -1001, "type": "supergroup", "title": "Team"}),
        json!({"id": 99, "is_bot": true, "first_name": "OtherBot"}),
        &mention,
        json!({"entities": [{"type": "mention", "offset": 0, "length": BOT_USERNAME.len() + 1}]}),
    );
    assert!(run.maybe_next(Duration::from_millis(500)).await.is_none());
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_are_downloaded_with_a_size_cap_and_files_are_sent() {
    let mock = TelegramMock::start(TOKEN);
    let adapter = adapter(&mock);
    let mut run = Running::start(adapter.clone());
    mock.add_file("doc-1", "documents/file_1.pdf", b"%PDF-1.4 hello".to_vec());
    mock.push_message(
        json!({"id": 8, "type": "private", "first_name": "Io"}),
        json!({"id": 8, "is_bot": false, "first_name": "Io"}),
        "",
        json!({"text": null, "caption": "read this", "document": {"file_id": "doc-1", "file_name": "../../report.pdf", "mime_type": "application/pdf", "file_size": 14}}),
    );
    let m = run.next_message().await;
    assert_eq!(m.text, "read this");
    assert_eq!(m.attachments.len(), 1);
    let att = &m.attachments[0];
    assert_eq!(att.kind, AttachmentKind::Document);
    assert_eq!(att.size, Some(14));

    let dir = tempfile::tempdir().unwrap();
    let path = adapter.download(att, dir.path(), 1024).await.unwrap();
    assert!(path.starts_with(dir.path()));
    assert!(
        path.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("_report.pdf")
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"%PDF-1.4 hello");
    let err = adapter.download(att, dir.path(), 4).await.unwrap_err();
    assert!(
        matches!(
            err,
            PlatformError::TooLarge {
                size: 14,
                limit: 4,
                ..
            }
        ),
        "{err}"
    );

    let photo = dir.path().join("chart.png");
    std::fs::write(&photo, b"\x89PNG fake").unwrap();
    let sent = adapter
        .send(
            &m.chat,
            &OutboundMessage::text("here").with_file(OutboundFileKind::Photo, &photo),
        )
        .await
        .unwrap();
    assert_eq!(sent.message_ids.len(), 2);
    let call = &mock.calls_to("sendPhoto")[0].params;
    assert_eq!(call["chat_id"], json!("8"));
    assert_eq!(call["photo"]["filename"], json!("chart.png"));
    assert_eq!(call["photo"]["size"], json!(9));
    assert_eq!(mock.messages(8)[1].media.as_deref(), Some("photo"));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_token_is_reported_not_fatal_to_the_process() {
    let mock = TelegramMock::start("999:other");
    let adapter = adapter(&mock);
    let run = Running::start(adapter.clone());
    wait_until("the failure to show", || {
        adapter.status().state == ConnectionState::Failed
    })
    .await;
    let (_, err) = adapter.status().last_error.unwrap();
    assert!(err.contains("TELEGRAM_BOT_TOKEN"), "{err}");
    assert!(
        !err.contains("123456:TEST-token"),
        "the token never appears: {err}"
    );
    run.stop().await;
}
