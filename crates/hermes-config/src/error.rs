//! Errors of configuration loading. Every variant names the file involved, so the user knows
//! what to fix; YAML syntax errors carry the line and column.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot use Hermes home {path}: {reason}")]
    HomeUnavailable { path: PathBuf, reason: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is a directory, expected a file")]
    IsDirectory { path: PathBuf },
    #[error("{path}:{line}:{column}: invalid YAML: {message}")]
    Yaml {
        path: PathBuf,
        line: u64,
        column: u64,
        message: String,
    },
    #[error("{path}: invalid value for `{key}`: {message}")]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
