//! Memory files move between the Python Hermes and this one without loss. The fixtures were
//! written by the Python reference's memory tool (`fixtures/python-memory/generate.py`):
//! stage 1 from scratch, stage 2 after a few edits. We read stage 1, make the same edits
//! through the real agent and `memory` tool, and must produce stage 2 byte for byte; and the
//! files we write from scratch must be byte-identical to stage 1, so the Python Hermes reads
//! ours exactly as it reads its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hermes_core::memory::{Limits, MemoryStore, MemoryTool, Op, Target, file};
use hermes_core::{Agent, NoEvents};
use hermes_testkit::{MockServer, Reply, Script, Turn};
use hermes_tools::{Registry, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn fixture(stage: &str, name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/python-memory")
        .join(stage)
        .join(name);
    std::fs::read(path).unwrap()
}

fn memories_from(stage: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mem = dir.path().join("memories");
    std::fs::create_dir_all(&mem).unwrap();
    for name in ["MEMORY.md", "USER.md"] {
        std::fs::write(mem.join(name), fixture(stage, name)).unwrap();
    }
    (dir, mem)
}

#[test]
fn python_files_parse_into_the_entries_python_wrote_and_serialize_back_unchanged() {
    let text = String::from_utf8(fixture("1-python-wrote", "MEMORY.md")).unwrap();
    let entries = file::parse(&text);
    assert_eq!(
        entries,
        [
            "Project uses pnpm 9 and Node 22",
            "Tests: `pnpm test -- --run`\nE2E needs `PLAYWRIGHT_BROWSERS_PATH=0`",
            "Café API lives at https://api.example.test — rate limit 5 req/s",
        ]
    );
    assert_eq!(file::serialize(&entries), text);
    let user = String::from_utf8(fixture("1-python-wrote", "USER.md")).unwrap();
    assert_eq!(file::serialize(&file::parse(&user)), user);
}

#[test]
fn files_we_write_from_scratch_are_the_bytes_python_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::new(dir.path(), Limits::default());
    let add = |c: &str| Op::Add { content: c.into() };
    for c in [
        "Project uses pnpm 9 and Node 22",
        "Tests: `pnpm test -- --run`\nE2E needs `PLAYWRIGHT_BROWSERS_PATH=0`",
        "  Café API lives at https://api.example.test — rate limit 5 req/s  ",
    ] {
        store.apply(Target::Memory, &[add(c)]).unwrap();
    }
    store
        .apply(
            Target::User,
            &[
                add("Name: Ada; prefers tabs over spaces"),
                add("Writes commit messages in English, chats in français ✓"),
            ],
        )
        .unwrap();
    for name in ["MEMORY.md", "USER.md"] {
        assert_eq!(
            std::fs::read(dir.path().join(name)).unwrap(),
            fixture("1-python-wrote", name),
            "{name}"
        );
    }
}

/// The stage-2 edits, made by the model through the real agent and the `memory` tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_through_the_agent_match_what_python_writes() {
    let (_dir, mem) = memories_from("1-python-wrote");
    let store = Arc::new(MemoryStore::new(&mem, Limits::default()));
    // The session reads memory at start (the snapshot), as a real session does.
    store.load(Target::Memory).unwrap();
    store.load(Target::User).unwrap();
    let server = MockServer::start(Script::new(vec![
        Turn::Reply(Reply::tool_calls(vec![
            (
                "memory",
                json!({"action": "replace", "target": "memory", "old_text": "pnpm 9", "content": "Project uses pnpm 10 and Node 22"}),
            ),
            (
                "memory",
                json!({"action": "remove", "target": "memory", "old_text": "Café API"}),
            ),
            (
                "memory",
                json!({"action": "add", "content": "CI runs on GitHub Actions (ubuntu-24.04)"}),
            ),
        ])),
        Turn::tool(
            "memory",
            json!({"target": "user", "operations": [
                {"action": "replace", "old_text": "Name: Ada", "content": "Name: Ada Lovelace; prefers tabs over spaces"},
                {"action": "add", "content": "Works in UTC+1 — 9:00–17:00"}
            ]}),
        ),
        Turn::text("Saved."),
    ]));
    let mut tools = Registry::new();
    tools.register(Arc::new(MemoryTool::new(store.clone())));
    let provider =
        hermes_llm::build_provider(&common::spec(&server), &hermes_llm::HttpTimeouts::default())
            .unwrap();
    let agent = Agent::new(
        provider,
        tools,
        "test".into(),
        common::fast_options(),
        ToolContext::new(mem.clone()),
    );
    let result = agent
        .run_turn("remember", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert!(!result.failed(), "{:?}", result.end);
    let reqs = server.chat_requests();
    let r1 = common::tool_result(&reqs[1], "call_0_0").unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(r1).unwrap(),
        json!({"ok": true, "message": "Entry replaced.", "target": "memory", "entries": 3, "usage": "167 of 2,200 chars (7%)"})
    );
    let r4 = common::tool_result(&reqs[2], "call_1_0").unwrap();
    assert!(r4.contains("\"message\":\"Applied 2 operations.\""), "{r4}");
    for name in ["MEMORY.md", "USER.md"] {
        assert_eq!(
            String::from_utf8(std::fs::read(mem.join(name)).unwrap()).unwrap(),
            String::from_utf8(fixture("2-python-edited", name)).unwrap(),
            "{name}"
        );
    }
}
