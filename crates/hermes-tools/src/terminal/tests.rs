use super::*;
use std::time::Instant;

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir.to_path_buf())
}

#[tokio::test]
async fn runs_a_command_and_reports_the_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let out = TerminalTool
        .call(
            json!({"command": "echo out; echo err >&2; exit 3"}),
            &ctx(tmp.path()),
        )
        .await
        .unwrap();
    assert_eq!(out["output"], "out\nerr");
    assert_eq!(out["exit_code"], 3);
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("survived");
    let cmd = format!("(sleep 3; touch {}) & sleep 30", marker.display());
    let started = Instant::now();
    let out = TerminalTool
        .call(json!({"command": cmd, "timeout": 1}), &ctx(tmp.path()))
        .await
        .unwrap();
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("timed out after 1s")
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(
        !marker.exists(),
        "the background child outlived the timeout"
    );
}

#[tokio::test]
async fn cancellation_interrupts_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let c = ctx(tmp.path());
    let cancel = c.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let out = TerminalTool
        .call(json!({"command": "sleep 30"}), &c)
        .await
        .unwrap();
    assert!(out["error"].as_str().unwrap().contains("interrupted"));
}

#[tokio::test]
async fn huge_and_invalid_output_is_bounded_and_lossless_in_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let out = TerminalTool
        .call(
            json!({"command": "head -c 10000000 /dev/zero | tr '\\0' 'a'; printf '\\xff\\xfe'; echo END"}),
            &ctx(tmp.path()),
        )
        .await
        .unwrap();
    let text = out["output"].as_str().unwrap();
    assert!(text.len() < MAX_OUTPUT_CHARS + 500, "{}", text.len());
    assert!(
        text.ends_with("\u{fffd}\u{fffd}END"),
        "{}",
        &text[text.len() - 20..]
    );
    assert!(text.contains("omitted"));
}

#[tokio::test]
async fn background_children_do_not_block_the_result() {
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = TerminalTool
        .call(
            json!({"command": "sleep 20 & echo started"}),
            &ctx(tmp.path()),
        )
        .await
        .unwrap();
    assert_eq!(out["output"], "started");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn secrets_do_not_reach_commands_and_workdir_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = ctx(tmp.path());
    c.child_env = std::sync::Arc::new(crate::secrets::ChildEnv::filtered(
        [
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ("X_API_KEY".to_string(), "sk".to_string()),
        ],
        &[],
    ));
    let out = TerminalTool
        .call(json!({"command": "echo \"[$X_API_KEY]\""}), &c)
        .await
        .unwrap();
    assert_eq!(out["output"], "[]");
    let e = TerminalTool
        .call(json!({"command": "ls", "workdir": "nope"}), &c)
        .await
        .unwrap_err();
    assert!(e.0.contains("does not exist"));
}

#[test]
fn exit_notes_explain_benign_codes() {
    assert_eq!(
        exit_note("cat x | grep foo", 1),
        Some("no matches found (not an error)")
    );
    assert_eq!(
        exit_note("LANG=C diff a b", 1),
        Some("the inputs differ (not an error)")
    );
    assert_eq!(exit_note("grep foo", 2), None);
    assert_eq!(exit_note("false", 1), None);
}
