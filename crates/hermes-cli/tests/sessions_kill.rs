//! Sessions survive `kill -9`. The interactive binary runs a scripted multi-tool turn and is
//! killed with SIGKILL at one stage each time: while the answer streams, while a tool runs, and
//! between turns. Resuming must show every message that had been printed and continue with a
//! valid conversation (every tool call answered) that the model receives in full.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_testkit::{MockServer, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

/// A running REPL whose stdout is collected as it comes.
struct Live {
    child: Child,
    stdin: ChildStdin,
    out: Arc<Mutex<String>>,
}

impl Live {
    fn start(home: &TestHome, args: &[&str]) -> Live {
        let mut child = home
            .command(bin())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Live { child, stdin, out }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn stdout(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    fn wait_for_output(&self, needle: &str) {
        wait_until(&format!("stdout shows {needle:?}"), || {
            self.stdout().contains(needle)
        });
    }

    /// SIGKILL once the output has been quiet for longer than the store's streaming commit
    /// interval (100 ms): whatever is on screen by then must be in the database.
    fn kill_9(mut self) -> String {
        std::thread::sleep(Duration::from_millis(400));
        let shown = self.stdout();
        Command::new("kill")
            .args(["-KILL", &self.child.id().to_string()])
            .status()
            .unwrap();
        let status = self.child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
        std::thread::sleep(Duration::from_millis(50));
        let after = self.stdout();
        assert_eq!(after, shown, "nothing was printed after the last look");
        shown
    }
}

fn wait_until(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The first reply of the turn: some text, then a read and a shell command.
fn tool_round(command: &str) -> Turn {
    Reply::tool_calls(vec![
        ("read_file", json!({"path": "notes.txt"})),
        ("terminal", json!({"command": command})),
    ])
    .with_content("I'll check two things.\n")
    .into()
}

fn home_with(server: &MockServer) -> TestHome {
    let home = TestHome::new();
    home.write_mock_config(server);
    std::fs::write(home.workdir().join("notes.txt"), "hello from the notes\n").unwrap();
    home
}

/// Resumes with `args` (plus one new message) against a server that answers once, and checks
/// that everything shown before the kill is shown again and the conversation continues.
fn resume_and_check(home: &TestHome, args: &[&str], shown_before: &str) -> Vec<Value> {
    let server = MockServer::start(Script::new(vec![Turn::text("Resumed fine.")]));
    home.write_mock_config(&server);
    let o = run_with_stdin(home, args, "please go on\n");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.starts_with("Resumed session "), "{out}");
    for line in shown_before
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        let expected = match line.strip_prefix("✓ ").or_else(|| line.strip_prefix("✗ ")) {
            // `✓ terminal  echo hi  (0.01s)` was shown live; the recap lists the call.
            Some(tool) => format!("· {}", tool.rsplit_once("  (").map_or(tool, |(l, _)| l)),
            None => line.to_string(),
        };
        assert!(
            out.contains(&expected),
            "missing {expected:?} in the recap:\n{out}"
        );
    }
    assert!(out.trim_end().ends_with("Resumed fine."), "{out}");

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1);
    let messages = requests[0]["messages"].as_array().unwrap().clone();
    assert_eq!(messages.last().unwrap()["content"], "please go on");
    assert_every_call_answered(&messages);
    messages
}

fn assert_every_call_answered(messages: &[Value]) {
    for (i, m) in messages.iter().enumerate() {
        let Some(calls) = m["tool_calls"].as_array() else {
            continue;
        };
        for (k, call) in calls.iter().enumerate() {
            let answer = &messages[i + 1 + k];
            assert_eq!(answer["role"], "tool", "{messages:#?}");
            assert_eq!(answer["tool_call_id"], call["id"], "{messages:#?}");
        }
    }
}

fn roles(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect()
}

#[test]
fn killed_while_the_answer_streams() {
    let server = MockServer::start(Script::new(vec![
        tool_round("echo tool-ran"),
        Reply::text("Both done: the notes say hello.\nThe rest never arrives.")
            .with_chunk_size(32)
            .with_chunk_delay_ms(3_000)
            .into(),
    ]));
    let home = home_with(&server);
    let mut live = Live::start(&home, &[]);
    live.say("check the notes");
    live.wait_for_output("Both done: the notes say hello.");
    let shown = live.kill_9();
    assert!(
        !shown.contains("never arrives"),
        "killed mid-stream: {shown}"
    );

    let messages = resume_and_check(&home, &["--continue"], &shown);
    assert_eq!(
        roles(&messages),
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "user"
        ]
    );
    assert!(
        messages[4]["content"]
            .as_str()
            .unwrap()
            .contains("tool-ran")
    );
    assert_eq!(messages[5]["content"], "Both done: the notes say hello.\n");
}

#[test]
fn killed_while_a_tool_runs() {
    let server = MockServer::start(Script::new(vec![tool_round(
        "echo $$ > tool.pid; exec sleep 30",
    )]));
    let home = home_with(&server);
    let pid_file = home.workdir().join("tool.pid");
    let mut live = Live::start(&home, &[]);
    live.say("check the notes");
    wait_until("the tool runs", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'))
    });
    live.wait_for_output("✓ read_file");
    let shown = live.kill_9();
    let tool_pid = std::fs::read_to_string(&pid_file).unwrap();
    let _ = Command::new("kill")
        .args(["-KILL", tool_pid.trim()])
        .status();

    let messages = resume_and_check(&home, &["--continue"], &shown);
    assert_eq!(
        roles(&messages),
        ["system", "user", "assistant", "tool", "tool", "user"]
    );
    assert_eq!(messages[2]["content"], "I'll check two things.\n");
    // The result shown before the kill (✓ read_file) was committed as it completed; the call
    // the kill cut off is closed.
    assert!(
        messages[3]["content"]
            .as_str()
            .unwrap()
            .contains("hello from the notes"),
        "the finished result survives: {}",
        messages[3]
    );
    assert!(
        messages[4]["content"]
            .as_str()
            .unwrap()
            .contains("interrupted"),
        "the call cut off by the kill is closed: {}",
        messages[4]
    );
}

#[test]
fn killed_between_turns() {
    let server = MockServer::start(Script::new(vec![
        tool_round("echo tool-ran"),
        Turn::text("All done here."),
    ]));
    let home = home_with(&server);
    let mut live = Live::start(&home, &[]);
    live.say("check the notes");
    live.wait_for_output("All done here.");
    let shown = live.kill_9();

    let store = hermes_store::Store::open(home.hermes_home().join("sessions.db")).unwrap();
    let id = store.latest_session(None).unwrap().unwrap().id;
    let messages = resume_and_check(&home, &["--resume", &id], &shown);
    assert_eq!(
        roles(&messages),
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "user"
        ]
    );
    assert_eq!(messages[5]["content"], "All done here.");

    let stored = store.messages(&id).unwrap();
    assert_eq!(
        stored.len(),
        7,
        "the resumed turn went into the same session"
    );
    assert!(stored.iter().all(|m| !m.partial));
    assert_eq!(stored[5].message.content, "please go on");
    assert_eq!(stored[6].message.content, "Resumed fine.");
}
