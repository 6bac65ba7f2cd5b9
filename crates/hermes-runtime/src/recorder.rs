//! Saving the live session as it happens. [`Recorder`] is an event sink that hands every
//! appended message, the streamed answer text, usage and model calls to the store's writer
//! thread (which commits each at once); [`Tee`] feeds it and the renderer from one agent. At the
//! end of each turn the recorder keeps an answer whose stream never completed and appends the
//! trajectory when those are enabled. A store that cannot be written is reported once on stderr
//! and never stops the conversation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use hermes_config::HermesHome;
use hermes_core::EventSink;
use hermes_core::session_search::{CurrentSession, SessionSearchTool};
use hermes_protocol::{AgentEvent, Message, Role, ToolSchema, TurnResult};
use hermes_store::{MessageMeta, NewSession, SessionWriter, StoreError};
use hermes_tools::Tool;

use crate::trajectory::Trajectories;

/// The session this process is recording into; `session_search` leaves it out of its results.
pub fn current_session() -> &'static CurrentSession {
    static CURRENT: OnceLock<CurrentSession> = OnceLock::new();
    CURRENT.get_or_init(CurrentSession::default)
}

/// The `session_search` tool over this home's session database.
pub fn search_tool(home: &HermesHome) -> Arc<dyn Tool> {
    Arc::new(
        SessionSearchTool::new(home.join(hermes_store::DB_FILE_NAME))
            .following(current_session().clone()),
    )
}

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
    pub trajectories: Option<Trajectories>,
    pub system_prompt: String,
    pub tools: Vec<ToolSchema>,
    /// `compression.in_place`: a compression continues in the same session.
    pub compress_in_place: bool,
}

pub struct Recorder {
    writer: Option<SessionWriter>,
    template: Mutex<NewSession>,
    trajectories: Option<Trajectories>,
    system_prompt: String,
    tools: Vec<ToolSchema>,
    /// Answer text streamed since the last assistant message.
    streamed: Mutex<String>,
    /// Output tokens of the last model call, for the assistant message it produced.
    output_tokens: Mutex<Option<u64>>,
    /// Set by an interrupt: the next assistant message is an answer cut short.
    cut_short: AtomicBool,
    /// How the last turn ended, recorded as the session's end reason.
    outcome: Mutex<&'static str>,
    warned: AtomicBool,
    compress_in_place: bool,
}

impl Recorder {
    pub fn new(parts: RecorderParts) -> Recorder {
        current_session().set(parts.template.id.clone());
        Recorder {
            writer: Some(parts.writer),
            template: Mutex::new(parts.template),
            trajectories: parts.trajectories,
            system_prompt: parts.system_prompt,
            tools: parts.tools,
            compress_in_place: parts.compress_in_place,
            streamed: Mutex::new(String::new()),
            output_tokens: Mutex::new(None),
            outcome: Mutex::new("user_exit"),
            cut_short: AtomicBool::new(false),
            warned: AtomicBool::new(false),
        }
    }

    /// After a turn: an answer whose stream never completed (the turn failed mid-answer) is
    /// kept, in the store and in the returned message for the caller's history; the trajectory
    /// is saved when enabled.
    pub fn end_turn(&self, turn: &TurnResult) -> Option<Message> {
        let unfinished = self
            .streamed
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        let kept = (!unfinished.is_empty()).then(|| {
            self.with_writer(SessionWriter::seal_partial);
            Message::assistant(unfinished)
        });
        if let Ok(mut outcome) = self.outcome.lock() {
            *outcome = if turn.interrupted {
                "interrupted"
            } else if turn.error.is_some() {
                "failed"
            } else if turn.completed {
                "completed"
            } else {
                "max_turns"
            };
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
                eprintln!("hermes: {e}");
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
                t.clone()
            }
            Err(_) => return id,
        };
        self.with_writer(|w| w.switch_to(next, "new_session"));
        if let Ok(mut s) = self.streamed.lock() {
            s.clear();
        }
        current_session().set(id.clone());
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
            self.with_writer(|w| w.set_model(model, provider));
        }
    }

    /// The id of the session being recorded into now.
    pub fn session_id(&self) -> String {
        self.template
            .lock()
            .map(|t| t.id.clone())
            .unwrap_or_default()
    }

    /// Takes back everything after the first `keep` messages of the session (`/undo`,
    /// `/retry`), so the store holds what the conversation now is.
    pub fn rewind(&self, keep: usize) {
        if let Ok(mut s) = self.streamed.lock() {
            s.clear();
        }
        self.with_writer(|w| w.truncate(keep));
    }

    /// The conversation was compressed (by the agent, or by `/compress`): it continues in a
    /// child session holding the compressed messages (the parent keeps the full transcript),
    /// as in the Python Hermes; with `compression.in_place` it continues in the same session,
    /// the replaced messages kept but marked inactive. Search finds everything either way.
    pub fn compressed(&self, messages: Vec<Message>) {
        if self.compress_in_place {
            if let Ok(mut s) = self.streamed.lock() {
                s.clear();
            }
            self.with_writer(|w| {
                w.deactivate_all();
                for m in messages {
                    w.append(m, MessageMeta::default());
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
        if let Ok(mut s) = self.streamed.lock() {
            s.clear();
        }
        current_session().set(next.id.clone());
        self.with_writer(|w| {
            w.switch_to(next, "compression");
            for m in messages {
                w.append(m, MessageMeta::default());
            }
        });
    }

    /// `/title` (show) and `/title NEW TITLE` (set): the line to print.
    pub fn title_command(&self, argument: &str) -> String {
        let Some(writer) = &self.writer else {
            return "Sessions are not being saved.".into();
        };
        let argument = argument.trim();
        if argument.is_empty() {
            return match writer.title() {
                Ok(Some(t)) => format!("Title: {t}"),
                Ok(None) => "This session has no title yet. Set one with /title NAME.".into(),
                Err(e) => format!("Cannot read the title: {e}"),
            };
        }
        match writer.set_title(argument) {
            Ok(t) => format!("Title set: {t}"),
            Err(e) => format!("Title not set: {e}"),
        }
    }

    fn with_writer(&self, f: impl FnOnce(&SessionWriter)) {
        if let Some(w) = &self.writer {
            f(w);
        }
    }

    /// Says once, on stderr, that the conversation is not being saved.
    fn report_failure(&self) {
        if self.warned.load(Ordering::Relaxed) {
            return;
        }
        if let Some(e) = self.writer.as_ref().and_then(SessionWriter::error) {
            self.warn(&e);
        }
    }

    fn warn(&self, e: &StoreError) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            eprintln!("hermes: this conversation is not being saved: {e}");
        }
    }
}

impl EventSink for Recorder {
    fn emit(&self, event: AgentEvent) {
        let Some(writer) = &self.writer else {
            return;
        };
        match event {
            AgentEvent::TextDelta(text) => {
                if let Ok(mut s) = self.streamed.lock() {
                    s.push_str(&text);
                }
                writer.stream_text(text);
            }
            AgentEvent::MessageAdded(message) => {
                let mut meta = MessageMeta::default();
                if message.role == Role::Assistant {
                    if let Ok(mut s) = self.streamed.lock() {
                        s.clear();
                    }
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
                writer.append(message, meta);
                self.report_failure();
            }
            AgentEvent::Usage {
                usage,
                cost_usd,
                model,
                provider,
            } => {
                if let Ok(mut t) = self.output_tokens.lock() {
                    *t = Some(usage.output_tokens);
                }
                writer.usage(usage, cost_usd);
                self.note_model(&model, &provider);
            }
            AgentEvent::Interrupted => self.cut_short.store(true, Ordering::Relaxed),
            AgentEvent::ModelCallStarted { .. } => writer.api_call(),
            AgentEvent::ContextCompressed { messages, .. } => self.compressed(messages),
            _ => {}
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let Some(writer) = self.writer.take() else {
            return;
        };
        let reason = self.outcome.lock().map(|o| *o).unwrap_or("user_exit");
        writer.end(reason);
        if let Err(e) = writer.close() {
            self.warn(&e);
        }
    }
}
