//! A stand-in `apptainer` for the Singularity backend's tests, where neither Apptainer nor
//! Singularity can be installed: a bash script that records every call's argument vector
//! (one line per call, shell-quoted, in `calls.log`) and does what the real CLI would with
//! the subcommands the backend uses: `version`; `build SIF IMAGE` (writes the SIF);
//! `instance start [FLAGS] IMAGE NAME` (the instance gets a directory, its home);
//! `instance stop NAME` (FATAL when there is no such instance); `exec [--cleanenv] [--env
//! K=V]... instance://NAME COMMAND...` (FATAL for an unknown instance; otherwise runs the
//! command on this machine with the instance's home as `HOME`, and with `--cleanenv` nothing
//! of the caller's environment but `PATH`, as Apptainer's `--cleanenv` does).

use std::path::{Path, PathBuf};

const SCRIPT: &str = r#"#!/bin/bash
D="$(cd "$(dirname "$0")" && pwd)"
printf '%q ' "$@" >> "$D/calls.log"; echo >> "$D/calls.log"
case "$1" in
  version) echo "apptainer version 1.3.4-fake"; exit 0 ;;
  build) echo fake-sif > "$2"; exit 0 ;;
  instance)
    case "$2" in
      start)
        name="${@: -1}"
        mkdir -p "$D/instances/$name/home"; exit 0 ;;
      stop)
        if [ ! -d "$D/instances/$3" ]; then echo "FATAL:   no instance found with name $3" >&2; exit 255; fi
        rm -rf "$D/instances/$3"; exit 0 ;;
    esac ;;
  exec)
    shift; clean=0; envs=()
    while [ $# -gt 0 ]; do
      case "$1" in
        --cleanenv) clean=1; shift ;;
        --env) envs+=("$2"); shift 2 ;;
        instance://*) name="${1#instance://}"; shift; break ;;
        *) echo "FATAL: fake apptainer: unexpected $1" >&2; exit 255 ;;
      esac
    done
    if [ ! -d "$D/instances/$name" ]; then echo "FATAL:   instance $name not found" >&2; exit 255; fi
    home="$D/instances/$name/home"
    if [ "$clean" = 1 ]; then
      exec env -i HOME="$home" PATH="/usr/local/bin:/usr/bin:/bin" "${envs[@]}" "$@"
    fi
    export HOME="$home"
    exec env "${envs[@]}" "$@" ;;
esac
echo "FATAL: fake apptainer: unknown command $*" >&2
exit 255
"#;

/// An installed fake `apptainer`.
#[derive(Debug)]
pub struct FakeApptainer {
    dir: tempfile::TempDir,
}

impl FakeApptainer {
    /// Writes the fake into a fresh directory (put [`FakeApptainer::bin_dir`] first on PATH).
    #[allow(clippy::expect_used)]
    pub fn install() -> FakeApptainer {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("fake-apptainer")
            .tempdir()
            .expect("a temp dir for the fake apptainer");
        let bin = dir.path().join("apptainer");
        std::fs::write(&bin, SCRIPT).expect("write the fake apptainer");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
            .expect("make the fake apptainer executable");
        FakeApptainer { dir }
    }

    pub fn bin_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Every call's arguments, shell-quoted, in order.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    /// The instances still running.
    pub fn instances(&self) -> Vec<String> {
        std::fs::read_dir(self.dir.path().join("instances"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// An instance's home directory on this machine.
    pub fn instance_home(&self, name: &str) -> PathBuf {
        self.dir.path().join("instances").join(name).join("home")
    }
}

/// A real `apptainer` or `singularity` on PATH, if any.
pub fn real_apptainer() -> Option<PathBuf> {
    let path = std::env::var("PATH").ok()?;
    ["apptainer", "singularity"].iter().find_map(|name| {
        path.split(':')
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    })
}
