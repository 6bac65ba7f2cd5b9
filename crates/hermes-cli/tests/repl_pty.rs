//! The interactive chat in a real terminal: the binary runs inside tmux (a terminal emulator
//! with a pseudo-terminal), keys are typed with `send-keys` and the screen is read with
//! `capture-pane`, against the scripted mock server. A prompt is typed and its markdown answer
//! streams in rendered; a dangerous command is approved at the prompt; `/usage`, `/undo`
//! (the message comes back into the editor, Ctrl-C clears it), `/new` and Ctrl-D work; the
//! requests and the stored sessions show what happened. tmux is installed by scripts/setup.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::Tmux;

use hermes_store::Store;
use hermes_testkit::{MockServer, Reply, Script, TestHome, Turn};
use serde_json::json;

const ANSWER: &str = "# Deploy plan\n\nFirst **check** the `build` dir:\n\n- clean it\n- rebuild\n\n```rust\nfn main() { println!(\"hi\"); }\n```\n\n| step | time |\n|------|-----:|\n| clean | 1s |\n| build | 30s |\n\nDone.";

#[test]
fn a_session_in_a_real_terminal() {
    let server = MockServer::start(Script::new(vec![
        Reply::text(ANSWER)
            .with_chunk_size(7)
            .with_chunk_delay_ms(10)
            .into(),
        Turn::tool("terminal", json!({"command": "rm -rf build"})),
        Turn::text("Removed the build directory."),
        Turn::text("A fresh answer."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    std::fs::create_dir_all(home.workdir().join("build")).unwrap();
    let tmux = Tmux::start(&home, &["chat"], &[], 100, 50);

    // The banner and the prompt.
    let screen = tmux.wait_for("❯");
    assert!(screen.contains("⚕ Hermes Agent"), "{screen}");
    assert!(screen.contains("mock-model via custom"), "{screen}");

    // A prompt; the markdown answer is rendered, not echoed raw.
    tmux.type_text("plan the deploy");
    tmux.press("Enter");
    let screen = tmux.wait_for("Done.");
    assert!(screen.contains("⚕ Hermes"), "the response label: {screen}");
    assert!(
        screen.contains("Deploy plan") && !screen.contains("# Deploy plan"),
        "{screen}"
    );
    assert!(screen.contains("First check the build dir:"), "{screen}");
    assert!(
        screen.contains("• clean it") && screen.contains("• rebuild"),
        "{screen}"
    );
    assert!(screen.contains("╭─ rust"), "{screen}");
    assert!(
        screen.contains("│ fn main() { println!(\"hi\"); }"),
        "{screen}"
    );
    assert!(screen.contains("│ step  │ time │"), "{screen}");
    assert!(
        screen.contains("│ build │  30s │"),
        "right-aligned: {screen}"
    );
    assert!(!screen.contains("|------|"), "{screen}");
    assert!(
        tmux.styled_screen().contains("\x1b[1m"),
        "headings and tables are styled on a colour terminal"
    );

    // A dangerous command: the approval prompt explains the rule; answered once.
    tmux.wait_for_count("❯", 2);
    tmux.type_text("clean up");
    tmux.press("Enter");
    let screen = tmux.wait_for("choice ❯");
    assert!(
        screen.contains("⚠ Dangerous command: recursive delete"),
        "{screen}"
    );
    assert!(screen.contains("rm -rf build"), "{screen}");
    assert!(
        screen.contains("matches the \"recursive delete\" rule"),
        "{screen}"
    );
    assert!(
        screen.contains("[o]nce / [s]ession / [a]lways / [d]eny"),
        "{screen}"
    );
    tmux.type_text("o");
    tmux.press("Enter");
    let screen = tmux.wait_for("Removed the build directory.");
    assert!(screen.contains("→ allowed once"), "{screen}");
    assert!(screen.contains("terminal"), "{screen}");
    assert!(
        screen.contains("rm -rf build") && screen.contains("s ✓"),
        "{screen}"
    );
    assert!(!home.workdir().join("build").exists());

    // /usage adds up the turns.
    tmux.wait_for_count("❯", 3);
    tmux.type_text("/usage");
    tmux.press("Enter");
    let screen = tmux.wait_for("Context     ~");
    assert!(screen.contains("Last turn   2 calls"), "{screen}");
    assert!(screen.contains("Session     2 turns · 3 calls"), "{screen}");

    // /undo takes the exchange back and puts the message in the editor; Ctrl-C clears it.
    tmux.type_text("/undo");
    tmux.press("Enter");
    let screen = tmux.wait_for("Took back 1 exchange");
    assert!(screen.contains("back in the prompt"), "{screen}");
    tmux.wait_for("❯ clean up");
    tmux.press("C-c");

    // /new starts over: the next request carries only the new message.
    tmux.type_text("/new");
    tmux.press("Enter");
    tmux.wait_for("Started a new conversation.");
    tmux.type_text("fresh start");
    tmux.press("Enter");
    tmux.wait_for("A fresh answer.");

    // Ctrl-D at the prompt exits cleanly.
    tmux.wait_for_count("❯", 7);
    tmux.press("C-d");
    let screen = tmux.wait_for("[exit 0]");
    assert!(screen.contains("Goodbye! ⚕"), "{screen}");

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    let last = requests[3]["messages"].as_array().unwrap();
    assert_eq!(last.len(), 2, "system prompt and the new message");
    assert_eq!(last[1]["content"], "fresh start");

    // The store holds what the screen ended with: the undone exchange is gone.
    let store = Store::open(home.hermes_home().join("sessions.db")).unwrap();
    let sessions = store.list_sessions(10, None).unwrap();
    assert_eq!(sessions.len(), 2);
    let first = store.messages(&sessions[1].session.id).unwrap();
    let contents: Vec<&str> = first.iter().map(|m| m.message.content.as_str()).collect();
    assert_eq!(contents, vec!["plan the deploy", ANSWER]);
    assert_eq!(
        sessions[1].session.end_reason.as_deref(),
        Some("new_session")
    );
    let second = store.messages(&sessions[0].session.id).unwrap();
    assert_eq!(second.len(), 2);
}

#[test]
fn no_color_and_a_narrow_terminal_get_plain_fitted_output() {
    let server = MockServer::start(Script::new(vec![
        Reply::text("Reasoned answer with a table:\n\n| name | description |\n|---|---|\n| alpha | the first letter of the Greek alphabet, used everywhere |\n")
            .with_reasoning("Let me think about letters.")
            .with_delay_ms(1500)
            .into(),
        Turn::tool("read_file", json!({"path": "notes.txt"})),
        Turn::text("Read it."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    std::fs::write(home.workdir().join("notes.txt"), "one\ntwo\n").unwrap();
    let tmux = Tmux::start(&home, &[], &[("NO_COLOR", "1")], 44, 60);
    tmux.wait_for("❯");
    tmux.type_text("/reasoning on");
    tmux.press("Enter");
    tmux.wait_for("reasoning: shown");
    tmux.type_text("/verb");
    tmux.press("Tab");
    tmux.wait_for("/verbose");
    tmux.press("Enter");
    tmux.wait_for("results: shown");
    tmux.type_text("greek letters");
    tmux.press("Enter");
    // While the model is silent: a spinner with a face, a verb and the time so far.
    let spinning = |l: &str| l.starts_with(['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']);
    let spinner = tmux.wait_for_line("the spinner", spinning);
    assert!(
        spinner.contains("…") && spinner.trim_end().ends_with('s'),
        "{spinner:?}"
    );
    assert!(
        spinner.chars().any(|c| "◕◠˘´＾".contains(c)),
        "a face: {spinner:?}"
    );
    let screen = tmux.wait_for("└");
    assert!(
        !screen.lines().any(spinning),
        "the spinner is gone once text streams: {screen}"
    );
    assert!(
        screen.contains("│ Let me think about letters."),
        "reasoning shown: {screen}"
    );
    assert!(screen.contains("alphabet"), "{screen}");
    tmux.wait_for_count("❯", 4);
    tmux.type_text("read the notes");
    tmux.press("Enter");
    let screen = tmux.wait_for("Read it.");
    assert!(
        screen.contains("read_file") && screen.contains("notes.txt"),
        "{screen}"
    );
    assert!(screen.contains("args"), "verbose arguments: {screen}");
    assert!(screen.contains("read_file →"), "verbose result: {screen}");
    for line in screen.lines() {
        assert!(
            line.chars().count() <= 44,
            "wider than the terminal: {line:?}\n{screen}"
        );
    }
    let styled = tmux.styled_screen();
    assert!(
        !styled.contains("\x1b[38") && !styled.contains("\x1b[1m"),
        "NO_COLOR: no colours or bold: {styled:?}"
    );
    tmux.press("C-c");
    // As a user does: the second Ctrl-C after the hint. Sent at once, it could arrive while
    // the editor was being set up again and be lost, which made this test flaky under load.
    tmux.wait_for("Ctrl-C again to exit");
    tmux.press("C-c");
    let screen = tmux.wait_for("[exit 130]");
    assert!(screen.contains("Goodbye"), "{screen}");
}

#[test]
fn paste_timeout_and_ctrl_c() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("Got both lines."),
        Turn::tool("terminal", json!({"command": "rm -rf build"})),
        Turn::text("Not deleted, then."),
        Reply::text("too late").with_delay_ms(20_000).into(),
    ]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}approvals:\n  timeout: 1\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    std::fs::create_dir_all(home.workdir().join("build")).unwrap();
    let tmux = Tmux::start(&home, &[], &[], 100, 50);
    tmux.wait_for("❯");

    // A pasted block with a newline is one message, not two.
    tmux.run(&["set-buffer", "-b", "clip", "first line\nsecond line"]);
    tmux.run(&["paste-buffer", "-p", "-b", "clip", "-t", "main"]);
    tmux.press("Enter");
    tmux.wait_for("Got both lines.");
    let first = &server.chat_requests()[0];
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "first line\nsecond line"
    );

    // Nobody answers the approval prompt: it times out, the command is refused, and the
    // editor is back for the next message.
    tmux.wait_for_count("❯", 2);
    tmux.type_text("clean");
    tmux.press("Enter");
    tmux.wait_for("choice ❯");
    tmux.wait_for("Not deleted, then.");
    assert!(home.workdir().join("build").exists());
    let refused = server.chat_requests()[2].to_string();
    assert!(
        refused.contains("nobody answered the approval prompt"),
        "{refused}"
    );
    let screen = tmux.wait_for_count("❯", 3);
    assert!(screen.contains("s ✗"), "the refused call: {screen}");
    assert!(screen.contains("→ no answer in time"), "{screen}");

    // Ctrl-C stops a turn that is waiting for the model; a second one at the empty prompt exits.
    tmux.type_text("slow one");
    tmux.press("Enter");
    tmux.wait_for_line("the spinner", |l| {
        l.contains("…") && l.trim_end().ends_with('s')
    });
    tmux.press("C-c");
    tmux.wait_for("· interrupted");
    tmux.wait_for("Ctrl-C again to exit");
    tmux.press("C-c");
    tmux.wait_for("[exit 130]");
    assert_eq!(server.chat_requests().len(), 4);
}
