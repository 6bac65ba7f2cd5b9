//! `search_files` over a 50,000-file tree (500 directories of 100 files, a `.gitignore`d
//! build directory beside them): a rare regex that forces a full scan, a common one that stops
//! at the first page, a file-name glob (walk, stat and sort), and a 5,000-match count.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use hermes_tools::search::SearchFilesTool;
use hermes_tools::{Tool, ToolContext};
use serde_json::{Value, json};

const DIRS: usize = 500;
const FILES_PER_DIR: usize = 100;

fn build_tree(root: &Path) {
    for d in 0..DIRS {
        let dir = root.join(format!("pkg{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            let n = d * FILES_PER_DIR + f;
            let marker = if n.is_multiple_of(10_000) {
                format!("needle_{n}")
            } else {
                "hay".into()
            };
            let text = format!(
                "// file {n}\nfn f{n}() -> u32 {{\n    let value = {n};\n    // {marker}\n    value + 1\n}}\n\nstruct S{n} {{ a: u32, b: String }}\n"
            );
            let ext = if f.is_multiple_of(2) { "rs" } else { "txt" };
            std::fs::write(dir.join(format!("file{f:03}.{ext}")), text).unwrap();
        }
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("target/ignored.rs"), "needle_ignored\n").unwrap();
}

fn search(rt: &tokio::runtime::Runtime, root: &Path, args: Value) -> Value {
    // A fresh context each time: the repeated-search guard would refuse the 4th run.
    let ctx = ToolContext::new(root.to_path_buf());
    rt.block_on(SearchFilesTool.call(args, &ctx)).unwrap()
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    build_tree(tmp.path());
    let root = tmp.path();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let found = search(&rt, root, json!({"pattern": "needle_[0-9]+"}));
    assert_eq!(found["match_count"], 5, "{found}");
    let mut group = c.benchmark_group("search_files_50k");
    group.sample_size(10);
    group.bench_function("content_rare_regex_full_scan", |b| {
        b.iter(|| black_box(search(&rt, root, json!({"pattern": "needle_[0-9]+"}))))
    });
    group.bench_function("content_common_first_page", |b| {
        b.iter(|| {
            black_box(search(
                &rt,
                root,
                json!({"pattern": "let value", "limit": 50}),
            ))
        })
    });
    group.bench_function("content_count_glob_rs", |b| {
        b.iter(|| {
            black_box(search(
                &rt,
                root,
                json!({"pattern": "struct S", "file_glob": "*.rs", "output_mode": "count", "limit": 1000}),
            ))
        })
    });
    group.bench_function("files_glob_sorted_by_mtime", |b| {
        b.iter(|| {
            black_box(search(
                &rt,
                root,
                json!({"pattern": "file00*.rs", "target": "files"}),
            ))
        })
    });
    group.finish();
}

criterion_group!(search_benches, benches);
criterion_main!(search_benches);
