//! The shell scripts the SSH backend runs on the remote host, as pure functions. Every one is
//! a fixed text run as `sh -c SCRIPT NAME ARGS...`: what varies (tokens, directories, the
//! user's command) travels as positional arguments, single-quoted into the one command line
//! ssh sends, so nothing the model writes becomes syntax of these scripts.
//!
//! Per-command files live in `$HOME/.hermes/exec` on the remote host (mode 0700): `TOKEN.pid`
//! (the process group to signal), and for background jobs `TOKEN.log` (their output) and
//! `TOKEN.exit` (their exit code, written when they end).

use super::sh_quote;

/// The remote directory of pid files, logs and exit codes (relative to the remote `$HOME`).
pub(crate) const EXEC_DIR: &str = "$HOME/.hermes/exec";

/// `sh -c SCRIPT NAME ARGS...` as one remote command line (prefixed by `env K=V...` when
/// `env` is not empty).
pub(crate) fn remote_command(script: &str, args: &[&str], env: &[(String, String)]) -> String {
    let mut line = String::new();
    if !env.is_empty() {
        line.push_str("env");
        for (k, v) in env {
            line.push(' ');
            line.push_str(&sh_quote(&format!("{k}={v}")));
        }
        line.push(' ');
    }
    line.push_str("sh -c ");
    line.push_str(&sh_quote(script));
    line.push_str(" hermes");
    for arg in args {
        line.push(' ');
        line.push_str(&sh_quote(arg));
    }
    line
}

/// Run at connection: prints the remote home and whether bash is there, and creates the
/// exec directory.
pub(crate) fn probe() -> String {
    format!(
        "umask 077; mkdir -p \"{EXEC_DIR}\" || exit 1; printf '%s\\n' \"$HOME\"; \
         command -v bash >/dev/null 2>&1 && echo bash || echo sh"
    )
}

/// A foreground command: `$1` token, `$2` directory, `$3` the command, `$4` the shell. The
/// outer shell's pid leads the process group sshd made for the session; it is recorded so a
/// timeout or kill reaches the command on the remote side, not only the local client.
pub(crate) fn foreground() -> String {
    format!(
        "d=\"{EXEC_DIR}\"; echo $$ > \"$d/$1.pid\" 2>/dev/null; \
         cd -- \"$2\" || exit 1; \"$4\" -c \"$3\"; r=$?; rm -f \"$d/$1.pid\"; exit $r"
    )
}

/// Signals the group recorded under `$1` with `$2` (TERM, KILL, ...).
pub(crate) fn kill() -> String {
    format!(
        "f=\"{EXEC_DIR}/$1.pid\"; p=$(cat \"$f\" 2>/dev/null) || exit 0; \
         kill -s \"$2\" -- \"-$p\" 2>/dev/null || kill -s \"$2\" \"$p\" 2>/dev/null; exit 0"
    )
}

/// Starts a background job detached from the connection: `$1` token, `$2` directory, `$3` the
/// command, `$4` the shell. `setsid` gives it its own session (no SIGHUP when sshd drops the
/// connection), stdin is /dev/null and its output goes to the log, so nothing of it depends
/// on the ssh channel. Its wrapper records its pid (the group), traps TERM/INT/HUP with a
/// handler (so the command keeps the default dispositions) and records the exit code. Returns
/// once the pid is recorded.
pub(crate) fn start_detached() -> String {
    let inner =
        "echo $$ > \"$0.pid\"; trap : TERM INT HUP; \"$2\" -c \"$1\"; echo $? > \"$0.exit\"";
    format!(
        "d=\"{EXEC_DIR}\"; umask 077; mkdir -p \"$d\" || exit 1; f=\"$d/$1\"; rm -f \"$f.pid\" \"$f.exit\" \"$f.log\"; \
         cd -- \"$2\" || exit 1; s=; command -v setsid >/dev/null 2>&1 && s=setsid; \
         $s sh -c {inner} \"$f\" \"$3\" \"$4\" </dev/null >\"$f.log\" 2>&1 & \
         i=0; while [ ! -s \"$f.pid\" ] && [ $i -lt 100 ]; do sleep 0.05 2>/dev/null || sleep 1; i=$((i+1)); done; \
         [ -s \"$f.pid\" ] || {{ echo 'the background job did not start' >&2; exit 1; }}",
        inner = sh_quote(inner),
    )
}

/// Prints the log of job `$1` from byte `$2` while the job runs (checked twice a second),
/// then the rest, and exits 0; 3 when the job's files are gone.
pub(crate) fn follow() -> String {
    format!(
        "f=\"{EXEC_DIR}/$1\"; p=$(cat \"$f.pid\" 2>/dev/null) || exit 3; n=$2; \
         while :; do a=0; kill -0 \"$p\" 2>/dev/null && a=1; \
         s=$(($(wc -c < \"$f.log\" 2>/dev/null || echo 0))); \
         if [ \"$s\" -gt \"$n\" ]; then tail -c +$((n+1)) \"$f.log\" | head -c $((s-n)); n=$s; fi; \
         [ $a = 1 ] || break; sleep 0.5 2>/dev/null || sleep 1; done; exit 0"
    )
}

/// [`follow`] for at most `rounds` half-seconds, and only until some output is printed: exits
/// 0 once the job has ended and its log is printed, 4 while it still runs (for backends whose
/// calls answer only when the command ends, so each follow must come back soon with what it
/// has), 3 when the job's files are gone.
pub(crate) fn follow_for(rounds: u32) -> String {
    format!(
        "f=\"{EXEC_DIR}/$1\"; p=$(cat \"$f.pid\" 2>/dev/null) || exit 3; n=$2; i=0; \
         while :; do a=0; kill -0 \"$p\" 2>/dev/null && a=1; \
         s=$(($(wc -c < \"$f.log\" 2>/dev/null || echo 0))); \
         if [ \"$s\" -gt \"$n\" ]; then tail -c +$((n+1)) \"$f.log\" | head -c $((s-n)); n=$s; \
         [ $a = 1 ] && exit 4; fi; \
         [ $a = 1 ] || exit 0; i=$((i+1)); [ $i -ge {rounds} ] && exit 4; \
         sleep 0.5 2>/dev/null || sleep 1; done"
    )
}

/// What the [`status`] script printed.
pub(crate) fn parse_status(out: &str) -> super::DetachedStatus {
    let out = out.trim();
    if out == "running" {
        return super::DetachedStatus::Running;
    }
    out.strip_prefix("exit ")
        .and_then(|c| c.trim().parse().ok())
        .map_or(super::DetachedStatus::Lost, super::DetachedStatus::Exited)
}

/// Prints `exit CODE`, `running` or `lost` for job `$1`.
pub(crate) fn status() -> String {
    format!(
        "f=\"{EXEC_DIR}/$1\"; if [ -s \"$f.exit\" ]; then echo \"exit $(cat \"$f.exit\")\"; \
         elif p=$(cat \"$f.pid\" 2>/dev/null) && kill -0 \"$p\" 2>/dev/null; then echo running; \
         else echo lost; fi"
    )
}

/// Removes job `$1`'s files.
pub(crate) fn forget() -> String {
    format!("f=\"{EXEC_DIR}/$1\"; rm -f \"$f.pid\" \"$f.exit\" \"$f.log\"")
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    /// Runs a remote command line under the local sh, as the remote login shell would.
    fn run(line: &str, home: &std::path::Path) -> std::process::Output {
        Command::new("sh")
            .arg("-c")
            .arg(line)
            .env("HOME", home)
            .output()
            .unwrap()
    }

    #[test]
    fn hostile_arguments_stay_data() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("it's a \"dir\"; rm -rf x");
        std::fs::create_dir_all(&dir).unwrap();
        let o = run(&probe(), home.path());
        assert!(o.status.success());
        let out = run(
            &remote_command(
                &foreground(),
                &[
                    "t1",
                    dir.to_str().unwrap(),
                    "printf '%s|' \"$X\" \"$(basename \"$PWD\")\"; exit 7",
                    "sh",
                ],
                &[("X".into(), "a b'c$(d)".into())],
            ),
            home.path(),
        );
        assert_eq!(out.status.code(), Some(7));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "a b'c$(d)|it's a \"dir\"; rm -rf x|"
        );
        assert!(!home.path().join(".hermes/exec/t1.pid").exists());
    }

    #[test]
    fn a_detached_job_is_followed_killed_and_reports_its_exit() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let wd = h.to_str().unwrap();
        let start = run(
            &remote_command(
                &start_detached(),
                &["j1", wd, "echo one; sleep 0.6; echo two", "sh"],
                &[],
            ),
            h,
        );
        assert!(start.status.success(), "{start:?}");
        let st = run(&remote_command(&status(), &["j1"], &[]), h);
        assert_eq!(String::from_utf8_lossy(&st.stdout).trim(), "running");
        let f = run(&remote_command(&follow(), &["j1", "0"], &[]), h);
        assert_eq!(String::from_utf8_lossy(&f.stdout), "one\ntwo\n");
        let f = run(&remote_command(&follow(), &["j1", "4"], &[]), h);
        assert_eq!(String::from_utf8_lossy(&f.stdout), "two\n");
        let st = run(&remote_command(&status(), &["j1"], &[]), h);
        assert_eq!(String::from_utf8_lossy(&st.stdout).trim(), "exit 0");

        run(
            &remote_command(&start_detached(), &["j2", wd, "sleep 30", "sh"], &[]),
            h,
        );
        run(&remote_command(&kill(), &["j2", "TERM"], &[]), h);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let st = run(&remote_command(&status(), &["j2"], &[]), h);
        assert_eq!(String::from_utf8_lossy(&st.stdout).trim(), "exit 143");
        run(&remote_command(&forget(), &["j2"], &[]), h);
        assert!(!h.join(".hermes/exec/j2.log").exists());
    }

    #[test]
    fn a_bounded_follow_returns_while_the_job_runs_and_finishes_after_it() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let wd = h.to_str().unwrap();
        let start = run(
            &remote_command(
                &start_detached(),
                &["j3", wd, "echo one; sleep 2; echo two", "sh"],
                &[],
            ),
            h,
        );
        assert!(start.status.success(), "{start:?}");
        let f = run(&remote_command(&follow_for(2), &["j3", "0"], &[]), h);
        assert_eq!(f.status.code(), Some(4), "still running");
        assert_eq!(String::from_utf8_lossy(&f.stdout), "one\n");
        // Follow on from there until the job has ended and everything is read.
        let (mut rest, mut offset) = (String::new(), 4);
        for _ in 0..10 {
            let f = run(
                &remote_command(&follow_for(8), &["j3", &offset.to_string()], &[]),
                h,
            );
            rest.push_str(&String::from_utf8_lossy(&f.stdout));
            offset = 4 + rest.len();
            if f.status.code() == Some(0) {
                break;
            }
            assert_eq!(f.status.code(), Some(4));
        }
        assert_eq!(rest, "two\n");
        let gone = run(&remote_command(&follow_for(2), &["nope", "0"], &[]), h);
        assert_eq!(gone.status.code(), Some(3));
    }
}
