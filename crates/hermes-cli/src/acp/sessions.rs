//! The sessions an editor opened over one ACP connection: each a runtime [`Session`] (its
//! working directory the one the editor gave), the way it asks the user, and its modes and
//! model choice as ACP shows them. A turn holds its session for as long as it runs; cancel
//! reaches it through the session's [`EditorInteraction`] without waiting for it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, EmbeddedResourceResource, PromptResponse, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode, SessionModeState,
    SessionUpdate, StopReason, TextContent, Usage, UsageUpdate,
};
use hermes_llm::Overrides;
use hermes_protocol::TurnEnd;
use hermes_runtime::{Platform, Resume, Runtime, Session, SessionSpec};

use super::editor_terminal::{TerminalLink, TerminalLinks};
use super::permission::EditorInteraction;
use super::updates::Updates;
use crate::args::CommonArgs;

/// The mode that asks before flagged commands.
pub const MODE_ASK: &str = "default";
/// The mode that runs flagged commands without asking (hardline ones stay refused).
pub const MODE_YOLO: &str = "yolo";
/// The id of the model selector among the session's config options.
pub const MODEL_OPTION: &str = "model";

/// One open session.
pub struct Slot {
    pub session: tokio::sync::Mutex<Session>,
    pub interaction: Arc<EditorInteraction>,
    pub cwd: PathBuf,
    /// What the editor's terminal needs of this session (see [`super::editor_terminal`]).
    pub terminal: Arc<TerminalLink>,
    /// The model choices offered (`provider:model`), the current one first.
    pub models: Mutex<Vec<String>>,
}

/// Every session of the connection, by id.
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<String, Arc<Slot>>>,
    terminals: Arc<TerminalLinks>,
}

impl Sessions {
    /// Every session's link to the editor's terminal, for the `terminal` tool.
    pub fn terminals(&self) -> Arc<TerminalLinks> {
        self.terminals.clone()
    }

    pub fn get(&self, id: &str) -> Option<Arc<Slot>> {
        self.open.lock().ok()?.get(id).cloned()
    }

    fn insert(&self, id: String, slot: Arc<Slot>) {
        if let Ok(mut open) = self.open.lock() {
            open.insert(id, slot);
        }
    }

    /// Ends every stored session and its background processes (the editor disconnected).
    pub async fn close_all(&self) {
        let slots: Vec<Arc<Slot>> = match self.open.lock() {
            Ok(mut open) => open.drain().map(|(_, s)| s).collect(),
            Err(_) => return,
        };
        for slot in slots {
            if let Ok(slot) = Arc::try_unwrap(slot) {
                slot.session.into_inner().close().await;
            }
        }
    }

    /// Builds a session in `cwd` (new, or continuing the stored session `resume`).
    pub async fn open(
        &self,
        runtime: &Runtime,
        args: &CommonArgs,
        cx: ConnectionTo<Client>,
        cwd: PathBuf,
        resume: Option<String>,
    ) -> Result<Arc<Slot>, hermes_runtime::SessionError> {
        let interaction = Arc::new(EditorInteraction::new(cx, args.yolo));
        let mut spec: SessionSpec = args.spec(Platform::Acp, cwd.clone());
        // The mode decides, so that switching it back to "default" asks again.
        spec.yolo = false;
        spec.resume = resume.map_or(Resume::New, Resume::Session);
        let session = runtime.open_session(spec, interaction.clone()).await?;
        let id = session.session_id();
        interaction.set_session_id(id.clone());
        let terminal = Arc::new(TerminalLink::default());
        terminal.set_session_id(id.clone());
        self.terminals.add(&interaction, terminal.clone());
        let current = model_choice(&session);
        let slot = Arc::new(Slot {
            session: tokio::sync::Mutex::new(session),
            interaction,
            cwd,
            terminal,
            models: Mutex::new(model_choices(runtime, current)),
        });
        self.insert(id, slot.clone());
        Ok(slot)
    }
}

impl Slot {
    pub fn modes(&self) -> SessionModeState {
        let current = if self.interaction.yolo() {
            MODE_YOLO
        } else {
            MODE_ASK
        };
        SessionModeState::new(
            current,
            vec![
                SessionMode::new(MODE_ASK, "Default")
                    .description("Ask before running a flagged (dangerous) command."),
                SessionMode::new(MODE_YOLO, "YOLO").description(
                    "Run flagged commands without asking; hardline commands stay refused.",
                ),
            ],
        )
    }

    /// The model selector: the current `provider:model` and the others configured.
    pub fn config_options(&self) -> Vec<SessionConfigOption> {
        let models = self.models.lock().map(|m| m.clone()).unwrap_or_default();
        let current = models.first().cloned().unwrap_or_default();
        let options: Vec<SessionConfigSelectOption> = models
            .iter()
            .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
            .collect();
        vec![
            SessionConfigOption::select(MODEL_OPTION, "Model", current, options)
                .category(SessionConfigOptionCategory::Model),
        ]
    }

    /// Talks to `choice` (`provider:model`, or a model of the current provider) from the
    /// next turn on.
    pub async fn switch_model(&self, choice: &str) -> Result<(), hermes_runtime::SessionError> {
        let (provider, model) = match choice.split_once(':') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => (Some(p.to_string()), m.to_string()),
            _ => (None, choice.to_string()),
        };
        let mut session = self.session.lock().await;
        let provider = provider.or_else(|| Some(session.provider().provider.clone()));
        session.switch_model(Overrides {
            provider,
            model: Some(model),
            base_url: None,
        })?;
        let now = model_choice(&session);
        if let Ok(mut models) = self.models.lock() {
            models.retain(|m| *m != now);
            models.insert(0, now);
        }
        Ok(())
    }

    /// Runs one turn on the editor's prompt, streaming its updates, then tells how full the
    /// context is; the answer carries the stop reason and the turn's token usage.
    pub async fn prompt(&self, prompt: &[ContentBlock], updates: &Updates) -> PromptResponse {
        let (text, images) = prompt_text(prompt);
        // The token after the lock: a prompt queued behind a running turn must not take the
        // running turn's place as the one `session/cancel` stops.
        let mut session = self.session.lock().await;
        let cancel = self.interaction.start_turn();
        let report = session
            .turn_with_images(&text, images, updates, cancel)
            .await;
        updates.send(SessionUpdate::UsageUpdate(context_usage(&session)));
        let stop = match report.end {
            TurnEnd::Interrupted => StopReason::Cancelled,
            TurnEnd::BudgetExhausted => StopReason::MaxTurnRequests,
            TurnEnd::Completed => StopReason::EndTurn,
            TurnEnd::Failed(failure) => {
                // Shown as the answer, as the Python Hermes does: ACP has no failed stop reason.
                updates.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                    ContentBlock::Text(TextContent::new(format!("hermes: {}", failure.message))),
                )));
                StopReason::EndTurn
            }
        };
        PromptResponse::new(stop).usage(turn_usage(&report.usage))
    }

    /// How full the session's context is now, as a `usage_update`.
    pub async fn context_usage(&self) -> SessionUpdate {
        SessionUpdate::UsageUpdate(context_usage(&*self.session.lock().await))
    }
}

/// Tokens in the context (estimated as the REPL's `/usage` does: system prompt, tool schemas
/// and history, what the next request sends) and the window they fill: the compressor's,
/// which honours `compression.context_length`, or the model's known window.
fn context_usage(session: &Session) -> UsageUpdate {
    let agent = session.agent();
    let used = hermes_core::compress::tokens::rough_request(
        agent.system_prompt(),
        agent.tool_schemas(),
        session.history(),
    );
    let size = match agent.compressor() {
        Some(c) => c.window(),
        None => hermes_llm::catalogue::context_window(agent.model()),
    };
    UsageUpdate::new(used, size)
}

/// The tokens a turn's model calls used, as the provider reported them.
fn turn_usage(usage: &hermes_protocol::Usage) -> Usage {
    Usage::new(usage.total(), usage.input_tokens, usage.output_tokens)
        .thought_tokens(usage.reasoning_tokens)
        .cached_read_tokens(usage.cache_read_tokens)
        .cached_write_tokens(usage.cache_write_tokens)
}

fn model_choice(session: &Session) -> String {
    let p = session.provider();
    format!("{}:{}", p.provider, p.model)
}

/// The current model first, then the fallback providers' and custom providers' models of
/// config.yaml, each once.
fn model_choices(runtime: &Runtime, current: String) -> Vec<String> {
    let mut out = vec![current];
    let raw = &runtime.config().raw;
    for (key, provider_field) in [
        ("fallback_providers", "provider"),
        ("custom_providers", "name"),
    ] {
        for entry in raw
            .get(key)
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            let field = |k: &str| entry.get(k).and_then(|v| v.as_str()).map(str::trim);
            if let (Some(p), Some(m)) = (field(provider_field), field("model"))
                && !p.is_empty()
                && !m.is_empty()
            {
                let c = format!("{p}:{m}");
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// The prompt's blocks as the message text (resources quoted in it, links named) and the
/// images given with it.
fn prompt_text(prompt: &[ContentBlock]) -> (String, Vec<hermes_protocol::Image>) {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for block in prompt {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            ContentBlock::Resource(r) => {
                if let EmbeddedResourceResource::TextResourceContents(t) = &r.resource {
                    parts.push(format!("<file uri=\"{}\">\n{}\n</file>", t.uri, t.text));
                }
            }
            ContentBlock::Image(img) => images.push(hermes_protocol::Image::Data {
                media_type: img.mime_type.clone(),
                data: img.data.clone(),
            }),
            _ => {}
        }
    }
    (parts.join("\n\n"), images)
}
