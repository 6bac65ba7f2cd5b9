//! The local backend: commands run on this machine under `bash -c` (`sh` where bash is
//! missing), in their own process group, with the session's filtered environment and inside
//! the OS sandbox when the session has one. File tools keep their direct, guarded access.

use std::path::PathBuf;

use super::{Backend, EnvError, ExecutionEnvironment, Prepared, ShellRequest, Stopper};
use crate::terminal::shell;

#[derive(Debug)]
pub struct LocalEnvironment {
    cwd: PathBuf,
}

impl LocalEnvironment {
    pub fn new(cwd: PathBuf) -> LocalEnvironment {
        LocalEnvironment { cwd }
    }
}

#[async_trait::async_trait]
impl ExecutionEnvironment for LocalEnvironment {
    fn backend(&self) -> Backend {
        Backend::Local
    }

    fn cwd(&self) -> String {
        self.cwd.display().to_string()
    }

    async fn shell(&self, request: ShellRequest<'_>) -> Result<Prepared, EnvError> {
        let mut command = match request.sandbox {
            Some(sandbox) => {
                let (launcher, args) =
                    sandbox.wrap(shell().as_ref(), &["-c".as_ref(), request.script.as_ref()]);
                let mut command = tokio::process::Command::new(launcher);
                command.args(args);
                command
            }
            None => {
                let mut command = tokio::process::Command::new(shell());
                command.arg("-c").arg(request.script);
                command
            }
        };
        command
            .current_dir(request.workdir)
            .env_clear()
            .envs(request.env.vars().iter().map(|(k, v)| (k, v)))
            .envs(request.extra_env.iter().map(|(k, v)| (k, v)));
        Ok(Prepared {
            command,
            stopper: Stopper::LocalGroup,
        })
    }

    async fn shutdown(&self) {}
}
