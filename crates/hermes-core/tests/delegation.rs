//! `delegate_task` driving real sub-agents against the scripted mock server: what a child is
//! sent (its own system prompt, the goal and context as its one user message, the restricted
//! tools), what the parent gets back (one tool result with every child's summary, in task
//! order), a batch running at once, a failing child, the shared iteration budget, a child's own
//! limit, and an interrupt reaching the children.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use hermes_core::delegation::{Delegation, DelegationSettings, child_system_prompt};
use hermes_core::{Agent, AgentOptions, ModelTarget, NoEvents};
use hermes_llm::HttpTimeouts;
use hermes_protocol::{AgentEvent, Role};
use hermes_testkit::{Fault, MockServer, Reply, Script, Turn};
use hermes_tools::{Registry, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The tools a child gets from the built-in set: all but clarify (and delegate_task).
const CHILD_TOOLS: [&str; 7] = [
    "terminal",
    "process",
    "read_file",
    "write_file",
    "patch",
    "search_files",
    "todo",
];

fn target(server: &MockServer) -> ModelTarget {
    let timeouts = HttpTimeouts {
        connect: Duration::from_secs(5),
        idle: Duration::from_secs(30),
    };
    ModelTarget {
        provider: hermes_llm::build_provider(&spec(server), &timeouts).unwrap(),
        model: "mock-model".into(),
    }
}

/// A parent agent with the built-in tools and a working `delegate_task`.
fn parent(
    server: &MockServer,
    cwd: &Path,
    options: AgentOptions,
    settings: DelegationSettings,
) -> Agent {
    let tools = Delegation::new(target(server), Vec::new(), options.clone(), settings)
        .install(&Registry::builtin());
    Agent::new(
        target(server).provider,
        tools,
        "You are a test agent.".into(),
        options,
        ToolContext::new(cwd.to_path_buf()),
    )
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The parsed result of the parent's `delegate_task` call (`call_0_0`) in a request.
fn delegation_result(request: &Value) -> Value {
    serde_json::from_str(tool_result(request, "call_0_0").unwrap()).unwrap()
}

#[tokio::test]
async fn one_goal_runs_a_child_and_the_parent_reads_only_its_summary() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "alpha").unwrap();
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "delegate_task",
            json!({"goal": "Find out what a.txt holds", "context": "It is in the working directory."}),
        ),
        Turn::tool("read_file", json!({"path": "a.txt"})),
        Turn::text("- a.txt holds alpha"),
        Turn::text("The file holds alpha."),
    ]));
    let agent = parent(
        &server,
        tmp.path(),
        fast_options(),
        DelegationSettings::default(),
    );
    let rec = Recorder::default();
    let result = agent
        .run_turn(
            "what is in a.txt?",
            Vec::new(),
            &rec,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(result.final_text, "The file holds alpha.");
    assert!(result.is_completed());
    assert_eq!(result.api_calls, 2, "the parent's own calls");

    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 4);
    let mut parent_tools: Vec<String> = Registry::builtin()
        .names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    parent_tools.push("delegate_task".into());
    assert_eq!(tool_names(&reqs[0]), parent_tools);

    // The child's first request: its own prompt, the goal and context, fewer tools.
    let child = &reqs[1];
    assert_eq!(
        messages(child),
        &vec![
            json!({"role": "system", "content": child_system_prompt(tmp.path())}),
            json!({"role": "user", "content": "Find out what a.txt holds\n\nContext:\nIt is in the working directory."}),
        ]
    );
    assert_eq!(tool_names(child), CHILD_TOOLS);
    assert!(
        tool_result(&reqs[2], "call_1_0").unwrap().contains("alpha"),
        "the child's own tool ran"
    );

    // The parent's next request: its own history plus one tool result with the summary.
    let roles: Vec<&str> = messages(&reqs[3])
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(
        delegation_result(&reqs[3]),
        json!({"results": [
            {"task": 1, "status": "ok", "summary": "- a.txt holds alpha", "api_calls": 2}
        ]})
    );

    // Nothing of the child reached the parent's frontend.
    let streamed: String = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "The file holds alpha.");
    let tools_seen: Vec<String> = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolStarted { name, preview, .. } => Some(format!("{name}: {preview}")),
            _ => None,
        })
        .collect();
    assert_eq!(tools_seen, ["delegate_task: Find out what a.txt holds"]);
}

#[tokio::test]
async fn a_batch_runs_its_children_at_once_and_answers_in_task_order() {
    let tmp = tempfile::tempdir().unwrap();
    // Each reply waits 3 s: run one after another, the last child could not even ask before
    // 6 s had passed; at once, all three ask before the first reply is out.
    let slow = |text: &str| Turn::from(Reply::text(text).with_delay_ms(3_000));
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "delegate_task",
            json!({
                "context": "Shared notes.",
                "tasks": [
                    {"goal": "task A"},
                    {"goal": "task B", "context": "Only for B.", "toolsets": ["file"]},
                    {"goal": "task C"}
                ]
            }),
        ),
        slow("summary 1"),
        slow("summary 2"),
        slow("summary 3"),
        Turn::text("all done"),
    ]));
    let agent = parent(
        &server,
        tmp.path(),
        fast_options(),
        DelegationSettings::default(),
    );
    let result = agent
        .run_turn("split it", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(result.final_text, "all done");
    let requests = server.requests();
    let child_arrivals: Vec<Instant> = requests[1..4].iter().map(|r| r.received_at).collect();
    let spread = *child_arrivals.iter().max().unwrap() - *child_arrivals.iter().min().unwrap();
    assert!(
        spread < Duration::from_millis(3_000),
        "all three asked before any was answered: {spread:?}"
    );

    // Replies go out in arrival order; whichever child got reply k must report summary k.
    let reqs = server.chat_requests();
    let mut summary_of = std::collections::HashMap::new();
    for (k, req) in reqs[1..4].iter().enumerate() {
        let user = messages(req)[1]["content"].as_str().unwrap().to_string();
        summary_of.insert(user.clone(), format!("summary {}", k + 1));
        let expected_tools: Vec<&str> = if user.starts_with("task B") {
            vec!["read_file", "write_file", "patch", "search_files"]
        } else {
            CHILD_TOOLS.to_vec()
        };
        assert_eq!(tool_names(req), expected_tools, "{user}");
    }
    let users = [
        "task A\n\nContext:\nShared notes.",
        "task B\n\nContext:\nShared notes.\n\nOnly for B.",
        "task C\n\nContext:\nShared notes.",
    ];
    let expected: Vec<Value> = users
        .iter()
        .enumerate()
        .map(|(i, user)| {
            json!({"task": i + 1, "status": "ok", "summary": summary_of[*user], "api_calls": 1})
        })
        .collect();
    assert_eq!(delegation_result(&reqs[4]), json!({ "results": expected }));
}

#[tokio::test]
async fn a_failing_child_is_reported_and_the_parent_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let server = MockServer::start(Script::new(vec![
        Turn::tool("delegate_task", json!({"goal": "do the thing"})),
        Fault::http(400, "Invalid 'messages[1].role'").into(),
        Turn::text("The sub-agent failed; doing it myself."),
    ]));
    let agent = parent(
        &server,
        tmp.path(),
        fast_options(),
        DelegationSettings::default(),
    );
    let result = agent
        .run_turn("go", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(result.final_text, "The sub-agent failed; doing it myself.");
    assert!(result.is_completed());
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 3);
    let entry = &delegation_result(&reqs[2])["results"][0];
    assert_eq!(entry["status"], "failed");
    assert_eq!(entry["api_calls"], 0);
    let error = entry["error"].as_str().unwrap();
    assert!(error.contains("Invalid 'messages[1].role'"), "{error}");
    assert!(entry.get("summary").is_none(), "{entry}");
}

#[tokio::test]
async fn mistakes_in_the_arguments_come_back_as_errors_to_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let server = MockServer::start(Script::new(vec![
        Reply::tool_calls(vec![
            ("delegate_task", json!({"goal": "  "})),
            (
                "delegate_task",
                json!({"tasks": [{"goal": "1"}, {"goal": "2"}, {"goal": "3"}]}),
            ),
            (
                "delegate_task",
                json!({"goal": "x", "toolsets": ["clarify"]}),
            ),
        ])
        .into(),
        Turn::text("ok"),
    ]));
    let settings = DelegationSettings {
        max_concurrent_children: 2,
        ..DelegationSettings::default()
    };
    let agent = parent(&server, tmp.path(), fast_options(), settings);
    let result = agent
        .run_turn("go", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(result.final_text, "ok");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2, "no child ran");
    assert_eq!(
        tool_result(&reqs[1], "call_0_0"),
        Some(r#"{"error":"goal is empty: say what the sub-agent should achieve"}"#)
    );
    assert_eq!(
        tool_result(&reqs[1], "call_0_1"),
        Some(
            r#"{"error":"too many tasks: 3 given, at most 2 run at once (delegation.max_concurrent_children); split them over several calls"}"#
        )
    );
    assert_eq!(
        tool_result(&reqs[1], "call_0_2"),
        Some(r#"{"error":"a sub-agent cannot use the `clarify` toolset"}"#)
    );
    // The schema tells the model the batch limit.
    let schema = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "delegate_task")
        .unwrap();
    assert_eq!(
        schema["function"]["parameters"]["properties"]["tasks"]["maxItems"],
        2
    );
}

#[tokio::test]
async fn children_draw_on_the_parents_budget() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "alpha").unwrap();
    let server = MockServer::start(Script::new(vec![
        Turn::tool("delegate_task", json!({"goal": "read a lot"})),
        Turn::tool("read_file", json!({"path": "a.txt"})),
        Turn::tool("read_file", json!({"path": "a.txt"})),
        // Reached only by the parent's wrap-up: the child's third call finds no budget left.
        Turn::text("Out of budget; the child read a.txt twice."),
    ]));
    let options = AgentOptions {
        max_turns: 3,
        ..fast_options()
    };
    let agent = parent(&server, tmp.path(), options, DelegationSettings::default());
    let result = agent
        .run_turn("go", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert!(
        !result.is_completed(),
        "the parent ended with its grace call"
    );
    assert_eq!(
        result.final_text,
        "Out of budget; the child read a.txt twice."
    );
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        delegation_result(&reqs[3]),
        json!({"results": [{
            "task": 1,
            "status": "failed",
            "error": "the turn's budget of model calls ran out before the sub-agent finished",
            "api_calls": 2
        }]})
    );
    assert!(
        tool_names(&reqs[3]).is_empty(),
        "the grace call has no tools"
    );
}

#[tokio::test]
async fn a_child_wraps_up_at_its_own_limit() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "alpha").unwrap();
    let server = MockServer::start(Script::new(vec![
        Turn::tool("delegate_task", json!({"goal": "read everything"})),
        Turn::tool("read_file", json!({"path": "a.txt"})),
        Turn::text("Read a.txt; the rest is left."),
        Turn::text("Partly done."),
    ]));
    let settings = DelegationSettings {
        max_iterations: 1,
        ..DelegationSettings::default()
    };
    let agent = parent(&server, tmp.path(), fast_options(), settings);
    let result = agent
        .run_turn("go", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(result.final_text, "Partly done.");
    let reqs = server.chat_requests();
    assert!(
        tool_names(&reqs[2]).is_empty(),
        "the child's wrap-up has no tools"
    );
    assert_eq!(
        delegation_result(&reqs[3]),
        json!({"results": [{
            "task": 1,
            "status": "ok",
            "summary": "Read a.txt; the rest is left.",
            "api_calls": 2,
            "note": "stopped at its limit of 1 model calls; the summary may be incomplete"
        }]})
    );
}

#[tokio::test]
async fn interrupting_the_parent_stops_its_children_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "delegate_task",
            json!({"tasks": [{"goal": "wait one"}, {"goal": "wait two"}]}),
        ),
        Fault::hang(30_000).into(),
        Fault::hang(30_000).into(),
    ]));
    let agent = parent(
        &server,
        tmp.path(),
        fast_options(),
        DelegationSettings::default(),
    );
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        let server = &server;
        async move {
            while server.chat_request_count() < 3 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            cancel.cancel();
            Instant::now()
        }
    };
    let (result, cancelled_at) = tokio::join!(
        agent.run_turn("go", Vec::new(), &NoEvents, cancel),
        canceller
    );
    // Inside the 3 s the executor would wait for a tool that ignores the interrupt.
    assert!(
        cancelled_at.elapsed() < Duration::from_millis(2_500),
        "{:?}",
        cancelled_at.elapsed()
    );
    assert!(result.is_interrupted());
    assert_eq!(
        server.chat_request_count(),
        3,
        "nothing after the interrupt"
    );
    let tool = result
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    let failed =
        json!({"status": "failed", "error": "interrupted before it finished", "api_calls": 0});
    let mut first = failed.clone();
    first["task"] = json!(1);
    let mut second = failed;
    second["task"] = json!(2);
    assert_eq!(
        serde_json::from_str::<Value>(&tool.content).unwrap(),
        json!({"results": [first, second]})
    );
}
