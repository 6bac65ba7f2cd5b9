//! Whether this system can enforce the sandbox, probed once per process: Landlock enabled in
//! the running kernel (a ruleset can be created, without restricting anything).

use std::sync::OnceLock;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    Available {
        /// Landlock ABI 4+ (Linux 6.7): TCP is refused by Landlock as well as by seccomp.
        landlock_network: bool,
    },
    Unavailable {
        reason: String,
    },
}

/// The probe's answer (computed on first use).
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(probe)
}

#[cfg(target_os = "linux")]
fn probe() -> Support {
    super::linux::probe()
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Support {
    Support::Unavailable {
        reason: "the OS sandbox needs Linux (Landlock and seccomp)".into(),
    }
}
