//! The external memory provider a session gets: `memory.provider` in config.yaml names one
//! of [`PROVIDERS`] (at most one is attached, beside the built-in files). A provider that is
//! unknown, unconfigured or cannot open its store is a warning: the session runs on the
//! built-in memory alone. Honcho is left out of cron jobs and sub-agents, as in Python (a
//! job's prompts would distort the user's model).

use std::sync::Arc;

use hermes_core::memory::provider::MemoryProvider;

use crate::honcho::{HonchoConfig, HonchoProvider, QueryRewriter, SessionOrigin};
use crate::providers::Providers;
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
    providers: &Providers,
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
            let rewriter = if cfg.query_rewrite {
                match query_rewriter(runtime, providers) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        runtime.warn(&format!("honcho queryRewrite is off: {e}"));
                        None
                    }
                }
            } else {
                None
            };
            let memories = runtime.home().join("memories");
            match HonchoProvider::new(cfg, &origin, user, memories, rewriter) {
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

/// The `memory_query_rewrite` auxiliary task's model (else the session's) and its timeout
/// (`auxiliary.memory_query_rewrite.timeout`, 8 s by default).
fn query_rewriter(
    runtime: &Runtime,
    providers: &Providers,
) -> Result<QueryRewriter, crate::SessionError> {
    let config = runtime.config();
    let target = crate::providers::auxiliary(
        config,
        runtime.env(),
        runtime.home(),
        "memory_query_rewrite",
        &providers.primary,
        &providers.spec.model,
    )?;
    let timeout = config
        .raw
        .pointer("/auxiliary/memory_query_rewrite/timeout")
        .and_then(|v| v.as_f64().or_else(|| v.as_str()?.trim().parse().ok()))
        .filter(|t| *t > 0.0)
        .unwrap_or(8.0)
        .min(120.0);
    Ok(QueryRewriter::new(
        target,
        std::time::Duration::from_secs_f64(timeout),
    ))
}
