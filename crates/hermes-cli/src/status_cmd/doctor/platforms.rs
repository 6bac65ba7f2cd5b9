//! Doctor's checks of the chat platforms the gateway would start: one line per enabled
//! platform. A platform that cannot start (a credential not set, a bad value) is a problem
//! naming what to set; the others are probed (the adapter's identity call or login, all at
//! once, each bounded) so wrong tokens and unreachable servers show here rather than in the
//! gateway's log; `--offline` only checks the settings. What the gateway would ignore (a
//! platform this build lacks, a webhook route without a secret) is a warning.

use std::sync::Arc;
use std::time::Duration;

use hermes_gateway::platform::{
    BuiltAdapters, PlatformAdapter, PlatformConfigError, PlatformError, build_adapters,
};

use super::Check;
use crate::status_cmd::Loaded;

/// Longest a platform's probe may take: the adapters' own timeouts are longer (they wait
/// patiently in a long-lived gateway), a doctor run should not.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

pub(super) async fn platform_checks(loaded: &Loaded, offline: bool) -> Vec<Check> {
    let BuiltAdapters {
        adapters,
        platforms,
        errors,
        warnings,
    } = build_adapters(&loaded.config, &loaded.env);
    let env_path = loaded.home.env_path();
    let mut checks: Vec<(String, Check)> = errors
        .iter()
        .map(|e| {
            let name = e.platform().to_string();
            let check = Check::fail(&name, e.to_string(), config_fix(e, &env_path));
            (name, check)
        })
        .collect();
    let probes = adapters
        .iter()
        .map(|adapter| probe(adapter.clone(), offline));
    for (adapter, check) in adapters
        .iter()
        .zip(futures_util::future::join_all(probes).await)
    {
        checks.push((adapter.name().to_string(), check));
    }
    // The gateway's order of platforms.
    let order: Vec<&str> = platforms.enabled().map(|p| p.name.as_str()).collect();
    checks.sort_by_key(|(name, _)| order.iter().position(|n| n == name).unwrap_or(usize::MAX));
    let mut out: Vec<Check> = checks.into_iter().map(|(_, c)| c).collect();
    out.extend(warnings.into_iter().map(|w| {
        Check::warn(
            "gateway",
            w,
            "the gateway starts without it; change config.yaml to silence this",
        )
    }));
    out
}

async fn probe(adapter: Arc<dyn PlatformAdapter>, offline: bool) -> Check {
    let name = adapter.name().to_string();
    if offline {
        return Check::ok(&name, "settings complete; server not checked (--offline)");
    }
    match tokio::time::timeout(PROBE_TIMEOUT, adapter.probe()).await {
        Ok(Ok(summary)) => Check::ok(&name, summary),
        Ok(Err(e)) => {
            let fix = probe_fix(&name, &e);
            Check::fail(&name, e.to_string(), fix)
        }
        Err(_) => Check::fail(
            &name,
            format!("no answer within {}s", PROBE_TIMEOUT.as_secs()),
            format!(
                "check the {name} server address and that it is up (`hermes doctor --offline` skips this)"
            ),
        ),
    }
}

fn config_fix(e: &PlatformConfigError, env_path: &std::path::Path) -> String {
    match e {
        PlatformConfigError::MissingCredential { platform, variable } => format!(
            "set {variable} in {} (or `platforms.{platform}.enabled: false` in config.yaml)",
            env_path.display()
        ),
        PlatformConfigError::Invalid { platform, .. } => {
            format!("correct platforms.{platform} in config.yaml (or its variables in .env)")
        }
        PlatformConfigError::Client { .. } => {
            "the TLS setup of this machine failed; see the error".into()
        }
    }
}

fn probe_fix(name: &str, e: &PlatformError) -> String {
    match e {
        PlatformError::Unauthorized { hint, .. } => format!("check {hint}"),
        PlatformError::Network { .. } => format!(
            "check the {name} server address in the settings and that it is up and reachable from here"
        ),
        PlatformError::RateLimited { .. } => "try again in a moment".into(),
        _ => format!("`hermes gateway` reports the same when {name} connects; see the error"),
    }
}
