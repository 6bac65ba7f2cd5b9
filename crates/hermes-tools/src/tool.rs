//! The [`Tool`] trait and the types around one call: how a call touches the filesystem
//! ([`Access`], which decides what may run in parallel) and how it fails ([`ToolError`]).

use std::path::PathBuf;

use serde_json::Value;

use crate::ToolContext;

/// A tool's answer: a JSON value the registry serialises for the model.
pub type ToolResult = Result<Value, ToolError>;

/// A failure the model should read and can usually fix (bad argument, missing file, ...).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }
}

/// Why a tool cannot be offered here now (binary missing, service unreachable, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Unavailable {
    pub reason: String,
}

/// What one call of a tool touches. Reads of any paths may run together; a write forces a
/// sequential boundary with every call touching an overlapping path; `Exclusive` calls (shell
/// commands: anything can happen) always run alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Read(Vec<PathBuf>),
    Write(Vec<PathBuf>),
    Exclusive,
}

#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls. Borrowed from the tool: remote tools (MCP) own theirs, so a
    /// long-lived process that reconnects servers never leaks names.
    fn name(&self) -> &str;
    /// The toolset this tool belongs to (`terminal`, `file`, ...).
    fn toolset(&self) -> &str;
    /// What the model reads: when to use the tool and what it returns. Short.
    fn description(&self) -> &str;
    /// JSON schema of the arguments.
    fn parameters(&self) -> Value;
    /// What a call with these arguments touches (default: run alone).
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Exclusive
    }
    /// Environment variables the tool needs; without them it is hidden from the model.
    fn required_env(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether the tool can work here (binary installed, service reachable, ...). Checked at
    /// most every 30 s; a failing tool is hidden from the model.
    fn check_available(&self) -> Result<(), Unavailable> {
        Ok(())
    }
    /// The most characters of serialised result the model gets.
    fn max_result_chars(&self) -> usize {
        crate::output::DEFAULT_MAX_RESULT_CHARS
    }
    /// The key argument, for one-line progress displays.
    fn preview(&self, args: &Value) -> String {
        crate::output::first_string_arg(args)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult;
}
