//! The curator through the real binary: a home holding skills the agent made (recorded in a
//! `.usage.json` with old timestamps, as the Python Hermes writes it) and skills the user
//! wrote; `hermes curator run --dry-run` changes nothing and says what would change; `run`
//! snapshots the folder, marks stale and archives, and `hermes skills list` shows it;
//! `restore`, `pin`, `pause`/`resume`; and `skill_manage create` in a chat against the mock
//! model leaves the new skill the user's (only the background review's creations are the
//! agent's: `learning_review.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use std::collections::BTreeMap;
use std::path::Path;

use hermes_core::skills::usage::iso_at;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

fn days_ago(days: f64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    iso_at(now - days * 86_400.0)
}

fn skill(home: &TestHome, rel: &str, description: &str) {
    let name = rel.rsplit('/').next().unwrap();
    home.write_file(
        &format!("skills/{rel}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n\nSteps.\n"),
    );
}

fn agent_record(last_used_days_ago: f64) -> Value {
    json!({
        "created_by": "agent",
        "use_count": 3,
        "view_count": 3,
        "last_used_at": days_ago(last_used_days_ago),
        "last_viewed_at": days_ago(last_used_days_ago),
        "patch_count": 0,
        "last_patched_at": null,
        "created_at": days_ago(200.0),
        "state": "active",
        "pinned": false,
        "archived_at": null,
    })
}

/// Agent-made skills unused for 1, 40 and 100 days, and a user-written one unused for 400.
fn curated_home() -> TestHome {
    let home = TestHome::new();
    skill(&home, "fresh", "Used yesterday.");
    skill(&home, "devops/month-old", "Last used 40 days ago.");
    skill(&home, "ops/ancient", "Last used 100 days ago.");
    skill(&home, "mine", "Written by the user.");
    let usage = json!({
        "fresh": agent_record(1.0),
        "month-old": agent_record(40.0),
        "ancient": agent_record(100.0),
        "mine": {"created_by": null, "use_count": 1, "last_used_at": days_ago(400.0), "state": "active"},
    });
    home.write_file(
        "skills/.usage.json",
        &serde_json::to_string_pretty(&usage).unwrap(),
    );
    home
}

/// Every file below `dir` with its contents.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn usage(home: &TestHome) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(home.hermes_home().join("skills/.usage.json")).unwrap(),
    )
    .unwrap()
}

#[test]
fn dry_run_changes_nothing_then_run_stales_and_archives() {
    let home = curated_home();
    let skills = home.hermes_home().join("skills");
    let before = tree(&skills);

    let o = run(&home, &["curator", "run", "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "curator: running DRY-RUN (report only, no mutations)...
  would archive: ancient (unused 100d)
  would mark stale: month-old (unused 40d)
auto (preview): 3 candidate skill(s), 1 marked stale, 1 archived — no transitions applied in dry-run
dry-run: no changes applied. Run `hermes curator run` (no flag) to apply.
"
    );
    assert_eq!(
        tree(&skills),
        before,
        "not a byte changed, no state file, no snapshot"
    );

    let o = run(&home, &["curator", "run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "curator: running review pass...");
    let id = lines[1]
        .strip_prefix("curator: snapshot created (")
        .and_then(|l| l.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(
        lines[2..],
        [
            format!(
                "  archived: ancient (unused 100d) → {}",
                skills.join(".archive/ancient").display()
            )
            .as_str(),
            "  marked stale: month-old (unused 40d)",
            "curator: auto: 1 marked stale, 1 archived; llm: skipped (consolidation off)",
            "auto: checked=3 stale=1 archived=1 reactivated=0",
        ]
    );
    // The snapshot holds the folder as it was.
    let snap = skills.join(".curator_backups").join(id);
    assert!(snap.join("skills.tar.gz").is_file());
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(snap.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["reason"], "pre-curator-run");
    assert_eq!(manifest["skill_files"], 4);
    // Moved, never deleted; the empty category folder goes.
    assert_eq!(
        std::fs::read(skills.join(".archive/ancient/SKILL.md")).unwrap(),
        before["ops/ancient/SKILL.md"]
    );
    assert!(!skills.join("ops").exists());
    let u = usage(&home);
    assert_eq!(u["ancient"]["state"], "archived");
    assert!(
        u["ancient"]["archived_at"]
            .as_str()
            .unwrap()
            .ends_with("+00:00")
    );
    assert_eq!(u["month-old"]["state"], "stale");
    assert_eq!(u["fresh"]["state"], "active");
    assert_eq!(
        u["mine"]["state"], "active",
        "the user's skill is not the curator's"
    );
    assert!(skills.join("mine/SKILL.md").is_file());
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(skills.join(".curator_state")).unwrap())
            .unwrap();
    assert_eq!(state["run_count"], 1);
    assert_eq!(state["paused"], false);
    assert_eq!(
        state["last_run_summary"],
        "auto: 1 marked stale, 1 archived; llm: skipped (consolidation off)"
    );

    // The list shows origin and state; the archived skill is named, not offered.
    let o = run(&home, &["skills", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "NAME       CATEGORY  ORIGIN   STATE   DESCRIPTION
fresh      -         agent    active  Used yesterday.
mine       -         user     active  Written by the user.
month-old  devops    agent    stale   Last used 40 days ago.
3 skills in {}; 3 offered in chats (/NAME runs one). `hermes skills show NAME` prints one.
Archived (`hermes curator restore NAME` brings one back): ancient
",
            skills.display()
        )
    );
    let o = run(&home, &["curator", "status"]);
    let out = stdout(&o);
    assert!(
        out.starts_with("curator: ENABLED\n  runs:           1\n  last run:       "),
        "{out}"
    );
    assert!(out.contains(
        "\nagent-created skills: 3 total\n  active     1\n  stale      1\n  archived   1\n"
    ));
}

#[test]
fn restore_pin_and_pause() {
    let home = curated_home();
    let skills = home.hermes_home().join("skills");
    assert!(run(&home, &["curator", "run"]).status.success());

    let o = run(&home, &["curator", "restore", "ancient"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "curator: restored to {}\nPin it (`hermes curator pin ancient`) to keep later passes from archiving it again.\n",
            skills.join("ancient").display()
        )
    );
    assert!(skills.join("ancient/SKILL.md").is_file());
    assert_eq!(usage(&home)["ancient"]["state"], "active");
    assert_eq!(usage(&home)["ancient"]["archived_at"], Value::Null);
    let o = run(&home, &["curator", "restore", "ancient"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "hermes: curator: skill 'ancient' not found in archive\n"
    );

    // Pinned, it survives the next pass; the user's skill can be pinned too.
    let o = run(&home, &["curator", "pin", "ancient"]);
    assert_eq!(
        stdout(&o),
        "curator: pinned 'ancient' (will bypass auto-transitions)\n"
    );
    assert_eq!(usage(&home)["ancient"]["pinned"], true);
    let o = run(&home, &["curator", "run", "--dry-run"]);
    assert!(
        stdout(&o).contains("auto (preview): 3 candidate skill(s), no changes"),
        "{}",
        stdout(&o)
    );
    let o = run(&home, &["skills"]);
    assert!(
        stdout(&o)
            .contains("\nancient    -         agent    active, pinned  Last used 100 days ago.\n"),
        "{}",
        stdout(&o)
    );
    let o = run(&home, &["curator", "unpin", "ancient"]);
    assert_eq!(stdout(&o), "curator: unpinned 'ancient'\n");
    assert_eq!(usage(&home)["ancient"]["pinned"], false);
    let o = run(&home, &["curator", "pin", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), "hermes: curator: no skill named 'nope'\n");

    // Pause and resume flip the state file.
    let o = run(&home, &["curator", "pause"]);
    assert_eq!(stdout(&o), "curator: paused\n");
    let state = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(skills.join(".curator_state")).unwrap())
            .unwrap()
    };
    assert_eq!(state()["paused"], true);
    assert!(stdout(&run(&home, &["curator"])).starts_with("curator: PAUSED\n"));
    let o = run(&home, &["curator", "resume"]);
    assert_eq!(stdout(&o), "curator: resumed\n");
    assert_eq!(state()["paused"], false);
    assert_eq!(state()["run_count"], 1, "pausing is not a pass");
}

#[test]
fn skill_manage_create_in_a_conversation_leaves_the_skill_the_users() {
    // The Python Hermes marks only what the background review creates as the agent's: a skill
    // made in a conversation was asked for by the user, and the curator never touches it.
    let content = "---\nname: release-notes\ndescription: Draft release notes from merged PRs.\n---\n\n1. List merged PRs.\n";
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "skill_manage",
            json!({"action": "create", "name": "release-notes", "content": content}),
        ),
        Turn::text("Saved."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    skill(&home, "mine", "Written by the user.");
    let o = run(&home, &["-z", "save how we did that"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Saved.\n");
    assert_eq!(server.chat_requests().len(), 2);
    // Nothing is recorded for it (the Python Hermes writes no record on a foreground create).
    assert!(
        !home.hermes_home().join("skills/.usage.json").exists()
            || usage(&home).get("release-notes").is_none(),
        "not the agent's"
    );
    let o = run(&home, &["skills"]);
    let out = stdout(&o);
    assert!(
        out.contains(
            "\nrelease-notes  -         user     active  Draft release notes from merged PRs.\n"
        ),
        "{out}"
    );
}

fn write_state(home: &TestHome, last_run_days_ago: f64, paused: bool) {
    home.write_file(
        "skills/.curator_state",
        &serde_json::to_string_pretty(&json!({
            "last_run_at": days_ago(last_run_days_ago),
            "last_run_duration_seconds": 0.5,
            "last_run_summary": "auto: no changes; llm: skipped (consolidation off)",
            "last_run_summary_shown_at": null,
            "last_report_path": null,
            "paused": paused,
            "run_count": 4,
        }))
        .unwrap(),
    );
}

fn state(home: &TestHome) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(home.hermes_home().join("skills/.curator_state")).unwrap(),
    )
    .unwrap()
}

#[test]
fn a_due_pass_runs_after_the_answer_when_a_session_ends() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("three"),
        Turn::text("four"),
    ]));
    // First sight: the clock starts, nothing moves.
    let home = curated_home();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "one\n");
    let s = state(&home);
    assert_eq!(s["run_count"], 0);
    assert!(
        s["last_run_summary"]
            .as_str()
            .unwrap()
            .starts_with("deferred first run")
    );
    assert_eq!(usage(&home)["ancient"]["state"], "active");

    // Last pass a day ago: not due. Paused: not run.
    write_state(&home, 1.0, false);
    assert!(run(&home, &["-z", "hi"]).status.success());
    assert_eq!(state(&home)["run_count"], 4);
    write_state(&home, 8.0, true);
    assert!(run(&home, &["-z", "hi"]).status.success());
    assert_eq!(state(&home)["run_count"], 4);
    assert_eq!(usage(&home)["ancient"]["state"], "active");

    // A week and a day: the chat's end runs the pass.
    write_state(&home, 8.0, false);
    let o = run_with_stdin(&home, &["chat"], "hi\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("four"), "{}", stdout(&o));
    let s = state(&home);
    assert_eq!(s["run_count"], 5);
    assert_eq!(
        s["last_run_summary"],
        "auto: 1 marked stale, 1 archived; llm: skipped (consolidation off)"
    );
    assert!(
        home.hermes_home()
            .join("skills/.archive/ancient/SKILL.md")
            .is_file()
    );
    assert_eq!(usage(&home)["month-old"]["state"], "stale");
    assert_eq!(server.chat_requests().len(), 4);
}

#[test]
fn the_gateway_runs_a_due_pass() {
    let home = curated_home();
    let server = MockServer::start(Script::new(vec![]));
    home.write_mock_config(&server);
    write_state(&home, 8.0, false);
    let gateway = common::gateway::Gateway::start(&home, &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while state(&home)["run_count"] != 5 {
        assert!(
            std::time::Instant::now() < deadline,
            "no pass: {}",
            state(&home)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (code, err) = gateway.terminate();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        home.hermes_home()
            .join("skills/.archive/ancient/SKILL.md")
            .is_file()
    );
}

#[test]
fn archived_skills_leave_the_index_and_a_used_stale_skill_is_active_again() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("skill_view", json!({"name": "month-old"})),
        Turn::text("Followed it."),
    ]));
    let home = curated_home();
    home.write_mock_config(&server);
    assert!(run(&home, &["curator", "run"]).status.success());
    assert_eq!(usage(&home)["month-old"]["state"], "stale");
    let o = run(&home, &["-z", "do the monthly thing"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Followed it.\n");
    let prompt = server.chat_requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(prompt.contains("\n- fresh: Used yesterday."), "{prompt}");
    assert!(
        prompt.contains("  - month-old: Last used 40 days ago."),
        "{prompt}"
    );
    assert!(
        !prompt.contains("ancient"),
        "archived: not offered\n{prompt}"
    );
    let record = &usage(&home)["month-old"];
    assert_eq!(record["state"], "active");
    assert_eq!(record["use_count"], 4);
}
