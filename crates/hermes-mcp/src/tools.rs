//! The tools a server's offer becomes: one [`McpTool`] per remote tool and, when the server
//! has them, the resource and prompt tools (`mcp__<srv>__list_resources`, `read_resource`,
//! `list_prompts`, `get_prompt`). Each call runs on the hub's thread under the server's
//! `timeout`; names, toolsets and descriptions are owned by the tool (never leaked).

use std::sync::Arc;

use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use rmcp::service::{Peer, RoleClient};
use serde_json::{Map, Value, json};

use crate::config::ServerConfig;
use crate::connection::{self, Listed, seconds};
use crate::hub::State;
use crate::text;

/// What a tool does when called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Remote,
    ListResources,
    ReadResource,
    ListPrompts,
    GetPrompt,
}

impl Kind {
    fn suffix(self) -> &'static str {
        match self {
            Kind::Remote => "",
            Kind::ListResources => "list_resources",
            Kind::ReadResource => "read_resource",
            Kind::ListPrompts => "list_prompts",
            Kind::GetPrompt => "get_prompt",
        }
    }
}

/// A tool of an MCP server (a remote tool, or one of its resource and prompt tools).
pub struct McpTool {
    name: String,
    toolset: String,
    description: String,
    schema: Value,
    /// The server's own name of the tool (remote tools).
    remote: String,
    kind: Kind,
    state: Arc<State>,
}

/// The utility tools a server gets, skipping any whose name a remote tool already has.
fn utilities(config: &ServerConfig, listed: &Listed) -> Vec<Kind> {
    let mut kinds = Vec::new();
    if listed.resources {
        kinds.extend([Kind::ListResources, Kind::ReadResource]);
    }
    if listed.prompts {
        kinds.extend([Kind::ListPrompts, Kind::GetPrompt]);
    }
    let taken: Vec<String> = listed
        .tools
        .iter()
        .map(|t| text::tool_name(&config.name, &t.name))
        .collect();
    kinds.retain(|k| !taken.contains(&text::tool_name(&config.name, k.suffix())));
    kinds
}

/// The model-facing names of a server's offer.
pub(crate) fn names(config: &ServerConfig, listed: &Listed) -> Vec<String> {
    let mut out: Vec<String> = listed
        .tools
        .iter()
        .map(|t| text::tool_name(&config.name, &t.name))
        .collect();
    out.extend(
        utilities(config, listed)
            .into_iter()
            .map(|k| text::tool_name(&config.name, k.suffix())),
    );
    out
}

pub(crate) fn build(state: &Arc<State>, listed: &Listed) -> Vec<Arc<dyn Tool>> {
    let config = &state.config;
    let toolset = config.toolset();
    let mut out: Vec<Arc<dyn Tool>> = Vec::new();
    for remote in &listed.tools {
        let description = match remote.description.trim() {
            "" => format!("MCP tool {} from {}", remote.name, config.name),
            d => d.to_string(),
        };
        out.push(Arc::new(McpTool {
            name: text::tool_name(&config.name, &remote.name),
            toolset: toolset.clone(),
            description,
            schema: remote.schema.clone(),
            remote: remote.name.clone(),
            kind: Kind::Remote,
            state: state.clone(),
        }));
    }
    for kind in utilities(config, listed) {
        let srv = &config.name;
        let (description, schema) = match kind {
            Kind::ListResources => (
                format!("List available resources from MCP server '{srv}'"),
                json!({"type": "object", "properties": {}}),
            ),
            Kind::ReadResource => (
                format!("Read a resource by URI from MCP server '{srv}'"),
                json!({"type": "object", "properties": {
                    "uri": {"type": "string", "description": "URI of the resource to read"}},
                    "required": ["uri"]}),
            ),
            Kind::ListPrompts => (
                format!("List available prompts from MCP server '{srv}'"),
                json!({"type": "object", "properties": {}}),
            ),
            Kind::GetPrompt | Kind::Remote => (
                format!("Get a prompt by name from MCP server '{srv}'"),
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "Name of the prompt to retrieve"},
                    "arguments": {"type": "object", "description": "Optional arguments to pass to the prompt",
                                  "properties": {}, "additionalProperties": true}},
                    "required": ["name"]}),
            ),
        };
        out.push(Arc::new(McpTool {
            name: text::tool_name(srv, kind.suffix()),
            toolset: toolset.clone(),
            description,
            schema,
            remote: String::new(),
            kind,
            state: state.clone(),
        }));
    }
    out
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn toolset(&self) -> &str {
        &self.toolset
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.schema.clone()
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let timeout = self.state.config.timeout;
        let mut task = self.state.bg.handle.spawn(run(
            self.state.clone(),
            self.kind,
            self.remote.clone(),
            args,
        ));
        let value = match tokio::time::timeout(timeout, &mut task).await {
            Ok(Ok(value)) => value,
            Ok(Err(e)) => json!({"error": format!("MCP call failed: {e}")}),
            Err(_) => {
                task.abort();
                json!({"error": format!("MCP tool {} timed out after {}", self.name, seconds(timeout))})
            }
        };
        match value.get("error").and_then(Value::as_str) {
            Some(e) => Err(ToolError::new(e)),
            None => Ok(value),
        }
    }
}

/// One call, rendered for the model. A call the server died during fails (it is not
/// repeated: tools need not be idempotent); the next call starts the server again.
async fn run(state: Arc<State>, kind: Kind, remote: String, args: Value) -> Value {
    let args = match args {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => return json!({"error": format!("arguments must be an object, not {other}")}),
    };
    let peer = match connection::peer(&state).await {
        Ok(peer) => peer,
        Err(why) => {
            let why = format!("MCP server `{}` is not connected: {why}", state.config.name);
            return json!({"error": text::redact(&why)});
        }
    };
    let outcome = match kind {
        Kind::Remote => call_tool(&peer, remote, args).await,
        Kind::ListResources => list_resources(&peer).await,
        Kind::ReadResource => read_resource(&peer, &args).await,
        Kind::ListPrompts => list_prompts(&peer).await,
        Kind::GetPrompt => get_prompt(&peer, args).await,
    };
    match outcome {
        Ok(value) => value,
        Err(Failure::Service(e)) => {
            connection::forget_if_gone(&state, &e).await;
            let why = connection::hide_headers(&state.config, &format!("MCP call failed: {e}"));
            json!({"error": text::redact(&why)})
        }
        Err(Failure::Usage(why)) => json!({"error": why}),
    }
}

enum Failure {
    Service(rmcp::service::ServiceError),
    Usage(String),
}

impl From<rmcp::service::ServiceError> for Failure {
    fn from(e: rmcp::service::ServiceError) -> Self {
        Failure::Service(e)
    }
}

async fn call_tool(
    peer: &Peer<RoleClient>,
    name: String,
    args: Map<String, Value>,
) -> Result<Value, Failure> {
    let params = rmcp::model::CallToolRequestParams::new(name).with_arguments(args);
    let result = peer.call_tool(params).await?;
    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
    Ok(text::render_result(&value))
}

async fn list_resources(peer: &Peer<RoleClient>) -> Result<Value, Failure> {
    let all = peer.list_all_resources().await?;
    let resources: Vec<Value> = all
        .iter()
        .map(|r| {
            let v = serde_json::to_value(r).unwrap_or(Value::Null);
            let mut entry = Map::new();
            for key in ["uri", "name", "description", "mimeType"] {
                if let Some(x) = v.get(key).filter(|x| !x.is_null()) {
                    entry.insert(key.into(), x.clone());
                }
            }
            Value::Object(entry)
        })
        .collect();
    Ok(json!({"resources": resources}))
}

async fn read_resource(
    peer: &Peer<RoleClient>,
    args: &Map<String, Value>,
) -> Result<Value, Failure> {
    let Some(uri) = args
        .get("uri")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
    else {
        return Err(Failure::Usage("Missing required parameter 'uri'".into()));
    };
    let result = peer
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
        .await?;
    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
    let parts: Vec<String> = value
        .get("contents")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|c| {
                    match (
                        c.get("text").and_then(Value::as_str),
                        c.get("blob").and_then(Value::as_str),
                    ) {
                        (Some(t), _) => t.to_string(),
                        (None, Some(b)) => format!(
                            "[binary data, {} bytes, {}]",
                            b.len() * 3 / 4,
                            c.get("mimeType")
                                .and_then(Value::as_str)
                                .unwrap_or("unknown type")
                        ),
                        _ => String::new(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({"result": parts.join("\n")}))
}

async fn list_prompts(peer: &Peer<RoleClient>) -> Result<Value, Failure> {
    let all = peer.list_all_prompts().await?;
    let prompts: Vec<Value> = all
        .iter()
        .map(|p| {
            let v = serde_json::to_value(p).unwrap_or(Value::Null);
            let mut entry = Map::new();
            for key in ["name", "description"] {
                if let Some(x) = v.get(key).filter(|x| !x.is_null()) {
                    entry.insert(key.into(), x.clone());
                }
            }
            if let Some(args) = v
                .get("arguments")
                .and_then(Value::as_array)
                .filter(|a| !a.is_empty())
            {
                let args: Vec<Value> = args
                    .iter()
                    .map(|a| {
                        let mut e = Map::new();
                        for key in ["name", "description", "required"] {
                            if let Some(x) = a.get(key).filter(|x| !x.is_null()) {
                                e.insert(key.into(), x.clone());
                            }
                        }
                        Value::Object(e)
                    })
                    .collect();
                entry.insert("arguments".into(), Value::Array(args));
            }
            Value::Object(entry)
        })
        .collect();
    Ok(json!({"prompts": prompts}))
}

async fn get_prompt(peer: &Peer<RoleClient>, args: Map<String, Value>) -> Result<Value, Failure> {
    let Some(name) = args
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    else {
        return Err(Failure::Usage("Missing required parameter 'name'".into()));
    };
    let mut params = rmcp::model::GetPromptRequestParams::new(name);
    if let Some(Value::Object(a)) = args.get("arguments") {
        // Prompt arguments are strings on the wire.
        let strings: Map<String, Value> = a
            .iter()
            .map(|(k, v)| {
                let s = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), Value::String(s))
            })
            .collect();
        params = params.with_arguments(strings);
    }
    let result = peer.get_prompt(params).await?;
    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
    let messages: Vec<Value> = value
        .get("messages")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|m| {
                    let content = &m["content"];
                    let text = match content.get("text").and_then(Value::as_str) {
                        Some(t) => t.to_string(),
                        None => text::render_result(&json!({"content": [content]}))["result"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    };
                    json!({"role": m.get("role").cloned().unwrap_or(Value::Null), "content": text})
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = json!({"messages": messages});
    if let Some(d) = value.get("description").filter(|d| d.is_string()) {
        out["description"] = d.clone();
    }
    Ok(out)
}
