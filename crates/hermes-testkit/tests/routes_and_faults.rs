//! Canned routes (answers in order, the last repeated, requests captured by path) and the
//! faults that never end a stream by themselves.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use hermes_testkit::{Canned, Fault, MockServer, Script};
use serde_json::json;
use support::Conn;

#[test]
fn a_route_answers_in_order_then_repeats_its_last_answer() {
    let server = MockServer::start(Script::new(vec![]).with_route(
        "/api/oauth/token",
        vec![
            Canned::json(400, &json!({"error": "authorization_pending"})),
            Canned::json(200, &json!({"access_token": "t"})),
        ],
    ));
    let mut conn = Conn::connect(server.port());
    let mut statuses = Vec::new();
    for _ in 0..3 {
        conn.send(
            "POST",
            "/api/oauth/token?x=1",
            &[("content-type", "application/x-www-form-urlencoded")],
            b"grant_type=device",
        );
        statuses.push(conn.read_response().unwrap().status);
    }
    assert_eq!(statuses, vec![400, 200, 200]);
    let captured = server.requests_to("/api/oauth/token");
    assert_eq!(captured.len(), 3);
    assert_eq!(captured[0].raw_body, "grant_type=device");
    assert_eq!(
        server.chat_request_count(),
        0,
        "routes are not model requests"
    );
}

/// Reads `bytes` of a streamed answer and hangs up: the stream never ends on its own.
fn read_some(fault: Fault, bytes: usize) -> String {
    let server = MockServer::start(Script::new(vec![fault.into()]));
    let mut conn = Conn::connect(server.port());
    conn.post_json(
        "/v1/chat/completions",
        &json!({"model": "m", "stream": true, "messages": []}),
    );
    let mut buf = vec![0u8; bytes];
    let mut got = 0;
    while got < bytes {
        let n = conn.read_raw(&mut buf[got..]).unwrap();
        assert!(n > 0, "the stream ended after {got} bytes");
        got += n;
    }
    String::from_utf8_lossy(&buf).into_owned()
}

#[test]
fn endless_faults_keep_streaming() {
    let text = read_some(
        Fault::EndlessStream {
            piece: "abc".into(),
        },
        256 * 1024,
    );
    assert!(text.contains("\"content\":\"abc\""));
    let text = read_some(Fault::EndlessEvent { line: "zz".into() }, 256 * 1024);
    assert!(text.contains("data: zz\n") && !text.contains("data: zz\n\n"));
    let text = read_some(Fault::Trickle { every_ms: 1 }, 4 * 1024);
    assert!(text.contains(": keep-alive\n\n"));
}
