//! The external memory provider a session gets: `memory.provider` in config.yaml names one
//! of [`PROVIDERS`] (at most one is attached, beside the built-in files). A provider that is
//! unknown, unconfigured or cannot open its store is a warning: the session runs on the
//! built-in memory alone. Honcho is left out of cron jobs and sub-agents, as in Python (a
//! job's prompts would distort the user's model).

use std::sync::Arc;

use hermes_core::memory::provider::MemoryProvider;

use crate::honcho::{HonchoConfig, HonchoProvider, SessionOrigin};
use crate::{Platform, Runtime, SessionSpec};

/// The provider names this build can attach.
pub const PROVIDERS: &[&str] = &["holographic", "honcho"];

/// The name `memory.provider` gives, trimmed; empty when none.
pub fn configured_name(raw: &serde_json::Value) -> &str {
    raw.pointer("/memory/provider")
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .unwrap_or("")
}

/// The provider for a session of `spec` stored as `session_id`, warnings through `runtime`.
pub fn select(
    runtime: &Runtime,
    spec: &SessionSpec,
    session_id: &str,
) -> Option<Arc<dyn MemoryProvider>> {
    let raw = &runtime.config().raw;
    match configured_name(raw) {
        "honcho" => {
            if matches!(spec.platform, Platform::Cron | Platform::Subagent) {
                return None;
            }
            let cfg = match HonchoConfig::resolve(runtime.home(), runtime.env()) {
                Ok(cfg) => cfg,
                Err(e) => {
                    runtime.warn(&format!("memory provider `honcho` not attached: {e}"));
                    return None;
                }
            };
            let origin = SessionOrigin {
                cwd: &spec.cwd,
                session_id,
                chat_key: spec.chat_key.as_deref().or(spec.memory_scope.as_deref()),
            };
            let user = spec.origin.as_ref().and_then(|o| o.user_id.as_deref());
            match HonchoProvider::new(cfg, &origin, user, runtime.home().join("memories")) {
                Ok(p) => Some(Arc::new(p)),
                Err(e) => {
                    runtime.warn(&e.to_string());
                    None
                }
            }
        }
        _ => {
            match crate::holographic::from_config(raw, runtime.home(), spec.memory_scope.as_deref())
            {
                Ok(None) => None,
                Ok(Some(provider)) => Some(provider),
                Err(e) => {
                    runtime.warn(&e.to_string());
                    None
                }
            }
        }
    }
}
