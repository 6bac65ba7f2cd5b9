//! [`Agent`]: the turn loop. One turn = model call, tool calls, results back, repeat, until the
//! model answers without tools. The budget caps model calls per turn (then one grace call
//! without tools asks for a wrap-up); interrupts leave a valid history; failures end the turn
//! with a reason instead of an answer.

use std::sync::Arc;

use hermes_llm::{ErrorClass, Provider, RetryPolicy};
use hermes_protocol::{AgentEvent, FinishReason, Message, ToolCall, ToolSchema, TurnResult};
use hermes_tools::{Registry, ToolContext};
use tokio_util::sync::CancellationToken;

use crate::executor::{self, Action, PlannedCall};
use crate::model_call::{CallFailure, ModelCall};
use crate::{EventSink, IterationBudget, NoEvents, history, repair};

/// Told to the model, without tools, when the iteration budget is spent.
const GRACE_NOTE: &str = "[System: you have used all the tool calls allowed for this turn. Do not call tools. Reply now with a summary of what you did, what is left, and how to continue.]";

/// Turns in a row in which every tool call was invalid before the agent gives up.
const MAX_INVALID_TOOL_TURNS: u32 = 3;

/// Turn-loop settings.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub model: String,
    /// Model calls per turn.
    pub max_turns: u32,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
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
            retry: RetryPolicy::default(),
            max_parallel_tools: 8,
            key_hint: None,
        }
    }
}

pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: Registry,
    schemas: Vec<ToolSchema>,
    system_prompt: String,
    options: AgentOptions,
    tool_ctx: ToolContext,
    /// The conversation of the [`Agent::chat`] facade.
    chat_history: tokio::sync::Mutex<Vec<Message>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider.name())
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
        Agent {
            provider,
            tools,
            schemas,
            system_prompt,
            options,
            tool_ctx,
            chat_history: tokio::sync::Mutex::new(Vec::new()),
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

    pub fn provider(&self) -> &dyn Provider {
        self.provider.as_ref()
    }

    /// One line in, one answer out, keeping the conversation inside the agent.
    pub async fn chat(&self, message: &str) -> Result<String, String> {
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
        match result.error {
            Some(e) => Err(e),
            None => Ok(result.final_text),
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
        let budget = IterationBudget::new(self.options.max_turns);
        self.run_turn_with_budget(user_message, history, sink, cancel, &budget)
            .await
    }

    /// [`Agent::run_turn`] drawing on a budget shared with other agents (delegation).
    pub async fn run_turn_with_budget(
        &self,
        user_message: &str,
        mut history: Vec<Message>,
        sink: &dyn EventSink,
        cancel: CancellationToken,
        budget: &IterationBudget,
    ) -> TurnResult {
        history::close_dangling_tool_calls(&mut history);
        let mut turn = TurnResult {
            messages: history,
            ..TurnResult::default()
        };
        append(&mut turn, sink, Message::user(user_message));
        let ctx = self.tool_ctx.with_cancel(cancel.clone());
        let call = ModelCall {
            provider: self.provider.as_ref(),
            model: &self.options.model,
            system: &self.system_prompt,
            max_tokens: self.options.max_tokens,
            temperature: self.options.temperature,
            retry: self.options.retry,
            key_hint: self.options.key_hint.as_deref(),
        };
        let mut invalid_turns = 0u32;
        loop {
            let grace = !budget.try_consume();
            if grace {
                append(&mut turn, sink, Message::user(GRACE_NOTE));
            }
            let tools: &[ToolSchema] = if grace { &[] } else { &self.schemas };
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
                    append(
                        &mut turn,
                        sink,
                        Message::assistant(note).with_reasoning(Some(reasoning)),
                    );
                    turn.interrupted = true;
                    break;
                }
                Err(CallFailure::Failed { reason, class }) => {
                    if class == ErrorClass::ContextOverflow {
                        sink.emit(AgentEvent::Status(
                            "the conversation is too long for this model".into(),
                        ));
                    }
                    turn.error = Some(reason);
                    break;
                }
            };
            turn.api_calls += 1;
            if let Some(usage) = response.usage {
                turn.usage += usage;
                sink.emit(AgentEvent::Usage(usage));
            }
            let reasoning = Some(response.reasoning.clone());

            if response.tool_calls.is_empty() || grace {
                turn.final_text = response.text.trim().to_string();
                append(
                    &mut turn,
                    sink,
                    Message::assistant(response.text).with_reasoning(reasoning),
                );
                turn.completed = !grace;
                break;
            }

            let truncated = response.finish_reason == Some(FinishReason::Length);
            let planned = self.plan_calls(&response.tool_calls, truncated);
            let all_invalid = planned
                .iter()
                .all(|p| matches!(p.action, Action::Reject(_)));
            append(
                &mut turn,
                sink,
                Message::assistant_with_tools(
                    response.text,
                    planned.iter().map(|p| p.call.clone()).collect(),
                )
                .with_reasoning(reasoning),
            );
            let results =
                executor::execute(&planned, &ctx, sink, self.options.max_parallel_tools).await;
            for result in results {
                append(&mut turn, sink, result);
            }

            if cancel.is_cancelled() {
                turn.interrupted = true;
                break;
            }
            invalid_turns = if all_invalid { invalid_turns + 1 } else { 0 };
            if invalid_turns >= MAX_INVALID_TOOL_TURNS {
                let names: Vec<&str> = planned.iter().map(|p| p.call.name.as_str()).collect();
                turn.error = Some(format!(
                    "Model generated invalid tool call: {} ({MAX_INVALID_TOOL_TURNS} turns in a row)",
                    names.join(", ")
                ));
                break;
            }
        }
        turn
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
                    Err(message) => return reject(raw.clone(), message),
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
                    Err(message) => reject(
                        ToolCall {
                            name,
                            ..raw.clone()
                        },
                        format!("invalid arguments for {}: {message}", raw.name),
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
