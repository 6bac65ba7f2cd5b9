//! [`Agent`]: the turn loop. One turn = model call, tool calls, results back, repeat, until the
//! model answers without tools. The budget caps model calls per turn (then one grace call
//! without tools asks for a wrap-up); interrupts leave a valid history; failures end the turn
//! with a reason instead of an answer.

use std::sync::Arc;

use hermes_llm::{ErrorClass, Provider, RetryPolicy};
use hermes_protocol::{
    AgentEvent, FinishReason, Message, ToolCall, ToolSchema, TurnEnd, TurnFailure, TurnResult,
};
use hermes_tools::{Registry, ToolContext};
use tokio_util::sync::CancellationToken;

use crate::compress::{Compressed, Compressor, tokens};
use crate::executor::{self, Action, PlannedCall};
use crate::memory::provider::{self as memory_provider, AttachError, MemoryProvider};
use crate::model_call::{CallFailure, ModelCall, ModelTarget};
use crate::{EventSink, IterationBudget, NoEvents, history, repair};

/// Told to the model, without tools, when the iteration budget is spent.
const GRACE_NOTE: &str = "[System: you have used all the tool calls allowed for this turn. Do not call tools. Reply now with a summary of what you did, what is left, and how to continue.]";

/// Turns in a row in which every tool call was invalid before the agent gives up.
const MAX_INVALID_TOOL_TURNS: u32 = 3;

/// Context overflows recovered from in one turn (each retry sends a smaller request).
const MAX_OVERFLOW_RECOVERIES: u32 = 4;

/// Turn-loop settings.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub model: String,
    /// Model calls per turn.
    pub max_turns: u32,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// `agent.reasoning_effort` and its per-model overrides.
    pub reasoning: hermes_llm::reasoning::ReasoningSettings,
    pub retry: RetryPolicy,
    pub max_parallel_tools: usize,
    /// Where the provider's key comes from, named when it is rejected.
    pub key_hint: Option<String>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            model: String::new(),
            max_turns: 90,
            max_tokens: None,
            temperature: None,
            reasoning: Default::default(),
            retry: RetryPolicy::default(),
            max_parallel_tools: 8,
            key_hint: None,
        }
    }
}

/// Why [`Agent::chat`] has no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChatError {
    #[error("interrupted")]
    Interrupted,
    #[error("{0}")]
    Failed(TurnFailure),
}

pub struct Agent {
    /// The primary provider and model first, then `fallback_providers` in order.
    targets: Vec<ModelTarget>,
    /// Which target is in use (moves forward on fallback, for the rest of the session).
    active_target: std::sync::atomic::AtomicUsize,
    tools: Registry,
    schemas: Vec<ToolSchema>,
    system_prompt: String,
    options: AgentOptions,
    tool_ctx: ToolContext,
    /// The conversation of the [`Agent::chat`] facade.
    chat_history: tokio::sync::Mutex<Vec<Message>>,
    /// The one external memory provider: recall before a turn, store after it.
    memory_provider: Option<Arc<dyn MemoryProvider>>,
    /// Keeps long conversations inside the context window.
    compressor: Option<Compressor>,
    /// Stops a tool call repeated while it keeps failing (`agent.loop_guard`).
    loop_guard: crate::loop_guard::LoopGuardSettings,
    /// Tools the API client defined: offered beside ours, their calls handed back to the
    /// client instead of run ([`TurnResult::client_calls`]).
    client_tools: Vec<ToolSchema>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider().name())
            .field("model", &self.options.model)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent with these (already selected and available) tools. The system prompt is fixed
    /// for the agent's life.
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: Registry,
        system_prompt: String,
        options: AgentOptions,
        tool_ctx: ToolContext,
    ) -> Agent {
        let schemas = tools.schemas();
        let primary = ModelTarget {
            provider,
            model: options.model.clone(),
        };
        Agent {
            targets: vec![primary],
            active_target: std::sync::atomic::AtomicUsize::new(0),
            tools,
            schemas,
            system_prompt,
            options,
            tool_ctx,
            chat_history: tokio::sync::Mutex::new(Vec::new()),
            memory_provider: None,
            compressor: None,
            loop_guard: Default::default(),
            client_tools: Vec::new(),
        }
    }

    /// Offers the client's own tools beside ours (the API server's `tools`). A client tool
    /// named like one of ours replaces it for this agent: the client defined the contract of
    /// its request, and one name must not mean two tools to the model.
    pub fn set_client_tools(&mut self, tools: Vec<ToolSchema>) {
        self.client_tools = tools;
        self.refresh_schemas();
    }

    fn refresh_schemas(&mut self) {
        let client = &self.client_tools;
        self.schemas = self
            .tools
            .schemas()
            .into_iter()
            .filter(|s| !client.iter().any(|c| c.name == s.name))
            .chain(client.iter().cloned())
            .collect();
    }

    fn is_client_tool(&self, name: &str) -> bool {
        self.client_tools.iter().any(|c| c.name == name)
    }

    /// Sets the loop guard's thresholds (`agent.loop_guard`; on by default).
    pub fn with_loop_guard(mut self, settings: crate::loop_guard::LoopGuardSettings) -> Agent {
        self.loop_guard = settings;
        self
    }

    /// Enables context compression.
    pub fn with_compressor(mut self, compressor: Compressor) -> Agent {
        self.compressor = Some(compressor);
        self
    }

    pub fn compressor(&self) -> Option<&Compressor> {
        self.compressor.as_ref()
    }

    /// Compresses a conversation on request (`/compress [focus]`, `hermes sessions compress`),
    /// whatever its size; `None` without a compressor.
    pub async fn compress(
        &self,
        history: &[Message],
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Option<Compressed> {
        let c = self.compressor.as_ref()?;
        Some(
            c.compress(&self.system_prompt, &self.schemas, history, focus, cancel)
                .await,
        )
    }

    /// Attaches the external memory provider (at most one) and offers its tools; returns
    /// warnings about tools skipped because their names are taken.
    pub fn attach_memory_provider(
        &mut self,
        provider: Arc<dyn MemoryProvider>,
    ) -> Result<Vec<String>, AttachError> {
        if let Some(attached) = &self.memory_provider {
            return Err(AttachError::AlreadyAttached {
                attached: attached.name().to_string(),
                rejected: provider.name().to_string(),
            });
        }
        let warnings = memory_provider::register_tools(provider.as_ref(), &mut self.tools);
        self.refresh_schemas();
        self.memory_provider = Some(provider);
        Ok(warnings)
    }

    /// The attached external memory provider.
    pub fn memory_provider(&self) -> Option<&Arc<dyn MemoryProvider>> {
        self.memory_provider.as_ref()
    }

    /// Tells the attached memory provider that the conversation in `messages` ended.
    pub async fn end_memory_session(&self, messages: &[Message], sink: &dyn EventSink) {
        if let Some(provider) = self.memory_provider.as_deref() {
            memory_provider::end_session(provider, messages, sink).await;
        }
    }

    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    pub fn tool_schemas(&self) -> &[ToolSchema] {
        &self.schemas
    }

    pub fn options(&self) -> &AgentOptions {
        &self.options
    }

    /// The provider in use now (the primary until a fallback took over).
    pub fn provider(&self) -> &dyn Provider {
        self.current_target().provider.as_ref()
    }

    /// The reasoning effort sent to the model in use now (`None`: the provider's default).
    pub fn reasoning_effort(&self) -> Option<hermes_llm::reasoning::ReasoningEffort> {
        self.options.reasoning.for_model(self.model())
    }

    /// Changes the reasoning effort from the next model call on (`/reasoning LEVEL`).
    pub fn set_reasoning(&mut self, settings: hermes_llm::reasoning::ReasoningSettings) {
        self.options.reasoning = settings;
    }

    /// The model in use now.
    pub fn model(&self) -> &str {
        &self.current_target().model
    }

    fn current_target(&self) -> &ModelTarget {
        let i = self
            .active_target
            .load(std::sync::atomic::Ordering::Acquire);
        &self.targets[i.min(self.targets.len() - 1)]
    }

    /// Adds `fallback_providers`, tried in order when the current one fails for good.
    pub fn with_fallbacks(mut self, fallbacks: Vec<ModelTarget>) -> Agent {
        self.targets.extend(fallbacks);
        self
    }

    /// One line in, one answer out, keeping the conversation inside the agent.
    pub async fn chat(&self, message: &str) -> Result<String, ChatError> {
        let mut history = self.chat_history.lock().await;
        let result = self
            .run_turn(
                message,
                std::mem::take(&mut *history),
                &NoEvents,
                CancellationToken::new(),
            )
            .await;
        *history = result.messages;
        match result.end {
            TurnEnd::Failed(failure) => Err(ChatError::Failed(failure)),
            TurnEnd::Interrupted => Err(ChatError::Interrupted),
            TurnEnd::Completed | TurnEnd::BudgetExhausted => Ok(result.final_text),
        }
    }

    /// Runs one turn: `history` (without the system prompt) plus `user_message`.
    pub async fn run_turn(
        &self,
        user_message: &str,
        history: Vec<Message>,
        sink: &dyn EventSink,
        cancel: CancellationToken,
    ) -> TurnResult {
        let budget = Arc::new(IterationBudget::new(self.options.max_turns));
        self.run_turn_with_budget(user_message, history, sink, cancel, &budget)
            .await
    }

    /// [`Agent::run_turn`] drawing on a budget shared with other agents. The turn's tools see
    /// it too (`ToolContext::budget`): `delegate_task` charges its sub-agents' model calls to
    /// it.
    pub async fn run_turn_with_budget(
        &self,
        user_message: &str,
        history: Vec<Message>,
        sink: &dyn EventSink,
        cancel: CancellationToken,
        budget: &Arc<IterationBudget>,
    ) -> TurnResult {
        self.run_turn_with_images(user_message, Vec::new(), history, sink, cancel, budget)
            .await
    }

    /// [`Agent::run_turn_with_budget`] with images given to the model beside the user's text.
    pub async fn run_turn_with_images(
        &self,
        user_message: &str,
        images: Vec<hermes_protocol::Image>,
        mut history: Vec<Message>,
        sink: &dyn EventSink,
        cancel: CancellationToken,
        budget: &Arc<IterationBudget>,
    ) -> TurnResult {
        history::close_dangling_tool_calls(&mut history);
        let mut turn = TurnResult {
            messages: history,
            ..TurnResult::default()
        };
        let provider = self.memory_provider.as_deref();
        let user_content = memory_provider::with_recall(provider, user_message, sink).await;
        append(
            &mut turn,
            sink,
            Message::user_with_images(user_content, images),
        );
        self.run_loop(turn, user_message, sink, cancel, budget)
            .await
    }

    /// Continues a turn the client interrupted to run its own tools: `history` ends with the
    /// results of the [`TurnResult::client_calls`] it was handed; the model goes on from them.
    pub async fn continue_turn(
        &self,
        mut history: Vec<Message>,
        sink: &dyn EventSink,
        cancel: CancellationToken,
        budget: &Arc<IterationBudget>,
    ) -> TurnResult {
        history::close_dangling_tool_calls(&mut history);
        // What the memory provider stores the answer against.
        let user_message = history
            .iter()
            .rev()
            .find(|m| m.role == hermes_protocol::Role::User)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let turn = TurnResult {
            messages: history,
            ..TurnResult::default()
        };
        self.run_loop(turn, &user_message, sink, cancel, budget)
            .await
    }

    /// The model-and-tools loop of a turn whose conversation is in `turn`.
    async fn run_loop(
        &self,
        mut turn: TurnResult,
        user_message: &str,
        sink: &dyn EventSink,
        cancel: CancellationToken,
        budget: &Arc<IterationBudget>,
    ) -> TurnResult {
        let provider = self.memory_provider.as_deref();
        let ctx = self.tool_ctx.for_turn(cancel.clone(), Some(budget.clone()));
        let call = ModelCall {
            targets: &self.targets,
            active: &self.active_target,
            system: &self.system_prompt,
            max_tokens: self.options.max_tokens,
            temperature: self.options.temperature,
            reasoning: &self.options.reasoning,
            retry: self.options.retry,
            key_hint: self.options.key_hint.as_deref(),
        };
        let mut invalid_turns = 0u32;
        // Prompt tokens the provider reported for the last call, and how many messages it saw.
        let mut last_prompt: Option<(u64, usize)> = None;
        let mut overflow_recoveries = 0u32;
        let mut guard = crate::loop_guard::LoopGuard::new(self.loop_guard);
        loop {
            let grace = !budget.try_consume();
            if grace {
                append(&mut turn, sink, Message::user(GRACE_NOTE));
            }
            let tools: &[ToolSchema] = if grace { &[] } else { &self.schemas };
            if !grace
                && self
                    .auto_compress(&mut turn, last_prompt, sink, &cancel)
                    .await
            {
                last_prompt = None;
            }
            sink.emit(AgentEvent::ModelCallStarted {
                api_call: turn.api_calls + 1,
            });
            let response = match call.run(&turn.messages, tools, sink, &cancel).await {
                Ok(r) => r,
                Err(CallFailure::Interrupted { text, reasoning }) => {
                    let note = if text.is_empty() {
                        "[interrupted]"
                    } else {
                        &text
                    };
                    sink.emit(AgentEvent::Interrupted);
                    append(
                        &mut turn,
                        sink,
                        Message::assistant(note).with_reasoning(Some(reasoning)),
                    );
                    turn.end = TurnEnd::Interrupted;
                    break;
                }
                Err(CallFailure::Failed {
                    reason,
                    class,
                    retry_after,
                    detail,
                }) => {
                    if class == ErrorClass::ContextOverflow {
                        sink.emit(AgentEvent::Status(
                            "the conversation is too long for this model".into(),
                        ));
                        // Shrink and try again while the request gets smaller; the failed call
                        // does not count.
                        if overflow_recoveries < MAX_OVERFLOW_RECOVERIES
                            && let Some(c) = &self.compressor
                        {
                            overflow_recoveries += 1;
                            let spill = self
                                .tool_ctx
                                .protected
                                .hermes_home()
                                .map(|h| h.join("cache/tool_results"));
                            if let Some(out) = c
                                .recover_overflow(
                                    &detail,
                                    &self.system_prompt,
                                    tools,
                                    &turn.messages,
                                    spill.as_deref(),
                                    &cancel,
                                )
                                .await
                            {
                                apply_compression(&mut turn, out, sink);
                                last_prompt = None;
                                budget.refund();
                                continue;
                            }
                        }
                    }
                    turn.end = TurnEnd::Failed(TurnFailure {
                        class,
                        message: reason,
                        retry_after_secs: retry_after.map(|d| d.as_secs().max(1)),
                    });
                    break;
                }
            };
            turn.api_calls += 1;
            if let Some(usage) = response.usage {
                last_prompt = Some((usage.input_tokens, turn.messages.len()));
                turn.usage += usage;
                // Priced per call: a fallback mid-turn may change the model. One unpriced
                // call makes the turn's cost unknown.
                let priced = hermes_llm::catalogue::cost(self.model(), &usage);
                turn.cost_usd = match (turn.api_calls, turn.cost_usd, priced) {
                    (1, _, Some(c)) => Some(c),
                    (_, Some(total), Some(c)) => Some(total + c),
                    _ => None,
                };
                sink.emit(AgentEvent::Usage {
                    usage,
                    cost_usd: priced,
                    model: self.model().to_string(),
                    provider: self.provider().name().to_string(),
                });
            }
            let reasoning = Some(response.reasoning.clone());
            let details = response.reasoning_details.clone();

            if response.tool_calls.is_empty() || grace {
                turn.final_text = response.text.trim().to_string();
                append(
                    &mut turn,
                    sink,
                    Message::assistant(response.text)
                        .with_reasoning(reasoning)
                        .with_reasoning_details(details),
                );
                turn.end = if grace {
                    TurnEnd::BudgetExhausted
                } else {
                    TurnEnd::Completed
                };
                break;
            }

            let truncated = response.finish_reason == Some(FinishReason::Length);
            // Calls of the client's tools go back to it; with cut-off arguments they are
            // refused like ours.
            let (client_calls, server_calls): (Vec<ToolCall>, Vec<ToolCall>) = response
                .tool_calls
                .iter()
                .cloned()
                .partition(|c| !truncated && self.is_client_tool(&c.name));
            let mut planned = self.plan_calls(&server_calls, truncated);
            let all_invalid = planned
                .iter()
                .all(|p| matches!(p.action, Action::Reject(_)));
            let guard_stop = guard.review(&mut planned);
            append(
                &mut turn,
                sink,
                Message::assistant_with_tools(
                    response.text.clone(),
                    planned
                        .iter()
                        .map(|p| p.call.clone())
                        .chain(client_calls.iter().cloned())
                        .collect(),
                )
                .with_reasoning(reasoning)
                .with_reasoning_details(details),
            );
            executor::execute(
                &planned,
                &ctx,
                sink,
                self.options.max_parallel_tools,
                &mut |result| append(&mut turn, sink, guard.observe(&planned, result)),
            )
            .await;
            if let Some(provider) = provider {
                mirror_memory_writes(provider, &planned, &turn.messages);
            }

            if cancel.is_cancelled() {
                turn.end = TurnEnd::Interrupted;
                break;
            }
            if !client_calls.is_empty() {
                // The client runs these and continues with their results (`continue_turn`).
                turn.final_text = response.text.trim().to_string();
                turn.client_calls = client_calls;
                turn.end = TurnEnd::Completed;
                break;
            }
            if let Some(reason) = guard_stop {
                turn.end = TurnEnd::failed(ErrorClass::ToolLoop, reason);
                break;
            }
            invalid_turns = if all_invalid && !planned.is_empty() {
                invalid_turns + 1
            } else {
                0
            };
            if invalid_turns >= MAX_INVALID_TOOL_TURNS {
                let names: Vec<&str> = planned.iter().map(|p| p.call.name.as_str()).collect();
                turn.end = TurnEnd::failed(
                    hermes_llm::ErrorClass::ToolLoop,
                    format!(
                        "Model generated invalid tool call: {} ({MAX_INVALID_TOOL_TURNS} turns in a row)",
                        names.join(", ")
                    ),
                );
                break;
            }
        }
        if let Some(provider) = provider
            .filter(|_| !turn.failed() && !turn.is_interrupted() && turn.client_calls.is_empty())
        {
            memory_provider::sync(provider, user_message, &turn.final_text, sink).await;
        }
        turn
    }

    /// Compresses the conversation when its prompt has reached the threshold; true when it did.
    async fn auto_compress(
        &self,
        turn: &mut TurnResult,
        last_prompt: Option<(u64, usize)>,
        sink: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> bool {
        let Some(c) = &self.compressor else {
            return false;
        };
        // The provider's own count of the last prompt plus what was added since, else a
        // rough estimate refined by the tokenizer when it comes close.
        let estimate = match last_prompt {
            Some((tokens, seen)) if seen <= turn.messages.len() => {
                tokens
                    + turn.messages[seen..]
                        .iter()
                        .map(tokens::rough_message)
                        .sum::<u64>()
            }
            _ => {
                let rough =
                    tokens::rough_request(&self.system_prompt, &self.schemas, &turn.messages);
                if c.should_compress(rough) {
                    tokens::exact_request(&self.system_prompt, &self.schemas, &turn.messages)
                } else {
                    rough
                }
            }
        };
        if !c.should_compress(estimate) {
            return false;
        }
        let out = c
            .compress(
                &self.system_prompt,
                &self.schemas,
                &turn.messages,
                None,
                cancel,
            )
            .await;
        apply_compression(turn, out, sink);
        true
    }

    /// Validates and repairs the calls of one response.
    fn plan_calls(&self, calls: &[ToolCall], truncated: bool) -> Vec<PlannedCall> {
        let names = self.tools.names();
        calls
            .iter()
            .map(|raw| {
                let reject = |call: ToolCall, message: String| PlannedCall {
                    call,
                    action: Action::Reject(message),
                };
                if truncated {
                    return reject(
                        raw.clone(),
                        "not run: the reply hit the output token limit, so these arguments may be cut off; send the call again, smaller (split large content over several calls)".into(),
                    );
                }
                let name = match repair::match_tool_name(&raw.name, &names) {
                    Ok(n) => n,
                    Err(unknown) => return reject(raw.clone(), unknown.to_string()),
                };
                let Some(tool) = self.tools.get(&name) else {
                    return reject(raw.clone(), format!("Tool '{name}' is not available"));
                };
                match repair::parse_arguments(&raw.arguments) {
                    Ok((args, repaired)) => PlannedCall {
                        call: ToolCall {
                            id: raw.id.clone(),
                            name,
                            arguments: if repaired {
                                args.to_string()
                            } else {
                                raw.arguments.clone()
                            },
                        },
                        action: Action::Run {
                            tool: tool.clone(),
                            args,
                        },
                    },
                    Err(invalid) => reject(
                        ToolCall {
                            name,
                            ..raw.clone()
                        },
                        format!("invalid arguments for {}: {invalid}", raw.name),
                    ),
                }
            })
            .collect()
    }
}

/// Appends to the conversation and tells the sink (persistence commits it at once).
fn append(turn: &mut TurnResult, sink: &dyn EventSink, message: Message) {
    sink.emit(AgentEvent::MessageAdded(message.clone()));
    turn.messages.push(message);
}

/// Replaces the conversation by its compressed form and tells the frontends.
fn apply_compression(turn: &mut TurnResult, out: Compressed, sink: &dyn EventSink) {
    sink.emit(AgentEvent::Status(format!(
        "compressed the conversation: ~{} -> ~{} tokens{}",
        out.tokens_before,
        out.tokens_after,
        if out.summarized { "" } else { " (pruned only)" }
    )));
    if let Some(notice) = &out.notice {
        sink.emit(AgentEvent::Status(notice.clone()));
    }
    sink.emit(AgentEvent::ContextCompressed {
        messages: out.messages.clone(),
        tokens_before: out.tokens_before,
        tokens_after: out.tokens_after,
    });
    turn.messages = out.messages;
}

/// Hands the provider every change a successful `memory` call of this step made (the result
/// of a call names it by id; a refused or failed call wrote nothing).
fn mirror_memory_writes(
    provider: &dyn MemoryProvider,
    planned: &[executor::PlannedCall],
    messages: &[Message],
) {
    for p in planned.iter().filter(|p| p.call.name == "memory") {
        let ok = messages.iter().rev().any(|m| {
            m.tool_call_id.as_deref() == Some(p.call.id.as_str())
                && serde_json::from_str::<serde_json::Value>(&m.content)
                    .is_ok_and(|v| v.get("ok") == Some(&serde_json::Value::Bool(true)))
        });
        if !ok {
            continue;
        }
        let args = serde_json::from_str(&p.call.arguments).unwrap_or(serde_json::Value::Null);
        for write in crate::memory::provider::MemoryWrite::from_call(&args) {
            provider.on_memory_write(&write);
        }
    }
}
