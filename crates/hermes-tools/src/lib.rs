//! Tools the model can call. [`Tool`] is what a tool is (name, toolset, schema, how it touches
//! the filesystem, async handler); [`Registry`] holds them, selects toolsets, hides tools whose
//! availability check fails and runs calls with the size cap and error shape the model expects
//! (`{"error": "..."}`). The built-in tools live one family per module: [`files`] and
//! [`terminal`].

pub mod context;
pub mod files;
pub mod interaction;
pub mod output;
pub mod paths;
pub mod registry;
pub mod secrets;
pub mod terminal;
mod tool;

pub use context::ToolContext;
pub use interaction::{Interaction, NonInteractive};
pub use registry::{Registry, ToolsetError};
pub use tool::{Access, Tool, ToolError, ToolResult};
