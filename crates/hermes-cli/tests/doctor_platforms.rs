//! `hermes doctor` and `hermes gateway status` on the chat platforms, through the binary: every
//! enabled platform gets one line, in the gateway's order of platforms. Mattermost (the testkit's double) answers
//! with the bot's name; Telegram's double refuses a wrong token; an IRC port nobody listens on
//! is unreachable; Slack without its app token cannot start; a platform this build lacks is a
//! warning. `--offline` checks only the settings and sends nothing; `gateway status` lists the
//! configured platforms without touching the network. Real servers: an IMAP and SMTP login
//! (Dovecot, aiosmtpd) and an XMPP login (Prosody), each with the right and a wrong password;
//! the Signal daemon's double asked about the account, and an unreachable daemon.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::TcpListener;

use common::*;
use hermes_testkit::platforms::mattermost::MattermostMock;
use hermes_testkit::platforms::telegram::TelegramMock;
use hermes_testkit::{MockServer, Script, TestHome, Turn, mock_config_yaml};

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Setup {
    home: TestHome,
    mattermost: MattermostMock,
    telegram: TelegramMock,
    irc_port: u16,
    _model: MockServer,
}

fn setup() -> Setup {
    let model = MockServer::start(Script::new(vec![Turn::text("unused")]));
    let mattermost = MattermostMock::start("mm-token");
    let telegram = TelegramMock::start("123:right");
    let irc_port = closed_port();
    let home = TestHome::new();
    home.write_config(&format!(
        "{}platforms:\n  mattermost:\n    enabled: true\n  telegram:\n    enabled: true\n    extra:\n      base_url: {}\n  irc:\n    enabled: true\n  slack:\n    enabled: true\n  teams:\n    enabled: true\n",
        mock_config_yaml(&model),
        telegram.base_url(),
    ));
    home.write_file(
        ".env",
        &format!(
            "MATTERMOST_URL={}\nMATTERMOST_TOKEN=mm-token\nTELEGRAM_BOT_TOKEN=123:wrong\nIRC_SERVER=127.0.0.1\nIRC_PORT={irc_port}\nIRC_USE_TLS=false\nIRC_CHANNEL=\"#hermes\"\nSLACK_BOT_TOKEN=xoxb-1\n",
            mattermost.url()
        ),
    );
    Setup {
        home,
        mattermost,
        telegram,
        irc_port,
        _model: model,
    }
}

/// The doctor lines of the platform checks (mark and name first), in order.
fn platform_lines(text: &str) -> Vec<String> {
    let names = ["mattermost", "telegram", "irc", "slack", "gateway"];
    text.lines()
        .filter(|l| {
            let rest: String = l.chars().skip(2).collect();
            names.iter().any(|n| rest.starts_with(&format!("{n} ")))
        })
        .map(str::to_string)
        .collect()
}

fn fix_after<'a>(text: &'a str, line_start: &str) -> &'a str {
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.starts_with(line_start) {
            return lines.next().unwrap_or_default().trim();
        }
    }
    panic!("no line starting {line_start:?} in\n{text}");
}

#[test]
fn doctor_probes_every_enabled_platform_and_names_each_fix() {
    let s = setup();
    let o = run(&s.home, &["doctor"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}\n{}", stderr(&o));
    let mm_port = s.mattermost.url().rsplit(':').next().unwrap().to_string();
    let lines = platform_lines(&text);
    assert_eq!(lines.len(), 5, "{text}");
    assert!(
        lines[0]
            .starts_with("✗ telegram     telegram rejected the credentials (TELEGRAM_BOT_TOKEN)"),
        "{text}"
    );
    assert_eq!(
        fix_after(&text, "✗ telegram"),
        "fix: check TELEGRAM_BOT_TOKEN"
    );
    assert_eq!(
        lines[1],
        "✗ slack        platforms.slack is enabled but SLACK_APP_TOKEN is not set"
    );
    assert_eq!(
        fix_after(&text, "✗ slack"),
        format!(
            "fix: set SLACK_APP_TOKEN in {}/.env (or `platforms.slack.enabled: false` in config.yaml)",
            s.home.hermes_home().display()
        )
    );
    assert_eq!(
        lines[2],
        format!("✓ mattermost   @hermes on 127.0.0.1:{mm_port}")
    );
    assert!(
        lines[3].starts_with("✗ irc          irc: network error: 127.0.0.1:"),
        "{text}"
    );
    assert!(lines[3].contains(&s.irc_port.to_string()), "{text}");
    assert_eq!(
        fix_after(&text, "✗ irc"),
        "fix: check the irc server address in the settings and that it is up and reachable from here"
    );
    assert_eq!(
        lines[4],
        "! gateway      platforms.teams is enabled, but this build has no teams adapter"
    );
    assert!(text.contains("\n3 problems, 1 warning.\n"), "{text}");
    // The probes asked who the bot is and nothing more.
    let asked: Vec<String> = s
        .mattermost
        .requests()
        .into_iter()
        .map(|(method, path, _)| format!("{method} {path}"))
        .collect();
    assert_eq!(asked, vec!["GET /api/v4/users/me"]);
    // Telegram's double records only calls with the right token: a wrong one got nowhere.
    assert!(s.telegram.calls().is_empty());
}

#[test]
fn offline_doctor_checks_only_the_settings() {
    let s = setup();
    let o = run(&s.home, &["doctor", "--offline"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    let lines = platform_lines(&text);
    assert_eq!(
        lines,
        [
            "✓ telegram     settings complete; server not checked (--offline)",
            "✗ slack        platforms.slack is enabled but SLACK_APP_TOKEN is not set",
            "✓ mattermost   settings complete; server not checked (--offline)",
            "✓ irc          settings complete; server not checked (--offline)",
            "! gateway      platforms.teams is enabled, but this build has no teams adapter",
        ],
        "{text}"
    );
    assert!(s.mattermost.requests().is_empty());
    assert!(s.telegram.calls().is_empty());
}

#[test]
fn gateway_status_lists_the_configured_platforms() {
    let s = setup();
    let o = run(&s.home, &["gateway", "status"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "Gateway not running.\n\
         \x20 telegram   configured, ready to start\n\
         \x20 mattermost configured, ready to start\n\
         \x20 irc        configured, ready to start\n\
         \x20 slack      cannot start: platforms.slack is enabled but SLACK_APP_TOKEN is not set\n\
         \x20 ! platforms.teams is enabled, but this build has no teams adapter\n\
         \x20 `hermes doctor` checks the credentials and that each server answers.\n"
    );
    assert!(s.mattermost.requests().is_empty());
}

#[test]
fn doctor_logs_in_to_real_imap_and_smtp_servers() {
    let server = match hermes_testkit::peers::MailServer::start(&[("hermes", "botpw")]) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let model = MockServer::start(Script::new(vec![Turn::text("unused")]));
    let home = TestHome::new();
    home.write_config(&mock_config_yaml(&model));
    let env = |password: &str| {
        format!(
            "EMAIL_ADDRESS=hermes@localhost\nEMAIL_PASSWORD={password}\nEMAIL_IMAP_HOST=127.0.0.1\nEMAIL_IMAP_PORT={}\nEMAIL_IMAP_SECURITY=plain\nEMAIL_SMTP_HOST=127.0.0.1\nEMAIL_SMTP_PORT={}\nEMAIL_SMTP_SECURITY=plain\n",
            server.imap_port, server.smtp_port
        )
    };
    home.write_file(".env", &env("botpw"));
    let o = run(&home, &["doctor"]);
    let text = stdout(&o);
    assert!(o.status.success(), "{text}\n{}", stderr(&o));
    assert!(
        text.contains(&format!(
            "✓ email        hermes@localhost logs in to IMAP 127.0.0.1:{} and SMTP 127.0.0.1:{}\n",
            server.imap_port, server.smtp_port
        )),
        "{text}"
    );

    home.write_file(".env", &env("wrong"));
    let o = run(&home, &["doctor"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("✗ email        email rejected the credentials (EMAIL_ADDRESS and EMAIL_PASSWORD): IMAP login as hermes@localhost refused"),
        "{text}"
    );
    assert_eq!(
        fix_after(&text, "✗ email"),
        "fix: check EMAIL_ADDRESS and EMAIL_PASSWORD"
    );
}

#[test]
fn doctor_logs_in_to_a_real_xmpp_server() {
    let server = match hermes_testkit::platforms::prosody::Prosody::start(&[("hermes", "botpw")]) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let model = MockServer::start(Script::new(vec![Turn::text("unused")]));
    let home = TestHome::new();
    home.write_config(&mock_config_yaml(&model));
    let env = |password: &str| {
        format!(
            "XMPP_JID=hermes@localhost\nXMPP_PASSWORD={password}\nXMPP_SERVER=127.0.0.1:{}\nXMPP_ALLOW_PLAINTEXT=true\n",
            server.port
        )
    };
    home.write_file(".env", &env("botpw"));
    let o = run(&home, &["doctor"]);
    let text = stdout(&o);
    assert!(o.status.success(), "{text}\n{}", stderr(&o));
    assert!(
        text.contains(&format!(
            "✓ xmpp         hermes@localhost logs in to 127.0.0.1:{}\n",
            server.port
        )),
        "{text}"
    );
    home.write_file(".env", &env("wrong"));
    let o = run(&home, &["doctor"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("✗ xmpp         xmpp: "), "{text}");
}

#[test]
fn doctor_asks_the_signal_daemon_about_the_account() {
    let signal = hermes_testkit::platforms::signal::SignalMock::start("+15550000000");
    let model = MockServer::start(Script::new(vec![Turn::text("unused")]));
    let home = TestHome::new();
    home.write_config(&mock_config_yaml(&model));
    home.write_file(
        ".env",
        &format!(
            "SIGNAL_HTTP_URL={}\nSIGNAL_ACCOUNT=+15550000000\n",
            signal.url()
        ),
    );
    let o = run(&home, &["doctor"]);
    let text = stdout(&o);
    assert!(o.status.success(), "{text}\n{}", stderr(&o));
    let port = signal.url().rsplit(':').next().unwrap().to_string();
    assert!(
        text.contains(&format!(
            "✓ signal       +15550000000 on the signal-cli daemon at 127.0.0.1:{port} (0 groups)\n"
        )),
        "{text}"
    );

    home.write_file(
        ".env",
        "SIGNAL_HTTP_URL=http://127.0.0.1:1\nSIGNAL_ACCOUNT=+15550000000\n",
    );
    let o = run(&home, &["doctor"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("✗ signal       signal: network error"),
        "{text}"
    );
}
