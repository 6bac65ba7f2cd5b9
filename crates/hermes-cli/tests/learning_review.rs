//! The background review (the learning loop's trigger) through the real binary against the
//! scripted mock: a one-shot session where the user states a preference and the agent makes
//! eleven tool calls; the mock then plays the review model. Asserted: the review request
//! replays the session's request byte for byte (system prompt, tools, conversation) and adds
//! only its question; it arrives after the answer is on stdout; its writes land in USER.md and
//! a new SKILL.md (marked the agent's), are announced on stderr, and a fresh session carries
//! both in its system prompt; the review is stored as a `review` session that `sessions list`
//! shows only with `--all`. Also: intervals of 0 mean no review, `display.learning_notices:
//! false` silences the notices, a refused tool never runs, and a review routed to
//! `auxiliary.background_review`'s model offers only the memory and skill tools and replays a
//! digest; the interactive chat shows the notices after the answer, and a Telegram chat (on
//! the testkit's Bot API double) gets them as messages after the answer; the API server
//! reviews too and lists the review session only among children.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hermes_testkit::{MockServer, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

const PREFERENCE: &str = "User prefers CSV reports sorted by date, newest first.";
const SKILL: &str = "---\nname: csv-reports\ndescription: Build CSV reports from the shell, sorted newest first.\n---\n\n1. Collect rows with one command per source.\n2. Sort by date, newest first.\n";

/// Whether `request` is a review's: its last user message is the review's question.
fn is_review(request: &Value) -> bool {
    request["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .is_some_and(|c| c.starts_with("Look back over the conversation above"))
}

/// The mock: the session makes `tool_calls` terminal calls then answers; a review request is
/// answered from `review` in order, after the stdout file's content at that moment is noted.
struct Mock {
    server: MockServer,
    stdout_at_review: Arc<Mutex<Option<String>>>,
}

fn mock(tool_calls: usize, review: Vec<Turn>, stdout_file: Option<std::path::PathBuf>) -> Mock {
    let main = AtomicUsize::new(0);
    let reviewed = AtomicUsize::new(0);
    let seen = Arc::new(Mutex::new(None));
    let noted = seen.clone();
    let server = MockServer::start(Script::responding(move |request| {
        if is_review(request) {
            let i = reviewed.fetch_add(1, Ordering::SeqCst);
            if i == 0
                && let Some(path) = &stdout_file
            {
                *noted.lock().unwrap() = Some(std::fs::read_to_string(path).unwrap_or_default());
            }
            return review
                .get(i)
                .cloned()
                .unwrap_or_else(|| Turn::text("Nothing to save."));
        }
        let i = main.fetch_add(1, Ordering::SeqCst);
        if i < tool_calls {
            Turn::tool("terminal", json!({"command": format!("echo step {i}")}))
        } else {
            Turn::text("Report ready: 3 rows, newest first.")
        }
    }));
    Mock {
        server,
        stdout_at_review: seen,
    }
}

fn home_with(server: &MockServer, extra: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}{extra}",
        hermes_testkit::mock_config_yaml(server)
    ));
    home
}

/// The review writing the preference and a skill in one reply, then done.
fn learning_review() -> Vec<Turn> {
    vec![
        Turn::Reply(Reply::tool_calls(vec![
            (
                "memory",
                json!({"action": "add", "target": "user", "content": PREFERENCE}),
            ),
            (
                "skill_manage",
                json!({"action": "create", "name": "csv-reports", "content": SKILL}),
            ),
        ])),
        Turn::text("Saved the preference and a skill."),
    ]
}

fn chat_bodies(server: &MockServer) -> Vec<Value> {
    server.chat_requests()
}

/// `hermes -z PROMPT` with stdout in a file (so the mock can see what was printed when the
/// review's request arrived); returns (stdout, stderr, success).
fn one_shot_to_file(
    home: &TestHome,
    prompt: &str,
    stdout_file: &std::path::Path,
) -> (String, String, bool) {
    let out = std::fs::File::create(stdout_file).unwrap();
    let o = home
        .command(bin())
        .args(["-z", prompt])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        std::fs::read_to_string(stdout_file).unwrap(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.success(),
    )
}

#[test]
fn the_review_learns_a_preference_and_a_skill_that_the_next_session_knows() {
    let scratch = tempfile::tempdir().unwrap();
    let stdout_file = scratch.path().join("stdout");
    let m = mock(11, learning_review(), Some(stdout_file.clone()));
    let home = home_with(&m.server, "memory:\n  nudge_interval: 1\n");
    let prompt =
        "I like CSV reports sorted by date, newest first. Build me the report from the three logs.";
    let (out, err, ok) = one_shot_to_file(&home, prompt, &stdout_file);
    assert!(ok, "{err}");
    assert_eq!(out, "Report ready: 3 rows, newest first.\n");

    let requests = chat_bodies(&m.server);
    assert_eq!(requests.len(), 12 + 2, "12 session calls, 2 review calls");
    let (session, review) = requests.split_at(12);
    assert!(session.iter().all(|r| !is_review(r)));
    assert!(review.iter().all(is_review));
    let last = &session[11];
    let first_review = &review[0];

    // The answer was on stdout when the review's first request arrived.
    assert_eq!(
        m.stdout_at_review.lock().unwrap().as_deref(),
        Some("Report ready: 3 rows, newest first.\n")
    );

    // The same model, system prompt and tools: the provider's cache holds the whole prefix.
    assert_eq!(first_review["model"], last["model"]);
    assert_eq!(first_review["tools"], last["tools"]);
    let names: Vec<&str> = first_review["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"memory") && names.contains(&"skill_manage"),
        "{names:?}"
    );
    assert!(
        names.contains(&"terminal"),
        "offered (refused if called): {names:?}"
    );
    // The conversation replayed as is: the session's last request, its answer, the question.
    let replayed = first_review["messages"].as_array().unwrap();
    let sent = last["messages"].as_array().unwrap();
    assert_eq!(replayed.len(), sent.len() + 2);
    assert_eq!(replayed[..sent.len()], sent[..]);
    assert_eq!(replayed[sent.len()]["role"], "assistant");
    assert_eq!(
        replayed[sent.len()]["content"],
        "Report ready: 3 rows, newest first."
    );
    let question = replayed.last().unwrap()["content"].as_str().unwrap();
    // Both were due (1 user turn, 12 model calls): the combined question.
    assert!(question.contains("update two things"), "{question}");
    assert!(
        question.contains("any other tool call is refused"),
        "{question}"
    );

    // The writes, and their notices on stderr.
    let user_md = std::fs::read_to_string(home.hermes_home().join("memories/USER.md")).unwrap();
    assert!(user_md.contains(PREFERENCE), "{user_md}");
    let skill_md =
        std::fs::read_to_string(home.hermes_home().join("skills/csv-reports/SKILL.md")).unwrap();
    assert_eq!(skill_md, SKILL);
    let usage: Value = serde_json::from_str(
        &std::fs::read_to_string(home.hermes_home().join("skills/.usage.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(usage["csv-reports"]["created_by"], "agent");
    assert!(err.contains("💾 memory updated\n"), "{err}");
    assert!(err.contains("📚 skill saved: csv-reports\n"), "{err}");
    let o = run(&home, &["skills"]);
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l.starts_with("csv-reports") && l.contains(" agent ")),
        "{}",
        stdout(&o)
    );

    // The review is its own session, hidden from the list unless --all.
    let listed = |args: &[&str]| -> Vec<Value> {
        let o = run(&home, args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str::<Vec<Value>>(&stdout(&o)).unwrap()
    };
    let shown = listed(&["sessions", "list", "--json"]);
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert_eq!(shown[0]["source"], "cli");
    let all = listed(&["sessions", "list", "--json", "--all"]);
    assert_eq!(all.len(), 2, "{all:?}");
    let review_session = all.iter().find(|s| s["source"] == "review").unwrap();
    assert_eq!(review_session["parent_session_id"], shown[0]["id"]);
    let review_id = review_session["id"].as_str().unwrap();
    assert!(!stdout(&run(&home, &["sessions", "list"])).contains(review_id));
    assert!(stdout(&run(&home, &["sessions", "list", "--all"])).contains(review_id));
    let shown_review = stdout(&run(&home, &["sessions", "show", review_id]));
    assert!(shown_review.contains("csv-reports"), "{shown_review}");

    // A fresh session: the skill in the index, the preference in the memory block.
    let o = run(&home, &["-z", "hello"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fresh = &chat_bodies(&m.server)[14];
    assert_eq!(fresh["messages"][1]["content"], "hello");
    let system = fresh["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains(PREFERENCE), "{system}");
    assert!(system.contains("csv-reports"), "{system}");
}

#[test]
fn intervals_of_zero_mean_no_review() {
    let m = mock(11, learning_review(), None);
    let home = home_with(
        &m.server,
        "memory:\n  nudge_interval: 0\nskills:\n  creation_nudge_interval: 0\n",
    );
    let o = run(&home, &["-z", "I like CSV. Build the report."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let requests = chat_bodies(&m.server);
    assert_eq!(requests.len(), 12);
    assert!(requests.iter().all(|r| !is_review(r)));
    assert!(!home.hermes_home().join("skills/csv-reports").exists());
}

#[test]
fn the_default_intervals_wait_for_ten_calls() {
    // Nine tool calls and one user turn: neither the memory (10 turns) nor the skill review
    // (10 model calls) is due yet.
    let m = mock(8, learning_review(), None);
    let home = home_with(&m.server, "");
    let o = run(&home, &["-z", "Build the report."]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(chat_bodies(&m.server).len(), 9);
    // With ten model calls the skill review runs, asking about skills only.
    let m = mock(9, vec![Turn::text("Nothing to save.")], None);
    let home = home_with(&m.server, "");
    let o = run(&home, &["-z", "Build the report."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let requests = chat_bodies(&m.server);
    assert_eq!(requests.len(), 11);
    let question = requests[10]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(question.contains("improve the skill library"), "{question}");
    assert!(!stderr(&o).contains("💾") && !stderr(&o).contains("📚"));
}

#[test]
fn notices_off_means_no_notice_line() {
    let m = mock(11, learning_review(), None);
    let home = home_with(
        &m.server,
        "memory:\n  nudge_interval: 1\ndisplay:\n  learning_notices: false\n",
    );
    let o = run(&home, &["-z", "I like CSV. Build the report."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let user_md = std::fs::read_to_string(home.hermes_home().join("memories/USER.md")).unwrap();
    assert!(user_md.contains(PREFERENCE), "the review ran: {user_md}");
    let err = stderr(&o);
    assert!(!err.contains("memory updated"), "{err}");
    assert!(!err.contains("skill saved"), "{err}");
}

#[test]
fn a_refused_tool_never_runs() {
    let marker = "review-was-here";
    let m = mock(
        0,
        vec![
            Turn::tool("terminal", json!({"command": format!("touch {marker}")})),
            Turn::text("Nothing to save."),
        ],
        None,
    );
    let home = home_with(&m.server, "memory:\n  nudge_interval: 1\n");
    let o = run(&home, &["-z", "I like CSV."]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!home.workdir().join(marker).exists(), "the command ran");
    let requests = chat_bodies(&m.server);
    assert_eq!(requests.len(), 3);
    let result = requests[2]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(result["role"], "tool");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("Background review denied non-whitelisted tool: terminal"),
        "{content}"
    );
    assert!(!stderr(&o).contains("💾"), "nothing was written");
}

#[test]
fn a_review_routed_to_another_model_offers_only_its_tools_and_a_digest() {
    let m = mock(13, vec![Turn::text("Nothing to save.")], None);
    let extra = format!(
        "skills:\n  creation_nudge_interval: 5\nauxiliary:\n  background_review:\n    provider: custom\n    base_url: {}\n    api_key: sk-mock-aux\n    model: small-review-model\n",
        m.server.base_url()
    );
    let home = home_with(&m.server, &extra);
    let o = run(&home, &["-z", "Build the report."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let requests = chat_bodies(&m.server);
    assert_eq!(requests.len(), 15);
    let review = &requests[14];
    assert_eq!(review["model"], "small-review-model");
    let mut names: Vec<&str> = review["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["memory", "skill_manage", "skill_view", "skills_list"]
    );
    let messages = review["messages"].as_array().unwrap();
    // system, the digest, the last 24 messages (25: a tail never starts on a tool result),
    // the question.
    assert_eq!(messages.len(), 1 + 1 + 25 + 1, "{messages:?}");
    assert_eq!(messages[2]["role"], "assistant");
    let digest = messages[1]["content"].as_str().unwrap();
    assert!(
        digest.starts_with("[Digest of the earlier conversation"),
        "{digest}"
    );
    assert!(digest.contains("USER: Build the report."), "{digest}");
    assert!(digest.contains("ASSISTANT[tools: terminal]"), "{digest}");
}

#[test]
fn the_interactive_chat_shows_the_notices_and_waits_for_the_review_at_exit() {
    let m = mock(0, learning_review(), None);
    let home = home_with(&m.server, "memory:\n  nudge_interval: 1\n");
    let o = run_with_stdin(&home, &[], "I like CSV reports sorted newest first.\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let answer = out.find("Report ready: 3 rows, newest first.").expect(&out);
    let notice = out.find("  💾 memory updated\n").expect(&out);
    assert!(answer < notice, "{out}");
    assert!(out.contains("  📚 skill saved: csv-reports\n"), "{out}");
    let user_md = std::fs::read_to_string(home.hermes_home().join("memories/USER.md")).unwrap();
    assert!(user_md.contains(PREFERENCE), "{user_md}");
    // The memory review alone (one user turn, one model call): the memory question.
    let requests = chat_bodies(&m.server);
    assert_eq!(requests.len(), 3);
    let question = requests[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        question.contains("decide whether anything belongs in memory"),
        "{question}"
    );
}

#[test]
fn a_chat_platform_gets_the_notices_as_messages_after_the_answer() {
    use hermes_testkit::platforms::telegram::TelegramMock;
    const TOKEN: &str = "123456:TEST-token";
    const ANN: i64 = 4242;
    let m = mock(0, learning_review(), None);
    let telegram = TelegramMock::start(TOKEN);
    let home = home_with(
        &m.server,
        &format!(
            "memory:\n  nudge_interval: 1\nplatforms:\n  telegram:\n    enabled: true\n    extra:\n      base_url: {}\n      base_file_url: {}\n",
            telegram.base_url(),
            telegram.base_file_url()
        ),
    );
    home.write_file(
        ".env",
        &format!("TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_ALLOWED_USERS={ANN}\n"),
    );
    let mut gateway = common::gateway::Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "telegram started");
    telegram.dm(ANN, "Ann", "I like CSV reports sorted newest first.");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let texts = loop {
        let texts: Vec<String> = telegram
            .messages(ANN)
            .into_iter()
            .filter(|m| !m.deleted)
            .map(|m| m.text)
            .collect();
        if texts.iter().any(|t| t == "📚 skill saved: csv-reports") {
            break texts;
        }
        assert!(std::time::Instant::now() < deadline, "{texts:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(
        texts,
        [
            "Report ready: 3 rows, newest first.",
            "💾 memory updated",
            "📚 skill saved: csv-reports"
        ]
    );
    let (code, err) = gateway.terminate();
    assert_eq!(code, Some(0), "{err}");
    let user_md = std::fs::read_to_string(home.hermes_home().join("memories/USER.md")).unwrap();
    assert!(user_md.contains(PREFERENCE), "{user_md}");
}

#[test]
fn the_api_server_reviews_in_the_background_and_lists_reviews_only_as_children() {
    const AUTH: &str = "Authorization: Bearer k1";
    let m = mock(0, learning_review(), None);
    let home = home_with(&m.server, "memory:\n  nudge_interval: 1\n");
    home.write_file(".env", "API_SERVER_KEY=k1\n");
    let gw = common::gateway::Gateway::start(&home, &[]);
    let http = |method: &str, path: &str, body: &str| {
        hermes_testkit::http_client::http(&gw.addr, method, path, &[AUTH], body)
    };
    let r = http("POST", "/api/sessions", "{}");
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["session"]["id"].as_str().unwrap().to_string();
    let r = http(
        "POST",
        &format!("/api/sessions/{id}/chat"),
        r#"{"message": "I like CSV reports sorted newest first."}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["message"]["content"],
        "Report ready: 3 rows, newest first."
    );
    assert!(
        m.server
            .wait_for_chat_requests(3, std::time::Duration::from_secs(30))
    );
    let user_md = home.hermes_home().join("memories/USER.md");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(&user_md).is_ok_and(|t| t.contains(PREFERENCE)) {
        assert!(
            std::time::Instant::now() < deadline,
            "the review wrote nothing"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The review session is a child of the API session: listed only with include_children.
    let ids = |path: &str| -> Vec<(String, String)> {
        let r = http("GET", path, "");
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap().to_string(),
                    s["source"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    // (The review's row is committed by the store's writer thread: wait for it.)
    loop {
        let all = ids("/api/sessions?include_children=true");
        if all.iter().any(|(_, source)| source == "review") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{all:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(ids("/api/sessions"), [(id.clone(), "api".to_string())]);
}

/// `/resume` in the chat starts the user-turn count again, as Python's
/// `reset_session_state`: the resumed conversation's earlier turn counts at the next turn, so
/// with `nudge_interval: 2` the review is due on the first turn after the resume (and the
/// count towards it is kept across the switch, as Python keeps it).
#[test]
fn the_chat_counts_a_resumed_conversations_turns_towards_the_memory_review() {
    let m = mock(0, Vec::new(), None);
    let home = home_with(&m.server, "memory:\n  nudge_interval: 2\n");
    let o = run(&home, &["-z", "An earlier question."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let listed = run(&home, &["sessions", "list", "--json"]);
    let sessions: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let earlier = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "cli")
        .unwrap_or_else(|| panic!("{sessions}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let reviews = || chat_bodies(&m.server).into_iter().filter(is_review).count();
    assert_eq!(reviews(), 0, "one user turn: no review yet");

    let o = run_with_stdin(
        &home,
        &[],
        &format!("First.\nSecond.\n/resume {earlier}\nThird.\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let requests = chat_bodies(&m.server);
    // earlier, First, Second (a review due), Third (the resumed conversation's 2nd turn: a
    // review due). A review runs in the background, so its request may come after the next
    // turn's: the turns keep their order, the reviews are counted.
    let (reviews, turns): (Vec<&Value>, Vec<&Value>) = requests.iter().partition(|r| is_review(r));
    assert_eq!((reviews.len(), turns.len()), (2, 4), "{requests:#?}");
    let third = &turns[3]["messages"];
    assert!(
        third.to_string().contains("An earlier question."),
        "{third}"
    );
}
