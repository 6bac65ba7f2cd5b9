//! The one mapping from agent events to stored rows, used by every live session and by
//! sub-agents: each appended message is committed at once (an assistant message with the output
//! tokens of the call that produced it and a finish reason: `stop`, `tool_calls`, or
//! `interrupted` when the user cut it short), model calls and usage go to the session's totals,
//! and (when asked) streamed answer text is kept in a partial row so a crash mid-answer loses at
//! most an instant of it. Session-level decisions (a new session after `/new`, a compression
//! child, the model shown) are the frontend's; they reach the store through [`Self::writer`].
//!
//! A store that cannot be written never stops the conversation: the writer keeps the first
//! failure for whoever reports it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use hermes_protocol::{AgentEvent, Message, Role};
use hermes_store::{MessageMeta, SessionWriter, StoreError};

/// What a session records besides complete messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamedText {
    /// Streamed answer text goes into a partial row as it arrives (the user saw it).
    Kept,
    /// Only complete messages are stored (sub-agents: nobody watches their stream).
    Dropped,
}

pub struct EventRecorder {
    writer: SessionWriter,
    streamed_text: StreamedText,
    /// Answer text streamed since the last assistant message.
    streamed: Mutex<String>,
    /// Output tokens of the last model call, for the assistant message it produced.
    output_tokens: Mutex<Option<u64>>,
    /// Set by an interrupt: the next assistant message is an answer cut short.
    cut_short: AtomicBool,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("streamed_text", &self.streamed_text)
            .finish_non_exhaustive()
    }
}

impl EventRecorder {
    pub fn new(writer: SessionWriter, streamed_text: StreamedText) -> EventRecorder {
        EventRecorder {
            writer,
            streamed_text,
            streamed: Mutex::new(String::new()),
            output_tokens: Mutex::new(None),
            cut_short: AtomicBool::new(false),
        }
    }

    /// The store writer, for the session-level commands (switch, truncate, title, ...).
    pub fn writer(&self) -> &SessionWriter {
        &self.writer
    }

    /// Records one event.
    pub fn record(&self, event: &AgentEvent) {
        match event {
            AgentEvent::TextDelta(text) if self.streamed_text == StreamedText::Kept => {
                if let Ok(mut s) = self.streamed.lock() {
                    s.push_str(text);
                }
                self.writer.stream_text(text.clone());
            }
            AgentEvent::MessageAdded(message) => {
                let mut meta = MessageMeta::default();
                if message.role == Role::Assistant {
                    self.clear_stream();
                    meta.token_count = self
                        .output_tokens
                        .lock()
                        .ok()
                        .and_then(|mut t| t.take())
                        .map(|n| i64::try_from(n).unwrap_or(i64::MAX));
                    meta.finish_reason = Some(
                        if self.cut_short.swap(false, Ordering::Relaxed) {
                            hermes_store::INTERRUPTED
                        } else if message.has_tool_calls() {
                            "tool_calls"
                        } else {
                            "stop"
                        }
                        .into(),
                    );
                }
                self.writer.append(message.clone(), meta);
            }
            AgentEvent::Usage {
                usage, cost_usd, ..
            } => {
                if let Ok(mut t) = self.output_tokens.lock() {
                    *t = Some(usage.output_tokens);
                }
                self.writer.usage(*usage, *cost_usd);
            }
            AgentEvent::Interrupted => self.cut_short.store(true, Ordering::Relaxed),
            AgentEvent::ModelCallStarted { .. } => self.writer.api_call(),
            _ => {}
        }
    }

    /// After a turn: the text of an answer whose stream never completed (the turn failed
    /// mid-answer), sealed as a message in the store and returned for the caller's history.
    pub fn take_unfinished(&self) -> Option<Message> {
        let unfinished = self
            .streamed
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        if unfinished.is_empty() {
            return None;
        }
        self.writer.seal_partial();
        Some(Message::assistant(unfinished))
    }

    /// Forgets streamed text (a new session, a rewind, a compression).
    pub fn clear_stream(&self) {
        if let Ok(mut s) = self.streamed.lock() {
            s.clear();
        }
    }

    /// Ends the session with `reason` and waits, off the async threads, until everything is
    /// committed; the first store failure, if any.
    pub async fn finish(self, reason: &str) -> Result<(), StoreError> {
        let writer = self.writer;
        writer.end(reason);
        match tokio::task::spawn_blocking(move || writer.close()).await {
            Ok(result) => result,
            Err(e) => Err(StoreError::WriterStopped(format!(
                "closing the session failed: {e}"
            ))),
        }
    }

    /// Ends the session with `reason` and closes it on this thread (for `Drop` paths).
    pub fn finish_blocking(self, reason: &str) -> Result<(), StoreError> {
        self.writer.end(reason);
        self.writer.close()
    }
}
