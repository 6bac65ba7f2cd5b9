//! `hermes prompt-size`: what every request of a session costs before the conversation starts.
//! Builds the same system prompt and tool list a chat would (same config, flags, working
//! directory and home) and counts their tokens with tiktoken's `o200k_base`, one line per tool
//! schema as it goes on the wire, plus the whole first-request body without the user message.
//! The tokenizer is only loaded here, so other commands start without it.

use std::process::ExitCode;

use hermes_llm::Overrides;
use hermes_protocol::ToolSchema;
use serde_json::{Value, json};

use crate::args::CommonArgs;
use crate::error::CliError;

/// Prints the table for the current config.
pub fn run(args: &CommonArgs) -> Result<ExitCode, CliError> {
    let runtime = crate::session::runtime(args)?;
    let (config, env) = (runtime.config(), runtime.env());
    let overrides = Overrides {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
    };
    // No usable provider is no reason not to count: fall back to what config names.
    let (model, provider) = match hermes_llm::resolve(&config.model, env, &overrides) {
        Ok(spec) => (spec.model, spec.provider),
        Err(e) => {
            eprintln!("hermes: {e}; counting for the model named in config");
            (
                args.model
                    .clone()
                    .or_else(|| config.model.default.clone())
                    .unwrap_or_default(),
                args.provider
                    .clone()
                    .or_else(|| config.model.provider.clone())
                    .unwrap_or_else(|| "none".into()),
            )
        }
    };
    let cwd = crate::session::working_dir(config)?;
    let spec = args.spec(hermes_runtime::Platform::Cli, cwd.clone());
    let prepared = runtime.prepare(&spec, &cwd, (&model, &provider))?;
    let bpe = tiktoken_rs::o200k_base()
        .map_err(|e| CliError::runtime(format!("cannot load the o200k_base tokenizer: {e}")))?;
    let count = |text: &str| bpe.encode_ordinary(text).len();
    let report = measure(
        &model,
        &prepared.system_prompt,
        &prepared.tools.schemas(),
        count,
    );
    print!("{}", render(&model, &provider, &report));
    Ok(ExitCode::SUCCESS)
}

/// Tokens and bytes of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Size {
    pub name: String,
    pub tokens: usize,
    pub bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub system: Size,
    /// Each tool as sent, largest first.
    pub tools: Vec<Size>,
    /// The `tools` array as a whole.
    pub tools_total: Size,
    /// The request body with the system prompt and tools but no conversation yet.
    pub request: Size,
}

/// One tool as the Chat Completions wire carries it.
fn wire_tool(schema: &ToolSchema) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": schema.name,
            "description": schema.description,
            "parameters": schema.parameters,
        }
    })
}

pub fn measure(
    model: &str,
    system: &str,
    schemas: &[ToolSchema],
    count: impl Fn(&str) -> usize,
) -> Report {
    let size = |name: &str, text: &str| Size {
        name: name.to_string(),
        tokens: count(text),
        bytes: text.len(),
    };
    let wire: Vec<Value> = schemas.iter().map(wire_tool).collect();
    let mut tools: Vec<Size> = schemas
        .iter()
        .zip(&wire)
        .map(|(s, w)| size(&s.name, &w.to_string()))
        .collect();
    tools.sort_by(|a, b| b.tokens.cmp(&a.tokens).then(a.name.cmp(&b.name)));
    let tools_total = size("tools", &Value::Array(wire.clone()).to_string());
    let mut body = json!({
        "model": model,
        "messages": [{"role": "system", "content": system}],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !wire.is_empty() {
        body["tools"] = Value::Array(wire);
    }
    Report {
        system: size("system prompt", system),
        tools,
        tools_total,
        request: size("request", &body.to_string()),
    }
}

pub fn render(model: &str, provider: &str, r: &Report) -> String {
    let line = |label: &str, s: &Size| format!("{label:<30} {:>7} {:>9}\n", s.tokens, s.bytes);
    let mut out = format!(
        "Prompt size for {model} ({provider}), tokens counted with o200k_base\n\n{:<30} {:>7} {:>9}\n",
        "", "tokens", "bytes"
    );
    out.push_str(&line("system prompt", &r.system));
    out.push_str(&line(
        &format!("tool schemas ({})", r.tools.len()),
        &r.tools_total,
    ));
    for t in &r.tools {
        out.push_str(&line(&format!("  {}", t.name), t));
    }
    out.push_str(&line("per request, before messages", &r.request));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_each_part_as_sent() {
        let schemas = vec![
            ToolSchema {
                name: "small".into(),
                description: "s".into(),
                parameters: json!({"type": "object"}),
            },
            ToolSchema {
                name: "big".into(),
                description: "a much longer description".into(),
                parameters: json!({"type": "object"}),
            },
        ];
        // One "token" per byte keeps the arithmetic visible.
        let r = measure("m", "You are a test.", &schemas, str::len);
        assert_eq!(r.system.tokens, 15);
        assert_eq!(r.tools[0].name, "big");
        let small = r#"{"function":{"description":"s","name":"small","parameters":{"type":"object"}},"type":"function"}"#;
        assert_eq!(r.tools[1].bytes, small.len());
        assert!(r.request.tokens > r.system.tokens + r.tools_total.tokens);
        let text = render("m", "p", &r);
        assert!(text.contains("tool schemas (2)"), "{text}");
        assert!(
            text.lines()
                .last()
                .unwrap()
                .starts_with("per request, before messages")
        );
    }
}
