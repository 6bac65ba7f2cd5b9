//! Providers through the binary: every wire format selected from config.yaml, named custom
//! providers, fallback providers, credential pools and usage reporting.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_testkit::{Fault, MockServer, MockUsage, Reply, Script, TestHome, Turn};

fn root_url(server: &MockServer) -> String {
    format!("http://127.0.0.1:{}", server.port())
}

#[test]
fn anthropic_from_config_speaks_the_messages_api() {
    let server = MockServer::start(Script::new(vec![Turn::text("Hi from Claude.")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: anthropic\n  default: claude-sonnet-4-5\n  base_url: {}\n  api_key: sk-ant-test\nprompt_caching:\n  cache_ttl: 1h\n",
        root_url(&server)
    ));
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "Hi from Claude.\n");
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(req.body["system"][0]["cache_control"]["ttl"], "1h");
}

#[test]
fn a_named_custom_provider_with_the_responses_api() {
    let server = MockServer::start(Script::new(vec![Turn::text("Hi from Codex.")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: work\ncustom_providers:\n  - name: work\n    base_url: {}\n    api_key: sk-work\n    api_mode: codex_responses\n    model: gpt-5.1-codex\n",
        server.base_url()
    ));
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(req.body["model"], "gpt-5.1-codex");
}

#[test]
fn fallback_providers_take_over_when_the_primary_fails() {
    let primary = MockServer::start(Script::new(vec![Fault::http(401, "bad key").into()]));
    let backup = MockServer::start(Script::new(vec![Turn::text("backup answer")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}fallback_providers:\n  - provider: custom\n    model: backup-model\n    base_url: {}\n",
        hermes_testkit::mock_config_yaml(&primary),
        backup.base_url()
    ));
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "backup answer\n");
    assert!(
        stderr(&o).contains("falling back to backup-model"),
        "{}",
        stderr(&o)
    );
}

/// Configs written for the Python Hermes name their fallback with the older `fallback_model`
/// (a single mapping, key from `key_env`); it joins the chain after `fallback_providers`, and a
/// route named twice is tried once.
#[test]
fn the_older_fallback_model_key_still_falls_back() {
    let primary = MockServer::start(Script::new(vec![Fault::http(401, "bad key").into()]));
    let backup = MockServer::start(Script::new(vec![Turn::text("legacy backup answer")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}fallback_providers:\n  - provider: no-such-provider\n    model: x\nfallback_model:\n  provider: custom\n  model: legacy-model\n  base_url: {}/\n  key_env: BACKUP_KEY\n",
        hermes_testkit::mock_config_yaml(&primary),
        backup.base_url()
    ));
    let o = home
        .command(bin())
        .args(["-z", "hi"])
        .env("BACKUP_KEY", "sk-legacy")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "legacy backup answer\n");
    assert!(
        stderr(&o).contains("fallback_providers[0] is skipped"),
        "{}",
        stderr(&o)
    );
    let reqs = backup.requests();
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-legacy"));
    assert_eq!(reqs[0].body["model"], "legacy-model");

    // The same route under both keys is listed (and tried) once.
    home.write_config(&format!(
        "{}fallback_providers:\n  - provider: custom\n    model: legacy-model\n    base_url: {}\nfallback_model:\n  - provider: custom\n    model: Legacy-Model\n    base_url: {}/\n",
        hermes_testkit::mock_config_yaml(&primary),
        backup.base_url(),
        backup.base_url()
    ));
    let listing = stdout(&run(&home, &["model"]));
    assert!(
        listing.contains("Fallbacks, in order: custom · legacy-model\n"),
        "{listing}"
    );
}

#[test]
fn a_credential_pool_rotates_a_rejected_key_and_remembers() {
    let server = MockServer::start(Script::new(vec![
        Fault::http(401, "revoked").into(),
        Turn::text("ok"),
    ]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}credential_pool:\n  custom:\n    keys: [sk-second]\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reqs = server.requests();
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Bearer sk-mock-not-a-real-key")
    );
    assert_eq!(reqs[1].header("authorization"), Some("Bearer sk-second"));
    let state = std::fs::read_to_string(home.hermes_home().join("credential_pool.json")).unwrap();
    assert!(
        state.contains("cooldown_until") && !state.contains("sk-"),
        "{state}"
    );
}

#[test]
fn usage_flag_reports_tokens_and_cost() {
    let usage = MockUsage {
        prompt_tokens: 2000,
        completion_tokens: 100,
        cached_tokens: 1500,
    };
    let server = MockServer::start(Script::new(vec![
        Reply::text("ok").with_usage(usage).into(),
        Reply::text("ok").with_usage(usage).into(),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi", "--usage"]);
    assert!(o.status.success());
    assert_eq!(
        stderr(&o).trim(),
        "usage: 1 call · 2,000 in (1,500 cached) · 100 out · cost unknown"
    );
    let o = run(&home, &["-z", "hi", "--usage", "-m", "gpt-4o-mini"]);
    assert!(stderr(&o).contains("out · $"), "{}", stderr(&o));
}

#[test]
fn model_lists_providers_and_the_active_one() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["model"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with("Active: custom · mock-model (chosen by config.yaml model.provider)"),
        "{out}"
    );
    assert!(out.contains("key from config.yaml model.api_key"), "{out}");
    assert!(out.contains("* custom"), "{out}");
    for preset in ["openrouter", "anthropic", "bedrock", "ollama", "lmstudio"] {
        assert!(out.contains(preset), "{preset}: {out}");
    }
}

#[test]
fn reasoning_effort_comes_from_config_overrides_and_the_command_line() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("three"),
    ]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}agent:\n  reasoning_effort: high\n  reasoning_overrides:\n    mock_model: low\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    assert!(run(&home, &["-z", "hi"]).status.success());
    assert!(
        run(&home, &["-z", "hi", "--reasoning-effort", "max"])
            .status
            .success()
    );
    assert!(
        run(&home, &["-z", "hi", "--model", "other"])
            .status
            .success()
    );
    let reqs = server.chat_requests();
    assert_eq!(reqs[0]["reasoning_effort"], "low", "the per-model override");
    assert_eq!(reqs[1]["reasoning_effort"], "xhigh", "the flag wins");
    assert_eq!(
        reqs[2]["reasoning_effort"], "high",
        "the default for other models"
    );

    let bad = run(&home, &["-z", "hi", "--reasoning-effort", "loud"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("unknown reasoning effort \"loud\""),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn an_unreadable_reasoning_effort_in_config_is_a_warning() {
    let server = MockServer::start(Script::new(vec![Turn::text("fine")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}agent:\n  reasoning_effort: extreme\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("agent.reasoning_effort is ignored: unknown reasoning effort"),
        "{}",
        stderr(&o)
    );
    assert!(server.chat_requests()[0].get("reasoning_effort").is_none());
}
