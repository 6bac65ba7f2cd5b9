//! Cron inside the gateway: every `cron.tick_interval` seconds (60, as the Python Hermes) the
//! due jobs run, each in a fresh session of the gateway's runtime, under the same tick lock as
//! `hermes cron tick` (a crontab entry and the gateway never run a job twice); answers go to
//! their chats through [`super::delivery::CronDelivery`]. A wake (the API's "run now") ticks at
//! once instead of waiting for the interval. At shutdown a running job is
//! interrupted and recorded as such.

use std::sync::Arc;
use std::time::Duration;

use hermes_runtime::{Platform, Runtime, SessionSpec};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::delivery::CronDelivery;

/// The tick interval: `cron.tick_interval` seconds (at least 1), else 60.
pub fn interval(raw: &Value) -> Duration {
    let secs = raw
        .pointer("/cron/tick_interval")
        .and_then(Value::as_u64)
        .unwrap_or(60)
        .clamp(1, 86_400);
    Duration::from_secs(secs)
}

/// Runs due jobs on every tick, and whenever `wake` is notified, until `shutdown`.
pub async fn run(
    runtime: Runtime,
    base: SessionSpec,
    delivery: Arc<CronDelivery>,
    wake: Arc<Notify>,
    shutdown: CancellationToken,
) {
    let (store, warning) =
        hermes_runtime::cron::open_store(runtime.home(), runtime.config(), runtime.env());
    if let Some(w) = warning {
        runtime.warn(&w);
    }
    let base = SessionSpec {
        platform: Platform::Cron,
        ..base
    };
    let mut ticks = tokio::time::interval(interval(&runtime.config().raw));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
            _ = wake.notified() => {}
        }
        let mut report = |r: &hermes_runtime::cron::Report| {
            if r.outcome.success {
                tracing::info!("cron: {}", r.line());
            } else {
                tracing::warn!("cron: {}", r.line());
            }
        };
        match hermes_runtime::cron::tick(
            &runtime,
            &store,
            &base,
            delivery.as_ref(),
            &shutdown,
            &mut report,
        )
        .await
        {
            Ok(_) => {}
            Err(e) => tracing::warn!("cron: {e}"),
        }
    }
}
