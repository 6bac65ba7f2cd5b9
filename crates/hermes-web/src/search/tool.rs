//! The `web_search` tool: one query to the selected backend, up to `limit` results (default 5)
//! as `{"data": {"web": [{title, url, description}]}}`, the Python Hermes's shape, so scripts
//! written for it (execute_code) read it unchanged.

use hermes_config::Environment;
use hermes_tools::{Access, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::{SearchSettings, search, select};
use crate::api::ApiClient;

const DESCRIPTION: &str = "Search the web. Returns up to `limit` results (default 5) with title, url and description; read a page with web_extract. Operators such as site:, filetype: and \"exact phrase\" work where the backend supports them.";

pub struct WebSearchTool {
    api: ApiClient,
    env: Environment,
    settings: SearchSettings,
}

impl WebSearchTool {
    pub fn new(api: ApiClient, env: Environment, settings: SearchSettings) -> WebSearchTool {
        WebSearchTool { api, env, settings }
    }
}

#[async_trait::async_trait]
impl Tool for WebSearchTool {
    fn name(&self) -> &str {
        "web_search"
    }
    fn toolset(&self) -> &str {
        "web"
    }
    fn description(&self) -> &str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20}
            },
            "required": ["query"]
        })
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Read(Vec::new())
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or_else(|| ToolError::new("query is required"))?;
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(5, |n| n.clamp(1, 20) as usize);
        let backend = select(&self.settings, &self.env);
        let hits = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(ToolError::new("interrupted")),
            hits = search(&self.api, &self.env, backend, query, limit) => hits,
        }
        .map_err(|e| ToolError::new(format!("web search failed: {e}")))?;
        Ok(json!({ "data": { "web": hits } }))
    }
}
