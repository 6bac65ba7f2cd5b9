//! The kanban board in PostgreSQL (`store.backend: postgres`), through the binary against a
//! real throwaway server: two dispatcher daemons in two homes (two "machines": their own
//! tick locks, workspaces and worker processes) share one board of 200 tasks, and no task is
//! ever run twice: one run per task in the runs table, and one line per task in the file the
//! workers append to. Skips with the reason when PostgreSQL is not installed.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use hermes_kanban::{Board, BoardPaths, ListFilter, NewTask, ProcessEnv};
use hermes_testkit::postgres::Postgres;
use hermes_testkit::{MockServer, Script, TestHome, Turn, mock_config_yaml};
use serde_json::{Value, json};

/// Tasks on the board (`HERMES_TEST_PG_TASKS` makes a quicker local run).
fn tasks() -> usize {
    std::env::var("HERMES_TEST_PG_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn server_or_skip() -> Option<Postgres> {
    match Postgres::start() {
        Ok(pg) => Some(pg),
        Err(reason) => {
            eprintln!("skipping: {reason}");
            None
        }
    }
}

/// A home on the shared board: postgres in config.yaml, the URL in .env, a `worker` profile.
fn team_home(server: &MockServer, url: &str, extra: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}store:\n  backend: postgres\n{extra}",
        mock_config_yaml(server)
    ));
    std::fs::write(
        home.hermes_home().join(".env"),
        format!("HERMES_STORE_URL={url}\n"),
    )
    .unwrap();
    let profile = home.hermes_home().join("profiles/worker");
    std::fs::create_dir_all(&profile).unwrap();
    std::fs::write(profile.join("config.yaml"), mock_config_yaml(server)).unwrap();
    home
}

fn user_text(req: &Value) -> String {
    req["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn tool_results(req: &Value) -> usize {
    req["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").count())
        .unwrap_or(0)
}

fn daemon(home: &TestHome) -> Child {
    home.command(bin())
        .args(["kanban", "daemon", "--interval", "0.3"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stop(child: Child) -> String {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    stderr(&out)
}

#[test]
fn two_dispatchers_on_one_board_never_run_a_task_twice() {
    let Some(pg) = server_or_skip() else { return };
    let tasks = tasks();
    let url = pg.create_database("team").unwrap();
    let side = tempfile::tempdir().unwrap();
    let side_log = side.path().join("side-effects.log");
    let log_for_workers = side_log.clone();
    // Every worker appends its task id to one file, then completes its task.
    let server = MockServer::start(Script::responding(move |req| {
        let text = user_text(req);
        let Some(task) = text.strip_prefix("work kanban task ") else {
            return Turn::text("?");
        };
        match tool_results(req) {
            0 => Turn::tool(
                "terminal",
                json!({"command": format!("echo {task} >> {}", log_for_workers.display())}),
            ),
            1 => Turn::tool("kanban_complete", json!({"summary": format!("did {task}")})),
            _ => Turn::text("done"),
        }
    }));
    let caps = "kanban:\n  max_in_progress: 6\n";
    let a = team_home(&server, &url, caps);
    let b = team_home(&server, &url, caps);

    // The board is made through each home's binary, the bulk of the tasks added directly.
    for home in [&a, &b] {
        let o = run(
            home,
            &[
                "kanban",
                "create",
                "first",
                "--assignee",
                "worker",
                "--json",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let board =
        Board::open(BoardPaths::resolve(&a.hermes_home(), None, &ProcessEnv).unwrap()).unwrap();
    for i in 2..tasks {
        let mut t = NewTask::titled(format!("task {i}"));
        t.assignee = Some("worker".into());
        board.create(&t).unwrap();
    }
    let ids: Vec<String> = board
        .list(&ListFilter::default())
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids.len(), tasks);
    drop(board);
    assert_eq!(
        pg.psql(
            "team",
            "SELECT COUNT(*) FROM kanban.tasks WHERE status = 'ready'"
        )
        .unwrap(),
        tasks.to_string()
    );

    let started = Instant::now();
    let (da, db) = (daemon(&a), daemon(&b));
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let done: usize = pg
            .psql(
                "team",
                "SELECT COUNT(*) FROM kanban.tasks WHERE status = 'done'",
            )
            .unwrap()
            .parse()
            .unwrap();
        if done == tasks {
            break;
        }
        let failed = pg
            .psql(
                "team",
                "SELECT id, last_failure_error FROM kanban.tasks WHERE consecutive_failures > 0 LIMIT 1",
            )
            .unwrap();
        if let Some(id) = failed.split('|').next().filter(|i| !i.is_empty()) {
            let log = [&a, &b]
                .iter()
                .filter_map(|h| {
                    std::fs::read_to_string(h.hermes_home().join(format!("kanban/logs/{id}.log")))
                        .ok()
                })
                .collect::<Vec<_>>()
                .join("\n");
            panic!("a worker failed: {failed}\nworker log:\n{log}");
        }
        assert!(
            Instant::now() < deadline,
            "only {done} of {tasks} tasks done; board: {}",
            pg.psql(
                "team",
                "SELECT status, COUNT(*) FROM kanban.tasks GROUP BY status"
            )
            .unwrap()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let elapsed = started.elapsed();
    let (ea, eb) = (stop(da), stop(db));

    // One run per task, completed, and both dispatchers took a share.
    let runs = pg
        .psql(
            "team",
            "SELECT task_id, COUNT(*), MIN(outcome), MAX(outcome) FROM kanban.task_runs GROUP BY task_id",
        )
        .unwrap();
    let runs: Vec<&str> = runs.lines().collect();
    assert_eq!(runs.len(), tasks, "{ea}\n{eb}");
    for r in &runs {
        assert!(
            r.ends_with("|1|completed|completed"),
            "a task ran twice or failed: {r}"
        );
    }
    let claimers = pg
        .psql(
            "team",
            "SELECT COUNT(DISTINCT payload::json->>'lock') FROM kanban.task_events WHERE kind = 'claimed'",
        )
        .unwrap();
    assert_eq!(claimers, "2", "both dispatchers should have claimed tasks");
    // The side effect: every task exactly once.
    let lines = std::fs::read_to_string(&side_log).unwrap();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for l in lines.lines() {
        *seen.entry(l.trim()).or_default() += 1;
    }
    assert_eq!(seen.len(), tasks);
    for id in &ids {
        assert_eq!(
            seen.get(id.as_str()),
            Some(&1),
            "task {id} side effect count"
        );
    }
    eprintln!(
        "{tasks} tasks on two dispatchers in {:.1}s",
        elapsed.as_secs_f64()
    );
}
