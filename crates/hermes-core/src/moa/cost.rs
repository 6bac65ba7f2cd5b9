//! What a panel costs: a pre-flight estimate of the worst case of one round (every answer at its
//! output limit), checked against `moa.max_cost_usd` before any model is called, and the
//! running total from the usage each answer reports. Prices come from the model catalogue;
//! a model it does not price (a local or custom one) counts as free and is named in the result,
//! so the cap bounds what can be priced and says what could not.

use hermes_protocol::Usage;

/// Tokens of `text` for the estimate: three bytes a token, never fewer than o200k counts for
/// English or code, so the estimate errs towards refusing.
pub fn rough_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(3) + 8
}

/// Cost in USD of `usage` on `model`, `None` when the catalogue has no price for it.
pub fn priced(model: &str, usage: &Usage) -> Option<f64> {
    hermes_llm::catalogue::cost(model, usage)
}

/// The worst case of one call: `input` tokens in, `output` out.
pub fn worst_case(model: &str, input: u64, output: u64) -> Option<f64> {
    priced(
        model,
        &Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        },
    )
}

/// Money and tokens spent so far in one call of the tool.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Spend {
    pub usd: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `provider:model` labels the catalogue could not price.
    pub unpriced: Vec<String>,
}

impl Spend {
    /// Adds one answer. A provider that reports no usage is charged the estimate of what was
    /// sent and received.
    pub fn add(&mut self, label: &str, model: &str, usage: Option<&Usage>, sent: u64, got: &str) {
        let usage = usage.cloned().unwrap_or_else(|| Usage {
            input_tokens: sent,
            output_tokens: rough_tokens(got),
            ..Usage::default()
        });
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        match priced(model, &usage) {
            Some(usd) => self.usd += usd,
            None => self.note_unpriced(label),
        }
    }

    pub fn note_unpriced(&mut self, label: &str) {
        if !self.unpriced.iter().any(|l| l == label) {
            self.unpriced.push(label.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_prices_and_unknown_models() {
        // claude-sonnet-4.5: $3 in, $15 out per million.
        let usd = worst_case("anthropic/claude-sonnet-4.5", 1_000_000, 100_000).unwrap();
        assert!((usd - 4.5).abs() < 1e-9, "{usd}");
        assert_eq!(worst_case("mock-model", 10, 10), None);

        let mut spend = Spend::default();
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 1_000,
            ..Usage::default()
        };
        spend.add(
            "a:claude-sonnet-4.5",
            "claude-sonnet-4.5",
            Some(&usage),
            0,
            "",
        );
        spend.add("local:mine", "mine", None, 30, "twelve bytes");
        spend.add("local:mine", "mine", None, 30, "");
        assert!((spend.usd - 0.018).abs() < 1e-9, "{}", spend.usd);
        assert_eq!(spend.input_tokens, 1_060);
        assert_eq!(spend.output_tokens, 1_000 + 12 + 8);
        assert_eq!(spend.unpriced, ["local:mine"]);
    }
}
