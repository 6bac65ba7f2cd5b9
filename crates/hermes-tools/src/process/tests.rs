use super::*;
use crate::process::tool::ProcessTool;
use crate::{Tool, ToolContext};
use serde_json::json;

fn ctx(dir: &std::path::Path) -> ToolContext {
    ToolContext::new(dir.to_path_buf())
}

async fn process(c: &ToolContext, args: serde_json::Value) -> serde_json::Value {
    ProcessTool.call(args, c).await.unwrap()
}

#[tokio::test]
async fn background_jobs_are_polled_logged_waited_and_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let c = ctx(tmp.path());
    let job = c
        .processes
        .spawn(
            c.environment.as_ref(),
            "echo first; read line; echo got $line; exit 3",
            &tmp.path().display().to_string(),
            &c.child_env,
            None,
        )
        .await
        .unwrap();
    let id = job.id.clone();
    assert_eq!(id, "proc_1");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let out = process(&c, json!({"action": "poll", "id": id})).await;
    assert_eq!(out["status"], "running");
    assert_eq!(out["new_output"], "first\n");
    let out = process(&c, json!({"action": "poll", "id": id})).await;
    assert_eq!(out["new_output"], "", "only output since the last poll");
    process(&c, json!({"action": "submit", "id": id, "data": "hello"})).await;
    let out = process(&c, json!({"action": "wait", "id": id, "timeout": 10})).await;
    assert_eq!(out["status"], "exited");
    assert_eq!(out["exit_code"], 3);
    assert_eq!(out["output"], "first\ngot hello\n");
    let out = process(&c, json!({"action": "log", "id": id, "offset": 2})).await;
    assert_eq!(out["output"], "got hello");
    assert_eq!(out["lines"], "2-2");
    let out = process(&c, json!({"action": "list"})).await;
    assert_eq!(out["processes"][0]["id"], "proc_1");
    assert_eq!(out["processes"][0]["status"], "exited");
}

#[tokio::test]
async fn kill_stops_the_whole_group_and_errors_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let c = ctx(tmp.path());
    let marker = tmp.path().join("survived");
    let cmd = format!("(sleep 2; touch {}) & sleep 60", marker.display());
    let job = c
        .processes
        .spawn(
            c.environment.as_ref(),
            &cmd,
            &tmp.path().display().to_string(),
            &c.child_env,
            None,
        )
        .await
        .unwrap();
    let out = process(&c, json!({"action": "kill", "id": job.id})).await;
    assert_eq!(out["status"], "killed");
    let out = process(&c, json!({"action": "kill", "id": job.id})).await;
    assert_eq!(out["note"], "the process had already exited");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!marker.exists(), "a child of the job outlived kill");
    let e = ProcessTool
        .call(json!({"action": "poll", "id": "proc_9"}), &c)
        .await
        .unwrap_err();
    assert!(
        e.0.contains("no background process `proc_9` (known: proc_1)"),
        "{e}"
    );
    let e = ProcessTool
        .call(json!({"action": "poll"}), &c)
        .await
        .unwrap_err();
    assert!(e.0.contains("`id` is required"), "{e}");
    let e = ProcessTool
        .call(json!({"action": "dance", "id": "proc_1"}), &c)
        .await
        .unwrap_err();
    assert!(e.0.contains("unknown action"), "{e}");
}

#[tokio::test]
async fn ending_the_session_kills_every_job() {
    let tmp = tempfile::tempdir().unwrap();
    let c = ctx(tmp.path());
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    c.processes
        .spawn(
            c.environment.as_ref(),
            &format!("sleep 2; touch {}", a.display()),
            &tmp.path().display().to_string(),
            &c.child_env,
            None,
        )
        .await
        .unwrap();
    let registry = ProcessRegistry::new();
    registry
        .spawn(
            c.environment.as_ref(),
            &format!("sleep 2; touch {}", b.display()),
            &tmp.path().display().to_string(),
            &c.child_env,
            None,
        )
        .await
        .unwrap();
    assert_eq!(c.processes.shutdown().await, 1);
    drop(registry);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!a.exists(), "shutdown left a job running");
    assert!(!b.exists(), "drop left a job running");
}

#[tokio::test]
async fn output_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let c = ctx(tmp.path());
    let job = c
        .processes
        .spawn(
            c.environment.as_ref(),
            "head -c 5000000 /dev/zero | tr '\\0' 'x'; echo; echo END",
            &tmp.path().display().to_string(),
            &c.child_env,
            None,
        )
        .await
        .unwrap();
    job.wait_exit().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let out = process(&c, json!({"action": "poll", "id": job.id})).await;
    assert!(out["new_output"].as_str().unwrap().ends_with("END\n"));
    assert!(out["new_output"].as_str().unwrap().len() <= 8_000);
    assert!(out["dropped_bytes"].as_u64().unwrap() > 4_000_000);
}

#[tokio::test]
async fn stdin_is_checked_as_the_line_being_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = ctx(tmp.path());
    // Unattended runs allowed to approve: dangerous text passes, hardline never.
    c.approvals = std::sync::Arc::new(crate::ApprovalGate::new(
        crate::ApprovalSettings {
            non_interactive: crate::approval::NonInteractivePolicy::Approve,
            ..Default::default()
        },
        Default::default(),
        None,
    ));
    let job = c
        .processes
        .spawn(
            c.environment.as_ref(),
            "cat > typed.txt",
            &tmp.path().display().to_string(),
            &c.child_env,
            None,
        )
        .await
        .unwrap();
    let id = job.id.clone();
    // Harmless alone, refused once the rest of the line arrives.
    process(&c, json!({"action": "write", "id": id, "data": "rm -rf "})).await;
    let e = ProcessTool
        .call(json!({"action": "submit", "id": id, "data": "/"}), &c)
        .await
        .unwrap_err();
    assert!(e.0.contains("BLOCKED (hardline)"), "{e}");
    // Split differently, the same.
    let e = ProcessTool
        .call(
            json!({"action": "write", "id": id, "data": "/ --no-preserve-root"}),
            &c,
        )
        .await
        .unwrap_err();
    assert!(e.0.contains("BLOCKED (hardline)"), "{e}");
    // A finished line starts a new one.
    process(&c, json!({"action": "submit", "id": id, "data": "tmp/x"})).await;
    process(
        &c,
        json!({"action": "submit", "id": id, "data": "echo fine"}),
    )
    .await;
    process(&c, json!({"action": "close", "id": id})).await;
    process(&c, json!({"action": "wait", "id": id, "timeout": 10})).await;
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("typed.txt")).unwrap(),
        "rm -rf tmp/x\necho fine\n"
    );
}
