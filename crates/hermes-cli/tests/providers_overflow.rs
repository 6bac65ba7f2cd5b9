//! The overflow of issue 13, through the binary: two large `read_file` results, then the
//! provider answers `context_length_exceeded` ("maximum context length is 16384 tokens").
//! Everything sits in the protected head and tail, so pruning alone cannot help; the agent
//! learns the window from the error, cuts the two results to fit it (their full text kept in
//! files under the home's cache, named in the marker), retries, and the turn completes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_testkit::{Fault, MockServer, Script, TestHome, Turn};
use serde_json::json;

/// 500 lines of about 150 characters: one read_file result of ~19K tokens.
fn big_file(tag: &str) -> String {
    (1..=500)
        .map(|i| {
            format!(
                "{tag} line {i}: {}\n",
                "lorem ipsum dolor sit amet consectetur ".repeat(3)
            )
        })
        .collect()
}

#[test]
fn an_overflow_after_two_large_reads_is_recovered_within_the_window_the_error_named() {
    let overflow = Fault::HttpRaw {
        status: 400,
        headers: vec![],
        body: json!({"error": {
            "message": "This model's maximum context length is 16384 tokens. However, your messages resulted in 40000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        .to_string(),
    };
    let server = MockServer::start(Script::new(vec![
        Turn::tool("read_file", json!({"path": "a.txt"})),
        Turn::tool("read_file", json!({"path": "b.txt"})),
        overflow.into(),
        Turn::text("Both files are lorem ipsum, 500 lines each."),
    ]));
    let home = TestHome::new();
    // A large configured window: only the provider's error reveals the real one.
    home.write_config(&format!(
        "{}compression:\n  context_length: 1000000\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    std::fs::write(home.workdir().join("a.txt"), big_file("alpha")).unwrap();
    std::fs::write(home.workdir().join("b.txt"), big_file("beta")).unwrap();

    let o = run(&home, &["-z", "compare a.txt and b.txt", "-t", "file"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(stdout(&o), "Both files are lorem ipsum, 500 lines each.\n");
    assert!(err.contains("context window is 16,384 tokens"), "{err}");
    assert!(err.contains("cut 2 large messages to fit"), "{err}");

    let reqs = server.chat_requests();
    assert_eq!(
        reqs.len(),
        4,
        "the overflowed request is retried once, smaller"
    );
    let overflowed = reqs[2].to_string();
    let retried = reqs[3].to_string();
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let tokens = |text: &str| bpe.encode_ordinary(text).len();
    assert!(
        tokens(&overflowed) > 16_384,
        "the scenario really overflows"
    );
    assert!(
        tokens(&retried) <= 16_384,
        "the retried request ({} tokens, counting JSON syntax) fits the window",
        tokens(&retried)
    );
    assert_eq!(
        reqs[3]["messages"][0], reqs[2]["messages"][0],
        "the system prompt is untouched"
    );

    // Both results were cut around a marker naming the file with their full text.
    let cache = home.hermes_home().join("cache/tool_results");
    let tools: Vec<&str> = reqs[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), 2);
    for (content, tag) in tools.iter().zip(["alpha", "beta"]) {
        assert!(
            content.contains("cut to fit the context window"),
            "{content}"
        );
        assert!(
            content.contains(&format!("{tag} line 1:")),
            "the head is kept"
        );
        let path = content
            .split("saved in ")
            .nth(1)
            .and_then(|rest| rest.split(" (read_file").next())
            .unwrap();
        assert!(path.starts_with(&cache.display().to_string()), "{path}");
        let full = std::fs::read_to_string(path).unwrap();
        assert_eq!(full.lines().count(), 500);
        assert!(full.contains(&format!("500|{tag} line 500:")));
    }
}
