//! `hermes status` and `hermes doctor` through the binary: a healthy home, each kind of problem
//! doctor must name with its fix (missing key, broken YAML, a rejected key, a refused
//! connection, a damaged sessions.db, an over-budget MEMORY.md, a broken skin), `--offline`
//! making no request, and status reporting without judging and without ever printing a key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::*;

use hermes_testkit::{MockServer, Script, TestHome, Turn, mock_config_yaml};

/// Output with the test home's path and the server's port replaced by placeholders.
fn normalised(text: &str, home: &TestHome, port: Option<u16>) -> String {
    let mut text = text.replace(&home.hermes_home().display().to_string(), "$HOME");
    if let Some(port) = port {
        text = text.replace(&port.to_string(), "PORT");
    }
    text
}

/// The lines of a report whose check (doctor) or label (status) is `name`.
fn line<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| {
            let mut chars = l.chars();
            chars.next(); // the mark, or the indentation
            chars.as_str().trim_start().starts_with(&format!("{name} "))
        })
        .collect()
}

/// A server answering every request `401` with an OpenAI-style error body; records each
/// request line.
fn rejecting_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
                    break;
                }
            }
            log.lock().unwrap().push(request_line.trim().to_string());
            let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

#[test]
fn a_healthy_home_passes_every_check() {
    let server = MockServer::start(Script::new(vec![Turn::text("hello")]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    // A session in sessions.db, written by a real run.
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    home.write_file(
        "memories/MEMORY.md",
        "Project uses cargo nextest.\n§\nPrefers short answers.",
    );

    let o = run(&home, &["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "");
    assert_eq!(
        normalised(&stdout(&o), &home, Some(server.port())),
        "hermes doctor · $HOME

✓ config       $HOME/config.yaml parses; its known sections are valid
✓ provider     custom · mock-model (chosen by config.yaml model.provider), key from config.yaml model.api_key
✓ endpoint     http://127.0.0.1:PORT/v1/models answers (1 model)
✓ tools        hermes-cli: 15 tools
✓ sandbox      workspace-write: writes only in the working directory, temp and caches; network off
✓ terminal     backend local: commands run on this machine
✓ sessions     sessions.db: 1 session, quick_check ok
✓ cron         no jobs yet (`hermes cron add` creates cron/jobs.json)
✓ memory       MEMORY.md: 52/2,200 chars, 2 entries
✓ memory       USER.md: empty
✓ home         $HOME and its 1 subdirectory are writable
✓ skin         default

All checks passed.
"
    );
    // The endpoint check is one GET of the model list, with the key.
    let requests = server.requests();
    let models: Vec<_> = requests.iter().filter(|r| r.method == "GET").collect();
    assert_eq!(models.len(), 1);
    assert_eq!(models[0].path, "/v1/models");
    assert_eq!(
        models[0].header("authorization"),
        Some("Bearer sk-mock-not-a-real-key")
    );
}

#[test]
#[cfg_attr(
    not(feature = "local"),
    ignore = "expects the embedded runtime: run with --features hermes-cli/local (scripts/test does)"
)]
fn status_reports_the_setup_on_one_screen() {
    let server = MockServer::start(Script::new(vec![Turn::text("hello")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}fallback_providers:\n  - provider: openrouter\n    model: openai/gpt-5.1\ndisplay:\n  skin: ares\n",
        mock_config_yaml(&server)
    ));
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    home.write_file("memories/USER.md", "Name: Ada");
    let requests_before = server.requests().len();

    let o = run(&home, &["status"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = normalised(&stdout(&o), &home, Some(server.port()));
    let expected_start = "Hermes 0.1.0
  home         $HOME
  config.yaml  $HOME/config.yaml
  .env         none (keys come from the environment)
  provider     custom (chosen by config.yaml model.provider)
  model        mock-model
  endpoint     http://127.0.0.1:PORT/v1 · chat completions
  key          from config.yaml model.api_key (sk-…-key)
  fallbacks    openrouter · openai/gpt-5.1
  tools        hermes-cli · 15 tools
  memory       MEMORY.md 0/2,200 chars · USER.md 9/1,375 chars
  sessions     1 session in sessions.db, last active ";
    assert!(text.starts_with(expected_start), "{text}");
    assert!(text.contains(" UTC (just now)\n"), "{text}");
    assert!(
        text.ends_with(
            "  local model  qwen2.5-coder-1.5b not downloaded (`hermes model fetch-local` gets it, 1117 MB)
  skin         ares
Run `hermes doctor` to check for problems, `hermes model` for every provider.
"
        ),
        "{text}"
    );
    // Status is offline: no request reached the server.
    assert_eq!(server.requests().len(), requests_before);
}

#[test]
fn status_never_prints_a_key() {
    let home = TestHome::new();
    let config_key = "sk-config-SECRET-0123456789-abcd";
    let env_key = "sk-or-v1-SECRET-fedcba9876543210-wxyz";
    home.write_config(&format!(
        "model:\n  provider: custom\n  default: m\n  base_url: http://127.0.0.1:9/v1\n  api_key: {config_key}\nfallback_providers:\n  - provider: openrouter\n    model: x\n"
    ));
    home.write_file(".env", &format!("OPENROUTER_API_KEY={env_key}\n"));
    let o = run(&home, &["status"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o) + &stderr(&o);
    assert!(!text.contains("SECRET"), "{text}");
    assert!(
        text.contains("  key          from config.yaml model.api_key (sk-…abcd)\n"),
        "{text}"
    );
    assert!(text.contains("(1 variable)"), "{text}");

    // The provider's key from .env: only its source and a masked tail.
    let o = run(&home, &["--provider", "openrouter", "status"]);
    let text = stdout(&o) + &stderr(&o);
    assert!(!text.contains("SECRET"), "{text}");
    assert!(
        text.contains("  key          from OPENROUTER_API_KEY (sk-…wxyz)\n"),
        "{text}"
    );
}

#[test]
fn status_reports_problems_without_failing() {
    let home = TestHome::new();
    home.write_config("model:\n  provider: [custom\n");
    home.write_file(
        "sessions.db",
        "this is not a database, just bytes written over it",
    );
    let state_db = home.hermes_home().join("state.db");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../hermes-store/tests/fixtures/python_state.db"
        ),
        &state_db,
    )
    .unwrap();
    let o = run(&home, &["status"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = normalised(&stdout(&o), &home, None);
    assert!(
        text.contains("  config.yaml  invalid: $HOME/config.yaml:2:13: invalid YAML: unclosed bracket '[' (the defaults stand in)\n"),
        "{text}"
    );
    assert!(
        text.contains("  sessions     sessions.db is damaged (file is not a database: the file is not an SQLite database or is encrypted) (`hermes doctor` says what to do)\n"),
        "{text}"
    );
    let python = line(&text, "python");
    assert_eq!(python.len(), 1, "{text}");
    assert!(
        python[0].starts_with("  python       state.db of the Python Hermes: ")
            && python[0].ends_with("; `hermes sessions import` copies them here"),
        "{text}"
    );
}

#[test]
fn a_missing_key_names_the_variable_to_set() {
    let home = TestHome::new();
    home.write_config("model:\n  provider: openrouter\n");
    let o = run(&home, &["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = normalised(&stdout(&o), &home, None);
    assert!(
        text.contains(
            "✗ provider     no API key for `openrouter`
               fix: set OPENROUTER_API_KEY in the environment or in $HOME/.env (or model.api_key in config.yaml)
! endpoint     not checked: no provider resolves
"
        ),
        "{text}"
    );
    assert!(text.ends_with("\n1 problem, 1 warning.\n"), "{text}");
    assert_eq!(
        stderr(&o),
        "hermes: doctor found 1 problem; the fix for each is above\n"
    );
}

#[test]
fn broken_yaml_is_reported_with_line_and_column() {
    let home = TestHome::new();
    home.write_config("model:\n  provider: [custom\n");
    let o = run(&home, &["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = normalised(&stdout(&o), &home, None);
    assert!(
        text.contains(
            "✗ config       $HOME/config.yaml:2:13: invalid YAML: unclosed bracket '['
               fix: correct the YAML syntax at line 2, column 13 (indentation, a missing `:` or an unclosed quote or bracket)
! provider     provider, endpoint, fallbacks and tools not checked: config.yaml cannot be used
               fix: fix config.yaml first
"
        ),
        "{text}"
    );
    // Checks that do not depend on the config still run.
    assert!(text.contains("✓ sessions "), "{text}");
    assert!(text.contains("✓ home "), "{text}");
}

#[test]
fn a_known_section_with_a_wrong_type_fails_but_unknown_keys_are_fine() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}memory:\n  memory_char_limit: lots\nsomething_new:\n  anything: [1, 2]\n",
        mock_config_yaml(&server)
    ));
    let o = run(&home, &["doctor", "--offline"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = normalised(&stdout(&o), &home, None);
    let config = line(&text, "config");
    assert_eq!(config.len(), 1, "{text}");
    assert!(
        config[0].starts_with(
            "✗ config       $HOME/config.yaml: invalid value for `memory.memory_char_limit`: "
        ),
        "{text}"
    );
    assert!(
        text.contains("               fix: give `memory.memory_char_limit` a value of the right type in config.yaml, or remove it\n"),
        "{text}"
    );
    assert!(
        text.contains("! tools        not checked: config.yaml has an invalid value\n"),
        "{text}"
    );
    assert!(text.ends_with("\n1 problem, 2 warnings.\n"), "{text}");
}

#[test]
fn a_rejected_key_is_a_failure_with_the_key_source_named() {
    let (port, seen) = rejecting_server();
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: custom\n  default: m\n  base_url: http://127.0.0.1:{port}/v1\n  api_key: ${{WORK_KEY}}\n"
    ));
    home.write_file(".env", "WORK_KEY=sk-rejected-0000000000000000\n");
    let o = run(&home, &["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = normalised(&stdout(&o), &home, Some(port));
    assert!(
        text.contains(
            "✗ endpoint     http://127.0.0.1:PORT/v1/models rejected the key from config.yaml model.api_key (HTTP 401: Incorrect API key provided)
               fix: put a valid key in config.yaml model.api_key
"
        ),
        "{text}"
    );
    assert!(!text.contains("sk-rejected"), "{text}");
    assert_eq!(seen.lock().unwrap().as_slice(), ["GET /v1/models HTTP/1.1"]);
}

#[test]
fn a_refused_connection_names_the_url() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: custom\n  default: m\n  base_url: http://127.0.0.1:{port}/v1\n"
    ));
    let o = run(&home, &["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = normalised(&stdout(&o), &home, Some(port));
    assert!(
        text.contains(
            "✗ endpoint     nothing answers at http://127.0.0.1:PORT/v1/models (connection refused)
               fix: start the server, or correct model.base_url in config.yaml
"
        ),
        "{text}"
    );
}

#[test]
fn offline_makes_no_request() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["doctor", "--offline"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let text = normalised(&stdout(&o), &home, Some(server.port()));
    assert!(
        text.contains("! endpoint     http://127.0.0.1:PORT/v1 not checked (--offline)\n"),
        "{text}"
    );
    assert!(text.ends_with("\nNo problems; 1 warning.\n"), "{text}");
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[test]
fn a_damaged_sessions_db_fails_and_is_left_untouched() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let garbage: Vec<u8> = (0..16_384u32).map(|i| (i * 31 % 253) as u8).collect();
    let db = home.hermes_home().join("sessions.db");
    std::fs::write(&db, &garbage).unwrap();
    let o = run(&home, &["doctor", "--offline"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = normalised(&stdout(&o), &home, None);
    assert!(
        text.contains(
            "✗ sessions     sessions.db is damaged (file is not a database: the file is not an SQLite database or is encrypted)
               fix: nothing was changed: move it aside (`mv $HOME/sessions.db $HOME/sessions.db.damaged`) and hermes starts a new one; `sqlite3 $HOME/sessions.db.damaged .recover` can salvage its contents
"
        ),
        "{text}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), garbage, "never modified");
    assert!(!home.hermes_home().join("sessions.db-wal").exists());
}

#[test]
fn an_over_budget_memory_file_is_a_warning_with_the_fix() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}memory:\n  user_char_limit: 20\n",
        mock_config_yaml(&server)
    ));
    home.write_file("memories/MEMORY.md", &"x".repeat(2_300));
    home.write_file("memories/USER.md", "Name: Ada Lovelace, mathematician");
    let o = run(&home, &["doctor", "--offline"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let text = normalised(&stdout(&o), &home, None);
    assert!(
        text.contains(
            "! memory       MEMORY.md: 2,300/2,200 chars, 1 entry: over its budget, so nothing more can be added
               fix: shorten or remove entries in $HOME/memories/MEMORY.md, or raise memory.memory_char_limit in config.yaml
! memory       USER.md: 33/20 chars, 1 entry: over its budget, so nothing more can be added
               fix: shorten or remove entries in $HOME/memories/USER.md, or raise memory.user_char_limit in config.yaml
"
        ),
        "{text}"
    );
    assert!(text.ends_with("\nNo problems; 3 warnings.\n"), "{text}");
}

#[test]
fn fallbacks_and_skins_are_checked_one_by_one() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}fallback_providers:\n  - provider: openrouter\n    model: openai/gpt-5.1\n  - provider: custom\n    model: backup\n    base_url: {}\ndisplay:\n  skin: neon\n",
        mock_config_yaml(&server),
        server.base_url()
    ));
    home.write_file("skins/broken.yaml", "colors: [\n");
    let o = run(&home, &["doctor", "--offline"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = normalised(&stdout(&o), &home, Some(server.port()));
    assert!(
        text.contains(
            "✗ fallback     fallback_providers[0]: no API key for provider `openrouter`: set OPENROUTER_API_KEY in the environment or in $HERMES_HOME/.env, or model.api_key in config.yaml
               fix: correct fallback_providers[0] in config.yaml; until then it is skipped
✓ fallback     fallback_providers[1]: custom · backup
"
        ),
        "{text}"
    );
    let skins = line(&text, "skin");
    assert_eq!(skins.len(), 2, "{text}");
    assert!(
        skins[0].starts_with("✗ skin         $HOME/skins/broken.yaml: invalid YAML: "),
        "{text}"
    );
    assert!(
        skins[1].starts_with("✗ skin         display.skin: no skin named `neon` (available: "),
        "{text}"
    );
    assert!(text.ends_with("\n3 problems, 1 warning.\n"), "{text}");
}

#[test]
fn a_profile_is_checked_in_its_own_home() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_file("profiles/work/config.yaml", &mock_config_yaml(&server));
    let o = run(&home, &["status", "-p", "work"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = normalised(&stdout(&o), &home, Some(server.port()));
    assert!(
        text.contains("  home         $HOME/profiles/work\n  profile      work\n  config.yaml  $HOME/profiles/work/config.yaml\n"),
        "{text}"
    );
    let o = run(&home, &["doctor", "-p", "work", "--offline"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        normalised(&stdout(&o), &home, None)
            .starts_with("hermes doctor · $HOME/profiles/work (profile work)\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
#[cfg_attr(
    not(feature = "local"),
    ignore = "expects the embedded runtime: run with --features hermes-cli/local (scripts/test does)"
)]
fn the_local_model_file_is_checked_when_the_local_provider_is_selected() {
    let home = TestHome::new();
    home.write_config("model:\n  provider: local\n  path: models/fake.gguf\n");
    home.write_file("models/fake.gguf", "not a model at all");
    let o = run(&home, &["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = normalised(&stdout(&o), &home, None);
    assert!(
        text.contains("✓ endpoint     in-process model: nothing to reach\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "✗ local model  $HOME/models/fake.gguf is not a GGUF model file: it does not start with the GGUF magic bytes
               fix: point model.path at a .gguf model file (a download may have been cut short)
"
        ),
        "{text}"
    );
}
