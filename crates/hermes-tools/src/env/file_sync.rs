//! Files of the home pushed into a remote environment that does not see this machine's disk
//! (ssh, Daytona, Modal), as the Python Hermes does (`tools/environments/file_sync.py`): the
//! skills (so their scripts and templates run there), the cache directories (documents,
//! images, audio, ... the chat platforms saved) and the files `terminal.credential_files`
//! names (paths under the home), under `~/.hermes/` of the environment. Before a command or a
//! file tool runs, at most every 5 s (`HERMES_FORCE_FILE_SYNC=1`: every time), files new or
//! changed since the last push (size and mtime) go over in one tar stream, and files removed
//! here are removed there. A failed push changes nothing in the record, so the next one tries
//! again; it never fails the command itself. Nothing comes back (Python's sync-back of edited
//! files is not done). Symlinks are skipped, as are files over 16 MiB; one push carries at
//! most 64 MiB, the rest goes with the next.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::shell_fs::ShellFs;
use super::{Backend, DetachedJobs};
use super::{EnvError, ExecutionEnvironment, Prepared, ShellRequest, sh_quote};

/// How often a sync runs at most.
const INTERVAL: Duration = Duration::from_secs(5);
/// Set to `1` to sync before every command (the Python Hermes's variable).
pub const FORCE_ENV: &str = "HERMES_FORCE_FILE_SYNC";
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
const MAX_PUSH_BYTES: u64 = 64 * 1024 * 1024;
/// Files looked at per directory tree (a runaway cache cannot stall every command).
const MAX_FILES: usize = 20_000;

/// The cache directories pushed (the Python Hermes's list).
const CACHE_DIRS: &[&str] = &[
    "cache/documents",
    "cache/images",
    "cache/audio",
    "cache/videos",
    "cache/screenshots",
    "cache/web",
    "cache/delegation",
];

/// What is pushed: paths relative to the home, on both sides.
#[derive(Debug, Clone)]
pub struct SyncSources {
    pub home: PathBuf,
    /// `terminal.credential_files`: files under the home, given relative to it.
    pub credential_files: Vec<String>,
}

impl SyncSources {
    /// `(relative path, local path)` of every file to mirror now.
    pub fn files(&self) -> BTreeMap<String, PathBuf> {
        let mut out = BTreeMap::new();
        let mut budget = MAX_FILES;
        for dir in std::iter::once("skills").chain(CACHE_DIRS.iter().copied()) {
            walk(&self.home, Path::new(dir), &mut out, &mut budget);
        }
        for rel in &self.credential_files {
            if let Some(rel) = contained(rel)
                && let Ok(meta) = std::fs::symlink_metadata(self.home.join(&rel))
                && meta.is_file()
            {
                out.insert(rel.clone(), self.home.join(rel));
            }
        }
        out
    }
}

/// A relative path that stays under the home (no `..`, not absolute), `/`-separated.
fn contained(rel: &str) -> Option<String> {
    let rel = rel.trim();
    let path = Path::new(rel);
    if rel.is_empty()
        || path.is_absolute()
        || path
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    Some(rel.to_string())
}

fn walk(home: &Path, rel: &Path, out: &mut BTreeMap<String, PathBuf>, budget: &mut usize) {
    let Ok(entries) = std::fs::read_dir(home.join(rel)) else {
        return;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let child = rel.join(entry.file_name());
        if kind.is_dir() {
            walk(home, &child, out, budget);
        } else if kind.is_file() {
            *budget -= 1;
            out.insert(child.to_string_lossy().into_owned(), entry.path());
        }
    }
}

/// Size and modification time: what "changed" means.
fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.is_file().then(|| {
        (
            meta.len(),
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        )
    })
}

#[derive(Debug, Default)]
struct State {
    pushed: HashMap<String, (u64, SystemTime)>,
    last: Option<Instant>,
}

/// An environment whose commands see the home's files: `inner` with a sync before use.
pub struct Synced {
    inner: Arc<dyn ExecutionEnvironment>,
    sources: SyncSources,
    force: bool,
    state: tokio::sync::Mutex<State>,
}

impl std::fmt::Debug for Synced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Synced")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// What one push did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub uploaded: usize,
    pub deleted: usize,
}

impl Synced {
    /// `force`: sync before every use (`HERMES_FORCE_FILE_SYNC=1`).
    pub fn new(inner: Arc<dyn ExecutionEnvironment>, sources: SyncSources, force: bool) -> Synced {
        Synced {
            inner,
            sources,
            force,
            state: tokio::sync::Mutex::new(State::default()),
        }
    }

    /// Pushes what changed, unless a push ran less than [`INTERVAL`] ago.
    pub async fn sync(&self) -> Result<Pushed, EnvError> {
        let mut state = self.state.lock().await;
        if !self.force
            && let Some(last) = state.last
            && last.elapsed() < INTERVAL
        {
            return Ok(Pushed::default());
        }
        let current = self.sources.files();
        let mut upload: Vec<(String, PathBuf, (u64, SystemTime))> = Vec::new();
        let mut bytes = 0u64;
        for (rel, path) in &current {
            let Some(now) = stamp(path) else { continue };
            if now.0 > MAX_FILE_BYTES || state.pushed.get(rel) == Some(&now) {
                continue;
            }
            if bytes + now.0 > MAX_PUSH_BYTES {
                break;
            }
            bytes += now.0;
            upload.push((rel.clone(), path.clone(), now));
        }
        let delete: Vec<String> = state
            .pushed
            .keys()
            .filter(|rel| !current.contains_key(*rel))
            .cloned()
            .collect();
        if upload.is_empty() && delete.is_empty() {
            state.last = Some(Instant::now());
            return Ok(Pushed::default());
        }
        let base = format!("{}/.hermes", self.inner.home().trim_end_matches('/'));
        let fs = ShellFs::new(self.inner.clone());
        let io = |e: String| EnvError::Io(format!("syncing the home's files: {e}"));
        if !upload.is_empty() {
            let archive = tar_of(&upload).map_err(|e| io(e.to_string()))?;
            let script = format!("mkdir -p {b} && tar -xf - -C {b}", b = sh_quote(&base));
            let out = fs
                .run(&script, Some(&archive), 4096)
                .await
                .map_err(|e| io(e.to_string()))?;
            if out.code != Some(0) {
                return Err(io(format!("tar failed: {}", out.stderr)));
            }
        }
        if !delete.is_empty() {
            let paths: Vec<String> = delete
                .iter()
                .map(|rel| sh_quote(&format!("{base}/{rel}")))
                .collect();
            let out = fs
                .run(&format!("rm -f -- {}", paths.join(" ")), None, 4096)
                .await
                .map_err(|e| io(e.to_string()))?;
            if out.code != Some(0) {
                return Err(io(format!("rm failed: {}", out.stderr)));
            }
        }
        // Recorded only now: a failed push is retried whole next time.
        for (rel, _, now) in &upload {
            state.pushed.insert(rel.clone(), *now);
        }
        for rel in &delete {
            state.pushed.remove(rel);
        }
        state.last = Some(Instant::now());
        Ok(Pushed {
            uploaded: upload.len(),
            deleted: delete.len(),
        })
    }

    /// [`Synced::sync`] where a failure must not stop the caller: the command runs anyway, with
    /// the files the environment has.
    async fn sync_quietly(&self) {
        if let Err(e) = self.sync().await {
            eprintln!("hermes: {e}");
        }
    }
}

/// An uncompressed tar of the files (regular files, mode 0644 or 0755 as here).
fn tar_of(files: &[(String, PathBuf, (u64, SystemTime))]) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    for (rel, path, _) in files {
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            // Gone since it was listed: the next sync deletes it there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        builder.append_file(rel, &mut file)?;
    }
    builder.into_inner()
}

#[async_trait::async_trait]
impl ExecutionEnvironment for Synced {
    fn backend(&self) -> Backend {
        self.inner.backend()
    }
    fn is_local(&self) -> bool {
        self.inner.is_local()
    }
    fn cwd(&self) -> String {
        self.inner.cwd()
    }
    fn home(&self) -> String {
        self.inner.home()
    }
    async fn connect(&self) -> Result<(), EnvError> {
        self.inner.connect().await?;
        self.sync_quietly().await;
        Ok(())
    }
    async fn shell(&self, request: ShellRequest<'_>) -> Result<Prepared, EnvError> {
        self.inner.connect().await?;
        self.sync_quietly().await;
        self.inner.shell(request).await
    }
    fn detached(&self) -> Option<Arc<dyn DetachedJobs>> {
        self.inner.detached()
    }
    async fn shutdown(&self) {
        self.inner.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sources_are_skills_caches_and_contained_credential_files() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        for (rel, text) in [
            ("skills/deploy/SKILL.md", "x"),
            ("skills/deploy/scripts/run.sh", "y"),
            ("cache/images/a.png", "z"),
            ("secrets/token.json", "{}"),
            ("memories/MEMORY.md", "not synced"),
            ("config.yaml", "not synced"),
        ] {
            std::fs::create_dir_all(h.join(rel).parent().unwrap()).unwrap();
            std::fs::write(h.join(rel), text).unwrap();
        }
        std::os::unix::fs::symlink(h.join("config.yaml"), h.join("skills/link.md")).unwrap();
        let sources = SyncSources {
            home: h.to_path_buf(),
            credential_files: vec![
                "secrets/token.json".into(),
                "../outside".into(),
                "/etc/passwd".into(),
                "missing.json".into(),
            ],
        };
        let files: Vec<String> = sources.files().into_keys().collect();
        assert_eq!(
            files,
            [
                "cache/images/a.png",
                "secrets/token.json",
                "skills/deploy/SKILL.md",
                "skills/deploy/scripts/run.sh"
            ]
        );
    }
}
