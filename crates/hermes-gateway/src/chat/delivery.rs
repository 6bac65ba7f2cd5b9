//! Sending to chats outside a conversation: cron answers (`deliver: origin`, `local`,
//! `telegram` for the platform's home channel, `telegram:CHAT[:THREAD]`, comma-separated) and
//! the `send_message` tool (`target: "platform[:chat_id]"`, or the name of a chat the gateway
//! has seen). Cron answers are wrapped like the Python Hermes's (`cron.wrap_response`, on by
//! default) so the user knows where they come from.

use std::collections::HashMap;
use std::sync::Arc;

use hermes_cron::Job;
use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::routes::{Origin, Routes};
use crate::platform::settings::PlatformsConfig;
use crate::platform::{ChatRef, ChatType, OutboundMessage, PlatformAdapter};

/// Where messages can go: the running adapters, the home channels and the chats seen.
#[derive(Clone)]
pub struct Directory {
    pub adapters: HashMap<String, Arc<dyn PlatformAdapter>>,
    pub platforms: PlatformsConfig,
    pub routes: Arc<Routes>,
}

/// Why a message could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    #[error("`{0}` is not a running platform of this gateway")]
    NoPlatform(String),
    #[error("{0} has no home channel (set {1}_HOME_CHANNEL or platforms.{0}.home_channel)")]
    NoHome(String, String),
    #[error("the job has no origin chat (it was not created from a chat)")]
    NoOrigin,
    #[error("no chat named `{0}` has talked to this gateway")]
    UnknownChat(String),
    #[error("{target}: {reason}")]
    Send { target: String, reason: String },
}

impl Directory {
    /// The chat `target` names: `platform`, `platform:chat_id[:thread_id]`, or a chat's name as
    /// the directory knows it (`platform:#general`, `Ann`).
    pub fn resolve(
        &self,
        target: &str,
    ) -> Result<(Arc<dyn PlatformAdapter>, ChatRef), DeliveryError> {
        let target = target.trim();
        let (platform, rest) = match target.split_once(':') {
            Some((p, r)) => (p.trim().to_ascii_lowercase(), Some(r.trim())),
            None => (target.to_ascii_lowercase(), None),
        };
        if let Some(adapter) = self.adapters.get(&platform) {
            let chat = match rest.filter(|r| !r.is_empty()) {
                None => {
                    let home = self
                        .platforms
                        .get(&platform)
                        .and_then(|p| p.home_channel.clone())
                        .ok_or_else(|| {
                            DeliveryError::NoHome(platform.clone(), platform.to_ascii_uppercase())
                        })?;
                    ChatRef::new(&platform, ChatType::Direct, home.chat_id)
                        .with_thread(home.thread_id)
                }
                Some(rest) => match self.by_name(Some(&platform), rest) {
                    Some(origin) => origin.chat,
                    None => {
                        let mut parts = rest.splitn(2, ':');
                        let chat_id = parts.next().unwrap_or_default().to_string();
                        let thread = parts.next().map(str::to_string);
                        let known = self
                            .routes
                            .all()
                            .into_iter()
                            .filter_map(|r| r.origin)
                            .find(|o| o.chat.platform == platform && o.chat.chat_id == chat_id);
                        let kind = known.map_or(ChatType::Direct, |o| o.chat.chat_type);
                        ChatRef::new(&platform, kind, chat_id).with_thread(thread)
                    }
                },
            };
            return Ok((adapter.clone(), chat));
        }
        // A chat's name, on any platform.
        match self.by_name(None, target) {
            Some(origin) => {
                let adapter = self
                    .adapters
                    .get(&origin.chat.platform)
                    .ok_or_else(|| DeliveryError::NoPlatform(origin.chat.platform.clone()))?;
                Ok((adapter.clone(), origin.chat))
            }
            None if rest.is_some() => Err(DeliveryError::NoPlatform(platform)),
            None => Err(DeliveryError::UnknownChat(target.to_string())),
        }
    }

    fn by_name(&self, platform: Option<&str>, name: &str) -> Option<Origin> {
        let wanted = name.trim_start_matches('#').to_ascii_lowercase();
        self.routes
            .all()
            .into_iter()
            .filter_map(|r| r.origin)
            .filter(|o| platform.is_none_or(|p| o.chat.platform == p))
            .find(|o| {
                [o.chat_name.as_deref(), o.user_name.as_deref()]
                    .into_iter()
                    .flatten()
                    .any(|n| n.trim_start_matches('#').to_ascii_lowercase() == wanted)
            })
    }

    /// Sends `text` to `target`.
    pub async fn send(&self, target: &str, text: &str) -> Result<String, DeliveryError> {
        let (adapter, chat) = self.resolve(target)?;
        adapter
            .send(&chat, &OutboundMessage::text(text))
            .await
            .map(|sent| sent.message_id)
            .map_err(|e| DeliveryError::Send {
                target: target.to_string(),
                reason: e.to_string(),
            })
    }
}

/// Cron answers to chats.
pub struct CronDelivery {
    pub directory: Directory,
    /// `cron.wrap_response` (default on).
    pub wrap: bool,
}

impl CronDelivery {
    pub fn new(directory: Directory, raw_config: &Value) -> CronDelivery {
        let wrap = raw_config
            .pointer("/cron/wrap_response")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        CronDelivery { directory, wrap }
    }

    fn text(&self, job: &Job, answer: &str) -> String {
        if !self.wrap {
            return answer.to_string();
        }
        format!(
            "Cronjob Response: {name}\n(job_id: {id})\n-------------\n\n{answer}\n\nTo stop or manage this job, send me a new message (e.g. \"stop reminder {name}\").",
            name = job.name(),
            id = job.id()
        )
    }
}

#[async_trait::async_trait]
impl hermes_runtime::cron::Delivery for CronDelivery {
    async fn deliver(
        &self,
        job: &Job,
        answer: &str,
    ) -> Result<(), hermes_runtime::cron::DeliveryFailure> {
        let text = self.text(job, answer);
        let mut failures = Vec::new();
        for target in job
            .deliver()
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            let result = match target {
                "local" => Ok(()),
                "origin" => match job.get("origin").and_then(Origin::from_json) {
                    Some(origin) => {
                        let spec = match &origin.chat.thread_id {
                            Some(t) => {
                                format!("{}:{}:{t}", origin.chat.platform, origin.chat.chat_id)
                            }
                            None => format!("{}:{}", origin.chat.platform, origin.chat.chat_id),
                        };
                        self.directory.send(&spec, &text).await.map(drop)
                    }
                    None => Err(DeliveryError::NoOrigin),
                },
                other => self.directory.send(other, &text).await.map(drop),
            };
            if let Err(e) = result {
                failures.push(e.to_string());
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(hermes_runtime::cron::DeliveryFailure::Unreached { reasons: failures })
        }
    }
}

/// The `send_message` tool (toolset `messaging`): a message to a chat of this gateway.
pub struct SendMessageTool {
    pub directory: Directory,
}

#[async_trait::async_trait]
impl Tool for SendMessageTool {
    fn name(&self) -> &str {
        "send_message"
    }
    fn toolset(&self) -> &str {
        "messaging"
    }
    fn description(&self) -> &str {
        "Send a message to a chat: target `platform` (its home channel), `platform:chat_id`, or the name of a chat that has talked to you. Use it to notify someone elsewhere; your answer already reaches the current chat."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "target": {"type": "string", "description": "platform, platform:chat_id, or a chat's name"},
                "message": {"type": "string"}
            },
            "required": ["target", "message"]
        })
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let target = args
            .get("target")
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| {
                ToolError::new("target is required (e.g. telegram or telegram:12345)")
            })?;
        let message = args
            .get("message")
            .and_then(Value::as_str)
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| ToolError::new("message is required"))?;
        let id = self
            .directory
            .send(target, message)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        Ok(json!({"sent": true, "target": target, "message_id": id}))
    }
}
