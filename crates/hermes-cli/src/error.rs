//! Errors that end the program, with the exit code each deserves: 2 for usage and
//! configuration problems the user must fix, 1 for a failed run, 130 for an interrupt.

#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
}

impl CliError {
    /// Bad configuration or usage (exit 2).
    pub fn config(message: impl Into<String>) -> Self {
        CliError {
            code: 2,
            message: message.into(),
        }
    }

    /// The run failed (exit 1).
    pub fn runtime(message: impl Into<String>) -> Self {
        CliError {
            code: 1,
            message: message.into(),
        }
    }

    /// The user interrupted (exit 130).
    pub fn interrupted() -> Self {
        CliError {
            code: 130,
            message: "interrupted".into(),
        }
    }
}

impl From<hermes_runtime::SessionError> for CliError {
    /// A configuration or usage mistake exits 2, a failed run (damaged store, ...) 1.
    fn from(e: hermes_runtime::SessionError) -> CliError {
        if e.is_usage() {
            CliError::config(e.to_string())
        } else {
            CliError::runtime(e.to_string())
        }
    }
}
