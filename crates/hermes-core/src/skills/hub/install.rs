//! Installing, replacing and removing hub skills in a home, in the Python Hermes's layout:
//! a bundle is written to `skills/.hub/quarantine/<name>/`, scanned there, and moved into
//! `skills/[category/]<name>/` with one `rename` (an update first renames the old copy aside
//! and puts it back if the move fails), so a skill is never seen half-written. Lock-file
//! paths are checked before anything is removed (relative, no `..`, ending in the skill's
//! name, no link on the way), as Python checks them, so a poisoned lock entry cannot aim a
//! removal outside `skills/`. Only skills in the lock file are removed: the user's and the
//! agent's are refused.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::fetch::io_error;
use super::guard::{self, Scan};
use super::lock::{self, LockFile};
use super::{Bundle, HubError, Source};

/// The hub of one home's skills folder.
#[derive(Debug, Clone)]
pub struct Hub {
    skills: PathBuf,
}

/// Where an installed skill came from, for its lock entry.
#[derive(Debug, Clone)]
pub struct Origin<'a> {
    pub source: &'a Source,
    /// The skill's folder inside the fetched source (`""` for its root).
    pub skill_path: &'a str,
    /// The git commit checked out.
    pub commit: Option<String>,
    /// SHA-256 of the downloaded archive.
    pub archive_sha256: Option<String>,
}

impl Hub {
    pub fn new(skills_root: impl Into<PathBuf>) -> Hub {
        Hub {
            skills: skills_root.into(),
        }
    }

    pub fn skills_root(&self) -> &Path {
        &self.skills
    }

    /// `skills/.hub`.
    pub fn hub_dir(&self) -> PathBuf {
        self.skills.join(".hub")
    }

    pub fn lock(&self) -> LockFile {
        LockFile::new(self.hub_dir().join("lock.json"))
    }

    /// `skills/.hub/audit.log`.
    pub fn audit_log(&self) -> PathBuf {
        self.hub_dir().join("audit.log")
    }

    fn quarantine_dir(&self) -> PathBuf {
        self.hub_dir().join("quarantine")
    }

    /// Writes `bundle` to `skills/.hub/quarantine/<name>/` (replacing a leftover) and returns
    /// that folder, where the guard scans it.
    pub fn quarantine(&self, bundle: &Bundle) -> Result<PathBuf, HubError> {
        let dest = self.quarantine_dir().join(&bundle.name);
        if std::fs::symlink_metadata(&dest).is_ok() {
            std::fs::remove_dir_all(&dest).map_err(|e| io_error(&dest, e))?;
        }
        std::fs::create_dir_all(&dest).map_err(|e| io_error(&dest, e))?;
        // A `.ignore` keeps search tools out of unvetted content, as Python does.
        let ignore = self.hub_dir().join(".ignore");
        if !ignore.exists() {
            let _ = std::fs::write(&ignore, "# Exclude hub internals from search tools\n*\n");
        }
        for (rel, bytes) in &bundle.files {
            let parts: Vec<&str> = rel.split('/').collect();
            if parts
                .iter()
                .any(|p| p.is_empty() || *p == "." || *p == "..")
            {
                return Err(HubError::UnsafeSkill(format!("unsafe file path `{rel}`")));
            }
            let path = parts.iter().fold(dest.clone(), |p, c| p.join(c));
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
            }
            std::fs::write(&path, bytes).map_err(|e| io_error(&path, e))?;
            if bundle.executable.contains(rel) {
                set_executable(&path);
            }
        }
        Ok(dest)
    }

    /// Drops a quarantined copy (after a refusal).
    pub fn discard(&self, quarantined: &Path) {
        if quarantined.starts_with(self.quarantine_dir()) {
            let _ = std::fs::remove_dir_all(quarantined);
        }
    }

    /// Scans a quarantined bundle.
    pub fn scan(&self, quarantined: &Path, bundle: &Bundle, origin: &Origin<'_>) -> Scan {
        guard::scan_skill(
            quarantined,
            &bundle.name,
            &origin.source.identifier(origin.skill_path),
            origin.source.trust(origin.skill_path),
        )
    }

    /// The folder `name` installs to under `category`.
    pub fn target(&self, name: &str, category: Option<&str>) -> Result<String, HubError> {
        let rel = match category.map(str::trim).filter(|c| !c.is_empty()) {
            Some(c) => format!("{}/{name}", c.trim_matches('/')),
            None => name.to_string(),
        };
        normalize_install_path(&rel, name)
    }

    /// Moves the scanned `quarantined` copy to `skills/<install_path>`, replacing the copy
    /// there (only a hub-installed one: the caller checks), records the lock entry and the
    /// audit line. Returns the installed folder.
    pub fn install(
        &self,
        quarantined: &Path,
        bundle: &Bundle,
        install_path: &str,
        origin: &Origin<'_>,
        scan: &Scan,
    ) -> Result<PathBuf, HubError> {
        let target = self.resolve(install_path, &bundle.name)?;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
        }
        let aside =
            self.quarantine_dir()
                .join(format!(".{}.previous-{}", bundle.name, std::process::id()));
        let had_old = std::fs::symlink_metadata(&target).is_ok();
        if had_old {
            std::fs::rename(&target, &aside).map_err(|e| io_error(&target, e))?;
        }
        if let Err(e) = std::fs::rename(quarantined, &target) {
            if had_old {
                let _ = std::fs::rename(&aside, &target);
            }
            return Err(io_error(&target, e));
        }
        if had_old {
            let _ = std::fs::remove_dir_all(&aside);
        }
        let hash = bundle.content_hash();
        let mut metadata = Map::new();
        metadata.insert(
            "hub_source".into(),
            origin.source.to_lock(origin.skill_path),
        );
        if let Some(c) = &origin.commit {
            metadata.insert("commit".into(), json!(c));
        }
        if let Source::Git {
            reference: Some(r), ..
        } = origin.source
        {
            metadata.insert("ref".into(), json!(r));
        }
        if let Some(s) = &origin.archive_sha256 {
            metadata.insert("archive_sha256".into(), json!(s));
        }
        let source_url = origin.source.url(origin.skill_path);
        let now = crate::skills::usage::now_iso();
        let mut entry = Map::new();
        for (k, v) in [
            ("source", json!(origin.source.kind())),
            (
                "identifier",
                json!(origin.source.identifier(origin.skill_path)),
            ),
            ("trust_level", json!(scan.trust.as_str())),
            ("scan_verdict", json!(scan.verdict.as_str())),
            ("content_hash", json!(hash)),
            ("install_path", json!(install_path)),
            ("files", json!(bundle.files.keys().collect::<Vec<_>>())),
            ("metadata", Value::Object(metadata)),
            (
                "scan_provenance",
                scan.provenance(&source_url, &lock::full_hash(bundle.pairs())),
            ),
            ("installed_at", json!(now)),
            ("updated_at", json!(now)),
            ("keep_installed_at", json!(true)),
        ] {
            entry.insert(k.into(), v);
        }
        self.lock().record(&bundle.name, entry)?;
        lock::append_audit(
            &self.audit_log(),
            if had_old { "UPDATE" } else { "INSTALL" },
            &bundle.name,
            origin.source.kind(),
            scan.trust.as_str(),
            scan.verdict.as_str(),
            &hash,
        );
        Ok(target)
    }

    /// Logs a refused install.
    pub fn log_blocked(&self, bundle: &Bundle, origin: &Origin<'_>, scan: &Scan) {
        lock::append_audit(
            &self.audit_log(),
            "BLOCKED",
            &bundle.name,
            origin.source.kind(),
            scan.trust.as_str(),
            scan.verdict.as_str(),
            &format!("{}_findings", scan.findings.len()),
        );
    }

    /// The folder of the hub-installed skill `name` (its lock entry checked), or why not.
    pub fn installed_dir(&self, name: &str) -> Result<(PathBuf, Value), HubError> {
        let entry = self.lock().get(name).ok_or_else(|| {
            HubError::NotFound(format!(
                "'{name}' is not a hub-installed skill (user and agent skills are not the hub's to remove)"
            ))
        })?;
        let path = entry
            .get("install_path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Ok((self.resolve(path, name)?, entry))
    }

    /// Removes the hub-installed skill `name` and its lock entry.
    pub fn uninstall(&self, name: &str) -> Result<String, HubError> {
        let (dir, entry) = self.installed_dir(name)?;
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        }
        self.lock().remove(name)?;
        let text = |k: &str| {
            entry
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        lock::append_audit(
            &self.audit_log(),
            "UNINSTALL",
            name,
            &text("source"),
            &text("trust_level"),
            "n/a",
            "user_request",
        );
        Ok(format!(
            "Uninstalled '{name}' from {}",
            text("install_path")
        ))
    }

    /// `skills/<install_path>` after Python's checks, refusing links on the way.
    fn resolve(&self, install_path: &str, name: &str) -> Result<PathBuf, HubError> {
        let normalized = normalize_install_path(install_path, name)?;
        let mut target = self.skills.clone();
        for part in normalized.split('/') {
            target.push(part);
            if std::fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(HubError::Refused(format!(
                    "unsafe install path: {install_path} (a link on the way)"
                )));
            }
        }
        Ok(target)
    }
}

/// Python's `_normalize_lock_install_path`: relative, no `..`, last part the skill's name.
pub fn normalize_install_path(install_path: &str, name: &str) -> Result<String, HubError> {
    let raw = install_path.trim().replace('\\', "/");
    let parts: Vec<&str> = raw
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let drive = parts
        .first()
        .is_some_and(|p| p.len() == 2 && p.ends_with(':'));
    if raw.starts_with('/')
        || parts.is_empty()
        || parts.contains(&"..")
        || drive
        || parts.last() != Some(&name)
        || name.contains('/')
    {
        return Err(HubError::Refused(format!(
            "unsafe install path: {install_path}"
        )));
    }
    Ok(parts.join("/"))
}

#[cfg(unix)]
fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755));
}

#[cfg(not(unix))]
fn set_executable(_path: &Path) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_paths_are_checked_like_python() {
        assert_eq!(normalize_install_path("tools/x", "x").unwrap(), "tools/x");
        assert_eq!(normalize_install_path("./x/", "x").unwrap(), "x");
        for bad in ["", ".", "/x", "../x", "a/../x", "y", "C:/x"] {
            assert!(normalize_install_path(bad, "x").is_err(), "{bad}");
        }
    }

    #[test]
    fn install_update_and_uninstall_round_trip() {
        let home = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let skill = src.path().join("demo");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: demo\ndescription: A demo.\n---\nSay hi.\n",
        )
        .unwrap();
        std::fs::write(skill.join("scripts/hi.sh"), "echo hi\n").unwrap();
        let source = Source::Local {
            path: skill.clone(),
        };
        let origin = Origin {
            source: &source,
            skill_path: "",
            commit: None,
            archive_sha256: None,
        };
        let hub = Hub::new(home.path().join("skills"));
        let bundle = Bundle::read(&skill, None).unwrap();
        assert_eq!(bundle.name, "demo");
        let q = hub.quarantine(&bundle).unwrap();
        let scan = hub.scan(&q, &bundle, &origin);
        assert!(scan.decision(false).is_allowed(), "{}", scan.report(false));
        let path = hub.target("demo", Some("tools")).unwrap();
        let dir = hub.install(&q, &bundle, &path, &origin, &scan).unwrap();
        assert!(dir.join("scripts/hi.sh").is_file());
        let entry = hub.lock().get("demo").unwrap();
        assert_eq!(entry["install_path"], "tools/demo");
        assert_eq!(entry["source"], "local");
        assert_eq!(entry["content_hash"], json!(bundle.content_hash()));
        let first_at = entry["installed_at"].clone();
        // Replace in place.
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: demo\ndescription: A demo.\n---\nSay hello.\n",
        )
        .unwrap();
        let bundle = Bundle::read(&skill, None).unwrap();
        let q = hub.quarantine(&bundle).unwrap();
        hub.install(&q, &bundle, &path, &origin, &scan).unwrap();
        let entry = hub.lock().get("demo").unwrap();
        assert_eq!(entry["installed_at"], first_at);
        assert!(
            std::fs::read_to_string(dir.join("SKILL.md"))
                .unwrap()
                .contains("hello")
        );
        let log = std::fs::read_to_string(hub.audit_log()).unwrap();
        assert!(log.contains(" INSTALL demo local:community safe"), "{log}");
        assert!(log.contains(" UPDATE demo "), "{log}");
        hub.uninstall("demo").unwrap();
        assert!(!dir.exists());
        assert!(hub.lock().get("demo").is_none());
        assert!(matches!(hub.uninstall("demo"), Err(HubError::NotFound(_))));
    }

    #[test]
    fn a_poisoned_lock_entry_removes_nothing() {
        let home = tempfile::tempdir().unwrap();
        let hub = Hub::new(home.path().join("skills"));
        std::fs::create_dir_all(home.path().join("skills/keep")).unwrap();
        let mut entry = Map::new();
        entry.insert("install_path".into(), json!("."));
        hub.lock().record("keep", entry).unwrap();
        assert!(hub.uninstall("keep").is_err());
        assert!(home.path().join("skills/keep").exists());
    }
}
