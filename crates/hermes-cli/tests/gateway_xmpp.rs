//! `hermes gateway` on XMPP, end to end against a real server: the binary and the scripted
//! model, with Prosody started by the test (`hermes_testkit::platforms::prosody`; installed
//! by `scripts/setup-peers`, the tests print why they skip when it is not). A person logs in
//! with the testkit's small client and talks to the bot's account `hermes@localhost`.
//! Covered: a DM answered (after a "composing" notification) and a long answer split into
//! several messages; an unknown sender paired (the model not called) and answered once
//! approved; a room message answered in the room only when it addresses the bot; a Prosody
//! restart survived (the bot logs in again, rejoins its room and answers the next DM).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::gateway::Gateway;
use common::run;
use hermes_testkit::platforms::prosody::{Prosody, XmppClient};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::Value;

const BOT: &str = "hermes@localhost";
const ROOM: &str = "ops@conference.localhost";
const WAIT: Duration = Duration::from_secs(30);

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

/// The `xmpp` line of `hermes gateway status`, once `accept` takes it.
fn wait_status(home: &TestHome, accept: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline {
        let out = run(home, &["gateway", "status"]);
        last = String::from_utf8_lossy(&out.stdout).to_string();
        if let Some(line) = last
            .lines()
            .find(|l| l.trim_start().starts_with("xmpp") && accept(l))
        {
            return line.to_string();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("xmpp never reached the expected state: {last}");
}

struct Rig {
    server: Prosody,
    model: MockServer,
    home: TestHome,
    gateway: Option<Gateway>,
}

impl Rig {
    /// Prosody with the bot and two people, and the gateway on `script`; `None` (printed)
    /// when Prosody cannot run here.
    fn start(script: Script) -> Option<Rig> {
        let server =
            match Prosody::start(&[("hermes", "botpw"), ("alice", "alicepw"), ("bob", "bobpw")]) {
                Ok(s) => s,
                Err(why) => {
                    eprintln!("skipped: {why}");
                    return None;
                }
            };
        let model = MockServer::start(script);
        let home = TestHome::new();
        home.write_config(&hermes_testkit::mock_config_yaml(&model));
        home.write_file(
            ".env",
            &format!(
                "XMPP_JID={BOT}\nXMPP_PASSWORD=botpw\nXMPP_SERVER=127.0.0.1:{}\nXMPP_ALLOW_PLAINTEXT=true\nXMPP_ROOMS={ROOM}\nXMPP_ALLOWED_USERS=Alice@localhost\n",
                server.port
            ),
        );
        let mut gateway = Gateway::start(&home, &[]);
        assert_eq!(gateway.next_line(), "xmpp started");
        wait_status(&home, |l| l.contains("connected"));
        Some(Rig {
            server,
            model,
            home,
            gateway: Some(gateway),
        })
    }

    fn client(&self, user: &str, password: &str) -> XmppClient {
        XmppClient::connect(self.server.port, user, password)
            .unwrap_or_else(|e| panic!("{e}\n{}", self.server.logs()))
    }

    fn stop(&mut self) {
        let (code, stderr) = self.gateway.take().unwrap().terminate();
        assert_eq!(code, Some(0), "{stderr}");
    }
}

#[test]
fn xmpp_a_dm_is_answered_and_a_long_answer_is_split() {
    // About 9,000 characters in paragraphs: three messages at the 4,000-character limit.
    let long = format!(
        "Here is more.\n\n{}",
        format!("{}\n\n", "lorem ipsum dolor sit amet ".repeat(12)).repeat(28)
    );
    let Some(mut rig) = Rig::start(Script::new(vec![
        Turn::text("Four."),
        Turn::text(long.clone()),
    ])) else {
        return;
    };
    let mut alice = rig.client("alice", "alicepw");
    alice.send_chat(BOT, "what is 2+2?");
    let bodies = alice.wait_bodies(BOT, 1, WAIT);
    assert_eq!(bodies, vec!["Four."], "{:#?}", alice.messages);
    assert_eq!(
        last_user_text(&rig.model.last_chat_request().unwrap()),
        "what is 2+2?"
    );
    let first = alice
        .messages
        .iter()
        .position(|m| m.body.is_some())
        .unwrap();
    assert!(
        alice.messages[..first]
            .iter()
            .any(|m| m.raw.contains("<composing")),
        "no typing notification before the answer: {:#?}",
        alice.messages
    );
    assert_eq!(alice.messages[first].kind, "chat");

    alice.send_chat(BOT, "tell me more");
    let bodies = alice.wait_bodies(BOT, 4, WAIT);
    let parts = &bodies[1..];
    assert!(parts.len() >= 3, "not split: {} parts", parts.len());
    assert!(parts.iter().all(|p| p.chars().count() <= 4000));
    // Each part ends with its `(i/n)` counter.
    let n = parts.len();
    let mut joined = String::new();
    for (i, part) in parts.iter().enumerate() {
        let marker = format!("({}/{n})", i + 1);
        let text = part.trim_end().strip_suffix(&marker);
        joined.push_str(text.unwrap_or_else(|| panic!("part {i} lacks {marker}: {part}")));
        joined.push('\n');
    }
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(squash(&joined), squash(&long));
    assert_eq!(rig.model.chat_request_count(), 2);
    rig.stop();
}

#[test]
fn xmpp_an_unknown_sender_gets_a_pairing_code_and_is_answered_once_approved() {
    let Some(mut rig) = Rig::start(Script::new(vec![Turn::text("Welcome, Bob.")])) else {
        return;
    };
    let mut bob = rig.client("bob", "bobpw");
    bob.send_chat(BOT, "hello?");
    let bodies = bob.wait_bodies(BOT, 1, WAIT);
    let text = bodies.first().cloned().unwrap_or_default();
    assert!(text.contains("pairing code is"), "{bodies:?}");
    assert_eq!(
        rig.model.chat_request_count(),
        0,
        "a stranger reached the model"
    );
    let code: String = text
        .split("pairing code is ")
        .nth(1)
        .unwrap()
        .chars()
        .take(8)
        .collect();
    let approved = run(&rig.home, &["pairing", "approve", "xmpp", &code]);
    assert!(approved.status.success(), "{approved:?}");
    bob.send_chat(BOT, "hi again");
    let bodies = bob.wait_bodies(BOT, 2, WAIT);
    assert_eq!(bodies.get(1).map(String::as_str), Some("Welcome, Bob."));
    assert_eq!(
        last_user_text(&rig.model.last_chat_request().unwrap()),
        "hi again"
    );
    rig.stop();
}

#[test]
fn xmpp_a_room_message_that_addresses_the_bot_is_answered_in_the_room() {
    let Some(mut rig) = Rig::start(Script::new(vec![Turn::text("Six.")])) else {
        return;
    };
    let mut alice = rig.client("alice", "alicepw");
    alice.join(ROOM, "alice").unwrap();
    // The bot is in the room (its presence arrives with the occupant list or later).
    let bot_in_room = format!("from='{ROOM}/hermes'");
    alice
        .wait_seen(
            |s| s.starts_with("<presence") && s.contains(&bot_in_room),
            WAIT,
        )
        .unwrap_or_else(|e| panic!("the bot did not join: {e}\n{}", rig.server.logs()));
    alice.send_groupchat(ROOM, "just chatting, nothing for bots");
    alice.send_groupchat(ROOM, "hermes: what is 3+3?");
    let from_bot = format!("{ROOM}/hermes");
    let bodies = alice.wait_bodies(&from_bot, 1, WAIT);
    assert_eq!(bodies, vec!["Six."]);
    let answer = alice
        .messages
        .iter()
        .find(|m| m.from == from_bot && m.body.is_some())
        .unwrap();
    assert_eq!(answer.kind, "groupchat");
    assert_eq!(
        last_user_text(&rig.model.last_chat_request().unwrap()),
        "what is 3+3?"
    );
    // The unaddressed line and the bot's own reflected answer reached nobody.
    alice.idle(Duration::from_millis(1500));
    assert_eq!(rig.model.chat_request_count(), 1);
    rig.stop();
}

#[test]
fn xmpp_a_prosody_restart_is_survived() {
    let Some(mut rig) = Rig::start(Script::new(vec![
        Turn::text("Before."),
        Turn::text("After."),
    ])) else {
        return;
    };
    let mut alice = rig.client("alice", "alicepw");
    alice.send_chat(BOT, "first");
    assert_eq!(alice.wait_bodies(BOT, 1, WAIT), vec!["Before."]);
    drop(alice);

    rig.server.restart().unwrap();
    let line = wait_status(&rig.home, |l| {
        l.contains("connected") && !l.contains("reconnecting") && !l.contains("reconnects 0")
    });
    assert!(line.contains("connected"), "{line}");
    let mut alice = rig.client("alice", "alicepw");
    // The room is back too: the bot joined it again after logging in.
    alice.join(ROOM, "alice").unwrap();
    let bot_in_room = format!("from='{ROOM}/hermes'");
    alice
        .wait_seen(
            |s| s.starts_with("<presence") && s.contains(&bot_in_room),
            WAIT,
        )
        .unwrap_or_else(|e| panic!("the bot did not rejoin: {e}\n{}", rig.server.logs()));
    alice.send_chat(BOT, "second");
    assert_eq!(alice.wait_bodies(BOT, 1, WAIT), vec!["After."]);
    assert_eq!(
        last_user_text(&rig.model.last_chat_request().unwrap()),
        "second"
    );
    rig.stop();
}
