//! `hermes __sandbox-exec --mode MODE [--network] [--write DIR]... -- PROGRAM [ARGS]...`: the
//! first thing a sandboxed command runs. The `hermes` binary dispatches here before anything
//! else (no runtime, no config, one thread, which Landlock and seccomp need: they restrict
//! the calling thread), the process restricts itself, then `exec`s the program. Exit 126 (the
//! shell's "cannot execute") with a message on stderr when the sandbox cannot be set up: the
//! command never runs unrestricted by accident.

use std::convert::Infallible;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use super::{SandboxMode, WRITABLE_DEVICES};

/// The hidden first argument that selects the launcher.
pub const LAUNCHER_ARG: &str = "__sandbox-exec";

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(
        "{0} (usage: hermes {LAUNCHER_ARG} --mode MODE [--network] [--write DIR]... -- PROGRAM [ARGS]...)"
    )]
    Usage(String),
    #[error("cannot apply the Landlock rules: {0}")]
    Landlock(String),
    #[error("cannot apply the seccomp filter: {0}")]
    Seccomp(String),
    #[cfg(not(target_os = "linux"))]
    #[error("the OS sandbox needs Linux (Landlock and seccomp)")]
    Unsupported,
    #[error("cannot run {program}: {source}")]
    Exec {
        program: String,
        source: std::io::Error,
    },
}

/// A parsed launcher command line.
#[derive(Debug, PartialEq, Eq)]
struct Launch {
    mode: SandboxMode,
    network: bool,
    writable: Vec<PathBuf>,
    program: OsString,
    args: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Launch, LaunchError> {
    let mut mode = None;
    let mut network = false;
    let mut writable = Vec::new();
    let mut it = args.iter();
    loop {
        let Some(arg) = it.next() else {
            return Err(LaunchError::Usage("no program after --".into()));
        };
        match arg.to_str() {
            Some("--") => break,
            Some("--network") => network = true,
            Some("--mode") => {
                let value = it
                    .next()
                    .and_then(|v| v.to_str())
                    .ok_or_else(|| LaunchError::Usage("--mode needs a value".into()))?;
                mode = Some(
                    value
                        .parse::<SandboxMode>()
                        .map_err(|e| LaunchError::Usage(e.to_string()))?,
                );
            }
            Some("--write") => {
                let dir = it
                    .next()
                    .ok_or_else(|| LaunchError::Usage("--write needs a directory".into()))?;
                writable.push(PathBuf::from(dir));
            }
            _ => {
                return Err(LaunchError::Usage(format!(
                    "unknown argument {}",
                    arg.to_string_lossy()
                )));
            }
        }
    }
    let mode = mode.ok_or_else(|| LaunchError::Usage("--mode is required".into()))?;
    if mode == SandboxMode::Off {
        return Err(LaunchError::Usage("--mode off is not a sandbox".into()));
    }
    if mode == SandboxMode::ReadOnly {
        writable.clear();
    }
    let program = it
        .next()
        .cloned()
        .ok_or_else(|| LaunchError::Usage("no program after --".into()))?;
    Ok(Launch {
        mode,
        network,
        writable,
        program,
        args: it.cloned().collect(),
    })
}

/// Runs the launcher on the arguments after [`LAUNCHER_ARG`]; returns only on failure.
pub fn main(args: &[OsString]) -> ExitCode {
    match run(args) {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("hermes sandbox: {e}");
            ExitCode::from(126)
        }
    }
}

fn run(args: &[OsString]) -> Result<Infallible, LaunchError> {
    let launch = parse(args)?;
    restrict(&launch)?;
    use std::os::unix::process::CommandExt;
    let source = Command::new(&launch.program).args(&launch.args).exec();
    Err(LaunchError::Exec {
        program: launch.program.to_string_lossy().into_owned(),
        source,
    })
}

#[cfg(target_os = "linux")]
fn restrict(launch: &Launch) -> Result<(), LaunchError> {
    super::linux::apply(&launch.writable, WRITABLE_DEVICES, launch.network)
}

#[cfg(not(target_os = "linux"))]
fn restrict(_: &Launch) -> Result<(), LaunchError> {
    Err(LaunchError::Unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_a_workspace_write_launch() {
        let launch = parse(&args(&[
            "--mode",
            "workspace-write",
            "--write",
            "/w",
            "--write",
            "/tmp",
            "--",
            "/bin/bash",
            "-c",
            "echo hi",
        ]))
        .unwrap();
        assert_eq!(launch.mode, SandboxMode::WorkspaceWrite);
        assert!(!launch.network);
        assert_eq!(
            launch.writable,
            vec![PathBuf::from("/w"), PathBuf::from("/tmp")]
        );
        assert_eq!(launch.program, OsString::from("/bin/bash"));
        assert_eq!(launch.args, args(&["-c", "echo hi"]));
    }

    #[test]
    fn read_only_drops_writable_roots_and_off_is_refused() {
        let launch = parse(&args(&[
            "--mode",
            "read-only",
            "--network",
            "--write",
            "/w",
            "--",
            "true",
        ]))
        .unwrap();
        assert!(launch.writable.is_empty());
        assert!(launch.network);
        assert!(matches!(
            parse(&args(&["--mode", "off", "--", "true"])),
            Err(LaunchError::Usage(_))
        ));
    }

    #[test]
    fn malformed_command_lines_are_usage_errors() {
        for bad in [
            &[][..],
            &["--mode", "workspace-write"][..],
            &["--mode", "workspace-write", "--"][..],
            &["--write"][..],
            &["--mode", "sideways", "--", "true"][..],
            &["--bogus", "--", "true"][..],
            &["--", "true"][..],
        ] {
            assert!(
                matches!(parse(&args(bad)), Err(LaunchError::Usage(_))),
                "{bad:?}"
            );
        }
    }
}
