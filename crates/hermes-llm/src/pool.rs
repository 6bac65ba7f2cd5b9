//! Credential pools: several API keys for one provider (`credential_pool:` in config.yaml, or
//! `<KEY_ENV>_1..n` in the environment), chosen by a strategy (fill_first, round_robin, random,
//! least_used). A key that fails cools down (401: 5 min; 429: 1 h or Retry-After; other: 1 h)
//! and the next one is used. Cooldowns and use counts persist in
//! `$HERMES_HOME/credential_pool.json`, keyed by a fingerprint, never by the key itself.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::{ChatRequest, ErrorClass, EventStream, LlmError, Provider};

/// How the next key is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Use the first usable key until it fails.
    #[default]
    FillFirst,
    RoundRobin,
    Random,
    LeastUsed,
}

impl Strategy {
    pub fn parse(s: &str) -> Option<Strategy> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "fill_first" => Some(Strategy::FillFirst),
            "round_robin" => Some(Strategy::RoundRobin),
            "random" => Some(Strategy::Random),
            "least_used" => Some(Strategy::LeastUsed),
            _ => None,
        }
    }
}

/// Cooldown after a failure of this class.
pub fn cooldown(class: ErrorClass, retry_after: Option<Duration>) -> Duration {
    match class {
        ErrorClass::Auth => Duration::from_secs(5 * 60),
        ErrorClass::RateLimit => retry_after.unwrap_or(Duration::from_secs(3600)),
        _ => Duration::from_secs(3600),
    }
}

/// Persisted state of one key.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
struct KeyState {
    /// Unix seconds until which the key is not used.
    cooldown_until: u64,
    uses: u64,
}

/// One provider's keys and their state.
pub struct CredentialPool {
    provider: String,
    keys: Vec<String>,
    strategy: Strategy,
    state_path: Option<PathBuf>,
    inner: Mutex<PoolState>,
}

#[derive(Default)]
struct PoolState {
    keys: Vec<KeyState>,
    cursor: usize,
    /// The key of the last request (what a failure is blamed on).
    last: usize,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A stable, non-reversible name for a key in the state file.
fn fingerprint(key: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

type StateFile = BTreeMap<String, BTreeMap<String, KeyState>>;

impl CredentialPool {
    /// A pool over `keys` (deduplicated, order kept). `state_path` persists cooldowns.
    pub fn new(
        provider: &str,
        keys: Vec<String>,
        strategy: Strategy,
        state_path: Option<PathBuf>,
    ) -> Self {
        let mut unique: Vec<String> = Vec::new();
        for k in keys.into_iter().filter(|k| !k.trim().is_empty()) {
            if !unique.contains(&k) {
                unique.push(k);
            }
        }
        let saved = state_path.as_ref().map(load_state).unwrap_or_default();
        let mine = saved.get(provider).cloned().unwrap_or_default();
        let states = unique
            .iter()
            .map(|k| mine.get(&fingerprint(k)).copied().unwrap_or_default())
            .collect();
        CredentialPool {
            provider: provider.to_string(),
            keys: unique,
            strategy,
            state_path,
            inner: Mutex::new(PoolState {
                keys: states,
                ..PoolState::default()
            }),
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Picks the key for the next request: `(index, key)`; `None` when every key cools down.
    pub fn pick(&self) -> Option<(usize, String)> {
        let mut st = self.inner.lock().ok()?;
        let t = now();
        let usable: Vec<usize> = (0..self.keys.len())
            .filter(|&i| st.keys[i].cooldown_until <= t)
            .collect();
        let chosen = match self.strategy {
            Strategy::FillFirst => usable.first().copied(),
            Strategy::RoundRobin => {
                let c = st.cursor;
                let next = usable
                    .iter()
                    .copied()
                    .find(|&i| i >= c)
                    .or(usable.first().copied());
                if let Some(i) = next {
                    st.cursor = i + 1;
                }
                next
            }
            Strategy::Random => (!usable.is_empty()).then(|| {
                usable
                    [(crate::retry::jitter_random() * usable.len() as f64) as usize % usable.len()]
            }),
            Strategy::LeastUsed => usable.iter().copied().min_by_key(|&i| st.keys[i].uses),
        }?;
        st.keys[chosen].uses += 1;
        st.last = chosen;
        Some((chosen, self.keys[chosen].clone()))
    }

    /// Cools down the key of the last request after a failure; true when another key is
    /// usable now.
    pub fn report_failure(&self, class: ErrorClass, retry_after: Option<Duration>) -> bool {
        let Ok(mut st) = self.inner.lock() else {
            return false;
        };
        let last = st.last;
        if let Some(k) = st.keys.get_mut(last) {
            k.cooldown_until = now() + cooldown(class, retry_after).as_secs();
        }
        let t = now();
        let other = st.keys.iter().any(|k| k.cooldown_until <= t);
        let snapshot = st.keys.clone();
        drop(st);
        self.save(&snapshot);
        other
    }

    fn save(&self, states: &[KeyState]) {
        let Some(path) = &self.state_path else { return };
        let mut all = load_state(path);
        let mine = all.entry(self.provider.clone()).or_default();
        for (k, s) in self.keys.iter().zip(states) {
            mine.insert(fingerprint(k), *s);
        }
        if let Ok(text) = serde_json::to_vec_pretty(&all) {
            // Losing a cooldown is harmless; never fail a request over it.
            let _ = hermes_config::atomic_write(path, &text);
        }
    }
}

fn load_state(path: &PathBuf) -> StateFile {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Makes the provider for one key.
type BuildForKey = Box<dyn Fn(&str) -> Result<Arc<dyn Provider>, LlmError> + Send + Sync>;

/// A provider drawing its key from a pool: one inner provider per key, built on first use.
pub struct PooledProvider {
    pool: Arc<CredentialPool>,
    build: BuildForKey,
    built: Mutex<BTreeMap<usize, Arc<dyn Provider>>>,
    name: String,
    endpoint: String,
}

impl PooledProvider {
    /// `build` makes the provider for one key.
    pub fn new(
        pool: Arc<CredentialPool>,
        name: &str,
        endpoint: &str,
        build: impl Fn(&str) -> Result<Arc<dyn Provider>, LlmError> + Send + Sync + 'static,
    ) -> Self {
        PooledProvider {
            pool,
            build: Box::new(build),
            built: Mutex::new(BTreeMap::new()),
            name: name.to_string(),
            endpoint: endpoint.to_string(),
        }
    }

    fn provider_for(&self, index: usize, key: &str) -> Result<Arc<dyn Provider>, LlmError> {
        let mut built = self
            .built
            .lock()
            .map_err(|_| LlmError::Config("credential pool lock poisoned".into()))?;
        if let Some(p) = built.get(&index) {
            return Ok(p.clone());
        }
        let p = (self.build)(key)?;
        built.insert(index, p.clone());
        Ok(p)
    }
}

#[async_trait::async_trait]
impl Provider for PooledProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        let (index, key) = self.pool.pick().ok_or_else(|| LlmError::Http {
            status: 429,
            message: format!(
                "every API key of `{}` is cooling down after failures",
                self.pool.provider
            ),
            retry_after: None,
        })?;
        self.provider_for(index, &key)?.stream(request).await
    }

    fn rotate_credential(&self, error: &LlmError) -> Option<String> {
        let class = error.class();
        if !matches!(
            class,
            ErrorClass::Auth | ErrorClass::RateLimit | ErrorClass::Billing
        ) || self.pool.len() < 2
        {
            return None;
        }
        self.pool
            .report_failure(class, error.retry_after())
            .then(|| {
                format!(
                    "switching to another `{}` API key after {}",
                    self.pool.provider,
                    class.as_str()
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("k{i}")).collect()
    }

    #[test]
    fn strategies_choose_as_named() {
        let p = CredentialPool::new("x", keys(3), Strategy::FillFirst, None);
        assert_eq!(p.pick().unwrap().1, "k0");
        assert_eq!(p.pick().unwrap().1, "k0");
        let p = CredentialPool::new("x", keys(3), Strategy::RoundRobin, None);
        let order: Vec<String> = (0..4).map(|_| p.pick().unwrap().1).collect();
        assert_eq!(order, ["k0", "k1", "k2", "k0"]);
        let p = CredentialPool::new("x", keys(2), Strategy::LeastUsed, None);
        p.pick();
        assert_eq!(p.pick().unwrap().1, "k1");
        let p = CredentialPool::new("x", keys(2), Strategy::Random, None);
        assert!(p.pick().is_some());
    }

    #[test]
    fn failures_cool_a_key_down_and_persist() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("credential_pool.json");
        let p = CredentialPool::new(
            "openrouter",
            keys(2),
            Strategy::FillFirst,
            Some(path.clone()),
        );
        assert_eq!(p.pick().unwrap().1, "k0");
        assert!(p.report_failure(ErrorClass::Auth, None));
        assert_eq!(p.pick().unwrap().1, "k1");
        assert!(!p.report_failure(ErrorClass::RateLimit, Some(Duration::from_secs(30))));
        assert!(p.pick().is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("k0"), "keys are never written: {text}");
        // A new process sees the cooldowns.
        let again = CredentialPool::new("openrouter", keys(2), Strategy::FillFirst, Some(path));
        assert!(again.pick().is_none());
    }

    #[test]
    fn cooldowns_follow_the_error_class() {
        assert_eq!(cooldown(ErrorClass::Auth, None), Duration::from_secs(300));
        assert_eq!(
            cooldown(ErrorClass::RateLimit, None),
            Duration::from_secs(3600)
        );
        assert_eq!(
            cooldown(ErrorClass::RateLimit, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            cooldown(ErrorClass::Billing, None),
            Duration::from_secs(3600)
        );
    }
}
