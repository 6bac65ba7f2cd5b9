//! Shared helpers of the platform adapter tests: settings from YAML and variables (never the
//! process environment), the adapter run on its own task with a shutdown token, and waits
//! with deadlines.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hermes_config::{Config, Environment};
use hermes_gateway::platform::{
    InboundEvent, InboundMessage, PlatformAdapter, PlatformSettings, PlatformsConfig,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The settings of `platform` from a config.yaml text and variables.
pub fn platform_settings(
    platform: &str,
    yaml: &str,
    vars: &[(&str, &str)],
) -> (PlatformSettings, Environment) {
    let env = Environment::isolated(vars.iter().copied());
    let config = Config::from_yaml(Path::new("/home/config.yaml"), yaml, &env).unwrap();
    let platforms = PlatformsConfig::load(&config, &env);
    (platforms.get(platform).unwrap().clone(), env)
}

/// An adapter running on its own task.
pub struct Running {
    pub events: mpsc::Receiver<InboundEvent>,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<()>,
}

impl Running {
    pub fn start(adapter: Arc<dyn PlatformAdapter>) -> Running {
        let (tx, events) = mpsc::channel(16);
        let shutdown = CancellationToken::new();
        let token = shutdown.clone();
        let task = tokio::spawn(async move { adapter.run(tx, token).await });
        Running {
            events,
            shutdown,
            task,
        }
    }

    /// The next event (panics after 20 s: the test failed).
    pub async fn next(&mut self) -> InboundEvent {
        match tokio::time::timeout(Duration::from_secs(20), self.events.recv()).await {
            Ok(Some(e)) => e,
            Ok(None) => panic!("the adapter closed its channel"),
            Err(_) => panic!("no event within 20 s"),
        }
    }

    pub async fn next_message(&mut self) -> InboundMessage {
        match self.next().await {
            InboundEvent::Message(m) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// An event arriving within `d`, if any (to show that none comes).
    pub async fn maybe_next(&mut self, d: Duration) -> Option<InboundEvent> {
        tokio::time::timeout(d, self.events.recv())
            .await
            .ok()
            .flatten()
    }

    /// Stops the adapter and waits until `run` returned.
    pub async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("run returns after shutdown")
            .expect("run does not panic");
    }
}

/// Polls `cond` every 10 ms until it holds; panics after 20 s.
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
