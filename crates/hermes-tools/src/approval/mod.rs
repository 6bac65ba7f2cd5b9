//! Command approval: every command the `terminal` and `process` tools would run is classified
//! ([`CommandChecker`]: hardline, dangerous or safe, after Unicode normalisation and through
//! wrappers, chains and substitutions) and then passed through the [`ApprovalGate`]: hardline
//! commands are refused in every mode, dangerous ones are approved by the mode
//! (`approvals.mode` manual | smart | off, `--yolo`), the allowlist, an earlier answer, the
//! smart-approval judge, or the user.

mod detect;
mod gate;
mod lexer;
mod normalize;
mod pipelines;
mod rules;
mod settings;
mod targets;

pub use detect::{CommandChecker, Verdict};
pub use gate::ApprovalGate;
pub use settings::{ApprovalMode, ApprovalSettings, is_truthy};

/// What the smart-approval judge thinks of a flagged command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgeVerdict {
    Approve,
    Deny,
    /// Unsure: ask the user.
    Escalate,
}

/// An auxiliary model that assesses flagged commands in `approvals.mode: smart`.
#[async_trait::async_trait]
pub trait CommandJudge: Send + Sync {
    /// `command` (shell comments removed) was flagged for `reason`.
    async fn assess(&self, command: &str, reason: &str) -> JudgeVerdict;
}
