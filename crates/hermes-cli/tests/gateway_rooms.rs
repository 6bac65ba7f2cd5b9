//! `hermes gateway` living in Matrix and IRC, end to end against real servers: the binary and
//! the scripted model server, with a Synapse homeserver and an ngircd server started by the
//! test (`hermes_testkit::peers`; installed by `scripts/setup-peers`, the tests print why they
//! skip when they are not). Matrix: two users registered through Synapse's admin API, Ann
//! talks to the bot in a DM and in a room with Bob (mention rules, an answer in a thread,
//! the thread followed without a mention), Bob pairs from a DM, a long answer is split, a
//! Synapse restart and a gateway restart (the sync token persisted) are survived. IRC: a
//! channel message addressed to the bot and a private message are answered, an unknown nick
//! pairs, a long answer arrives as lines under the 512-byte limit, and the bot reconnects and
//! rejoins after ngircd restarts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::gateway::Gateway;
use common::run;
use hermes_testkit::peers::{IrcClient, Ngircd, Synapse};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const BOT: &str = "@hermes:localhost";
const ANN: &str = "@ann:localhost";
const BOB: &str = "@bob:localhost";
const WAIT: Duration = Duration::from_secs(60);

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

/// The pairing code in a pairing message.
fn pairing_code(text: &str) -> String {
    text.split("pairing code is ")
        .nth(1)
        .unwrap()
        .chars()
        .take(8)
        .collect()
}

/// Waits until `hermes gateway status` shows `platform` connected (the state file is
/// rewritten every few seconds).
fn wait_status(home: &TestHome, platform: &str) {
    let mut last = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let out = run(home, &["gateway", "status"]);
        last = String::from_utf8_lossy(&out.stdout).to_string();
        if last
            .lines()
            .any(|l| l.trim_start().starts_with(platform) && l.contains("connected"))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{platform} is not shown connected: {last}");
}

fn wait_until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------------
// Matrix

/// A message of the bot as a member of the room sees it now (edits applied).
#[derive(Debug, Clone)]
struct BotMessage {
    id: String,
    text: String,
    /// The current `formatted_body`.
    html: Option<String>,
    /// The original event's content (its relations).
    content: Value,
}

struct MatrixRig {
    synapse: Synapse,
    model: MockServer,
    home: TestHome,
    gateway: Option<Gateway>,
    ann: String,
    bob: String,
    txn: u64,
}

impl MatrixRig {
    /// Synapse with the bot, Ann and Bob registered; the gateway on `script` with `env`
    /// (`{token}` in it becomes the bot's access token). `None` (printed) when Synapse cannot
    /// run here.
    fn start(script: Script, env: &str) -> Option<MatrixRig> {
        let synapse = match Synapse::start() {
            Ok(s) => s,
            Err(why) => {
                eprintln!("skipped: {why}");
                return None;
            }
        };
        let bot_token = synapse.register("hermes", "botpw");
        let ann = synapse.register("ann", "annpw");
        let bob = synapse.register("bob", "bobpw");
        let model = MockServer::start(script);
        let home = TestHome::new();
        home.write_config(&hermes_testkit::mock_config_yaml(&model));
        home.write_file(
            ".env",
            &format!(
                "MATRIX_HOMESERVER={}\n{}",
                synapse.base_url(),
                env.replace("{token}", &bot_token)
            ),
        );
        let mut rig = MatrixRig {
            synapse,
            model,
            home,
            gateway: None,
            ann,
            bob,
            txn: 0,
        };
        rig.start_gateway();
        Some(rig)
    }

    fn start_gateway(&mut self) {
        let mut gateway = Gateway::start(&self.home, &[]);
        assert_eq!(gateway.next_line(), "matrix started");
        self.gateway = Some(gateway);
    }

    fn stop(&mut self) -> String {
        let (code, stderr) = self.gateway.take().unwrap().terminate();
        assert_eq!(code, Some(0), "{stderr}");
        stderr
    }

    fn create_room(&self, token: &str, body: Value) -> String {
        let reply = self
            .synapse
            .post("/_matrix/client/v3/createRoom", Some(token), &body);
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.json()["room_id"].as_str().unwrap().to_string()
    }

    fn members(&self, room: &str, token: &str) -> Vec<String> {
        let reply = self.synapse.get(
            &format!("/_matrix/client/v3/rooms/{room}/joined_members"),
            Some(token),
        );
        reply.json()["joined"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn wait_joined(&self, room: &str, token: &str) {
        wait_until("the bot to join", || {
            self.members(room, token)
                .iter()
                .any(|m| m == BOT)
                .then_some(())
        });
    }

    /// Sends `content` as `token`'s user; returns the event id.
    fn send(&mut self, token: &str, room: &str, content: Value) -> String {
        self.txn += 1;
        let reply = self.synapse.put(
            &format!(
                "/_matrix/client/v3/rooms/{room}/send/m.room.message/test{}",
                self.txn
            ),
            Some(token),
            &content,
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.json()["event_id"].as_str().unwrap().to_string()
    }

    fn say(&mut self, token: &str, room: &str, text: &str) -> String {
        let token = token.to_string();
        self.send(&token, room, json!({"msgtype": "m.text", "body": text}))
    }

    /// The bot's messages in `room`, oldest first, as `token`'s user sees them.
    fn bot_messages(&self, room: &str, token: &str) -> Vec<BotMessage> {
        let reply = self.synapse.get(
            &format!("/_matrix/client/v3/rooms/{room}/messages?dir=b&limit=200"),
            Some(token),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        let mut events: Vec<Value> = reply.json()["chunk"].as_array().unwrap().clone();
        events.reverse();
        let mut out: Vec<BotMessage> = Vec::new();
        for ev in events {
            if ev["sender"] != BOT || ev["type"] != "m.room.message" {
                continue;
            }
            let content = &ev["content"];
            if content["m.relates_to"]["rel_type"] == "m.replace" {
                let target = content["m.relates_to"]["event_id"].as_str().unwrap();
                if let Some(m) = out.iter_mut().find(|m| m.id == target) {
                    let new = &content["m.new_content"];
                    m.text = new["body"].as_str().unwrap().to_string();
                    m.html = new["formatted_body"].as_str().map(str::to_string);
                }
                continue;
            }
            // Redacted messages have no body left.
            let Some(body) = content["body"].as_str() else {
                continue;
            };
            out.push(BotMessage {
                id: ev["event_id"].as_str().unwrap().to_string(),
                text: body.to_string(),
                html: content["formatted_body"].as_str().map(str::to_string),
                content: content.clone(),
            });
        }
        out
    }

    fn wait_bot(
        &self,
        room: &str,
        token: &str,
        what: &str,
        want: impl Fn(&BotMessage) -> bool,
    ) -> BotMessage {
        let deadline = Instant::now() + WAIT;
        loop {
            let messages = self.bot_messages(room, token);
            if let Some(m) = messages.iter().find(|m| want(m)) {
                return m.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no bot message {what} in {room}; the bot sent {messages:#?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_bot_text(&self, room: &str, token: &str, text: &str) -> BotMessage {
        self.wait_bot(room, token, &format!("{text:?}"), |m| m.text == text)
    }
}

#[test]
fn matrix_a_dm_and_a_room_with_two_users_are_answered() {
    let Some(mut rig) = MatrixRig::start(
        Script::new(vec![
            Turn::text("Hello Ann, nice to meet you."),
            Turn::text("**Four.**"),
            Turn::text("Six."),
        ]),
        &format!("MATRIX_USER_ID={BOT}\nMATRIX_PASSWORD=botpw\nMATRIX_ALLOWED_USERS={ANN}\n"),
    ) else {
        return;
    };
    let ann = rig.ann.clone();
    let bob = rig.bob.clone();

    // Ann opens a DM with the bot.
    let dm = rig.create_room(
        &ann,
        json!({"preset": "trusted_private_chat", "is_direct": true, "invite": [BOT]}),
    );
    rig.wait_joined(&dm, &ann);
    rig.say(&ann, &dm, "hello there");
    rig.wait_bot_text(&dm, &ann, "Hello Ann, nice to meet you.");
    let request = rig.model.last_chat_request().unwrap();
    assert!(
        last_user_text(&request).ends_with("hello there"),
        "{request}"
    );
    assert_eq!(rig.model.chat_request_count(), 1);

    // A room with Ann, Bob and the bot: only messages for the bot reach it.
    let room = rig.create_room(
        &ann,
        json!({"preset": "private_chat", "invite": [BOT, BOB]}),
    );
    let joined = rig.synapse.post(
        &format!("/_matrix/client/v3/join/{room}"),
        Some(&bob),
        &json!({}),
    );
    assert_eq!(joined.status, 200, "{}", joined.body);
    rig.wait_joined(&room, &ann);
    rig.say(&ann, &room, "just chatting with Bob");
    let question = rig.say(&ann, &room, "hermes: what is 2+2?");
    // The answer is in a thread rooted at the question, markdown as HTML.
    let four = rig.wait_bot_text(&room, &ann, "**Four.**");
    assert_eq!(four.content["m.relates_to"]["rel_type"], "m.thread");
    assert_eq!(four.content["m.relates_to"]["event_id"], question.as_str());
    let request = rig.model.last_chat_request().unwrap();
    let asked = last_user_text(&request);
    assert!(asked.ends_with("what is 2+2?"), "{request}");
    assert!(!asked.contains("hermes:"), "{asked}");
    assert!(!asked.contains("just chatting"), "{asked}");
    assert_eq!(
        rig.model.chat_request_count(),
        2,
        "an unaddressed message reached the model"
    );
    assert_eq!(
        four.html.as_deref(),
        Some("<strong>Four.</strong>"),
        "{four:?}"
    );

    // In the bot's thread no mention is needed.
    let followup = json!({"msgtype": "m.text", "body": "and 3+3?",
        "m.relates_to": {"rel_type": "m.thread", "event_id": question, "is_falling_back": true,
                          "m.in_reply_to": {"event_id": question}}});
    rig.send(&ann, &room, followup);
    let six = rig.wait_bot_text(&room, &ann, "Six.");
    assert_eq!(six.content["m.relates_to"]["event_id"], question.as_str());
    assert!(last_user_text(&rig.model.last_chat_request().unwrap()).ends_with("and 3+3?"));

    wait_status(&rig.home, "matrix");
    rig.stop();
    // The DM is a session of its own, keyed as the Python Hermes keys it.
    let map: Value = serde_json::from_str(
        &std::fs::read_to_string(rig.home.hermes_home().join("sessions/sessions.json")).unwrap(),
    )
    .unwrap();
    assert!(
        map.get(format!("agent:main:matrix:dm:{dm}")).is_some(),
        "{map}"
    );
}

#[test]
fn matrix_an_unknown_user_pairs_from_a_dm() {
    let Some(mut rig) = MatrixRig::start(
        Script::new(vec![Turn::text("Welcome, Bob.")]),
        &format!("MATRIX_ACCESS_TOKEN={{token}}\nMATRIX_ALLOWED_USERS={ANN}\n"),
    ) else {
        return;
    };
    let bob = rig.bob.clone();
    // A stranger cannot pull the bot into a room ...
    let room = rig.create_room(&bob, json!({"preset": "private_chat", "invite": [BOT]}));
    // ... but a DM is joined, and answered with a pairing code.
    let dm = rig.create_room(
        &bob,
        json!({"preset": "trusted_private_chat", "is_direct": true, "invite": [BOT]}),
    );
    rig.wait_joined(&dm, &bob);
    rig.say(&bob, &dm, "hi");
    let code = rig.wait_bot(&dm, &bob, "with a pairing code", |m| {
        m.text.contains("pairing code is")
    });
    assert_eq!(
        rig.model.chat_request_count(),
        0,
        "a stranger reached the model"
    );
    assert!(
        !rig.members(&room, &bob).iter().any(|m| m == BOT),
        "the bot joined a stranger's room"
    );
    let code = pairing_code(&code.text);
    let approved = run(&rig.home, &["pairing", "approve", "matrix", &code]);
    assert!(approved.status.success(), "{approved:?}");
    assert!(
        String::from_utf8_lossy(&approved.stdout).contains(BOB),
        "{approved:?}"
    );
    rig.say(&bob, &dm, "hi again");
    rig.wait_bot_text(&dm, &bob, "Welcome, Bob.");
    assert!(last_user_text(&rig.model.last_chat_request().unwrap()).ends_with("hi again"));
    assert_eq!(rig.model.chat_request_count(), 1);

    // An encrypted room is refused by name: nothing in it reaches the model.
    let ann = rig.ann.clone();
    let secret = rig.create_room(
        &ann,
        json!({"preset": "private_chat", "invite": [BOT], "initial_state": [
            {"type": "m.room.encryption", "state_key": "",
             "content": {"algorithm": "m.megolm.v1.aes-sha2"}}]}),
    );
    rig.wait_joined(&secret, &ann);
    rig.say(&ann, &secret, "hermes: can you read this?");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        rig.model.chat_request_count(),
        1,
        "an encrypted room reached the model"
    );
    let stderr = rig.stop();
    assert!(
        stderr.contains(&secret) && stderr.contains("end-to-end encrypted"),
        "{stderr}"
    );
}

#[test]
fn matrix_long_answers_split_and_restarts_are_survived() {
    let paragraph = format!("{}\n\n", "lorem ipsum dolor sit amet ".repeat(10));
    let long = paragraph.repeat(12);
    let Some(mut rig) = MatrixRig::start(
        Script::new(vec![
            Turn::text(long.clone()),
            Turn::text("Still here."),
            Turn::text("Caught up."),
        ]),
        &format!(
            "MATRIX_ACCESS_TOKEN={{token}}\nMATRIX_ALLOWED_USERS={ANN}\nMATRIX_MAX_MESSAGE_LENGTH=1000\n"
        ),
    ) else {
        return;
    };
    let ann = rig.ann.clone();
    let dm = rig.create_room(
        &ann,
        json!({"preset": "trusted_private_chat", "is_direct": true, "invite": [BOT]}),
    );
    rig.wait_joined(&dm, &ann);
    rig.say(&ann, &dm, "write a lot");
    let lorem = |parts: &[BotMessage]| -> usize {
        parts.iter().map(|m| m.text.matches("lorem").count()).sum()
    };
    wait_until("the whole long answer", || {
        (lorem(&rig.bot_messages(&dm, &ann)) == 120).then_some(())
    });
    // Settled: the streamed preview is gone, every part is there once.
    std::thread::sleep(Duration::from_millis(1500));
    let parts = rig.bot_messages(&dm, &ann);
    assert_eq!(lorem(&parts), 120, "{parts:#?}");
    assert!(parts.len() >= 3, "{parts:#?}");
    for p in &parts {
        assert!(p.text.chars().count() <= 1000, "{}", p.text.len());
    }

    // Synapse restarts under the gateway: the sync loop reconnects.
    rig.synapse.restart().unwrap();
    rig.say(&ann, &dm, "are you there?");
    rig.wait_bot_text(&dm, &ann, "Still here.");
    assert!(last_user_text(&rig.model.last_chat_request().unwrap()).ends_with("are you there?"));

    // The gateway restarts: what arrived meanwhile is answered once, from the saved token.
    rig.stop();
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(rig.home.hermes_home().join("matrix/state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["user_id"], BOT, "{state}");
    assert!(state["next_batch"].is_string(), "{state}");
    rig.say(&ann, &dm, "message while you were away");
    rig.start_gateway();
    rig.wait_bot_text(&dm, &ann, "Caught up.");
    assert!(
        last_user_text(&rig.model.last_chat_request().unwrap())
            .ends_with("message while you were away")
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        rig.model.chat_request_count(),
        3,
        "a message was answered twice"
    );
    rig.stop();
}

// ---------------------------------------------------------------------------------------------
// IRC

const NICK: &str = "hermes-bot";

struct IrcRig {
    server: Ngircd,
    model: MockServer,
    home: TestHome,
    gateway: Option<Gateway>,
}

impl IrcRig {
    fn start(script: Script) -> Option<IrcRig> {
        let server = match Ngircd::start() {
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
                "IRC_SERVER=127.0.0.1\nIRC_PORT={}\nIRC_CHANNEL=\"#hermes\"\nIRC_USE_TLS=false\nIRC_NICKNAME={NICK}\nIRC_ALLOWED_USERS=ann\n",
                server.port
            ),
        );
        let mut gateway = Gateway::start(&home, &[]);
        assert_eq!(gateway.next_line(), "irc started");
        Some(IrcRig {
            server,
            model,
            home,
            gateway: Some(gateway),
        })
    }

    /// A user in `#hermes`, once the bot is there too.
    fn user(&self, nick: &str) -> IrcClient {
        let mut c = IrcClient::connect(self.server.port, nick);
        c.send("JOIN #hermes");
        c.wait_line(" 366 ", WAIT);
        wait_until("the bot in #hermes", || {
            c.send("NAMES #hermes");
            let names = c.wait_line(" 353 ", WAIT);
            names.contains(NICK).then_some(())
        });
        c
    }

    fn stop(&mut self) {
        let (code, stderr) = self.gateway.take().unwrap().terminate();
        assert_eq!(code, Some(0), "{stderr}");
    }
}

#[test]
fn irc_channel_mentions_and_private_messages_are_answered() {
    let Some(mut rig) = IrcRig::start(Script::new(vec![
        Turn::text("**Four.**"),
        Turn::text("Hello Ann."),
    ])) else {
        return;
    };
    let mut ann = rig.user("ann");
    ann.send("PRIVMSG #hermes :just chatting");
    ann.send(&format!("PRIVMSG #hermes :{NICK}: what is 2+2?"));
    ann.wait_line(&format!(":{NICK}!"), WAIT);
    assert_eq!(ann.privmsgs(NICK, "#hermes"), vec!["Four."]);
    let request = rig.model.last_chat_request().unwrap();
    assert!(
        last_user_text(&request).ends_with("what is 2+2?"),
        "{request}"
    );
    assert!(!last_user_text(&request).contains("just chatting"));
    assert_eq!(rig.model.chat_request_count(), 1);

    ann.send(&format!("PRIVMSG {NICK} :hello in private"));
    ann.wait_line("PRIVMSG ann :", WAIT);
    assert_eq!(ann.privmsgs(NICK, "ann"), vec!["Hello Ann."]);
    assert!(last_user_text(&rig.model.last_chat_request().unwrap()).ends_with("hello in private"));

    wait_status(&rig.home, "irc");
    rig.stop();
    let map: Value = serde_json::from_str(
        &std::fs::read_to_string(rig.home.hermes_home().join("sessions/sessions.json")).unwrap(),
    )
    .unwrap();
    assert!(map.get("agent:main:irc:dm:ann").is_some(), "{map}");
}

#[test]
fn irc_an_unknown_nick_pairs_then_talks() {
    let Some(mut rig) = IrcRig::start(Script::new(vec![Turn::text("Welcome, Eve.")])) else {
        return;
    };
    let mut eve = IrcClient::connect(rig.server.port, "eve");
    // Once Ann sees the bot in the channel, it is connected.
    let _ann = rig.user("ann");
    eve.send(&format!("PRIVMSG {NICK} :hi"));
    let line = eve.wait_line("pairing code is", WAIT);
    assert_eq!(
        rig.model.chat_request_count(),
        0,
        "a stranger reached the model"
    );
    let code = pairing_code(&line);
    let approved = run(&rig.home, &["pairing", "approve", "irc", &code]);
    assert!(approved.status.success(), "{approved:?}");
    eve.send(&format!("PRIVMSG {NICK} :hi again"));
    eve.wait_line("Welcome, Eve.", WAIT);
    assert!(last_user_text(&rig.model.last_chat_request().unwrap()).ends_with("hi again"));
    rig.stop();
}

#[test]
fn irc_long_answers_are_lines_and_the_bot_rejoins_after_a_restart() {
    // Six paragraphs of 540 characters: two lines each.
    let paragraph = format!("{}\n\n", "lorem ipsum dolor sit amet ".repeat(20));
    let long = paragraph.repeat(6);
    let Some(mut rig) = IrcRig::start(Script::new(vec![
        Turn::text(long),
        Turn::text("Yes, still here."),
    ])) else {
        return;
    };
    let mut ann = rig.user("ann");
    ann.send(&format!("PRIVMSG {NICK} :write a lot"));
    wait_until("the whole long answer", || {
        let _ = ann.try_wait_line("PRIVMSG ann :", Duration::from_millis(200));
        let words: usize = ann
            .privmsgs(NICK, "ann")
            .iter()
            .map(|l| l.matches("lorem").count())
            .sum();
        (words == 120).then_some(())
    });
    let lines = ann.privmsgs(NICK, "ann");
    assert!(lines.len() >= 12, "{lines:#?}");
    for l in ann.seen.iter().filter(|l| l.contains(" PRIVMSG ann :")) {
        assert!(l.len() + 2 <= 512, "{} bytes: {l}", l.len() + 2);
    }

    // ngircd restarts: everyone is disconnected; the bot reconnects and joins again.
    rig.server.restart().unwrap();
    let mut ann = rig.user("ann");
    ann.send(&format!("PRIVMSG #hermes :{NICK}, are you still there?"));
    ann.wait_line("Yes, still here.", WAIT);
    assert_eq!(ann.privmsgs(NICK, "#hermes"), vec!["Yes, still here."]);
    assert!(
        last_user_text(&rig.model.last_chat_request().unwrap()).ends_with("are you still there?")
    );
    rig.stop();
}
