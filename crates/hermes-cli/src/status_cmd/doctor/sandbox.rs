//! The `sandbox` check of `hermes doctor`: the mode commands will run under here
//! (`terminal.sandbox`, `--sandbox`), and, when it is on, a real sandboxed start of `/bin/true`
//! through this binary, so a kernel or launcher problem shows here rather than on the agent's
//! first command.

use std::path::Path;
use std::process::{Command, Stdio};

use hermes_tools::sandbox::{LAUNCHER_ARG, SandboxMode, SandboxSettings, SandboxState};

use super::Check;
use crate::status_cmd::Loaded;

pub(super) fn sandbox_check(loaded: &Loaded) -> Check {
    let settings = match SandboxSettings::from_config(&loaded.config, loaded.common.sandbox) {
        Ok(s) => s,
        Err(e) => {
            return Check::fail(
                "sandbox",
                e.to_string(),
                "terminal.sandbox.mode is one of off, workspace-write, read-only",
            );
        }
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| Path::new("/").to_path_buf());
    let state = SandboxState::for_session(&settings, &cwd, loaded.home.root());
    match &state {
        SandboxState::Off if settings.mode == SandboxMode::Off => Check::warn(
            "sandbox",
            "off: the agent's commands run with your full rights (the approval gate still runs)",
            "terminal.sandbox.mode: workspace-write in config.yaml, or --sandbox workspace-write",
        ),
        SandboxState::Off => Check::warn(
            "sandbox",
            format!(
                "unavailable here, commands run unsandboxed: {}",
                unavailable_reason()
            ),
            "a Linux kernel with Landlock (5.13+, `landlock` in the lsm= boot list), or terminal.sandbox.mode: off to silence this",
        ),
        SandboxState::Unavailable { .. } => Check::fail(
            "sandbox",
            format!("{}: the agent's commands are refused", state.describe()),
            "terminal.sandbox.mode: off (or --sandbox off) to run them unsandboxed, or a kernel with Landlock",
        ),
        SandboxState::Active(sandbox) => match launch_failure(sandbox.mode()) {
            None => Check::ok("sandbox", state.describe()),
            Some(why) => Check::fail(
                "sandbox",
                format!("{} cannot start a command: {why}", sandbox.mode()),
                "terminal.sandbox.mode: off (or --sandbox off) until this is fixed, and report it",
            ),
        },
    }
}

fn unavailable_reason() -> String {
    match hermes_tools::sandbox::support() {
        hermes_tools::sandbox::Support::Unavailable { reason } => reason.clone(),
        hermes_tools::sandbox::Support::Available { .. } => {
            "this program cannot launch sandboxed commands".into()
        }
    }
}

/// Starts `/bin/true` through the launcher, as a command would start; why it failed, if it did.
fn launch_failure(mode: SandboxMode) -> Option<String> {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return Some(format!("cannot find this program: {e}")),
    };
    match Command::new(exe)
        .args([LAUNCHER_ARG, "--mode", mode.as_str(), "--", "/bin/true"])
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        Err(e) => Some(e.to_string()),
    }
}
