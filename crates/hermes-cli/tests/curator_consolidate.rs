//! The curator's LLM consolidation pass through the real binary, the scripted mock playing the
//! curator model: `hermes curator run --consolidate` offers exactly `skills_list`, `skill_view`
//! and `skill_manage`, sends the Python Hermes's prompt with the agent-created skills (flags
//! included, the user's skills absent), lets the model create an umbrella and archive what it
//! absorbed, refuses what the hard rules forbid (a user's skill, a skill a cron job needs), and
//! records the pass (summary in `skills/.curator_state`, a report under `logs/curator/`, a
//! session hidden from `sessions list`). `--dry-run` refuses every write. With
//! `curator.consolidate: true` a due pass after a one-shot runs in its own process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use hermes_core::skills::usage::iso_at;
use hermes_testkit::{MockServer, Script, TestHome, Turn, mock_config_yaml};
use serde_json::{Value, json};

const UMBRELLA: &str = "---\nname: git-workflows\ndescription: Rebases, merges and conflicts.\n---\n\n## Rebase\n\n## Conflicts\n";
const FINAL: &str = "Merged the git cluster into git-workflows.\n\n## Structured summary (required)\n```yaml\nconsolidations:\n  - from: git-rebase-fix\n    into: git-workflows\n    reason: one class of work\nprunings: []\n```";

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn skill(home: &TestHome, name: &str, description: &str) {
    home.write_file(
        &format!("skills/{name}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n\nSteps.\n"),
    );
}

/// Three agent-made skills (one a cron job uses) and one the user wrote.
fn home_with_skills(config_extra: &str, server: &MockServer) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!("{}{config_extra}", mock_config_yaml(server)));
    skill(&home, "git-rebase-fix", "Fix a failed rebase.");
    skill(&home, "git-merge-conflicts", "Resolve merge conflicts.");
    skill(&home, "deploy-nightly", "The nightly deploy.");
    skill(&home, "mine", "Written by the user.");
    let agent = json!({"created_by": "agent", "use_count": 1, "last_used_at": iso_at(now() - 86_400.0), "state": "active"});
    home.write_file(
        "skills/.usage.json",
        &json!({
            "git-rebase-fix": agent,
            "git-merge-conflicts": agent,
            "deploy-nightly": agent,
            "mine": {"created_by": null, "use_count": 5},
        })
        .to_string(),
    );
    home.write_file(
        "cron/jobs.json",
        &json!({"jobs": [{"id": "n1", "name": "nightly", "prompt": "deploy", "skills": ["deploy-nightly"], "schedule": {"kind": "cron", "expr": "0 3 * * *"}, "enabled": true}]}).to_string(),
    );
    home
}

fn state(home: &TestHome) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(home.hermes_home().join("skills/.curator_state")).unwrap(),
    )
    .unwrap()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// The text of the last tool result in a request.
fn last_tool_result(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

#[test]
fn consolidation_merges_into_an_umbrella_under_the_hard_rules() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("skills_list", json!({})),
        Turn::tool(
            "skill_manage",
            json!({"action": "create", "name": "git-workflows", "content": UMBRELLA}),
        ),
        Turn::tool(
            "skill_manage",
            json!({"action": "delete", "name": "git-rebase-fix", "absorbed_into": "git-workflows"}),
        ),
        Turn::tool(
            "skill_manage",
            json!({"action": "delete", "name": "mine", "absorbed_into": ""}),
        ),
        Turn::tool(
            "skill_manage",
            json!({"action": "delete", "name": "deploy-nightly", "absorbed_into": ""}),
        ),
        Turn::text(FINAL),
    ]));
    let home = home_with_skills(
        "auxiliary:\n  curator:\n    model: curator-model\n",
        &server,
    );
    let o = run(&home, &["curator", "run", "--consolidate"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 6);
    let first = &requests[0];
    assert_eq!(first["model"], "curator-model");
    assert_eq!(
        tool_names(first),
        vec!["skills_list", "skill_view", "skill_manage"]
    );
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        2,
        "system prompt and the pass's prompt only"
    );
    let prompt = messages[1]["content"].as_str().unwrap();
    assert!(prompt.starts_with("You are running as Hermes' background skill CURATOR."));
    assert!(prompt.contains("Agent-created skills (3):"), "{prompt}");
    assert!(
        prompt.contains("- deploy-nightly  state=active  pinned=no  cron=yes  activity=1  use=1"),
        "{prompt}"
    );
    assert!(prompt.contains("- git-rebase-fix  state=active  pinned=no  cron=no"));
    assert!(
        !prompt.contains("- mine "),
        "the user's skill is not a candidate"
    );
    // The rules the model broke were refused, not carried out.
    assert!(
        last_tool_result(&requests[4]).contains("'mine' is not a curator-managed skill"),
        "{}",
        last_tool_result(&requests[4])
    );
    assert!(
        last_tool_result(&requests[5]).contains("used by a cron job"),
        "{}",
        last_tool_result(&requests[5])
    );

    let skills = home.hermes_home().join("skills");
    assert!(skills.join("git-workflows/SKILL.md").is_file());
    assert!(!skills.join("git-rebase-fix").exists());
    assert!(skills.join(".archive/git-rebase-fix/SKILL.md").is_file());
    assert!(skills.join("mine/SKILL.md").is_file());
    assert!(skills.join("deploy-nightly/SKILL.md").is_file());
    let usage: Value =
        serde_json::from_str(&std::fs::read_to_string(skills.join(".usage.json")).unwrap())
            .unwrap();
    assert_eq!(usage["git-workflows"]["created_by"], "agent");

    assert!(out.contains("curator: snapshot created ("), "{out}");
    assert!(
        out.contains("curator: consolidation on curator-model ("),
        "{out}"
    );
    assert!(
        out.contains("  created: git-workflows\n  consolidated: git-rebase-fix → git-workflows\n"),
        "{out}"
    );
    let s = state(&home);
    let summary = s["last_run_summary"].as_str().unwrap();
    assert!(
        summary.starts_with("auto: no changes; llm: Merged the git cluster into git-workflows."),
        "{summary}"
    );
    assert!(out.contains(&format!("curator: {summary}\n")), "{out}");
    let report = s["last_report_path"].as_str().unwrap();
    let text = std::fs::read_to_string(report).unwrap();
    assert!(
        text.contains("- archived `git-rebase-fix`, absorbed into `git-workflows`"),
        "{text}"
    );
    assert!(report.contains("/logs/curator/"), "{report}");

    // The pass is a stored session, out of the way of the user's.
    let listed = stdout(&run(&home, &["sessions", "list"]));
    assert!(!listed.contains("curator"), "{listed}");
    let all = stdout(&run(&home, &["sessions", "list", "--all", "--json"]));
    let sessions: Value = serde_json::from_str(&all).unwrap();
    assert!(
        sessions
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["source"] == "curator"),
        "{all}"
    );
}

#[test]
fn a_dry_run_consolidation_changes_nothing() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "skill_manage",
            json!({"action": "delete", "name": "git-rebase-fix", "absorbed_into": "git-merge-conflicts"}),
        ),
        Turn::text("Would merge git-rebase-fix into git-merge-conflicts."),
    ]));
    let home = home_with_skills("", &server);
    let skills = home.hermes_home().join("skills");
    let before = std::fs::read_to_string(skills.join(".usage.json")).unwrap();
    let o = run(&home, &["curator", "run", "--dry-run", "--consolidate"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    let prompt = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("DRY-RUN — REPORT ONLY."), "{prompt}");
    assert!(
        last_tool_result(&requests[1]).contains("dry run: `delete` is not carried out"),
        "{}",
        last_tool_result(&requests[1])
    );
    assert!(skills.join("git-rebase-fix/SKILL.md").is_file());
    assert_eq!(
        std::fs::read_to_string(skills.join(".usage.json")).unwrap(),
        before
    );
    assert!(
        !skills.join(".curator_state").exists(),
        "a dry run records nothing"
    );
    assert!(out.contains("dry-run: no changes applied."), "{out}");
    assert!(out.contains("curator: report "), "{out}");
}

#[test]
fn a_due_consolidating_pass_runs_in_its_own_process_after_a_one_shot() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("hello"),
        Turn::text("Nothing to merge: each skill is already its own class."),
    ]));
    let home = home_with_skills("curator:\n  consolidate: true\n", &server);
    home.write_file(
        "skills/.curator_state",
        &json!({"last_run_at": iso_at(now() - 8.0 * 86_400.0), "run_count": 1, "paused": false})
            .to_string(),
    );
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "hello\n");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let summary = state(&home)["last_run_summary"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if summary.contains("llm: Nothing to merge") {
            assert_eq!(state(&home)["run_count"], 2);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no consolidation recorded: {summary}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(server.chat_requests().len(), 2);
}
