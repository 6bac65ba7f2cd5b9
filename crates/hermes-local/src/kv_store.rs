//! The on-disk cache of evaluated prompt prefixes for local models: after a local model has
//! processed the part of the prompt every request of a setup shares (the system prompt and
//! the tools section), its KV state is saved under `$HERMES_HOME/cache/kv/`, so the next
//! process with the same setup loads it instead of evaluating those tokens again. An entry is
//! keyed by the model file (path, size, modification time), the context size and the exact
//! prefix tokens (which carry the template and the prompt). The directory is bounded (count
//! and bytes, oldest used evicted first); a file that fails to load is deleted and ignored.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// Entries kept at most.
pub const MAX_ENTRIES: usize = 8;
/// Bytes kept at most (a 4k-token prefix of the 1.5B default model is about 120 MB).
pub const MAX_BYTES: u64 = 1 << 30;
/// Prefixes shorter than this are not worth a file.
pub const MIN_TOKENS: usize = 64;
/// Temporary files older than this are left over from a crash.
const STALE_TEMP: Duration = Duration::from_secs(3600);
/// Bumped when what a key covers changes.
const KEY_VERSION: &str = "hermes-kv-1";
const EXTENSION: &str = "kv";

/// The model file as the key sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelIdentity {
    pub path: PathBuf,
    pub size: u64,
    pub modified_nanos: u128,
}

impl ModelIdentity {
    /// The identity of the file at `path`; `None` when it cannot be read.
    pub fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        let modified = meta
            .modified()
            .ok()?
            .duration_since(SystemTime::UNIX_EPOCH)
            .ok()?;
        Some(ModelIdentity {
            path: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
            size: meta.len(),
            modified_nanos: modified.as_nanos(),
        })
    }
}

/// A directory of saved prefix states.
#[derive(Debug, Clone)]
pub struct KvStore {
    dir: PathBuf,
    max_entries: usize,
    max_bytes: u64,
}

impl KvStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        KvStore {
            dir: dir.into(),
            max_entries: MAX_ENTRIES,
            max_bytes: MAX_BYTES,
        }
    }

    /// The same store with other bounds (tests).
    pub fn with_limits(mut self, max_entries: usize, max_bytes: u64) -> Self {
        self.max_entries = max_entries;
        self.max_bytes = max_bytes;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of a prefix: `engine` names the runtime and its settings that change the
    /// state's layout (context size, cache types).
    pub fn key(model: &ModelIdentity, engine: &str, tokens: &[i32]) -> String {
        let mut h = Sha256::new();
        for part in [
            KEY_VERSION.as_bytes(),
            model.path.as_os_str().as_encoded_bytes(),
            &model.size.to_le_bytes(),
            &model.modified_nanos.to_le_bytes(),
            engine.as_bytes(),
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        for token in tokens {
            h.update(token.to_le_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Where the entry for `key` lives.
    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.{EXTENSION}"))
    }

    /// A fresh file name to write an entry to before [`KvStore::commit`] moves it in place.
    pub fn temp_path(&self, key: &str) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        Ok(self.dir.join(format!(".{key}.{}.tmp", std::process::id())))
    }

    /// Moves a written entry in place and trims the store to its bounds.
    pub fn commit(&self, written: &Path, key: &str) -> std::io::Result<()> {
        std::fs::rename(written, self.path(key))?;
        self.evict();
        Ok(())
    }

    /// The entry for `key`, marked as just used; `None` when there is none.
    pub fn lookup(&self, key: &str) -> Option<PathBuf> {
        let path = self.path(key);
        let file = std::fs::File::options().append(true).open(&path).ok()?;
        // Eviction goes by modification time: using an entry makes it the newest.
        let _ = file.set_modified(SystemTime::now());
        Some(path)
    }

    /// Forgets an entry that could not be used.
    pub fn discard(&self, key: &str) {
        let _ = std::fs::remove_file(self.path(key));
    }

    /// Deletes the oldest entries beyond the bounds, and temporary files left by crashes.
    pub fn evict(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut kept: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') && name.ends_with(".tmp") {
                if now.duration_since(modified).unwrap_or_default() > STALE_TEMP {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            if path.extension().is_some_and(|e| e == EXTENSION) {
                kept.push((modified, meta.len(), path));
            }
        }
        // Newest first; everything after the bounds goes.
        kept.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        let mut bytes = 0u64;
        for (i, (_, size, path)) in kept.iter().enumerate() {
            bytes = bytes.saturating_add(*size);
            if i >= self.max_entries || bytes > self.max_bytes {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> ModelIdentity {
        ModelIdentity {
            path: "/m/a.gguf".into(),
            size: 10,
            modified_nanos: 5,
        }
    }

    #[test]
    fn keys_change_with_the_model_the_engine_and_every_token() {
        let base = KvStore::key(&identity(), "ctx=8192", &[1, 2, 3]);
        assert_eq!(base.len(), 64);
        assert_eq!(base, KvStore::key(&identity(), "ctx=8192", &[1, 2, 3]));
        let touched = ModelIdentity {
            modified_nanos: 6,
            ..identity()
        };
        let resized = ModelIdentity {
            size: 11,
            ..identity()
        };
        for other in [
            KvStore::key(&touched, "ctx=8192", &[1, 2, 3]),
            KvStore::key(&resized, "ctx=8192", &[1, 2, 3]),
            KvStore::key(&identity(), "ctx=4096", &[1, 2, 3]),
            KvStore::key(&identity(), "ctx=8192", &[1, 2, 4]),
            KvStore::key(&identity(), "ctx=8192", &[1, 2]),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn entries_are_committed_found_and_discarded() {
        let dir = tempfile::tempdir().unwrap();
        let store = KvStore::new(dir.path().join("kv"));
        assert_eq!(store.lookup("k"), None);
        let temp = store.temp_path("k").unwrap();
        std::fs::write(&temp, b"state").unwrap();
        store.commit(&temp, "k").unwrap();
        assert!(!temp.exists());
        let found = store.lookup("k").unwrap();
        assert_eq!(std::fs::read(&found).unwrap(), b"state");
        store.discard("k");
        assert_eq!(store.lookup("k"), None);
    }

    #[test]
    fn the_oldest_used_entries_go_beyond_the_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let store = KvStore::new(dir.path()).with_limits(2, 1000);
        let at = |secs: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs);
        for (key, secs) in [("a", 1), ("b", 2), ("c", 3)] {
            std::fs::write(store.path(key), b"x").unwrap();
            std::fs::File::options()
                .append(true)
                .open(store.path(key))
                .unwrap()
                .set_modified(at(secs))
                .unwrap();
        }
        // Using `a` makes it the newest: `b` is now the oldest.
        assert!(store.lookup("a").is_some());
        store.evict();
        assert!(store.path("a").exists() && store.path("c").exists());
        assert!(!store.path("b").exists());

        // Bytes bound: a big entry pushes the older ones out.
        let small = KvStore::new(dir.path()).with_limits(10, 5);
        std::fs::write(small.path("big"), b"12345").unwrap();
        // Newer than `a`'s use above for sure: file times are coarse (a clock tick), and a tie
        // would let `a` sort first and push `big` out (a flaky failure once).
        std::fs::File::options()
            .append(true)
            .open(small.path("big"))
            .unwrap()
            .set_modified(SystemTime::now() + Duration::from_secs(60))
            .unwrap();
        small.evict();
        assert!(small.path("big").exists());
        assert!(!small.path("a").exists() && !small.path("c").exists());
    }

    #[test]
    fn stale_temporary_files_are_removed_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = KvStore::new(dir.path());
        let stale = dir.path().join(".old.1.tmp");
        let fresh = dir.path().join(".new.2.tmp");
        std::fs::write(&stale, b"x").unwrap();
        std::fs::write(&fresh, b"x").unwrap();
        std::fs::File::options()
            .append(true)
            .open(&stale)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(7200))
            .unwrap();
        store.evict();
        assert!(!stale.exists());
        assert!(fresh.exists());
    }
}
