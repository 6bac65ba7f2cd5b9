use super::*;
use std::path::Path;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn tree() -> (tempfile::TempDir, ToolContext) {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    write(
        r,
        "src/main.rs",
        "fn main() {\n    let needle = 1;\n    println!(\"{needle}\");\n}\n",
    );
    write(r, "src/lib.rs", "// needle in lib\npub fn f() {}\n");
    write(r, "docs/guide.md", "a needle here\n");
    write(r, "target/debug/out.rs", "needle in build output\n");
    write(r, ".hidden/secret.rs", "needle hidden\n");
    write(r, ".gitignore", "target/\n");
    std::fs::write(r.join("bin.dat"), b"needle\x00\x01binary").unwrap();
    let ctx = ToolContext::new(r.to_path_buf());
    (tmp, ctx)
}

async fn run(ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
    SearchFilesTool.call(args, ctx).await
}

#[tokio::test]
async fn content_search_honours_gitignore_hidden_and_binaries() {
    let (_t, ctx) = tree();
    let out = run(&ctx, json!({"pattern": "needle"})).await.unwrap();
    let text = out["matches"].as_str().unwrap();
    assert_eq!(
        text,
        "docs/guide.md\n  1: a needle here\nsrc/lib.rs\n  1: // needle in lib\nsrc/main.rs\n  2:     let needle = 1;\n  3:     println!(\"{needle}\");"
    );
    assert_eq!(out["match_count"], 4);
    assert!(out.get("truncated").is_none());
}

#[tokio::test]
async fn paging_file_glob_context_and_modes() {
    let (_t, ctx) = tree();
    let out = run(&ctx, json!({"pattern": "needle", "limit": 2}))
        .await
        .unwrap();
    assert_eq!(out["match_count"], 2);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["next_offset"], 2);
    let out = run(&ctx, json!({"pattern": "needle", "limit": 2, "offset": 2}))
        .await
        .unwrap();
    assert_eq!(
        out["matches"],
        "src/main.rs\n  2:     let needle = 1;\n  3:     println!(\"{needle}\");"
    );
    assert!(out.get("truncated").is_none());
    let out = run(
        &ctx,
        json!({"pattern": "let", "file_glob": "*.rs", "context": 1}),
    )
    .await
    .unwrap();
    assert_eq!(
        out["matches"],
        "src/main.rs\n  1- fn main() {\n  2:     let needle = 1;\n  3-     println!(\"{needle}\");"
    );
    let out = run(
        &ctx,
        json!({"pattern": "needle", "output_mode": "files_only"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out["files"],
        json!(["docs/guide.md", "src/lib.rs", "src/main.rs"])
    );
    let out = run(
        &ctx,
        json!({"pattern": "needle", "output_mode": "count", "path": "src"}),
    )
    .await
    .unwrap();
    assert_eq!(out["counts"], json!({"src/lib.rs": 1, "src/main.rs": 2}));
    let out = run(&ctx, json!({"pattern": "nothing-like-this"}))
        .await
        .unwrap();
    assert_eq!(out["note"], "no matches");
}

#[tokio::test]
async fn file_search_by_glob_and_substring() {
    let (_t, ctx) = tree();
    let out = run(&ctx, json!({"pattern": "*.rs", "target": "files"}))
        .await
        .unwrap();
    let mut files: Vec<String> = serde_json::from_value(out["files"].clone()).unwrap();
    files.sort();
    assert_eq!(files, ["src/lib.rs", "src/main.rs"]);
    let out = run(&ctx, json!({"pattern": "GUIDE", "target": "files"}))
        .await
        .unwrap();
    assert_eq!(out["files"], json!(["docs/guide.md"]));
    let out = run(
        &ctx,
        json!({"pattern": "src/*.rs", "target": "files", "limit": 1}),
    )
    .await
    .unwrap();
    assert_eq!(out["total_count"], 2);
    assert_eq!(out["next_offset"], 1);
}

#[tokio::test]
async fn errors_are_clear_and_repeats_are_refused() {
    let (_t, ctx) = tree();
    let e = run(&ctx, json!({"pattern": "fn ("})).await.unwrap_err();
    assert!(e.0.contains("invalid regex"), "{e}");
    let e = run(&ctx, json!({"pattern": "x", "path": "sr"}))
        .await
        .unwrap_err();
    assert!(
        e.0.contains("path not found") && e.0.contains("did you mean: src"),
        "{e}"
    );
    let e = run(&ctx, json!({"pattern": "x", "output_mode": "lines"}))
        .await
        .unwrap_err();
    assert!(e.0.contains("output_mode"), "{e}");
    for i in 1..=3 {
        let out = run(&ctx, json!({"pattern": "needle"})).await.unwrap();
        assert_eq!(out.get("warning").is_some(), i == 3);
    }
    let e = run(&ctx, json!({"pattern": "needle"})).await.unwrap_err();
    assert!(e.0.contains("4 times in a row"), "{e}");
    // A different search resets the count.
    assert!(run(&ctx, json!({"pattern": "main"})).await.is_ok());
    assert!(run(&ctx, json!({"pattern": "needle"})).await.is_ok());
}

#[tokio::test]
async fn protected_paths_are_not_searched() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    write(&home, ".ssh/id_rsa", "PRIVATE KEY\n");
    write(&home, "proj/.env", "KEY=PRIVATE KEY\n");
    write(&home, "proj/a.txt", "PRIVATE KEY mention\n");
    let mut ctx = ToolContext::new(home.join("proj"));
    ctx.protected = std::sync::Arc::new(crate::protect::ProtectedPaths::new(
        Some(home.clone()),
        None,
    ));
    let e = run(
        &ctx,
        json!({"pattern": "KEY", "path": home.join(".ssh").to_str().unwrap()}),
    )
    .await
    .unwrap_err();
    assert!(e.0.contains("protected credential path"), "{e}");
    let e = run(&ctx, json!({"pattern": "KEY", "path": ".env"}))
        .await
        .unwrap_err();
    assert!(e.0.contains("protected credential path"), "{e}");
    let out = run(&ctx, json!({"pattern": "KEY", "output_mode": "files_only"}))
        .await
        .unwrap();
    assert_eq!(out["files"], json!(["a.txt"]));
}

#[test]
fn searches_are_reads_so_they_run_beside_other_reads() {
    let ctx = ToolContext::new(std::path::PathBuf::from("/w"));
    assert_eq!(
        SearchFilesTool.access(&json!({"pattern": "x", "path": "src"}), &ctx),
        Access::Read(vec![std::path::PathBuf::from("/w/src")])
    );
    assert_eq!(
        SearchFilesTool.access(&json!({"pattern": "x"}), &ctx),
        Access::Read(vec![std::path::PathBuf::from("/w")])
    );
}
