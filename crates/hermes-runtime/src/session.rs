//! [`Session`]: one conversation, built by a [`Runtime`] from a [`SessionSpec`], owning its whole
//! lifecycle: the agent and its tools (with the session's own tool context: working directory,
//! approvals, background processes, todo list), the stored session it records into, and the
//! conversation so far. [`Session::turn`] records, runs and ends one turn; [`Session::close`]
//! ends the stored session and stops the background processes. Between turns the conversation
//! can move: a new stored session (`/new`), a rewind (`/undo`, `/retry`), a compression, another
//! stored session (`/resume`), another model ([`Session::switch_model`]: the tools, MCP
//! connections and background processes stay). Each turn moves the session's review counters;
//! when a review is due the frontend starts it after delivering the answer
//! ([`Session::start_review`]).

use hermes_core::memory::provider::MemoryProvider;
use std::sync::{Arc, Mutex};

use hermes_config::Config;
use hermes_core::compress::{Compressed, CompressionSettings, Compressor};
use hermes_core::delegation;
use hermes_core::skills::Library;
use hermes_core::{Agent, AgentOptions, EventSink, ModelTarget};
use hermes_llm::{Overrides, ProviderSpec, RetryPolicy};
use hermes_protocol::{Message, TurnEnd, TurnFailure, Usage};
use hermes_tools::{
    ApprovalGate, CommandJudge, Interaction, ProcessRegistry, Registry, SessionHandle,
    SessionTools, ToolContext,
};
use tokio_util::sync::CancellationToken;

use crate::error::SessionError;
use crate::judge::ProviderJudge;
use crate::providers::Providers;
use crate::recorder::{Recorder, Tee};
use crate::resume::{Persistence, Resumed};
use crate::review::{self, Due, Notices, Nudges, ReviewHandle, ReviewSettings};
use crate::runtime::Runtime;
use crate::spec::{Resume, SessionSpec};
use crate::tools;

/// What one turn produced. The conversation itself stays in the session
/// ([`Session::history`]); `added` holds the messages this turn appended (the user's first).
#[derive(Debug, Clone, Default)]
pub struct TurnReport {
    /// The last assistant text without tool calls ("" when there is none).
    pub final_text: String,
    pub added: Vec<Message>,
    /// Model calls made, retries excluded.
    pub api_calls: u32,
    pub end: TurnEnd,
    pub usage: Usage,
    /// Estimated cost in USD, when the model's prices are known.
    pub cost_usd: Option<f64>,
    /// Calls of the client's own tools the turn stopped at (see [`Session::set_client_tools`]).
    pub client_calls: Vec<hermes_protocol::ToolCall>,
}

impl TurnReport {
    pub fn is_completed(&self) -> bool {
        self.end == TurnEnd::Completed
    }

    pub fn is_interrupted(&self) -> bool {
        self.end == TurnEnd::Interrupted
    }

    pub fn failure(&self) -> Option<&TurnFailure> {
        self.end.failure()
    }
}

/// What [`Session::compress`] did.
#[derive(Debug)]
pub enum Compression {
    /// Compression is turned off (`compression.enabled: false`).
    Off,
    /// Cancelled: the conversation is unchanged.
    Interrupted,
    /// Nothing could be made smaller.
    Unchanged(Compressed),
    /// The conversation continues compressed.
    Done(Compressed),
}

pub struct Session {
    runtime: Runtime,
    spec: SessionSpec,
    agent: Agent,
    providers: Arc<Providers>,
    /// The stored session the conversation is in now (moves with `/new` and compression).
    handle: SessionHandle,
    recorder: Recorder,
    history: Vec<Message>,
    resumed: Option<Resumed>,
    tool_ctx: ToolContext,
    /// The tools as selected and installed (delegation working), for switching models.
    tools: Registry,
    system_prompt: String,
    /// The external memory provider (`memory.provider`), kept across model switches.
    memory: Option<Arc<dyn MemoryProvider>>,
    skills: Arc<Library>,
    judge: Arc<SwitchableJudge>,
    review: ReviewSettings,
    nudges: Nudges,
    /// The review the last turn made due, not started yet.
    due: Option<Due>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("platform", &self.spec.platform)
            .field("session", &self.handle.id())
            .field("model", &self.agent.model())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) fn build(
        runtime: &Runtime,
        spec: &SessionSpec,
        interaction: Arc<dyn Interaction>,
    ) -> Result<Session, SessionError> {
        let config = runtime.config();
        if !spec.cwd.is_dir() {
            return Err(SessionError::NotADirectory {
                origin: format!("the working directory of this {} session", spec.platform),
                path: spec.cwd.clone(),
            });
        }
        let providers = runtime.providers(&spec.model)?;
        let provider_spec = &providers.spec;
        let persistence = Persistence::plan(
            spec,
            runtime.home(),
            config,
            provider_spec,
            runtime.store_location(),
        )?;
        let prepared = runtime.prepare(
            spec,
            &spec.cwd,
            (&provider_spec.model, &provider_spec.provider),
        )?;
        let judge = Arc::new(SwitchableJudge::new(&providers));
        let handle = SessionHandle::new(persistence.session_id());
        let mut tool_ctx = ToolContext::for_session(SessionTools {
            cwd: spec.cwd.clone(),
            home: runtime.home(),
            config,
            env: runtime.env(),
            yolo: spec.yolo,
            interaction,
            judge: Some(judge.clone() as Arc<dyn CommandJudge>),
            known_secrets: known_secrets(provider_spec),
            session: handle.clone(),
            sandbox: spec.sandbox,
        })?;
        tool_ctx.origin = spec.origin.clone().map(Arc::new);
        let (options, warnings) = agent_options(config, spec, provider_spec)?;
        for w in &warnings {
            runtime.warn(w);
        }
        // Vision first: sub-agents get the working tools.
        let tools = with_vision(prepared.tools, runtime, &providers, &options)?;
        let tools = with_moa(tools, runtime);
        let tools = with_delegation(tools, runtime, &providers, &options)?;
        let memory =
            crate::memory_providers::select(runtime, spec, persistence.session_id(), &providers);
        let system_prompt = with_provider_block(prepared.system_prompt, memory.as_deref());
        let agent = build_agent(
            runtime,
            &providers,
            tools.clone(),
            system_prompt.clone(),
            options,
            tool_ctx.clone(),
            memory.clone(),
        )?;
        let recorder = persistence.start(&agent, handle.clone(), runtime.store_writer());
        let history = persistence.history();
        Ok(Session {
            runtime: runtime.clone(),
            spec: spec.clone(),
            agent,
            providers,
            handle,
            recorder,
            history,
            resumed: persistence.into_resumed(),
            tool_ctx,
            tools,
            system_prompt,
            memory,
            skills: prepared.skills,
            judge,
            review: ReviewSettings::from_config(config),
            nudges: Nudges::default(),
            due: None,
        })
    }

    /// Runs one turn on `message`: recorded as it happens, the answer and tool events sent to
    /// `sink` too, the conversation kept for the next turn (an answer cut off mid-stream
    /// included).
    pub async fn turn(
        &mut self,
        message: &str,
        sink: &dyn EventSink,
        cancel: CancellationToken,
    ) -> TurnReport {
        self.turn_with_images(message, Vec::new(), sink, cancel)
            .await
    }

    /// [`Session::turn`] with the images the message references as `@path` (relative to the
    /// session's working directory) given to the model; references that cannot be read are
    /// returned for the frontend to report, the turn runs without them.
    pub async fn turn_with_references(
        &mut self,
        message: &str,
        sink: &dyn EventSink,
        cancel: CancellationToken,
    ) -> (TurnReport, Vec<hermes_core::images::ImageError>) {
        let (images, errors) = hermes_core::images::referenced(message, &self.spec.cwd);
        let report = self.turn_with_images(message, images, sink, cancel).await;
        (report, errors)
    }

    /// [`Session::turn`] with images given to the model beside the text (the store keeps the
    /// text only).
    pub async fn turn_with_images(
        &mut self,
        message: &str,
        images: Vec<hermes_protocol::Image>,
        sink: &dyn EventSink,
        cancel: CancellationToken,
    ) -> TurnReport {
        let before = self.history.len();
        let memory_offered = self.offers("memory") && self.runtime.memory().is_some();
        let memory_due = self
            .nudges
            .turn_started(&self.review, &self.history, memory_offered);
        let history = std::mem::take(&mut self.history);
        let budget = Arc::new(hermes_core::IterationBudget::new(
            self.agent.options().max_turns,
        ));
        let result = self
            .agent
            .run_turn_with_images(
                message,
                images,
                history,
                &Tee(&self.recorder, sink),
                cancel,
                &budget,
            )
            .await;
        self.finish_turn(before, result, memory_due)
    }

    /// Offers the API client's own tools beside ours for the turns of this session; calls of
    /// them end a turn with [`TurnReport::client_calls`].
    pub fn set_client_tools(&mut self, tools: Vec<hermes_protocol::ToolSchema>) {
        self.agent.set_client_tools(tools);
    }

    /// Continues after the client ran its tools: `results` (their `tool` messages) are
    /// recorded and appended, then the model goes on.
    pub async fn continue_with_tool_results(
        &mut self,
        results: Vec<Message>,
        sink: &dyn EventSink,
        cancel: CancellationToken,
    ) -> TurnReport {
        let mut history = std::mem::take(&mut self.history);
        for mut m in results {
            // A `tool` message names only its call; the tool's name is on the call.
            if m.name.as_deref().is_none_or(str::is_empty)
                && let Some(id) = m.tool_call_id.as_deref()
            {
                m.name = history
                    .iter()
                    .rev()
                    .flat_map(|h| h.tool_calls.iter())
                    .find(|c| c.id == id)
                    .map(|c| c.name.clone());
            }
            // Recorded, not echoed to `sink`: the client sent it, it is not this turn's output.
            self.recorder
                .emit(hermes_protocol::AgentEvent::MessageAdded(m.clone()));
            history.push(m);
        }
        // Placeholders a reload of the stored session gave these calls make way for them now,
        // so `before` counts what the model will see.
        hermes_core::close_dangling_tool_calls(&mut history);
        let before = history.len();
        let tee = Tee(&self.recorder, sink);
        let budget = Arc::new(hermes_core::IterationBudget::new(
            self.agent.options().max_turns,
        ));
        let result = self
            .agent
            .continue_turn(history, &tee, cancel, &budget)
            .await;
        // Not a user turn: the memory nudge does not count it.
        self.finish_turn(before, result, false)
    }

    /// Keeps the conversation a turn left, notes which review it made due and reports what it
    /// added.
    fn finish_turn(
        &mut self,
        before: usize,
        result: hermes_protocol::TurnResult,
        memory_due: bool,
    ) -> TurnReport {
        let unfinished = self.recorder.end_turn(&result);
        self.history = result.messages;
        self.history.extend(unfinished);
        // A compression during the turn replaced the history: everything is "added" then.
        let added = self.history.get(before..).unwrap_or(&self.history).to_vec();
        let skills_due = self.nudges.turn_ended(
            &self.review,
            &added,
            result.api_calls,
            self.offers("skill_manage"),
        );
        // Only an answered turn is reviewed (the Python Hermes's rule); one handing calls to
        // the API client is not answered yet.
        let answered = !result.final_text.trim().is_empty()
            && result.client_calls.is_empty()
            && matches!(result.end, TurnEnd::Completed | TurnEnd::BudgetExhausted);
        self.due = Some(Due {
            memory: memory_due,
            skills: skills_due,
        })
        .filter(|d| answered && d.any());
        TurnReport {
            final_text: result.final_text,
            added,
            api_calls: result.api_calls,
            end: result.end,
            usage: result.usage,
            cost_usd: result.cost_usd,
            client_calls: result.client_calls,
        }
    }

    /// Whether the session offers the tool `name`.
    fn offers(&self, name: &str) -> bool {
        self.tools.get(name).is_some()
    }

    /// The review the last turn made due (none once started).
    pub fn review_due(&self) -> Option<Due> {
        self.due
    }

    /// The session's review settings (`memory.nudge_interval`, `display.learning_notices`, ...).
    pub fn review_settings(&self) -> &ReviewSettings {
        &self.review
    }

    /// Starts the review the last turn made due on a tokio task (call it after the answer was
    /// delivered): it replays the conversation as it is now, writes memory and skills, and
    /// hands its one-line notices to `notices` (unless `display.learning_notices: false`).
    /// `None` when no review is due.
    pub fn start_review(&mut self, notices: Arc<dyn Notices>) -> Option<ReviewHandle> {
        let due = self.due.take()?;
        let routed = self.routed_review_target();
        let job = review::ReviewJob {
            runtime: self.runtime.clone(),
            due,
            snapshot: self.history.clone(),
            system_prompt: self.system_prompt.clone(),
            tools: self.tools.clone(),
            skills: self.skills.clone(),
            primary: self.providers.primary_target(),
            fallbacks: self.providers.fallbacks.clone(),
            provider_name: self.providers.spec.provider.clone(),
            options: self.agent.options().clone(),
            tool_ctx: self.tool_ctx.clone(),
            parent_session: self.handle.id(),
            notices_on: self.review.notices,
            routed,
        };
        Some(review::start(job, notices))
    }

    /// The model of `auxiliary.background_review` when it is another than the session's.
    fn routed_review_target(&self) -> Option<ModelTarget> {
        let (provider, model) = self.review.routed.as_ref()?;
        let spec = &self.providers.spec;
        if *provider == spec.provider && *model == spec.model {
            return None;
        }
        match crate::providers::auxiliary(
            self.runtime.config(),
            self.runtime.env(),
            self.runtime.home(),
            "background_review",
            &self.providers.primary,
            &spec.model,
        ) {
            Ok(target) => Some(target),
            Err(e) => {
                self.runtime.warn(&format!(
                    "the background review runs on the session's model: {e}"
                ));
                None
            }
        }
    }

    /// Ends the stored session (with the last turn's outcome), stops the background
    /// processes and shuts the execution environment down (a session container is removed).
    pub async fn close(self) {
        self.end_memory_session().await;
        let Session {
            recorder, tool_ctx, ..
        } = self;
        recorder.close().await;
        tool_ctx.shutdown().await;
    }

    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    pub fn spec(&self) -> &SessionSpec {
        &self.spec
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The provider and model the session talks to (the primary of its choice).
    pub fn provider(&self) -> &ProviderSpec {
        &self.providers.spec
    }

    /// The conversation so far (without the system prompt).
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The stored session the conversation is in now.
    pub fn session_id(&self) -> String {
        self.handle.id()
    }

    /// The stored session this one continued, as it was loaded.
    pub fn resumed(&self) -> Option<&Resumed> {
        self.resumed.as_ref()
    }

    pub fn approvals(&self) -> &Arc<ApprovalGate> {
        &self.tool_ctx.approvals
    }

    pub fn background(&self) -> &Arc<ProcessRegistry> {
        &self.tool_ctx.processes
    }

    pub fn skills(&self) -> &Arc<Library> {
        &self.skills
    }

    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Each tool offered to the model with its toolset, in registration order.
    pub fn tool_toolsets(&self) -> Vec<(String, String)> {
        tools::tool_toolsets(&self.tools)
    }

    /// Continues from `history` instead of the stored conversation (an API client sends the
    /// whole conversation with each request). Only what the next turns add is stored.
    pub fn continue_from(&mut self, history: Vec<Message>) {
        self.history = history;
    }

    /// Tells the memory provider the conversation ended (its failures become warnings).
    async fn end_memory_session(&self) {
        let runtime = self.runtime.clone();
        let sink = move |event: hermes_protocol::AgentEvent| {
            if let hermes_protocol::AgentEvent::Status(line) = event {
                runtime.warn(&line);
            }
        };
        self.agent.end_memory_session(&self.history, &sink).await;
    }

    /// Starts a fresh stored session for the rest of the conversation (`/new`); returns its id.
    /// The memory provider is told the old conversation ended, in the background; the counts
    /// towards the next background review go on (Python's `/new`).
    pub fn new_conversation(&mut self) -> String {
        if let Some(provider) = self.memory.clone()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let history = std::mem::take(&mut self.history);
            handle.spawn(async move {
                hermes_core::memory::provider::end_session(
                    provider.as_ref(),
                    &history,
                    &hermes_core::NoEvents,
                )
                .await;
            });
        }
        self.history.clear();
        self.nudges.conversation_changed();
        self.recorder.new_session()
    }

    /// Keeps the first `keep` messages of the conversation (`/undo`, `/retry`), in the store
    /// too.
    pub fn rewind(&mut self, keep: usize) {
        self.history.truncate(keep);
        self.recorder.rewind(keep);
    }

    /// Compresses the conversation now (`/compress [focus]`). When it got smaller the
    /// conversation continues compressed (in a child stored session, or in place).
    pub async fn compress(
        &mut self,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Compression {
        let Some(out) = self.agent.compress(&self.history, focus, cancel).await else {
            return Compression::Off;
        };
        if cancel.is_cancelled() {
            return Compression::Interrupted;
        }
        if out.messages == self.history {
            return Compression::Unchanged(out);
        }
        self.recorder.compressed(out.messages.clone());
        self.history = out.messages.clone();
        Compression::Done(out)
    }

    /// Continues another stored session (`/resume`) with this session's agent and tools: the
    /// current stored session ends, the other one's conversation is loaded.
    pub async fn resume(&mut self, key: &str) -> Result<(), SessionError> {
        let spec = SessionSpec {
            resume: Resume::Session(key.to_string()),
            ..self.spec.clone()
        };
        let plan = Persistence::plan(
            &spec,
            self.runtime.home(),
            self.runtime.config(),
            &self.providers.spec,
            self.runtime.store_location(),
        )?;
        let recorder = plan.start(
            &self.agent,
            self.handle.clone(),
            self.runtime.store_writer(),
        );
        let previous = std::mem::replace(&mut self.recorder, recorder);
        previous.close().await;
        self.handle.set(plan.session_id());
        self.history = plan.history();
        self.nudges.conversation_changed();
        self.resumed = plan.into_resumed();
        Ok(())
    }

    /// Talks to another provider or model from the next model call on (`/model`, `/provider`):
    /// the conversation, the stored session, the tools (MCP connections included), the approvals
    /// given and the background processes stay. The system prompt is assembled again for the
    /// new model (its model line and model-specific rules; a new model has no prompt cache to
    /// keep), as the Python Hermes does.
    pub fn switch_model(&mut self, choice: Overrides) -> Result<(), SessionError> {
        let providers = self.runtime.providers(&choice)?;
        let spec = SessionSpec {
            model: choice,
            ..self.spec.clone()
        };
        let system_prompt = self.runtime.system_prompt(
            &spec,
            &spec.cwd,
            &self.tools,
            &self.skills,
            (&providers.spec.model, &providers.spec.provider),
        )?;
        let (options, warnings) = agent_options(self.runtime.config(), &spec, &providers.spec)?;
        for w in &warnings {
            self.runtime.warn(w);
        }
        let system_prompt = with_provider_block(system_prompt, self.memory.as_deref());
        let tools = with_delegation(self.tools.clone(), &self.runtime, &providers, &options)?;
        let agent = build_agent(
            &self.runtime,
            &providers,
            tools.clone(),
            system_prompt.clone(),
            options,
            self.tool_ctx.clone(),
            self.memory.clone(),
        )?;
        self.judge.switch(&providers);
        self.agent = agent;
        self.tools = tools;
        self.system_prompt = system_prompt;
        self.providers = providers;
        self.spec = spec;
        self.recorder
            .note_model(self.agent.model(), &self.providers.spec.provider);
        Ok(())
    }

    /// Sets the reasoning effort for every model from the next model call on
    /// (`/reasoning LEVEL`); a later model switch keeps it.
    pub fn set_reasoning_effort(&mut self, effort: hermes_llm::reasoning::ReasoningEffort) {
        self.spec.reasoning_effort = Some(effort.as_str().to_string());
        self.agent
            .set_reasoning(hermes_llm::reasoning::ReasoningSettings {
                default: Some(effort),
                overrides: Vec::new(),
            });
    }

    /// Takes the tools of `runtime` (a runtime loaded again from the home, for
    /// `/reload-mcp`): MCP servers reconnect as config.yaml now says; the conversation, the
    /// stored session, the approvals and the background processes stay. Returns the MCP tools
    /// now offered, with their servers.
    pub fn reload_tools(
        &mut self,
        runtime: Runtime,
    ) -> Result<Vec<(String, String)>, SessionError> {
        let prepared = runtime.prepare(
            &self.spec,
            &self.spec.cwd,
            (&self.providers.spec.model, &self.providers.spec.provider),
        )?;
        let providers = runtime.providers(&self.spec.model)?;
        let (options, _) = agent_options(runtime.config(), &self.spec, &providers.spec)?;
        let tools = with_vision(prepared.tools, &runtime, &providers, &options)?;
        let tools = with_moa(tools, &runtime);
        let tools = with_delegation(tools, &runtime, &providers, &options)?;
        let agent = build_agent(
            &runtime,
            &providers,
            tools.clone(),
            self.system_prompt.clone(),
            options,
            self.tool_ctx.clone(),
            self.memory.clone(),
        )?;
        self.agent = agent;
        self.tools = tools;
        self.providers = providers;
        self.runtime = runtime;
        Ok(self
            .tool_toolsets()
            .into_iter()
            .filter(|(_, set)| set.starts_with("mcp-"))
            .collect())
    }
}

/// The agent of a session: primary and fallbacks from `providers`, the loop guard as
/// `agent.loop_guard` sets it, compression with its auxiliary model when enabled.
fn build_agent(
    runtime: &Runtime,
    providers: &Providers,
    tools: Registry,
    system_prompt: String,
    options: AgentOptions,
    tool_ctx: ToolContext,
    memory: Option<Arc<dyn MemoryProvider>>,
) -> Result<Agent, SessionError> {
    let config = runtime.config();
    let compression: CompressionSettings = config.section("compression")?;
    let model = options.model.clone();
    let mut agent = Agent::new(
        providers.primary.clone(),
        tools,
        system_prompt,
        options,
        tool_ctx,
    )
    .with_fallbacks(providers.fallbacks.clone())
    .with_loop_guard(hermes_core::loop_guard::LoopGuardSettings::from_config(
        &config.raw,
    ));
    if compression.enabled {
        let aux = crate::providers::auxiliary(
            config,
            runtime.env(),
            runtime.home(),
            "compression",
            &providers.primary,
            &model,
        )?;
        agent = agent.with_compressor(Compressor::new(compression, &model, aux));
    }
    if let Some(provider) = memory {
        match agent.attach_memory_provider(provider) {
            Ok(warnings) => warnings.iter().for_each(|w| runtime.warn(w)),
            Err(e) => runtime.warn(&e.to_string()),
        }
    }
    Ok(agent)
}

/// The system prompt with the memory provider's static block after it.
fn with_provider_block(prompt: String, memory: Option<&dyn MemoryProvider>) -> String {
    match memory.map(|m| m.system_prompt_block()) {
        Some(block) if !block.trim().is_empty() => format!("{prompt}\n\n{}", block.trim()),
        _ => prompt,
    }
}

/// The turn-loop settings of a session, and warnings about the reasoning settings.
fn agent_options(
    config: &Config,
    spec: &SessionSpec,
    provider: &ProviderSpec,
) -> Result<(AgentOptions, Vec<String>), SessionError> {
    let agent_cfg = &config.agent;
    let (reasoning, warnings) =
        tools::reasoning_settings(config, spec.reasoning_effort.as_deref())?;
    let options = AgentOptions {
        model: provider.model.clone(),
        max_turns: spec.max_turns.unwrap_or(agent_cfg.max_turns).max(1),
        max_tokens: config.model.max_tokens,
        temperature: config.model.temperature,
        reasoning,
        retry: RetryPolicy::from_settings(
            agent_cfg.api_max_retries,
            agent_cfg.retry_base_delay,
            agent_cfg.retry_max_delay,
        ),
        max_parallel_tools: agent_cfg.max_parallel_tools.clamp(1, 64),
        key_hint: provider.key_source.clone(),
    };
    Ok((options, warnings))
}

/// A working `delegate_task` when the session offers one: sub-agents on the session's
/// providers and options, the `delegation:` settings, the session's tools minus the ones
/// sub-agents may not use, and their conversations stored as child sessions of this one.
fn with_delegation(
    tools: Registry,
    runtime: &Runtime,
    providers: &Providers,
    options: &AgentOptions,
) -> Result<Registry, SessionError> {
    if tools.get(delegation::TOOL_NAME).is_none() {
        return Ok(tools);
    }
    let settings: delegation::DelegationSettings = runtime.config().section("delegation")?;
    let sessions = delegation::ChildSessions {
        writer: runtime.store_writer().clone(),
    };
    Ok(delegation::Delegation::new(
        providers.primary_target(),
        providers.fallbacks.clone(),
        options.clone(),
        settings,
    )
    .recording(sessions)
    .install(&tools))
}

/// `tools` with a working `vision_analyze` (and `browser_vision` beside the browser tools) on
/// the `auxiliary.vision` model (by default the session's own).
fn with_vision(
    tools: Registry,
    runtime: &Runtime,
    providers: &Providers,
    options: &AgentOptions,
) -> Result<Registry, SessionError> {
    if !hermes_core::vision::wanted(&tools) {
        return Ok(tools);
    }
    let target = crate::providers::auxiliary(
        runtime.config(),
        runtime.env(),
        runtime.home(),
        "vision",
        &providers.primary,
        &options.model,
    )?;
    Ok(hermes_core::vision::install(&tools, target))
}

/// `tools` with a working `mixture_of_agents` when the session offers it: the `moa:` presets of
/// config.yaml, slots resolved like fallback entries.
fn with_moa(tools: Registry, runtime: &Runtime) -> Registry {
    if !hermes_core::moa::wanted(&tools) {
        return tools;
    }
    let config = runtime.config();
    let settings = hermes_core::moa::presets::MoaSettings::from_config(
        config.raw.get("moa").unwrap_or(&serde_json::Value::Null),
    );
    let models = crate::providers::PanelModels::new(config, runtime.env(), runtime.home());
    hermes_core::moa::install(
        &tools,
        hermes_core::moa::MixtureOfAgentsTool::new(settings, Arc::new(models)),
    )
}

/// The provider key, redacted from tool output as `[REDACTED:NAME]`: the variable it came
/// from, else `model.api_key`.
fn known_secrets(spec: &ProviderSpec) -> Vec<(String, String)> {
    let name = spec
        .key_source
        .clone()
        .filter(|s| {
            s.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .unwrap_or_else(|| "model.api_key".into());
    spec.api_key
        .iter()
        .map(|k| (name.clone(), k.clone()))
        .collect()
}

/// The smart-approval judge of a session, on the session's model as it is now.
struct SwitchableJudge {
    current: Mutex<Arc<ProviderJudge>>,
}

impl SwitchableJudge {
    fn new(providers: &Providers) -> SwitchableJudge {
        SwitchableJudge {
            current: Mutex::new(Arc::new(judge_for(providers))),
        }
    }

    fn switch(&self, providers: &Providers) {
        if let Ok(mut current) = self.current.lock() {
            *current = Arc::new(judge_for(providers));
        }
    }
}

fn judge_for(providers: &Providers) -> ProviderJudge {
    let ModelTarget { provider, model } = providers.primary_target();
    ProviderJudge::new(provider, &model)
}

#[async_trait::async_trait]
impl CommandJudge for SwitchableJudge {
    async fn assess(&self, command: &str, reason: &str) -> hermes_tools::JudgeVerdict {
        let judge = match self.current.lock() {
            Ok(j) => j.clone(),
            Err(_) => return hermes_tools::JudgeVerdict::Escalate,
        };
        judge.assess(command, reason).await
    }
}
