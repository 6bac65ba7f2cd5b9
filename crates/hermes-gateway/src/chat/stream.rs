//! One turn's answer, streamed into a chat. The agent's events land in a small shared state (the
//! sink is synchronous); a task edits one message with the text so far, never more often than
//! the platform allows (`min_edit_interval`), and at the end of the turn the answer is cut at
//! the platform's limit on paragraph and code-block boundaries: the streamed message becomes the
//! first part, the others follow. Text the model wrote before calling tools stays as its own
//! message; tool calls show as short lines in one progress message edited as they run (Python's
//! "accumulate" grouping), when the chat wants them. Platforms that cannot edit get the answer
//! once, complete. The state is bounded by what the answer itself holds.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_core::EventSink;
use hermes_protocol::{AgentEvent, Role};
use tokio::sync::Notify;

use crate::platform::{ChatRef, OutboundMessage, PlatformAdapter, split};

/// Tool lines kept in the progress message (older ones are summarised).
const MAX_TOOL_LINES: usize = 12;

#[derive(Default)]
struct State {
    /// Text of the assistant message being written now.
    text: String,
    /// Text of earlier assistant messages of this turn (said before tool calls) not yet
    /// settled as messages of their own.
    settled: Vec<String>,
    tools: Vec<String>,
    tools_total: usize,
    /// Bumped on every change the editor should look at.
    version: u64,
}

/// The [`EventSink`] side: cheap, synchronous, never blocks on the network.
#[derive(Clone)]
pub struct StreamSink {
    state: Arc<Mutex<State>>,
    wake: Arc<Notify>,
    progress: bool,
}

impl StreamSink {
    fn update(&self, f: impl FnOnce(&mut State)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
            s.version += 1;
        }
        self.wake.notify_one();
    }
}

impl EventSink for StreamSink {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::TextDelta(text) => self.update(|s| s.text.push_str(&text)),
            AgentEvent::MessageAdded(m) if m.role == Role::Assistant && m.has_tool_calls() => {
                self.update(|s| {
                    let said = std::mem::take(&mut s.text);
                    if !said.trim().is_empty() {
                        s.settled.push(said);
                    }
                });
            }
            AgentEvent::ToolStarted { name, preview, .. } if self.progress => {
                let line = if preview.is_empty() {
                    format!("⚙️ {name}")
                } else {
                    format!(
                        "⚙️ {name}: {}",
                        hermes_tools::output::shorten_line(&preview, 80)
                    )
                };
                self.update(|s| {
                    s.tools_total += 1;
                    s.tools.push(line);
                    if s.tools.len() > MAX_TOOL_LINES {
                        s.tools.remove(0);
                    }
                });
            }
            _ => {}
        }
    }
}

/// The editing side, one per turn.
pub struct ChatStream {
    sink: StreamSink,
    adapter: Arc<dyn PlatformAdapter>,
    chat: ChatRef,
    reply_to: Option<String>,
}

/// What was shown, so the end of the turn can finish it.
#[derive(Debug, Default)]
pub struct OnScreen {
    /// The message holding the current text, and the text it shows.
    answer: Option<(String, String)>,
    progress: Option<(String, String)>,
    /// Earlier messages' texts already sent as their own messages.
    settled_sent: usize,
}

impl ChatStream {
    pub fn new(
        adapter: Arc<dyn PlatformAdapter>,
        chat: ChatRef,
        reply_to: Option<String>,
        progress: bool,
    ) -> ChatStream {
        let progress = progress && adapter.capabilities().progress_messages;
        ChatStream {
            sink: StreamSink {
                state: Arc::new(Mutex::new(State::default())),
                wake: Arc::new(Notify::new()),
                progress,
            },
            adapter,
            chat,
            reply_to,
        }
    }

    pub fn sink(&self) -> StreamSink {
        self.sink.clone()
    }

    /// Edits messages as events arrive until `done` fires, then returns what is on screen for
    /// [`ChatStream::finish`].
    pub async fn run(&self, done: tokio_util::sync::CancellationToken) -> OnScreen {
        let caps = self.adapter.capabilities().clone();
        let mut shown = OnScreen::default();
        let mut seen = 0u64;
        let mut last_edit = Instant::now() - caps.min_edit_interval;
        loop {
            tokio::select! {
                _ = done.cancelled() => break,
                _ = self.sink.wake.notified() => {}
            }
            let wait = caps
                .min_edit_interval
                .saturating_sub(last_edit.elapsed())
                .min(Duration::from_secs(5));
            tokio::select! {
                _ = done.cancelled() => break,
                _ = tokio::time::sleep(wait) => {}
            }
            let Some((version, snapshot)) = self.snapshot(seen) else {
                continue;
            };
            seen = version;
            self.show(&mut shown, snapshot, caps.can_edit).await;
            last_edit = Instant::now();
        }
        shown
    }

    fn snapshot(&self, seen: u64) -> Option<(u64, Snapshot)> {
        let s = self.sink.state.lock().ok()?;
        (s.version != seen).then(|| {
            (
                s.version,
                Snapshot {
                    text: s.text.clone(),
                    settled: s.settled.clone(),
                    tools: s.tools.clone(),
                    tools_total: s.tools_total,
                },
            )
        })
    }

    /// Brings the chat up to date with `snap` (editable platforms only: the others get the
    /// answer at the end).
    async fn show(&self, shown: &mut OnScreen, snap: Snapshot, can_edit: bool) {
        if !can_edit {
            return;
        }
        // Text said before tool calls: its message is final.
        while shown.settled_sent < snap.settled.len() {
            let said = &snap.settled[shown.settled_sent];
            match shown.answer.take() {
                Some((id, on_screen)) => {
                    if &on_screen != said {
                        self.edit(&id, said).await;
                    }
                }
                None => {
                    self.send(said).await;
                }
            }
            shown.settled_sent += 1;
        }
        if !snap.tools.is_empty() {
            let mut text = String::new();
            if snap.tools_total > snap.tools.len() {
                text.push_str(&format!(
                    "… {} earlier\n",
                    snap.tools_total - snap.tools.len()
                ));
            }
            text.push_str(&snap.tools.join("\n"));
            match &shown.progress {
                Some((id, on_screen)) if *on_screen != text => {
                    let id = id.clone();
                    self.edit(&id, &text).await;
                    shown.progress = Some((id, text));
                }
                Some(_) => {}
                None => {
                    if let Some(id) = self.send(&text).await {
                        shown.progress = Some((id, text));
                    }
                }
            }
        }
        let text = snap.text.trim_end();
        if text.trim().is_empty() {
            return;
        }
        match &shown.answer {
            Some((id, on_screen)) if on_screen != text => {
                let id = id.clone();
                self.edit(&id, text).await;
                shown.answer = Some((id, text.to_string()));
            }
            Some(_) => {}
            None => {
                if let Some(id) = self.send(text).await {
                    shown.answer = Some((id, text.to_string()));
                }
            }
        }
    }

    /// Finishes the turn's messages: the final answer (`final_text`, or what streamed when it
    /// is empty, plus `note`) replaces the streamed text. An answer that fits one message is
    /// an edit of the streamed message; a longer one is sent whole (the adapter cuts it at the
    /// platform's limit with code blocks intact) and the streamed preview deleted, or, where
    /// messages cannot be deleted, the preview becomes the first part.
    pub async fn finish(&self, mut shown: OnScreen, final_text: &str, note: Option<&str>) {
        let caps = self.adapter.capabilities().clone();
        let snap = self.snapshot(u64::MAX).map(|(_, s)| s).unwrap_or_default();
        if caps.can_edit {
            // Anything still pending: tool lines, text said before tools.
            let pending = Snapshot {
                text: String::new(),
                ..snap.clone()
            };
            self.show(&mut shown, pending, true).await;
        }
        let mut answer = if final_text.trim().is_empty() {
            snap.text.trim().to_string()
        } else {
            final_text.trim().to_string()
        };
        if let Some(note) = note {
            if !answer.is_empty() {
                answer.push_str("\n\n");
            }
            answer.push_str(note);
        }
        if answer.is_empty() {
            if let Some((id, _)) = &shown.answer
                && caps.can_delete
            {
                let _ = self.adapter.delete(&self.chat, id).await;
            }
            return;
        }
        let parts = split::render_parts(
            &answer,
            caps.markdown,
            caps.max_message_len,
            caps.length_unit,
            false,
        );
        match shown.answer.take() {
            Some((id, _)) if caps.can_edit && parts.len() <= 1 => self.edit(&id, &answer).await,
            Some((id, _)) if caps.can_edit && !caps.can_delete => {
                // Room for escaping: the preview holds a part cut well under the limit.
                let limit = caps.max_message_len * 4 / 5;
                let mut pieces = split::split(&answer, limit.max(1), caps.length_unit)
                    .into_iter()
                    .map(|p| p.text());
                if let Some(first) = pieces.next() {
                    self.edit(&id, &first).await;
                }
                for piece in pieces {
                    self.send(&piece).await;
                }
            }
            previous => {
                if let Some((id, _)) = previous {
                    let _ = self.adapter.delete(&self.chat, &id).await;
                }
                let mut message = OutboundMessage::text(answer);
                if let Some(reply) = &self.reply_to {
                    message = message.replying_to(reply.clone());
                }
                if let Err(e) = self.adapter.send(&self.chat, &message).await {
                    tracing::warn!("{}: answer not delivered: {e}", self.chat.platform);
                }
            }
        }
    }

    async fn send(&self, text: &str) -> Option<String> {
        let mut message = OutboundMessage::text(text);
        if let Some(reply) = &self.reply_to {
            message = message.replying_to(reply.clone());
        }
        match self.adapter.send(&self.chat, &message).await {
            Ok(sent) => Some(sent.message_id),
            Err(e) => {
                tracing::warn!("{}: message not sent: {e}", self.chat.platform);
                None
            }
        }
    }

    async fn edit(&self, id: &str, text: &str) {
        if let Err(e) = self.adapter.edit(&self.chat, id, text).await {
            tracing::debug!("{}: edit of {id} failed: {e}", self.chat.platform);
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Snapshot {
    text: String,
    settled: Vec<String>,
    tools: Vec<String>,
    tools_total: usize,
}
