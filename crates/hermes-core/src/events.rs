//! Where an agent's [`AgentEvent`]s go: any `Fn(AgentEvent)`, a channel, or nowhere.

use hermes_protocol::AgentEvent;

pub trait EventSink: Send + Sync {
    fn emit(&self, event: AgentEvent);
}

impl<F: Fn(AgentEvent) + Send + Sync> EventSink for F {
    fn emit(&self, event: AgentEvent) {
        self(event)
    }
}

impl EventSink for tokio::sync::mpsc::UnboundedSender<AgentEvent> {
    fn emit(&self, event: AgentEvent) {
        // A frontend that stopped listening does not stop the agent.
        let _ = self.send(event);
    }
}

/// Discards events.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: AgentEvent) {}
}
