//! Code execution: the `execute_code` tool runs a Python script in a child process; the script
//! calls the session's tools through a generated `hermes_tools` module that talks to this
//! process over a private Unix socket with a random token ([`rpc`]). Only seven tools are
//! reachable that way (read_file, write_file, search_files, patch, terminal, web_search,
//! web_extract, those the session has) and every call runs through the same `Tool::call` path
//! as a model's call, with the session's [`hermes_tools::ToolContext`]: the same approvals
//! (hardline commands stay refused), protected paths and secret redaction. Limits, as in the
//! Python Hermes: 5 minutes, 50 tool calls and 50 KB of output per script. A model call whose
//! tools were all `execute_code` gives its iteration back ([`refund`]).
//!
//! With a remote terminal backend the script runs in that environment, its tool calls through
//! request and reply files there ([`remote`]).
//!
//! [`install`] puts the working tool into a session's registry in place of the schema-only one
//! that lists and measures it (the pattern of [`crate::delegation::Delegation::install`]).

mod child;
mod refund;
mod remote;
mod rpc;
mod stubs;
mod tool;

use hermes_tools::Registry;
use serde::Deserialize;

pub use tool::ExecuteCodeTool;

/// The tool's name.
pub const TOOL_NAME: &str = "execute_code";

/// The tools a script may call, when the session has them.
pub const SANDBOX_TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "search_files",
    "patch",
    "terminal",
    "web_search",
    "web_extract",
];

/// `code_execution:` in config.yaml (the Python Hermes's keys).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct CodeExecSettings {
    /// Seconds a script may run before its process group is killed.
    pub timeout: u64,
    /// Tool calls one script may make.
    pub max_tool_calls: usize,
    /// `project` (default): the script runs in the session's working directory;
    /// `strict`: in its own temporary directory.
    pub mode: String,
}

impl Default for CodeExecSettings {
    fn default() -> Self {
        CodeExecSettings {
            timeout: 300,
            max_tool_calls: 50,
            mode: "project".into(),
        }
    }
}

/// `tools` (a session's selected tools) with a working `execute_code` in place of the
/// schema-only one; scripts reach the sandbox tools of `tools`. A session without
/// `execute_code` is returned unchanged.
pub fn install(tools: &Registry, settings: CodeExecSettings) -> Registry {
    if tools.get(TOOL_NAME).is_none() {
        return clone_registry(tools);
    }
    let mut reachable = Registry::new();
    for name in SANDBOX_TOOLS {
        if let Some(tool) = tools.get(name) {
            reachable.register(tool.clone());
        }
    }
    let working: std::sync::Arc<dyn hermes_tools::Tool> =
        std::sync::Arc::new(ExecuteCodeTool::new(reachable, settings));
    let mut out = Registry::new();
    for name in tools.names() {
        if name == TOOL_NAME {
            out.register(working.clone());
        } else if let Some(tool) = tools.get(name) {
            out.register(tool.clone());
        }
    }
    out
}

fn clone_registry(tools: &Registry) -> Registry {
    let mut out = Registry::new();
    for name in tools.names() {
        if let Some(tool) = tools.get(name) {
            out.register(tool.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn install_replaces_the_schema_only_tool_and_keeps_the_order() {
        let mut tools = Registry::builtin();
        tools.register(Arc::new(ExecuteCodeTool::schema_only()));
        let installed = install(&tools, CodeExecSettings::default());
        assert_eq!(installed.names(), tools.names());
        let desc = installed.get(TOOL_NAME).unwrap().description().to_string();
        // Only the sandbox tools this session has are described.
        assert!(
            desc.contains("read_file(") && desc.contains("terminal("),
            "{desc}"
        );
        assert!(!desc.contains("web_search("), "{desc}");
        let plain = install(&Registry::builtin(), CodeExecSettings::default());
        assert!(plain.get(TOOL_NAME).is_none());
    }

    #[test]
    fn settings_default_to_the_python_limits() {
        let s = CodeExecSettings::default();
        assert_eq!(
            (s.timeout, s.max_tool_calls, s.mode.as_str()),
            (300, 50, "project")
        );
    }
}
