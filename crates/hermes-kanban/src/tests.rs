//! The board's rules on a real database in a temp directory.

use crate::board::{Board, NewTask};
use crate::error::KanbanError;
use crate::lifecycle::{BlockOutcome, Completion, WorkerExit};
use crate::model::BlockKind;
use crate::paths::{BoardPaths, EnvLookup};

struct NoEnv;
impl EnvLookup for NoEnv {
    fn var(&self, _: &str) -> Option<String> {
        None
    }
}

fn board() -> (tempfile::TempDir, Board) {
    let dir = tempfile::tempdir().unwrap();
    let paths = BoardPaths::resolve(dir.path(), None, &NoEnv).unwrap();
    let board = Board::open(paths).unwrap();
    (dir, board)
}

fn task(board: &Board, title: &str, parents: &[&str]) -> String {
    let mut new = NewTask::titled(title);
    new.assignee = Some("worker".into());
    new.parents = parents.iter().map(|p| p.to_string()).collect();
    board.create(&new).unwrap()
}

fn status(board: &Board, id: &str) -> String {
    board.get(id).unwrap().status
}

fn done(board: &Board, id: &str) {
    assert!(
        board
            .complete(
                id,
                &Completion {
                    result: None,
                    summary: Some("ok"),
                    metadata: None,
                    expected_run: None
                }
            )
            .unwrap()
    );
}

#[test]
fn children_wait_for_every_parent() {
    let (_d, b) = board();
    let a = task(&b, "a", &[]);
    let c = task(&b, "c", &[]);
    let child = task(&b, "child", &[&a, &c]);
    assert_eq!(status(&b, &a), "ready");
    assert_eq!(status(&b, &child), "todo");
    done(&b, &a);
    assert_eq!(status(&b, &child), "todo");
    b.archive(&c).unwrap();
    assert_eq!(status(&b, &child), "ready");
    assert!(matches!(
        b.create(&NewTask {
            parents: vec!["t_nope".into()],
            ..NewTask::titled("x")
        }),
        Err(KanbanError::UnknownParents(_))
    ));
    assert!(matches!(
        b.create(&NewTask::titled("  ")),
        Err(KanbanError::TitleRequired)
    ));
}

#[test]
fn links_refuse_cycles_and_self_links() {
    let (_d, b) = board();
    let a = task(&b, "a", &[]);
    let c = task(&b, "c", &[&a]);
    let e = task(&b, "e", &[&c]);
    assert!(matches!(b.link(&e, &a), Err(KanbanError::Cycle { .. })));
    assert!(matches!(b.link(&a, &a), Err(KanbanError::SelfLink(_))));
    // Linking under an unfinished parent sends a ready task back to todo.
    let f = task(&b, "f", &[]);
    b.link(&a, &f).unwrap();
    assert_eq!(status(&b, &f), "todo");
    assert!(b.unlink(&a, &f).unwrap());
    assert_eq!(status(&b, &f), "ready");
}

#[test]
fn a_claim_is_won_once() {
    let (_d, b) = board();
    let a = task(&b, "a", &[]);
    let first = b.claim(&a, "host:1", 60).unwrap().unwrap();
    assert_eq!(first.status, "running");
    assert!(first.current_run_id.is_some());
    assert!(b.claim(&a, "host:2", 60).unwrap().is_none());
    // Only the holder extends it.
    assert!(b.heartbeat(&a, "host:1", Some("halfway")).unwrap());
    assert!(!b.heartbeat(&a, "host:2", None).unwrap());
    // A worker's completion only counts for its own run.
    let stale = Completion {
        result: None,
        summary: Some("x"),
        metadata: None,
        expected_run: Some(first.current_run_id.unwrap() + 99),
    };
    assert!(!b.complete(&a, &stale).unwrap());
    assert_eq!(status(&b, &a), "running");
}

#[test]
fn blocks_route_by_kind_and_a_loop_goes_to_triage() {
    let (_d, b) = board();
    let a = task(&b, "a", &[]);
    b.claim(&a, "h:1", 60).unwrap();
    assert_eq!(
        b.block(&a, Some("need the key"), Some(BlockKind::NeedsInput), None)
            .unwrap(),
        Some(BlockOutcome::Blocked)
    );
    // A person's block is sticky: promotion never lifts it.
    b.recompute_ready(None).unwrap();
    assert_eq!(status(&b, &a), "blocked");
    assert!(b.unblock(&a).unwrap());
    assert_eq!(status(&b, &a), "ready");
    b.claim(&a, "h:1", 60).unwrap();
    assert_eq!(
        b.block(
            &a,
            Some("need the key again"),
            Some(BlockKind::NeedsInput),
            None
        )
        .unwrap(),
        Some(BlockOutcome::Triage)
    );
    assert_eq!(status(&b, &a), "triage");

    let d = task(&b, "d", &[]);
    b.claim(&d, "h:1", 60).unwrap();
    assert_eq!(
        b.block(&d, Some("waiting on a"), Some(BlockKind::Dependency), None)
            .unwrap(),
        Some(BlockOutcome::Todo)
    );
    assert_eq!(status(&b, &d), "todo");
    assert!(
        b.block(&d, None, None, None).unwrap().is_none(),
        "a todo task cannot be blocked"
    );
}

#[test]
fn failures_park_a_task_at_the_limit() {
    let (_d, b) = board();
    let a = task(&b, "a", &[]);
    for round in 1..=2 {
        let t = b.claim(&a, "h:1", 60).unwrap().unwrap();
        b.set_worker_pid(&a, 4242).unwrap();
        let tripped = b
            .record_worker_exit(&a, 4242, "h:1", &WorkerExit::Code(3), 2)
            .unwrap();
        assert_eq!(tripped, Some(round == 2), "round {round}");
        assert!(t.current_run_id.is_some());
    }
    let t = b.get(&a).unwrap();
    assert_eq!(t.status, "blocked");
    assert_eq!(t.consecutive_failures, 2);
    assert_eq!(
        t.last_failure_error.as_deref(),
        Some("pid 4242 exited with code 3")
    );
    // Given up by the breaker, not by a person: still not promoted while over the limit.
    b.recompute_ready(None).unwrap();
    assert_eq!(status(&b, &a), "blocked");
    let kinds: Vec<String> = b
        .events(&a, 0)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert!(
        kinds.ends_with(&["crashed".to_string(), "gave_up".to_string()]),
        "{kinds:?}"
    );
    // An unblock resets the counter.
    assert!(b.unblock(&a).unwrap());
    assert_eq!(b.get(&a).unwrap().consecutive_failures, 0);
}

#[test]
fn an_expired_claim_is_reclaimed_unless_its_local_worker_lives() {
    let (_d, b) = board();
    let a = task(&b, "a", &[]);
    let c = task(&b, "c", &[]);
    b.claim(&a, "elsewhere:77", -5).unwrap();
    let local = format!("{}:1", crate::lifecycle::host_name());
    b.claim(&c, &local, -5).unwrap();
    b.set_worker_pid(&c, std::process::id()).unwrap();
    let reclaimed = b
        .release_stale_claims(&|pid| pid == i64::from(std::process::id()))
        .unwrap();
    assert_eq!(reclaimed, vec![a.clone()]);
    assert_eq!(status(&b, &a), "ready");
    assert_eq!(status(&b, &c), "running");
    let runs = b.runs(&a).unwrap();
    assert_eq!(runs[0].outcome.as_deref(), Some("reclaimed"));
}

#[test]
fn an_idempotency_key_returns_the_same_task_and_attachments_are_bounded() {
    let (_d, b) = board();
    let mut new = NewTask::titled("hook");
    new.idempotency_key = Some("k1".into());
    let a = b.create(&new).unwrap();
    assert_eq!(b.create(&new).unwrap(), a);
    let att = b
        .attach_bytes(&a, "../../x.txt", b"hello", Some("text/plain"), Some("me"))
        .unwrap();
    assert_eq!(att.filename, "x.txt");
    assert!(
        att.stored_path
            .ends_with(&format!("kanban/attachments/{a}/x.txt"))
    );
    let again = b.attach_bytes(&a, "x.txt", b"again", None, None).unwrap();
    assert!(again.stored_path.ends_with("x-1.txt"));
    let big = vec![0u8; (crate::board::ATTACHMENT_MAX_BYTES + 1) as usize];
    assert!(matches!(
        b.attach_bytes(&a, "big", &big, None, None),
        Err(KanbanError::AttachmentTooLarge { .. })
    ));
}

#[test]
fn subscriptions_hear_each_event_once_and_end_with_the_task() {
    let (_d, b) = board();
    let a = task(&b, "a", &[]);
    b.subscribe(&a, "telegram", "42", None, Some("7")).unwrap();
    b.claim(&a, "h:1", 60).unwrap();
    b.block(&a, Some("which one?"), Some(BlockKind::NeedsInput), None)
        .unwrap();
    let sub = b.subscriptions(Some(&a)).unwrap().remove(0);
    let heard = b.take_notifications(&sub).unwrap();
    assert_eq!(
        heard.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
        ["blocked"]
    );
    assert_eq!(
        crate::notify::describe(&a, "a", &heard[0]).lines().nth(1),
        Some("which one?")
    );
    // The same cursor a second time hears nothing (another gateway took them).
    assert!(b.take_notifications(&sub).unwrap().is_empty());
    b.unblock(&a).unwrap();
    done(&b, &a);
    let sub = b.subscriptions(Some(&a)).unwrap().remove(0);
    assert_eq!(b.take_notifications(&sub).unwrap()[0].kind, "completed");
    assert!(b.subscriptions(Some(&a)).unwrap().is_empty());
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kanban.db"), "not a database at all").unwrap();
    let paths = BoardPaths::resolve(dir.path(), None, &NoEnv).unwrap();
    assert!(matches!(
        Board::open(paths),
        Err(KanbanError::NotADatabase { .. })
    ));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("kanban.db")).unwrap(),
        "not a database at all"
    );
}

#[test]
fn direct_moves_respect_parents_and_reopening_demotes_children() {
    use crate::model::Status;
    let (_dir, board) = board();
    let parent = task(&board, "parent", &[]);
    let child = task(&board, "child", &[&parent]);
    assert_eq!(status(&board, &child), "todo");
    // `ready` needs every parent done.
    assert!(!board.move_to(&child, Status::Ready).unwrap());
    assert_eq!(status(&board, &child), "todo");
    assert!(board.move_to(&parent, Status::Triage).unwrap());
    assert_eq!(status(&board, &parent), "triage");
    assert!(board.move_to(&parent, Status::Ready).unwrap());
    done(&board, &parent);
    assert_eq!(status(&board, &child), "ready");
    // Reopening the parent sends its ready child back to todo.
    assert!(board.move_to(&parent, Status::Todo).unwrap());
    assert_eq!(status(&board, &parent), "todo");
    assert_eq!(status(&board, &child), "todo");
    let kinds: Vec<String> = board
        .events(&child, 0)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds.last().map(String::as_str), Some("status"));
    // Moves the verbs own are refused here.
    assert!(matches!(
        board.move_to(&child, Status::Done),
        Err(KanbanError::InvalidValue { .. })
    ));
    assert!(matches!(
        board.move_to("t_missing", Status::Todo),
        Err(KanbanError::UnknownTask(_))
    ));
}

#[test]
fn a_consistent_view_is_not_torn_by_a_concurrent_completion() {
    // Regression: `kanban show` read the task row, then its events; a worker completing in
    // between showed a `ready` task with a `completed` event.
    let (dir, board) = board();
    let id = task(&board, "race", &[]);
    let other = Board::open(BoardPaths::resolve(dir.path(), None, &NoEnv).unwrap()).unwrap();
    let (status_seen, events_seen) = board
        .consistent(|b| {
            let status = b.get(&id)?.status;
            // Another process completes the task now; it must wait for this view to end.
            let id2 = id.clone();
            let writer = std::thread::spawn(move || done(&other, &id2));
            std::thread::sleep(std::time::Duration::from_millis(300));
            let events: Vec<String> = b.events(&id, 0)?.into_iter().map(|e| e.kind).collect();
            Ok((status, events, writer))
        })
        .map(|(s, e, writer)| {
            writer.join().unwrap();
            (s, e)
        })
        .unwrap();
    assert_eq!(status_seen, "ready");
    assert!(
        !events_seen.iter().any(|k| k == "completed"),
        "{events_seen:?}"
    );
    assert_eq!(
        status(&board, &id),
        "done",
        "the completion went through after the view"
    );
}
