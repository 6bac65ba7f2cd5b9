//! `hermes model` (or `hermes model list`): every provider preset and named provider, which one
//! this configuration selects and why, its endpoint, key source, context window and prices, and
//! the fallback chain.

use std::process::ExitCode;

use hermes_config::{Config, Environment, HermesHome};
use hermes_llm::resolve::{NamedProvider, PRESETS, WireFormat, named_providers};
use hermes_llm::{Overrides, catalogue};
use serde_json::Value;

use crate::error::CliError;

fn wire_name(w: WireFormat) -> &'static str {
    match w {
        WireFormat::OpenAiChat => "chat completions",
        WireFormat::Anthropic => "anthropic messages",
        WireFormat::Responses => "responses",
        WireFormat::Bedrock => "bedrock converse",
        #[allow(unreachable_patterns)]
        _ => "local",
    }
}

pub fn list(profile: Option<&str>) -> Result<ExitCode, CliError> {
    let home = HermesHome::resolve(profile).map_err(|e| CliError::config(e.to_string()))?;
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let (config, env) = hermes_config::load(&home).map_err(|e| CliError::config(e.to_string()))?;
    print!("{}", render(&config, &env));
    Ok(ExitCode::SUCCESS)
}

/// The whole listing as text.
pub fn render(config: &Config, env: &Environment) -> String {
    let named = named_providers(&config.raw);
    let mut out = String::new();
    let active =
        hermes_llm::resolve::resolve_with(&config.model, env, &Overrides::default(), &named);
    match &active {
        Ok(spec) => {
            out.push_str(&format!(
                "Active: {} · {} (chosen by {})\n",
                spec.provider, spec.model, spec.chosen_by
            ));
            let key = match &spec.key_source {
                Some(source) => format!("key from {source}"),
                None => "no key".to_string(),
            };
            let (endpoint, wire) = match (spec.provider.as_str(), spec.base_url.is_empty()) {
                ("local", _) => ("in-process", "llama.cpp"),
                (_, true) => ("(from AWS_REGION)", wire_name(spec.wire)),
                _ => (spec.base_url.as_str(), wire_name(spec.wire)),
            };
            out.push_str(&format!("  {endpoint} · {wire} · {key}\n"));
            out.push_str(&format!("  {}\n", model_facts(&spec.model)));
        }
        Err(e) => out.push_str(&format!("Active: none ({e})\n")),
    }
    let active_id = active.as_ref().map(|s| s.provider.clone()).ok();
    out.push_str("\nProviders:\n");
    for p in PRESETS {
        let mark = if active_id.as_deref() == Some(p.id) {
            "*"
        } else {
            " "
        };
        let key = if p.wire == WireFormat::Bedrock {
            "AWS_BEARER_TOKEN_BEDROCK or AWS credentials".to_string()
        } else if p.key_env.is_empty() {
            "no key needed".to_string()
        } else {
            let set = p.key_env.iter().find(|v| env.var(v).is_some());
            match set {
                Some(v) => format!("{v} set"),
                None => format!("{} not set", p.key_env.join("/")),
            }
        };
        let url = match (p.id, p.base_url) {
            ("custom", _) => "(model.base_url)",
            ("local", _) => "(in-process, model.path)",
            (_, "") => "(from AWS_REGION)",
            (_, url) => url,
        };
        let wire = if p.id == "local" {
            "llama.cpp"
        } else {
            wire_name(p.wire)
        };
        out.push_str(&format!(
            "{mark} {:<11} {:<52} {:<18} {}{}\n",
            p.id,
            url,
            wire,
            key,
            p.default_model
                .map(|m| format!(" · default {m}"))
                .unwrap_or_default()
        ));
    }
    if !named.is_empty() {
        out.push_str("\nNamed providers (config.yaml):\n");
        for n in &named {
            out.push_str(&named_line(n, active_id.as_deref()));
        }
    }
    let fallbacks: Vec<String> = hermes_runtime::providers::fallback_chain(config)
        .iter()
        .map(|f| {
            let p = f
                .entry
                .get("provider")
                .and_then(Value::as_str)
                .unwrap_or("?");
            let m = f
                .entry
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("default model");
            format!("{p} · {m}")
        })
        .collect();
    if !fallbacks.is_empty() {
        out.push_str(&format!(
            "\nFallbacks, in order: {}\n",
            fallbacks.join(" -> ")
        ));
    }
    out.push_str("\nSwitch with `model.provider` / `model.default` in config.yaml, or --provider / --model.\n");
    out
}

fn named_line(n: &NamedProvider, active: Option<&str>) -> String {
    let mark = if active == Some(n.name.as_str()) {
        "*"
    } else {
        " "
    };
    let wire = n
        .api_mode
        .as_deref()
        .and_then(WireFormat::parse)
        .or_else(|| WireFormat::from_base_url(&n.base_url))
        .unwrap_or(WireFormat::OpenAiChat);
    format!(
        "{mark} {:<11} {:<52} {:<18} {}\n",
        n.name,
        n.base_url,
        wire_name(wire),
        n.model
            .as_deref()
            .map(|m| format!("model {m}"))
            .unwrap_or_default()
    )
}

/// `context 200,000 tokens · $3.00 in / $15.00 out per million tokens`
fn model_facts(model: &str) -> String {
    match catalogue::lookup(model) {
        Some(m) => {
            let price = match (m.input, m.output) {
                (Some(i), Some(o)) => format!("${i:.2} in / ${o:.2} out per million tokens"),
                _ => "prices unknown".to_string(),
            };
            format!(
                "context {} tokens · max output {} · {price}",
                hermes_llm::util::thousands(m.context),
                hermes_llm::util::thousands(m.max_output)
            )
        }
        None => format!(
            "not in the catalogue: assuming a {} token context, cost unknown",
            hermes_llm::util::thousands(catalogue::UNKNOWN_CONTEXT)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_listing_marks_the_active_provider_and_says_why() {
        let env = Environment::isolated([("ANTHROPIC_API_KEY", "k")]);
        let config = Config::from_yaml(
            Path::new("c.yaml"),
            "custom_providers:\n  - name: work\n    base_url: https://w.example/v1\n    api_mode: codex_responses\nfallback_providers:\n  - provider: openrouter\n    model: openai/gpt-5.1\n",
            &env,
        )
        .unwrap();
        let text = render(&config, &env);
        assert!(text.starts_with("Active: anthropic · claude-sonnet-4-5 (chosen by ANTHROPIC_API_KEY in the environment)"), "{text}");
        assert!(text.contains("context 200,000 tokens"), "{text}");
        assert!(text.contains("* anthropic"), "{text}");
        assert!(text.contains("OPENROUTER_API_KEY not set"), "{text}");
        assert!(
            text.contains("work") && text.contains("responses"),
            "{text}"
        );
        assert!(
            text.contains("Fallbacks, in order: openrouter · openai/gpt-5.1"),
            "{text}"
        );
    }
}
