//! Command approval: every command the `terminal` and `process` tools would run is classified
//! ([`CommandChecker`]: hardline, dangerous or safe) from the exact text bash will run, parsed
//! ([`lexer`]) and expanded as far as can be done statically ([`expand`], [`decode`],
//! [`arith`]), through chains, substitutions, payloads and [`wrappers`], with the rules of
//! [`rules`] and [`exec_rules`]; what it cannot resolve fails closed (needs approval). Then
//! the [`ApprovalGate`] decides: hardline commands are refused in every mode, dangerous ones
//! (and guarded file writes of [`crate::protect`]) are approved by the mode (`approvals.mode`
//! manual | smart | off, `--yolo`), the allowlist, an earlier answer, the unattended policy
//! (`approvals.non_interactive`), the smart-approval judge, or the user.

mod arith;
mod decode;
mod detect;
mod exec_rules;
mod expand;
mod gate;
mod lexer;
mod normalize;
mod pipelines;
mod rules;
mod settings;
mod targets;
mod wrappers;

pub use detect::{Analysis, CommandChecker, Verdict};
pub use gate::{ApprovalGate, Decision};
pub use settings::{ApprovalMode, ApprovalSettings, NonInteractivePolicy, is_truthy};

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
