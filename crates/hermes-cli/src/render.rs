//! Turning agent events into terminal output. [`StreamRenderer`] writes the answer as it
//! streams plus one line per finished tool call; [`ProgressRenderer`] (one-shot mode) keeps
//! stdout for the final answer and reports tools and retries on stderr.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use hermes_core::EventSink;
use hermes_protocol::AgentEvent;

/// One line for a finished tool call: `  ✓ terminal  echo hello  (0.12s)`.
pub fn tool_line(name: &str, preview: &str, duration: Duration, ok: bool) -> String {
    let mark = if ok { "✓" } else { "✗" };
    let mut line = format!("  {mark} {name}");
    if !preview.is_empty() {
        line.push_str("  ");
        line.push_str(preview);
    }
    line.push_str(&format!("  ({:.2}s)", duration.as_secs_f64()));
    line
}

/// `usage: 3 calls · 12,345 in (10,000 cached) · 678 out · $0.0123` (or `cost unknown`).
pub fn usage_line(turn: &hermes_runtime::TurnReport) -> String {
    let u = &turn.usage;
    let mut line = format!(
        "usage: {} call{} · {} in",
        turn.api_calls,
        if turn.api_calls == 1 { "" } else { "s" },
        hermes_llm::util::thousands(u.input_tokens)
    );
    if u.cache_read_tokens > 0 {
        line.push_str(&format!(
            " ({} cached)",
            hermes_llm::util::thousands(u.cache_read_tokens)
        ));
    }
    line.push_str(&format!(
        " · {} out",
        hermes_llm::util::thousands(u.output_tokens)
    ));
    match turn.cost_usd {
        Some(c) => line.push_str(&format!(" · ${c:.4}")),
        None => line.push_str(" · cost unknown"),
    }
    line
}

/// Remembers the preview of each running call so the finish line can show it.
#[derive(Default)]
struct Previews(HashMap<String, String>);

impl Previews {
    fn started(&mut self, id: &str, preview: &str) {
        self.0.insert(id.to_string(), preview.to_string());
    }
    fn finished(&mut self, id: &str) -> String {
        self.0.remove(id).unwrap_or_default()
    }
}

/// For `-z`: stdout stays clean; tool progress on stderr when it is a terminal, retries and
/// other notices on stderr always.
pub struct ProgressRenderer {
    show_tools: bool,
    previews: Mutex<Previews>,
}

impl ProgressRenderer {
    pub fn new() -> Self {
        ProgressRenderer {
            show_tools: std::io::stderr().is_terminal(),
            previews: Mutex::new(Previews::default()),
        }
    }
}

impl EventSink for ProgressRenderer {
    fn emit(&self, event: AgentEvent) {
        let Ok(mut previews) = self.previews.lock() else {
            return;
        };
        match event {
            AgentEvent::ToolStarted {
                call_id, preview, ..
            } => previews.started(&call_id, &preview),
            AgentEvent::ToolFinished {
                call_id,
                name,
                duration,
                ok,
            } => {
                let preview = previews.finished(&call_id);
                if self.show_tools {
                    eprintln!("{}", tool_line(&name, &preview, duration, ok));
                }
            }
            AgentEvent::Status(text) => eprintln!("hermes: {text}"),
            _ => {}
        }
    }
}

/// For chat: the answer streams to stdout; tool lines and notices go between paragraphs.
pub struct StreamRenderer {
    state: Mutex<StreamState>,
}

#[derive(Default)]
struct StreamState {
    /// The cursor is not at the start of a line.
    mid_line: bool,
    previews: Previews,
}

impl StreamRenderer {
    pub fn new() -> Self {
        StreamRenderer {
            state: Mutex::new(StreamState::default()),
        }
    }

    /// Ends the current line if text is pending (call after a turn).
    pub fn finish_turn(&self) {
        if let Ok(mut st) = self.state.lock()
            && st.mid_line
        {
            println!();
            st.mid_line = false;
        }
    }
}

impl EventSink for StreamRenderer {
    fn emit(&self, event: AgentEvent) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        let mut out = std::io::stdout().lock();
        let mut line = |st: &mut StreamState, text: &str| {
            if st.mid_line {
                let _ = writeln!(out);
                st.mid_line = false;
            }
            let _ = writeln!(out, "{text}");
        };
        match event {
            AgentEvent::TextDelta(t) => {
                let _ = out.write_all(t.as_bytes());
                let _ = out.flush();
                st.mid_line = !t.ends_with('\n');
            }
            AgentEvent::ToolStarted {
                call_id, preview, ..
            } => st.previews.started(&call_id, &preview),
            AgentEvent::ToolFinished {
                call_id,
                name,
                duration,
                ok,
            } => {
                let preview = st.previews.finished(&call_id);
                line(&mut st, &tool_line(&name, &preview, duration, ok));
            }
            AgentEvent::Status(text) => line(&mut st, &format!("  · {text}")),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lines_read_well() {
        let mut t = hermes_runtime::TurnReport {
            api_calls: 3,
            ..Default::default()
        };
        t.usage.input_tokens = 12_345;
        t.usage.cache_read_tokens = 10_000;
        t.usage.output_tokens = 678;
        assert_eq!(
            usage_line(&t),
            "usage: 3 calls · 12,345 in (10,000 cached) · 678 out · cost unknown"
        );
        t.cost_usd = Some(0.01234);
        t.api_calls = 1;
        t.usage.cache_read_tokens = 0;
        assert_eq!(
            usage_line(&t),
            "usage: 1 call · 12,345 in · 678 out · $0.0123"
        );
    }

    #[test]
    fn tool_lines_are_compact() {
        assert_eq!(
            tool_line("terminal", "echo hi", Duration::from_millis(120), true),
            "  ✓ terminal  echo hi  (0.12s)"
        );
        assert_eq!(
            tool_line("read_file", "", Duration::ZERO, false),
            "  ✗ read_file  (0.00s)"
        );
    }
}
