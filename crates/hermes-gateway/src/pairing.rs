//! DM pairing, in the Python Hermes's files so a home moves between the two unchanged: an
//! unknown user who writes to the bot gets a one-time code; the owner approves it with
//! `hermes pairing approve PLATFORM CODE`, and from then on that user is authorised.
//!
//! Files under `$HERMES_HOME/platforms/pairing/` (or the legacy `pairing/` when it holds data),
//! each written atomically and owner-only: `{platform}-pending.json` (codes, stored only as a
//! salted SHA-256), `{platform}-approved.json` (user id → name, approval time) and
//! `_rate_limits.json`. The rules are Python's: 8 characters from an unambiguous alphabet,
//! codes expire after an hour, at most 3 pending per platform, one request per user per 10
//! minutes, and 5 wrong codes lock the platform's approvals for an hour.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// No 0/O or 1/I.
const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const CODE_LENGTH: usize = 8;
pub const CODE_TTL_SECONDS: f64 = 3600.0;
pub const RATE_LIMIT_SECONDS: f64 = 600.0;
pub const LOCKOUT_SECONDS: f64 = 3600.0;
pub const MAX_PENDING_PER_PLATFORM: usize = 3;
pub const MAX_FAILED_ATTEMPTS: u64 = 5;

#[derive(Debug, thiserror::Error)]
pub enum PairingError {
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no secure random source: {0}")]
    Random(String),
    #[error("`{0}` is not a platform name")]
    BadPlatform(String),
}

/// Why no code was issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCode {
    /// The user asked less than 10 minutes ago.
    RateLimited,
    /// Three codes are already waiting on this platform.
    TooManyPending,
    /// Too many wrong codes: approvals are locked for a while.
    LockedOut,
}

/// Why a code was not approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// No pending code matches (wrong, expired or already used).
    Unknown,
    LockedOut,
}

/// An approved user.
#[derive(Debug, Clone, PartialEq)]
pub struct Approved {
    pub platform: String,
    pub user_id: String,
    pub user_name: String,
    pub approved_at: f64,
}

/// A code waiting for the owner (only a prefix of its hash is shown, never the code).
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub platform: String,
    pub code_hint: String,
    pub user_id: String,
    pub user_name: String,
    pub age_minutes: u64,
}

/// The pairing store of one home. Safe to share between tasks.
#[derive(Debug)]
pub struct PairingStore {
    dir: PathBuf,
    lock: Mutex<()>,
    clock: fn() -> f64,
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl PairingStore {
    /// The store of the home at `home_root`: `platforms/pairing/`, or the legacy `pairing/`
    /// when that holds files (Python's rule, so an older install keeps its approvals).
    pub fn for_home(home_root: &Path) -> PairingStore {
        let legacy = home_root.join("pairing");
        let has_content = std::fs::read_dir(&legacy)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false);
        let dir = if has_content {
            legacy
        } else {
            home_root.join("platforms").join("pairing")
        };
        PairingStore::at(dir)
    }

    pub fn at(dir: PathBuf) -> PairingStore {
        PairingStore {
            dir,
            lock: Mutex::new(()),
            clock: now,
        }
    }

    /// The same store on another clock (tests of expiry and rate limits).
    pub fn with_clock(mut self, clock: fn() -> f64) -> PairingStore {
        self.clock = clock;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, ()> {
        self.lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn file(&self, platform: &str, kind: &str) -> Result<PathBuf, PairingError> {
        let ok = !platform.is_empty()
            && platform
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && !platform.starts_with('_');
        if !ok {
            return Err(PairingError::BadPlatform(platform.to_string()));
        }
        Ok(self.dir.join(format!("{platform}-{kind}.json")))
    }

    fn limits_path(&self) -> PathBuf {
        self.dir.join("_rate_limits.json")
    }

    /// Whether `user_id` is approved on `platform`.
    pub fn is_approved(&self, platform: &str, user_id: &str) -> bool {
        let Ok(path) = self.file(platform, "approved") else {
            return false;
        };
        read_map(&path).contains_key(user_id.trim())
    }

    /// Approved users, of one platform or of all.
    pub fn approved(&self, platform: Option<&str>) -> Vec<Approved> {
        let mut out = Vec::new();
        for p in self.platforms(platform, "approved") {
            let Ok(path) = self.file(&p, "approved") else {
                continue;
            };
            for (user_id, info) in read_map(&path) {
                out.push(Approved {
                    platform: p.clone(),
                    user_id,
                    user_name: text(&info, "user_name"),
                    approved_at: info
                        .get("approved_at")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0),
                });
            }
        }
        out
    }

    /// Codes waiting for approval (expired ones removed first).
    pub fn pending(&self, platform: Option<&str>) -> Result<Vec<Pending>, PairingError> {
        let _guard = self.guard();
        let now = (self.clock)();
        let mut out = Vec::new();
        for p in self.platforms(platform, "pending") {
            let path = self.file(&p, "pending")?;
            let pending = self.cleaned(&path, now)?;
            for info in pending.values() {
                let created = info
                    .get("created_at")
                    .and_then(Value::as_f64)
                    .unwrap_or(now);
                out.push(Pending {
                    platform: p.clone(),
                    code_hint: info
                        .get("hash")
                        .and_then(Value::as_str)
                        .map(|h| h.chars().take(8).collect())
                        .unwrap_or_else(|| "legacy".into()),
                    user_id: text(info, "user_id"),
                    user_name: text(info, "user_name"),
                    age_minutes: ((now - created).max(0.0) / 60.0) as u64,
                });
            }
        }
        Ok(out)
    }

    /// A new code for `user_id` on `platform`, or why not.
    pub fn issue(
        &self,
        platform: &str,
        user_id: &str,
        user_name: &str,
    ) -> Result<Result<String, NoCode>, PairingError> {
        let _guard = self.guard();
        let now = (self.clock)();
        let path = self.file(platform, "pending")?;
        let mut pending = self.cleaned(&path, now)?;
        let mut limits = read_map(&self.limits_path());
        if limits
            .get(&format!("_lockout:{platform}"))
            .and_then(Value::as_f64)
            .is_some_and(|until| now < until)
        {
            return Ok(Err(NoCode::LockedOut));
        }
        let user_id = user_id.trim();
        let rate_key = format!("{platform}:{user_id}");
        if limits
            .get(&rate_key)
            .and_then(Value::as_f64)
            .is_some_and(|last| now - last < RATE_LIMIT_SECONDS)
        {
            return Ok(Err(NoCode::RateLimited));
        }
        if pending.len() >= MAX_PENDING_PER_PLATFORM {
            return Ok(Err(NoCode::TooManyPending));
        }
        let mut random = [0u8; CODE_LENGTH + 16 + 8];
        fill_random(&mut random)?;
        let code: String = random[..CODE_LENGTH]
            .iter()
            .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
            .collect();
        let salt = &random[CODE_LENGTH..CODE_LENGTH + 16];
        let entry_id = hex(&random[CODE_LENGTH + 16..]);
        pending.insert(
            entry_id,
            json!({
                "hash": hash_code(&code, salt),
                "salt": hex(salt),
                "user_id": user_id,
                "user_name": user_name,
                "created_at": now,
            }),
        );
        write_map(&path, &pending)?;
        limits.insert(rate_key, json!(now));
        write_map(&self.limits_path(), &limits)?;
        Ok(Ok(code))
    }

    /// Approves `code` on `platform`: the user it was issued to becomes approved.
    pub fn approve(
        &self,
        platform: &str,
        code: &str,
    ) -> Result<Result<Approved, Rejected>, PairingError> {
        let _guard = self.guard();
        let now = (self.clock)();
        let path = self.file(platform, "pending")?;
        let mut pending = self.cleaned(&path, now)?;
        let mut limits = read_map(&self.limits_path());
        if limits
            .get(&format!("_lockout:{platform}"))
            .and_then(Value::as_f64)
            .is_some_and(|until| now < until)
        {
            return Ok(Err(Rejected::LockedOut));
        }
        let code = code.trim().to_ascii_uppercase();
        let matched = pending.iter().find_map(|(id, entry)| {
            let salt = entry.get("salt").and_then(Value::as_str).and_then(unhex)?;
            let stored = entry.get("hash").and_then(Value::as_str)?;
            constant_time_eq(hash_code(&code, &salt).as_bytes(), stored.as_bytes())
                .then(|| (id.clone(), entry.clone()))
        });
        let Some((id, entry)) = matched else {
            let key = format!("_failures:{platform}");
            let fails = limits.get(&key).and_then(Value::as_u64).unwrap_or(0) + 1;
            if fails >= MAX_FAILED_ATTEMPTS {
                limits.insert(format!("_lockout:{platform}"), json!(now + LOCKOUT_SECONDS));
                limits.insert(key, json!(0));
            } else {
                limits.insert(key, json!(fails));
            }
            write_map(&self.limits_path(), &limits)?;
            return Ok(Err(Rejected::Unknown));
        };
        pending.remove(&id);
        write_map(&path, &pending)?;
        let approved = Approved {
            platform: platform.to_string(),
            user_id: text(&entry, "user_id"),
            user_name: text(&entry, "user_name"),
            approved_at: now,
        };
        let approved_path = self.file(platform, "approved")?;
        let mut all = read_map(&approved_path);
        all.insert(
            approved.user_id.clone(),
            json!({"user_name": approved.user_name, "approved_at": now}),
        );
        write_map(&approved_path, &all)?;
        Ok(Ok(approved))
    }

    /// Removes an approved user; false when there was none.
    pub fn revoke(&self, platform: &str, user_id: &str) -> Result<bool, PairingError> {
        let _guard = self.guard();
        let path = self.file(platform, "approved")?;
        let mut all = read_map(&path);
        if all.remove(user_id.trim()).is_none() {
            return Ok(false);
        }
        write_map(&path, &all)?;
        Ok(true)
    }

    /// The platforms with files of `kind`, or just `only`.
    fn platforms(&self, only: Option<&str>, kind: &str) -> Vec<String> {
        if let Some(p) = only {
            return vec![p.to_string()];
        }
        let suffix = format!("-{kind}.json");
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .filter_map(|n| n.strip_suffix(&suffix).map(str::to_string))
                    .filter(|p| !p.starts_with('_'))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The pending codes of `path` with the expired (and malformed) ones removed and saved.
    fn cleaned(&self, path: &Path, now: f64) -> Result<BTreeMap<String, Value>, PairingError> {
        let mut pending = read_map(path);
        let before = pending.len();
        pending.retain(|_, info| {
            info.get("created_at")
                .and_then(Value::as_f64)
                .is_some_and(|created| now - created <= CODE_TTL_SECONDS)
        });
        if pending.len() != before {
            write_map(path, &pending)?;
        }
        Ok(pending)
    }
}

fn text(info: &Value, key: &str) -> String {
    info.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A JSON object file as a map (missing, unreadable or malformed: empty, as Python reads it).
fn read_map(path: &Path) -> BTreeMap<String, Value> {
    let Ok(bytes) = std::fs::read(path) else {
        return BTreeMap::new();
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => map.into_iter().collect(),
        _ => BTreeMap::new(),
    }
}

/// Writes atomically (temp file + rename), owner-only, indented like Python's `indent=2`.
fn write_map(path: &Path, map: &BTreeMap<String, Value>) -> Result<(), PairingError> {
    let object: Map<String, Value> = map.clone().into_iter().collect();
    let text = serde_json::to_string_pretty(&Value::Object(object)).unwrap_or_default();
    let error = |source| PairingError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(error)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(error)?;
    use std::io::Write;
    tmp.write_all(text.as_bytes()).map_err(error)?;
    tmp.as_file().sync_all().map_err(error)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o600))
            .map_err(error)?;
    }
    tmp.persist(path).map_err(|e| error(e.error))?;
    Ok(())
}

fn hash_code(code: &str, salt: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(code.as_bytes());
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// Bytes from the operating system's secure random source.
fn fill_random(buf: &mut [u8]) -> Result<(), PairingError> {
    use ring::rand::SecureRandom;
    ring::rand::SystemRandom::new()
        .fill(buf)
        .map_err(|e| PairingError::Random(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, PairingStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = PairingStore::for_home(dir.path());
        (dir, store)
    }

    #[test]
    fn a_code_approves_its_user_once() {
        let (_dir, store) = store();
        let code = store.issue("telegram", "42", "alice").unwrap().unwrap();
        assert_eq!(code.len(), 8);
        assert!(code.bytes().all(|b| ALPHABET.contains(&b)));
        assert!(!store.is_approved("telegram", "42"));
        let pending = std::fs::read_to_string(store.dir().join("telegram-pending.json")).unwrap();
        assert!(!pending.contains(&code), "codes are never stored in clear");
        let approved = store
            .approve("telegram", &code.to_lowercase())
            .unwrap()
            .unwrap();
        assert_eq!(
            (approved.user_id.as_str(), approved.user_name.as_str()),
            ("42", "alice")
        );
        assert!(store.is_approved("telegram", "42"));
        assert!(!store.is_approved("discord", "42"));
        assert_eq!(
            store.approve("telegram", &code).unwrap(),
            Err(Rejected::Unknown),
            "a code works once"
        );
        assert!(store.revoke("telegram", "42").unwrap());
        assert!(!store.is_approved("telegram", "42"));
    }

    #[test]
    fn rate_limits_pending_caps_and_lockout() {
        let (_dir, store) = store();
        assert!(store.issue("slack", "u1", "").unwrap().is_ok());
        assert_eq!(
            store.issue("slack", "u1", "").unwrap(),
            Err(NoCode::RateLimited)
        );
        assert!(store.issue("slack", "u2", "").unwrap().is_ok());
        assert!(store.issue("slack", "u3", "").unwrap().is_ok());
        assert_eq!(
            store.issue("slack", "u4", "").unwrap(),
            Err(NoCode::TooManyPending)
        );
        for _ in 0..MAX_FAILED_ATTEMPTS {
            assert_eq!(
                store.approve("slack", "WRONGONE").unwrap(),
                Err(Rejected::Unknown)
            );
        }
        assert_eq!(
            store.approve("slack", "WRONGONE").unwrap(),
            Err(Rejected::LockedOut)
        );
        assert_eq!(
            store.issue("slack", "u9", "").unwrap(),
            Err(NoCode::LockedOut)
        );
    }

    #[test]
    fn expired_codes_are_dropped() {
        fn past() -> f64 {
            1_000.0
        }
        let dir = tempfile::tempdir().unwrap();
        let old = PairingStore::for_home(dir.path()).with_clock(past);
        let code = old.issue("discord", "7", "bob").unwrap().unwrap();
        let later = PairingStore::for_home(dir.path());
        assert!(later.pending(None).unwrap().is_empty());
        assert_eq!(
            later.approve("discord", &code).unwrap(),
            Err(Rejected::Unknown)
        );
    }

    #[test]
    fn the_python_files_are_read_and_written_alike() {
        let dir = tempfile::tempdir().unwrap();
        let pairing = dir.path().join("pairing");
        std::fs::create_dir_all(&pairing).unwrap();
        // What the Python Hermes wrote: an approved user in the legacy directory.
        std::fs::write(
            pairing.join("telegram-approved.json"),
            "{\n  \"123\": {\n    \"user_name\": \"Ann\",\n    \"approved_at\": 1764547200.5\n  }\n}",
        )
        .unwrap();
        let store = PairingStore::for_home(dir.path());
        assert_eq!(
            store.dir(),
            pairing.as_path(),
            "a legacy dir with data is kept"
        );
        assert!(store.is_approved("telegram", "123"));
        let listed = store.approved(None);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].user_name, "Ann");
        assert!(store.file("../x", "pending").is_err());
    }
}
