//! The Hermes agent. [`Agent::run_turn`] drives one turn: call the model with the conversation
//! and the tool schemas, run the tool calls it asks for (repaired when possible, read-only ones
//! in parallel), feed the results back, and stop when it answers without tools, when the
//! iteration budget runs out (after one grace call), on interrupt, or on an unrecoverable error.
//! Frontends watch it through an [`EventSink`].

mod agent;
pub mod code_exec;
pub mod compress;
pub mod delegation;
mod events;
mod executor;
mod history;
pub mod images;
pub mod injection;
pub mod loop_guard;
pub mod memory;
pub mod moa;
mod model_call;
pub mod prompt;
pub mod record;
pub mod repair;
pub mod session_search;
pub mod skills;
pub mod vision;

pub use agent::{Agent, AgentOptions, ChatError};
pub use events::{EventSink, NoEvents};
pub use hermes_tools::IterationBudget;
pub use history::close_dangling_tool_calls;
pub use model_call::ModelTarget;
