//! `mixture_of_agents {user_prompt, preset?, reference_models?, aggregator_model?, rounds?,
//! strategy?}` (toolset `moa`, off unless enabled, as in the Python Hermes): one hard,
//! self-contained question goes to a panel of reference models in parallel, and an aggregator
//! model merges their answers into one. The panel comes from the `moa:` presets of config.yaml
//! ([`presets`]); the model may override it per call. Every call is priced before it runs and
//! refused when its worst case exceeds `moa.max_cost_usd` ([`cost`]); what it spent is in the
//! result. The catalogue holds a schema-only instance until a session installs the working one
//! with a [`SlotResolver`] that turns `provider:model` slots into models.

pub mod cost;
pub mod panel;
pub mod presets;

use std::sync::Arc;
use std::time::Instant;

use hermes_tools::{Access, Registry, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use self::panel::{MAX_ROUNDS, Member, Panel, Strategy};
use self::presets::{MoaSettings, Slot};
use crate::ModelTarget;

pub const TOOL_NAME: &str = "mixture_of_agents";

/// The most reference models one call may name (a preset in config may hold more).
pub const MAX_REFERENCE_MODELS: usize = 8;

const DESCRIPTION: &str = "Send one hard, self-contained question to a panel of models in parallel and get back one merged answer. The panel and the merging model come from the user's Mixture-of-Agents presets; you may override them per call. Expensive: every call bills every model of the panel, and calls over the user's cost cap are refused. Use it only for genuinely difficult problems where independent expert views help (subtle maths, algorithm design, multi-step analysis, architecture trade-offs, a claim worth cross-checking), never for routine questions.";

/// Why a slot's model cannot be called (reported per panel member; the run goes on without it).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SlotError {
    /// The provider or model could not be resolved (unknown name, no key).
    #[error(transparent)]
    Resolve(#[from] hermes_llm::resolve::ResolveError),
    /// The provider's client could not be built.
    #[error(transparent)]
    Provider(#[from] hermes_llm::LlmError),
}

/// Turns a slot into a model the session can call.
pub trait SlotResolver: Send + Sync {
    /// The model of `slot`, or why it cannot be used (unknown provider, no key).
    fn resolve(&self, slot: &Slot) -> Result<ModelTarget, SlotError>;
}

pub struct MixtureOfAgentsTool {
    setup: Option<(MoaSettings, Arc<dyn SlotResolver>)>,
}

impl MixtureOfAgentsTool {
    /// The catalogue's instance: listed, but a call says it is not set up.
    pub fn schema_only() -> MixtureOfAgentsTool {
        MixtureOfAgentsTool { setup: None }
    }

    pub fn new(settings: MoaSettings, resolver: Arc<dyn SlotResolver>) -> MixtureOfAgentsTool {
        MixtureOfAgentsTool {
            setup: Some((settings, resolver)),
        }
    }
}

/// Whether `tools` offer the tool (so a session sets it up).
pub fn wanted(tools: &Registry) -> bool {
    tools.get(TOOL_NAME).is_some()
}

/// `tools` with the working tool in place of the schema-only one.
pub fn install(tools: &Registry, tool: MixtureOfAgentsTool) -> Registry {
    let mut out = tools.clone();
    out.register(Arc::new(tool));
    out
}

/// The panel a call asks for: the preset's, with the per-call overrides.
fn panel_slots(
    settings: &MoaSettings,
    args: &Value,
) -> Result<(String, Vec<Slot>, Slot), ToolError> {
    let (name, preset) = settings
        .preset(args.get("preset").and_then(Value::as_str))
        .map_err(|e| ToolError::new(e.to_string()))?;
    let references = match override_list(args.get("reference_models"))? {
        Some(items) => {
            let mut slots = Vec::new();
            let mut rejected = Vec::new();
            for item in &items {
                match Slot::parse(item) {
                    Some(slot) => slots.push(slot),
                    None => rejected.push(item.to_string()),
                }
            }
            if !rejected.is_empty() {
                return Err(ToolError::new(format!(
                    "reference_models entries must be 'provider:model' strings or {{provider, model}} objects, and may not use the 'moa' provider. Rejected: {}",
                    rejected.join(", ")
                )));
            }
            if slots.len() > MAX_REFERENCE_MODELS {
                return Err(ToolError::new(format!(
                    "too many reference models ({}); name at most {MAX_REFERENCE_MODELS}",
                    slots.len()
                )));
            }
            slots
        }
        None => preset.references.clone(),
    };
    let aggregator = match args.get("aggregator_model").filter(|v| !is_blank(v)) {
        Some(v) => Slot::parse(v).ok_or_else(|| {
            ToolError::new(format!(
                "aggregator_model must be a 'provider:model' string and may not use the 'moa' provider. Rejected: {v}"
            ))
        })?,
        None => preset.aggregator.clone(),
    };
    Ok((name.to_string(), references, aggregator))
}

fn is_blank(v: &Value) -> bool {
    v.is_null() || v.as_str().is_some_and(|s| s.trim().is_empty())
}

/// A panel override as a list: models often send one string, one object or a JSON-encoded
/// array where the schema asks for an array; those are taken as meant.
fn override_list(value: Option<&Value>) -> Result<Option<Vec<Value>>, ToolError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) if s.trim_start().starts_with('[') => {
            match serde_json::from_str::<Value>(s) {
                Ok(parsed) => override_list(Some(&parsed)),
                Err(_) => Ok(Some(vec![Value::String(s.clone())])),
            }
        }
        Some(v @ (Value::String(_) | Value::Object(_))) => Ok(Some(vec![v.clone()])),
        Some(Value::Array(items)) if items.is_empty() => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items.clone())),
        Some(other) => Err(ToolError::new(format!(
            "reference_models must be an array of 'provider:model' strings, not {other}"
        ))),
    }
}

#[async_trait::async_trait]
impl Tool for MixtureOfAgentsTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn toolset(&self) -> &str {
        "moa"
    }
    fn description(&self) -> &str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "user_prompt": {"type": "string", "description": "The question, complete and self-contained: each panel model receives it verbatim and sees nothing else of the conversation, so include any code, data and constraints it needs"},
                "preset": {"type": "string", "description": "A configured Mixture-of-Agents preset to take the panel from; omit for the user's default"},
                "reference_models": {"type": "array", "items": {"type": "string"}, "description": format!("Override of the panel as 'provider:model' strings (at most {MAX_REFERENCE_MODELS}); only providers the user has configured")},
                "aggregator_model": {"type": "string", "description": "Override of the merging model as a 'provider:model' string"},
                "rounds": {"type": "integer", "minimum": 1, "maximum": MAX_ROUNDS, "description": "Merge rounds (default 1); in later rounds the panel improves on the previous merge, and each round bills the whole panel again"},
                "strategy": {"type": "string", "enum": ["fused", "raw"], "description": "'fused' (default): one merged answer; 'raw': every panel answer labelled by model"}
            },
            "required": ["user_prompt"]
        })
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Read(Vec::new())
    }
    fn preview(&self, args: &Value) -> String {
        args.get("user_prompt")
            .and_then(Value::as_str)
            .map(|s| hermes_tools::output::shorten_line(s, 80))
            .unwrap_or_default()
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let Some((settings, resolver)) = &self.setup else {
            return Err(ToolError::new(
                "mixture_of_agents is not set up in this session",
            ));
        };
        let started = Instant::now();
        // `prompt` is accepted too: it is what models guess the field is called.
        let prompt = args
            .get("user_prompt")
            .or_else(|| args.get("prompt"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ToolError::new("user_prompt is required: the question to ask"))?;
        let strategy = match args.get("strategy").and_then(Value::as_str).map(str::trim) {
            Some("raw") => Strategy::Raw,
            _ => Strategy::Fused,
        };
        let rounds = match strategy {
            // Extra rounds only refine a merge; without one they would just bill again.
            Strategy::Raw => 1,
            Strategy::Fused => args
                .get("rounds")
                .and_then(|v| {
                    v.as_u64()
                        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                })
                .map_or(1, |n| n.clamp(1, u64::from(MAX_ROUNDS)) as u32),
        };
        let (preset_name, references, aggregator) = panel_slots(settings, &args)?;
        let (_, preset) = settings
            .preset(Some(&preset_name))
            .map_err(|e| ToolError::new(e.to_string()))?;
        let member = |slot: Slot| Member {
            target: resolver.resolve(&slot),
            slot,
        };
        let panel = Panel {
            references: references.into_iter().map(member).collect(),
            aggregator: member(aggregator),
            preset,
            cap_usd: settings.max_cost_usd,
        };
        let outcome = panel
            .run(prompt, rounds, strategy, &ctx.cancel)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let spend = &outcome.spend;
        Ok(json!({
            "success": true,
            "response": outcome.response,
            "metadata": {
                "preset": preset_name,
                "reference_models": panel.references.iter().map(Member::label).collect::<Vec<_>>(),
                "aggregator_model": (strategy == Strategy::Fused).then(|| panel.aggregator.label()),
                "strategy": match strategy { Strategy::Fused => "fused", Strategy::Raw => "raw" },
                "rounds_requested": rounds,
                "rounds_executed": outcome.rounds.iter().map(|r| json!({
                    "round": r.round, "succeeded": r.succeeded, "failed": r.failed,
                })).collect::<Vec<_>>(),
                "failed_models": outcome.failures.iter().map(|(label, reason)| json!({"model": label, "error": reason})).collect::<Vec<_>>(),
                "aggregator_error": outcome.aggregator_failure,
                "stopped_by_cost_cap": outcome.stopped_by_cap,
                "cost_usd": (spend.usd * 1e6).round() / 1e6,
                "max_cost_usd": settings.max_cost_usd,
                "unpriced_models": spend.unpriced,
                "usage": {"input_tokens": spend.input_tokens, "output_tokens": spend.output_tokens},
                "processing_time_seconds": (started.elapsed().as_secs_f64() * 100.0).round() / 100.0,
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_are_taken_in_the_shapes_models_send() {
        let settings = MoaSettings::default();
        let (_, refs, agg) = panel_slots(
            &settings,
            &json!({"reference_models": "[\"a:x\", {\"provider\": \"b\", \"model\": \"y\"}]", "aggregator_model": "c:z"}),
        )
        .unwrap();
        assert_eq!(
            refs.iter().map(Slot::label).collect::<Vec<_>>(),
            ["a:x", "b:y"]
        );
        assert_eq!(agg.label(), "c:z");
        let (_, refs, _) =
            panel_slots(&settings, &json!({"reference_models": "ollama:qwen3:8b"})).unwrap();
        assert_eq!(refs[0].label(), "ollama:qwen3:8b");
        let err = panel_slots(
            &settings,
            &json!({"reference_models": ["moa:deep", "bare"]}),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("Rejected: \"moa:deep\", \"bare\""),
            "{err}"
        );
        let many: Vec<String> = (0..9).map(|i| format!("p:m{i}")).collect();
        let err = panel_slots(&settings, &json!({"reference_models": many})).unwrap_err();
        assert!(err.to_string().contains("at most 8"), "{err}");
        let err = panel_slots(&settings, &json!({"preset": "nope"})).unwrap_err();
        assert!(
            err.to_string().contains("Available presets: default"),
            "{err}"
        );
    }
}
