//! Patching a 10,000-line file: an exact replacement, an edit whose indentation drifted (the
//! line-based strategies), a block with a changed middle line (block anchor), text that is not
//! there (every strategy runs, then the closest-lines hint), and the whole `patch` tool with
//! file I/O and the diff.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hermes_tools::patch::{PatchTool, fuzzy};
use hermes_tools::{Tool, ToolContext};
use serde_json::json;

fn source() -> String {
    let mut text = String::new();
    for i in 0..2_000 {
        text.push_str(&format!(
            "def handler_{i}(request):\n    value = compute({i}, request)\n    if value > {i}:\n        return respond(value)\n    return None\n"
        ));
    }
    text
}

fn benches(c: &mut Criterion) {
    let text = source();
    assert_eq!(text.lines().count(), 10_000);
    let exact = "    value = compute(1500, request)";
    let drifted =
        "def handler_1500(request):\n  value = compute(1500, request)\n  if value > 1500:";
    let anchored = "def handler_1500(request):\n    value = compute(1500, req)\n    if value > 1500:\n        return respond(value)";
    let missing = "def handler_99999(request):\n    value = frobnicate(99999)\n    return nothing";
    let mut group = c.benchmark_group("fuzzy_patch_10k_lines");
    group.sample_size(10);
    for (name, pattern, strategy) in [
        ("exact", exact, Some("exact")),
        ("indentation_drift", drifted, Some("line_trimmed")),
        ("block_anchor", anchored, Some("block_anchor")),
        ("not_found_all_strategies", missing, None),
    ] {
        assert_eq!(
            fuzzy::locate(&text, pattern).map(|l| l.strategy),
            strategy,
            "{name}"
        );
        group.bench_function(name, |b| {
            b.iter(|| {
                let found = fuzzy::locate(black_box(&text), pattern);
                if let Some(found) = &found {
                    black_box(fuzzy::replace(&text, found, pattern, "replaced").unwrap());
                }
                found
            })
        });
    }
    let tmp = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new(tmp.path().to_path_buf());
    group.bench_function("patch_tool_drifted_edit_with_io_and_diff", |b| {
        b.iter(|| {
            std::fs::write(tmp.path().join("big.py"), &text).unwrap();
            let args = json!({"path": "big.py", "old_string": drifted, "new_string": "def handler_1500(request):\n  value = 0"});
            black_box(rt.block_on(PatchTool.call(args, &ctx)).unwrap())
        })
    });
    group.finish();
}

criterion_group!(fuzzy_benches, benches);
criterion_main!(fuzzy_benches);
