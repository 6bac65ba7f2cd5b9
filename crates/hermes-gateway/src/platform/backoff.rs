//! Reconnect delays: exponential from 1 s to a cap, with up to 50 % random jitter so many
//! gateways (or many adapters) do not hammer a platform in step, reset once a connection has
//! held. Waits end early on shutdown.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The delay sequence of one adapter's reconnect loop.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    attempt: u32,
}

impl Backoff {
    pub fn new(base: Duration, cap: Duration) -> Backoff {
        Backoff {
            base,
            cap,
            attempt: 0,
        }
    }

    /// 1 s doubling up to 60 s: for transient failures.
    pub fn transient() -> Backoff {
        Backoff::new(Duration::from_secs(1), Duration::from_secs(60))
    }

    /// The next delay (and counts an attempt).
    pub fn next_delay(&mut self) -> Duration {
        let exp = self
            .base
            .saturating_mul(2u32.saturating_pow(self.attempt.min(16)));
        self.attempt = self.attempt.saturating_add(1);
        let capped = exp.min(self.cap);
        // Jitter: 50..100 % of the delay.
        capped.mul_f64(0.5 + fastrand::f64() * 0.5)
    }

    /// After a connection that worked: start from the base again.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    /// Sleeps the next delay; false when shutdown came first.
    pub async fn wait(&mut self, shutdown: &CancellationToken) -> bool {
        sleep_or_shutdown(self.next_delay(), shutdown).await
    }
}

/// Sleeps `d`; false when shutdown came first.
pub async fn sleep_or_shutdown(d: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        _ = shutdown.cancelled() => false,
        _ = tokio::time::sleep(d) => true,
    }
}

/// The delay while an adapter's problem is one retrying cannot fix (rejected token): retried
/// rarely, in case the platform was wrong.
pub const FATAL_RETRY: Duration = Duration::from_secs(300);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_to_the_cap_with_jitter_and_reset() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(8));
        let delays: Vec<Duration> = (0..6).map(|_| b.next_delay()).collect();
        for (i, d) in delays.iter().enumerate() {
            let full = Duration::from_secs((1u64 << i).min(8));
            assert!(*d >= full / 2 && *d <= full, "{i}: {d:?}");
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_secs(1));
    }
}
