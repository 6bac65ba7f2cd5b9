//! Plain data shared by every Hermes crate. No I/O and no async: the provider-neutral message
//! model ([`Message`], [`ToolCall`], [`ToolSchema`]), token [`Usage`], the events a provider
//! streams ([`StreamEvent`]), the events an agent emits to frontends ([`AgentEvent`]) and the
//! outcome of one turn ([`TurnResult`], ending in a [`TurnEnd`]); plus calendar arithmetic ([`time`]) shared by the
//! places that print dates, and [`json_order`] for JSON text whose key order must not depend
//! on serde_json's features.

mod event;
pub mod json_order;
mod message;
mod outcome;
pub mod time;
mod usage;

pub use event::{AgentEvent, FinishReason, StreamEvent, TurnResult};
pub use message::{Image, Message, Role, ToolCall, ToolSchema};
pub use outcome::{ErrorClass, TurnEnd, TurnFailure};
pub use usage::Usage;
