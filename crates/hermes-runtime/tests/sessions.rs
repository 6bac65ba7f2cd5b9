//! Sessions of one runtime against the scripted mock model: two cron jobs with different
//! working directories run at once, each job's `terminal` sees its own directory and the
//! process's current directory never changes; switching the model keeps the tools and the
//! background processes, and the next turn goes to the new model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hermes_config::HermesHome;
use hermes_cron::NewJob;
use hermes_llm::Overrides;
use hermes_runtime::cron::{self, LocalOnly};
use hermes_runtime::{Platform, Runtime, SessionSpec, Unattended};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn runtime_for(home: &TestHome) -> Runtime {
    Runtime::open(HermesHome::at(home.hermes_home())).unwrap()
}

/// The job's prompt names the job; the model runs `pwd`, then reports what it printed.
fn pwd_model(body: &Value) -> Turn {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        let output = last["content"].as_str().unwrap_or_default();
        return Turn::text(format!("pwd said {output}"));
    }
    Turn::tool("terminal", json!({"command": "pwd"}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_cron_jobs_run_at_once_each_in_its_own_workdir() {
    let server = MockServer::start(Script::responding(pwd_model));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let dir_a = home.root().join("job-a");
    let dir_b = home.root().join("job-b");
    std::fs::create_dir_all(&dir_a).unwrap();
    std::fs::create_dir_all(&dir_b).unwrap();
    let runtime = runtime_for(&home);
    let (store, _) = cron::open_store(runtime.home(), runtime.config(), runtime.env());
    let mut ids = Vec::new();
    for (name, dir) in [("a", &dir_a), ("b", &dir_b)] {
        let job = store
            .create(NewJob {
                prompt: format!("where is job {name}?"),
                schedule: "every 1h".into(),
                name: Some(name.into()),
                ..NewJob::default()
            })
            .unwrap();
        let id = job.id().to_string();
        store
            .update(|jobs| {
                for j in jobs.iter_mut().filter(|j| j.id() == id) {
                    j.set("workdir", Value::String(dir.display().to_string()));
                }
                Ok(())
            })
            .unwrap();
        ids.push(job.id().to_string());
    }

    let before = std::env::current_dir().unwrap();
    let watching = Arc::new(AtomicBool::new(true));
    let moved = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (watching, moved, before) = (watching.clone(), moved.clone(), before.clone());
        std::thread::spawn(move || {
            while watching.load(Ordering::Relaxed) {
                if std::env::current_dir().unwrap() != before {
                    moved.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let base = SessionSpec::new(Platform::Cron, before.clone());
    let cancel = CancellationToken::new();
    let job_a = store.claim(&ids[0]).unwrap();
    let job_b = store.claim(&ids[1]).unwrap();
    let (a, b) = tokio::join!(
        cron::run_job(&runtime, &store, job_a, &base, &LocalOnly, &cancel),
        cron::run_job(&runtime, &store, job_b, &base, &LocalOnly, &cancel),
    );
    watching.store(false, Ordering::Relaxed);
    watcher.join().unwrap();

    assert!(a.outcome.success, "{:?}", a.outcome);
    assert!(b.outcome.success, "{:?}", b.outcome);
    let a_dir = dir_a.canonicalize().unwrap().display().to_string();
    let b_dir = dir_b.canonicalize().unwrap().display().to_string();
    assert!(
        a.answer.contains(&a_dir) && !a.answer.contains(&b_dir),
        "{}",
        a.answer
    );
    assert!(
        b.answer.contains(&b_dir) && !b.answer.contains(&a_dir),
        "{}",
        b.answer
    );
    assert!(
        !moved.load(Ordering::Relaxed),
        "the process's cwd changed during the jobs"
    );
    assert_eq!(std::env::current_dir().unwrap(), before);
}

#[tokio::test]
async fn switching_the_model_keeps_background_processes_and_uses_the_new_model() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": "sleep 30", "background": true}),
        ),
        Turn::text("started it"),
        Turn::text("answered by the other model"),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let runtime = runtime_for(&home);
    let spec = SessionSpec::new(Platform::Cli, home.workdir());
    let mut session = runtime.session(&spec, Arc::new(Unattended)).unwrap();
    let first = session
        .turn(
            "start a long job",
            &hermes_core::NoEvents,
            CancellationToken::new(),
        )
        .await;
    assert!(first.is_completed(), "{:?}", first.end);
    let running = |s: &hermes_runtime::Session| {
        s.background()
            .jobs()
            .iter()
            .filter(|j| !j.is_finished())
            .count()
    };
    assert_eq!(running(&session), 1);

    session
        .switch_model(Overrides {
            model: Some("other-model".into()),
            ..Overrides::default()
        })
        .unwrap();
    assert_eq!(session.agent().model(), "other-model");
    assert_eq!(
        running(&session),
        1,
        "the background process survived the switch"
    );

    let second = session
        .turn("and now?", &hermes_core::NoEvents, CancellationToken::new())
        .await;
    assert_eq!(second.final_text, "answered by the other model");
    let last = server.last_chat_request().unwrap();
    assert_eq!(last["model"], "other-model");
    // The conversation went on: the first turn is in the request.
    assert!(last.to_string().contains("start a long job"));
    session.close().await;
}
