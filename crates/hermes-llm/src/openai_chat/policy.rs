//! Which Chat Completions routes need what, decided as the Python Hermes decides it:
//!
//! - Prompt caching: Claude and Kimi models behind OpenRouter or Nous Portal (which proxies to
//!   OpenRouter), Qwen behind Nous Portal, Qwen on OpenCode / Alibaba, accept Anthropic
//!   `cache_control` markers on content parts; without them every request pays full price for
//!   the whole prefix.
//! - Reasoning echo: DeepSeek thinking models, Kimi / Moonshot and Xiaomi MiMo reject a
//!   replayed assistant turn without its `reasoning_content` (HTTP 400), while strict
//!   OpenAI-compatible servers reject the field; so it is sent to those providers only.

use serde_json::{Value, json};

use crate::resolve::host_matches;

/// One request's route: the provider id, its base URL and the model.
#[derive(Debug, Clone, Copy)]
pub struct Route<'a> {
    pub provider: &'a str,
    pub base_url: &'a str,
    pub model: &'a str,
}

impl Route<'_> {
    fn model(&self) -> String {
        self.model.to_ascii_lowercase()
    }

    /// Whether the route accepts `cache_control` breakpoints (system prompt and last three
    /// messages).
    pub fn caches_prompt(&self) -> bool {
        let model = self.model();
        let is_claude = model.contains("claude");
        let is_kimi = model.contains("kimi") || model.contains("moonshot");
        let is_qwen = model.contains("qwen");
        let provider = self.provider.to_ascii_lowercase();
        let openrouter = provider == "openrouter" || host_matches(self.base_url, "openrouter.ai");
        // Nous Portal proxies to OpenRouter: the same envelope caching.
        let nous_portal =
            provider == "nous" || self.base_url.to_ascii_lowercase().contains("nousresearch");
        let alibaba_family = matches!(
            provider.as_str(),
            "opencode" | "opencode-zen" | "opencode-go" | "alibaba"
        );
        ((openrouter || nous_portal) && (is_claude || is_kimi))
            || (nous_portal && is_qwen)
            || (alibaba_family && is_qwen)
    }

    /// Whether replayed assistant turns must carry `reasoning_content`.
    pub fn echoes_reasoning(&self) -> bool {
        let provider = self.provider.to_ascii_lowercase();
        let model = self.model();
        let deepseek = provider == "deepseek"
            || model.contains("deepseek")
            || host_matches(self.base_url, "api.deepseek.com");
        let kimi = matches!(provider.as_str(), "kimi-coding" | "kimi-coding-cn")
            || host_matches(self.base_url, "api.kimi.com")
            || host_matches(self.base_url, "moonshot.ai")
            || host_matches(self.base_url, "moonshot.cn");
        let mimo = provider == "xiaomi"
            || model.contains("mimo")
            || host_matches(self.base_url, "xiaomimimo.com");
        deepseek || kimi || mimo
    }
}

/// The `cache_control` marker for `prompt_caching.cache_ttl` (`5m`, the default, or `1h`).
pub fn cache_marker(ttl: Option<&str>) -> Value {
    match ttl {
        Some("1h") => json!({"type": "ephemeral", "ttl": "1h"}),
        _ => json!({"type": "ephemeral"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route<'a>(provider: &'a str, base_url: &'a str, model: &'a str) -> Route<'a> {
        Route {
            provider,
            base_url,
            model,
        }
    }

    #[test]
    fn caching_follows_the_route_and_the_model() {
        let or = "https://openrouter.ai/api/v1";
        let nous = "https://inference-api.nousresearch.com/v1";
        assert!(route("openrouter", or, "anthropic/claude-sonnet-4.5").caches_prompt());
        assert!(route("custom", or, "moonshotai/kimi-k2").caches_prompt());
        assert!(route("nous", nous, "anthropic/claude-opus-4.5").caches_prompt());
        assert!(route("nous", nous, "qwen3.6-plus").caches_prompt());
        assert!(route("alibaba", "https://dashscope.aliyuncs.com/v1", "qwen-max").caches_prompt());
        assert!(!route("openrouter", or, "openai/gpt-5").caches_prompt());
        assert!(!route("custom", "https://proxy.example/v1", "claude-sonnet-4-5").caches_prompt());
        assert!(!route("custom", "https://openrouter.ai.evil.com/v1", "claude").caches_prompt());
    }

    #[test]
    fn reasoning_echo_for_the_providers_that_require_it() {
        assert!(
            route(
                "deepseek",
                "https://api.deepseek.com/v1",
                "deepseek-reasoner"
            )
            .echoes_reasoning()
        );
        assert!(
            route("custom", "https://api.moonshot.ai/v1", "kimi-k2-thinking").echoes_reasoning()
        );
        assert!(route("kimi-coding", "https://api.kimi.com/coding/v1", "k2").echoes_reasoning());
        assert!(route("custom", "https://api.xiaomimimo.com/v1", "mimo-v2").echoes_reasoning());
        assert!(
            !route(
                "openrouter",
                "https://openrouter.ai/api/v1",
                "moonshotai/kimi-k2"
            )
            .echoes_reasoning()
        );
        assert!(!route("openai", "https://api.openai.com/v1", "gpt-5").echoes_reasoning());
    }

    #[test]
    fn markers_carry_the_configured_lifetime() {
        assert_eq!(cache_marker(None), json!({"type": "ephemeral"}));
        assert_eq!(
            cache_marker(Some("1h")),
            json!({"type": "ephemeral", "ttl": "1h"})
        );
    }
}
