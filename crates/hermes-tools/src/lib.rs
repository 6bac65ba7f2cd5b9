//! Tools the model can call. [`Tool`] is what a tool is (name, toolset, schema, how it touches
//! the filesystem, async handler); [`Registry`] holds them, selects toolsets, hides tools whose
//! availability check fails and runs calls with the size cap, the redaction of known secrets and
//! the error shape the model expects (`{"error": "..."}`). The built-in tools live one family
//! per module: [`terminal`] and [`process`] (behind the [`approval`] gate), [`files`],
//! [`patch`] and [`search`] (behind [`protect`]), [`todo`] and [`clarify`]. Commands run in the
//! OS [`sandbox`] when the session has one.

pub mod approval;
pub mod budget;
pub mod clarify;
pub mod context;
pub mod env;
pub mod files;
pub mod interaction;
pub mod output;
pub mod patch;
pub mod paths;
pub mod process;
pub mod protect;
pub mod redact;
pub mod registry;
pub mod sandbox;
pub mod search;
pub mod secrets;
pub mod terminal;
pub mod todo;
mod tool;

pub use approval::{
    ApprovalGate, ApprovalMode, ApprovalSettings, CommandChecker, CommandJudge, JudgeVerdict,
    Verdict,
};
pub use budget::IterationBudget;
pub use context::{ChatOrigin, SessionHandle, SessionTools, ToolContext};
pub use interaction::{ApprovalAnswer, ApprovalRequest, Interaction, NonInteractive};
pub use process::ProcessRegistry;
pub use redact::Redactor;
pub use registry::{Registry, ToolsetError};
pub use tool::{Access, Tool, ToolError, ToolResult, Unavailable};
