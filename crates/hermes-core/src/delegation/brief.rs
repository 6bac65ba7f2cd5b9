//! What a sub-agent is told: a fixed system prompt (its role, the working directory, and that
//! its last reply is a summary for the agent that delegated to it) and one user message with
//! the goal and the context the parent passed along.

use std::path::Path;

/// The system prompt of every sub-agent; `{cwd}` is the working directory.
pub const CHILD_SYSTEM_PROMPT: &str = "You are a sub-agent. Another agent handed you the task in the next message and is waiting for your report. You have not seen its conversation, and nobody can answer questions: decide for yourself, using only the task, its context and your tools.

Working directory: {cwd}

When you are done, reply without calling tools. That reply is all the other agent will see, so make it a concise summary: the outcome first, then what you found, the files you created or changed, and anything that failed or is still open. Short bullets, no replay of every step.";

/// [`CHILD_SYSTEM_PROMPT`] for a sub-agent working in `cwd`.
pub fn child_system_prompt(cwd: &Path) -> String {
    CHILD_SYSTEM_PROMPT.replace("{cwd}", &cwd.display().to_string())
}

/// The sub-agent's one user message: the goal, then the context when there is one.
pub fn task_message(goal: &str, context: Option<&str>) -> String {
    match context.map(str::trim).filter(|c| !c.is_empty()) {
        Some(context) => format!("{}\n\nContext:\n{context}", goal.trim()),
        None => goal.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_and_context() {
        assert_eq!(task_message(" fix it ", None), "fix it");
        assert_eq!(task_message("fix it", Some("  ")), "fix it");
        assert_eq!(
            task_message("fix it", Some("src/a.rs fails\n")),
            "fix it\n\nContext:\nsrc/a.rs fails"
        );
        assert!(child_system_prompt(Path::new("/w")).contains("\nWorking directory: /w\n"));
    }
}
