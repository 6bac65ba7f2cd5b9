//! `hermes gateway` living in Telegram, end to end: the real binary against the testkit's Bot
//! API double and the scripted model server. A DM is answered in a stored `telegram` session;
//! an unknown user gets a pairing code and is let in once `hermes pairing approve` takes it; a
//! message sent mid-turn interrupts the turn and is answered next; `/new` starts a stored
//! session of its own; a dangerous command waits for the chat's buttons (and a silent chat
//! denies it); a long answer is split at Telegram's limit; a cron job's answer is delivered to
//! the chat, and `[SILENT]` is not; a job the agent creates in a chat delivers back to it;
//! `hermes gateway status` and `stop` find the process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::gateway::Gateway;
use common::run;
use hermes_testkit::platforms::telegram::{BotMessage, TelegramMock};
use hermes_testkit::{MockServer, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

const TOKEN: &str = "123456:TEST-token";
const ANN: i64 = 4242;

/// A gateway with Telegram on the double, its model on `script`.
struct Rig {
    model: MockServer,
    telegram: TelegramMock,
    home: TestHome,
    gateway: Option<Gateway>,
}

impl Rig {
    fn start(script: Script, extra_config: &str, extra_env: &str) -> Rig {
        let model = MockServer::start(script);
        let telegram = TelegramMock::start(TOKEN);
        let home = TestHome::new();
        let mut yaml = hermes_testkit::mock_config_yaml(&model);
        yaml.push_str(&format!(
            "platforms:\n  telegram:\n    enabled: true\n    extra:\n      base_url: {}\n      base_file_url: {}\n",
            telegram.base_url(),
            telegram.base_file_url()
        ));
        yaml.push_str(extra_config);
        home.write_config(&yaml);
        home.write_file(".env", &format!("TELEGRAM_BOT_TOKEN={TOKEN}\n{extra_env}"));
        let mut gateway = Gateway::start(&home, &[]);
        assert_eq!(gateway.next_line(), "telegram started");
        Rig {
            model,
            telegram,
            home,
            gateway: Some(gateway),
        }
    }

    /// Only Ann may talk.
    fn with_ann(script: Script, extra_config: &str) -> Rig {
        Rig::start(
            script,
            extra_config,
            &format!("TELEGRAM_ALLOWED_USERS={ANN}\n"),
        )
    }

    /// Waits until a bot message in `chat` satisfies `want` (as the user sees it now).
    fn wait_message(
        &self,
        chat: i64,
        what: &str,
        want: impl Fn(&BotMessage) -> bool,
    ) -> BotMessage {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(m) = self
                .telegram
                .messages(chat)
                .into_iter()
                .find(|m| !m.deleted && want(m))
            {
                return m;
            }
            assert!(
                Instant::now() < deadline,
                "no message {what} in chat {chat}; the bot sent: {:#?}",
                self.telegram.messages(chat)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_text(&self, chat: i64, text: &str) -> BotMessage {
        self.wait_message(chat, &format!("{text:?}"), |m| m.text == text)
    }

    fn stop(&mut self) -> String {
        let (code, stderr) = self.gateway.take().unwrap().terminate();
        assert_eq!(code, Some(0), "{stderr}");
        stderr
    }

    /// `(id, source)` of every stored session, oldest first.
    fn sessions(&self) -> Vec<(String, String)> {
        let db = rusqlite::Connection::open(self.home.hermes_home().join("sessions.db")).unwrap();
        let mut stmt = db
            .prepare("SELECT id, source FROM sessions ORDER BY started_at")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

/// The text of the last user message of a captured chat request.
fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_dm_is_answered_in_a_stored_telegram_session() {
    let mut rig = Rig::with_ann(
        Script::new(vec![Turn::text("Hello Ann, nice to meet you.")]),
        "",
    );
    let asked = rig.telegram.dm(ANN, "Ann", "hello there");
    let answer = rig.wait_text(ANN, "Hello Ann, nice to meet you.");
    assert_eq!(answer.reply_to, Some(asked), "{answer:?}");
    let request = rig.model.last_chat_request().unwrap();
    assert!(
        last_user_text(&request).ends_with("hello there"),
        "{request}"
    );
    assert_eq!(rig.model.chat_request_count(), 1);
    // Typing was shown while the model worked.
    assert!(!rig.telegram.calls_to("sendChatAction").is_empty());
    rig.stop();
    let sessions = rig.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0].1, "telegram");
    // The chat is mapped to its session as the Python Hermes maps it.
    let map: Value = serde_json::from_str(
        &std::fs::read_to_string(rig.home.hermes_home().join("sessions/sessions.json")).unwrap(),
    )
    .unwrap();
    let entry = &map["agent:main:telegram:dm:4242"];
    assert_eq!(entry["session_id"], sessions[0].0, "{map}");
}

#[test]
fn an_unknown_user_pairs_then_talks() {
    let mut rig = Rig::start(Script::new(vec![Turn::text("Welcome, Eve.")]), "", "");
    rig.telegram.dm(555, "Eve", "hi");
    let code_message = rig.wait_message(555, "with a pairing code", |m| {
        m.text.contains("pairing code is")
    });
    assert_eq!(
        rig.model.chat_request_count(),
        0,
        "a stranger reached the model"
    );
    let code = code_message
        .text
        .split("pairing code is ")
        .nth(1)
        .unwrap()
        .chars()
        .take(8)
        .collect::<String>();

    let wrong = run(&rig.home, &["pairing", "approve", "telegram", "ZZZZZZZZ"]);
    assert_eq!(wrong.status.code(), Some(2), "{wrong:?}");
    let listed = run(&rig.home, &["pairing", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(listed.contains("555") && listed.contains("Eve"), "{listed}");

    let approved = run(&rig.home, &["pairing", "approve", "telegram", &code]);
    assert!(approved.status.success(), "{approved:?}");
    assert_eq!(
        String::from_utf8_lossy(&approved.stdout).trim(),
        "Approved telegram user 555 (Eve)."
    );
    rig.telegram.dm(555, "Eve", "hi again");
    rig.wait_text(555, "Welcome, Eve.");
    assert!(last_user_text(&rig.model.last_chat_request().unwrap()).ends_with("hi again"));

    let revoked = run(&rig.home, &["pairing", "revoke", "telegram", "555"]);
    assert!(revoked.status.success(), "{revoked:?}");
    rig.telegram.dm(555, "Eve", "still there?");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        rig.model.chat_request_count(),
        1,
        "a revoked user reached the model"
    );
    rig.stop();
}

#[test]
fn a_message_mid_turn_interrupts_and_is_answered_next() {
    let long = "word ".repeat(200);
    let mut rig = Rig::with_ann(
        Script::new(vec![
            Turn::Reply(Reply::text(long).with_chunk_size(5).with_chunk_delay_ms(50)),
            Turn::text("Second answer."),
        ]),
        "",
    );
    rig.telegram.dm(ANN, "Ann", "tell me a long story");
    // The first answer is streaming into the chat.
    rig.wait_message(ANN, "streaming", |m| m.text.starts_with("word"));
    rig.telegram.dm(ANN, "Ann", "actually, stop: what is 2+2?");
    rig.wait_text(ANN, "Second answer.");
    let requests = rig.model.chat_requests();
    assert_eq!(requests.len(), 2);
    assert!(
        last_user_text(&requests[1]).ends_with("what is 2+2?"),
        "{}",
        requests[1]
    );
    // The interrupted exchange stays in the conversation.
    assert!(
        user_texts(&requests[1])
            .iter()
            .any(|t| t.ends_with("tell me a long story")),
        "{}",
        requests[1]
    );
    rig.stop();
}

#[test]
fn new_starts_a_stored_session_of_its_own() {
    let mut rig = Rig::with_ann(
        Script::new(vec![Turn::text("First."), Turn::text("Fresh.")]),
        "",
    );
    rig.telegram.dm(ANN, "Ann", "remember the word pineapple");
    rig.wait_text(ANN, "First.");
    rig.telegram.dm(ANN, "Ann", "/new");
    rig.wait_message(ANN, "confirming /new", |m| {
        m.text.contains("Started a new conversation")
    });
    rig.telegram.dm(ANN, "Ann", "what word?");
    rig.wait_text(ANN, "Fresh.");
    let last = rig.model.last_chat_request().unwrap();
    assert_eq!(user_texts(&last).len(), 1, "{last}");
    assert!(!last.to_string().contains("pineapple"), "{last}");
    rig.stop();
    let sessions = rig.sessions();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert!(sessions.iter().all(|(_, source)| source == "telegram"));
}

/// A model that asks to delete `victim` with `rm -rf`, then says what happened.
fn deleting(victim: &std::path::Path) -> Script {
    Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": format!("rm -rf {}", victim.display())}),
        ),
        Turn::text("Finished."),
    ])
}

#[test]
fn a_dangerous_command_runs_once_approved_with_a_button() {
    let scratch = tempfile::tempdir().unwrap();
    let victim = scratch.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let mut rig = Rig::with_ann(deleting(&victim), "");
    rig.telegram.dm(ANN, "Ann", "clean up");
    let prompt = rig.wait_message(ANN, "asking for approval", |m| {
        m.text.contains("needs your approval")
    });
    assert!(prompt.text.contains("rm -rf"), "{prompt:?}");
    assert!(victim.exists(), "ran before approval");
    let keyboard = prompt.reply_markup.clone().unwrap();
    let buttons: Vec<&Value> = keyboard["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap())
        .collect();
    let once = buttons
        .iter()
        .find(|b| b["text"] == "Approve once")
        .unwrap_or_else(|| panic!("{keyboard}"));
    // A stranger's press is ignored.
    rig.telegram.press_button(
        ANN,
        999,
        prompt.message_id,
        once["callback_data"].as_str().unwrap(),
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(victim.exists(), "a stranger approved");
    rig.telegram.press_button(
        ANN,
        ANN,
        prompt.message_id,
        once["callback_data"].as_str().unwrap(),
    );
    rig.wait_text(ANN, "Finished.");
    assert!(!victim.exists(), "the approved command did not run");
    rig.stop();
}

#[test]
fn an_unanswered_approval_is_denied() {
    let scratch = tempfile::tempdir().unwrap();
    let victim = scratch.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let mut rig = Rig::with_ann(deleting(&victim), "approvals:\n  timeout: 1\n");
    rig.telegram.dm(ANN, "Ann", "clean up");
    rig.wait_message(ANN, "saying it was denied", |m| {
        m.text.contains("No answer: denied")
    });
    rig.wait_text(ANN, "Finished.");
    assert!(victim.exists(), "a denied command ran");
    let requests = rig.model.chat_requests();
    let tool_result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .to_string();
    assert!(
        tool_result.contains("BLOCKED: nobody answered the approval prompt within 1s"),
        "{tool_result}"
    );
    rig.stop();
}

#[test]
fn a_long_answer_is_split_at_telegrams_limit() {
    let paragraph = format!("{}\n\n", "lorem ipsum dolor sit amet ".repeat(20));
    // A code block of 120 lines (about 5,000 characters) that cannot fit in one message.
    let code: String = (0..120)
        .map(|i| format!("let value_{i:03} = compute_something({i}, \"payload\");\n"))
        .collect();
    let answer = format!(
        "{}```rust\n{code}```\n\n{}",
        paragraph.repeat(10),
        paragraph.repeat(10)
    );
    assert!(answer.len() > 10_000);
    let mut rig = Rig::with_ann(Script::new(vec![Turn::text(answer.clone())]), "");
    rig.telegram.dm(ANN, "Ann", "write a lot");
    // Wait until the whole answer is in the chat.
    let deadline = Instant::now() + Duration::from_secs(30);
    let parts = loop {
        let parts: Vec<BotMessage> = rig
            .telegram
            .messages(ANN)
            .into_iter()
            .filter(|m| !m.deleted)
            .collect();
        let shown: usize = parts.iter().map(|m| m.text.matches("lorem").count()).sum();
        if shown == 400 {
            break parts;
        }
        assert!(Instant::now() < deadline, "{parts:#?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(parts.len() >= 3, "{}", parts.len());
    for p in &parts {
        assert!(p.text.encode_utf16().count() <= 4096, "{}", p.text.len());
        // Every part's code block is closed (a cut block is closed and reopened).
        assert_eq!(p.raw_text.matches("```").count() % 2, 0, "{}", p.raw_text);
    }
    // Every line of code arrived, once.
    let all: String = parts.iter().map(|p| p.text.as_str()).collect();
    for i in 0..120 {
        assert_eq!(
            all.matches(&format!("let value_{i:03} =")).count(),
            1,
            "line {i}"
        );
    }
    rig.stop();
}

#[test]
fn cron_answers_reach_the_chat_and_silent_ones_do_not() {
    let mut rig = Rig::with_ann(
        Script::new(vec![
            Turn::text("Daily report: all good."),
            Turn::text("[SILENT]"),
        ]),
        "cron:\n  tick_interval: 1\n",
    );
    for (name, prompt) in [("report", "report please"), ("quiet", "say nothing")] {
        let added = run(
            &rig.home,
            &[
                "cron",
                "add",
                "1m",
                prompt,
                "--name",
                name,
                "--deliver",
                "telegram:4242",
            ],
        );
        assert!(added.status.success(), "{added:?}");
    }
    // `1m` first runs a minute from now: make both due.
    let jobs_path = rig.home.hermes_home().join("cron/jobs.json");
    let mut jobs: Value =
        serde_json::from_str(&std::fs::read_to_string(&jobs_path).unwrap()).unwrap();
    for job in jobs["jobs"].as_array_mut().unwrap() {
        job["next_run_at"] = json!("2000-01-01T00:00:00+00:00");
    }
    std::fs::write(&jobs_path, serde_json::to_string(&jobs).unwrap()).unwrap();

    let delivered = rig.wait_message(ANN, "from cron", |m| {
        m.text.contains("Daily report: all good.")
    });
    assert!(delivered.text.contains("report"), "{delivered:?}");
    assert!(rig.model.wait_for_chat_requests(2, Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(500));
    let all: Vec<String> = rig
        .telegram
        .messages(ANN)
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(!all.iter().any(|t| t.contains("SILENT")), "{all:?}");
    rig.stop();
}

#[test]
fn status_and_stop_find_the_running_gateway() {
    let mut rig = Rig::with_ann(Script::new(vec![Turn::text("Hi.")]), "");
    rig.telegram.dm(ANN, "Ann", "hi");
    rig.wait_text(ANN, "Hi.");
    // The state file is rewritten every few seconds.
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        let out = run(&rig.home, &["gateway", "status"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if text.contains("received 1") {
            break text;
        }
        assert!(Instant::now() < deadline, "{text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(status.starts_with("Gateway running (pid "), "{status}");
    assert!(
        status.contains("telegram") && status.contains("connected"),
        "{status}"
    );

    let again = run(&rig.home, &["gateway", "run", "--port", "0"]);
    assert_eq!(again.status.code(), Some(2), "{again:?}");
    let again = String::from_utf8_lossy(&again.stderr);
    assert!(again.contains("already running"), "{again}");

    let stopped = run(&rig.home, &["gateway", "stop"]);
    assert!(stopped.status.success(), "{stopped:?}");
    let mut gateway = rig.gateway.take().unwrap();
    assert_eq!(gateway.child.wait().unwrap().code(), Some(0));
    let after = run(&rig.home, &["gateway", "status"]);
    assert!(
        String::from_utf8_lossy(&after.stdout).starts_with("Gateway not running."),
        "{after:?}"
    );
}

#[test]
fn a_job_created_in_a_chat_delivers_back_to_it() {
    let mut rig = Rig::with_ann(
        Script::new(vec![
            Turn::tool(
                "cronjob",
                json!({"action": "create", "schedule": "every 1h", "prompt": "Check the weather", "name": "weather"}),
            ),
            Turn::text("Scheduled."),
            Turn::text("Sunny all day."),
        ]),
        "cron:\n  tick_interval: 1\n",
    );
    rig.telegram.dm(ANN, "Ann", "every hour, check the weather");
    rig.wait_text(ANN, "Scheduled.");
    let jobs_path = rig.home.hermes_home().join("cron/jobs.json");
    let mut jobs: Value =
        serde_json::from_str(&std::fs::read_to_string(&jobs_path).unwrap()).unwrap();
    let job = &mut jobs["jobs"][0];
    assert_eq!(job["deliver"], "origin", "{job}");
    assert_eq!(job["origin"]["platform"], "telegram", "{job}");
    assert_eq!(job["origin"]["chat_id"], "4242", "{job}");
    job["next_run_at"] = json!("2000-01-01T00:00:00+00:00");
    std::fs::write(&jobs_path, serde_json::to_string(&jobs).unwrap()).unwrap();
    let delivered = rig.wait_message(ANN, "from the job", |m| m.text.contains("Sunny all day."));
    assert!(
        delivered.text.starts_with("Cronjob Response: weather"),
        "{delivered:?}"
    );
    rig.stop();
}

#[test]
fn approve_typed_in_the_chat_answers_the_prompt() {
    let scratch = tempfile::tempdir().unwrap();
    let victim = scratch.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let mut rig = Rig::with_ann(deleting(&victim), "");
    rig.telegram.dm(ANN, "Ann", "clean up");
    rig.wait_message(ANN, "asking for approval", |m| {
        m.text.contains("needs your approval")
    });
    rig.telegram.dm(ANN, "Ann", "/approve");
    rig.wait_message(ANN, "confirming", |m| m.text.contains("Approved once"));
    rig.wait_text(ANN, "Finished.");
    assert!(!victim.exists(), "the approved command did not run");
    // The command was an answer, not a new message for the model.
    assert_eq!(rig.model.chat_request_count(), 2);
    rig.stop();
}

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

#[test]
fn a_photo_reaches_the_model_as_an_image_and_a_voice_message_as_its_transcript() {
    use base64::Engine;
    // Transcription goes to a server of its own, in Groq's API shape.
    let stt = MockServer::start(Script::new(vec![]).with_route(
        "/v1/audio/transcriptions",
        vec![hermes_testkit::Canned::json(
            200,
            &json!({"text": " book a table for two at eight "}),
        )],
    ));
    let mut rig = Rig::start(
        Script::new(vec![
            Turn::text("A tiny transparent square."),
            Turn::text("Table for two at eight, noted."),
        ]),
        "",
        &format!(
            "TELEGRAM_ALLOWED_USERS={ANN}\nGROQ_API_KEY=gsk-test\nGROQ_BASE_URL={}\n",
            stt.base_url()
        ),
    );

    rig.telegram
        .add_file("ph-1", "photos/file_7.png", PNG.to_vec());
    rig.telegram.media_dm(
        ANN,
        "Ann",
        "what is this?",
        json!({"photo": [{"file_id": "ph-1", "file_unique_id": "u1", "width": 1, "height": 1, "file_size": PNG.len()}]}),
    );
    rig.wait_text(ANN, "A tiny transparent square.");
    let request = rig.model.last_chat_request().unwrap();
    let user = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    let parts = user["content"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{user}");
    let text = parts[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("[The user sent an image, saved at "),
        "{text}"
    );
    assert!(text.ends_with("]\n\nwhat is this?"), "{text}");
    assert_eq!(
        parts[1]["image_url"]["url"],
        format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(PNG)
        )
    );

    rig.telegram
        .add_file("vo-1", "voice/file_8.oga", b"OggS fake opus".to_vec());
    rig.telegram.media_dm(
        ANN,
        "Ann",
        "",
        json!({"voice": {"file_id": "vo-1", "file_unique_id": "u2", "duration": 2, "mime_type": "audio/ogg"}}),
    );
    rig.wait_text(ANN, "Table for two at eight, noted.");
    let request = rig.model.last_chat_request().unwrap();
    assert_eq!(
        last_user_text(&request),
        "\"book a table for two at eight\""
    );
    let calls = stt.requests_to("/v1/audio/transcriptions");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].header("authorization"), Some("Bearer gsk-test"));
    rig.stop();
}

#[test]
fn a_generated_image_is_sent_to_the_chat_as_a_photo_after_the_answer() {
    use base64::Engine;
    let images = MockServer::start(Script::new(vec![]).with_route(
        "/v1/images/generations",
        vec![hermes_testkit::Canned::json(
            200,
            &json!({"data": [{"b64_json": base64::engine::general_purpose::STANDARD.encode(PNG)}]}),
        )],
    ));
    let rig = Rig::start(
        Script::new(vec![
            Turn::tool("image_generate", json!({"prompt": "a red fox"})),
            Turn::text("Here is your fox."),
        ]),
        &format!(
            "platform_toolsets:\n  telegram: [memory, image_gen]\nimage_gen:\n  provider: openai\n  openai:\n    base_url: {}\n",
            images.base_url()
        ),
        &format!("TELEGRAM_ALLOWED_USERS={ANN}\nOPENAI_API_KEY=sk-img\n"),
    );
    rig.telegram.dm(ANN, "Ann", "draw me a fox");
    rig.wait_text(ANN, "Here is your fox.");
    let photo = rig.wait_message(ANN, "with the photo", |m| {
        m.media.as_deref() == Some("photo")
    });
    assert!(photo.message_id > 0);
    assert_eq!(images.requests_to("/v1/images/generations").len(), 1);
    // Exactly one photo: the file is sent once.
    std::thread::sleep(Duration::from_millis(300));
    let photos = rig
        .telegram
        .messages(ANN)
        .into_iter()
        .filter(|m| m.media.as_deref() == Some("photo"))
        .count();
    assert_eq!(photos, 1);
}

/// With `memory.provider: honcho`, each chat is its own Honcho session named by the chat's
/// key and each Telegram user their own peer (`runtimePeerPrefix`), so a bot serving many
/// people keeps a model of each.
#[test]
fn honcho_keeps_a_session_per_chat_and_a_peer_per_user() {
    use hermes_testkit::platforms::honcho::HonchoMock;
    let honcho = HonchoMock::start(Some("hk-gw"));
    let mut rig = Rig::start(
        Script::new(vec![
            Turn::text("Short answers it is."),
            Turn::text("Hi Bob."),
        ]),
        "memory:\n  provider: honcho\n",
        &format!("TELEGRAM_ALLOWED_USERS={ANN},555\n"),
    );
    rig.home.write_file(
        "honcho.json",
        &json!({"baseUrl": honcho.base_url(), "workspace": "gw",
                "hosts": {"hermes": {"apiKey": "hk-gw", "runtimePeerPrefix": "tg_"}}})
        .to_string(),
    );
    rig.telegram.dm(ANN, "Ann", "I prefer short answers");
    rig.wait_text(ANN, "Short answers it is.");
    common::wait("the exchange in Honcho", || honcho.messages().len() == 2);
    rig.telegram.dm(555, "Bob", "hello, I am Bob");
    rig.wait_text(555, "Hi Bob.");
    common::wait("Bob's exchange in Honcho", || honcho.messages().len() == 4);
    rig.stop();
    let sessions = honcho.sessions("gw");
    let peers: Vec<&String> = sessions["agent-main-telegram-dm-4242"].keys().collect();
    assert_eq!(peers, ["hermes", "tg_4242"], "{sessions:?}");
    let peers: Vec<&String> = sessions["agent-main-telegram-dm-555"].keys().collect();
    assert_eq!(peers, ["hermes", "tg_555"], "{sessions:?}");
    // The chats' sessions share one client: the workspace is ensured once per process.
    let ensured = honcho
        .routes()
        .iter()
        .filter(|r| *r == "POST /v3/workspaces")
        .count();
    assert_eq!(ensured, 1, "{:?}", honcho.routes());
    let said: Vec<(String, String)> = honcho
        .messages()
        .into_iter()
        .map(|m| (m.peer, m.content))
        .collect();
    assert_eq!(
        said,
        [
            ("tg_4242".to_string(), "I prefer short answers".to_string()),
            ("hermes".to_string(), "Short answers it is.".to_string()),
            ("tg_555".to_string(), "hello, I am Bob".to_string()),
            ("hermes".to_string(), "Hi Bob.".to_string()),
        ]
    );
}
