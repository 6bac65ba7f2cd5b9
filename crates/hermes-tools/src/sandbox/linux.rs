//! The Linux enforcement: Landlock rules for the file system (read everywhere, write only
//! under the policy's roots and a few devices) and, when the network is off, for TCP (ABI 4+),
//! plus a seccomp filter that refuses every socket that is not a Unix socket (UDP, raw,
//! netlink...) and io_uring (which could open sockets around the filter) with `EPERM`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
};
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

use super::launcher::LaunchError;
use super::support::Support;

/// The newest Landlock ABI whose rights we ask for; older kernels get what they support.
const FS_ABI: ABI = ABI::V5;
const NET_ABI: ABI = ABI::V4;

pub fn probe() -> Support {
    let fs = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|r| r.create());
    if let Err(e) = fs {
        return Support::Unavailable {
            reason: format!("the kernel does not provide Landlock ({e})"),
        };
    }
    let network = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessNet::from_all(NET_ABI))
        .and_then(|r| r.create())
        .is_ok();
    Support::Available {
        landlock_network: network,
    }
}

/// Restricts this (single-threaded) process; what it `exec`s next inherits the rules.
pub fn apply(writable: &[PathBuf], devices: &[&str], network: bool) -> Result<(), LaunchError> {
    let landlock = |e: landlock::RulesetError| LaunchError::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(FS_ABI))
        .map_err(landlock)?;
    if !network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(NET_ABI))
            .map_err(landlock)?;
    }
    let status = ruleset
        .create()
        .map_err(landlock)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(FS_ABI)))
        .map_err(landlock)?
        .add_rules(path_beneath_rules(devices, AccessFs::from_all(FS_ABI)))
        .map_err(landlock)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(FS_ABI)))
        .map_err(landlock)?
        .restrict_self()
        .map_err(landlock)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(LaunchError::Landlock(
            "the kernel does not enforce Landlock".into(),
        ));
    }
    if !network {
        deny_sockets()?;
    }
    Ok(())
}

fn deny_sockets() -> Result<(), LaunchError> {
    let seccomp = |e: seccompiler::Error| LaunchError::Seccomp(e.to_string());
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )
    .map_err(|e| seccomp(e.into()))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(
        libc::SYS_socket,
        vec![SeccompRule::new(vec![not_unix]).map_err(|e| seccomp(e.into()))?],
    );
    // An empty rule list matches every call.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| seccomp(e.into()))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| seccomp(e.into()))?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| seccomp(e.into()))?;
    seccompiler::apply_filter(&program).map_err(seccomp)
}
