//! The kanban board through the binary, the scripted mock model playing every agent: an
//! orchestrator profile splits a goal into three linked tasks with `kanban_create`; one
//! dispatcher pass starts the two independent ones at once, as separate worker processes of
//! their profiles; the third starts once both are done and reads their handoffs. A worker
//! that blocks on a question resumes when a person unblocks it with the answer; a killed
//! worker's claim is recovered and the task runs again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::*;
use hermes_testkit::{Fault, MockServer, Script, TestHome, Turn, mock_config_yaml};
use serde_json::{Value, json};

/// Writes a profile home pointing at the mock model, with extra config lines.
fn profile(home: &TestHome, server: &MockServer, name: &str, extra: &str) {
    let dir = home.hermes_home().join("profiles").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.yaml"),
        format!("{}{extra}", mock_config_yaml(server)),
    )
    .unwrap();
}

fn kanban(home: &TestHome, args: &[&str]) -> Output {
    let mut all = vec!["kanban"];
    all.extend_from_slice(args);
    let o = home
        .command(bin())
        .args(&all)
        .env("HERMES_KANBAN_CRASH_GRACE_SECONDS", "0")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "hermes {all:?}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    o
}

fn show(home: &TestHome, id: &str) -> Value {
    serde_json::from_str(&stdout(&kanban(home, &["show", id, "--json"]))).unwrap()
}

fn status(home: &TestHome, id: &str) -> String {
    show(home, id)["task"]["status"]
        .as_str()
        .unwrap()
        .to_string()
}

fn dispatch(home: &TestHome) -> Value {
    serde_json::from_str(&stdout(&kanban(home, &["dispatch", "--json"]))).unwrap()
}

fn spawned_ids(report: &Value) -> Vec<String> {
    let mut ids: Vec<String> = report["spawned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[0].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

fn messages(req: &Value) -> &Vec<Value> {
    req["messages"].as_array().unwrap()
}

fn first_user(req: &Value) -> String {
    messages(req)
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn tool_results(req: &Value) -> Vec<String> {
    messages(req)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn system(req: &Value) -> String {
    messages(req)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The task id in a `kanban_create` result.
fn created_id(result: &str) -> String {
    serde_json::from_str::<Value>(result).unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A worker: show its task, then complete it with a summary naming the title it read.
fn worker_turn(req: &Value) -> Turn {
    let results = tool_results(req);
    match results.len() {
        0 => Turn::tool("kanban_show", json!({})),
        1 => {
            let context = &results[0];
            let title = context
                .split("# Kanban task ")
                .nth(1)
                .and_then(|r| r.split_once(": "))
                .map(|(_, t)| t.split("\\n").next().unwrap_or("").to_string())
                .unwrap_or_default();
            Turn::tool(
                "kanban_complete",
                json!({"summary": format!("Finished: {title}"), "metadata": {"words": 42}}),
            )
        }
        _ => Turn::text("done"),
    }
}

#[test]
fn an_orchestrator_splits_a_goal_and_the_dispatcher_runs_the_tasks_in_dependency_order() {
    let server = MockServer::start(Script::responding(|req| {
        if first_user(req).starts_with("work kanban task ") {
            return worker_turn(req);
        }
        // The orchestrator: two research tasks, then the write-up after both.
        let results = tool_results(req);
        match results.len() {
            0 => Turn::tool(
                "kanban_create",
                json!({"title": "Research batteries", "assignee": "researcher", "body": "Costs per kWh."}),
            ),
            1 => Turn::tool(
                "kanban_create",
                json!({"title": "Research panels", "assignee": "researcher"}),
            ),
            2 => Turn::tool(
                "kanban_create",
                json!({
                    "title": "Write the report",
                    "assignee": "writer",
                    "parents": [created_id(&results[0]), created_id(&results[1])]
                }),
            ),
            _ => Turn::text("Planned three tasks."),
        }
    }));
    let home = TestHome::new();
    home.write_mock_config(&server);
    profile(&home, &server, "planner", "toolsets:\n  - kanban\n");
    profile(&home, &server, "researcher", "");
    profile(&home, &server, "writer", "");

    let o = run(
        &home,
        &["-p", "planner", "-z", "Plan a report on home solar power"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Planned three tasks.\n");
    let plan = &server.chat_requests()[0];
    let mut offered = tool_names(plan);
    offered.sort();
    assert_eq!(
        offered,
        [
            "kanban_attach",
            "kanban_attach_url",
            "kanban_attachments",
            "kanban_block",
            "kanban_comment",
            "kanban_complete",
            "kanban_create",
            "kanban_heartbeat",
            "kanban_link",
            "kanban_list",
            "kanban_show",
            "kanban_unblock"
        ]
    );
    assert!(
        system(plan).contains("# Kanban board\nYou route work"),
        "{}",
        system(plan)
    );

    let listed: Value = serde_json::from_str(&stdout(&kanban(&home, &["list", "--json"]))).unwrap();
    let tasks = listed.as_array().unwrap();
    assert_eq!(tasks.len(), 3);
    let by_title = |t: &str| {
        tasks.iter().find(|x| x["title"] == t).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (batteries, panels, report) = (
        by_title("Research batteries"),
        by_title("Research panels"),
        by_title("Write the report"),
    );
    for t in tasks {
        assert_eq!(t["created_by"], "planner");
    }
    assert_eq!(status(&home, &report), "todo");
    let mut parents = vec![batteries.clone(), panels.clone()];
    parents.sort();
    assert_eq!(show(&home, &report)["parents"], json!(parents));

    // One pass starts both research tasks at once; the report waits for them.
    let first = dispatch(&home);
    let mut both = vec![batteries.clone(), panels.clone()];
    both.sort();
    assert_eq!(spawned_ids(&first), both, "{first}");
    for id in [&batteries, &panels] {
        let task = show(&home, id);
        let pid = task["runs"][0]["worker_pid"].as_i64();
        assert!(pid.is_some() || task["task"]["status"] == "done", "{task}");
    }
    wait("both research tasks done", || {
        status(&home, &batteries) == "done" && status(&home, &panels) == "done"
    });
    assert_eq!(
        show(&home, &batteries)["latest_summary"],
        "Finished: Research batteries"
    );

    // The workers' requests: their own task, the worker protocol, no board-wide tools.
    let worker_req = server
        .chat_requests()
        .into_iter()
        .find(|r| first_user(r) == format!("work kanban task {batteries}"))
        .unwrap();
    let worker_tools = tool_names(&worker_req);
    assert!(worker_tools.contains(&"kanban_complete".to_string()));
    assert!(!worker_tools.contains(&"kanban_list".to_string()));
    assert!(!worker_tools.contains(&"kanban_unblock".to_string()));
    assert!(system(&worker_req).contains("# Kanban task protocol"));

    // The report is promoted and started on the next pass, and reads both handoffs.
    let second = dispatch(&home);
    assert_eq!(spawned_ids(&second), vec![report.clone()], "{second}");
    wait("the report done", || status(&home, &report) == "done");
    let report_show = server
        .chat_requests()
        .into_iter()
        .filter(|r| first_user(r) == format!("work kanban task {report}"))
        .find(|r| tool_results(r).len() == 1)
        .unwrap();
    let context = &tool_results(&report_show)[0];
    assert!(context.contains("## Parent task results"), "{context}");
    assert!(
        context.contains("Finished: Research batteries"),
        "{context}"
    );
    assert!(context.contains("Finished: Research panels"), "{context}");
    // Each worker's log and run are kept.
    let runs = show(&home, &report)["runs"].clone();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["outcome"], "completed");
    assert_eq!(runs[0]["profile"], "writer");
    assert!(
        home.hermes_home()
            .join(format!("kanban/logs/{report}.log"))
            .exists()
    );
}

#[test]
fn a_blocked_worker_resumes_with_the_answer_a_person_gives() {
    let server = MockServer::start(Script::responding(|req| {
        let results = tool_results(req);
        match results.len() {
            0 => Turn::tool("kanban_show", json!({})),
            1 if results[0].contains("UNBLOCK: Use PDF") => {
                Turn::tool("kanban_complete", json!({"summary": "Exported as PDF."}))
            }
            1 => Turn::tool(
                "kanban_block",
                json!({"reason": "Which format should the export use?", "kind": "needs_input"}),
            ),
            _ => Turn::text("stopping here"),
        }
    }));
    let home = TestHome::new();
    home.write_mock_config(&server);
    profile(&home, &server, "exporter", "");
    let created = stdout(&kanban(
        &home,
        &[
            "create",
            "Export the data",
            "--assignee",
            "exporter",
            "--json",
        ],
    ));
    let id = serde_json::from_str::<Value>(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    assert_eq!(spawned_ids(&dispatch(&home)), vec![id.clone()]);
    wait("the worker blocks", || status(&home, &id) == "blocked");
    let blocked = show(&home, &id);
    assert_eq!(blocked["runs"][0]["outcome"], "blocked");
    assert_eq!(
        blocked["runs"][0]["summary"],
        "Which format should the export use?"
    );
    // Nothing to do while it waits for a person: a pass starts nothing.
    assert_eq!(spawned_ids(&dispatch(&home)), Vec::<String>::new());

    let o = kanban(&home, &["unblock", &id, "--reason", "Use PDF"]);
    assert_eq!(stdout(&o), format!("Unblocked {id}: Use PDF\n"));
    assert_eq!(status(&home, &id), "ready");
    assert_eq!(spawned_ids(&dispatch(&home)), vec![id.clone()]);
    wait("the resumed worker completes", || {
        status(&home, &id) == "done"
    });
    let done = show(&home, &id);
    assert_eq!(done["latest_summary"], "Exported as PDF.");
    let outcomes: Vec<&str> = done["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["blocked", "completed"]);
    // The second worker read its first attempt and the answer.
    let resumed = server
        .chat_requests()
        .into_iter()
        .filter(|r| tool_results(r).len() == 1)
        .find(|r| tool_results(r)[0].contains("UNBLOCK: Use PDF"))
        .unwrap();
    let context = &tool_results(&resumed)[0];
    assert!(
        context.contains("## Prior attempts on this task"),
        "{context}"
    );
    assert!(
        context.contains("Which format should the export use?"),
        "{context}"
    );
}

#[test]
fn a_killed_worker_is_detected_and_the_task_runs_again() {
    let hung = Arc::new(AtomicBool::new(false));
    let first = hung.clone();
    let server = MockServer::start(Script::responding(move |req| {
        // The first worker hangs in its first model call, until it is killed.
        if tool_results(req).is_empty() && !first.swap(true, Ordering::SeqCst) {
            return Turn::Fault(Fault::hang(120_000));
        }
        worker_turn(req)
    }));
    let home = TestHome::new();
    home.write_mock_config(&server);
    profile(&home, &server, "researcher", "");
    let created = stdout(&kanban(
        &home,
        &[
            "create",
            "Slow research",
            "--assignee",
            "researcher",
            "--json",
        ],
    ));
    let id = serde_json::from_str::<Value>(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    assert_eq!(spawned_ids(&dispatch(&home)), vec![id.clone()]);
    wait("the worker's model call", || hung.load(Ordering::SeqCst));
    let pid = show(&home, &id)["runs"][0]["worker_pid"].as_i64().unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .status()
        .unwrap();
    assert!(killed.success());
    wait("the worker gone", || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        stat.is_err() || stat.is_ok_and(|s| s.contains(") Z "))
    });

    // The next pass sees the worker gone, puts the task back and starts it again.
    let pass = dispatch(&home);
    assert_eq!(pass["crashed"], json!([id.clone()]), "{pass}");
    assert_eq!(spawned_ids(&pass), vec![id.clone()]);
    wait("the second worker completes", || {
        status(&home, &id) == "done"
    });
    let task = show(&home, &id);
    let outcomes: Vec<&str> = task["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["crashed", "completed"]);
    assert_eq!(task["runs"][0]["error"], format!("pid {pid} not alive"));
    let kinds: Vec<&str> = task["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "created",
            "claimed",
            "spawned",
            "crashed",
            "claimed",
            "spawned",
            "completed"
        ]
    );
}

/// A loopback HTTP server answering every request with `body` as CSV.
fn file_server(body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { break };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/exports/prices.csv")
}

#[test]
fn a_worker_attaches_a_file_from_a_url_only_where_the_url_policy_allows() {
    let url = file_server("kwh,eur\n1,0.31\n");
    let fetch = url.clone();
    let server = MockServer::start(Script::responding(move |req| {
        let results = tool_results(req);
        match results.len() {
            0 => Turn::tool("kanban_attach_url", json!({"url": fetch})),
            1 => Turn::tool(
                "kanban_complete",
                json!({"summary": results[0].chars().take(300).collect::<String>()}),
            ),
            _ => Turn::text("done"),
        }
    }));
    let home = TestHome::new();
    home.write_mock_config(&server);
    profile(
        &home,
        &server,
        "open",
        "security:\n  allow_private_urls: true\n",
    );
    profile(&home, &server, "strict", "");
    let create = |who: &str| {
        let o = kanban(
            &home,
            &[
                "create",
                &format!("Fetch prices as {who}"),
                "--assignee",
                who,
                "--json",
            ],
        );
        serde_json::from_str::<Value>(&stdout(&o)).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (open, strict) = (create("open"), create("strict"));
    assert_eq!(spawned_ids(&dispatch(&home)).len(), 2);
    wait("both workers done", || {
        status(&home, &open) == "done" && status(&home, &strict) == "done"
    });

    let attached: Value =
        serde_json::from_str(&stdout(&kanban(&home, &["attachments", &open, "--json"]))).unwrap();
    assert_eq!(attached[0]["filename"], "prices.csv");
    assert_eq!(attached[0]["content_type"], "text/csv");
    let stored = attached[0]["stored_path"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(stored).unwrap(),
        "kwh,eur\n1,0.31\n"
    );

    // The default policy refuses a private address: nothing attached, the model told why.
    let none: Value =
        serde_json::from_str(&stdout(&kanban(&home, &["attachments", &strict, "--json"]))).unwrap();
    assert_eq!(none, json!([]));
    let said = show(&home, &strict)["latest_summary"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        said.contains("error") && said.contains("127.0.0.1"),
        "{said}"
    );
}
