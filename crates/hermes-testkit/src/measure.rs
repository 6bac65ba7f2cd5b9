//! Running a child process while watching its memory: [`run_measured`] returns its output and
//! the peak resident set it reached (`VmHWM` of `/proc/<pid>/status`, a high-water mark, read
//! every few milliseconds until the process is gone). Linux only; elsewhere the peak is `None`.

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What a measured run produced.
#[derive(Debug)]
pub struct Measured {
    pub output: Output,
    /// The largest `VmHWM` seen, in KiB (`None` when it could not be read at all).
    pub peak_rss_kib: Option<u64>,
}

/// Runs `cmd` to completion (stdout and stderr captured, stdin closed) and samples its peak
/// resident memory while it runs.
pub fn run_measured(mut cmd: Command) -> std::io::Result<Measured> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            let path = format!("/proc/{pid}/status");
            while !done.load(Ordering::Acquire) {
                // A zombie has no VmHWM line any more: the last reading stands.
                let Some(kib) = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|s| hwm_kib(&s))
                else {
                    break;
                };
                peak.fetch_max(kib, Ordering::AcqRel);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let output = child.wait_with_output();
    done.store(true, Ordering::Release);
    let _ = sampler.join();
    let kib = peak.load(Ordering::Acquire);
    Ok(Measured {
        output: output?,
        peak_rss_kib: (kib > 0).then_some(kib),
    })
}

/// The `VmHWM:  1234 kB` line of a status file, in KiB.
fn hwm_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The peak resident memory of this process so far, in KiB (Linux).
pub fn own_peak_rss_kib() -> Option<u64> {
    hwm_kib(&std::fs::read_to_string("/proc/self/status").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_are_parsed() {
        assert_eq!(
            hwm_kib("Name:\tx\nVmHWM:\t  123456 kB\nVmRSS: 1 kB\n"),
            Some(123_456)
        );
        assert_eq!(hwm_kib("Name:\tx\n"), None);
    }
}
