//! What `hermes mcp serve` needs from the messaging gateway, as a trait the gateway
//! implements ([`GatewayBridge`]): live events, sending, channels and pending approvals.
//! [`NoGateway`] is the implementation while no gateway runs in this process: every call
//! says so clearly.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

/// One event of the gateway's queue (`message`, `approval_requested`, `approval_resolved`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BridgeEvent {
    pub cursor: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub session_key: String,
    /// The event's own fields (`role`, `content`, `approval_id`, ...), flattened.
    #[serde(flatten)]
    pub data: Map<String, Value>,
}

/// A target `messages_send` accepts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Channel {
    /// `platform:chat_id`.
    pub target: String,
    pub platform: String,
    pub name: String,
    pub chat_type: String,
}

/// An approval request waiting for an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Approval {
    pub id: String,
    pub session_key: String,
    pub command: String,
    pub description: String,
    pub created_at: String,
}

/// An answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    AllowOnce,
    AllowAlways,
    Deny,
}

impl Decision {
    pub fn parse(text: &str) -> Option<Decision> {
        match text {
            "allow-once" => Some(Decision::AllowOnce),
            "allow-always" => Some(Decision::AllowAlways),
            "deny" => Some(Decision::Deny),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Decision::AllowOnce => "allow-once",
            Decision::AllowAlways => "allow-always",
            Decision::Deny => "deny",
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BridgeError {
    #[error(
        "the Hermes messaging gateway is not running in this process, so there are no live events, channels or approvals (start `hermes gateway`)"
    )]
    NotRunning,
    #[error("{0}")]
    Failed(String),
}

#[async_trait::async_trait]
pub trait GatewayBridge: Send + Sync {
    /// Events after `after_cursor` (optionally of one conversation), at most `limit`.
    async fn poll_events(
        &self,
        after_cursor: u64,
        session_key: Option<&str>,
        limit: usize,
    ) -> Result<Vec<BridgeEvent>, BridgeError>;
    /// The next such event, waiting at most `timeout`; none when it passed.
    async fn wait_event(
        &self,
        after_cursor: u64,
        session_key: Option<&str>,
        timeout: Duration,
    ) -> Result<Option<BridgeEvent>, BridgeError>;
    /// Sends `message` to `target` (`platform:chat_id` or a channel name); the gateway's
    /// receipt.
    async fn send_message(&self, target: &str, message: &str) -> Result<Value, BridgeError>;
    async fn channels(&self, platform: Option<&str>) -> Result<Vec<Channel>, BridgeError>;
    async fn open_approvals(&self) -> Result<Vec<Approval>, BridgeError>;
    async fn respond_approval(&self, id: &str, decision: Decision) -> Result<(), BridgeError>;
}

/// No gateway in this process.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoGateway;

#[async_trait::async_trait]
impl GatewayBridge for NoGateway {
    async fn poll_events(
        &self,
        _: u64,
        _: Option<&str>,
        _: usize,
    ) -> Result<Vec<BridgeEvent>, BridgeError> {
        Err(BridgeError::NotRunning)
    }
    async fn wait_event(
        &self,
        _: u64,
        _: Option<&str>,
        _: Duration,
    ) -> Result<Option<BridgeEvent>, BridgeError> {
        Err(BridgeError::NotRunning)
    }
    async fn send_message(&self, _: &str, _: &str) -> Result<Value, BridgeError> {
        Err(BridgeError::NotRunning)
    }
    async fn channels(&self, _: Option<&str>) -> Result<Vec<Channel>, BridgeError> {
        Err(BridgeError::NotRunning)
    }
    async fn open_approvals(&self) -> Result<Vec<Approval>, BridgeError> {
        Err(BridgeError::NotRunning)
    }
    async fn respond_approval(&self, _: &str, _: Decision) -> Result<(), BridgeError> {
        Err(BridgeError::NotRunning)
    }
}
