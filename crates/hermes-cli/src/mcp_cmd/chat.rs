//! `hermes_chat` of `hermes mcp serve`: each call is one turn of a session of the home's
//! runtime (platform `mcp`: the home's provider, tools and prompt, approvals unattended),
//! recorded in the store with source `mcp`, continuing the stored session the caller names.
//! Sessions share the server's one runtime (providers, MCP servers, the store writer), so a
//! call spawns nothing.

use std::sync::Arc;

use hermes_mcp::serve::{ChatError, ChatReply, ChatRunner};
use hermes_protocol::TurnEnd;
use hermes_runtime::{Platform, Resume, Runtime, SessionSpec, Unattended};
use tokio_util::sync::CancellationToken;

/// Turns with the flags `hermes mcp serve` was started with.
pub struct RuntimeChat {
    pub runtime: Runtime,
    /// What every session starts from (the flags, platform `mcp`).
    pub spec: SessionSpec,
}

#[async_trait::async_trait]
impl ChatRunner for RuntimeChat {
    async fn chat(&self, message: &str, session_id: Option<&str>) -> Result<ChatReply, ChatError> {
        let spec = SessionSpec {
            platform: Platform::Gateway("mcp".into()),
            resume: match session_id {
                Some(id) => Resume::Session(id.to_string()),
                None => Resume::New,
            },
            ..self.spec.clone()
        };
        let mut session = self
            .runtime
            .open_session(spec, Arc::new(Unattended))
            .await
            .map_err(|e| ChatError(e.to_string()))?;
        let report = session
            .turn(message, &hermes_core::NoEvents, CancellationToken::new())
            .await;
        let session_id = session.session_id();
        session.close().await;
        match report.end {
            TurnEnd::Failed(failure) => Err(ChatError(failure.message)),
            TurnEnd::Interrupted => Err(ChatError("the turn was interrupted".into())),
            TurnEnd::Completed | TurnEnd::BudgetExhausted => Ok(ChatReply {
                session_id,
                response: report.final_text,
            }),
        }
    }
}
