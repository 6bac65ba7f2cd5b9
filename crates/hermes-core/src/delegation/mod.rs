//! Delegation: the `delegate_task` tool hands self-contained tasks to sub-agents. Each child is
//! a fresh [`Agent`] with an empty history, the parent's model targets and tool context, and the
//! parent's tools minus the ones a child may not use (no further delegation, no questions to the
//! user, no writes to shared memory, no messages or scheduled jobs in the parent's name). At
//! most `max_concurrent_children` run at once, each for at most `max_iterations` model calls,
//! every one of which is also drawn from the parent turn's iteration budget; the parent sees
//! only one JSON result with each child's final summary. Children's conversations can be
//! recorded as their own sessions under the parent's.
//!
//! [`Delegation`] is what children are built from; [`Delegation::install`] puts the working tool
//! into a session's registry in place of the schema-only one that lists and measures it.

mod brief;
mod child;
mod tasks;
mod tool;

use std::sync::Arc;

use hermes_tools::Registry;
use serde::Deserialize;

use crate::{AgentOptions, ModelTarget};

pub use brief::{CHILD_SYSTEM_PROMPT, child_system_prompt, task_message};
pub use tool::DelegateTaskTool;

/// The tool's name.
pub const TOOL_NAME: &str = "delegate_task";

/// Tools a sub-agent never gets, whatever toolsets it asks for.
pub const FORBIDDEN_TOOLS: &[&str] = &[
    "delegate_task",
    "clarify",
    "memory",
    "send_message",
    "execute_code",
    "cronjob",
];

/// Toolsets a sub-agent may not ask for (they hold only forbidden tools).
pub const FORBIDDEN_TOOLSETS: &[&str] = &[
    "delegation",
    "clarify",
    "memory",
    "messaging",
    "code_execution",
    "cronjob",
];

/// `delegation:` in config.yaml (the Python Hermes's keys; its others are not used here).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct DelegationSettings {
    /// Model calls each sub-agent may make (floor 1).
    pub max_iterations: u32,
    /// Sub-agents running at once, and tasks in one batch (floor 1).
    pub max_concurrent_children: usize,
}

impl Default for DelegationSettings {
    fn default() -> Self {
        DelegationSettings {
            max_iterations: 50,
            max_concurrent_children: 3,
        }
    }
}

impl DelegationSettings {
    fn clamped(self) -> DelegationSettings {
        DelegationSettings {
            max_iterations: self.max_iterations.max(1),
            max_concurrent_children: self.max_concurrent_children.max(1),
        }
    }
}

/// Where children's conversations are stored: each is a new session (source `subagent`)
/// written through `writer` (the process's one store thread), whose parent is the delegating
/// session as its tool context names it when the child starts (it follows `/new` and
/// compression).
#[derive(Clone)]
pub struct ChildSessions {
    pub writer: hermes_store::StoreWriter,
}

/// What sub-agents are built from.
pub struct Delegation {
    /// The primary model first, then the fallbacks (the parent's provider objects).
    pub(crate) targets: Vec<ModelTarget>,
    /// The parent's options; `max_turns` is replaced by `max_iterations`.
    pub(crate) options: AgentOptions,
    pub(crate) settings: DelegationSettings,
    pub(crate) sessions: Option<ChildSessions>,
    /// Filled by [`Delegation::install`]: the parent's tools a child may use.
    pub(crate) tools: Registry,
}

impl Delegation {
    /// Children answered by `primary` (then `fallbacks` in order) with the parent's `options`.
    pub fn new(
        primary: ModelTarget,
        fallbacks: Vec<ModelTarget>,
        options: AgentOptions,
        settings: DelegationSettings,
    ) -> Delegation {
        let mut targets = vec![primary];
        targets.extend(fallbacks);
        Delegation {
            targets,
            options,
            settings: settings.clamped(),
            sessions: None,
            tools: Registry::new(),
        }
    }

    /// Records each child's conversation as a session of its own.
    pub fn recording(mut self, sessions: ChildSessions) -> Delegation {
        self.sessions = Some(sessions);
        self
    }

    /// `tools` (a session's selected tools) with a working `delegate_task` in place of the
    /// schema-only one (appended when there was none); children get `tools` minus the
    /// forbidden ones.
    pub fn install(mut self, tools: &Registry) -> Registry {
        self.tools = child_registry(tools);
        let working: Arc<dyn hermes_tools::Tool> = Arc::new(DelegateTaskTool::new(self));
        let mut out = Registry::new();
        for name in tools.names() {
            if name == TOOL_NAME {
                out.register(working.clone());
            } else if let Some(tool) = tools.get(name) {
                out.register(tool.clone());
            }
        }
        if out.get(TOOL_NAME).is_none() {
            out.register(working);
        }
        out
    }
}

/// The tools of `parent` a sub-agent may use, in the same order.
pub fn child_registry(parent: &Registry) -> Registry {
    let mut out = Registry::new();
    for name in parent.names() {
        if let Some(tool) = parent.get(name)
            && !FORBIDDEN_TOOLS.contains(&name)
            && !FORBIDDEN_TOOLSETS.contains(&tool.toolset())
        {
            out.register(tool.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_lose_the_forbidden_tools_and_keep_the_order() {
        let child = child_registry(&Registry::builtin());
        assert_eq!(
            child.names(),
            [
                "terminal",
                "process",
                "read_file",
                "write_file",
                "patch",
                "search_files",
                "todo"
            ]
        );
    }

    #[test]
    fn settings_have_a_floor_of_one() {
        let s = DelegationSettings {
            max_iterations: 0,
            max_concurrent_children: 0,
        }
        .clamped();
        assert_eq!((s.max_iterations, s.max_concurrent_children), (1, 1));
    }
}
