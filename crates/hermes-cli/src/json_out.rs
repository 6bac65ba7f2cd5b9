//! `--json` on the listings (`sessions list`, `status`, `tools list`, `skills list`,
//! `cron list`, `mcp list`): one pretty-printed JSON document on stdout, for scripts and `jq`.
//! The shapes are stable: records keep their field names, absent values are `null`.

use std::io::Write;

use serde::Serialize;

use crate::error::CliError;

/// Writes `value` as JSON followed by a newline.
pub fn print(value: &impl Serialize) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))
}
