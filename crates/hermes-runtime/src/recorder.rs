//! Saving a live session as it happens. [`Recorder`] is the session's event sink towards the
//! store: the core's [`EventRecorder`] maps each event to rows (committed at once by the
//! store's writer thread), and the recorder adds what only a whole session knows: `/new` starts
//! a fresh stored session, a compression continues in a child session (or in place), the model
//! that answered last is noted, a turn's unfinished answer is kept, trajectories are appended.
//! It moves the session's [`SessionHandle`], so the session's tools always name the stored
//! session the conversation is in now. A store that cannot be written is reported once and
//! never stops the conversation.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use hermes_core::EventSink;
use hermes_core::record::{EventRecorder, StreamedText};
use hermes_protocol::{AgentEvent, Message, ToolSchema, TurnResult};
use hermes_store::{MessageMeta, NewSession, SessionWriter, StoreError};
use hermes_tools::SessionHandle;

use crate::trajectory::Trajectories;

/// Sends every event to two sinks: persistence first, so a message is queued for commit
/// before it is shown.
pub struct Tee<'a>(pub &'a dyn EventSink, pub &'a dyn EventSink);

impl EventSink for Tee<'_> {
    fn emit(&self, event: AgentEvent) {
        self.0.emit(event.clone());
        self.1.emit(event);
    }
}

/// What the recorder needs besides the writer.
pub struct RecorderParts {
    pub writer: SessionWriter,
    /// How a new session (after `/new`) is described.
    pub template: NewSession,
    /// The live session's handle, moved with every switch.
    pub handle: SessionHandle,
    pub trajectories: Option<Trajectories>,
    pub system_prompt: String,
    pub tools: Vec<ToolSchema>,
    /// `compression.in_place`: a compression continues in the same session.
    pub compress_in_place: bool,
}

pub struct Recorder {
    rows: Option<EventRecorder>,
    template: Mutex<NewSession>,
    handle: SessionHandle,
    trajectories: Option<Trajectories>,
    system_prompt: String,
    tools: Vec<ToolSchema>,
    /// How the last turn ended, recorded as the session's end reason.
    outcome: Mutex<&'static str>,
    warned: AtomicBool,
    compress_in_place: bool,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("session", &self.handle.id())
            .finish_non_exhaustive()
    }
}

impl Recorder {
    pub fn new(parts: RecorderParts) -> Recorder {
        parts.handle.set(parts.template.id.clone());
        Recorder {
            rows: Some(EventRecorder::new(parts.writer, StreamedText::Kept)),
            template: Mutex::new(parts.template),
            handle: parts.handle,
            trajectories: parts.trajectories,
            system_prompt: parts.system_prompt,
            tools: parts.tools,
            compress_in_place: parts.compress_in_place,
            outcome: Mutex::new("user_exit"),
            warned: AtomicBool::new(false),
        }
    }

    /// After a turn: an answer whose stream never completed (the turn failed mid-answer) is
    /// kept, in the store and in the returned message for the caller's history; the trajectory
    /// is saved when enabled.
    pub fn end_turn(&self, turn: &TurnResult) -> Option<Message> {
        let kept = self.rows.as_ref().and_then(EventRecorder::take_unfinished);
        if let Ok(mut outcome) = self.outcome.lock() {
            *outcome = turn.end.as_str();
        }
        if let Some(t) = &self.trajectories {
            let mut messages = turn.messages.clone();
            messages.extend(kept.clone());
            let model = self.template.lock().ok().and_then(|t| t.model.clone());
            if let Err(e) = t.record(
                &self.system_prompt,
                &self.tools,
                &messages,
                model.as_deref().unwrap_or_default(),
                turn,
            ) {
                tracing::warn!("{e}");
            }
        }
        self.report_failure();
        kept
    }

    /// Ends this session and records into a fresh one (`/new`); returns the new id.
    pub fn new_session(&self) -> String {
        let id = hermes_store::time::new_session_id();
        let next = match self.template.lock() {
            Ok(mut t) => {
                t.id = id.clone();
                t.parent_session_id = None;
                t.clone()
            }
            Err(_) => return id,
        };
        self.with_rows(|r| {
            r.clear_stream();
            r.writer().switch_to(next, "new_session");
        });
        self.handle.set(id.clone());
        id
    }

    /// Records the model and provider in use when they changed (`/model`, `/provider`, a
    /// fallback taking over), so the stored session names what answered last and `/new` or a
    /// compression child starts with it.
    pub fn note_model(&self, model: &str, provider: &str) {
        let changed = match self.template.lock() {
            Ok(mut t) => {
                let changed =
                    t.model.as_deref() != Some(model) || t.provider.as_deref() != Some(provider);
                if changed {
                    t.model = Some(model.to_string());
                    t.provider = Some(provider.to_string());
                }
                changed
            }
            Err(_) => false,
        };
        if changed {
            self.with_rows(|r| r.writer().set_model(model, provider));
        }
    }

    /// The id of the session being recorded into now.
    pub fn session_id(&self) -> String {
        self.handle.id()
    }

    /// Takes back everything after the first `keep` messages of the session (`/undo`,
    /// `/retry`), so the store holds what the conversation now is.
    pub fn rewind(&self, keep: usize) {
        self.with_rows(|r| {
            r.clear_stream();
            r.writer().truncate(keep);
        });
    }

    /// The conversation was compressed (by the agent, or by `/compress`): it continues in a
    /// child session holding the compressed messages (the parent keeps the full transcript),
    /// as in the Python Hermes; with `compression.in_place` it continues in the same session,
    /// the replaced messages kept but marked inactive. Search finds everything either way.
    pub fn compressed(&self, messages: Vec<Message>) {
        if self.compress_in_place {
            self.with_rows(|r| {
                r.clear_stream();
                r.writer().deactivate_all();
                for m in messages {
                    r.writer().append(m, MessageMeta::default());
                }
            });
            return;
        }
        let next = match self.template.lock() {
            Ok(mut t) => {
                let parent = std::mem::replace(&mut t.id, hermes_store::time::new_session_id());
                NewSession {
                    parent_session_id: Some(parent),
                    ..t.clone()
                }
            }
            Err(_) => return,
        };
        self.handle.set(next.id.clone());
        self.with_rows(|r| {
            r.clear_stream();
            r.writer().switch_to(next, "compression");
            for m in messages {
                r.writer().append(m, MessageMeta::default());
            }
        });
    }

    /// `/title` (show) and `/title NEW TITLE` (set): the line to print.
    pub fn title_command(&self, argument: &str) -> String {
        let Some(rows) = &self.rows else {
            return "Sessions are not being saved.".into();
        };
        let argument = argument.trim();
        if argument.is_empty() {
            return match rows.writer().title() {
                Ok(Some(t)) => format!("Title: {t}"),
                Ok(None) => "This session has no title yet. Set one with /title NAME.".into(),
                Err(e) => format!("Cannot read the title: {e}"),
            };
        }
        match rows.writer().set_title(argument) {
            Ok(t) => format!("Title set: {t}"),
            Err(e) => format!("Title not set: {e}"),
        }
    }

    /// Ends the stored session with the last turn's outcome and waits until everything is
    /// committed (off the async threads).
    pub async fn close(mut self) {
        let Some(rows) = self.rows.take() else {
            return;
        };
        let reason = self.end_reason();
        if let Err(e) = rows.finish(reason).await {
            self.warn(&e);
        }
    }

    fn end_reason(&self) -> &'static str {
        self.outcome.lock().map(|o| *o).unwrap_or("user_exit")
    }

    fn with_rows(&self, f: impl FnOnce(&EventRecorder)) {
        if let Some(r) = &self.rows {
            f(r);
        }
    }

    /// Says once that the conversation is not being saved.
    fn report_failure(&self) {
        if self.warned.load(Ordering::Relaxed) {
            return;
        }
        if let Some(e) = self.rows.as_ref().and_then(|r| r.writer().error()) {
            self.warn(&e);
        }
    }

    fn warn(&self, e: &StoreError) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!("this conversation is not being saved: {e}");
        }
    }
}

impl EventSink for Recorder {
    fn emit(&self, event: AgentEvent) {
        let Some(rows) = &self.rows else {
            return;
        };
        rows.record(&event);
        match event {
            AgentEvent::MessageAdded(_) => self.report_failure(),
            AgentEvent::Usage {
                model, provider, ..
            } => self.note_model(&model, &provider),
            AgentEvent::ContextCompressed { messages, .. } => self.compressed(messages),
            _ => {}
        }
    }
}

impl Drop for Recorder {
    /// A recorder dropped without [`Recorder::close`] (a panic unwinding, a frontend that
    /// forgot) still ends its session and commits what is queued.
    fn drop(&mut self) {
        let Some(rows) = self.rows.take() else {
            return;
        };
        let reason = self.end_reason();
        if let Err(e) = rows.finish_blocking(reason) {
            self.warn(&e);
        }
    }
}
