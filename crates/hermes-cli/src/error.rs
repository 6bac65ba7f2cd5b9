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
