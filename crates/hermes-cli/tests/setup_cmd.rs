//! `hermes setup` through the binary, without a terminal: every answer from flags, the key from
//! stdin; config.yaml edited in place, the key in `.env`, then the doctor's verdict.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::Tmux;
use common::*;

use hermes_testkit::{MockServer, Script, TestHome, Turn};

#[test]
fn a_custom_endpoint_is_set_up_checked_and_used() {
    let server = MockServer::start(Script::new(vec![Turn::text("set up and working")]));
    let home = TestHome::new();
    let url = server.base_url();
    let o = run(
        &home,
        &[
            "setup",
            "--provider",
            "custom",
            "--base-url",
            &url,
            "--model",
            "mock-model",
        ],
    );
    let out = stdout(&o);
    assert!(out.starts_with("Set up custom · mock-model in "), "{out}");
    assert!(
        out.contains("✓ endpoint"),
        "the doctor ran against it: {out}"
    );
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "set up and working\n");
    assert_eq!(server.chat_requests()[0]["model"], "mock-model");
}

#[test]
fn switching_provider_saves_the_key_in_dotenv_and_drops_the_old_endpoint() {
    let home = TestHome::new();
    home.write_config(
        "# my setup\nmodel:\n  provider: custom\n  default: old-model\n  base_url: http://127.0.0.1:9/v1\n  api_key: sk-old\nagent:\n  max_turns: 7  # enough\n",
    );
    let o = run_with_stdin(
        &home,
        &[
            "setup",
            "--provider",
            "openrouter",
            "--key-stdin",
            "--no-check",
        ],
        "sk-or-test-123\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("Set up openrouter · anthropic/claude-sonnet-4.5 in "),
        "{out}"
    );
    assert!(out.contains("Removed model.base_url"), "{out}");
    assert!(out.contains("Removed model.api_key"), "{out}");
    assert!(
        !out.contains("sk-or-test-123"),
        "the key is never echoed: {out}"
    );
    let config = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert_eq!(
        config,
        "# my setup\nmodel:\n  provider: openrouter\n  default: anthropic/claude-sonnet-4.5\nagent:\n  max_turns: 7  # enough\n"
    );
    let dotenv = std::fs::read_to_string(home.hermes_home().join(".env")).unwrap();
    assert_eq!(dotenv, "OPENROUTER_API_KEY=sk-or-test-123\n");
    let listing = stdout(&run(&home, &["model"]));
    assert!(
        listing.starts_with("Active: openrouter · anthropic/claude-sonnet-4.5"),
        "{listing}"
    );
    assert!(listing.contains("key from OPENROUTER_API_KEY"), "{listing}");
}

#[test]
fn without_a_terminal_missing_answers_are_usage_errors() {
    let home = TestHome::new();
    let o = run_with_stdin(&home, &["setup"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("give the provider with --provider"),
        "{}",
        stderr(&o)
    );
    let o = run_with_stdin(&home, &["setup", "--provider", "ollama"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("has no default model"),
        "{}",
        stderr(&o)
    );
    let o = run_with_stdin(&home, &["setup", "--provider", "teleport"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown provider `teleport`"),
        "{}",
        stderr(&o)
    );
    assert!(
        !home.hermes_home().join("config.yaml").exists(),
        "nothing written"
    );
}

/// On a terminal: a numbered provider list, the key typed without echo, the model suggested.
#[test]
fn on_a_terminal_it_asks_and_hides_the_key() {
    let home = TestHome::new();
    let tmux = Tmux::start(&home, &["setup", "--no-check"], &[], 100, 40);
    tmux.wait_for("Provider (number or name) [openrouter]:");
    let screen = tmux.screen();
    assert!(
        screen.contains("openrouter  https://openrouter.ai/api/v1 · key in OPENROUTER_API_KEY"),
        "{screen}"
    );
    tmux.type_text("deepseek");
    tmux.press("Enter");
    tmux.wait_for("DEEPSEEK_API_KEY (typing is hidden; Enter to skip):");
    tmux.type_text("sk-secret-typed");
    tmux.press("Enter");
    tmux.wait_for("Model [deepseek-chat]:");
    tmux.press("Enter");
    let screen = tmux.wait_for("[exit 0]");
    assert!(
        !screen.contains("sk-secret-typed"),
        "the key is never shown: {screen}"
    );
    assert!(
        screen.contains("Set up deepseek · deepseek-chat in "),
        "{screen}"
    );
    let dotenv = std::fs::read_to_string(home.hermes_home().join(".env")).unwrap();
    assert_eq!(dotenv, "DEEPSEEK_API_KEY=sk-secret-typed\n");
}

#[test]
fn bedrock_says_where_its_credentials_come_from() {
    let home = TestHome::new();
    let o = run_with_stdin(&home, &["setup", "--provider", "bedrock", "--no-check"], "");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Bedrock signs in with AWS_BEARER_TOKEN_BEDROCK, or AWS_ACCESS_KEY_ID"),
        "{out}"
    );
    assert!(!home.hermes_home().join(".env").exists());
}
