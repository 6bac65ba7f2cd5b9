//! Sampling: a server asks the client's model for a completion (`sampling/createMessage`).
//! The per-server [`SamplingPolicy`] (the Python Hermes's `sampling:` keys; off unless
//! `enabled: true`) decides whether and how much: a `max_tokens` cap, the models a server may
//! ask for, a per-minute rate limit, a call timeout and how many tool rounds in a row. The
//! model itself is behind the [`SamplingHandler`] trait, which the runtime implements (see
//! [`crate::llm`] for one over a `hermes_llm::Provider`), so this crate needs no model stack.
//! The request and answer are read and written with our own serde types of the wire format.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::{number, parse_flag, scalar_text};

/// What sampling requests from one server may do.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingPolicy {
    /// `enabled`: off by default; a server's requests are refused until it is turned on.
    pub enabled: bool,
    /// `model`: the model to use whatever the server prefers.
    pub model: Option<String>,
    /// `max_tokens_cap`: the most tokens one request may ask for (default 4096).
    pub max_tokens_cap: u32,
    /// `timeout`: seconds one completion may take (default 30).
    pub timeout: Duration,
    /// `max_rpm`: requests per minute (default 10).
    pub max_rpm: u32,
    /// `allowed_models`: the models a server may name (empty: any).
    pub allowed_models: Vec<String>,
    /// `max_tool_rounds`: answers with tool calls in a row before refusing (default 5, 0: none).
    pub max_tool_rounds: u32,
}

impl Default for SamplingPolicy {
    fn default() -> Self {
        SamplingPolicy {
            enabled: false,
            model: None,
            max_tokens_cap: 4096,
            timeout: Duration::from_secs(30),
            max_rpm: 10,
            allowed_models: Vec::new(),
            max_tool_rounds: 5,
        }
    }
}

impl SamplingPolicy {
    /// The `sampling:` block of a server (anything not a mapping: the defaults).
    pub fn from_value(v: &Value) -> SamplingPolicy {
        let d = SamplingPolicy::default();
        let Some(obj) = v.as_object() else {
            return d;
        };
        let count = |k: &str, default: u32, min: f64| {
            obj.get(k)
                .and_then(number)
                .filter(|n| n.is_finite() && *n >= min)
                .map(|n| n.min(f64::from(u32::MAX)) as u32)
                .unwrap_or(default)
        };
        SamplingPolicy {
            enabled: parse_flag(obj.get("enabled"), false),
            model: obj
                .get("model")
                .and_then(scalar_text)
                .filter(|m| !m.trim().is_empty()),
            max_tokens_cap: count("max_tokens_cap", d.max_tokens_cap, 1.0),
            timeout: obj
                .get("timeout")
                .and_then(number)
                .filter(|n| n.is_finite() && *n > 0.0)
                .map(|n| Duration::from_secs_f64(n.min(3600.0)))
                .unwrap_or(d.timeout),
            max_rpm: count("max_rpm", d.max_rpm, 1.0),
            allowed_models: match obj.get("allowed_models") {
                Some(Value::Array(items)) => items.iter().filter_map(scalar_text).collect(),
                Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
                _ => Vec::new(),
            },
            max_tool_rounds: count("max_tool_rounds", d.max_tool_rounds, 0.0),
        }
    }
}

/// Who speaks in a sampling message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SamplingRole {
    User,
    Assistant,
}

/// One piece of a sampling message.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingBlock {
    Text(String),
    /// An image or audio clip (base64 `data`), which a text model sees as a placeholder.
    Media {
        kind: String,
        mime_type: String,
    },
    /// A tool call the model made in an earlier round.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// The text of a tool's result, answering `tool_use_id`.
    ToolResult {
        tool_use_id: String,
        text: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct SamplingMessage {
    pub role: SamplingRole,
    pub content: Vec<SamplingBlock>,
}

/// A tool the server offers the model for this request.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// A request as the policy let it through: the model to use (none: the handler's default)
/// and `max_tokens` already capped.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingRequest {
    /// The server that asked.
    pub server: String,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub messages: Vec<SamplingMessage>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    pub stop_sequences: Vec<String>,
    pub tools: Vec<SamplingTool>,
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
}

impl StopReason {
    fn wire(self) -> &'static str {
        match self {
            StopReason::EndTurn => "endTurn",
            StopReason::MaxTokens => "maxTokens",
            StopReason::StopSequence => "stopSequence",
            StopReason::ToolUse => "toolUse",
        }
    }
}

/// A tool call in the model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingReply {
    /// The model that answered.
    pub model: String,
    pub text: String,
    pub tool_calls: Vec<SampledToolCall>,
    pub stop_reason: StopReason,
}

/// Why a completion failed (the server gets the message as a JSON-RPC error).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SamplingError(pub String);

/// The model that answers sampling requests. Implemented by the runtime (one per process is
/// enough: requests carry the server's name).
#[async_trait::async_trait]
pub trait SamplingHandler: Send + Sync {
    async fn sample(&self, request: SamplingRequest) -> Result<SamplingReply, SamplingError>;
}

/// The policy of one server in front of the shared handler: rate window and tool rounds are
/// per server.
pub(crate) struct Sampler {
    server: String,
    policy: SamplingPolicy,
    handler: std::sync::Arc<dyn SamplingHandler>,
    recent: Mutex<VecDeque<Instant>>,
    tool_rounds: AtomicU32,
}

impl Sampler {
    pub(crate) fn new(
        server: &str,
        policy: SamplingPolicy,
        handler: std::sync::Arc<dyn SamplingHandler>,
    ) -> Sampler {
        Sampler {
            server: server.to_string(),
            policy,
            handler,
            recent: Mutex::new(VecDeque::new()),
            tool_rounds: AtomicU32::new(0),
        }
    }

    /// One `sampling/createMessage`: its `params` as JSON in, the result as JSON out, or the
    /// message of the JSON-RPC error the server gets.
    pub(crate) async fn create_message(&self, params: Value) -> Result<Value, SamplingError> {
        let wire: WireParams = serde_json::from_value(params)
            .map_err(|e| SamplingError(format!("malformed sampling request: {e}")))?;
        self.admit()?;
        let request = self.request(wire)?;
        let reply = tokio::time::timeout(self.policy.timeout, self.handler.sample(request))
            .await
            .map_err(|_| {
                SamplingError(format!(
                    "sampling timed out after {} s for server '{}'",
                    self.policy.timeout.as_secs_f64(),
                    self.server
                ))
            })??;
        self.answer(reply)
    }

    /// The sliding one-minute rate window.
    fn admit(&self) -> Result<(), SamplingError> {
        let now = Instant::now();
        let mut recent = self
            .recent
            .lock()
            .map_err(|_| SamplingError("sampling state is unusable".into()))?;
        while recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(60))
        {
            recent.pop_front();
        }
        if recent.len() >= self.policy.max_rpm as usize {
            return Err(SamplingError(format!(
                "sampling rate limit exceeded for server '{}' ({} requests/minute)",
                self.server, self.policy.max_rpm
            )));
        }
        recent.push_back(now);
        Ok(())
    }

    fn request(&self, wire: WireParams) -> Result<SamplingRequest, SamplingError> {
        let hinted = wire
            .model_preferences
            .as_ref()
            .and_then(|p| p.hints.iter().find_map(|h| h.name.clone()))
            .filter(|n| !n.trim().is_empty());
        let model = self.policy.model.clone().or(hinted);
        if let Some(m) = &model
            && !self.policy.allowed_models.is_empty()
            && !self.policy.allowed_models.contains(m)
        {
            return Err(SamplingError(format!(
                "model '{m}' is not allowed for server '{}' (allowed: {})",
                self.server,
                self.policy.allowed_models.join(", ")
            )));
        }
        let messages = wire
            .messages
            .into_iter()
            .map(|m| SamplingMessage {
                role: m.role,
                content: m.content.into_vec().into_iter().map(block).collect(),
            })
            .collect();
        Ok(SamplingRequest {
            server: self.server.clone(),
            model,
            system_prompt: wire.system_prompt.filter(|s| !s.trim().is_empty()),
            messages,
            max_tokens: wire.max_tokens.clamp(1, self.policy.max_tokens_cap),
            temperature: wire.temperature,
            stop_sequences: wire.stop_sequences,
            tools: wire
                .tools
                .into_iter()
                .map(|t| SamplingTool {
                    name: t.name,
                    description: t.description.unwrap_or_default(),
                    input_schema: t.input_schema.unwrap_or_else(|| json!({"type": "object"})),
                })
                .collect(),
        })
    }

    fn answer(&self, reply: SamplingReply) -> Result<Value, SamplingError> {
        if reply.tool_calls.is_empty() {
            self.tool_rounds.store(0, Ordering::Relaxed);
            return Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": crate::text::redact(&reply.text)},
                "model": reply.model,
                "stopReason": reply.stop_reason.wire(),
            }));
        }
        let rounds = self.tool_rounds.fetch_add(1, Ordering::Relaxed) + 1;
        if rounds > self.policy.max_tool_rounds {
            self.tool_rounds.store(0, Ordering::Relaxed);
            return Err(SamplingError(if self.policy.max_tool_rounds == 0 {
                format!(
                    "tool use is disabled for server '{}' (max_tool_rounds: 0)",
                    self.server
                )
            } else {
                format!(
                    "tool loop limit exceeded for server '{}' (max {} rounds)",
                    self.server, self.policy.max_tool_rounds
                )
            }));
        }
        let content: Vec<Value> = reply
            .tool_calls
            .into_iter()
            .map(|c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.input}))
            .collect();
        Ok(json!({
            "role": "assistant",
            "content": content,
            "model": reply.model,
            "stopReason": StopReason::ToolUse.wire(),
        }))
    }
}

fn block(b: WireBlock) -> SamplingBlock {
    match b {
        WireBlock::Text { text } => SamplingBlock::Text(text),
        WireBlock::Image { mime_type } => SamplingBlock::Media {
            kind: "image".into(),
            mime_type: mime_type.unwrap_or_default(),
        },
        WireBlock::Audio { mime_type } => SamplingBlock::Media {
            kind: "audio".into(),
            mime_type: mime_type.unwrap_or_default(),
        },
        WireBlock::ToolUse { id, name, input } => SamplingBlock::ToolUse { id, name, input },
        WireBlock::ToolResult {
            tool_use_id,
            content,
        } => SamplingBlock::ToolResult {
            tool_use_id,
            text: content
                .iter()
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        },
        WireBlock::Other => SamplingBlock::Text(String::new()),
    }
}

// The wire format of `sampling/createMessage` params (MCP 2025-06-18 and later).

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireParams {
    messages: Vec<WireMessage>,
    #[serde(default)]
    model_preferences: Option<WirePreferences>,
    #[serde(default)]
    system_prompt: Option<String>,
    #[serde(default)]
    temperature: Option<f32>,
    max_tokens: u32,
    #[serde(default)]
    stop_sequences: Vec<String>,
    #[serde(default)]
    tools: Vec<WireTool>,
}

#[derive(Deserialize)]
struct WirePreferences {
    #[serde(default)]
    hints: Vec<WireHint>,
}

#[derive(Deserialize)]
struct WireHint {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    role: SamplingRole,
    content: OneOrMany,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(WireBlock),
    Many(Vec<WireBlock>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<WireBlock> {
        match self {
            OneOrMany::One(b) => vec![b],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        text: String,
    },
    Image {
        #[serde(rename = "mimeType", default)]
        mime_type: Option<String>,
    },
    Audio {
        #[serde(rename = "mimeType", default)]
        mime_type: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        #[serde(rename = "toolUseId")]
        tool_use_id: String,
        #[serde(default)]
        content: Vec<Value>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Answers with the request it got, or with tool calls when asked for a tool.
    struct Echo;

    #[async_trait::async_trait]
    impl SamplingHandler for Echo {
        async fn sample(&self, r: SamplingRequest) -> Result<SamplingReply, SamplingError> {
            let tool_calls = if r.tools.is_empty() {
                vec![]
            } else {
                vec![SampledToolCall {
                    id: "c1".into(),
                    name: r.tools[0].name.clone(),
                    input: json!({"q": 1}),
                }]
            };
            Ok(SamplingReply {
                model: r.model.clone().unwrap_or_else(|| "default-model".into()),
                text: format!("{} tokens, {:?}", r.max_tokens, r.messages),
                tool_calls,
                stop_reason: StopReason::EndTurn,
            })
        }
    }

    fn sampler(policy: Value) -> Sampler {
        let mut policy = SamplingPolicy::from_value(&policy);
        policy.enabled = true;
        Sampler::new("srv", policy, Arc::new(Echo))
    }

    fn params(extra: Value) -> Value {
        let mut p = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                           "maxTokens": 10000});
        if let (Some(p), Some(e)) = (p.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        p
    }

    #[tokio::test]
    async fn the_policy_caps_tokens_picks_the_model_and_checks_it() {
        let s = sampler(json!({"max_tokens_cap": 50, "allowed_models": ["a", "b"]}));
        let out = s
            .create_message(params(
                json!({"modelPreferences": {"hints": [{"name": "b"}]}}),
            ))
            .await
            .unwrap();
        assert_eq!(out["model"], "b");
        assert_eq!(out["stopReason"], "endTurn");
        assert!(
            out["content"]["text"]
                .as_str()
                .unwrap()
                .starts_with("50 tokens"),
            "{out}"
        );
        let err = s
            .create_message(params(
                json!({"modelPreferences": {"hints": [{"name": "z"}]}}),
            ))
            .await
            .unwrap_err();
        assert_eq!(
            err.0,
            "model 'z' is not allowed for server 'srv' (allowed: a, b)"
        );
        let forced = sampler(json!({"model": "x"}));
        let out = forced
            .create_message(params(
                json!({"modelPreferences": {"hints": [{"name": "b"}]}}),
            ))
            .await
            .unwrap();
        assert_eq!(out["model"], "x");
    }

    #[tokio::test]
    async fn the_rate_limit_and_tool_rounds_are_enforced() {
        let s = sampler(json!({"max_rpm": 2, "max_tool_rounds": 1}));
        assert!(s.create_message(params(json!({}))).await.is_ok());
        let tool = json!({"tools": [{"name": "look", "inputSchema": {"type": "object"}}]});
        let out = s.create_message(params(tool.clone())).await.unwrap();
        assert_eq!(out["stopReason"], "toolUse");
        assert_eq!(
            out["content"],
            json!([{"type": "tool_use", "id": "c1", "name": "look", "input": {"q": 1}}])
        );
        let err = s.create_message(params(json!({}))).await.unwrap_err();
        assert_eq!(
            err.0,
            "sampling rate limit exceeded for server 'srv' (2 requests/minute)"
        );
        let s = sampler(json!({"max_tool_rounds": 1}));
        assert!(s.create_message(params(tool.clone())).await.is_ok());
        let err = s.create_message(params(tool.clone())).await.unwrap_err();
        assert_eq!(
            err.0,
            "tool loop limit exceeded for server 'srv' (max 1 rounds)"
        );
        let s = sampler(json!({"max_tool_rounds": 0}));
        assert!(s.create_message(params(tool)).await.is_err());
    }

    #[tokio::test]
    async fn messages_of_every_kind_are_read() {
        let s = sampler(json!({}));
        let p = json!({"maxTokens": 5, "systemPrompt": "be brief", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"},
                                         {"type": "image", "data": "xx", "mimeType": "image/png"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "toolUseId": "t",
                                          "content": [{"type": "text", "text": "r"}]}]},
            {"role": "user", "content": {"type": "resource_link", "uri": "x"}}
        ]});
        let wire: WireParams = serde_json::from_value(p).unwrap();
        let r = s.request(wire).unwrap();
        assert_eq!(r.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(r.max_tokens, 5);
        assert_eq!(
            r.messages[0].content,
            [
                SamplingBlock::Text("a".into()),
                SamplingBlock::Media {
                    kind: "image".into(),
                    mime_type: "image/png".into()
                }
            ]
        );
        assert_eq!(
            r.messages[2].content,
            [SamplingBlock::ToolResult {
                tool_use_id: "t".into(),
                text: "r".into()
            }]
        );
        assert!(
            s.create_message(json!({"messages": "x"}))
                .await
                .unwrap_err()
                .0
                .starts_with("malformed sampling request")
        );
    }
}
