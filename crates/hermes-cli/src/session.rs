//! The command line's way into the runtime: the home its flags select, and its flags as a
//! [`SessionSpec`] (the one conversion from clap's arguments to what the runtime builds
//! sessions from). The working directory is where `hermes` was started, or `terminal.cwd`.

use std::path::PathBuf;
use std::sync::Arc;

use hermes_config::{Config, Environment, HermesHome};
use hermes_llm::Overrides;
use hermes_runtime::{Platform, Resume, Runtime, Session, SessionSpec};
use hermes_tools::Interaction;

use crate::args::CommonArgs;
use crate::error::CliError;

/// Loads the home and config of this run.
pub fn load_home(args: &CommonArgs) -> Result<(HermesHome, Config, Environment), CliError> {
    let home = HermesHome::resolve(args.profile.as_deref())
        .map_err(|e| CliError::config(e.to_string()))?;
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let (config, env) = hermes_config::load(&home).map_err(|e| CliError::config(e.to_string()))?;
    Ok((home, config, env))
}

/// The runtime of the home the flags select.
pub fn runtime(args: &CommonArgs) -> Result<Runtime, CliError> {
    Ok(Runtime::load(args.profile.as_deref())?)
}

/// Where the tools of a command-line session run: `terminal.cwd`, else the current directory.
pub fn working_dir(config: &Config) -> Result<PathBuf, CliError> {
    let here = std::env::current_dir()
        .map_err(|e| CliError::config(format!("cannot determine the current directory: {e}")))?;
    Ok(hermes_runtime::tools::working_dir(config, &here)?)
}

impl CommonArgs {
    /// These flags as the spec of a session on `platform` in `cwd`.
    pub fn spec(&self, platform: Platform, cwd: PathBuf) -> SessionSpec {
        SessionSpec {
            model: self.overrides(),
            toolsets: self
                .toolsets
                .as_deref()
                .map(hermes_runtime::tools::parse_toolsets),
            yolo: self.yolo,
            sandbox: self.sandbox,
            resume: match (&self.resume, self.continue_last) {
                (Some(key), _) => Resume::Session(key.clone()),
                (None, true) => Resume::Latest,
                (None, false) => Resume::New,
            },
            max_turns: self.max_turns,
            reasoning_effort: self.reasoning_effort.clone(),
            ignore_rules: self.ignore_rules,
            save_trajectories: self.save_trajectories,
            ..SessionSpec::new(platform, cwd)
        }
    }

    /// The provider, model and base URL chosen on the command line.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
        }
    }
}

/// The runtime and a command-line session for these flags, asking through `interaction`.
pub fn open(
    args: &CommonArgs,
    interaction: Arc<dyn Interaction>,
) -> Result<(Runtime, Session), CliError> {
    let runtime = runtime(args)?;
    let spec = args.spec(Platform::Cli, working_dir(runtime.config())?);
    let session = runtime.session(&spec, interaction)?;
    Ok((runtime, session))
}
