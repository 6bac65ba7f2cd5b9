//! `hermes gateway` on Mattermost, end to end: the real binary against the testkit's double of
//! Mattermost's REST API v4 and WebSocket, and the scripted model. A DM is answered; a
//! stranger gets a pairing code and reaches the model only once approved; a channel message
//! needs an @-mention and is answered in a thread under it (`reply_mode: thread`), where the
//! next message needs none; a long answer is split at 4,000 characters; a dropped WebSocket
//! comes back with its connection id and the message posted meanwhile is replayed by the
//! server and answered exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::gateway::Gateway;
use common::*;
use hermes_testkit::platforms::mattermost::{BOT_USER_ID, MattermostMock, Post};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::Value;

const TOKEN: &str = "mm-bot-token";
const ANN: &str = "annuserid0000000000000000a";
const BOB: &str = "bobuserid0000000000000000b";

fn start(mm: &MattermostMock, model: &MockServer, extra_env: &str) -> (TestHome, Gateway) {
    let home = TestHome::new();
    home.write_config(&hermes_testkit::mock_config_yaml(model));
    home.write_file(
        ".env",
        &format!(
            "MATTERMOST_URL={}\nMATTERMOST_TOKEN={TOKEN}\nMATTERMOST_ALLOWED_USERS={ANN}\n{extra_env}",
            mm.url()
        ),
    );
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "mattermost started");
    wait("the WebSocket", || mm.connected());
    (home, gateway)
}

fn live(posts: Vec<Post>) -> Vec<Post> {
    posts.into_iter().filter(|p| !p.deleted).collect()
}

fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn mattermost_dms_pairing_mentions_threads_and_long_answers() {
    let long = format!("{}\n\n{}", "a".repeat(3000), "b".repeat(3000));
    let mm = MattermostMock::start(TOKEN);
    let ann_dm = mm.add_user(ANN, "ann");
    let bob_dm = mm.add_user(BOB, "bob");
    mm.add_channel("townsquare0000000000000000", "Town Square");
    let model = MockServer::start(Script::new(vec![
        Turn::text("Hello Ann."),
        Turn::text("Welcome, Bob."),
        Turn::text("In the thread."),
        Turn::text("Still here."),
        Turn::text(&long),
    ]));
    let (home, gateway) = start(&mm, &model, "MATTERMOST_REPLY_MODE=thread\n");

    mm.post(&ann_dm, ANN, "hi", None);
    wait("the DM answer", || {
        live(mm.bot_posts(&ann_dm))
            .iter()
            .any(|p| p.message == "Hello Ann.")
    });
    assert_eq!(last_user_text(&model.last_chat_request().unwrap()), "hi");
    // A DM answer is flat, even in thread mode.
    assert!(
        live(mm.bot_posts(&ann_dm))
            .iter()
            .all(|p| p.root_id.is_empty())
    );

    // A stranger: a pairing code, not the model.
    mm.post(&bob_dm, BOB, "hello?", None);
    wait("the pairing code", || {
        mm.bot_posts(&bob_dm)
            .iter()
            .any(|p| p.message.contains("pairing code is"))
    });
    assert_eq!(
        model.chat_request_count(),
        1,
        "a stranger reached the model"
    );
    let text = mm.bot_posts(&bob_dm)[0].message.clone();
    let code: String = text
        .split("pairing code is ")
        .nth(1)
        .unwrap()
        .chars()
        .take(8)
        .collect();
    let approved = run(&home, &["pairing", "approve", "mattermost", &code]);
    assert!(approved.status.success(), "{approved:?}");
    mm.post(&bob_dm, BOB, "hello again", None);
    wait("Bob's answer", || {
        mm.bot_posts(&bob_dm)
            .iter()
            .any(|p| p.message == "Welcome, Bob.")
    });

    // A channel: no mention, no answer; a mention is answered in a thread under it.
    let town = "townsquare0000000000000000";
    mm.post(town, ANN, "just chatting", None);
    let asked = mm.post(town, ANN, "@hermes what is up?", None);
    wait("the thread answer", || {
        mm.bot_posts(town)
            .iter()
            .any(|p| p.message == "In the thread.")
    });
    let answer = mm
        .bot_posts(town)
        .into_iter()
        .find(|p| p.message == "In the thread.")
        .unwrap();
    assert_eq!(answer.root_id, asked);
    assert_eq!(
        model.chat_request_count(),
        3,
        "an unmentioned message reached the model"
    );
    assert_eq!(
        last_user_text(&model.last_chat_request().unwrap()),
        "what is up?"
    );
    // In that thread the bot listens without a mention.
    mm.post(town, ANN, "and now?", Some(&asked));
    wait("the second thread answer", || {
        mm.bot_posts(town)
            .iter()
            .any(|p| p.message == "Still here.")
    });

    // A long answer: two posts under the 4,000-character limit, nothing lost.
    mm.post(&ann_dm, ANN, "long please", None);
    wait("the long answer", || {
        live(mm.bot_posts(&ann_dm))
            .iter()
            .filter(|p| p.message.starts_with('a') || p.message.starts_with('b'))
            .count()
            >= 2
    });
    let parts: Vec<String> = live(mm.bot_posts(&ann_dm))
        .into_iter()
        .map(|p| p.message)
        .filter(|m| m.starts_with('a') || m.starts_with('b'))
        .collect();
    assert!(parts.iter().all(|p| p.chars().count() <= 4000), "{parts:?}");
    assert_eq!(parts.concat().matches('a').count(), 3000);
    assert_eq!(parts.concat().matches('b').count(), 3000);
    // The typing indicator was shown in the DM while the model worked.
    assert!(
        mm.typing_calls()
            .iter()
            .any(|t| t["channel_id"] == ann_dm.as_str()),
        "{:?}",
        mm.typing_calls()
    );
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn mattermost_replays_what_was_posted_while_the_websocket_was_down() {
    let mm = MattermostMock::start(TOKEN);
    let dm = mm.add_user(ANN, "ann");
    let model = MockServer::start(Script::new(vec![
        Turn::text("Answer one."),
        Turn::text("Answer two."),
    ]));
    let (_home, gateway) = start(&mm, &model, "");
    mm.post(&dm, ANN, "one", None);
    let shown = |text: &str| {
        live(mm.bot_posts(&dm))
            .iter()
            .filter(|p| p.message == text)
            .count()
    };
    wait("the first answer", || shown("Answer one.") == 1);

    mm.drop_connection();
    // Posted while the bot is away: the server replays it to the resumed connection.
    mm.post(&dm, ANN, "two", None);
    wait("the second answer", || shown("Answer two.") == 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        model.chat_request_count(),
        2,
        "a message was answered twice"
    );
    assert_eq!(shown("Answer one."), 1);
    let (connections, resumed) = mm.connections();
    assert!(
        connections >= 2 && resumed >= 1,
        "{connections} connections, {resumed} resumed"
    );
    assert!(mm.bot_posts(&dm).iter().all(|p| p.user_id == BOT_USER_ID));
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
