//! The writer thread as a live session uses it: lazy session creation, auto-titles, streamed
//! text committed at once and then at least every 100 ms, the final message replacing the
//! partial row, sealing, switching sessions, resuming, and failing without losing the chat.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hermes_protocol::{Message, ToolCall, Usage};
use hermes_store::{
    MessageMeta, NewSession, SessionStart, SessionWriter, Store, StoreError, StoreOptions,
};

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("sessions.db")
}

fn new_session(id: &str) -> SessionStart {
    SessionStart::New(NewSession {
        id: id.into(),
        source: "cli".into(),
        model: Some("m1".into()),
        ..NewSession::default()
    })
}

fn spawn(path: &Path, start: SessionStart) -> SessionWriter {
    SessionWriter::spawn(path.to_path_buf(), start, StoreOptions::default())
}

/// Polls a second connection until `check` holds (the writer commits on its own thread).
fn eventually(path: &Path, what: &str, check: impl Fn(&Store) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(store) = Store::open(path)
            && check(&store)
        {
            return;
        }
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn contents(store: &Store, id: &str) -> Vec<String> {
    store
        .messages(id)
        .unwrap_or_default()
        .into_iter()
        .map(|m| m.message.content)
        .collect()
}

#[test]
fn a_session_appears_with_its_first_message_titled_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let idle = spawn(&db(&dir), new_session("idle"));
    idle.close().unwrap();
    let store = Store::open(db(&dir)).unwrap();
    assert!(
        store.session("idle").unwrap().is_none(),
        "no message, no session"
    );

    let w = spawn(&db(&dir), new_session("s1"));
    w.append(
        Message::user("Fix the flaky login test\nit fails on CI"),
        MessageMeta::default(),
    );
    w.flush().unwrap();
    let s = store.session("s1").unwrap().unwrap();
    assert_eq!(s.title.as_deref(), Some("Fix the flaky login test"));
    assert_eq!(s.model.as_deref(), Some("m1"));
    assert_eq!(
        w.title().unwrap().as_deref(),
        Some("Fix the flaky login test")
    );
    assert_eq!(w.set_title("  Login test ").unwrap(), "Login test");
    w.close().unwrap();
    assert_eq!(
        store.session("s1").unwrap().unwrap().title.as_deref(),
        Some("Login test")
    );
}

#[test]
fn streamed_text_is_committed_promptly_and_replaced_by_the_final_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let w = spawn(&path, new_session("s1"));
    w.append(Message::user("tell me"), MessageMeta::default());
    w.stream_text("The first ".into());
    eventually(&path, "the first piece is committed at once", |s| {
        contents(s, "s1") == ["tell me", "The first "]
    });
    w.stream_text("words".into());
    // No newline and no further event: the throttle's deadline still commits it.
    eventually(
        &path,
        "a pending piece is committed within the interval",
        |s| contents(s, "s1") == ["tell me", "The first words"],
    );
    let calls = vec![ToolCall {
        id: "c1".into(),
        name: "terminal".into(),
        arguments: "{}".into(),
    }];
    w.usage(
        Usage {
            input_tokens: 50,
            output_tokens: 7,
            ..Usage::default()
        },
        None,
    );
    w.append(
        Message::assistant_with_tools("The first words.", calls),
        MessageMeta {
            finish_reason: Some("tool_calls".into()),
            token_count: Some(7),
        },
    );
    w.append(
        Message::tool_result("c1", "terminal", "ok"),
        MessageMeta::default(),
    );
    w.close().unwrap();

    let store = Store::open(&path).unwrap();
    let stored = store.messages("s1").unwrap();
    assert_eq!(
        stored.len(),
        3,
        "the partial row became the assistant message"
    );
    assert!(!stored[1].partial);
    assert_eq!(stored[1].message.tool_calls.len(), 1);
    assert_eq!(stored[1].token_count, Some(7));
    let s = store.session("s1").unwrap().unwrap();
    assert_eq!(
        (s.message_count, s.tool_call_count, s.input_tokens),
        (3, 1, 50)
    );
}

#[test]
fn an_unfinished_stream_is_kept_as_an_interrupted_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let w = spawn(&path, new_session("s1"));
    w.append(Message::user("go"), MessageMeta::default());
    w.stream_text("half of it".into());
    w.seal_partial();
    w.append(Message::user("next"), MessageMeta::default());
    w.close().unwrap();
    let store = Store::open(&path).unwrap();
    let stored = store.messages("s1").unwrap();
    assert_eq!(contents(&store, "s1"), ["go", "half of it", "next"]);
    assert_eq!(stored[1].finish_reason.as_deref(), Some("interrupted"));
    assert!(!stored[1].partial);
}

#[test]
fn resuming_seals_what_a_crash_left_and_reopens_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    {
        let mut store = Store::open(&path).unwrap();
        store
            .create_session(&NewSession {
                id: "s1".into(),
                source: "cli".into(),
                ..NewSession::default()
            })
            .unwrap();
        store
            .append_message("s1", &Message::user("go"), &MessageMeta::default())
            .unwrap();
        store.start_partial("s1", "cut off mid").unwrap();
        store.end_session("s1", "user_exit").unwrap();
    }
    let w = spawn(
        &path,
        SessionStart::Resume {
            id: "s1".into(),
            model: Some("m2".into()),
            provider: None,
        },
    );
    w.append(Message::user("continue"), MessageMeta::default());
    w.close().unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(contents(&store, "s1"), ["go", "cut off mid", "continue"]);
    let s = store.session("s1").unwrap().unwrap();
    assert_eq!((s.ended_at, s.end_reason.as_deref()), (None, None));
    assert_eq!(s.model.as_deref(), Some("m2"));
    assert_eq!(
        s.title, None,
        "a resumed session is not auto-titled by later messages"
    );
}

#[test]
fn switching_ends_one_session_and_starts_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let w = spawn(&path, new_session("a"));
    w.append(Message::user("first topic"), MessageMeta::default());
    w.switch_to(
        NewSession {
            id: "b".into(),
            source: "cli".into(),
            ..NewSession::default()
        },
        "new_session",
    );
    w.append(Message::user("second topic"), MessageMeta::default());
    w.end("user_exit");
    w.close().unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(contents(&store, "a"), ["first topic"]);
    assert_eq!(contents(&store, "b"), ["second topic"]);
    assert_eq!(
        store.session("a").unwrap().unwrap().end_reason.as_deref(),
        Some("new_session")
    );
    assert_eq!(
        store.session("b").unwrap().unwrap().end_reason.as_deref(),
        Some("user_exit")
    );
}

#[test]
fn a_damaged_database_is_reported_and_never_touched() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    std::fs::write(&path, b"garbage garbage garbage").unwrap();
    let w = spawn(&path, new_session("s1"));
    w.append(Message::user("hello"), MessageMeta::default());
    w.stream_text("answer".into());
    let err = w.flush().unwrap_err();
    assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    assert!(matches!(w.set_title("x"), Err(StoreError::Damaged { .. })));
    assert!(matches!(w.close(), Err(StoreError::Damaged { .. })));
    assert_eq!(std::fs::read(&path).unwrap(), b"garbage garbage garbage");
}
