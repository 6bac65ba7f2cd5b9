//! `read_file` keeps memory bounded whatever the file: a 1 GiB file made of one line, read
//! with `limit: 1`, is streamed with a cap per line and returns a capped line, while the
//! process's peak resident memory grows by far less than the file. Alone in its test binary so
//! the peak (`VmHWM`) is this test's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use hermes_tools::files::ReadFileTool;
use hermes_tools::{Tool, ToolContext};
use serde_json::json;

/// Peak resident set of this process, in KiB.
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[tokio::test]
async fn a_one_gib_single_line_file_is_read_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("one-line.txt");
    let chunk = vec![b'a'; 1 << 20];
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for _ in 0..1024 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\nsecond line\n").unwrap();
    }
    drop(chunk);
    let before = peak_kib();
    let ctx = ToolContext::new(tmp.path().to_path_buf());
    let out = ReadFileTool
        .call(json!({"path": "one-line.txt", "limit": 1}), &ctx)
        .await
        .unwrap();
    let content = out["content"].as_str().unwrap();
    assert!(content.starts_with("1|aaaa"), "{}", &content[..20]);
    assert!(
        content.ends_with("… [line truncated]"),
        "{}",
        &content[content.len() - 40..]
    );
    assert!(content.len() < 10_000);
    assert_eq!(out["next_offset"], 2);
    assert_eq!(out["total_lines"], 2);
    if let (Some(before), Some(after)) = (before, peak_kib()) {
        let grown_mib = after.saturating_sub(before) / 1024;
        assert!(grown_mib < 64, "peak memory grew by {grown_mib} MiB");
    }
}
