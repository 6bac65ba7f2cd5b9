//! `$HERMES_HOME/auth.json`, the file in which the Python Hermes keeps its OAuth sign-ins (Nous
//! Portal, OpenAI Codex / ChatGPT): `{"version": 1, "providers": {"<id>": {...}},
//! "active_provider": "<id>", "updated_at": "<ISO time>"}`, every other key kept as it is.
//! Reads and writes take the Python Hermes's lock (an exclusive `flock` on
//! `$HERMES_HOME/auth.lock`, waited for at most 15 s), so both programs can share one home
//! while tokens rotate. Writes are atomic (a 0600 temporary file renamed over the old one).
//! Also here: the ISO timestamps the file uses and reading the claims of a JWT.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{Map, Value, json};

/// The only version of the file there is.
pub const AUTH_STORE_VERSION: u64 = 1;
/// The Python Hermes's wait for the lock.
const LOCK_TIMEOUT: Duration = Duration::from_secs(15);
/// Larger files are not credentials: refused rather than read.
const MAX_FILE: u64 = 4 * 1024 * 1024;

/// Failures around `auth.json` and the sign-ins it holds.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not valid JSON ({detail}); fix or remove it, then sign in again", .path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("timed out waiting for the lock on {} (another hermes is refreshing a token?)", .path.display())]
    Locked { path: PathBuf },
    #[error("not signed in to {provider}: run `hermes login {login}`{alternative}")]
    NotSignedIn {
        provider: &'static str,
        login: &'static str,
        alternative: &'static str,
    },
    /// The token endpoint refused; `relogin` when only a new sign-in can fix it.
    #[error("{provider} token refresh failed: {message}{}", if *.relogin { "; sign in again with `hermes login`" } else { "" })]
    Refresh {
        provider: &'static str,
        message: String,
        relogin: bool,
    },
    /// The sign-in flow could not complete.
    #[error("{provider} sign-in failed: {message}")]
    Login {
        provider: &'static str,
        message: String,
    },
    /// The authorization server could not be reached.
    #[error("cannot reach {url}: {detail}")]
    Transport { url: String, detail: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AuthError + '_ {
    move |source| AuthError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The `auth.json` of one home.
#[derive(Debug, Clone)]
pub struct AuthStore {
    path: PathBuf,
    lock_path: PathBuf,
}

impl AuthStore {
    /// The store of the home at `home_root`.
    pub fn for_home(home_root: &Path) -> AuthStore {
        AuthStore {
            path: home_root.join("auth.json"),
            lock_path: home_root.join("auth.lock"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole document (an empty store when the file does not exist).
    pub fn read(&self) -> Result<Value, AuthError> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(empty()),
            Err(e) => return Err(io(&self.path)(e)),
        };
        let len = file.metadata().map_err(io(&self.path))?.len();
        if len > MAX_FILE {
            return Err(AuthError::Corrupt {
                path: self.path.clone(),
                detail: format!("{len} bytes is too large for a credentials file"),
            });
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_FILE), &mut text)
            .map_err(io(&self.path))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| AuthError::Corrupt {
            path: self.path.clone(),
            detail: e.to_string(),
        })?;
        Ok(normalise(value))
    }

    /// The saved state of one provider (`providers.<id>`), if any.
    pub fn provider_state(&self, id: &str) -> Result<Option<Map<String, Value>>, AuthError> {
        Ok(provider_state(&self.read()?, id))
    }

    /// Runs `body` holding the store's lock (the Python Hermes's `auth.lock`), waiting at most
    /// 15 s for it. Everything read and written inside is one transaction.
    pub async fn locked<R, F, Fut>(&self, body: F) -> Result<R, AuthError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<R, AuthError>>,
    {
        if let Some(dir) = self.lock_path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.lock_path)
            .map_err(io(&self.lock_path))?;
        let mut lock = fd_lock::RwLock::new(file);
        let deadline = tokio::time::Instant::now() + LOCK_TIMEOUT;
        loop {
            match lock.try_write() {
                Ok(guard) => {
                    let result = body().await;
                    drop(guard);
                    return result;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(io(&self.lock_path)(e)),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(AuthError::Locked {
                    path: self.lock_path.clone(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Writes the document as the Python Hermes does: `version` and `updated_at` set, two-space
    /// indented JSON and a final newline, through a 0600 temporary file renamed over the old.
    /// Call it inside [`AuthStore::locked`].
    pub fn write(&self, doc: &mut Value) -> Result<(), AuthError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        if let Some(map) = doc.as_object_mut() {
            map.insert("version".into(), json!(AUTH_STORE_VERSION));
            map.insert("updated_at".into(), json!(iso_utc(SystemTime::now())));
        }
        let mut text = serde_json::to_string_pretty(doc).map_err(|e| AuthError::Corrupt {
            path: self.path.clone(),
            detail: e.to_string(),
        })?;
        text.push('\n');
        // tempfile creates the file readable by its owner only.
        let mut tmp = tempfile::Builder::new()
            .prefix("auth.json.tmp.")
            .tempfile_in(dir)
            .map_err(io(dir))?;
        tmp.write_all(text.as_bytes()).map_err(io(&self.path))?;
        tmp.as_file().sync_all().map_err(io(&self.path))?;
        tmp.persist(&self.path)
            .map_err(|e| io(&self.path)(e.error))?;
        set_owner_only(&self.path).map_err(io(&self.path))?;
        Ok(())
    }

    /// Reads the document for an update; a damaged file is kept next to it
    /// (`auth.json.corrupt`) and the update starts from an empty store, as the Python Hermes
    /// does.
    pub fn read_for_update(&self) -> Result<Value, AuthError> {
        match self.read() {
            Err(AuthError::Corrupt { .. }) => {
                let backup = self.path.with_extension("json.corrupt");
                std::fs::copy(&self.path, &backup).map_err(io(&backup))?;
                Ok(empty())
            }
            other => other,
        }
    }
}

/// `providers.<id>` of a document.
pub fn provider_state(doc: &Value, id: &str) -> Option<Map<String, Value>> {
    doc.get("providers")?.get(id)?.as_object().cloned()
}

/// Sets `providers.<id>` and makes it the active provider.
pub fn set_provider_state(doc: &mut Value, id: &str, state: Map<String, Value>) {
    if !doc.is_object() {
        *doc = empty();
    }
    if let Some(map) = doc.as_object_mut() {
        let providers = map
            .entry("providers")
            .or_insert_with(|| Value::Object(Map::new()));
        if !providers.is_object() {
            *providers = Value::Object(Map::new());
        }
        if let Some(p) = providers.as_object_mut() {
            p.insert(id.to_string(), Value::Object(state));
        }
        map.insert("active_provider".into(), json!(id));
    }
}

fn empty() -> Value {
    json!({"version": AUTH_STORE_VERSION, "providers": {}})
}

/// A document of any shape as a store: the older `systems.nous_portal` layout is read as
/// `providers.nous`, anything unusable as an empty store.
fn normalise(value: Value) -> Value {
    match value {
        Value::Object(mut map) => {
            if map.get("providers").is_some_and(Value::is_object)
                || map.get("credential_pool").is_some_and(Value::is_object)
            {
                if !map.get("providers").is_some_and(Value::is_object) {
                    map.insert("providers".into(), Value::Object(Map::new()));
                }
                return Value::Object(map);
            }
            if let Some(nous) = map.get("systems").and_then(|s| s.get("nous_portal")) {
                return json!({"version": AUTH_STORE_VERSION, "providers": {"nous": nous},
                              "active_provider": "nous"});
            }
            empty()
        }
        _ => empty(),
    }
}

#[cfg(unix)]
fn set_owner_only(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn set_owner_only(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

// ---- time ----

/// Seconds since the epoch, now.
pub fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `2025-01-31T12:00:00.123456+00:00`, as Python's `datetime.isoformat()` writes UTC times.
pub fn iso_utc(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    iso_from_secs(d.as_secs() as i64, d.subsec_micros())
}

fn iso_from_secs(secs: i64, micros: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = hermes_protocol::time::civil_from_days(days);
    let base = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
    if micros == 0 {
        format!("{base}+00:00")
    } else {
        format!("{base}.{micros:06}+00:00")
    }
}

/// The ISO time `secs` seconds after the epoch (UTC).
pub fn iso_at(secs: f64) -> String {
    let whole = secs.floor();
    iso_from_secs(whole as i64, ((secs - whole) * 1e6) as u32)
}

/// An ISO 8601 time (`YYYY-MM-DDTHH:MM:SS[.frac][Z|±HH:MM]`, no zone meaning UTC) as seconds
/// since the epoch.
pub fn parse_iso(text: &str) -> Option<f64> {
    let t = text.trim();
    let (date, rest) = t.split_once(['T', ' '])?;
    let mut dp = date.splitn(3, '-');
    let y: i64 = dp.next()?.parse().ok()?;
    let m: u32 = dp.next()?.parse().ok()?;
    let d: u32 = dp.next()?.parse().ok()?;
    let (time, offset) = match rest.find(['Z', 'z', '+', '-']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let mut tp = time.splitn(3, ':');
    let hh: f64 = tp.next()?.parse().ok()?;
    let mm: f64 = tp.next()?.parse().ok()?;
    let ss: f64 = tp.next().unwrap_or("0").parse().ok()?;
    let offset_secs = match offset {
        "" | "Z" | "z" => 0.0,
        o => {
            let sign = if o.starts_with('-') { -1.0 } else { 1.0 };
            let (oh, om) = o[1..].split_once(':').unwrap_or((&o[1..], "0"));
            sign * (oh.parse::<f64>().ok()? * 3600.0 + om.parse::<f64>().ok()? * 60.0)
        }
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(y, m, d);
    Some(days as f64 * 86_400.0 + hh * 3600.0 + mm * 60.0 + ss - offset_secs)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// ---- JWT ----

/// The claims of a JWT (its middle part), without verifying it: only used to read expiry,
/// scope and account ids of our own tokens.
pub fn jwt_claims(token: &str) -> Option<Map<String, Value>> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// The `exp` claim of a JWT, in seconds since the epoch.
pub fn jwt_expiry(token: &str) -> Option<f64> {
    jwt_claims(token)?.get("exp")?.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_round_trip_like_python_writes_them() {
        assert_eq!(iso_from_secs(0, 0), "1970-01-01T00:00:00+00:00");
        assert_eq!(
            iso_from_secs(1_700_000_000, 123_456),
            "2023-11-14T22:13:20.123456+00:00"
        );
        let t = parse_iso("2023-11-14T22:13:20.123456+00:00").unwrap();
        assert!((t - 1_700_000_000.123_456).abs() < 1e-5, "{t}");
        assert_eq!(parse_iso("2023-11-14T22:13:20Z"), Some(1_700_000_000.0));
        assert_eq!(
            parse_iso("2023-11-15T00:13:20+02:00"),
            Some(1_700_000_000.0)
        );
        assert_eq!(parse_iso("2023-11-14 22:13:20"), Some(1_700_000_000.0));
        assert_eq!(parse_iso("yesterday"), None);
        assert_eq!(parse_iso("2023-13-01T00:00:00"), None);
    }

    #[test]
    fn jwt_claims_are_read_without_verification() {
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"exp": 1700000000, "scope": "inference:invoke"}"#);
        let token = format!("eyJhbGciOiJub25lIn0.{claims}.sig");
        assert_eq!(jwt_expiry(&token), Some(1_700_000_000.0));
        assert_eq!(jwt_claims("not-a-jwt"), None);
        assert_eq!(jwt_claims("a.!!!.c"), None);
    }

    #[tokio::test]
    async fn writes_are_atomic_owner_only_and_keep_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let store = AuthStore::for_home(dir.path());
        assert_eq!(store.read().unwrap(), empty());
        std::fs::write(
            store.path(),
            r#"{"version": 1, "providers": {"other": {"x": 1}}, "credential_pool": {"k": []}}"#,
        )
        .unwrap();
        store
            .locked(|| async {
                let mut doc = store.read_for_update()?;
                let mut state = Map::new();
                state.insert("access_token".into(), json!("t"));
                set_provider_state(&mut doc, "nous", state);
                store.write(&mut doc)
            })
            .await
            .unwrap();
        let doc = store.read().unwrap();
        assert_eq!(doc["providers"]["other"]["x"], 1);
        assert_eq!(doc["providers"]["nous"]["access_token"], "t");
        assert_eq!(doc["active_provider"], "nous");
        assert_eq!(doc["credential_pool"]["k"], json!([]));
        assert!(parse_iso(doc["updated_at"].as_str().unwrap()).is_some());
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert!(
            text.starts_with("{\n  \"") && text.ends_with("}\n"),
            "{text}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn damaged_and_old_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = AuthStore::for_home(dir.path());
        std::fs::write(store.path(), "{oops").unwrap();
        assert!(matches!(store.read(), Err(AuthError::Corrupt { .. })));
        assert_eq!(store.read_for_update().unwrap(), empty());
        assert!(dir.path().join("auth.json.corrupt").is_file());
        std::fs::write(
            store.path(),
            r#"{"systems": {"nous_portal": {"access_token": "a"}}}"#,
        )
        .unwrap();
        assert_eq!(
            store.provider_state("nous").unwrap().unwrap()["access_token"],
            "a"
        );
    }

    #[tokio::test]
    async fn a_held_lock_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let store = AuthStore::for_home(dir.path());
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("auth.lock"))
            .unwrap();
        let mut other = fd_lock::RwLock::new(file);
        let guard = other.write().unwrap();
        let waiting = store.locked(|| async { Ok(7) });
        let release = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            drop(guard);
        };
        let (result, ()) = tokio::join!(waiting, release);
        assert_eq!(result.unwrap(), 7);
    }
}
