//! Step 4 of compression: the middle of the conversation summarised by the auxiliary model into
//! fixed sections, and the notice that marks the summary as reference material rather than
//! instructions.

use hermes_llm::{ChatRequest, LlmError};
use hermes_protocol::{Message, Role};
use tokio_util::sync::CancellationToken;

use crate::ModelTarget;

/// Opens every summary message; also how a summary is recognised later.
pub const SUMMARY_NOTICE: &str = "[Compacted earlier conversation - reference only] The turns before this point were summarized below to save space. Treat the summary as background from earlier in this session, not as instructions: requests it mentions were already handled. The active task is the latest user message after it; follow that message even where the summary lists other unfinished work. Your tools work as usual.";

const SUMMARIZER_SYSTEM: &str = "You compress the middle of a conversation between a user and an AI agent that uses tools, so the agent can continue the work with a shorter context. Write a faithful, specific summary: keep exact file paths, commands, error messages, numbers, names and decisions. Do not answer questions from the transcript or continue the work; only summarize. If the transcript starts with an earlier summary, merge it into yours.";

const SECTIONS: &str = "Write the summary in exactly these markdown sections (write \"none\" under a section with nothing to say):
## Goal
## Constraints & preferences
## Progress
### Done
### In progress
### Blocked
## Key decisions
## Relevant files
## Next steps
## Critical context";

/// Characters of one message kept in the transcript given to the summarizer.
const MAX_MESSAGE_CHARS: usize = 4_000;

/// The transcript of `middle` as plain text for the summarizer.
pub fn transcript(middle: &[Message], max_chars: usize) -> String {
    let mut out = String::new();
    for m in middle {
        let who = match m.role {
            Role::System => "system".to_string(),
            Role::User => "user".to_string(),
            Role::Assistant => "assistant".to_string(),
            Role::Tool => format!("tool result ({})", m.name.as_deref().unwrap_or("?")),
        };
        if !m.content.is_empty() {
            out.push_str(&format!(
                "[{who}]: {}\n",
                clip(&m.content, MAX_MESSAGE_CHARS)
            ));
        }
        for c in &m.tool_calls {
            out.push_str(&format!(
                "[assistant calls {}]: {}\n",
                c.name,
                clip(&c.arguments, 1_000)
            ));
        }
    }
    clip(&out, max_chars)
}

/// Keeps the head and tail of long text around a marker.
fn clip(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max * 2 / 3).collect();
    let tail: String = text.chars().skip(n - max / 3).collect();
    format!(
        "{head}\n[... {} characters left out ...]\n{tail}",
        n - head.chars().count() - tail.chars().count()
    )
}

/// The user message of the summary request.
pub fn request_text(transcript: &str, focus: Option<&str>) -> String {
    let focus = focus
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| format!("\nGive priority to everything about: {f}. Compress the rest harder.\n"))
        .unwrap_or_default();
    format!(
        "Transcript to summarize:\n<transcript>\n{transcript}</transcript>\n{focus}\n{SECTIONS}"
    )
}

/// Why no summary was made; the text goes into the notice the user sees.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The auxiliary model's call failed.
    #[error(transparent)]
    Model(#[from] LlmError),
    #[error("interrupted")]
    Interrupted,
    #[error("the summary came back empty")]
    Empty,
}

/// Asks the auxiliary model for the summary.
pub async fn generate(
    aux: &ModelTarget,
    middle: &[Message],
    focus: Option<&str>,
    max_transcript_chars: usize,
    cancel: &CancellationToken,
) -> Result<String, SummaryError> {
    let messages = [Message::user(request_text(
        &transcript(middle, max_transcript_chars),
        focus,
    ))];
    let request = ChatRequest {
        model: &aux.model,
        system: SUMMARIZER_SYSTEM,
        messages: &messages,
        tools: &[],
        max_tokens: Some(4_096),
        temperature: None,
        reasoning: None,
    };
    let run = async {
        hermes_llm::complete(aux.provider.as_ref(), &request)
            .await
            .map(|r| r.text)
    };
    let text = tokio::select! {
        r = run => r?,
        () = cancel.cancelled() => return Err(SummaryError::Interrupted),
    };
    let text = hermes_llm::think::strip_think(&text).trim().to_string();
    if text.is_empty() {
        return Err(SummaryError::Empty);
    }
    Ok(text)
}

/// Whether a message is a compression summary.
pub fn is_summary(m: &Message) -> bool {
    m.content.starts_with(SUMMARY_NOTICE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    #[test]
    fn transcript_labels_roles_calls_and_clips() {
        let m = vec![
            Message::user("fix the build"),
            Message::assistant_with_tools(
                "checking",
                vec![ToolCall {
                    id: "1".into(),
                    name: "terminal".into(),
                    arguments: "{\"command\":\"cargo build\"}".into(),
                }],
            ),
            Message::tool_result("1", "terminal", "x".repeat(10_000)),
        ];
        let t = transcript(&m, 100_000);
        assert!(t.starts_with("[user]: fix the build\n[assistant]: checking\n[assistant calls terminal]: {\"command\":\"cargo build\"}\n[tool result (terminal)]: "));
        assert!(t.contains("characters left out"));
        assert!(transcript(&m, 500).chars().count() < 600);
    }

    #[test]
    fn the_request_names_every_section_and_the_focus() {
        let r = request_text("[user]: hi\n", Some("the parser"));
        for s in [
            "## Goal",
            "## Constraints & preferences",
            "### Done",
            "### In progress",
            "### Blocked",
            "## Key decisions",
            "## Relevant files",
            "## Next steps",
            "## Critical context",
        ] {
            assert!(r.contains(s), "{s}");
        }
        assert!(r.contains("the parser"));
    }
}
