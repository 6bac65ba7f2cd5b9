//! Doctor's check of the Honcho memory provider (`memory.provider: honcho`): its settings
//! resolve and name a server with a key (or a self-hosted one), and the server answers the
//! workspace call with those credentials (skipped with `--offline`). No line for other
//! providers.

use hermes_runtime::honcho::{Api, HonchoConfig};

use super::{Check, Loaded};

pub(super) async fn honcho_check(loaded: &Loaded, offline: bool) -> Option<Check> {
    if hermes_runtime::memory_providers::configured_name(&loaded.config.raw) != "honcho" {
        return None;
    }
    let cfg = match HonchoConfig::resolve(&loaded.home, &loaded.env) {
        Ok(cfg) => cfg,
        Err(e) => {
            return Some(Check::fail(
                "honcho",
                e.to_string(),
                "fix the file, or `hermes honcho status` to see where settings come from",
            ));
        }
    };
    if !cfg.usable() {
        let why = if cfg.enabled {
            "no API key and no self-hosted baseUrl"
        } else {
            "turned off for this host"
        };
        return Some(Check::warn(
            "honcho",
            format!("memory.provider is honcho but Honcho is not configured ({why})"),
            "add HONCHO_API_KEY=... to .env (Honcho cloud) or {\"baseUrl\": \"http://HOST:8000\"} to \
             $HERMES_HOME/honcho.json (self-hosted); `hermes honcho enable` if it was turned off",
        ));
    }
    let at = format!("{} (workspace {})", cfg.base_url, cfg.workspace);
    if offline {
        return Some(Check::ok("honcho", format!("{at} not checked (--offline)")));
    }
    let checked = match Api::shared(
        &cfg.base_url,
        cfg.effective_api_key(),
        &cfg.workspace,
        cfg.timeout.min(std::time::Duration::from_secs(10)),
    ) {
        Ok(api) => api.check().await,
        Err(e) => Err(e),
    };
    Some(match checked {
        Ok(()) => Check::ok("honcho", format!("{at}: reachable")),
        Err(e) => Check::fail(
            "honcho",
            format!("{at}: {e}"),
            "check the key (`hermes honcho status` shows its last characters) and that the server \
             is up; until then sessions run without Honcho",
        ),
    })
}
