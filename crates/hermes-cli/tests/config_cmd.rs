//! `hermes config` through the binary: show (secrets masked), get, set and unset that keep a
//! commented config.yaml intact except for the changed line, nested creation, types, refusals,
//! profiles, `edit` with a scripted editor, and settings that actually take effect in a run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::json;

/// A config.yaml as a user writes it: comments, blank lines, aligned comments, quoting.
const COMMENTED: &str = "\
# My Hermes settings
model:
  provider: openrouter          # main provider
  default: anthropic/claude-sonnet-4.5

# The loop
agent:
  max_turns: 90                 # model calls per turn
  reasoning_effort: 'medium'
toolsets: [hermes-cli]          # all of them
";

fn config_text(home: &TestHome) -> String {
    std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap()
}

fn config_path(home: &TestHome) -> String {
    home.hermes_home().join("config.yaml").display().to_string()
}

/// Runs `hermes ARGS`, expects success, returns stdout.
fn ok(home: &TestHome, args: &[&str]) -> String {
    let o = run(home, args);
    assert!(
        o.status.success(),
        "{args:?}: {} {}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Runs `hermes ARGS`, expects exit `code` and one `hermes: ` line on stderr; returns it.
fn fails(home: &TestHome, args: &[&str], code: i32) -> String {
    let o = run(home, args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("hermes: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn set_get_unset_keep_a_commented_config_intact_except_the_changed_line() {
    let home = TestHome::new();
    home.write_config(COMMENTED);
    let path = config_path(&home);

    let out = ok(&home, &["config", "set", "model.default", "gpt-5.1"]);
    assert_eq!(out, format!("Set model.default = gpt-5.1 in {path}\n"));
    assert_eq!(
        config_text(&home),
        COMMENTED.replace(
            "  default: anthropic/claude-sonnet-4.5\n",
            "  default: gpt-5.1\n"
        )
    );
    assert_eq!(ok(&home, &["config", "get", "model.default"]), "gpt-5.1\n");

    // The comment after the old value stays, and so does its alignment.
    ok(&home, &["config", "set", "agent.max_turns", "12"]);
    assert_eq!(
        config_text(&home),
        COMMENTED
            .replace(
                "  default: anthropic/claude-sonnet-4.5\n",
                "  default: gpt-5.1\n"
            )
            .replace(
                "  max_turns: 90                 #",
                "  max_turns: 12                 #"
            )
    );
    // A quoted value keeps its quotes.
    ok(&home, &["config", "set", "agent.reasoning_effort", "high"]);
    assert!(
        config_text(&home).contains("  reasoning_effort: 'high'\n"),
        "{}",
        config_text(&home)
    );

    // Unset removes exactly that line; unset again: not set.
    home.write_config(COMMENTED);
    let out = ok(&home, &["config", "unset", "model.provider"]);
    assert_eq!(out, format!("Unset model.provider in {path}\n"));
    assert_eq!(
        config_text(&home),
        COMMENTED.replace("  provider: openrouter          # main provider\n", "")
    );
    let err = fails(&home, &["config", "unset", "model.provider"], 1);
    assert_eq!(
        err,
        format!("hermes: model.provider is not set in {path}\n")
    );
    let err = fails(&home, &["config", "get", "model.provider"], 1);
    assert_eq!(
        err,
        format!("hermes: model.provider is not set in {path}\n")
    );

    // A section left empty goes with its last key.
    ok(&home, &["config", "unset", "model.default"]);
    assert_eq!(
        config_text(&home),
        COMMENTED.replace(
            "model:\n  provider: openrouter          # main provider\n  default: anthropic/claude-sonnet-4.5\n",
            ""
        )
    );
}

#[test]
fn missing_sections_and_the_file_are_created() {
    let home = TestHome::new();
    ok(
        &home,
        &[
            "config",
            "set",
            "auxiliary.compression.model",
            "google/gemini-2.5-flash",
        ],
    );
    assert_eq!(
        config_text(&home),
        "auxiliary:\n  compression:\n    model: google/gemini-2.5-flash\n"
    );

    home.write_config(COMMENTED);
    ok(
        &home,
        &[
            "config",
            "set",
            "auxiliary.compression.model",
            "google/gemini-2.5-flash",
        ],
    );
    ok(
        &home,
        &[
            "config",
            "set",
            "model.base_url",
            "http://localhost:8080/v1",
        ],
    );
    assert_eq!(
        config_text(&home),
        COMMENTED
            .replace(
                "claude-sonnet-4.5\n",
                "claude-sonnet-4.5\n  base_url: http://localhost:8080/v1\n"
            )
            .replace(
                "# all of them\n",
                "# all of them\nauxiliary:\n  compression:\n    model: google/gemini-2.5-flash\n"
            )
    );
    assert_eq!(
        ok(&home, &["config", "get", "auxiliary"]),
        "compression:\n  model: google/gemini-2.5-flash\n"
    );
    // Sections print in the file's order, not sorted.
    assert_eq!(
        ok(&home, &["config", "get", "model"]),
        "provider: openrouter\ndefault: anthropic/claude-sonnet-4.5\nbase_url: http://localhost:8080/v1\n"
    );
}

#[test]
fn values_are_typed_as_yaml_and_strings_quoted_when_needed() {
    let home = TestHome::new();
    let path = config_path(&home);
    let cases = [
        ("true", "true", "x: true\n"),
        ("\"true\"", "\"true\"", "x: \"true\"\n"),
        ("3", "3", "x: 3\n"),
        ("'3'", "\"3\"", "x: \"3\"\n"),
        ("0.5", "0.5", "x: 0.5\n"),
        ("null", "null", "x: null\n"),
        ("-2", "-2", "x: -2\n"),
        ("[a, b]", "[a, b]", "x: [a, b]\n"),
        ("{k: v}", "{k: v}", "x: {k: v}\n"),
        ("gpt-5.1", "gpt-5.1", "x: gpt-5.1\n"),
        ("yes please", "yes please", "x: yes please\n"),
        ("a: b", "\"a: b\"", "x: \"a: b\"\n"),
        ("see #5", "\"see #5\"", "x: \"see #5\"\n"),
    ];
    for (given, shown, file) in cases {
        home.write_config("x: 1\n");
        let out = ok(&home, &["config", "set", "x", given]);
        assert_eq!(out, format!("Set x = {shown} in {path}\n"), "{given}");
        assert_eq!(config_text(&home), file, "{given}");
    }
    home.write_config("x: \"3\"\nn: 3\nb: false\nz: ~\nl: [a, 'b c']\n");
    assert_eq!(ok(&home, &["config", "get", "x"]), "3\n");
    assert_eq!(ok(&home, &["config", "get", "n"]), "3\n");
    assert_eq!(ok(&home, &["config", "get", "b"]), "false\n");
    assert_eq!(ok(&home, &["config", "get", "z"]), "null\n");
    assert_eq!(ok(&home, &["config", "get", "l"]), "- a\n- b c\n");
    assert_eq!(ok(&home, &["config", "get", "l.1"]), "b c\n");

    // `${VAR}` is shown as written, not substituted.
    home.write_config("model:\n  base_url: ${MY_URL}/v1\n");
    let mut cmd = home.command(bin());
    let o = cmd
        .args(["config", "get", "model.base_url"])
        .env("MY_URL", "http://x")
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "${MY_URL}/v1\n");
}

#[test]
fn flow_style_sections_scalars_and_bad_keys_are_refused_and_the_file_left_alone() {
    let home = TestHome::new();
    let path = config_path(&home);
    let initial = "# mine\ndisplay: {skin: mono}   # compact\nmodel: gpt-5\n";
    home.write_config(initial);
    let err = fails(&home, &["config", "set", "display.skin", "ares"], 2);
    assert_eq!(
        err,
        format!(
            "hermes: {path}: cannot change `display.skin`: `display` is written in flow style (`{{skin: mono}}`), which this editor does not change; edit that line by hand; the file was left unchanged\n"
        )
    );
    let err = fails(&home, &["config", "unset", "display.skin"], 2);
    assert!(err.contains("flow style"), "{err}");
    let err = fails(&home, &["config", "set", "model.default", "x"], 2);
    assert!(
        err.contains("`model` holds a single value (`gpt-5`)"),
        "{err}"
    );
    let err = fails(&home, &["config", "set", "model..default", "x"], 2);
    assert!(err.contains("not a key path"), "{err}");
    assert_eq!(config_text(&home), initial);

    // The whole flow mapping can still be replaced.
    ok(&home, &["config", "set", "display", "{skin: ares}"]);
    assert_eq!(
        config_text(&home),
        "# mine\ndisplay: {skin: ares}   # compact\nmodel: gpt-5\n"
    );

    home.write_config("model: [unclosed\n");
    let err = fails(&home, &["config", "set", "a", "1"], 2);
    assert!(err.starts_with(&format!("hermes: {path}:1:")), "{err}");
    assert!(err.contains("invalid YAML"), "{err}");
    home.write_config("- a list\n");
    let err = fails(&home, &["config", "set", "a", "1"], 2);
    assert!(err.contains("not a mapping"), "{err}");
    assert_eq!(config_text(&home), "- a list\n");
}

#[test]
fn show_prints_the_file_as_written_with_secrets_masked() {
    let home = TestHome::new();
    let path = config_path(&home);
    let o = run(&home, &["config"]);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        format!(
            "No config.yaml at {path}: Hermes uses its defaults.\nCreate it with `hermes config set KEY VALUE` (e.g. `hermes config set model.default anthropic/claude-sonnet-4.5`) or `hermes config edit`.\n"
        )
    );

    home.write_config(
        "model:\n  default: gpt-5.1   # the model\n  api_key: sk-proj-0123456789abcdef   # oops\n  max_tokens: 4096\ncustom_providers:\n  - name: work\n    api_key: ${WORK_KEY}\n    base_url: http://llm.local/v1\ncredential_pool:\n  openrouter:\n    keys:\n      - sk-or-v1-aaaaaaaaaaaaaaaa\n      - ${OR_KEY_2}\ndiscord:\n  bot_token: \"short\"\n",
    );
    let expected = format!(
        "model:\n  default: gpt-5.1   # the model\n  api_key: sk-p...cdef   # oops\n  max_tokens: 4096\ncustom_providers:\n  - name: work\n    api_key: ${{WORK_KEY}}\n    base_url: http://llm.local/v1\ncredential_pool:\n  openrouter:\n    keys:\n      - sk-o...aaaa\n      - ${{OR_KEY_2}}\ndiscord:\n  bot_token: \"***\"\n# file: {path}\n"
    );
    assert_eq!(ok(&home, &["config", "show"]), expected);
    assert_eq!(ok(&home, &["config"]), expected);
    // Sections printed by `get` are masked too; a secret asked for by name is not.
    assert_eq!(
        ok(&home, &["config", "get", "model"]),
        "default: gpt-5.1\napi_key: sk-p...cdef\nmax_tokens: 4096\n"
    );
    assert_eq!(
        ok(&home, &["config", "get", "model.api_key"]),
        "sk-proj-0123456789abcdef\n"
    );

    // Setting a secret never echoes it, and says where secrets belong.
    let o = run(
        &home,
        &["config", "set", "model.api_key", "sk-new-secret-value-123"],
    );
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        format!("Set model.api_key = (hidden) in {path}\n")
    );
    let env_path = home.hermes_home().join(".env").display().to_string();
    assert_eq!(
        stderr(&o),
        format!(
            "hermes: note: secrets are safer in {env_path} (NAME=value), referenced here as ${{NAME}}\n"
        )
    );
    assert!(!stdout(&o).contains("sk-new"), "never echoed");
    assert!(config_text(&home).contains("  api_key: sk-new-secret-value-123   # oops\n"));
    // A reference is not a secret.
    let o = run(
        &home,
        &["config", "set", "model.api_key", "${OPENAI_API_KEY}"],
    );
    assert_eq!(
        stdout(&o),
        format!("Set model.api_key = ${{OPENAI_API_KEY}} in {path}\n")
    );
    assert_eq!(stderr(&o), "");

    // A broken file is still shown, then reported with its line and column.
    home.write_config("model:\n  default: [oops\n");
    let o = run(&home, &["config", "show"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stdout(&o),
        format!("model:\n  default: [oops\n# file: {path}\n")
    );
    assert!(
        stderr(&o).starts_with(&format!("hermes: {path}:2:")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn paths_profiles_and_hermes_home() {
    let home = TestHome::new();
    let root = home.hermes_home();
    assert_eq!(
        ok(&home, &["config", "path"]),
        format!("{}\n", root.join("config.yaml").display())
    );
    assert_eq!(
        ok(&home, &["config", "env-path"]),
        format!("{}\n", root.join(".env").display())
    );
    let work = root.join("profiles/work");
    for args in [
        &["config", "-p", "work", "path"][..],
        &["config", "path", "--profile", "work"],
        &["-p", "work", "config", "path"],
    ] {
        assert_eq!(
            ok(&home, args),
            format!("{}\n", work.join("config.yaml").display()),
            "{args:?}"
        );
    }
    ok(
        &home,
        &["config", "-p", "work", "set", "model.default", "work-model"],
    );
    ok(
        &home,
        &["-p", "work", "config", "set", "agent.max_turns", "7"],
    );
    assert_eq!(
        std::fs::read_to_string(work.join("config.yaml")).unwrap(),
        "model:\n  default: work-model\nagent:\n  max_turns: 7\n"
    );
    assert!(
        !root.join("config.yaml").exists(),
        "the default home is untouched"
    );
    assert_eq!(
        ok(&home, &["config", "get", "model.default", "-p", "work"]),
        "work-model\n"
    );
    fails(&home, &["config", "get", "model.default"], 1);
    let err = fails(&home, &["config", "-p", "../x", "path"], 2);
    assert!(err.contains("profile names"), "{err}");
}

#[test]
fn edit_runs_the_editor_and_reports_a_broken_file_with_its_position() {
    let home = TestHome::new();
    let path = config_path(&home);
    let script = |name: &str, body: &str| {
        let p = home.root().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    };
    let good = script(
        "good-editor",
        "printf 'agent:\\n  max_turns: 4\\n' >> \"$1\"",
    );
    let broken = script(
        "broken-editor",
        "printf 'model:\\n  default: [oops\\n' > \"$1\"",
    );
    let idle = script("idle-editor", "true");

    // No file and nothing written: no file is left behind.
    let o = home
        .command(bin())
        .args(["config", "edit"])
        .env("EDITOR", &idle)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!home.hermes_home().join("config.yaml").exists());

    home.write_config("# mine\n");
    let o = home
        .command(bin())
        .args(["config", "edit"])
        .env("EDITOR", "false")
        .env("VISUAL", &good)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{path} is valid\n"));
    assert_eq!(config_text(&home), "# mine\nagent:\n  max_turns: 4\n");

    let o = home
        .command(bin())
        .args(["config", "edit"])
        .env("EDITOR", &broken)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.starts_with(&format!("hermes: {path}:2:")), "{err}");
    assert!(err.contains("invalid YAML"), "{err}");
    assert!(err.contains("hermes config edit"), "{err}");

    let o = home
        .command(bin())
        .args(["config", "edit"])
        .env("EDITOR", "false")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("the editor `false` failed"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn max_turns_set_with_config_set_limits_the_next_run() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "true"})),
        Turn::text("wrap-up"),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    ok(&home, &["config", "set", "agent.max_turns", "1"]);
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "wrap-up\n");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2, "one call with tools, then the wrap-up");
    assert!(requests[0].get("tools").is_some());
    assert!(requests[1].get("tools").is_none());
}

#[test]
fn model_default_set_with_config_set_is_the_model_requested() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    ok(&home, &["config", "set", "model.default", "chosen-model"]);
    assert_eq!(ok(&home, &["-z", "hi"]), "ok\n");
    assert_eq!(server.chat_requests()[0]["model"], "chosen-model");
}
