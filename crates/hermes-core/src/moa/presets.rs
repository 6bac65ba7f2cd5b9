//! The `moa:` section of config.yaml, read the way the Python Hermes reads it
//! (`hermes_cli/moa_config.py`): named presets under `moa.presets`, each with its reference
//! models, aggregator, temperatures, `max_tokens` (4096) and `reference_max_tokens`; the older
//! flat shape (slots directly under `moa:`) is the `default` preset. Reading is tolerant, as in
//! Python: an incomplete slot is dropped and a preset left without references falls back to the
//! defaults, so a hand-edited config never stops the agent. `provider: moa` is refused inside a
//! slot (a MoA run inside a MoA run). Ours on top: `moa.max_cost_usd`, the cost cap of one call.

use hermes_llm::reasoning::ReasoningEffort;
use serde_json::Value;

/// The preset used when config names none.
pub const DEFAULT_PRESET: &str = "default";

/// The Python Hermes's default panel (used when config has no `moa:` section).
const DEFAULT_REFERENCES: &[(&str, &str)] = &[
    ("openai-codex", "gpt-5.5"),
    ("openrouter", "deepseek/deepseek-v4-pro"),
];
const DEFAULT_AGGREGATOR: (&str, &str) = ("openrouter", "anthropic/claude-opus-4.8");

/// Python's default `max_tokens` of a preset.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The default cost cap of one call, in USD (ours; `0` turns the cap off).
pub const DEFAULT_MAX_COST_USD: f64 = 1.0;

/// One model of a panel: a provider (a preset such as `openrouter` or a `custom_providers`
/// name) and a model id on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    pub provider: String,
    pub model: String,
    pub reasoning: Option<ReasoningEffort>,
}

impl Slot {
    pub fn new(provider: &str, model: &str) -> Slot {
        Slot {
            provider: provider.to_string(),
            model: model.to_string(),
            reasoning: None,
        }
    }

    /// `provider:model`, how results and errors name the slot.
    pub fn label(&self) -> String {
        format!("{}:{}", self.provider, self.model)
    }

    /// A slot from config or from a tool argument: a `{provider, model, reasoning_effort}`
    /// mapping or a `provider:model` string (split at the first colon, so `ollama:qwen3:8b`
    /// keeps its tag). `None` when incomplete or when it names the `moa` provider.
    pub fn parse(value: &Value) -> Option<Slot> {
        let (provider, model, effort) = match value {
            Value::Object(map) => {
                let text = |k: &str| {
                    map.get(k)
                        .and_then(Value::as_str)
                        .map(str::trim)
                        .unwrap_or_default()
                        .to_string()
                };
                (text("provider"), text("model"), text("reasoning_effort"))
            }
            Value::String(s) => {
                let (provider, model) = s.trim().split_once(':')?;
                (
                    provider.trim().to_string(),
                    model.trim().to_string(),
                    String::new(),
                )
            }
            _ => return None,
        };
        if provider.is_empty() || model.is_empty() || provider.eq_ignore_ascii_case("moa") {
            return None;
        }
        Some(Slot {
            provider,
            model,
            reasoning: ReasoningEffort::parse(&effort),
        })
    }
}

/// One named panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Preset {
    pub enabled: bool,
    pub references: Vec<Slot>,
    pub aggregator: Slot,
    pub reference_temperature: Option<f32>,
    pub aggregator_temperature: Option<f32>,
    /// The aggregator's output limit (and the references' when `reference_max_tokens` is unset).
    pub max_tokens: u32,
    /// A tighter output limit for the references.
    pub reference_max_tokens: Option<u32>,
    /// Seconds one reference may take (`reference_timeout`); 180 by default.
    pub reference_timeout_secs: u64,
}

impl Preset {
    /// The output limit of one reference answer. Python leaves it uncapped when
    /// `reference_max_tokens` is unset; a cost cap needs a bound, so `max_tokens` is used.
    pub fn reference_limit(&self) -> u32 {
        self.reference_max_tokens.unwrap_or(self.max_tokens)
    }

    fn defaults() -> Preset {
        Preset::from_value(&Value::Null)
    }

    fn from_value(raw: &Value) -> Preset {
        let field = |k: &str| raw.get(k).filter(|v| !v.is_null());
        let references: Vec<Slot> = match field("reference_models") {
            Some(Value::Array(items)) => items.iter().filter_map(Slot::parse).collect(),
            Some(single @ Value::Object(_)) => Slot::parse(single).into_iter().collect(),
            _ => Vec::new(),
        };
        let references = if references.is_empty() {
            DEFAULT_REFERENCES
                .iter()
                .map(|(p, m)| Slot::new(p, m))
                .collect()
        } else {
            references
        };
        let aggregator = field("aggregator")
            .and_then(Slot::parse)
            .unwrap_or_else(|| Slot::new(DEFAULT_AGGREGATOR.0, DEFAULT_AGGREGATOR.1));
        Preset {
            enabled: field("enabled").and_then(Value::as_bool).unwrap_or(true),
            references,
            aggregator,
            reference_temperature: field("reference_temperature")
                .and_then(number)
                .map(|t| t as f32),
            aggregator_temperature: field("aggregator_temperature")
                .and_then(number)
                .map(|t| t as f32),
            max_tokens: field("max_tokens")
                .and_then(number)
                .filter(|n| *n >= 1.0)
                .map_or(DEFAULT_MAX_TOKENS, |n| n.min(f64::from(u32::MAX)) as u32),
            reference_max_tokens: field("reference_max_tokens")
                .and_then(number)
                .filter(|n| *n >= 1.0)
                .map(|n| n.min(f64::from(u32::MAX)) as u32),
            reference_timeout_secs: field("reference_timeout")
                .and_then(number)
                .filter(|n| *n > 0.0)
                .map_or(180, |n| n.min(3_600.0) as u64),
        }
    }
}

/// A number, also when written as a string (`"0.7"`), as Python's coercions accept.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The whole `moa:` section.
#[derive(Debug, Clone, PartialEq)]
pub struct MoaSettings {
    pub default_preset: String,
    /// In listing order: `default` first, then config.yaml's order.
    pub presets: Vec<(String, Preset)>,
    /// The most one call may cost, in USD, by the pre-flight estimate and the running total;
    /// `None` when `moa.max_cost_usd` is `0` (no cap).
    pub max_cost_usd: Option<f64>,
}

impl Default for MoaSettings {
    fn default() -> MoaSettings {
        MoaSettings::from_config(&Value::Null)
    }
}

impl MoaSettings {
    /// The settings from the `moa` value of config.yaml (`Null` when absent). As in the Python
    /// Hermes, whose defaults are merged under the user's config, a `default` preset always
    /// exists and comes first; the others follow in the order config.yaml lists them.
    pub fn from_config(raw: &Value) -> MoaSettings {
        let mut presets = vec![(DEFAULT_PRESET.to_string(), Preset::defaults())];
        match raw.get("presets") {
            Some(Value::Object(named)) if !named.is_empty() => {
                for (name, preset) in named {
                    let name = name.trim();
                    if name.is_empty() {
                        continue;
                    }
                    let preset = Preset::from_value(preset);
                    match presets.iter_mut().find(|(n, _)| n == name) {
                        Some(slot) => slot.1 = preset,
                        None => presets.push((name.to_string(), preset)),
                    }
                }
            }
            // The first shape of the section: the slots directly under `moa:`.
            _ if raw.get("reference_models").is_some() || raw.get("aggregator").is_some() => {
                presets[0].1 = Preset::from_value(raw);
            }
            _ => {}
        }
        let default_preset = raw
            .get("default_preset")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|n| presets.iter().any(|(p, _)| p == n))
            .unwrap_or(DEFAULT_PRESET)
            .to_string();
        let max_cost_usd = match raw.get("max_cost_usd").and_then(number) {
            Some(n) if n <= 0.0 => None,
            Some(n) => Some(n),
            None => Some(DEFAULT_MAX_COST_USD),
        };
        MoaSettings {
            default_preset,
            presets,
            max_cost_usd,
        }
    }

    /// The preset named `name` (the default one when `None`), or an error listing the names.
    pub fn preset(&self, name: Option<&str>) -> Result<(&str, &Preset), UnknownPreset> {
        let name = name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or(&self.default_preset);
        self.presets
            .iter()
            .find(|(n, _)| n == name)
            .map(|(n, p)| (n.as_str(), p))
            .ok_or_else(|| UnknownPreset {
                name: name.to_string(),
                available: self
                    .presets
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("MoA preset '{name}' was not found. Available presets: {available}.")]
pub struct UnknownPreset {
    pub name: String,
    pub available: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_section_gives_pythons_default_panel_and_a_one_dollar_cap() {
        let s = MoaSettings::default();
        assert_eq!(s.default_preset, "default");
        let (_, p) = s.preset(None).unwrap();
        assert_eq!(
            p.references.iter().map(Slot::label).collect::<Vec<_>>(),
            [
                "openai-codex:gpt-5.5",
                "openrouter:deepseek/deepseek-v4-pro"
            ]
        );
        assert_eq!(p.aggregator.label(), "openrouter:anthropic/claude-opus-4.8");
        assert_eq!((p.max_tokens, p.reference_limit()), (4096, 4096));
        assert_eq!(s.max_cost_usd, Some(1.0));
    }

    #[test]
    fn named_presets_incomplete_slots_and_the_flat_shape() {
        let s = MoaSettings::from_config(&json!({
            "default_preset": "fast",
            "max_cost_usd": 0,
            "presets": {
                "fast": {
                    "reference_models": [
                        {"provider": "openrouter", "model": "a/b", "reasoning_effort": "low"},
                        {"provider": "openrouter"},
                        {"provider": "moa", "model": "deep"},
                        "ollama:qwen3:8b"
                    ],
                    "aggregator": {"provider": "anthropic", "model": "claude"},
                    "reference_max_tokens": "600",
                    "reference_temperature": 0.3
                },
                "broken": {"reference_models": "nonsense"}
            }
        }));
        let (name, fast) = s.preset(None).unwrap();
        assert_eq!(name, "fast");
        assert_eq!(
            fast.references.iter().map(Slot::label).collect::<Vec<_>>(),
            ["openrouter:a/b", "ollama:qwen3:8b"]
        );
        assert_eq!(fast.references[0].reasoning, Some(ReasoningEffort::Low));
        assert_eq!(fast.reference_limit(), 600);
        assert_eq!(fast.reference_temperature, Some(0.3));
        assert_eq!(s.max_cost_usd, None, "0 turns the cap off");
        let (_, broken) = s.preset(Some("broken")).unwrap();
        assert_eq!(broken.references.len(), 2, "fell back to the defaults");
        let err = s.preset(Some("nope")).unwrap_err().to_string();
        // `default` first; the others in config order (serde_json keeps it when a crate of the
        // build enables `preserve_order`, as the binary's does).
        assert!(
            err.starts_with("MoA preset 'nope' was not found. Available presets: default, "),
            "{err}"
        );
        assert!(err.contains("fast") && err.contains("broken"), "{err}");

        let flat = MoaSettings::from_config(&json!({
            "reference_models": [{"provider": "p", "model": "m"}],
            "aggregator": {"provider": "p", "model": "agg"},
            "max_tokens": 100
        }));
        let (name, p) = flat.preset(None).unwrap();
        assert_eq!((name, p.max_tokens), ("default", 100));
        assert_eq!(p.aggregator.label(), "p:agg");
    }
}
