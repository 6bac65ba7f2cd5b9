//! Trajectories for training data: with `agent.save_trajectories: true` (or
//! `--save-trajectories`) every turn appends the conversation so far, in ShareGPT form, to
//! `$HERMES_HOME/trajectories/trajectory_samples.jsonl`, or to `failed_trajectories.jsonl` when
//! the turn did not complete (failed, interrupted, or out of iterations).

use std::io::Write;
use std::path::PathBuf;

use hermes_config::{Config, HermesHome};
use hermes_protocol::{Message, ToolSchema, TurnResult};
use hermes_store::Trajectory;
use serde_json::Value;

use crate::error::SessionError;

pub const COMPLETED_FILE: &str = "trajectory_samples.jsonl";
pub const FAILED_FILE: &str = "failed_trajectories.jsonl";

/// A trajectory that could not be appended.
#[derive(Debug, thiserror::Error)]
#[error("cannot save the trajectory to {}: {source}", path.display())]
pub struct TrajectoryError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// Where trajectories go, when they are saved at all.
#[derive(Debug, Clone)]
pub struct Trajectories {
    dir: PathBuf,
}

impl Trajectories {
    /// Enabled by the flag or by `agent.save_trajectories` (which must be a boolean).
    pub fn from_config(
        home: &HermesHome,
        config: &Config,
        flag: bool,
    ) -> Result<Option<Trajectories>, SessionError> {
        let configured = match config
            .raw
            .get("agent")
            .and_then(|a| a.get("save_trajectories"))
        {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(SessionError::Setting {
                    origin: config.path.display().to_string(),
                    reason: format!("agent.save_trajectories must be true or false, not {other}"),
                });
            }
        };
        Ok((flag || configured).then(|| Trajectories {
            dir: home.join("trajectories"),
        }))
    }

    /// Appends the conversation after `turn` as one line.
    pub fn record(
        &self,
        system_prompt: &str,
        tools: &[ToolSchema],
        messages: &[Message],
        model: &str,
        turn: &TurnResult,
    ) -> Result<PathBuf, TrajectoryError> {
        let completed = turn.is_completed();
        let entry = Trajectory::new(system_prompt, tools, messages, model, completed);
        let path = self.dir.join(if completed {
            COMPLETED_FILE
        } else {
            FAILED_FILE
        });
        let mut line = entry.to_json_line();
        line.push('\n');
        std::fs::create_dir_all(&self.dir)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
            })
            // One write call: concurrent appenders never interleave inside a line.
            .and_then(|mut file| file.write_all(line.as_bytes()))
            .map_err(|source| TrajectoryError {
                path: path.clone(),
                source,
            })?;
        Ok(path)
    }
}
