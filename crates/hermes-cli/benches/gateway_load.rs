//! Load on one `hermes gateway`: `CHATS` Telegram chats (50) talk at once, each sending
//! `ROUNDS` messages (10) one after the other (the next once the previous is answered), to the
//! real binary against the testkit's Bot API double and a scripted model that answers each
//! message with its own text. Checks that every message is answered exactly once and in order
//! per chat, and prints the throughput, the gateway's resident memory before and after, and its
//! peak (VmHWM). A measurement, not a timed test: `cargo bench -p hermes-cli --bench
//! gateway_load` (environment `GATEWAY_LOAD_CHATS` / `GATEWAY_LOAD_ROUNDS` change the load).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hermes_testkit::platforms::telegram::TelegramMock;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::Value;

const TOKEN: &str = "123456:LOAD-token";

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: both run it once.
    let chats = setting("GATEWAY_LOAD_CHATS", 50) as i64;
    let rounds = setting("GATEWAY_LOAD_ROUNDS", 10);
    let model = MockServer::start(Script::responding(|request| {
        let said = last_user_text(request);
        let said = said.rsplit('\n').next().unwrap_or_default().to_string();
        Turn::text(format!("echo {said}"))
    }));
    let telegram = TelegramMock::start(TOKEN);
    let home = TestHome::new();
    let mut yaml = hermes_testkit::mock_config_yaml(&model);
    yaml.push_str(&format!(
        "platforms:\n  telegram:\n    enabled: true\n    extra:\n      base_url: {}\n",
        telegram.base_url()
    ));
    home.write_config(&yaml);
    home.write_file(
        ".env",
        &format!("TELEGRAM_BOT_TOKEN={TOKEN}\nGATEWAY_ALLOW_ALL_USERS=true\n"),
    );
    let mut child = home
        .command(std::path::Path::new(env!("CARGO_BIN_EXE_hermes")))
        .args(["gateway", "run", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the gateway");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..2 {
        line.clear();
        stdout.read_line(&mut line).unwrap();
    }
    assert_eq!(line.trim(), "telegram started");
    let pid = child.id();
    let (rss_start, _) = memory(pid);

    let started = Instant::now();
    let first_user = 1_000_000i64;
    // Round r: every chat sends message r, then waits until each chat has r answers.
    for round in 0..rounds {
        for c in 0..chats {
            telegram.dm(first_user + c, "Load", &format!("chat {c} message {round}"));
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            // The answer streams in by edits: a chat is done once its message is complete.
            let done = (0..chats).all(|c| {
                let want = format!("echo chat {c} message {round}");
                telegram
                    .messages(first_user + c)
                    .iter()
                    .any(|m| !m.deleted && m.text == want)
            });
            if done {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: not every chat was answered in 2 minutes"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let elapsed = started.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    let (rss_end, hwm) = memory(pid);

    // Exactly once, in order, per chat.
    for c in 0..chats {
        let answers: Vec<String> = telegram
            .messages(first_user + c)
            .into_iter()
            .filter(|m| !m.deleted)
            .map(|m| m.text)
            .collect();
        let expected: Vec<String> = (0..rounds)
            .map(|r| format!("echo chat {c} message {r}"))
            .collect();
        assert_eq!(answers, expected, "chat {c}");
    }
    let total = chats as usize * rounds;
    assert_eq!(
        model.chat_request_count(),
        total,
        "one model call per message"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();
    println!(
        "gateway_load: {chats} chats x {rounds} messages = {total} answered once and in order in {:.2} s: {:.0} messages/s; RSS {:.1} MiB at start, {:.1} MiB after, peak {:.1} MiB",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        rss_start as f64 / 1024.0,
        rss_end as f64 / 1024.0,
        hwm as f64 / 1024.0,
    );
}
