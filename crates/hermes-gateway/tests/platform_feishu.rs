//! The Feishu adapter against the testkit's Open API double, without the webhook: the exact
//! calls for edits (text `PUT`, card `PATCH` without buttons), recalls, uploads of images and
//! files, replies to a withdrawn message falling back to the chat, markdown as posts across
//! every part, Feishu's errors typed (a refused app secret, rate limits, other codes with
//! their msg), and doctor's probe.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod platform_support;

use std::sync::Arc;

use hermes_gateway::platform::feishu::{FeishuAdapter, FeishuSettings};
use hermes_gateway::platform::{
    Button, ChatRef, ChatType, OutboundFileKind, OutboundMessage, PlatformAdapter, PlatformError,
};
use hermes_testkit::platforms::feishu::{APP_ID, BOT_NAME, BOT_OPEN_ID, FeishuMock};
use platform_support::platform_settings;
use serde_json::json;

const SECRET: &str = "app-secret";
const CHAT: &str = "oc_a0553eda9014c201e6969b478895c230";

fn adapter(mock: &FeishuMock, secret: &str) -> Arc<FeishuAdapter> {
    let yaml = format!(
        "platforms:\n  feishu:\n    extra:\n      base_url: {}\n      max_rate_limit_wait: 0\n",
        mock.url()
    );
    let (p, _env) = platform_settings(
        "feishu",
        &yaml,
        &[
            ("FEISHU_APP_ID", APP_ID),
            ("FEISHU_APP_SECRET", secret),
            ("FEISHU_VERIFICATION_TOKEN", "vt"),
        ],
    );
    Arc::new(FeishuAdapter::new(FeishuSettings::from_platform(&p).unwrap()).unwrap())
}

fn chat() -> ChatRef {
    ChatRef::new("feishu", ChatType::Direct, CHAT)
}

#[tokio::test]
async fn edits_recalls_and_cards() {
    let mock = FeishuMock::start(SECRET);
    let a = adapter(&mock, SECRET);
    let sent = a
        .send(&chat(), &OutboundMessage::text("working…"))
        .await
        .unwrap();
    a.edit(&chat(), &sent.message_id, "Done: **all** good")
        .await
        .unwrap();
    let (id, kind, content) = mock.edits().pop().unwrap();
    assert_eq!(
        (id.as_str(), kind.as_str()),
        (sent.message_id.as_str(), "post")
    );
    assert_eq!(
        content,
        json!({"zh_cn": {"content": [[{"tag": "md", "text": "Done: **all** good"}]]}})
    );
    let put = mock.requests().pop().unwrap();
    assert_eq!(put.method, "PUT");

    // A card: edited by PATCH, its buttons gone.
    let card = a
        .send(
            &chat(),
            &OutboundMessage::text("Allow?").with_buttons(vec![Button::new("Yes", "x:1:yes")]),
        )
        .await
        .unwrap();
    assert_eq!(mock.sent().last().unwrap().msg_type, "interactive");
    a.edit(&chat(), &card.message_id, "Allowed.").await.unwrap();
    let patch = mock.requests().pop().unwrap();
    assert_eq!(patch.method, "PATCH");
    assert_eq!(mock.sent().last().unwrap().buttons(), vec![]);
    assert_eq!(mock.sent().last().unwrap().text(), "Allowed.");

    a.delete(&chat(), &card.message_id).await.unwrap();
    assert_eq!(mock.recalled(), vec![card.message_id.clone()]);
    // Hostile ids never reach a path.
    assert!(matches!(
        a.delete(&chat(), "om_1/../../x").await,
        Err(PlatformError::Invalid { .. })
    ));
    assert!(a.edit(&chat(), "om 1", "x").await.is_err());
}

#[tokio::test]
async fn files_are_uploaded_and_sent_by_key() {
    let mock = FeishuMock::start(SECRET);
    let a = adapter(&mock, SECRET);
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("chart.png");
    std::fs::write(&png, b"not really a png").unwrap();
    let pdf = dir.path().join("report.pdf");
    std::fs::write(&pdf, b"%PDF-1.4").unwrap();
    let message = OutboundMessage::text("Here:")
        .with_file(OutboundFileKind::Photo, png)
        .with_file(OutboundFileKind::Document, pdf);
    let sent = a.send(&chat(), &message).await.unwrap();
    assert_eq!(sent.message_ids.len(), 3);
    let sent = mock.sent();
    assert_eq!(sent[1].msg_type, "image");
    let image_key = sent[1].content["image_key"].as_str().unwrap();
    assert_eq!(mock.upload(image_key).unwrap(), b"not really a png");
    assert_eq!(sent[2].msg_type, "file");
    let file_key = sent[2].content["file_key"].as_str().unwrap();
    assert_eq!(mock.upload(file_key).unwrap(), b"%PDF-1.4");
    let upload = mock
        .requests()
        .into_iter()
        .find(|r| r.path == "/open-apis/im/v1/files")
        .unwrap();
    assert_eq!(upload.body["file_type"], "pdf");
    assert_eq!(upload.body["file_name"], "report.pdf");
}

#[tokio::test]
async fn replies_fall_back_and_markdown_stays_a_post_in_every_part() {
    let mock = FeishuMock::start(SECRET);
    let a = adapter(&mock, SECRET);
    // The message replied to was withdrawn (230011): the answer goes to the chat instead.
    mock.fail_next(
        "/open-apis/im/v1/messages/om_gone/reply",
        400,
        230011,
        "The message was withdrawn.",
    );
    let long = format!("**Title**\n\n{}\n\n{}", "a".repeat(5000), "b".repeat(5000));
    a.send(
        &chat(),
        &OutboundMessage::text(&long).replying_to("om_gone"),
    )
    .await
    .unwrap();
    let sent = mock.sent();
    assert_eq!(sent.len(), 2);
    assert!(
        sent.iter()
            .all(|m| m.msg_type == "post" && m.chat_id == CHAT)
    );
    assert!(sent[0].reply_to.is_none());
}

#[tokio::test]
async fn errors_are_typed() {
    let mock = FeishuMock::start(SECRET);
    let wrong = adapter(&mock, "not-the-secret");
    match wrong.send(&chat(), &OutboundMessage::text("hi")).await {
        Err(PlatformError::Unauthorized { hint, .. }) => assert_eq!(hint, "FEISHU_APP_SECRET"),
        other => panic!("{other:?}"),
    }
    let a = adapter(&mock, SECRET);
    let path = "/open-apis/im/v1/messages";
    mock.fail_next(path, 400, 99991400, "request trigger frequency limit");
    assert!(matches!(
        a.send(&chat(), &OutboundMessage::text("hi")).await,
        Err(PlatformError::RateLimited { .. })
    ));
    mock.fail_next(
        path,
        400,
        230020,
        "This operation triggers the frequency limit.",
    );
    match a.send(&chat(), &OutboundMessage::text("hi")).await {
        Err(PlatformError::Api { message, .. }) => {
            assert!(
                message.contains("230020") && message.contains("frequency"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    // A token Feishu stops accepting is replaced once, transparently.
    mock.expire_token();
    a.send(&chat(), &OutboundMessage::text("still here"))
        .await
        .unwrap();
    assert_eq!(
        a.probe().await.unwrap(),
        format!(
            "{BOT_NAME} ({BOT_OPEN_ID}) on {}",
            mock.url().trim_start_matches("http://")
        )
    );
}
