//! The `honcho` memory provider: Hermes's conversations observed by a Honcho server
//! (app.honcho.dev or self-hosted), which builds a model of the user and of the agent.
//! Python's `plugins/memory/honcho` over the HTTP API ([`api`]), settings from `honcho.json`
//! ([`config`]), Python's text rules ([`text`]) and its five tools ([`tools`]).
//!
//! Per turn: before it, recall in two layers, each on its own cadence: the base context
//! (session summary, the user's representation and card, the agent's) and the dialectic
//! supplement (Honcho's model answering about the user in 1–3 passes); after it, the exchange
//! is sent (`writeFrequency`) and the next turn's recall is fetched in the background, so
//! later turns never wait on Honcho. The session is created lazily: a Honcho that is down
//! costs the first turn at most `firstTurnBaseWait` and never fails one.

pub mod api;
pub mod config;
mod rewrite;
mod text;
mod tools;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hermes_core::memory::provider::{MemoryAction, MemoryProvider, MemoryWrite, ProviderError};
use hermes_core::memory::store::Target;
use hermes_tools::Tool;
use tokio::sync::OnceCell;
use tokio::task::JoinSet;

pub use api::{Api, HonchoError};
pub use config::{HonchoConfig, RecallMode, WriteFrequency};
pub use rewrite::QueryRewriter;
pub use text::{SessionOrigin, session_name};

/// How many background writes and refreshes may be outstanding; more are dropped (the next
/// turn's refresh supersedes a recall, a message batch stays buffered for the next flush).
const MAX_BACKGROUND: usize = 8;
/// Turns a pending dialectic answer stays fresh, times the cadence.
const STALE_RESULT_MULTIPLIER: u64 = 2;
/// The cadence widens by one per empty dialectic answer, up to this many times.
const BACKOFF_MAX: u64 = 8;

/// The peers and session of this Hermes session in Honcho.
#[derive(Debug, Clone)]
pub struct Identity {
    pub session: String,
    pub user_peer: String,
    pub ai_peer: String,
}

/// The recall state between turns (Python's counters, with the same meanings).
#[derive(Default)]
struct RecallState {
    turn: u64,
    /// The formatted base context (`None`: never fetched).
    base: Option<String>,
    /// A base context fetched in the background, taken by the next turn.
    fresh_base: Option<String>,
    last_context_turn: u64,
    /// The turn of the last non-empty dialectic (`None`: never).
    last_dialectic_turn: Option<u64>,
    /// A dialectic answer waiting for the next turn, with the turn it was asked on.
    pending_dialectic: Option<(String, u64)>,
    empty_streak: u64,
    dialectic_running: bool,
    /// Messages not sent yet, as (peer, content).
    unsent: Vec<(String, String)>,
    turns_unsent: u32,
}

pub(crate) struct Inner {
    cfg: HonchoConfig,
    /// `$HERMES_HOME/memories`: MEMORY.md and USER.md go to a new Honcho session once.
    memories: PathBuf,
    /// `queryRewrite`: the dialectic's first question made from the user's message.
    rewriter: Option<QueryRewriter>,
    /// Shared by every session on the same server, key and workspace.
    api: Arc<Api>,
    id: Identity,
    ready: OnceCell<()>,
    state: Mutex<RecallState>,
    /// Messages and conclusions being sent: waited for when the session ends.
    writes: Mutex<JoinSet<()>>,
    /// Recall fetched for the next turn: dropped when the session ends.
    refreshes: Mutex<JoinSet<()>>,
}

#[derive(Clone, Copy)]
enum Work {
    Write,
    Refresh,
}

/// The provider attached to one session.
pub struct HonchoProvider {
    inner: Arc<Inner>,
}

/// Why Honcho could not be attached.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("memory provider `honcho` not attached: {0}")]
    Config(#[from] config::ConfigError),
    #[error(
        "memory provider `honcho` not attached: no Honcho is configured (set HONCHO_API_KEY, or baseUrl in {file} for a self-hosted server)"
    )]
    NotConfigured { file: String },
    #[error("memory provider `honcho` not attached: {0}")]
    Client(#[from] HonchoError),
}

impl HonchoProvider {
    /// The provider for a session from `origin`, with `runtime_user` the chat user (gateway).
    pub fn new(
        cfg: HonchoConfig,
        origin: &SessionOrigin<'_>,
        runtime_user: Option<&str>,
        memories: PathBuf,
        rewriter: Option<QueryRewriter>,
    ) -> Result<HonchoProvider, SetupError> {
        if !cfg.usable() {
            return Err(SetupError::NotConfigured {
                file: cfg
                    .path
                    .as_ref()
                    .map_or("$HERMES_HOME/honcho.json".into(), |p| {
                        p.display().to_string()
                    }),
            });
        }
        let key = text::session_name(&cfg, origin);
        let id = Identity {
            session: text::sanitize_id(&key),
            user_peer: text::user_peer(&cfg, runtime_user, &key),
            ai_peer: text::sanitize_id(&cfg.ai_peer),
        };
        let api = Api::shared(
            &cfg.base_url,
            cfg.effective_api_key(),
            &cfg.workspace,
            cfg.timeout,
        )?;
        Ok(HonchoProvider {
            inner: Arc::new(Inner {
                cfg,
                memories,
                rewriter,
                api,
                id,
                ready: OnceCell::new(),
                state: Mutex::new(RecallState::default()),
                writes: Mutex::new(JoinSet::new()),
                refreshes: Mutex::new(JoinSet::new()),
            }),
        })
    }

    pub fn identity(&self) -> &Identity {
        &self.inner.id
    }
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, RecallState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Creates the peers and the session once; a failure is retried on the next call.
    async fn ensure_ready(&self) -> Result<(), HonchoError> {
        self.ready
            .get_or_try_init(|| async {
                let o = self.cfg.observation;
                self.api.get_or_create_peer(&self.id.user_peer).await?;
                self.api.get_or_create_peer(&self.id.ai_peer).await?;
                self.api
                    .get_or_create_session(
                        &self.id.session,
                        &[
                            (&self.id.user_peer, o.user_observe_me, o.user_observe_others),
                            (&self.id.ai_peer, o.ai_observe_me, o.ai_observe_others),
                        ],
                    )
                    .await?;
                // Under `per-session` every run is a fresh session: uploading the files to
                // each would flood Honcho with duplicates, so Python skips it too.
                if self.cfg.session_strategy != config::SessionStrategy::PerSession {
                    self.migrate_memory_files().await;
                }
                Ok::<(), HonchoError>(())
            })
            .await
            .map(|_| ())
    }

    /// A Honcho session with no messages yet gets the local memory files, wrapped as prior
    /// memory (Python's `migrate_memory_files`); a failure only loses the import.
    async fn migrate_memory_files(&self) {
        let empty = self
            .api
            .session_context(&self.id.session, &api::ContextQuery::default())
            .await
            .is_ok_and(|ctx| ctx.messages.is_empty());
        if !empty {
            return;
        }
        let files = [
            (
                "MEMORY.md",
                "consolidated_memory.md",
                "Long-term agent notes and preferences",
                &self.id.user_peer,
                "user",
            ),
            (
                "USER.md",
                "user_profile.md",
                "User profile and preferences",
                &self.id.user_peer,
                "user",
            ),
            (
                "SOUL.md",
                "agent_soul.md",
                "Agent persona and identity configuration",
                &self.id.ai_peer,
                "ai",
            ),
        ];
        for (file, upload_name, description, peer, kind) in files {
            let Ok(content) = std::fs::read_to_string(self.memories.join(file)) else {
                continue;
            };
            let content = content.trim();
            if content.is_empty() {
                continue;
            }
            let wrapped = format!(
                "<prior_memory_file>\n<context>\nThis file was consolidated from local conversations BEFORE Honcho was activated.\n{description}. Treat as foundational context for this user.\n</context>\n\n{content}\n</prior_memory_file>\n"
            );
            let metadata = serde_json::json!({"source": "local_memory", "original_file": file, "target_peer": kind});
            if let Err(e) = self
                .api
                .upload_file(&self.id.session, peer, upload_name, wrapped, &metadata)
                .await
            {
                tracing::debug!("honcho: uploading {file} failed: {e}");
            }
        }
    }

    /// Runs `work` in the background unless too much is outstanding already.
    fn spawn(&self, kind: Work, work: impl std::future::Future<Output = ()> + Send + 'static) {
        let set = match kind {
            Work::Write => &self.writes,
            Work::Refresh => &self.refreshes,
        };
        let mut set = set.lock().unwrap_or_else(|e| e.into_inner());
        while set.try_join_next().is_some() {}
        if set.len() < MAX_BACKGROUND {
            set.spawn(work);
        } else {
            tracing::debug!("honcho: background work dropped, {MAX_BACKGROUND} already running");
        }
    }

    /// A peer alias (`user`, `ai`) or id as a peer id.
    fn resolve_peer(&self, peer: Option<&str>) -> String {
        let candidate = peer
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .unwrap_or("user");
        match text::sanitize_id(candidate).as_str() {
            "user" => self.id.user_peer.clone(),
            "ai" => self.id.ai_peer.clone(),
            other => other.to_string(),
        }
    }

    /// Who asks and about whom (Python's `_resolve_observer_target`).
    fn observer_target(&self, peer: Option<&str>) -> (String, Option<String>) {
        let target = self.resolve_peer(peer);
        if target == self.id.ai_peer {
            (target.clone(), Some(target))
        } else if self.cfg.observation.ai_observe_others {
            (self.id.ai_peer.clone(), Some(target))
        } else {
            (target, None)
        }
    }

    /// The observer and observed of conclusions about `peer`.
    fn conclusion_scope(&self, peer: Option<&str>) -> (String, String) {
        let target = self.resolve_peer(peer);
        if target == self.id.ai_peer || !self.cfg.observation.ai_observe_others {
            (target.clone(), target)
        } else {
            (self.id.ai_peer.clone(), target)
        }
    }

    /// Representation and card of `peer`'s view of `target`, each falling back to its own
    /// call when the context call had none.
    async fn peer_view(
        &self,
        peer: &str,
        target: &str,
        search_query: Option<&str>,
    ) -> (String, Vec<String>) {
        let ctx = self
            .api
            .peer_context(peer, Some(target), search_query)
            .await
            .unwrap_or_default();
        let mut representation = ctx.representation.unwrap_or_default();
        let mut card = ctx.peer_card.unwrap_or_default();
        if representation.is_empty() {
            representation = self
                .api
                .representation(peer, Some(target))
                .await
                .unwrap_or_default();
        }
        if card.is_empty() {
            card = self.api.card(peer, Some(target)).await.unwrap_or_default();
        }
        (representation, card)
    }

    /// The base context, formatted (Python's `_format_first_turn_context`).
    async fn base_context(&self, query: Option<&str>) -> String {
        let mut parts = Vec::new();
        if let Ok(ctx) = self
            .api
            .session_context(
                &self.id.session,
                &api::ContextQuery {
                    summary: true,
                    ..Default::default()
                },
            )
            .await
            && let Some(summary) = ctx.summary.filter(|s| !s.content.is_empty())
        {
            parts.push(format!("## Session Summary\n{}", summary.content));
        }
        let (observer, target) = self.observer_target(Some("user"));
        let target = target.unwrap_or_else(|| self.id.user_peer.clone());
        let (rep, card) = self.peer_view(&observer, &target, query).await;
        let (ai_rep, ai_card) = self
            .peer_view(&self.id.ai_peer, &self.id.ai_peer, None)
            .await;
        for (title, body) in [
            ("User Representation", rep),
            ("User Peer Card", card.join("\n")),
            ("AI Self-Representation", ai_rep),
            ("AI Identity Card", ai_card.join("\n")),
        ] {
            if !body.is_empty() {
                parts.push(format!("## {title}\n{body}"));
            }
        }
        parts.join("\n\n")
    }

    /// One dialectic question about `peer`; `level` only when the model may choose it.
    async fn dialectic(
        &self,
        query: &str,
        level: Option<&str>,
        peer: Option<&str>,
        cap: bool,
    ) -> Result<String, HonchoError> {
        let target = self.resolve_peer(peer);
        let query = text::cap_query(query, self.cfg.dialectic_max_input_chars);
        let level = match level {
            Some(l) if self.cfg.dialectic_dynamic => l.to_string(),
            _ => self.cfg.dialectic_reasoning_level.clone(),
        };
        let answer = if self.cfg.observation.ai_observe_others {
            let about = (target != self.id.ai_peer).then_some(target.as_str());
            self.api
                .chat(&self.id.ai_peer, &query, about, Some(&level))
                .await?
        } else {
            self.api.chat(&target, &query, None, Some(&level)).await?
        };
        Ok(if cap {
            text::cap_chars(&answer, self.cfg.dialectic_max_chars)
        } else {
            answer
        })
    }

    /// Up to `dialecticDepth` passes, stopping early on a strong answer; the deepest
    /// non-empty answer.
    async fn dialectic_passes(&self, query: &str) -> String {
        let cold = self.state().base.as_deref().is_none_or(str::is_empty);
        let rewritten = match &self.rewriter {
            Some(r) if !query.is_empty() => r.rewrite(query).await,
            _ => String::new(),
        };
        let mut results: Vec<String> = Vec::new();
        for pass in 0..self.cfg.dialectic_depth {
            let prior: Vec<String> = results
                .iter()
                .filter(|r| !r.trim().is_empty())
                .cloned()
                .collect();
            let prompt = if (pass == 0 || prior.is_empty()) && !rewritten.is_empty() {
                rewritten.clone()
            } else if pass == 0 || prior.is_empty() {
                text::dialectic_prompt(0, &prior, cold)
            } else if prior.last().is_some_and(|p| text::signal_sufficient(p)) {
                break;
            } else {
                text::dialectic_prompt(pass, &prior, cold)
            };
            let level = text::pass_level(&self.cfg, pass, query);
            // The pass level is ours, not the model's: it bypasses `dialecticDynamic`.
            let target = self.id.user_peer.clone();
            let asked = if self.cfg.observation.ai_observe_others {
                self.api
                    .chat(&self.id.ai_peer, &prompt, Some(&target), Some(&level))
                    .await
            } else {
                self.api.chat(&target, &prompt, None, Some(&level)).await
            };
            let answer = match asked {
                Ok(a) => text::cap_chars(&a, self.cfg.dialectic_max_chars),
                Err(e) => {
                    tracing::debug!("honcho dialectic pass {pass} failed: {e}");
                    String::new()
                }
            };
            results.push(answer);
        }
        results
            .into_iter()
            .rev()
            .find(|r| !r.trim().is_empty())
            .unwrap_or_default()
    }

    /// Records a dialectic outcome asked on `turn`.
    fn land_dialectic(&self, answer: String, turn: u64) {
        let mut st = self.state();
        st.dialectic_running = false;
        if answer.trim().is_empty() {
            st.empty_streak += 1;
        } else {
            st.pending_dialectic = Some((answer, turn));
            st.last_dialectic_turn = Some(turn);
            st.empty_streak = 0;
        }
    }

    /// Takes the pending dialectic answer unless it is stale.
    fn take_dialectic(&self) -> String {
        let mut st = self.state();
        let turn = st.turn;
        match st.pending_dialectic.take() {
            Some((answer, fired))
                if turn.saturating_sub(fired)
                    <= self.cfg.dialectic_cadence * STALE_RESULT_MULTIPLIER =>
            {
                answer
            }
            _ => String::new(),
        }
    }

    fn effective_cadence(&self, st: &RecallState) -> u64 {
        let base = self.cfg.dialectic_cadence;
        if st.empty_streak == 0 {
            base
        } else {
            (base + st.empty_streak).min(base * BACKOFF_MAX)
        }
    }

    /// Sends the unsent messages (kept for the next try when Honcho refuses them).
    async fn flush(&self) -> Result<(), HonchoError> {
        let batch = std::mem::take(&mut self.state().unsent);
        if batch.is_empty() {
            return Ok(());
        }
        let sent = match self.ensure_ready().await {
            Ok(()) => self.api.add_messages(&self.id.session, &batch).await,
            Err(e) => Err(e),
        };
        if sent.is_err() {
            let mut st = self.state();
            let newer = std::mem::take(&mut st.unsent);
            st.unsent = batch;
            st.unsent.extend(newer);
            // Bounded: a Honcho down for days must not grow the buffer without end.
            let excess = st.unsent.len().saturating_sub(1000);
            st.unsent.drain(..excess);
        }
        sent
    }

    /// The recall for the coming turn (Python's `prefetch`).
    async fn recall(self: &Arc<Self>, query: &str) -> String {
        let turn = {
            let mut st = self.state();
            st.turn += 1;
            st.turn
        };
        if self.cfg.recall_mode == RecallMode::Tools {
            return String::new();
        }
        if self.ready.get().is_none() {
            // The setup runs on its own task: a slow Honcho finishes it for a later turn
            // instead of having it cancelled by the first turn's deadline.
            let me = Arc::clone(self);
            let setup = async move {
                if let Err(e) = me.ensure_ready().await {
                    tracing::debug!("honcho session not ready: {e}");
                }
            };
            if turn == 1 {
                let task = tokio::spawn(setup);
                let _ = tokio::time::timeout(self.cfg.first_turn_base_wait, task).await;
            } else {
                self.spawn(Work::Refresh, setup);
            }
            if self.ready.get().is_none() {
                return String::new();
            }
        }
        if text::is_trivial(query) {
            return text::truncate_to_budget(&self.take_dialectic(), self.cfg.context_tokens);
        }
        let mut parts = Vec::new();
        let skip_base = self.cfg.first_turn_only && turn > 1;
        if !skip_base {
            let (first_fetch, fresh) = {
                let mut st = self.state();
                let first = st.base.is_none();
                if first {
                    st.base = Some(String::new());
                    st.last_context_turn = turn;
                }
                (first, st.fresh_base.take())
            };
            if first_fetch {
                if let Ok(base) = tokio::time::timeout(
                    self.cfg.first_turn_base_wait,
                    self.base_context(Some(query)),
                )
                .await
                {
                    self.state().base = Some(base);
                }
            } else if let Some(fresh) = fresh.filter(|f| !f.is_empty()) {
                self.state().base = Some(fresh);
            }
            let base = self.state().base.clone().unwrap_or_default();
            if !base.is_empty() {
                parts.push(base);
            }
        }
        let never_asked = {
            let mut st = self.state();
            let first = st.last_dialectic_turn.is_none() && !st.dialectic_running;
            if first {
                st.dialectic_running = true;
            }
            first
        };
        if never_asked {
            let me = Arc::clone(self);
            let q = query.to_string();
            let task = tokio::spawn(async move {
                let answer = me.dialectic_passes(&q).await;
                me.land_dialectic(answer, turn);
            });
            // A slow answer lands for a later turn: the task goes on.
            let _ = tokio::time::timeout(self.cfg.first_turn_dialectic_wait, task).await;
        }
        let dialectic = self.take_dialectic();
        if !dialectic.trim().is_empty() {
            parts.push(dialectic);
        }
        text::truncate_to_budget(&parts.join("\n\n"), self.cfg.context_tokens)
    }

    /// Fetches the next turn's recall in the background when each layer's cadence is due
    /// (Python's `queue_prefetch`).
    fn queue_recall(self: &Arc<Self>, query: &str) {
        if self.cfg.recall_mode == RecallMode::Tools
            || self.ready.get().is_none()
            || text::is_trivial(query)
        {
            return;
        }
        let (context_due, dialectic_due, turn) = {
            let mut st = self.state();
            let turn = st.turn;
            let context_due = !self.cfg.first_turn_only
                && (self.cfg.context_cadence <= 1
                    || turn.saturating_sub(st.last_context_turn) >= self.cfg.context_cadence);
            if context_due {
                st.last_context_turn = turn;
            }
            let since = st
                .last_dialectic_turn
                .map_or(u64::MAX, |last| turn.saturating_sub(last));
            let dialectic_due = !st.dialectic_running && since >= self.effective_cadence(&st);
            if dialectic_due {
                st.dialectic_running = true;
            }
            (context_due, dialectic_due, turn)
        };
        if context_due {
            let me = Arc::clone(self);
            let q = query.to_string();
            self.spawn(Work::Refresh, async move {
                let base = me.base_context(Some(&q)).await;
                if !base.is_empty() {
                    me.state().fresh_base = Some(base);
                }
            });
        }
        if dialectic_due {
            let me = Arc::clone(self);
            let q = query.to_string();
            self.spawn(Work::Refresh, async move {
                let answer = me.dialectic_passes(&q).await;
                me.land_dialectic(answer, turn);
            });
        }
    }
}

#[async_trait::async_trait]
impl MemoryProvider for HonchoProvider {
    fn name(&self) -> &str {
        "honcho"
    }

    async fn prefetch(&self, query: &str) -> Result<String, ProviderError> {
        Ok(self.inner.recall(query).await)
    }

    async fn sync_turn(&self, user: &str, assistant: &str) -> Result<(), ProviderError> {
        let inner = &self.inner;
        if inner.cfg.save_messages {
            let limit = inner.cfg.message_max_chars;
            let due = {
                let mut st = inner.state();
                for chunk in text::chunk_message(&text::strip_memory_context(user), limit) {
                    st.unsent.push((inner.id.user_peer.clone(), chunk));
                }
                for chunk in text::chunk_message(&text::strip_memory_context(assistant), limit) {
                    st.unsent.push((inner.id.ai_peer.clone(), chunk));
                }
                st.unsent.retain(|(_, c)| !c.is_empty());
                st.turns_unsent += 1;
                match inner.cfg.write_frequency {
                    WriteFrequency::Session => false,
                    WriteFrequency::Every(n) => st.turns_unsent >= n,
                    WriteFrequency::Async | WriteFrequency::Turn => true,
                }
            };
            if due {
                inner.state().turns_unsent = 0;
                if inner.cfg.write_frequency == WriteFrequency::Async {
                    let me = Arc::clone(inner);
                    inner.spawn(Work::Write, async move {
                        if let Err(e) = me.flush().await {
                            tracing::debug!("honcho: saving the turn failed: {e}");
                        }
                    });
                } else {
                    inner
                        .flush()
                        .await
                        .map_err(|e| ProviderError(e.to_string()))?;
                }
            }
        }
        inner.queue_recall(user);
        Ok(())
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        if self.inner.cfg.recall_mode == RecallMode::Context {
            return Vec::new();
        }
        tools::all(&self.inner)
    }

    fn system_prompt_block(&self) -> String {
        let tools = "Use honcho_profile for a quick factual snapshot, honcho_search for raw excerpts, \
                     honcho_context for raw peer context, honcho_reasoning for synthesized answers \
                     (pass reasoning_level minimal/low/medium/high/max — you pick the depth per call), \
                     honcho_conclude to save facts about the user.";
        match self.inner.cfg.recall_mode {
            RecallMode::Context => {
                "# Honcho Memory\nActive (context-injection mode). Relevant user context is \
                 automatically injected before each turn. No memory tools are available — context \
                 is managed automatically."
                    .to_string()
            }
            RecallMode::Tools => format!(
                "# Honcho Memory\nActive (tools-only mode). {} No automatic context injection — \
                 you must use tools to access memory.",
                tools.trim_end_matches('.').to_string() + "."
            ),
            RecallMode::Hybrid => format!(
                "# Honcho Memory\nActive (hybrid mode). Relevant context is auto-injected AND \
                 memory tools are available. {tools}"
            ),
        }
    }

    /// A fact added to USER.md becomes a conclusion about the user (Python mirrors only
    /// those).
    fn on_memory_write(&self, write: &MemoryWrite) {
        if write.action != MemoryAction::Add
            || write.target != Target::User
            || write.content.trim().is_empty()
        {
            return;
        }
        let me = Arc::clone(&self.inner);
        let content = write.content.trim().to_string();
        self.inner.spawn(Work::Write, async move {
            let (observer, observed) = me.conclusion_scope(Some("user"));
            let done = match me.ensure_ready().await {
                Ok(()) => {
                    me.api
                        .create_conclusion(&observer, &observed, &content, Some(&me.id.session))
                        .await
                }
                Err(e) => Err(e),
            };
            if let Err(e) = done {
                tracing::debug!("honcho: mirroring a memory write failed: {e}");
            }
        });
    }

    /// Waits for the background writes and sends what is still buffered.
    async fn on_session_end(
        &self,
        _messages: &[hermes_protocol::Message],
    ) -> Result<(), ProviderError> {
        let take = |set: &Mutex<JoinSet<()>>| {
            std::mem::take(&mut *set.lock().unwrap_or_else(|e| e.into_inner()))
        };
        take(&self.inner.refreshes).abort_all();
        let mut writes = take(&self.inner.writes);
        while writes.join_next().await.is_some() {}
        self.inner
            .flush()
            .await
            .map_err(|e| ProviderError(e.to_string()))
    }
}
