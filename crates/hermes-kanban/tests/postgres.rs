//! The board's rules on PostgreSQL (a throwaway server): the life of a task from creation to
//! completion through a claim, blocks and unblocks, failures, stale claims, links, comments,
//! attachments and notifications, on the same code as SQLite; and claims that race from many
//! connections at once give each task to exactly one claimer. Skips with the reason when
//! PostgreSQL is not installed.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Barrier};

use hermes_config::{StoreTarget, StoreUrl};
use hermes_kanban::lifecycle::{BlockOutcome, Completion, WorkerExit};
use hermes_kanban::{BlockKind, Board, BoardPaths, NewTask, ProcessEnv};
use hermes_testkit::postgres::Postgres;

fn open(dir: &std::path::Path, url: &str) -> Board {
    let paths = BoardPaths::resolve(dir, None, &ProcessEnv).unwrap();
    Board::open(BoardPaths {
        backend: StoreTarget::Postgres(StoreUrl::new(url)),
        ..paths
    })
    .unwrap()
}

fn server() -> Option<(Postgres, String)> {
    match Postgres::start() {
        Ok(pg) => {
            let url = pg.create_database("k").unwrap();
            Some((pg, url))
        }
        Err(reason) => {
            eprintln!("skipping: {reason}");
            None
        }
    }
}

fn task(b: &Board, title: &str, parents: &[&str]) -> String {
    let mut new = NewTask::titled(title);
    new.assignee = Some("worker".into());
    new.parents = parents.iter().map(|p| p.to_string()).collect();
    b.create(&new).unwrap()
}

#[test]
fn a_task_lives_its_whole_life_on_postgres() {
    let Some((_pg, url)) = server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &url);
    let a = task(&b, "a", &[]);
    let c = task(&b, "c", &[&a]);
    assert_eq!(b.get(&a).unwrap().status, "ready");
    assert_eq!(b.get(&c).unwrap().status, "todo");
    assert_eq!(b.list(&Default::default()).unwrap().len(), 2);

    let claimed = b.claim(&a, "host:1", 900).unwrap().unwrap();
    assert_eq!(claimed.status, "running");
    assert!(b.claim(&a, "host:2", 900).unwrap().is_none());
    b.set_worker_pid(&a, 4242).unwrap();
    assert!(b.heartbeat(&a, "host:1", Some("half way")).unwrap());
    assert!(!b.heartbeat(&a, "host:2", None).unwrap());
    let run = b.get(&a).unwrap().current_run_id;
    b.comment(&a, "alice", "looks good").unwrap();
    assert_eq!(b.comments(&a).unwrap().len(), 1);
    b.attach_bytes(
        &a,
        "notes.txt",
        b"hello",
        Some("text/plain"),
        Some("worker"),
    )
    .unwrap();
    assert_eq!(b.attachments(&a).unwrap()[0].size, 5);
    b.subscribe(&a, "telegram", "42", None, None).unwrap();
    assert!(
        b.complete(
            &a,
            &Completion {
                result: Some("done"),
                summary: Some("finished a"),
                metadata: Some(serde_json::json!({"n": 1})),
                expected_run: run,
            },
        )
        .unwrap()
    );
    assert_eq!(b.get(&a).unwrap().status, "done");
    assert_eq!(b.get(&c).unwrap().status, "ready");
    assert_eq!(b.latest_summary(&a).unwrap().as_deref(), Some("finished a"));
    let subs = b.subscriptions(Some(&a)).unwrap();
    assert_eq!(subs.len(), 1);
    let heard = b.take_notifications(&subs[0]).unwrap();
    assert_eq!(
        heard.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
        ["completed"]
    );
    assert!(b.subscriptions(None).unwrap().is_empty());

    // Blocks, the loop breaker, unblock.
    b.claim(&c, "host:1", 900).unwrap().unwrap();
    let out = b
        .block(&c, Some("which format?"), Some(BlockKind::NeedsInput), None)
        .unwrap();
    assert_eq!(out, Some(BlockOutcome::Blocked));
    assert_eq!(
        b.recompute_ready(None).unwrap(),
        0,
        "a worker's block is sticky"
    );
    assert!(b.unblock(&c).unwrap());
    assert_eq!(b.get(&c).unwrap().status, "ready");

    // A crashed worker counts a failure; a stale claim is reclaimed.
    b.claim(&c, "host:1", 900).unwrap().unwrap();
    b.set_worker_pid(&c, 777).unwrap();
    assert_eq!(
        b.record_worker_exit(&c, 777, "host:1", &WorkerExit::Code(3), 5)
            .unwrap(),
        Some(false)
    );
    assert_eq!(b.get(&c).unwrap().consecutive_failures, 1);
    b.claim(&c, "elsewhere:9", -1).unwrap().unwrap();
    assert_eq!(b.release_stale_claims(&|_| false).unwrap(), vec![c.clone()]);
    assert_eq!(b.get(&c).unwrap().status, "ready");
    let kinds: Vec<String> = b
        .events(&c, 0)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert!(kinds.contains(&"reclaimed".to_string()), "{kinds:?}");

    // Links and cycles.
    let d = task(&b, "d", &[]);
    b.link(&c, &d).unwrap();
    assert_eq!(b.get(&d).unwrap().status, "todo");
    assert!(b.link(&d, &c).is_err());
    assert!(b.unlink(&c, &d).unwrap());
    assert_eq!(b.get(&d).unwrap().status, "ready");
    assert!(b.archive(&d).unwrap());
    assert!(
        b.stats()
            .unwrap()
            .iter()
            .any(|(s, n)| s == "done" && *n == 1)
    );
    assert_eq!(b.runs(&c).unwrap().len(), 3);
}

#[test]
fn racing_claimers_get_each_task_once() {
    let Some((_pg, url)) = server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &url);
    let ids: Vec<String> = (0..40).map(|i| task(&b, &format!("t{i}"), &[])).collect();
    let claimers = 6;
    let barrier = Arc::new(Barrier::new(claimers));
    let handles: Vec<_> = (0..claimers)
        .map(|n| {
            let (ids, url, dir, barrier) = (
                ids.clone(),
                url.clone(),
                dir.path().to_path_buf(),
                barrier.clone(),
            );
            std::thread::spawn(move || {
                let b = open(&dir, &url);
                barrier.wait();
                ids.iter()
                    .filter(|id| b.claim(id, &format!("m{n}:1"), 900).unwrap().is_some())
                    .count()
            })
        })
        .collect();
    let won: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(won, ids.len());
    for id in &ids {
        assert_eq!(b.runs(id).unwrap().len(), 1, "task {id}");
    }
}
