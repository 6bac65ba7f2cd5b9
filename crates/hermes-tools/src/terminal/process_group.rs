//! Stopping a command and everything it started: SIGTERM to the whole process group, a grace
//! period, then SIGKILL. The only `unsafe` of the crate is the `killpg` call.

use std::time::Duration;

/// Terminates the group led by the child and reaps the child.
pub(crate) async fn terminate(
    child: &mut tokio::process::Child,
    pgid: Option<u32>,
    grace: Duration,
) -> std::io::Result<std::process::ExitStatus> {
    if let Some(pgid) = pgid {
        signal_group(pgid, libc::SIGTERM);
        if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
            // The leader is gone; make sure the rest of the group is too.
            signal_group(pgid, libc::SIGKILL);
            return status;
        }
        signal_group(pgid, libc::SIGKILL);
    } else {
        let _ = child.start_kill();
    }
    child.wait().await
}

#[allow(unsafe_code)]
pub(crate) fn signal_group(pgid: u32, signal: i32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg only sends a signal; a stale or foreign group id at worst yields ESRCH/EPERM.
    unsafe {
        libc::killpg(pgid, signal);
    }
}
