//! The board from a chat, through `hermes gateway` on the Telegram double: the agent puts a
//! task on the board with `kanban_create` (the chat is subscribed to it), the gateway's own
//! dispatcher starts the worker profile, and when the worker completes, the chat is told.
//! `/kanban list` and `/kanban show` answer in the chat.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::gateway::Gateway;
use hermes_testkit::platforms::telegram::TelegramMock;
use hermes_testkit::{MockServer, Script, TestHome, Turn, mock_config_yaml};
use serde_json::{Value, json};

const TOKEN: &str = "123456:TEST-token";
const ANN: i64 = 4242;

fn tool_results(req: &Value) -> Vec<String> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn first_user(req: &Value) -> String {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn wait_text(telegram: &TelegramMock, what: &str, want: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        if let Some(m) = telegram.messages(ANN).into_iter().find(|m| want(&m.text)) {
            return m.text;
        }
        assert!(
            Instant::now() < deadline,
            "no message {what}; the bot sent: {:#?}",
            telegram.messages(ANN)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_task_created_in_a_chat_is_dispatched_and_its_completion_is_told_in_the_chat() {
    let model = MockServer::start(Script::responding(|req| {
        let results = tool_results(req);
        if first_user(req).starts_with("work kanban task ") {
            return match results.len() {
                0 => Turn::tool("kanban_show", json!({})),
                1 => Turn::tool(
                    "kanban_complete",
                    json!({"summary": "Found three solar studies."}),
                ),
                _ => Turn::text("done"),
            };
        }
        match results.len() {
            0 => Turn::tool(
                "kanban_create",
                json!({"title": "Research solar studies", "assignee": "researcher"}),
            ),
            _ => Turn::text("It is on the board; I will tell you when it is done."),
        }
    }));
    let telegram = TelegramMock::start(TOKEN);
    let home = TestHome::new();
    let mut yaml = mock_config_yaml(&model);
    yaml.push_str(&format!(
        "platforms:\n  telegram:\n    enabled: true\n    extra:\n      base_url: {}\n      base_file_url: {}\nplatform_toolsets:\n  telegram:\n    - kanban\nkanban:\n  dispatch_interval_seconds: 1\n",
        telegram.base_url(),
        telegram.base_file_url()
    ));
    home.write_config(&yaml);
    home.write_file(
        ".env",
        &format!("TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_ALLOWED_USERS={ANN}\n"),
    );
    let researcher = home.hermes_home().join("profiles/researcher");
    std::fs::create_dir_all(&researcher).unwrap();
    std::fs::write(researcher.join("config.yaml"), mock_config_yaml(&model)).unwrap();
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "telegram started");

    telegram.dm(ANN, "Ann", "Please research solar studies for me");
    wait_text(&telegram, "the agent's answer", |t| {
        t.starts_with("It is on the board")
    });
    let done = wait_text(&telegram, "the completion notice", |t| {
        t.starts_with("✅ Task ")
    });
    let id = done
        .strip_prefix("✅ Task ")
        .and_then(|r| r.split_once(' '))
        .map(|(id, _)| id.to_string())
        .unwrap();
    assert_eq!(
        done,
        format!("✅ Task {id} done: Research solar studies\nFound three solar studies.")
    );

    telegram.dm(ANN, "Ann", "/kanban list");
    let listed = wait_text(&telegram, "the board", |t| t.starts_with(&id));
    assert_eq!(
        listed,
        format!("{id} done · researcher · Research solar studies")
    );
    telegram.dm(ANN, "Ann", &format!("/kanban show {id}"));
    let shown = wait_text(&telegram, "the task", |t| t.contains("latest: "));
    assert_eq!(
        shown,
        format!(
            "{id} · Research solar studies\nstatus done · assignee researcher\nlatest: Found three solar studies."
        )
    );
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
