//! What a tool call may use: the working directory, the environment for subprocesses (without
//! credentials), the terminal timeout, the cancellation token of the turn and the frontend's
//! [`Interaction`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::interaction::{Interaction, NonInteractive};
use crate::secrets::ChildEnv;

#[derive(Clone)]
pub struct ToolContext {
    /// Relative paths and commands start here.
    pub cwd: PathBuf,
    /// The environment handed to subprocesses.
    pub child_env: Arc<ChildEnv>,
    /// Default limit of a foreground terminal command.
    pub terminal_timeout: Duration,
    /// Cancelled when the user interrupts the turn.
    pub cancel: CancellationToken,
    pub interaction: Arc<dyn Interaction>,
    pub session_id: String,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("cwd", &self.cwd)
            .field("terminal_timeout", &self.terminal_timeout)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for `cwd` with the process environment (minus secrets), a 180 s terminal
    /// timeout and no user to ask.
    pub fn new(cwd: PathBuf) -> ToolContext {
        ToolContext {
            cwd,
            child_env: Arc::new(ChildEnv::from_process(&[])),
            terminal_timeout: Duration::from_secs(180),
            cancel: CancellationToken::new(),
            interaction: Arc::new(NonInteractive),
            session_id: String::new(),
        }
    }

    /// The same context with another cancellation token (one per turn).
    pub fn with_cancel(&self, cancel: CancellationToken) -> ToolContext {
        ToolContext {
            cancel,
            ..self.clone()
        }
    }
}
