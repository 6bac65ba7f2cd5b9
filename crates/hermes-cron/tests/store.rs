//! The job store against a `jobs.json` written by the Python Hermes's own code
//! (`fixtures/python_jobs.json`, made by `fixtures/make_python_jobs.py`): it loads, every
//! rewrite keeps the fields this build does not know, due jobs are claimed once, repeat counts
//! complete a job, and concurrent writers serialise on the lock file Python uses.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use hermes_cron::{CronError, CronStore, JobEdit, NewJob, RunOutcome, Schedule, Zone};
use serde_json::{Value, json};

const FIXTURE: &str = include_str!("fixtures/python_jobs.json");

fn berlin() -> Zone {
    Zone::resolve(Some("Europe/Berlin"), None).0
}

/// A home holding the Python-written jobs.json.
/// The Python-written jobs with their near-term run times (the fixture was made "now", so
/// they fall due within a day of it) moved to 2099: a test is never affected by the day it runs
/// on, and makes a job due itself with `set_next_run`.
fn fixture_for_today() -> String {
    let mut file: Value = serde_json::from_str(FIXTURE).unwrap();
    for job in file["jobs"].as_array_mut().unwrap() {
        let near = job["next_run_at"]
            .as_str()
            .is_some_and(|t| t.as_bytes().get(..4) < Some(b"2030".as_slice()));
        if near {
            job["next_run_at"] = json!("2099-01-01T09:00:00+01:00");
            if job["schedule"]["kind"] == "once" {
                job["schedule"]["run_at"] = json!("2099-01-01T09:00:00+01:00");
            }
        }
    }
    serde_json::to_string_pretty(&file).unwrap()
}

fn python_home() -> (tempfile::TempDir, CronStore) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("cron")).unwrap();
    std::fs::write(tmp.path().join("cron/jobs.json"), fixture_for_today()).unwrap();
    let store = CronStore::new(tmp.path(), berlin());
    (tmp, store)
}

fn raw(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path.join("cron/jobs.json")).unwrap()).unwrap()
}

fn raw_job<'a>(file: &'a Value, id: &str) -> &'a Value {
    file["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == id)
        .unwrap()
}

fn id_of(store: &CronStore, name: &str) -> String {
    store.resolve(name).unwrap().id().to_string()
}

/// Sets a job's `next_run_at` in the file, as a hand edit would.
fn set_next_run(store: &CronStore, id: &str, when: &str) {
    store
        .update(|jobs| {
            let job = jobs.iter_mut().find(|j| j.id() == id).unwrap();
            job.set("next_run_at", json!(when));
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_python_jobs_file_loads() {
    let (_tmp, store) = python_home();
    let jobs = store.list().unwrap();
    let summary: Vec<(String, String, String, String, String)> = jobs
        .iter()
        .map(|j| {
            (
                j.name(),
                j.schedule_display(),
                j.state(),
                j.repeat_display(),
                j.deliver(),
            )
        })
        .collect();
    let s = |a: &str, b: &str, c: &str, d: &str, e: &str| {
        (a.into(), b.into(), c.into(), d.into(), e.into())
    };
    assert_eq!(
        summary,
        vec![
            s("Morning news", "0 9 * * *", "scheduled", "forever", "local"),
            s("Check the disk", "every 120m", "scheduled", "1/3", "local"),
            s(
                "Remind me to stretch",
                "once in 30m",
                "scheduled",
                "once",
                "local"
            ),
            s(
                "Ship the release",
                "once at 2030-06-01 09:00",
                "scheduled",
                "once",
                "telegram:12345"
            ),
            s("Weekly report", "0 17 * * 5", "paused", "forever", "local"),
        ]
    );
    let release = store.resolve("ship the release").unwrap();
    assert_eq!(release.skills(), vec!["release", "changelog"]);
    assert_eq!(
        release.schedule(),
        Some(Schedule::Once {
            run_at: "2030-06-01T09:00:00+02:00".into()
        })
    );
    assert!(!store.resolve("Weekly report").unwrap().enabled());
    let disk = store.resolve("Check the disk").unwrap();
    assert_eq!(disk.last_status(), Some("ok"));
}

#[test]
fn rewrites_keep_unknown_fields_and_other_jobs_untouched() {
    let (tmp, store) = python_home();
    let before = raw(tmp.path());
    let news = id_of(&store, "Morning news");
    store.pause(&news, None).unwrap();
    store.resume(&news).unwrap();
    store
        .edit(
            "Check the disk",
            JobEdit {
                prompt: Some("Check the disk and the inodes".into()),
                ..JobEdit::default()
            },
        )
        .unwrap();
    let after = raw(tmp.path());
    let a = raw_job(&after, &news);
    assert_eq!(a["x_future_field"], json!({"kept": [1, 2, 3]}));
    for key in [
        "provider_snapshot",
        "model_snapshot",
        "origin",
        "context_from",
        "workdir",
    ] {
        assert!(a.get(key).is_some(), "{key} dropped");
    }
    assert_eq!(a["state"], "scheduled");
    assert_eq!(a["paused_at"], Value::Null);
    // Jobs nobody touched are exactly as Python wrote them.
    for name in ["Remind me to stretch", "Ship the release", "Weekly report"] {
        let id = id_of(&store, name);
        assert_eq!(raw_job(&after, &id), raw_job(&before, &id), "{name}");
    }
    let disk = raw_job(&after, &id_of(&store, "Check the disk"));
    assert_eq!(disk["prompt"], "Check the disk and the inodes");
    assert_eq!(disk["repeat"], json!({"times": 3, "completed": 1}));
    assert!(after["updated_at"].as_str().is_some());
}

#[test]
fn a_created_job_has_every_field_python_writes() {
    let (tmp, store) = python_home();
    let job = store
        .create(NewJob {
            prompt: "Water the plants".into(),
            schedule: "every 1d".into(),
            skills: vec!["garden".into()],
            ..NewJob::default()
        })
        .unwrap();
    let file = raw(tmp.path());
    let python = raw_job(&file, &id_of(&store, "Morning news"));
    let ours = raw_job(&file, job.id());
    let mut python_keys: Vec<&String> = python.as_object().unwrap().keys().collect();
    python_keys.retain(|k| *k != "x_future_field");
    python_keys.sort();
    let mut ours_keys: Vec<&String> = ours.as_object().unwrap().keys().collect();
    ours_keys.sort();
    assert_eq!(ours_keys, python_keys);
    assert_eq!(ours["id"].as_str().unwrap().len(), 12);
    assert!(
        ours["id"]
            .as_str()
            .unwrap()
            .chars()
            .all(|c| c.is_ascii_hexdigit())
    );
    assert_eq!(
        ours["schedule"],
        json!({"kind": "interval", "minutes": 1440, "display": "every 1440m"})
    );
    assert_eq!(ours["skill"], "garden");
    assert_eq!(ours["deliver"], "local");
    assert_eq!(ours["repeat"], json!({"times": null, "completed": 0}));
    assert_eq!(ours["name"], "Water the plants");
}

#[test]
fn one_shots_default_to_one_run_and_refuse_the_past() {
    let tmp = tempfile::tempdir().unwrap();
    let store = CronStore::new(tmp.path(), berlin());
    let once = store
        .create(NewJob {
            prompt: "p".into(),
            schedule: "2h".into(),
            ..NewJob::default()
        })
        .unwrap();
    assert_eq!(once.repeat(), (Some(1), 0));
    let err = store
        .create(NewJob {
            prompt: "p".into(),
            schedule: "2001-01-01T10:00".into(),
            ..NewJob::default()
        })
        .unwrap_err();
    assert!(matches!(err, CronError::Schedule(_)), "{err}");
    assert!(err.to_string().contains("in the past"), "{err}");
    assert!(matches!(
        store.resolve("nope").unwrap_err(),
        CronError::NotFound(_)
    ));
}

#[test]
fn due_jobs_are_claimed_once_and_one_shots_complete() {
    let (tmp, store) = python_home();
    // Python's one-shot `30m` was due long ago; nothing else is.
    let stretch = id_of(&store, "Remind me to stretch");
    set_next_run(&store, &stretch, "2026-01-01T10:00:00+01:00");
    let due = store.claim_due().unwrap();
    assert_eq!(
        due.iter().map(|j| j.id().to_string()).collect::<Vec<_>>(),
        vec![stretch.clone()]
    );
    let file = raw(tmp.path());
    assert_eq!(raw_job(&file, &stretch)["state"], "running");
    assert!(raw_job(&file, &stretch)["run_claim"]["at"].is_string());
    // A second tick (or `hermes cron run`) while it runs gets nothing.
    assert!(store.claim_due().unwrap().is_empty());
    assert!(matches!(store.claim(&stretch), Err(CronError::Invalid(_))));

    let done = store
        .finish(
            &stretch,
            &RunOutcome {
                success: true,
                ..RunOutcome::default()
            },
        )
        .unwrap()
        .unwrap();
    assert_eq!(done.state(), "completed");
    assert!(!done.enabled());
    assert_eq!(done.repeat(), (Some(1), 1));
    assert_eq!(done.next_run_at(), None);
    assert_eq!(done.last_status(), Some("ok"));
    let file = raw(tmp.path());
    assert_eq!(raw_job(&file, &stretch)["run_claim"], Value::Null);
    assert!(store.claim_due().unwrap().is_empty());
}

#[test]
fn recurring_jobs_advance_and_count_their_repeats() {
    let (_tmp, store) = python_home();
    let disk = id_of(&store, "Check the disk");
    for run in 2..=3 {
        set_next_run(&store, &disk, "2026-01-01T10:00:00+01:00");
        let due = store.claim_due().unwrap();
        assert_eq!(due.len(), 1);
        let claimed = store.resolve(&disk).unwrap();
        // Missed runs are not replayed: the next one is a period from now.
        let next = hermes_cron::clock::parse_instant(claimed.next_run_at().unwrap()).unwrap();
        let ahead = (next - store.now()).num_minutes();
        assert!((118..=120).contains(&ahead), "{ahead}");
        let after = store
            .finish(
                &disk,
                &RunOutcome {
                    success: run == 2,
                    error: (run != 2).then(|| "model said no".to_string()),
                    ..RunOutcome::default()
                },
            )
            .unwrap()
            .unwrap();
        assert_eq!(after.repeat(), (Some(3), run));
    }
    let done = store.resolve(&disk).unwrap();
    assert_eq!(done.state(), "completed");
    assert_eq!(done.last_status(), Some("error"));
    assert_eq!(done.last_error(), Some("model said no"));
}

#[test]
fn paused_jobs_are_not_due_and_cannot_be_run() {
    let (_tmp, store) = python_home();
    let weekly = id_of(&store, "Weekly report");
    set_next_run(&store, &weekly, "2026-01-01T10:00:00+01:00");
    assert!(store.claim_due().unwrap().is_empty());
    let err = store.claim("weekly report").unwrap_err();
    assert!(err.to_string().contains("is paused"), "{err}");
    let resumed = store.resume(&weekly).unwrap();
    assert_eq!(resumed.state(), "scheduled");
    assert!(resumed.next_run_at().unwrap().contains("T17:00:00"));
}

#[test]
fn writers_wait_for_the_lock_and_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = CronStore::new(tmp.path(), berlin());
    store
        .create(NewJob {
            prompt: "first".into(),
            schedule: "every 1h".into(),
            ..NewJob::default()
        })
        .unwrap();
    // Another process (Python, say) holds cron/.jobs.lock for a while.
    let lock_path = tmp.path().join("cron/.jobs.lock");
    let holder = std::thread::spawn(move || {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(lock_path)
            .unwrap();
        let mut lock = fd_lock::RwLock::new(file);
        let _g = lock.write().unwrap();
        std::thread::sleep(Duration::from_millis(400));
    });
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    store.pause("first", None).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    holder.join().unwrap();

    let writers: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || {
                store
                    .create(NewJob {
                        prompt: format!("job {i}"),
                        schedule: "every 1h".into(),
                        ..NewJob::default()
                    })
                    .unwrap();
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(store.list().unwrap().len(), 9);
}

#[test]
fn a_bare_list_and_a_bom_load_but_garbage_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("cron")).unwrap();
    let store = CronStore::new(tmp.path(), berlin());
    let path = tmp.path().join("cron/jobs.json");
    std::fs::write(
        &path,
        "\u{feff}[{\"id\": \"a1\", \"prompt\": \"x\", \"schedule\": {\"kind\": \"interval\", \"minutes\": 5}}]",
    )
    .unwrap();
    assert_eq!(store.list().unwrap()[0].name(), "x");
    std::fs::write(&path, "\"nope\"").unwrap();
    let err = store.list().unwrap_err();
    assert!(matches!(err, CronError::Corrupt { .. }), "{err}");
    std::fs::write(&path, "{\"jobs\": [").unwrap();
    assert!(
        store
            .list()
            .unwrap_err()
            .to_string()
            .contains("not valid JSON")
    );
}

#[test]
fn only_one_tick_holds_the_tick_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let store = CronStore::new(tmp.path(), berlin());
    let mut first = store.tick_lock().unwrap();
    let mut second = store.tick_lock().unwrap();
    let held = first.try_hold().unwrap();
    assert!(second.try_hold().is_none());
    drop(held);
    assert!(second.try_hold().is_some());
    assert!(tmp.path().join("cron/.tick.lock").exists());
}
