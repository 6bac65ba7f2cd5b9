//! Backoff between retries of a model call: exponential from a base, capped, with up to 50 %
//! random jitter so that many clients do not retry in lockstep; a server's `Retry-After` wins.

use std::time::Duration;

/// The longest `Retry-After` we are willing to wait.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    pub base: Duration,
    pub cap: Duration,
    /// Fraction of the delay added at random (0.5 = up to +50 %).
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base: Duration::from_secs(5),
            cap: Duration::from_secs(120),
            jitter: 0.5,
        }
    }
}

impl RetryPolicy {
    /// From config seconds; negative or non-finite values fall back to the defaults.
    pub fn from_settings(max_retries: u32, base_secs: f64, cap_secs: f64) -> RetryPolicy {
        let secs = |v: f64, fallback: Duration| {
            if v.is_finite() && v >= 0.0 {
                Duration::from_secs_f64(v.min(86_400.0))
            } else {
                fallback
            }
        };
        let d = RetryPolicy::default();
        RetryPolicy {
            max_retries,
            base: secs(base_secs, d.base),
            cap: secs(cap_secs, d.cap),
            jitter: d.jitter,
        }
    }

    /// The wait before retry number `retry` (0 = the first retry). `random` is a number in
    /// [0, 1) that picks the jitter.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, random: f64) -> Duration {
        if let Some(server_says) = retry_after {
            return server_says.min(MAX_RETRY_AFTER);
        }
        let exp = self
            .base
            .saturating_mul(2u32.saturating_pow(retry.min(20)))
            .min(self.cap);
        let jitter = exp.mul_f64(self.jitter.clamp(0.0, 1.0) * random.clamp(0.0, 1.0));
        exp + jitter
    }
}

/// A jitter source good enough for backoff (not for anything secret).
pub fn jitter_random() -> f64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x = u64::from(nanos) ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_doubles_from_the_base_up_to_the_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(0, None, 0.0), Duration::from_secs(5));
        assert_eq!(p.delay(1, None, 0.0), Duration::from_secs(10));
        assert_eq!(p.delay(2, None, 0.0), Duration::from_secs(20));
        assert_eq!(p.delay(10, None, 0.0), Duration::from_secs(120));
    }

    #[test]
    fn jitter_adds_at_most_half() {
        let p = RetryPolicy::default();
        let d = p.delay(0, None, 0.999_999);
        assert!(
            d > Duration::from_secs(7) && d < Duration::from_millis(7_501),
            "{d:?}"
        );
        for _ in 0..100 {
            let r = jitter_random();
            assert!((0.0..1.0).contains(&r));
        }
    }

    #[test]
    fn retry_after_wins_but_is_bounded() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(3, Some(Duration::from_secs(1)), 0.9),
            Duration::from_secs(1)
        );
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(99_999)), 0.0),
            MAX_RETRY_AFTER
        );
    }

    #[test]
    fn bad_settings_fall_back() {
        let p = RetryPolicy::from_settings(2, -1.0, f64::NAN);
        assert_eq!(p.base, Duration::from_secs(5));
        assert_eq!(p.cap, Duration::from_secs(120));
        assert_eq!(p.max_retries, 2);
    }
}
