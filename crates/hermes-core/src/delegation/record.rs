//! A sub-agent's conversation stored as its own session (source `subagent`, parent: the
//! delegating session), through the store's writer thread like the parent's. Only complete
//! messages, model calls and usage are written; a store that cannot be written never stops the
//! child (the parent's own recorder is the one that reports store failures).

use std::sync::atomic::{AtomicBool, Ordering};

use hermes_protocol::{AgentEvent, Role};
use hermes_store::{MessageMeta, NewSession, SessionStart, SessionWriter, StoreOptions};

use super::ChildSessions;

pub(crate) struct ChildRecord {
    writer: SessionWriter,
    /// Set by an interrupt: the next assistant message is an answer cut short.
    cut_short: AtomicBool,
}

impl ChildRecord {
    /// Starts recording into the new session `session` (created with its first message).
    pub(crate) fn start(sessions: &ChildSessions, session: NewSession) -> ChildRecord {
        ChildRecord {
            writer: SessionWriter::spawn(
                sessions.db_path.clone(),
                SessionStart::New(session),
                StoreOptions::default(),
            ),
            cut_short: AtomicBool::new(false),
        }
    }

    pub(crate) fn emit(&self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageAdded(message) => {
                let mut meta = MessageMeta::default();
                if message.role == Role::Assistant {
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
            } => self.writer.usage(*usage, *cost_usd),
            AgentEvent::ModelCallStarted { .. } => self.writer.api_call(),
            AgentEvent::Interrupted => self.cut_short.store(true, Ordering::Relaxed),
            _ => {}
        }
    }

    /// Marks the session ended with `reason` and waits, off the async threads, until
    /// everything is committed.
    pub(crate) async fn finish(self, reason: &'static str) {
        let writer = self.writer;
        writer.end(reason);
        let _ = tokio::task::spawn_blocking(move || writer.close()).await;
    }
}
