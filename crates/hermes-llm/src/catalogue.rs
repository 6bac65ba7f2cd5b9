//! The model catalogue (data/models.json): context window, maximum output and prices of the
//! common models of each preset, and cost estimates from token usage. Unknown models get a
//! conservative context window and no price ("cost unknown").

use std::collections::BTreeMap;
use std::sync::OnceLock;

use hermes_protocol::Usage;
use serde::Deserialize;

/// Context window assumed for models the catalogue does not know.
pub const UNKNOWN_CONTEXT: u64 = 32_768;
/// Output limit assumed for models the catalogue does not know (and for APIs that require one).
pub const UNKNOWN_MAX_OUTPUT: u64 = 8_192;

/// What the catalogue knows about one model. Prices are USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct ModelInfo {
    pub context: u64,
    pub max_output: u64,
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

#[derive(Deserialize)]
struct Catalogue {
    models: BTreeMap<String, ModelInfo>,
}

fn catalogue() -> &'static BTreeMap<String, ModelInfo> {
    static CATALOGUE: OnceLock<BTreeMap<String, ModelInfo>> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        serde_json::from_str::<Catalogue>(include_str!("../data/models.json"))
            .map(|c| c.models)
            .unwrap_or_default()
    })
}

/// `anthropic/claude-sonnet-4.5` -> `claude-sonnet-4-5`
fn normalize(model: &str) -> String {
    let base = model.rsplit('/').next().unwrap_or(model);
    let base = base.split(':').next().unwrap_or(base);
    base.to_ascii_lowercase().replace('.', "-")
}

/// The catalogue entry for a model id, if known.
pub fn lookup(model: &str) -> Option<ModelInfo> {
    let id = normalize(model);
    catalogue()
        .iter()
        // Bedrock ids carry region and vendor prefixes: `us.anthropic.claude-…`.
        .filter(|(key, _)| id.starts_with(key.as_str()) || id.contains(&format!("-{key}")))
        .max_by_key(|(key, _)| key.len())
        .map(|(_, info)| *info)
}

/// The context window of a model (the catalogue's, else a conservative default).
pub fn context_window(model: &str) -> u64 {
    lookup(model).map_or(UNKNOWN_CONTEXT, |m| m.context)
}

/// The output limit of a model (the catalogue's, else a conservative default).
pub fn max_output(model: &str) -> u64 {
    lookup(model).map_or(UNKNOWN_MAX_OUTPUT, |m| m.max_output)
}

/// Estimated cost in USD of `usage` on `model`; `None` when the prices are unknown.
pub fn cost(model: &str, usage: &Usage) -> Option<f64> {
    let info = lookup(model)?;
    let (input, output) = (info.input?, info.output?);
    let cached_read = usage.cache_read_tokens;
    let cached_write = usage.cache_write_tokens;
    let fresh = usage
        .input_tokens
        .saturating_sub(cached_read)
        .saturating_sub(cached_write);
    let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
    Some(
        per(fresh, input)
            + per(cached_read, info.cache_read.unwrap_or(input))
            + per(cached_write, info.cache_write.unwrap_or(input))
            + per(usage.output_tokens, output),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_file_parses_and_every_entry_is_sane() {
        assert!(catalogue().len() > 30);
        for (k, m) in catalogue() {
            assert!(
                m.context >= 8_192 && m.max_output > 0 && m.max_output <= m.context,
                "{k}"
            );
        }
    }

    #[test]
    fn ids_match_through_prefixes_dates_and_dots() {
        assert_eq!(context_window("anthropic/claude-sonnet-4.5"), 200_000);
        assert_eq!(
            lookup("claude-sonnet-4-5-20250929").unwrap().input,
            Some(3.0)
        );
        assert_eq!(
            lookup("openai/gpt-5-mini").unwrap().input,
            Some(0.25),
            "longest key wins over gpt-5"
        );
        assert_eq!(lookup("gemini-2.5-flash-lite").unwrap().input, Some(0.1));
        assert!(lookup("mock-model").is_none());
        assert_eq!(
            context_window("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            200_000
        );
        assert_eq!(context_window("mock-model"), UNKNOWN_CONTEXT);
    }

    #[test]
    fn cost_counts_cache_reads_at_their_price() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 400_000,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        };
        let c = cost("claude-sonnet-4-5", &usage).unwrap();
        // 600k fresh * 3 + 400k * 0.3 + 100k * 15 = 1.8 + 0.12 + 1.5
        assert!((c - 3.42).abs() < 1e-9, "{c}");
        assert_eq!(cost("unknown-model", &usage), None);
        assert_eq!(
            cost("hermes-4-70b", &usage).map(|c| (c * 1000.0).round()),
            Some(170.0)
        );
    }
}
