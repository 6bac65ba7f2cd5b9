//! Compression through the binary: the provider answers `context_length_exceeded` once; the
//! agent compresses, retries and completes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_store::Store;
use hermes_testkit::{Fault, MockServer, Script, TestHome, Turn};
use serde_json::json;

#[test]
fn a_context_overflow_is_compressed_retried_and_completed() {
    let big = || Turn::tool("terminal", json!({"command": "seq 1 6000"}));
    let overflow = Fault::HttpRaw {
        status: 400,
        headers: vec![],
        body: r#"{"error":{"message":"This model's maximum context length is 32768 tokens. However, your messages resulted in 40000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#.into(),
    };
    let server = MockServer::start(Script::new(vec![
        big(),
        big(),
        big(),
        big(),
        overflow.into(),
        Turn::text("## Goal\nCount to 6000 four times.\n## Next steps\nReport."),
        Turn::text("Counted four times."),
    ]));
    let home = TestHome::new();
    // A window so large that automatic compression never starts: only the overflow triggers it.
    home.write_config(&format!(
        "{}compression:\n  context_length: 1000000\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = run(&home, &["-z", "count"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "Counted four times.\n");
    assert!(stderr.contains("compressed the conversation"), "{stderr}");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 7);
    assert!(
        reqs[5].get("tools").is_none(),
        "the summary request has no tools"
    );
    let last = reqs[6].to_string();
    assert!(
        last.contains("reference only"),
        "the retried request carries the summary"
    );
    assert!(
        last.len() < reqs[4].to_string().len(),
        "and is smaller than the one that overflowed"
    );
    assert_eq!(
        reqs[6]["messages"][0], reqs[0]["messages"][0],
        "same system prompt"
    );
}

/// A stored session with three large tool outputs, made through the binary.
fn session_with_big_outputs(home: &TestHome, server: &MockServer, extra_config: &str) -> String {
    home.write_config(&format!(
        "{}{extra_config}",
        hermes_testkit::mock_config_yaml(server)
    ));
    let o = run(home, &["-z", "count three times"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let store = Store::open(home.hermes_home().join("sessions.db")).unwrap();
    store.list_sessions(10, None).unwrap()[0].session.id.clone()
}

fn big_script(then: Vec<Turn>) -> Script {
    let big = |n: u32| Turn::tool("terminal", json!({"command": format!("seq {n} 6000")}));
    let mut turns = vec![big(1), big(2), big(3), big(4), Turn::text("Counted.")];
    turns.extend(then);
    Script::new(turns)
}

#[test]
fn sessions_compress_continues_in_a_child_session_and_search_still_finds_everything() {
    let server = MockServer::start(big_script(vec![
        Turn::text("## Goal\nCount numbers.\n## Next steps\nNone."),
        Turn::text("Resumed fine."),
    ]));
    let home = TestHome::new();
    let id = session_with_big_outputs(&home, &server, "");
    let o = run(
        &home,
        &["sessions", "compress", &id, "--focus", "the counting"],
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains(&format!("Compressed session {id} (summarized)")),
        "{out}"
    );
    let summary_request = &server.chat_requests()[5];
    assert!(
        summary_request.to_string().contains("the counting"),
        "the focus reaches the summarizer"
    );

    let store = Store::open(home.hermes_home().join("sessions.db")).unwrap();
    let sessions = store.list_sessions(10, None).unwrap();
    let child = &sessions
        .iter()
        .find(|s| s.session.id != id)
        .expect("a child session")
        .session;
    assert_eq!(child.parent_session_id.as_deref(), Some(id.as_str()));
    assert!(out.contains(&child.id), "{out}");
    let parent = store.session(&id).unwrap().unwrap();
    assert!(parent.ended_at.is_some());

    let o = run(&home, &["-z", "go on", "--resume", &child.id]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let resumed = server.chat_requests()[6].to_string();
    assert!(
        resumed.contains("reference only") && resumed.contains("Count numbers."),
        "{resumed}"
    );
    assert!(resumed.len() < server.chat_requests()[4].to_string().len());

    // The full transcript is still searchable in the parent.
    let o = run(&home, &["sessions", "search", "5999", "--role", "tool"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&id),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn in_place_compression_keeps_the_session_and_hides_replaced_messages() {
    let server = MockServer::start(big_script(vec![
        Turn::text("## Goal\nCount numbers."),
        Turn::text("ok"),
    ]));
    let home = TestHome::new();
    let id = session_with_big_outputs(&home, &server, "compression:\n  in_place: true\n");
    let o = run(&home, &["sessions", "compress", &id]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("in place"));
    let store = Store::open(home.hermes_home().join("sessions.db")).unwrap();
    assert_eq!(
        store.list_sessions(10, None).unwrap().len(),
        1,
        "no child session"
    );
    let active = store.active_messages(&id).unwrap();
    let all = store.messages(&id).unwrap();
    assert!(
        active.len() < all.len(),
        "{} active of {}",
        active.len(),
        all.len()
    );
    assert!(
        active
            .iter()
            .any(|m| m.message.content.contains("reference only"))
    );
    let o = run(&home, &["-z", "go on", "--resume", &id]);
    assert!(o.status.success());
    assert!(
        server.chat_requests()[6]
            .to_string()
            .contains("reference only")
    );
}
