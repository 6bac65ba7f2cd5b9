//! Signalling a local command and everything it started: its whole process group (the
//! SIGTERM, grace, SIGKILL sequence is [`crate::env::Stopper::terminate`]).

#[allow(unsafe_code)]
pub fn signal_group(pgid: u32, signal: i32) {
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
