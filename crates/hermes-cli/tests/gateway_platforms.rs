//! `hermes gateway` on Discord and Slack, end to end: the real binary against the testkit's
//! doubles of each platform's gateway / Socket Mode and REST API, and the scripted model. A DM
//! is answered; a websocket dropped mid-conversation is resumed (Discord: RESUME with the
//! session and sequence; Slack: the unacknowledged envelope delivered again), and the message
//! sent meanwhile is answered exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::gateway::Gateway;
use hermes_testkit::platforms::discord::DiscordMock;
use hermes_testkit::platforms::slack::SlackMock;
use hermes_testkit::{MockServer, Script, TestHome, Turn};

fn wait(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start(model: &MockServer, platform_yaml: &str, env: &str, started: &str) -> (TestHome, Gateway) {
    let home = TestHome::new();
    let mut yaml = hermes_testkit::mock_config_yaml(model);
    yaml.push_str(platform_yaml);
    home.write_config(&yaml);
    home.write_file(".env", env);
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), started);
    (home, gateway)
}

fn answers() -> Script {
    Script::new(vec![Turn::text("Answer one."), Turn::text("Answer two.")])
}

#[test]
fn discord_answers_a_dm_and_resumes_a_dropped_gateway_connection() {
    let discord = DiscordMock::start("discord-test-token", 45_000);
    let model = MockServer::start(answers());
    let (_home, gateway) = start(
        &model,
        &format!(
            "platforms:\n  discord:\n    enabled: true\n    extra:\n      base_url: {}\n",
            discord.base_url()
        ),
        "DISCORD_BOT_TOKEN=discord-test-token\nDISCORD_ALLOWED_USERS=555\n",
        "discord started",
    );
    wait("READY", || {
        discord.connected() && discord.ready_count() == 1
    });
    let (channel, _) = discord.dm("555", "ann", "one");
    let shown = |text: &str| {
        discord
            .bot_messages_in(&channel)
            .iter()
            .filter(|m| !m.deleted && m.content == text)
            .count()
    };
    wait("the first answer", || shown("Answer one.") == 1);

    discord.drop_connection();
    // Sent while the bot is away: Discord replays it on RESUME.
    discord.dm("555", "ann", "two");
    wait("the second answer", || shown("Answer two.") == 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        model.chat_request_count(),
        2,
        "a message was answered twice"
    );
    assert_eq!(shown("Answer one."), 1);
    assert_eq!(shown("Answer two."), 1);
    assert_eq!(discord.frames(6).len(), 1, "one RESUME");
    assert_eq!(discord.ready_count(), 1, "resumed, not identified again");
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn slack_answers_a_dm_and_gets_the_unacknowledged_event_again_after_a_drop() {
    let slack = SlackMock::start("xoxb-test-bot", "xapp-test-app");
    slack.add_user("U1", "ann", "Ann");
    let model = MockServer::start(answers());
    let (_home, gateway) = start(
        &model,
        &format!(
            "platforms:\n  slack:\n    enabled: true\n    extra:\n      base_url: {}\n",
            slack.base_url()
        ),
        "SLACK_BOT_TOKEN=xoxb-test-bot\nSLACK_APP_TOKEN=xapp-test-app\nSLACK_ALLOWED_USERS=U1\n",
        "slack started",
    );
    wait("Socket Mode", || slack.connected());
    slack.dm("U1", "one");
    let shown = |text: &str| {
        slack
            .bot_messages("DU1")
            .iter()
            .filter(|m| !m.deleted && m.text == text)
            .count()
    };
    wait("the first answer", || shown("Answer one.") == 1);

    slack.drop_connection();
    slack.dm("U1", "two");
    wait("the second answer", || shown("Answer two.") == 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        model.chat_request_count(),
        2,
        "a message was answered twice"
    );
    assert_eq!(shown("Answer one."), 1);
    assert!(slack.connections() >= 2, "reconnected");
    let (code, stderr) = gateway.terminate();
    assert_eq!(code, Some(0), "{stderr}");
}
