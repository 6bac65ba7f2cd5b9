//! Compression through the binary: the provider answers `context_length_exceeded` once; the
//! agent compresses, retries and completes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

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
    let o = home
        .command(Path::new(env!("CARGO_BIN_EXE_hermes")))
        .args(["-z", "count"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "Counted four times.\n");
    assert!(stderr.contains("compressed the conversation"), "{stderr}");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 7);
    assert!(reqs[5].get("tools").is_none(), "the summary request has no tools");
    let last = reqs[6].to_string();
    assert!(last.contains("reference only"), "the retried request carries the summary");
    assert!(last.len() < reqs[4].to_string().len(), "and is smaller than the one that overflowed");
    assert_eq!(reqs[6]["messages"][0], reqs[0]["messages"][0], "same system prompt");
}
