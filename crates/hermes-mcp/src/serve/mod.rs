//! `hermes mcp serve`: Hermes as an MCP server (rmcp), over stdio or Streamable HTTP on
//! loopback with an optional bearer key. The tools and their argument shapes are the Python
//! Hermes's (`conversations_list`, `conversation_get`, `messages_read`, `attachments_fetch`,
//! `events_poll`, `events_wait`, `messages_send`, `channels_list`, `permissions_list_open`,
//! `permissions_respond`) plus `hermes_chat`, one agent turn so another agent can use Hermes
//! as a sub-agent. Conversations come from the store ([`store`]); live messaging from a
//! [`GatewayBridge`] ([`bridge`]); turns from an injected [`ChatRunner`]. Answers are JSON
//! text, as the Python Hermes returns them; a failure is `{"error": ...}`.

pub mod bridge;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

pub use bridge::{Approval, BridgeError, BridgeEvent, Channel, Decision, GatewayBridge, NoGateway};
pub use store::ConversationError;

/// The answer of one chat turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    /// The stored session the turn ran in (pass it back to continue the conversation).
    pub session_id: String,
    pub response: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ChatError(pub String);

/// Runs one agent turn: in the stored session `session_id` when given (continuing it), else
/// in a new one.
#[async_trait::async_trait]
pub trait ChatRunner: Send + Sync {
    async fn chat(&self, message: &str, session_id: Option<&str>) -> Result<ChatReply, ChatError>;
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the MCP session failed: {0}")]
    Session(String),
    #[error("cannot serve HTTP: {0}")]
    Http(#[from] std::io::Error),
}

/// The server: one per process, cloned per HTTP session.
#[derive(Clone)]
pub struct HermesServer {
    db: hermes_store::StoreLocation,
    bridge: Arc<dyn GatewayBridge>,
    chat: Arc<dyn ChatRunner>,
}

impl HermesServer {
    /// Conversations from `home`'s sessions.db, live messaging through `bridge`, turns
    /// through `chat`.
    pub fn new(
        home: &std::path::Path,
        bridge: Arc<dyn GatewayBridge>,
        chat: Arc<dyn ChatRunner>,
    ) -> HermesServer {
        HermesServer {
            db: store::db_path(home),
            bridge,
            chat,
        }
    }

    /// Reads the conversations from `store` instead (the one `store.backend` selects).
    pub fn with_store(mut self, store: hermes_store::StoreLocation) -> HermesServer {
        self.db = store;
        self
    }

    /// Serves one client on stdin/stdout until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let running = self
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await
            .map_err(|e| ServeError::Session(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| ServeError::Session(e.to_string()))?;
        Ok(())
    }

    /// Serves Streamable HTTP at `/mcp` on `listener` until `shutdown` is cancelled; with
    /// `key`, every request needs `Authorization: Bearer KEY` (401 otherwise).
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        key: Option<String>,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Result<(), ServeError> {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = shutdown.child_token();
        let service = StreamableHttpService::new(
            move || Ok(self.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let key = Arc::new(key);
        let app =
            axum::Router::new()
                .nest_service("/mcp", service)
                .layer(axum::middleware::from_fn(move |req, next| {
                    let key = key.clone();
                    async move { check_key(key.as_deref(), req, next).await }
                }));
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await?;
        Ok(())
    }

    async fn dispatch(&self, name: &str, args: Map<String, Value>) -> Value {
        let text = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let int = |k: &str, default: i64, min: i64, max: i64| {
            args.get(k)
                .and_then(|v| v.as_i64().or_else(|| v.as_str()?.trim().parse().ok()))
                .unwrap_or(default)
                .clamp(min, max)
        };
        let db = self.db.clone();
        let blocking = |f: Box<dyn FnOnce() -> Result<Value, ConversationError> + Send>| async move {
            match tokio::task::spawn_blocking(f).await {
                Ok(Ok(v)) => v,
                Ok(Err(e)) => json!({"error": e.to_string()}),
                Err(e) => json!({"error": format!("the store read failed: {e}")}),
            }
        };
        let bridged = |r: Result<Value, BridgeError>| match r {
            Ok(v) => v,
            Err(e) => json!({"error": e.to_string()}),
        };
        match name {
            "conversations_list" => {
                let (platform, search) = (text("platform"), text("search"));
                let limit = int("limit", 50, 1, 200) as usize;
                blocking(Box::new(move || {
                    store::conversations(&db, platform.as_deref(), search.as_deref(), limit)
                }))
                .await
            }
            "conversation_get" => match text("session_key") {
                Some(key) => blocking(Box::new(move || store::conversation(&db, &key))).await,
                None => json!({"error": "session_key is required"}),
            },
            "messages_read" => match text("session_key") {
                Some(key) => {
                    let limit = int("limit", 50, 1, 200) as usize;
                    blocking(Box::new(move || store::messages(&db, &key, limit))).await
                }
                None => json!({"error": "session_key is required"}),
            },
            "attachments_fetch" => match (text("session_key"), text("message_id")) {
                (Some(key), Some(id)) => {
                    blocking(Box::new(move || store::attachments(&db, &key, &id))).await
                }
                _ => json!({"error": "session_key and message_id are required"}),
            },
            "events_poll" => {
                let after = int("after_cursor", 0, 0, i64::MAX) as u64;
                let limit = int("limit", 20, 1, 200) as usize;
                let key = text("session_key");
                bridged(
                    self.bridge
                        .poll_events(after, key.as_deref(), limit)
                        .await
                        .map(|events| {
                            let next = events.last().map(|e| e.cursor).unwrap_or(after);
                            json!({"events": events, "next_cursor": next})
                        }),
                )
            }
            "events_wait" => {
                let after = int("after_cursor", 0, 0, i64::MAX) as u64;
                let timeout = Duration::from_millis(int("timeout_ms", 30_000, 0, 300_000) as u64);
                let key = text("session_key");
                bridged(
                    self.bridge
                        .wait_event(after, key.as_deref(), timeout)
                        .await
                        .map(|e| match e {
                            Some(e) => json!({"event": e}),
                            None => json!({"event": null, "reason": "timeout"}),
                        }),
                )
            }
            "messages_send" => match (text("target"), text("message")) {
                (Some(target), Some(message)) => {
                    bridged(self.bridge.send_message(&target, &message).await)
                }
                _ => json!({"error": "Both target and message are required"}),
            },
            "channels_list" => {
                let platform = text("platform");
                bridged(
                    self.bridge
                        .channels(platform.as_deref())
                        .await
                        .map(|c| json!({"count": c.len(), "channels": c})),
                )
            }
            "permissions_list_open" => bridged(
                self.bridge
                    .open_approvals()
                    .await
                    .map(|a| json!({"count": a.len(), "approvals": a})),
            ),
            "permissions_respond" => {
                let decision = text("decision").unwrap_or_default();
                let Some(parsed) = Decision::parse(&decision) else {
                    return json!({"error": format!(
                        "Invalid decision: {decision}. Must be allow-once, allow-always, or deny"
                    )});
                };
                let Some(id) = text("id") else {
                    return json!({"error": "id is required"});
                };
                bridged(self.bridge.respond_approval(&id, parsed).await.map(
                    |()| json!({"resolved": true, "approval_id": id, "decision": parsed.as_str()}),
                ))
            }
            "hermes_chat" => {
                let Some(message) = text("message") else {
                    return json!({"error": "message is required"});
                };
                let session = text("session_id");
                match self.chat.chat(&message, session.as_deref()).await {
                    Ok(reply) => {
                        json!({"session_id": reply.session_id, "response": reply.response})
                    }
                    Err(e) => json!({"error": crate::text::redact(&e.0)}),
                }
            }
            other => json!({"error": format!("unknown tool {other}")}),
        }
    }
}

/// Refuses a request without the bearer key (compared in constant time).
async fn check_key(
    key: Option<&str>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if let Some(key) = key {
        let given = req
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !same(given.as_bytes(), key.as_bytes()) {
            return (
                axum::http::StatusCode::UNAUTHORIZED,
                [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
                "a valid `Authorization: Bearer` key is required",
            )
                .into_response();
        }
    }
    next.run(req).await
}

fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i % b.len().max(1)).copied().unwrap_or(0));
    }
    diff == 0
}

fn schema(props: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    let v = json!({"type": "object", "properties": props, "required": required});
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

/// The tools, their descriptions and argument shapes.
fn tools() -> Vec<Tool> {
    let s = |d: &str| json!({"type": "string", "description": d});
    let i =
        |d: &str, default: i64| json!({"type": "integer", "description": d, "default": default});
    let t = |name: &'static str, description: &'static str, props: Value, required: &[&str]| {
        Tool::new(name, description, schema(props, required))
    };
    vec![
        t(
            "conversations_list",
            "List conversations (stored Hermes sessions, newest first) with the session keys messages_read needs.",
            json!({"platform": s("Only this source (cli, telegram, api, ...)"),
                 "limit": i("Maximum conversations (1-200)", 50),
                 "search": s("Text to find in the title or first message")}),
            &[],
        ),
        t(
            "conversation_get",
            "Details of one conversation by its session key.",
            json!({"session_key": s("A session key from conversations_list")}),
            &["session_key"],
        ),
        t(
            "messages_read",
            "Recent user and assistant messages of a conversation, oldest first.",
            json!({"session_key": s("A session key from conversations_list"),
                 "limit": i("Maximum messages, the most recent (1-200)", 50)}),
            &["session_key"],
        ),
        t(
            "attachments_fetch",
            "Non-text attachments (MEDIA: references) of one message.",
            json!({"session_key": s("A session key from conversations_list"),
                 "message_id": s("A message id from messages_read")}),
            &["session_key", "message_id"],
        ),
        t(
            "events_poll",
            "New conversation events since a cursor (message, approval_requested, approval_resolved); pass next_cursor to the next poll.",
            json!({"after_cursor": i("Events after this cursor (0: all)", 0),
                 "session_key": s("Only this conversation"),
                 "limit": i("Maximum events (1-200)", 20)}),
            &[],
        ),
        t(
            "events_wait",
            "Wait for the next conversation event (long poll), at most timeout_ms.",
            json!({"after_cursor": i("Events after this cursor", 0),
                 "session_key": s("Only this conversation"),
                 "timeout_ms": i("Longest wait in milliseconds (max 300000)", 30000)}),
            &[],
        ),
        t(
            "messages_send",
            "Send a message to a platform conversation (target \"platform:chat_id\", as channels_list gives).",
            json!({"target": s("platform:identifier, e.g. telegram:123 or discord:#general"),
                 "message": s("The text to send")}),
            &["target", "message"],
        ),
        t(
            "channels_list",
            "Channels and targets messages_send can reach.",
            json!({"platform": s("Only this platform")}),
            &[],
        ),
        t(
            "permissions_list_open",
            "Approval requests (dangerous commands) waiting for an answer.",
            json!({}),
            &[],
        ),
        t(
            "permissions_respond",
            "Answer an approval request.",
            json!({"id": s("The approval id from permissions_list_open"),
                 "decision": {"type": "string", "enum": ["allow-once", "allow-always", "deny"]}}),
            &["id", "decision"],
        ),
        t(
            "hermes_chat",
            "Run one turn of the Hermes agent (its tools, memory and skills) and return its answer. Pass the returned session_id to continue the same conversation.",
            json!({"message": s("What to ask or tell Hermes"),
                 "session_id": s("A session to continue (from an earlier hermes_chat or conversations_list)")}),
            &["message"],
        ),
    ]
}

impl ServerHandler for HermesServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::default();
        info.name = "hermes".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(
                "Hermes Agent: read its conversations, follow and send messages on its \
                 connected platforms, answer its approval requests, and run turns of the agent \
                 itself with hermes_chat.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !tools().iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {}", request.name),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        let value = self.dispatch(&request.name, args).await;
        let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
        let result = if value.get("error").is_some() {
            CallToolResult::error(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(text)])
        };
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare_exactly() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"ab", b"abc"));
        assert!(!same(b"", b"abc"));
        assert!(same(b"", b""));
    }

    #[test]
    fn the_tool_list_is_pythons_plus_hermes_chat() {
        let names: Vec<String> = tools().iter().map(|t| t.name.to_string()).collect();
        assert_eq!(
            names,
            [
                "conversations_list",
                "conversation_get",
                "messages_read",
                "attachments_fetch",
                "events_poll",
                "events_wait",
                "messages_send",
                "channels_list",
                "permissions_list_open",
                "permissions_respond",
                "hermes_chat"
            ]
        );
    }
}
