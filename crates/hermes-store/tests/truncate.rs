//! Taking messages back (`/undo`, `/retry`): the session keeps its first N messages, the rest
//! are deleted (from search too) and the session's counts follow; through the writer, the
//! truncation lands in order with the appends around it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_protocol::{Message, ToolCall};
use hermes_store::{MessageMeta, NewSession, SessionStart, SessionWriter, Store, StoreOptions};

fn session(id: &str) -> NewSession {
    NewSession {
        id: id.into(),
        source: "cli".into(),
        ..NewSession::default()
    }
}

fn call() -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: "terminal".into(),
        arguments: "{\"command\":\"ls\"}".into(),
    }
}

#[test]
fn truncating_keeps_the_head_and_recounts() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("sessions.db")).unwrap();
    store.create_session(&session("s1")).unwrap();
    let meta = MessageMeta::default();
    for m in [
        Message::user("first question"),
        Message::assistant("first answer"),
        Message::user("zebra second question"),
        Message::assistant_with_tools("", vec![call()]),
        Message::tool_result("c1", "terminal", "listing"),
    ] {
        store.append_message("s1", &m, &meta).unwrap();
    }
    store.start_partial("s1", "half an ans").unwrap();
    assert_eq!(store.truncate_messages("s1", 2).unwrap(), 4);
    let kept: Vec<String> = store
        .messages("s1")
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(kept, vec!["first question", "first answer"]);
    let record = store.session("s1").unwrap().unwrap();
    assert_eq!(record.message_count, 2);
    assert_eq!(record.tool_call_count, 0);
    assert!(
        store
            .search(&hermes_store::SearchQuery::new("zebra"))
            .unwrap()
            .is_empty(),
        "gone from search"
    );
    assert_eq!(
        store.truncate_messages("s1", 5).unwrap(),
        0,
        "nothing beyond"
    );
    assert_eq!(store.truncate_messages("nope", 0).unwrap(), 0);
}

#[test]
fn the_writer_truncates_in_order_with_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let writer = SessionWriter::spawn(
        path.clone(),
        SessionStart::New(session("w1")),
        StoreOptions::default(),
    );
    let meta = MessageMeta::default();
    writer.append(Message::user("one"), meta.clone());
    writer.append(Message::assistant("uno"), meta.clone());
    writer.append(Message::user("two"), meta.clone());
    writer.stream_text("do".into());
    writer.truncate(2);
    writer.append(Message::user("two again"), meta.clone());
    writer.append(Message::assistant("dos"), meta);
    writer.close().unwrap();
    let store = Store::open(&path).unwrap();
    let contents: Vec<String> = store
        .messages("w1")
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(contents, vec!["one", "uno", "two again", "dos"]);
    assert_eq!(store.session("w1").unwrap().unwrap().message_count, 4);
}
