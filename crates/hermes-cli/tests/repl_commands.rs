//! Slash commands through the binary with piped input (plain output): what each command
//! prints, what the model is sent afterwards, and what the session store ends up holding.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use std::process::Output;

use hermes_store::Store;
use hermes_testkit::{MockServer, MockUsage, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

/// The chat with `input` typed, then end of input.
fn chat(home: &TestHome, input: &str) -> Output {
    chat_with(home, input, &[])
}

fn chat_with(home: &TestHome, input: &str, args: &[&str]) -> Output {
    run_with_stdin(home, args, input)
}

fn home_for(server: &MockServer) -> TestHome {
    let home = TestHome::new();
    home.write_mock_config(server);
    home
}

fn store(home: &TestHome) -> Store {
    Store::open(home.hermes_home().join("sessions.db")).unwrap()
}

fn contents(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .skip(1)
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn help_prefixes_ambiguity_unknown_names_and_escaped_slashes() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("deployed"),
        Turn::text("a path answer"),
    ]));
    let home = home_for(&server);
    std::fs::create_dir_all(home.hermes_home().join("skills/deploy-app")).unwrap();
    std::fs::write(
        home.hermes_home().join("skills/deploy-app/SKILL.md"),
        "---\nname: deploy-app\n---\n",
    )
    .unwrap();
    let o = chat(
        &home,
        "/he\n/help undo\n/re\n/frobnicate\n/deploy-app\n/skills\n/reload-mcp\n//etc/hosts is odd\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Available Commands"), "{out}");
    for name in [
        "/new [title]",
        "/undo [N]",
        "/model [name]",
        "/skin [name]",
        "/quit",
        "/reload-mcp",
    ] {
        assert!(out.contains(name), "{name} in help: {out}");
    }
    assert!(
        out.contains("/undo [N]\n  Take back the last N exchanges"),
        "{out}"
    );
    assert!(
        out.contains("/re could be /new, /retry, /resume, /reasoning, /reload-mcp"),
        "{out}"
    );
    assert!(out.contains("Unknown command /frobnicate"), "{out}");
    assert!(
        out.contains("⚡ Running skill deploy-app\ndeployed\n"),
        "{out}"
    );
    assert!(
        out.contains("1 skill; /<name> [request] runs one:\n  /deploy-app\n"),
        "{out}"
    );
    assert!(
        out.contains("MCP servers reloaded: 0 tools from 0 servers."),
        "{out}"
    );
    let requests = server.chat_requests();
    assert_eq!(
        requests.len(),
        2,
        "the skill, then the escaped line reached the model"
    );
    let sent = contents(requests[1]["messages"].as_array().unwrap());
    assert!(
        sent[0].starts_with("[The user ran the skill \"deploy-app\""),
        "{sent:?}"
    );
    assert_eq!(sent[1..], ["deployed", "/etc/hosts is odd"]);
}

#[test]
fn retry_and_undo_change_what_is_sent_and_stored() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("two again"),
        Turn::text("three"),
    ]));
    let home = home_for(&server);
    let o = chat(
        &home,
        "first\nsecond\n/retry\n/undo\n/undo 5\n/undo\nthird\n/history\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Retrying: second"), "{out}");
    assert!(
        out.contains("Took back 1 exchange (from: second)."),
        "{out}"
    );
    assert!(out.contains("Took back 1 exchange (from: first)."), "{out}");
    assert!(out.contains("Nothing to undo."), "{out}");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        contents(requests[2]["messages"].as_array().unwrap()),
        vec!["first", "one", "second"],
        "the retried message replaces the first try"
    );
    assert_eq!(
        contents(requests[3]["messages"].as_array().unwrap()),
        vec!["third"],
        "everything before was undone"
    );
    assert!(
        out.contains("❯ third\nthree\n"),
        "/history shows the conversation: {out}"
    );
    let s = store(&home);
    let sessions = s.list_sessions(5, None).unwrap();
    assert_eq!(sessions.len(), 1);
    let stored: Vec<String> = s
        .messages(&sessions[0].session.id)
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(stored, vec!["third", "three"]);
    assert_eq!(sessions[0].session.message_count, 2);
}

#[test]
fn model_switch_keeps_the_conversation_and_usage_adds_up() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("hi"),
        // Priced in the catalogue at $5 in / $25 out per million tokens.
        Reply::text("still here")
            .with_usage(MockUsage {
                prompt_tokens: 1_000_000,
                completion_tokens: 100_000,
                cached_tokens: 0,
            })
            .into(),
    ]));
    let home = home_for(&server);
    let o = chat(
        &home,
        "hello\n/model\n/model claude-opus-4-5\n/provider\ncontinue\n/usage\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Model: mock-model via custom"), "{out}");
    assert!(
        out.contains("Now using claude-opus-4-5 via custom; the conversation continues."),
        "{out}"
    );
    assert!(
        out.contains("Provider: custom · http://127.0.0.1:"),
        "{out}"
    );
    assert!(out.contains("Last turn   1 call ·"), "{out}");
    assert!(out.contains("Session     2 turns · 2 calls ·"), "{out}");
    assert!(out.contains("Context     ~"), "{out}");
    let requests = server.chat_requests();
    assert_eq!(requests[1]["model"], "claude-opus-4-5");
    assert_eq!(
        contents(requests[1]["messages"].as_array().unwrap()),
        vec!["hello", "hi", "continue"]
    );
    assert!(
        requests[1]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("claude-opus-4-5"),
        "the new model's system prompt"
    );
    let s = store(&home);
    let sessions = s.list_sessions(5, None).unwrap();
    assert_eq!(sessions.len(), 1, "one stored session across the switch");
    assert_eq!(sessions[0].session.message_count, 4);
    // Regression: the session kept the first model's name and never got a cost.
    assert_eq!(
        sessions[0].session.model.as_deref(),
        Some("claude-opus-4-5")
    );
    assert_eq!(sessions[0].session.provider.as_deref(), Some("custom"));
    let cost = sessions[0].session.estimated_cost_usd.unwrap();
    assert!(
        (cost - 7.5).abs() < 1e-9,
        "only the priced call counts: {cost}"
    );
    let bad = chat(&home, "/provider no-such-provider\n/model\n");
    assert!(bad.status.success());
    let out = stdout(&bad);
    assert!(out.contains("Not switched:"), "{out}");
    assert!(out.contains("Model: mock-model via custom"), "{out}");
}

#[test]
fn compress_continues_in_a_child_session() {
    let mut turns: Vec<Turn> = (1..=6).map(|i| Turn::text(format!("answer {i}"))).collect();
    turns.push(Turn::text("## Goal\nTalk.\n## Next steps\nMore talk."));
    turns.push(Turn::text("after compression"));
    let server = MockServer::start(Script::new(turns));
    let home = TestHome::new();
    // A 60K window: the protected tail (10K tokens) leaves a middle to summarise, and
    // automatic compression (at 45K) never starts on its own.
    home.write_config(&format!(
        "{}compression:\n  context_length: 60000\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let mut input: String = (1..=6)
        .map(|i| format!("message {i}: {}\n", "lorem ipsum ".repeat(1000)))
        .collect();
    input.push_str("/compress the goal\nfinally\n/compress\n");
    let o = chat(&home, &input);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Compressed the conversation (summarised)"),
        "{out}"
    );
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 8);
    assert!(requests[6].get("tools").is_none(), "the summary request");
    assert!(
        requests[6].to_string().contains("the goal"),
        "the focus is passed on"
    );
    let before = requests[5]["messages"].as_array().unwrap().len();
    let last = requests[7]["messages"].as_array().unwrap();
    assert!(
        last.len() < before + 2,
        "{} messages after, {before} before",
        last.len()
    );
    assert!(
        last.iter().any(|m| m.to_string().contains("Talk.")),
        "the summary is sent"
    );
    assert_eq!(last.last().unwrap()["content"], "finally");
    let s = store(&home);
    let sessions = s.list_sessions(5, None).unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let (child, parent) = (&sessions[0].session, &sessions[1].session);
    assert_eq!(child.parent_session_id.as_deref(), Some(parent.id.as_str()));
    assert_eq!(parent.end_reason.as_deref(), Some("compression"));
    assert_eq!(
        parent.message_count, 12,
        "the parent keeps the full transcript"
    );
    let stored = s.messages(&child.id).unwrap();
    assert_eq!(
        stored.len(),
        last.len(),
        "what was sent (less the system prompt), plus the answer"
    );
}

#[test]
fn sessions_and_resume_switch_the_conversation() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("noted"),
        Turn::text("resumed"),
    ]));
    let home = home_for(&server);
    let first = chat(&home, "remember the walrus\n");
    assert!(first.status.success());
    let old_id = store(&home).list_sessions(1, None).unwrap()[0]
        .session
        .id
        .clone();
    let o = chat(
        &home,
        &format!(
            "/sessions\n/resume nothing-like-it\n/resume {}\nand now?\n",
            &old_id[..12]
        ),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&old_id) && out.contains("remember the walrus"),
        "{out}"
    );
    assert!(out.contains("Cannot resume `nothing-like-it`"), "{out}");
    assert!(out.contains(&format!("Resumed session {old_id}")), "{out}");
    let requests = server.chat_requests();
    assert_eq!(
        contents(requests[1]["messages"].as_array().unwrap()),
        vec!["remember the walrus", "noted", "and now?"]
    );
    let s = store(&home);
    assert_eq!(
        s.messages(&old_id).unwrap().len(),
        4,
        "the resumed session grew"
    );
}

#[test]
fn yolo_approvals_and_verbose() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": "rm -rf build && echo removed"}),
        ),
        Turn::text("done"),
        Turn::tool("terminal", json!({"command": "rm -rf dist"})),
        Turn::text("asked"),
    ]));
    let home = home_for(&server);
    std::fs::create_dir_all(home.workdir().join("build")).unwrap();
    std::fs::create_dir_all(home.workdir().join("dist")).unwrap();
    let o = chat(
        &home,
        "/yolo\n/verbose\nclean\n/yolo off\n/verbose off\nclean dist\nd\n/approvals\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("YOLO on"), "{out}");
    assert!(
        out.contains("⚡ yolo: allowed without asking (recursive delete)"),
        "{out}"
    );
    assert!(!home.workdir().join("build").exists());
    assert!(
        out.contains("\"command\": \"rm -rf build && echo removed\""),
        "verbose args: {out}"
    );
    assert!(out.contains("terminal →"), "verbose result: {out}");
    assert!(out.contains("output: removed"), "{out}");
    assert!(
        out.contains("⚠ Dangerous command: recursive delete\n      rm -rf dist"),
        "asked again: {out}"
    );
    assert!(home.workdir().join("dist").exists(), "denied");
    assert!(
        out.contains("Approvals: manual (you are asked) · answer within 60s"),
        "{out}"
    );
    assert!(out.contains("YOLO: off"), "{out}");
    let yolo_flag = chat_with(&home, "/approvals\n", &["--yolo"]);
    assert!(stdout(&yolo_flag).contains("YOLO: on (/yolo off asks again)"));
}

#[test]
fn skins_switch_persist_and_broken_files_fall_back() {
    let server = MockServer::start(Script::new(vec![]));
    let home = home_for(&server);
    home.write_file(
        "skins/neon.yaml",
        "name: neon\ndescription: Bright lights\n",
    );
    home.write_file("skins/broken.yaml", "colors: [unclosed\n");
    let o = chat(&home, "/skin\n/skin nope\n/skin broken\n/skin neon\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("● default"), "{out}");
    assert!(
        out.contains("neon") && out.contains("Bright lights (skins/neon.yaml)"),
        "{out}"
    );
    assert!(out.contains("broken: invalid YAML"), "{out}");
    assert!(out.contains("no skin named `nope`"), "{out}");
    assert!(
        out.contains("broken.yaml is broken") && out.contains("kept the default skin"),
        "{out}"
    );
    assert!(out.contains("Skin: neon (saved as display.skin)."), "{out}");
    let config = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert!(
        config.starts_with("model:\n"),
        "the user's config is kept: {config}"
    );
    assert!(config.ends_with("display:\n  skin: \"neon\"\n"), "{config}");

    home.write_config(&format!(
        "{}display:\n  skin: broken\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = chat(&home, "/skin\n");
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("broken.yaml is broken"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("● default"), "{}", stdout(&o));
}

#[test]
fn tools_toolsets_and_memory() {
    let server = MockServer::start(Script::new(vec![]));
    let home = home_for(&server);
    home.write_file(
        "memories/MEMORY.md",
        "Project uses cargo nextest\n§\nDeploys go through staging\n",
    );
    let o = chat_with(
        &home,
        "/tools\n/tools file\n/tools web\n/toolsets\n/memory\n",
        &["-t", "file,memory"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("read_file") && out.contains("memory"), "{out}");
    assert!(
        !out.contains("💻 terminal"),
        "terminal is not enabled: {out}"
    );
    assert!(out.contains("No enabled tool is in toolset `web`"), "{out}");
    assert!(
        out.contains("✓ file") && out.contains("· terminal") && out.contains("off"),
        "{out}"
    );
    assert!(out.contains("MEMORY.md · 2 entries"), "{out}");
    assert!(out.contains("• Deploys go through staging"), "{out}");
    assert!(out.contains("USER.md · 0 entries"), "{out}");
}

#[test]
fn reasoning_on_a_pipe_and_new_with_a_title() {
    let server = MockServer::start(Script::new(vec![
        Reply::text("hidden thoughts answer")
            .with_reasoning("first thoughts")
            .into(),
        Reply::text("shown thoughts answer")
            .with_reasoning("second thoughts")
            .into(),
    ]));
    let home = home_for(&server);
    let o = chat(
        &home,
        "one\n/reasoning show\ntwo\n/new Fresh start\n/title\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        !out.contains("first thoughts"),
        "reasoning is hidden by default: {out}"
    );
    assert!(out.contains("hidden thoughts answer"), "{out}");
    assert!(out.contains("The model's reasoning: shown."), "{out}");
    assert!(
        out.contains("[reasoning]\nsecond thoughts\nshown thoughts answer"),
        "{out}"
    );
    assert!(
        out.contains("Started a new conversation.\nTitle set: Fresh start\nTitle: Fresh start"),
        "{out}"
    );
}

#[test]
fn reasoning_sets_the_effort_for_the_session_or_for_good() {
    let server = MockServer::start(Script::new(vec![Turn::text("thought hard")]));
    let home = home_for(&server);
    let o = chat(
        &home,
        "/reasoning\n/reasoning high\nhello\n/reasoning\n/reasoning loud\n/reasoning low --global\n/reasoning hide\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Reasoning effort: the provider's default · the model's reasoning is"),
        "{out}"
    );
    assert!(
        out.contains("Reasoning effort: high for this session."),
        "{out}"
    );
    assert!(out.contains("Reasoning effort: high ·"), "{out}");
    assert!(out.contains("/reasoning: unknown level `loud`"), "{out}");
    assert!(out.contains("saved as agent.reasoning_effort"), "{out}");
    assert!(out.contains("The model's reasoning: hidden."), "{out}");
    assert_eq!(server.chat_requests()[0]["reasoning_effort"], "high");
    let config = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert!(config.contains("reasoning_effort: \"low\""), "{config}");
    // The saved level is what the next run sends.
    let server2 = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let config = config.replace(&server.base_url(), &server2.base_url());
    std::fs::write(home.hermes_home().join("config.yaml"), config).unwrap();
    assert!(run(&home, &["-z", "again"]).status.success());
    assert_eq!(server2.chat_requests()[0]["reasoning_effort"], "low");
}

#[test]
fn display_settings_from_config_and_saved_by_reasoning_global() {
    let server = MockServer::start(Script::new(vec![
        Reply::text("visible answer")
            .with_reasoning("configured thoughts")
            .into(),
    ]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}display:\n  show_reasoning: true\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = chat(&home, "one\n/reasoning hide --global\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("[reasoning]\nconfigured thoughts\nvisible answer"),
        "display.show_reasoning: true shows it from the start: {out}"
    );
    assert!(out.contains("saved as display.show_reasoning"), "{out}");
    let config = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert!(config.contains("  show_reasoning: false\n"), "{config}");
}
