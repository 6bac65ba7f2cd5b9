//! The hub's bookkeeping in the Python Hermes's files under `skills/.hub/`: `lock.json`
//! (`{"version": 1, "installed": {NAME: {source, identifier, trust_level, scan_verdict,
//! content_hash, install_path, files, metadata, scan_provenance, installed_at,
//! updated_at}}}`: what is installed, from where, pinned to which commit or archive hash,
//! with the scan that let it in) and `audit.log` (one line per install, block and
//! uninstall). Unknown keys a newer Python wrote are kept. Content hashes are Python's:
//! SHA-256 over each file's relative path, a NUL and its bytes, in path order.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::HubError;
use super::fetch::io_error;

/// `skills/.hub/lock.json`.
#[derive(Debug, Clone)]
pub struct LockFile {
    path: PathBuf,
}

impl LockFile {
    pub fn new(path: impl Into<PathBuf>) -> LockFile {
        LockFile { path: path.into() }
    }

    /// The whole file (`{"version": 1, "installed": {}}` when missing or unreadable, as in
    /// Python).
    pub fn load(&self) -> Map<String, Value> {
        let mut data = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        data.entry("version").or_insert(json!(1));
        if !data.get("installed").is_some_and(Value::is_object) {
            data.insert("installed".into(), json!({}));
        }
        data
    }

    /// Writes `data` atomically (a sibling temporary file renamed over it).
    pub fn save(&self, data: &Map<String, Value>) -> Result<(), HubError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        let text = serde_json::to_string_pretty(data).unwrap_or_default() + "\n";
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io_error(dir, e))?;
        tmp.write_all(text.as_bytes())
            .map_err(|e| io_error(&self.path, e))?;
        tmp.persist(&self.path)
            .map_err(|e| io_error(&self.path, e.error))?;
        Ok(())
    }

    /// The entry of `name`.
    pub fn get(&self, name: &str) -> Option<Value> {
        self.load()
            .get("installed")
            .and_then(|i| i.get(name))
            .cloned()
    }

    /// Every entry, by name.
    pub fn installed(&self) -> BTreeMap<String, Value> {
        self.load()
            .get("installed")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// Records `entry` under `name`, keeping `installed_at` of an earlier install.
    pub fn record(&self, name: &str, mut entry: Map<String, Value>) -> Result<(), HubError> {
        let mut data = self.load();
        let installed = data
            .get_mut("installed")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| HubError::Lock("`installed` is not an object".into()))?;
        if let Some(at) = installed
            .get(name)
            .and_then(|e| e.get("installed_at"))
            .cloned()
            && entry.contains_key("keep_installed_at")
        {
            entry.insert("installed_at".into(), at);
        }
        entry.remove("keep_installed_at");
        installed.insert(name.to_string(), Value::Object(entry));
        self.save(&data)
    }

    /// Drops the entry of `name`.
    pub fn remove(&self, name: &str) -> Result<(), HubError> {
        let mut data = self.load();
        if let Some(installed) = data.get_mut("installed").and_then(Value::as_object_mut) {
            installed.remove(name);
        }
        self.save(&data)
    }
}

/// Appends Python's audit line: `TIMESTAMP ACTION NAME SOURCE:TRUST VERDICT [EXTRA]` (best
/// effort: a log that cannot be written never stops an install).
pub fn append_audit(
    path: &Path,
    action: &str,
    name: &str,
    source: &str,
    trust: &str,
    verdict: &str,
    extra: &str,
) {
    let now = crate::skills::usage::now_iso();
    // Python's `%Y-%m-%dT%H:%M:%SZ`.
    let stamp = format!("{}Z", now.get(..19).unwrap_or(&now));
    let mut line = format!("{stamp} {action} {name} {source}:{trust} {verdict}");
    if !extra.is_empty() {
        line.push(' ');
        line.push_str(extra);
    }
    let _ = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            writeln!(file, "{line}")
        });
}

/// Python's digest of a file set: `(relative path, bytes)` sorted by path components.
pub fn digest<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut files: Vec<(&str, &[u8])> = files.into_iter().collect();
    files.sort_by(|a, b| a.0.split('/').cmp(b.0.split('/')));
    let mut h = Sha256::new();
    for (rel, bytes) in files {
        h.update(rel.as_bytes());
        h.update([0u8]);
        h.update(bytes);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Python's `content_hash`: `sha256:` and the first 16 hex digits.
pub fn content_hash<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let full = digest(files);
    format!("sha256:{}", &full[..16])
}

/// Python's `full_content_hash`.
pub fn full_hash<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    format!("sha256:{}", digest(files))
}

/// SHA-256 of `bytes` in hex (a tarball's pin).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_python() {
        // hashlib.sha256(b"SKILL.md\x00hi\n").hexdigest()[:16] computed by the Python Hermes's
        // content_hash on a folder holding only SKILL.md = "hi\n".
        let files = [("SKILL.md", b"hi\n".as_slice())];
        let full = digest(files);
        assert_eq!(full, sha256_hex(b"SKILL.md\x00hi\n"));
        assert_eq!(content_hash(files), format!("sha256:{}", &full[..16]));
        let a = digest([("a/b", b"1".as_slice()), ("a-c", b"2".as_slice())]);
        let b = digest([("a-c", b"2".as_slice()), ("a/b", b"1".as_slice())]);
        assert_eq!(a, b, "order of the input does not matter");
    }

    #[test]
    fn lock_keeps_unknown_keys_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".hub/lock.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"version": 1, "installed": {}, "future": true}"#).unwrap();
        let lock = LockFile::new(&path);
        let mut entry = Map::new();
        entry.insert("source".into(), json!("git"));
        entry.insert("installed_at".into(), json!("t1"));
        lock.record("x", entry.clone()).unwrap();
        entry.insert("installed_at".into(), json!("t2"));
        entry.insert("keep_installed_at".into(), json!(true));
        lock.record("x", entry).unwrap();
        let data = lock.load();
        assert_eq!(data["future"], json!(true));
        assert_eq!(lock.get("x").unwrap()["installed_at"], json!("t1"));
        assert!(lock.get("x").unwrap().get("keep_installed_at").is_none());
        lock.remove("x").unwrap();
        assert!(lock.installed().is_empty());
        std::fs::write(&path, "garbage").unwrap();
        assert!(lock.installed().is_empty());
    }
}
