//! Why a session could not be built or switched. Every variant says what to fix; frontends
//! ask [`SessionError::is_usage`] to tell a mistake the user must correct (bad configuration, an
//! unknown session name: the CLI's exit code 2) from a failure of the run (a damaged or locked
//! store: exit code 1).

use std::path::PathBuf;

use hermes_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// config.yaml, `.env` or the home itself.
    #[error(transparent)]
    Config(#[from] hermes_config::ConfigError),
    /// The provider cannot be resolved (unknown provider, missing key, bad URL).
    #[error(transparent)]
    Resolve(#[from] hermes_llm::ResolveError),
    /// The provider cannot be built.
    #[error(transparent)]
    Provider(#[from] hermes_llm::LlmError),
    /// The embedded model (missing file, not built, bad settings).
    #[error(transparent)]
    Local(#[from] hermes_local::LocalError),
    #[error(transparent)]
    Toolsets(#[from] hermes_tools::ToolsetError),
    /// The session store, while resuming.
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("there is no earlier session to continue; start one with `hermes`")]
    NothingToContinue,
    /// A working directory that does not exist.
    #[error("{origin}: {} is not a directory", path.display())]
    NotADirectory { origin: String, path: PathBuf },
    #[error("unknown reasoning effort {level:?} (use one of: {})", hermes_llm::reasoning::LEVELS.join(", "))]
    ReasoningEffort { level: String },
    /// A setting of the wrong shape (`origin` names the key).
    #[error("{origin}: {reason}")]
    Setting { origin: String, reason: String },
}

impl SessionError {
    /// A mistake the user must correct (configuration, usage), as opposed to a failed run.
    pub fn is_usage(&self) -> bool {
        match self {
            SessionError::Store(e) => matches!(
                e,
                StoreError::SessionNotFound(_)
                    | StoreError::Ambiguous { .. }
                    | StoreError::InvalidTitle(_)
                    | StoreError::TitleTaken { .. }
            ),
            _ => true,
        }
    }
}
