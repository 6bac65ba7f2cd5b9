//! The curator's LLM consolidation pass (`curator.consolidate`, `hermes curator run
//! --consolidate`): after the lifecycle part of a pass, a one-turn agent on
//! `auxiliary.curator.{provider,model}` (else the main model) reads the agent-created skills and
//! merges overlapping ones into class-level umbrellas with `skills_list`, `skill_view` and the
//! curator's guarded `skill_manage` (nothing else: no terminal, no memory, no context files).
//! The pass is stored as its own session (source `curator`, hidden from `hermes sessions list`
//! like reviews), writes a report under `logs/curator/`, and its outcome joins the pass's
//! summary in `skills/.curator_state`. A failure is reported in that summary, never raised:
//! the lifecycle part has already run.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use hermes_core::record::{EventRecorder, StreamedText};
use hermes_core::skills::curator::consolidate::{self, CuratorAction, CuratorSkillManage, Report};
use hermes_core::skills::curator::{Curator, RunOutcome};
use hermes_core::skills::{Library, SkillSettings, SkillViewTool, SkillsListTool};
use hermes_core::{Agent, AgentOptions, EventSink};
use hermes_llm::Overrides;
use hermes_protocol::AgentEvent;
use hermes_store::{NewSession, SessionStart};
use hermes_tools::{Registry, SessionHandle, ToolContext};
use tokio_util::sync::CancellationToken;

use crate::review::NobodyToAsk;
use crate::runtime::Runtime;

/// The store source of consolidation sessions.
pub const SOURCE: &str = "curator";

/// Model calls the pass may make (the Python Hermes allows thousands; a pass over a few
/// hundred skills takes 50 to 100).
const MAX_CALLS: u32 = 200;

const SYSTEM_PROMPT: &str = "You are Hermes, a self-improving AI agent, here as the curator of \
your own skills library: the skills you wrote from experience, kept so future sessions can \
find and follow them. You work alone in the background; nobody answers questions. Use only \
your tools, then give your summary.";

/// What the model part of a pass did.
#[derive(Debug, Clone, Default)]
pub struct Consolidation {
    /// The summary's `llm:` part: the model's answer cut to 240 characters, `no change`,
    /// `skipped (no candidates)` or `error (...)`.
    pub summary: String,
    pub provider: String,
    pub model: String,
    /// The stored session, when the model ran.
    pub session_id: Option<String>,
    pub actions: Vec<CuratorAction>,
    pub final_text: String,
    pub error: Option<String>,
    /// The `REPORT.md` of the pass.
    pub report: Option<std::path::PathBuf>,
}

/// Runs the consolidation after `outcome`'s lifecycle pass (made at `now`) and records it in
/// the curator's state. `dry_run`: the model only says what it would do.
pub async fn consolidate(
    runtime: &Runtime,
    curator: &Curator,
    outcome: &mut RunOutcome,
    now: f64,
    dry_run: bool,
) -> Consolidation {
    let started = Instant::now();
    let mut done = run_model(runtime, curator, dry_run).await;
    let auto_summary = outcome.plan.summary();
    match consolidate::write_report(
        curator.home(),
        now,
        &Report {
            provider: &done.provider,
            model: &done.model,
            dry_run,
            auto_summary: &auto_summary,
            actions: &done.actions,
            final_text: &done.final_text,
            error: done.error.as_deref(),
        },
    ) {
        Ok(path) => done.report = Some(path),
        Err(e) => runtime.warn(&format!("curator: cannot write the report: {e}")),
    }
    if !dry_run
        && let Err(e) = curator.record_consolidation(
            outcome,
            &done.summary,
            started.elapsed().as_secs_f64(),
            done.report.as_deref(),
        )
    {
        runtime.warn(&format!("curator: cannot record the pass: {e}"));
    }
    done
}

async fn run_model(runtime: &Runtime, curator: &Curator, dry_run: bool) -> Consolidation {
    let candidates = consolidate::candidates(curator.skills_root(), curator.home());
    if candidates.is_empty() {
        return Consolidation {
            summary: "skipped (no candidates)".into(),
            ..Consolidation::default()
        };
    }
    let failed = |message: String| Consolidation {
        summary: format!("error ({message})"),
        error: Some(message),
        ..Consolidation::default()
    };
    let providers = match runtime.providers(&Overrides::default()) {
        Ok(p) => p,
        Err(e) => return failed(e.to_string()),
    };
    let target = match crate::providers::auxiliary(
        runtime.config(),
        runtime.env(),
        runtime.home(),
        "curator",
        &providers.primary,
        &providers.spec.model,
    ) {
        Ok(t) => t,
        Err(e) => return failed(e.to_string()),
    };
    let provider_name = if Arc::ptr_eq(&target.provider, &providers.primary) {
        providers.spec.provider.clone()
    } else {
        target.provider.name().to_string()
    };

    let library = Arc::new(Library::for_home(
        runtime.home(),
        SkillSettings::from_config(runtime.config(), runtime.home().root(), "cli"),
    ));
    let actions = Arc::new(Mutex::new(Vec::new()));
    let mut tools = Registry::new();
    tools.register(Arc::new(SkillsListTool::new(library.clone())));
    tools.register(Arc::new(SkillViewTool::new(library.clone())));
    tools.register(Arc::new(CuratorSkillManage::new(
        library,
        curator.home(),
        dry_run,
        actions.clone(),
    )));

    let session_id = hermes_store::time::new_session_id();
    let mut tool_ctx = ToolContext::new(runtime.home().root().to_path_buf());
    tool_ctx.session = SessionHandle::new(session_id.clone());
    tool_ctx.interaction = Arc::new(NobodyToAsk);
    let options = AgentOptions {
        model: target.model.clone(),
        max_turns: MAX_CALLS,
        ..AgentOptions::default()
    };
    let agent = Agent::new(
        target.provider.clone(),
        tools,
        SYSTEM_PROMPT.to_string(),
        options,
        tool_ctx,
    );
    let writer = runtime
        .store_writer()
        .session(SessionStart::New(NewSession {
            id: session_id.clone(),
            source: SOURCE.into(),
            model: Some(target.model.clone()),
            provider: Some(provider_name.clone()),
            cwd: Some(runtime.home().root().display().to_string()),
            parent_session_id: None,
            system_prompt: Some(SYSTEM_PROMPT.to_string()),
        }));
    let sink = Recorded(EventRecorder::new(writer, StreamedText::Dropped));
    let prompt = consolidate::prompt(&candidates, dry_run);
    let turn = agent
        .run_turn(&prompt, Vec::new(), &sink, CancellationToken::new())
        .await;
    if let Err(e) = sink.0.finish(turn.end.as_str()).await {
        runtime.warn(&format!(
            "curator: the pass's session could not be stored: {e}"
        ));
    }
    let actions = std::mem::take(&mut *actions.lock().unwrap_or_else(PoisonError::into_inner));
    let error = turn.failure().map(|f| f.message.clone());
    Consolidation {
        summary: match &error {
            Some(e) => format!("error ({e})"),
            None => consolidate::llm_summary(&turn.final_text),
        },
        provider: provider_name,
        model: target.model,
        session_id: Some(session_id),
        actions,
        final_text: turn.final_text,
        error,
        report: None,
    }
}

/// Stores the pass's events as its session.
struct Recorded(EventRecorder);

impl EventSink for Recorded {
    fn emit(&self, event: AgentEvent) {
        self.0.record(&event);
    }
}
