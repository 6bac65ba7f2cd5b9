//! Our side of an MCP session ([`rmcp::ClientHandler`]): what we tell a server we can do
//! (sampling, when its policy allows it), answers to `sampling/createMessage`, and the
//! `list_changed` notifications that make the hub list a server's tools, resources or
//! prompts again.

// rmcp marks the sampling types deprecated (SEP-2577 plans to drop sampling); servers use
// it today, so we answer it.
#![allow(deprecated)]

use std::sync::{Arc, Weak};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ErrorData,
    Implementation,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use crate::sampling::Sampler;

/// Told when a server says one of its lists changed.
pub(crate) trait ListChanged: Send + Sync {
    fn list_changed(&self);
}

pub(crate) struct ClientSide {
    pub sampler: Option<Arc<Sampler>>,
    /// The server's state in the hub; weak, as the hub owns the session that owns us.
    pub changes: Weak<dyn ListChanged>,
}

impl ClientSide {
    fn changed(&self) {
        if let Some(target) = self.changes.upgrade() {
            target.list_changed();
        }
    }
}

impl rmcp::ClientHandler for ClientSide {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.sampler.is_some() {
            capabilities.sampling = Some(Default::default());
        }
        let mut info = Implementation::default();
        info.name = "hermes".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        ClientConfig::new(capabilities, info)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(sampler) = &self.sampler else {
            return Err(ErrorData::invalid_request(
                "sampling is not enabled for this server (sampling.enabled in config.yaml)",
                None,
            ));
        };
        let params = serde_json::to_value(&params)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let result = sampler
            .create_message(params)
            .await
            .map_err(|e| ErrorData::internal_error(e.0, None))?;
        serde_json::from_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed();
    }
}
