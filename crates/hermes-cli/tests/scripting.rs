//! The scripting surface through the binary: `hermes completion`, `--json` on the listings,
//! the export forms of both Hermes versions, the "not in this build" answer for the Python
//! Hermes's commands we lack, and doctor's check of `cron/jobs.json`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::Value;

fn json_of(o: &std::process::Output) -> Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn lines_of(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn completion_scripts_for_each_shell() {
    let home = TestHome::new();
    let bash = run(&home, &["completion"]);
    assert!(bash.status.success(), "{}", stderr(&bash));
    assert!(stdout(&bash).contains("complete -F"), "{}", stdout(&bash));
    let zsh = run(&home, &["completion", "zsh"]);
    assert!(stdout(&zsh).starts_with("#compdef hermes"));
    let fish = run(&home, &["completion", "fish"]);
    assert!(stdout(&fish).contains("complete -c hermes"));
    assert!(stdout(&fish).contains("sessions"));
    let bad = run(&home, &["completion", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn python_only_commands_say_so_and_typos_get_clap_suggestions() {
    let home = TestHome::new();
    let o = run(&home, &["insights", "--days", "7"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "hermes: `hermes insights` is not in this build (the Python Hermes has it); `hermes --help` lists the commands this one has\n"
    );
    let flagged = run(&home, &["-m", "some-model", "backup"]);
    assert_eq!(flagged.status.code(), Some(2));
    assert!(stderr(&flagged).contains("`hermes backup` is not in this build"));
    let typo = run(&home, &["sesions", "list"]);
    assert_eq!(typo.status.code(), Some(2));
    assert!(stderr(&typo).contains("sessions"), "{}", stderr(&typo));
    assert!(!stderr(&typo).contains("not in this build"));
}

#[test]
fn sessions_list_json_and_every_export_form() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("First answer."),
        Turn::text("Second answer."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    for prompt in ["first question", "second question"] {
        let o = run(&home, &["-z", prompt]);
        assert!(o.status.success(), "{}", stderr(&o));
    }

    let listed = json_of(&run(&home, &["sessions", "list", "--json"]));
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["preview"], "second question");
    assert_eq!(listed[1]["title"], "first question");
    assert_eq!(listed[0]["message_count"], 2);
    assert_eq!(listed[0]["source"], "cli");
    assert!(listed[0].get("system_prompt").is_none(), "{}", listed[0]);
    let newest = listed[0]["id"].as_str().unwrap().to_string();
    let oldest = listed[1]["id"].as_str().unwrap().to_string();

    // No id: every session, oldest first, one line each.
    let all = run(&home, &["sessions", "export"]);
    assert!(all.status.success(), "{}", stderr(&all));
    let records = lines_of(&stdout(&all));
    let ids: Vec<&str> = records.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [oldest.as_str(), newest.as_str()]);
    assert_eq!(records[1]["messages"][1]["content"], "Second answer.");

    // The Python form: OUT --session-id ID.
    let out = home.workdir().join("one.jsonl");
    let o = run(
        &home,
        &[
            "sessions",
            "export",
            out.to_str().unwrap(),
            "--session-id",
            &oldest,
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let one = lines_of(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["id"], oldest.as_str());

    // A path without an id: every session into the file; `-` is stdout.
    let everything = home.workdir().join("all.jsonl");
    let o = run(&home, &["sessions", "export", everything.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        lines_of(&std::fs::read_to_string(&everything).unwrap()).len(),
        2
    );
    let dash = run(&home, &["sessions", "export", "-", "--session-id", &newest]);
    assert_eq!(lines_of(&stdout(&dash))[0]["id"], newest.as_str());

    // Our own form still works, and a word that is neither a session nor a path is an error.
    let ours = run(
        &home,
        &["sessions", "export", &newest, "--format", "sharegpt"],
    );
    assert_eq!(
        lines_of(&stdout(&ours))[0]["conversations"][1]["value"],
        "second question"
    );
    let typo = run(&home, &["sessions", "export", "nosuchsession"]);
    assert_eq!(typo.status.code(), Some(2), "{}", stderr(&typo));
    assert!(
        stderr(&typo).contains("no session matches"),
        "{}",
        stderr(&typo)
    );
    let twice = run(
        &home,
        &[
            "sessions",
            "export",
            "a.jsonl",
            "--session-id",
            &newest,
            "-o",
            "b.jsonl",
        ],
    );
    assert_eq!(twice.status.code(), Some(2));
    assert!(!home.workdir().join("a.jsonl").exists());
}

#[test]
fn status_tools_skills_and_cron_lists_as_json() {
    let home = TestHome::new();
    home.write_config(
        "model:\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n  api_key: k\n  default: anthropic/claude-sonnet-4\n",
    );
    let status = json_of(&run(&home, &["status", "--json"]));
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(status["model"], "anthropic/claude-sonnet-4");
    assert!(status["provider"].as_str().unwrap().starts_with("custom"));
    for key in [
        "home",
        "config",
        "env",
        "tools",
        "memory",
        "sessions",
        "local_model",
    ] {
        assert!(status[key].is_string(), "{key} in {status}");
    }

    let tools = json_of(&run(&home, &["tools", "list", "--json"]));
    let toolsets = tools["toolsets"].as_array().unwrap();
    let terminal = toolsets.iter().find(|t| t["name"] == "terminal").unwrap();
    assert_eq!(terminal["enabled"], true);
    assert!(
        terminal["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "terminal" && t["available"] == true),
        "{terminal}"
    );
    assert!(tools["source"].is_string() && tools["selected"].is_array());
    let narrowed = json_of(&run(&home, &["-t", "file", "tools", "list", "--json"]));
    assert_eq!(narrowed["source"], "-t");
    let terminal = narrowed["toolsets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "terminal")
        .unwrap()
        .clone();
    assert_eq!(terminal["enabled"], false);

    assert_eq!(
        json_of(&run(&home, &["skills", "list", "--json"])),
        Value::Array(vec![])
    );
    home.write_file(
        "skills/devops/deploy-check/SKILL.md",
        "---\nname: deploy-check\ndescription: Check a deploy.\nversion: 1.2.0\n---\n# Steps\n",
    );
    let skills = json_of(&run(&home, &["skills", "list", "--json"]));
    assert_eq!(skills[0]["name"], "deploy-check");
    assert_eq!(skills[0]["category"], "devops");
    assert_eq!(skills[0]["description"], "Check a deploy.");
    assert_eq!(skills[0]["version"], "1.2.0");
    assert_eq!(skills[0]["offered"], true);
    assert_eq!(skills[0]["not_offered_because"], Value::Null);
    assert_eq!(skills[0]["origin"], "user");
    assert_eq!(skills[0]["state"], "active");
    assert_eq!(skills[0]["pinned"], false);

    assert_eq!(
        json_of(&run(&home, &["cron", "list", "--json"])),
        Value::Array(vec![])
    );
    let added = run(
        &home,
        &[
            "cron",
            "add",
            "every 2h",
            "check the build",
            "--name",
            "build",
        ],
    );
    assert!(added.status.success(), "{}", stderr(&added));
    let jobs = json_of(&run(&home, &["cron", "list", "--json"]));
    assert_eq!(jobs[0]["name"], "build");
    assert_eq!(jobs[0]["prompt"], "check the build");
    assert_eq!(jobs[0]["schedule"]["kind"], "interval");
    assert_eq!(jobs[0]["schedule"]["minutes"], 120);
}

#[test]
fn doctor_checks_the_cron_jobs_file() {
    let home = TestHome::new();
    home.write_config("model:\n  provider: local\n");
    let added = run(
        &home,
        &[
            "cron",
            "add",
            "every 2h",
            "check the build",
            "--name",
            "build",
        ],
    );
    assert!(added.status.success(), "{}", stderr(&added));
    let fine = run(&home, &["doctor", "--offline"]);
    assert!(
        stdout(&fine).contains("cron/jobs.json: 1 job (1 active, 0 paused)"),
        "{}",
        stdout(&fine)
    );
    home.write_file("cron/jobs.json", "{\"jobs\": [");
    let broken = run(&home, &["doctor", "--offline"]);
    assert_eq!(broken.status.code(), Some(1), "{}", stdout(&broken));
    let text = stdout(&broken);
    assert!(
        text.contains("cron/jobs.json cannot be read (not valid JSON"),
        "{text}"
    );
    assert!(text.contains("jobs.json.bad"), "{text}");
}
