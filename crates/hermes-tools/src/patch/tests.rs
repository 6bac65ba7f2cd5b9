use super::*;
use std::path::Path;

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir.to_path_buf())
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap()
}

#[tokio::test]
async fn replace_returns_a_unified_diff() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
    let out = PatchTool
        .call(
            json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
            &ctx(tmp.path()),
        )
        .await
        .unwrap();
    assert_eq!(read(tmp.path(), "a.txt"), "one\n2\nthree\n");
    assert_eq!(out["replacements"], 1);
    assert!(out.get("match").is_none());
    assert_eq!(
        out["diff"],
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
    );
}

#[tokio::test]
async fn replace_tolerates_indentation_drift_and_keeps_crlf() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("m.py"),
        "class A:\r\n    def f(self):\r\n        return 1\r\n",
    )
    .unwrap();
    let out = PatchTool
        .call(
            json!({"path": "m.py", "old_string": "def f(self):\n  return 1", "new_string": "def f(self):\n  return 2"}),
            &ctx(tmp.path()),
        )
        .await
        .unwrap();
    assert_eq!(out["match"], "line_trimmed");
    assert_eq!(
        read(tmp.path(), "m.py"),
        "class A:\r\n    def f(self):\r\n        return 2\r\n"
    );
}

#[tokio::test]
async fn zero_or_several_matches_show_candidates_with_line_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("c.rs"),
        "let a = 1;\nlet b = 1;\nlet total = sum(a, b);\n",
    )
    .unwrap();
    let c = ctx(tmp.path());
    let e = PatchTool
        .call(
            json!({"path": "c.rs", "old_string": "let totl = add(a, b);", "new_string": "x"}),
            &c,
        )
        .await
        .unwrap_err();
    assert!(e.0.contains("could not find old_string"), "{e}");
    assert!(e.0.contains("    3| let total = sum(a, b);"), "{e}");
    let e = PatchTool
        .call(
            json!({"path": "c.rs", "old_string": " = 1;", "new_string": " = 2;"}),
            &c,
        )
        .await
        .unwrap_err();
    assert!(
        e.0.contains("matches 2 places (lines 1, 2)") && e.0.contains("replace_all"),
        "{e}"
    );
    let out = PatchTool
        .call(json!({"path": "c.rs", "old_string": " = 1;", "new_string": " = 2;", "replace_all": true}), &c)
        .await
        .unwrap();
    assert_eq!(out["replacements"], 2);
    assert_eq!(
        read(tmp.path(), "c.rs"),
        "let a = 2;\nlet b = 2;\nlet total = sum(a, b);\n"
    );
}

#[tokio::test]
async fn replace_refuses_bad_input_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("f"), "x\n").unwrap();
    std::fs::write(tmp.path().join("bin"), [0u8, 1, 2]).unwrap();
    let c = ctx(tmp.path());
    for (args, wanted) in [
        (
            json!({"path": "f", "old_string": "x", "new_string": "x"}),
            "identical",
        ),
        (
            json!({"path": "f", "old_string": "", "new_string": "y"}),
            "non-empty `old_string`",
        ),
        (json!({"path": "f", "old_string": "x"}), "new_string"),
        (
            json!({"path": "nope", "old_string": "x", "new_string": "y"}),
            "file not found",
        ),
        (
            json!({"path": "bin", "old_string": "x", "new_string": "y"}),
            "binary",
        ),
        (
            json!({"old_string": "x", "new_string": "y"}),
            "needs `path`",
        ),
        (json!({"mode": "patch"}), "needs `patch`"),
        (
            json!({"mode": "patch", "patch": "garbage"}),
            "invalid patch",
        ),
    ] {
        let e = PatchTool.call(args.clone(), &c).await.unwrap_err();
        assert!(e.0.contains(wanted), "{args}: {e}");
    }
}

#[tokio::test]
async fn v4a_patches_apply_to_several_files_or_none() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("keep.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(d.join("old.txt"), "bye\n").unwrap();
    std::fs::write(d.join("mv.txt"), "moving\n").unwrap();
    let c = ctx(d);
    // One bad hunk: nothing at all is written.
    let bad = "*** Begin Patch\n*** Update File: keep.txt\n-alpha\n+ALPHA\n*** Delete File: old.txt\n*** Update File: keep.txt\n-gamma\n+GAMMA\n*** End Patch";
    let e = PatchTool
        .call(json!({"mode": "patch", "patch": bad}), &c)
        .await
        .unwrap_err();
    assert!(
        e.0.contains("no file was changed") && e.0.contains("hunk 1"),
        "{e}"
    );
    assert_eq!(read(d, "keep.txt"), "alpha\nbeta\n");
    assert!(d.join("old.txt").exists());
    let good = "*** Begin Patch\n*** Add File: sub/new.txt\n+hello\n*** Update File: keep.txt\n@@ alpha\n-beta\n+BETA\n*** Delete File: old.txt\n*** Update File: mv.txt\n*** Move to: moved.txt\n-moving\n+moved\n*** End Patch";
    let out = PatchTool.call(json!({"patch": good}), &c).await.unwrap();
    assert_eq!(read(d, "sub/new.txt"), "hello\n");
    assert_eq!(read(d, "keep.txt"), "alpha\nBETA\n");
    assert!(!d.join("old.txt").exists() && !d.join("mv.txt").exists());
    assert_eq!(read(d, "moved.txt"), "moved\n");
    assert_eq!(out["files_created"], json!(["sub/new.txt", "moved.txt"]));
    assert_eq!(out["files_deleted"], json!(["old.txt", "mv.txt"]));
    assert_eq!(out["files_modified"], json!(["keep.txt"]));
    let diff = out["diff"].as_str().unwrap();
    assert!(
        diff.contains("--- /dev/null\n+++ b/sub/new.txt\n@@ -0,0 +1 @@\n+hello\n"),
        "{diff}"
    );
    assert!(diff.contains("--- a/old.txt\n+++ /dev/null\n"), "{diff}");
    assert!(diff.contains("-beta\n+BETA\n"), "{diff}");
}

#[tokio::test]
async fn guarded_paths_need_approval_and_keys_are_never_read() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/authorized_keys"), "key\n").unwrap();
    std::fs::write(home.join(".bashrc"), "alias ll='ls -l'\n").unwrap();
    let mut c = ctx(tmp.path());
    c.protected = std::sync::Arc::new(crate::protect::ProtectedPaths::new(
        Some(home.clone()),
        None,
    ));
    // Nobody to ask, the default policy: refused before anything is read or written.
    let rc = home.join(".bashrc");
    let e = PatchTool
        .call(
            json!({"path": rc.to_str().unwrap(), "old_string": "ll", "new_string": "rm"}),
            &c,
        )
        .await
        .unwrap_err();
    assert!(e.0.contains("shell start-up file"), "{e}");
    assert!(e.0.contains("approvals.non_interactive"), "{e}");
    let patch = format!("*** Add File: {}\n+x\n", home.join(".ssh/new").display());
    let e = PatchTool
        .call(json!({"patch": patch.clone()}), &c)
        .await
        .unwrap_err();
    assert!(e.0.contains("~/.ssh"), "{e}");
    assert_eq!(std::fs::read_to_string(&rc).unwrap(), "alias ll='ls -l'\n");
    assert!(!home.join(".ssh/new").exists());
    // Approved (here: unattended runs set to approve): the edit goes through, but a key
    // file is still never read into a diff.
    c.approvals = std::sync::Arc::new(crate::ApprovalGate::new(
        crate::ApprovalSettings {
            non_interactive: crate::approval::NonInteractivePolicy::Approve,
            ..Default::default()
        },
        Default::default(),
        None,
    ));
    PatchTool
        .call(
            json!({"path": rc.to_str().unwrap(), "old_string": "ll", "new_string": "la"}),
            &c,
        )
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&rc).unwrap(), "alias la='ls -l'\n");
    PatchTool.call(json!({"patch": patch}), &c).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(home.join(".ssh/new")).unwrap(),
        "x\n"
    );
    let target = home.join(".ssh/authorized_keys");
    let e = PatchTool
        .call(
            json!({"path": target.to_str().unwrap(), "old_string": "key", "new_string": "evil"}),
            &c,
        )
        .await
        .unwrap_err();
    assert!(e.0.contains("protected credential path"), "{e}");
}

#[test]
fn writes_are_planned_on_every_touched_path() {
    let c = ctx(Path::new("/w"));
    let a = PatchTool.access(
        &json!({"patch": "*** Update File: a\n*** Move to: b\n-x\n+y"}),
        &c,
    );
    assert_eq!(
        a,
        Access::Write(vec![PathBuf::from("/w/a"), PathBuf::from("/w/b")])
    );
    assert_eq!(PatchTool.access(&json!({}), &c), Access::Exclusive);
}
