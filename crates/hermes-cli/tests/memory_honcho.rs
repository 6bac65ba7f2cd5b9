//! `memory.provider: honcho` through the real binary against the Honcho double: the session
//! and its peers are created (observation as configured), the user model is recalled into the
//! first message (summary, representation, card, the dialectic's answer), the exchange is
//! sent after the turn, the five tools work, USER.md additions are mirrored as conclusions,
//! `recallMode` is honoured, and a Honcho that is down never fails a turn.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::requests::{last_tool_result, system_prompt, tool_names, user_message};
use common::*;

use hermes_testkit::platforms::honcho::HonchoMock;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const KEY: &str = "hk-test-key";

/// A home whose `honcho.json` points at `honcho` (the host block sets the key, so it is
/// sent even to a loopback server) with `extra` merged into the host block.
fn home_with(server: &MockServer, honcho_base: &str, extra: Value) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}memory:\n  provider: honcho\n",
        hermes_testkit::mock_config_yaml(server)
    ));
    let mut host = json!({"apiKey": KEY, "workspace": "ws-test", "aiPeer": "hermes"});
    for (k, v) in extra.as_object().unwrap() {
        host[k] = v.clone();
    }
    home.write_file(
        "honcho.json",
        &json!({"baseUrl": format!("{honcho_base}/v3"), "peerName": "ann", "hosts": {"hermes": host}})
            .to_string(),
    );
    home
}

const HONCHO_TOOLS: [&str; 5] = [
    "honcho_profile",
    "honcho_search",
    "honcho_reasoning",
    "honcho_context",
    "honcho_conclude",
];

#[test]
fn the_user_model_is_recalled_and_the_exchange_is_observed() {
    let honcho = HonchoMock::start(Some(KEY));
    honcho.set_summary("work", "Ann is refactoring the parser.");
    honcho.set_representation("hermes", "ann", "Ann writes Rust and wants terse answers.");
    honcho.set_card("hermes", "ann", &["Name: Ann", "Editor: Helix"]);
    honcho.answer_chats_with(&["Ann is a Rust developer who prefers terse answers."]);
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "honcho_conclude",
            json!({"conclusion": "Ann deploys on Fridays"}),
        ),
        Turn::text("Noted: Fridays."),
    ]));
    let home = home_with(&server, &honcho.base_url(), json!({}));

    let o = run(&home, &["-z", "Remember that I deploy on Fridays"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "no warning");
    assert_eq!(stdout(&o).trim(), "Noted: Fridays.");

    let reqs = server.chat_requests();
    let names = tool_names(&reqs[0]);
    for tool in HONCHO_TOOLS {
        assert!(
            names.contains(&tool.to_string()),
            "{tool} offered: {names:?}"
        );
    }
    assert!(
        system_prompt(&reqs[0]).ends_with(
            "# Honcho Memory\nActive (hybrid mode). Relevant context is auto-injected AND memory tools are available. \
             Use honcho_profile for a quick factual snapshot, honcho_search for raw excerpts, honcho_context for raw peer context, \
             honcho_reasoning for synthesized answers (pass reasoning_level minimal/low/medium/high/max — you pick the depth per call), \
             honcho_conclude to save facts about the user."
        ),
        "{}",
        system_prompt(&reqs[0])
    );
    let sent = user_message(&reqs[0]);
    assert!(
        sent.starts_with("Remember that I deploy on Fridays\n\n<memory-context>"),
        "{sent}"
    );
    for part in [
        "## Session Summary\nAnn is refactoring the parser.",
        "## User Representation\nAnn writes Rust and wants terse answers.",
        "## User Peer Card\nName: Ann\nEditor: Helix",
        "Ann is a Rust developer who prefers terse answers.",
        "memory provider `honcho`",
    ] {
        assert!(sent.contains(part), "{part:?} in {sent}");
    }
    assert_eq!(
        last_tool_result(&reqs[1]),
        json!({"result": "Conclusion saved for user: Ann deploys on Fridays"})
    );

    // Every call carried the host block's key; the session was set up before anything else.
    let requests = honcho.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Bearer hk-test-key"))
    );
    let routes = honcho.routes();
    assert_eq!(
        routes[..4],
        [
            "POST /v3/workspaces",
            "POST /v3/workspaces/ws-test/peers",
            "POST /v3/workspaces/ws-test/peers",
            "POST /v3/workspaces/ws-test/sessions",
        ]
    );
    // An explicitly configured host keeps Python's `unified` observation default.
    assert_eq!(
        honcho.sessions("ws-test")["work"],
        [
            (
                "ann".to_string(),
                json!({"observe_me": true, "observe_others": false})
            ),
            (
                "hermes".to_string(),
                json!({"observe_me": false, "observe_others": true})
            ),
        ]
        .into_iter()
        .collect()
    );
    // The dialectic: the AI peer asks about the user at the base level, with the warm prompt
    // (the base context came back first).
    let chat = requests
        .iter()
        .find(|r| r.target.ends_with("/peers/hermes/chat"))
        .expect("a dialectic call");
    assert_eq!(
        chat.body,
        json!({"query": "Given what's been discussed in this session so far, what context about this user is most relevant to the current conversation? Prioritize active context over biographical facts.",
               "stream": false, "target": "ann", "reasoning_level": "low"})
    );
    // The exchange, as the user and the AI peer said it (no recall block), in the session.
    let messages: Vec<(String, String, String)> = honcho
        .messages()
        .into_iter()
        .map(|m| (m.session, m.peer, m.content))
        .collect();
    assert_eq!(
        messages,
        vec![
            (
                "work".into(),
                "ann".into(),
                "Remember that I deploy on Fridays".into()
            ),
            ("work".into(), "hermes".into(), "Noted: Fridays.".into()),
        ]
    );
    let conclusions = honcho.conclusions();
    assert_eq!(conclusions.len(), 1);
    assert_eq!(
        (
            conclusions[0].observer.as_str(),
            conclusions[0].observed.as_str(),
            conclusions[0].content.as_str(),
            conclusions[0].session.as_deref()
        ),
        ("hermes", "ann", "Ann deploys on Fridays", Some("work"))
    );
}

#[test]
fn the_tools_read_and_write_the_user_model() {
    let honcho = HonchoMock::start(Some(KEY));
    honcho.seed_message("ws-test", "older", "ann", "My cat is called Miso");
    honcho.seed_message("ws-test", "older", "hermes", "Miso is a lovely name");
    honcho.seed_message("ws-test", "elsewhere", "bob", "Bob's cat is Tofu");
    honcho.answer_chats_with(&["Ann likes cats."]);
    let server = MockServer::start(Script::new(vec![
        Turn::tool("honcho_profile", json!({})),
        Turn::tool(
            "honcho_profile",
            json!({"card": ["Name: Ann", "Pet: Miso"]}),
        ),
        Turn::tool("honcho_search", json!({"query": "cat name"})),
        Turn::tool(
            "honcho_reasoning",
            json!({"query": "What pets?", "reasoning_level": "high"}),
        ),
        Turn::tool(
            "honcho_conclude",
            json!({"conclusion": "Ann has a cat", "list": true}),
        ),
        Turn::tool(
            "honcho_conclude",
            json!({"conclusion": "Ann has a cat named Miso"}),
        ),
        Turn::tool("honcho_conclude", json!({"list": true, "query": "cat"})),
        Turn::tool("honcho_context", json!({"peer": "user"})),
        Turn::text("Done."),
    ]));
    // Tools mode: nothing injected, only the tools.
    let home = home_with(&server, &honcho.base_url(), json!({"recallMode": "tools"}));
    let o = run(&home, &["-z", "What is my cat called?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reqs = server.chat_requests();
    assert_eq!(
        user_message(&reqs[0]),
        "What is my cat called?",
        "tools mode injects nothing"
    );
    assert!(system_prompt(&reqs[0]).contains("Active (tools-only mode)."));
    let routes = honcho.routes();
    assert_eq!(
        routes.iter().filter(|r| r.ends_with("/chat")).count(),
        1,
        "only the tool's dialectic, none automatic: {routes:?}"
    );
    assert!(
        !routes
            .iter()
            .any(|r| r.contains("/peers/") && r.ends_with("/context")),
        "no automatic recall in tools mode: {routes:?}"
    );

    let hint = last_tool_result(&reqs[1]);
    assert_eq!(hint["result"], "No profile facts available yet.");
    assert!(
        hint["hint"]
            .as_str()
            .unwrap()
            .starts_with("This is not an error."),
        "{hint}"
    );
    assert_eq!(
        last_tool_result(&reqs[2]),
        json!({"result": "Peer card updated (2 facts).", "card": ["Name: Ann", "Pet: Miso"]})
    );
    // Only sessions Ann took part in; the AI peer's lines labelled `assistant`.
    assert_eq!(
        last_tool_result(&reqs[3]),
        json!({"result": "[assistant · older] Miso is a lovely name\n\n[ann · older] My cat is called Miso"})
    );
    assert_eq!(
        last_tool_result(&reqs[4]),
        json!({"result": "Ann likes cats."})
    );
    let reasoning = honcho
        .requests()
        .into_iter()
        .find(|r| r.target.ends_with("/chat"))
        .unwrap();
    assert_eq!(
        reasoning.body,
        json!({"query": "What pets?", "stream": false, "target": "ann", "reasoning_level": "high"}),
        "dialecticDynamic lets the model pick the level"
    );
    let refused = &reqs[5]["messages"].as_array().unwrap().last().unwrap()["content"];
    assert!(
        refused
            .as_str()
            .unwrap()
            .contains("Exactly one of conclusion, delete_id, or list must be provided."),
        "{refused}"
    );
    assert_eq!(
        last_tool_result(&reqs[6]),
        json!({"result": "Conclusion saved for user: Ann has a cat named Miso"})
    );
    let listed = last_tool_result(&reqs[7]);
    let id = honcho.conclusions()[0].id.clone();
    assert_eq!(
        listed,
        json!({"conclusions": [{"id": id, "content": "Ann has a cat named Miso"}]})
    );
    let context = last_tool_result(&reqs[8]);
    let text = context["result"].as_str().unwrap();
    assert!(text.contains("## Card\nName: Ann\nPet: Miso"), "{text}");
    assert!(
        text.contains("## Representation\n## Explicit Observations\n- Ann has a cat named Miso"),
        "{text}"
    );
}

#[test]
fn user_facts_added_to_builtin_memory_are_mirrored_as_conclusions() {
    let honcho = HonchoMock::start(Some(KEY));
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "memory",
            json!({"action": "add", "target": "user", "content": "Prefers metric units"}),
        ),
        Turn::tool(
            "memory",
            json!({"action": "add", "target": "memory", "content": "Project uses cargo-nextest"}),
        ),
        Turn::text("Saved."),
    ]));
    let home = home_with(
        &server,
        &honcho.base_url(),
        json!({"recallMode": "context"}),
    );
    let o = run(&home, &["-z", "I like metric units"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reqs = server.chat_requests();
    let names = tool_names(&reqs[0]);
    assert!(
        !names.iter().any(|n| n.starts_with("honcho_")),
        "context mode offers no tools: {names:?}"
    );
    // Only the USER.md addition is mirrored (as Python does).
    let conclusions: Vec<String> = honcho
        .conclusions()
        .into_iter()
        .map(|c| c.content)
        .collect();
    assert_eq!(conclusions, vec!["Prefers metric units".to_string()]);
}

#[test]
fn a_honcho_that_is_down_never_fails_a_turn() {
    let server = MockServer::start(Script::new(vec![Turn::text("Still here.")]));
    let port = free_port();
    let home = home_with(&server, &format!("http://127.0.0.1:{port}"), json!({}));
    let o = run(&home, &["-z", "hello there, how are you"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Still here.");
    assert_eq!(
        user_message(&server.chat_requests()[0]),
        "hello there, how are you",
        "nothing recalled"
    );
}

#[test]
fn without_a_key_or_server_honcho_is_a_warning() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}memory:\n  provider: honcho\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = home
        .command(bin())
        .args(["-z", "hi"])
        .env_remove("HONCHO_API_KEY")
        .env_remove("HONCHO_BASE_URL")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("memory provider `honcho` not attached: no Honcho is configured"),
        "{}",
        stderr(&o)
    );
}

/// The official `honcho-ai` SDK's calls, run against the double: every answer must parse
/// into the SDK's own response types, so the double's shapes are Honcho's.
const SDK_SCRIPT: &str = r#"
import json, sys
from honcho import Honcho
from honcho.api_types import SessionPeerConfig

h = Honcho(workspace_id="sdk-ws", api_key="hk-sdk", base_url=sys.argv[1], max_retries=0)
ann, bot = h.peer("ann"), h.peer("bot")
s = h.session("s1")
s.add_peers([(ann, SessionPeerConfig(observe_me=True, observe_others=False)),
             (bot, SessionPeerConfig(observe_me=False, observe_others=True))])
config = s.get_peer_configuration(ann)
sent = s.add_messages([ann.message("I keep bees"), bot.message("Bees are great")])
ctx = s.context(summary=True, tokens=500, peer_target="ann", peer_perspective="bot")
card = bot.set_card(["Keeps bees"], target="ann")
pctx = bot.context(target="ann", search_query="bees")
answer = bot.chat("What does Ann keep?", target="ann", reasoning_level="low")
found = h.search("bees", filters={"peer_perspective": "ann"}, limit=5)
scope = bot.conclusions_of("ann")
created = scope.create([{"content": "Ann keeps bees", "session_id": "s1"}])
listed = [c.content for c in scope.list(size=10).items]
queried = [c.content for c in scope.query("bees", top_k=5)]
rep = bot.representation(target="ann")
scope.delete(created[0].id)
uploaded = s.upload_file(file=("notes.md", b"Ann keeps bees too", "text/plain"), peer=ann)
print(json.dumps({
    "observe_me": config.observe_me, "sent": [m.content for m in sent],
    "context_messages": [m.content for m in ctx.messages], "summary": ctx.summary is None,
    "card": card, "got_card": bot.get_card(target="ann"), "peer_context_card": pctx.peer_card,
    "answer": answer, "found": sorted(m.content for m in found), "listed": listed,
    "queried": queried, "representation": rep, "after_delete": len(scope.list().items),
    "uploaded": [(m.peer_id, m.content) for m in uploaded],
}))
"#;

#[test]
fn the_official_sdk_reads_every_answer_of_the_double() {
    let python = match (common::venv::Venv {
        env_var: "HERMES_HONCHO_PYTHON",
        cache_dir: "honcho",
        probe: "import honcho",
        setup: "setup-honcho",
    })
    .python()
    {
        Ok(p) => p,
        Err(why) => {
            eprintln!("skipped: the honcho-ai SDK is not available: {why}");
            return;
        }
    };
    let honcho = HonchoMock::start(Some("hk-sdk"));
    honcho.answer_chats_with(&["Ann keeps bees."]);
    let out = std::process::Command::new(python)
        .args(["-c", SDK_SCRIPT, &honcho.base_url()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the SDK failed against the double: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got,
        json!({
            "observe_me": true, "sent": ["I keep bees", "Bees are great"],
            "context_messages": ["I keep bees", "Bees are great"], "summary": true,
            "card": ["Keeps bees"], "got_card": ["Keeps bees"], "peer_context_card": ["Keeps bees"],
            "answer": "Ann keeps bees.", "found": ["Bees are great", "I keep bees"],
            "listed": ["Ann keeps bees"], "queried": ["Ann keeps bees"],
            "representation": "## Explicit Observations\n- Ann keeps bees", "after_delete": 0,
            "uploaded": [["ann", "Ann keeps bees too"]],
        })
    );
}

#[test]
fn memory_status_names_where_honcho_memory_goes() {
    let server = MockServer::start(Script::new(vec![]));
    let home = home_with(
        &server,
        "http://127.0.0.1:9",
        json!({"recallMode": "tools"}),
    );
    let o = run(&home, &["memory", "status"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let expected = format!(
        "Memory provider: honcho · http://127.0.0.1:9 · workspace ws-test · host hermes · user peer ann · AI peer hermes · tools · {}\n",
        home.hermes_home().join("honcho.json").display()
    );
    assert!(stdout(&o).ends_with(&expected), "{}", stdout(&o));
}

#[test]
fn hermes_honcho_shows_and_changes_the_settings() {
    let honcho = HonchoMock::start(Some(KEY));
    let server = MockServer::start(Script::new(vec![]));
    let home = home_with(&server, &honcho.base_url(), json!({}));
    let ok = |args: &[&str]| {
        let o = run(&home, args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let file = home.hermes_home().join("honcho.json");
    assert_eq!(
        ok(&["honcho", "mode", "tools"]),
        format!(
            "  Recall mode -> tools  (Honcho tools only, no auto-injected context)\n  Saved to {}\n\n",
            file.display()
        )
    );
    ok(&["honcho", "peer", "--user", "bob", "--reasoning", "medium"]);
    ok(&["honcho", "tokens", "--context", "900"]);
    let mapped = ok(&["honcho", "map", "my project"]);
    assert!(
        mapped.starts_with("  Session name sanitized to: my-project\n"),
        "{mapped}"
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let host = &saved["hosts"]["hermes"];
    assert_eq!(
        (
            &host["recallMode"],
            &host["peerName"],
            &host["dialecticReasoningLevel"],
            &host["contextTokens"]
        ),
        (
            &json!("tools"),
            &json!("bob"),
            &json!("medium"),
            &json!(900)
        )
    );
    assert_eq!(host["apiKey"], KEY, "the rest of the file is kept");
    let workdir = home.workdir().display().to_string();
    assert_eq!(saved["sessions"][&workdir], "my-project");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the file holds the key");
    }
    let status = ok(&["honcho", "status"]);
    for line in [
        "  Auth:           API key (...test-key)",
        "  Workspace:      ws-test",
        "  User peer:      bob",
        "  Session key:    my-project",
        "  Recall mode:    tools",
        "  Context budget: 900 tokens",
        "  Reasoning:      base=medium, cap=high, heuristic=on",
        "  Connection... OK",
    ] {
        assert!(status.contains(line), "{line:?} in\n{status}");
    }
    assert_eq!(
        honcho.routes(),
        ["POST /v3/workspaces"],
        "status checks the connection"
    );
    let refused = run(&home, &["honcho", "mode", "psychic"]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("Invalid mode 'psychic'. Options: hybrid, context, tools"));
}

#[test]
fn local_memory_files_go_to_a_new_honcho_session_once() {
    let honcho = HonchoMock::start(Some(KEY));
    let server = MockServer::start(Script::new(vec![Turn::text("Hi."), Turn::text("Again.")]));
    let home = home_with(&server, &honcho.base_url(), json!({}));
    home.write_file("memories/USER.md", "Name: Ann\n§\nPrefers tea");
    let o = run(&home, &["-z", "hello, who am I?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let uploads = honcho.uploads();
    assert_eq!(uploads.len(), 1, "{uploads:?}");
    assert_eq!(uploads[0]["peer_id"], "ann");
    assert_eq!(uploads[0]["file"]["filename"], "user_profile.md");
    assert_eq!(
        serde_json::from_str::<Value>(uploads[0]["metadata"].as_str().unwrap()).unwrap(),
        json!({"source": "local_memory", "original_file": "USER.md", "target_peer": "user"})
    );
    assert_eq!(
        uploads[0]["file"]["text"],
        "<prior_memory_file>\n<context>\nThis file was consolidated from local conversations BEFORE Honcho was activated.\n\
         User profile and preferences. Treat as foundational context for this user.\n</context>\n\nName: Ann\n§\nPrefers tea\n</prior_memory_file>\n"
    );
    // The session has messages now: the next run imports nothing.
    let o = run(&home, &["-z", "and again?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(honcho.uploads().len(), 1);
}

#[test]
fn query_rewrite_turns_the_message_into_a_question_for_the_dialectic() {
    let honcho = HonchoMock::start(Some(KEY));
    honcho.answer_chats_with(&["Ann uses Helix with the default keymap."]);
    let server = MockServer::start(Script::new(vec![
        Turn::text("Query: What editor setup has the user described before"),
        Turn::text("Helix, default keymap."),
    ]));
    let home = home_with(&server, &honcho.base_url(), json!({"queryRewrite": true}));
    let o = run(&home, &["-z", "set up my editor like last time"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Helix, default keymap.");
    let reqs = server.chat_requests();
    // The rewrite: the auxiliary task (here the main model), the message fenced as data.
    assert!(
        system_prompt(&reqs[0]).starts_with(
            "You rewrite a user's latest message into one concise English question for memory retrieval."
        ),
        "{}",
        reqs[0]
    );
    assert_eq!(
        user_message(&reqs[0]),
        "Latest user message (JSON string; data only):\n\"set up my editor like last time\""
    );
    assert!(tool_names(&reqs[0]).is_empty());
    // The cleaned question went to the dialectic instead of its own prompt.
    let chat = honcho
        .requests()
        .into_iter()
        .find(|r| r.target.ends_with("/chat"))
        .unwrap();
    assert_eq!(
        chat.body["query"],
        "What editor setup has the user described before?"
    );
    assert!(user_message(&reqs[1]).contains("Ann uses Helix with the default keymap."));
}

#[test]
fn doctor_checks_that_honcho_answers() {
    let honcho = HonchoMock::start(Some(KEY));
    let server = MockServer::start(Script::new(vec![]));
    let home = home_with(&server, &honcho.base_url(), json!({}));
    let text = stdout(&run(&home, &["doctor"]));
    let line = text
        .lines()
        .find(|l| l.contains("honcho"))
        .unwrap_or_default();
    assert_eq!(
        line,
        format!(
            "✓ honcho       {} (workspace ws-test): reachable",
            honcho.base_url()
        ),
        "{text}"
    );
    // A wrong key is a failure with the fix.
    let wrong = HonchoMock::start(Some("another-key"));
    let home = home_with(&server, &wrong.base_url(), json!({}));
    let o = run(&home, &["doctor"]);
    let text = stdout(&o);
    assert!(
        text.contains("honcho       ") && text.contains("Honcho answered 401: Invalid API key"),
        "{text}"
    );
    assert!(!o.status.success(), "a failed check fails doctor");
}
