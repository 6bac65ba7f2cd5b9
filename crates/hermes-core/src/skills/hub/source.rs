//! Where a hub skill comes from, parsed from what the user typed: a local folder, a git
//! repository (`owner/repo[/path][@ref]` on GitHub, or any git URL: `https://…`, `ssh://…`,
//! `git@host:…`, `file://…`), or a tarball URL (`.tar.gz`, `.tgz`, `.tar`). The lock file
//! records each in the Python Hermes's terms: `source` (`github`, `git`, `url`, `local`) and
//! `identifier` (for GitHub, Python's own `owner/repo/path`, so its `hermes skills update`
//! can follow a skill this build installed).

use std::path::{Path, PathBuf};

use super::HubError;
use super::guard::{Trust, trust_of};

/// Where GitHub shorthand points.
pub const GITHUB: &str = "https://github.com";

/// A parsed source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A folder on this machine (absolute).
    Local { path: PathBuf },
    /// A git repository; `repo` is `owner/name` when it is on GitHub.
    Git {
        url: String,
        repo: Option<String>,
        subpath: Option<String>,
        reference: Option<String>,
    },
    /// A tarball at a URL.
    Tarball {
        url: String,
        subpath: Option<String>,
    },
}

impl Source {
    /// Parses `raw`; `reference` (`--ref`) and `subpath` (`--path`) override what `raw`
    /// says. `cwd` resolves relative folders. `None` when `raw` is none of these forms (it
    /// may be a name in the skills index).
    pub fn parse(
        raw: &str,
        reference: Option<&str>,
        subpath: Option<&str>,
        cwd: &Path,
    ) -> Result<Option<Source>, HubError> {
        let raw = raw.trim();
        let subpath = subpath.map(clean_subpath).transpose()?.flatten();
        let reference = reference.map(str::trim).filter(|r| !r.is_empty());
        if let Some(r) = reference {
            check_ref(r)?;
        }
        let lower = raw.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            let path_part = lower.split(['?', '#']).next().unwrap_or(&lower);
            if [".tar.gz", ".tgz", ".tar"]
                .iter()
                .any(|e| path_part.ends_with(e))
            {
                return Ok(Some(Source::Tarball {
                    url: raw.to_string(),
                    subpath,
                }));
            }
            return Ok(Some(Source::Git {
                repo: github_repo(raw),
                url: raw.to_string(),
                subpath,
                reference: reference.map(String::from),
            }));
        }
        if lower.starts_with("file://")
            || lower.starts_with("ssh://")
            || lower.starts_with("git://")
            || (raw.starts_with("git@") && raw.contains(':'))
        {
            return Ok(Some(Source::Git {
                repo: github_repo(raw),
                url: raw.to_string(),
                subpath,
                reference: reference.map(String::from),
            }));
        }
        let looks_local = raw.starts_with('/')
            || raw.starts_with("./")
            || raw.starts_with("../")
            || raw.starts_with("~/")
            || raw == "."
            || raw == "..";
        if looks_local || cwd.join(raw).is_dir() {
            let path = match raw.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME")
                    .map_or_else(|| PathBuf::from(raw), |h| PathBuf::from(h).join(rest)),
                None => cwd.join(raw),
            };
            let path = std::fs::canonicalize(&path).map_err(|e| HubError::Source {
                source_text: raw.to_string(),
                reason: format!("cannot open {}: {e}", path.display()),
            })?;
            let path = match subpath {
                Some(s) => path.join(s),
                None => path,
            };
            return Ok(Some(Source::Local { path }));
        }
        // GitHub shorthand: owner/repo[/path][@ref].
        let (body, at_ref) = match raw.rsplit_once('@') {
            Some((b, r)) if !r.is_empty() && !r.contains('/') => (b, Some(r)),
            _ => (raw, None),
        };
        let parts: Vec<&str> = body.split('/').filter(|p| !p.is_empty()).collect();
        let name_ok = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                && !s.starts_with('.')
        };
        if parts.len() >= 2 && name_ok(parts[0]) && name_ok(parts[1]) {
            let inner = (parts.len() > 2).then(|| parts[2..].join("/"));
            let inner = inner.as_deref().map(clean_subpath).transpose()?.flatten();
            let reference = reference.or(at_ref);
            if let Some(r) = reference {
                check_ref(r)?;
            }
            let repo = format!("{}/{}", parts[0], parts[1]);
            return Ok(Some(Source::Git {
                url: format!("{GITHUB}/{repo}.git"),
                repo: Some(repo),
                subpath: subpath.or(inner),
                reference: reference.map(String::from),
            }));
        }
        Ok(None)
    }

    /// The lock file's `source`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Local { .. } => "local",
            Source::Git { repo: Some(_), .. } => "github",
            Source::Git { .. } => "git",
            Source::Tarball { .. } => "url",
        }
    }

    /// The lock file's `identifier` for a skill found at `skill_path` below the source's
    /// sub-folder (`""` for the folder itself).
    pub fn identifier(&self, skill_path: &str) -> String {
        let join = |parts: &[&str]| {
            parts
                .iter()
                .filter(|p| !p.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("/")
        };
        match self {
            Source::Local { path } => join(&[&path.display().to_string(), skill_path]),
            Source::Git {
                repo: Some(r),
                subpath,
                ..
            } => join(&[r, subpath.as_deref().unwrap_or(""), skill_path]),
            Source::Git { url, .. } | Source::Tarball { url, .. } => url.clone(),
        }
    }

    /// The trust level of a skill at `skill_path` inside this source (Python's rule, on the
    /// GitHub identifier when there is one).
    pub fn trust(&self, skill_path: &str) -> Trust {
        match self {
            Source::Git { repo: Some(_), .. } => trust_of(&self.identifier(skill_path)),
            _ => Trust::Community,
        }
    }

    /// A human-facing URL of the source (the scan provenance's `source_url`).
    pub fn url(&self, skill_path: &str) -> String {
        match self {
            Source::Local { path } => format!("file://{}", path.join(skill_path).display()),
            Source::Git { url, .. } | Source::Tarball { url, .. } => url.clone(),
        }
    }

    /// The sub-folder of the fetched tree to look for skills in.
    pub fn subpath(&self) -> Option<&str> {
        match self {
            Source::Local { .. } => None,
            Source::Git { subpath, .. } | Source::Tarball { subpath, .. } => subpath.as_deref(),
        }
    }

    /// A source recorded in a lock entry, for `update`: `metadata.hub_source` when this
    /// build wrote the entry, else Python's `github` identifiers.
    pub fn from_lock(entry: &serde_json::Value) -> Option<Source> {
        let meta = entry.get("metadata")?;
        if let Some(s) = meta.get("hub_source") {
            let text = |k: &str| s.get(k).and_then(|v| v.as_str()).map(String::from);
            return match text("kind")?.as_str() {
                "local" => Some(Source::Local {
                    path: PathBuf::from(text("path")?),
                }),
                "git" => Some(Source::Git {
                    url: text("url")?,
                    repo: text("repo"),
                    subpath: text("subpath"),
                    reference: text("ref"),
                }),
                "tarball" => Some(Source::Tarball {
                    url: text("url")?,
                    subpath: text("subpath"),
                }),
                _ => None,
            };
        }
        let id = entry.get("identifier")?.as_str()?;
        (entry.get("source")?.as_str()? == "github")
            .then(|| Source::parse(id, None, None, Path::new("/")).ok().flatten())
            .flatten()
    }

    /// What [`Source::from_lock`] reads back (`metadata.hub_source`), with the folder of the
    /// skill inside the source as `subpath`.
    pub fn to_lock(&self, skill_path: &str) -> serde_json::Value {
        let sub = |base: Option<&str>| {
            let joined = [base.unwrap_or(""), skill_path]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("/");
            (!joined.is_empty()).then_some(joined)
        };
        match self {
            Source::Local { path } => serde_json::json!({
                "kind": "local",
                "path": path.join(skill_path).display().to_string(),
            }),
            Source::Git {
                url,
                repo,
                subpath,
                reference,
            } => serde_json::json!({
                "kind": "git",
                "url": url,
                "repo": repo,
                "subpath": sub(subpath.as_deref()),
                "ref": reference,
            }),
            Source::Tarball { url, subpath } => serde_json::json!({
                "kind": "tarball",
                "url": url,
                "subpath": sub(subpath.as_deref()),
            }),
        }
    }
}

/// `owner/repo` of a github.com URL.
fn github_repo(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://github.com/")
        .or_else(|| url.strip_prefix("git@github.com:"))
        .or_else(|| url.strip_prefix("ssh://git@github.com/"))?;
    let mut parts = rest.trim_end_matches('/').split('/');
    let owner = parts.next()?;
    let repo = parts.next()?.trim_end_matches(".git");
    (parts.next().is_none() && !owner.is_empty() && !repo.is_empty())
        .then(|| format!("{owner}/{repo}"))
}

/// A relative path inside a source: no absolute paths, no `..`.
fn clean_subpath(raw: &str) -> Result<Option<String>, HubError> {
    let parts: Vec<&str> = raw
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if raw.starts_with('/') || parts.contains(&"..") {
        return Err(HubError::Source {
            source_text: raw.to_string(),
            reason: "a path inside a source must be relative, without `..`".into(),
        });
    }
    Ok((!parts.is_empty()).then(|| parts.join("/")))
}

/// A ref git will not read as an option.
fn check_ref(r: &str) -> Result<(), HubError> {
    if r.starts_with('-') || r.chars().any(|c| c.is_control() || c == ' ') {
        return Err(HubError::Source {
            source_text: r.to_string(),
            reason: "not a git ref".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &str) -> Option<Source> {
        Source::parse(raw, None, None, Path::new("/nonexistent-cwd")).unwrap()
    }

    #[test]
    fn github_shorthand_and_urls() {
        let s = parse("openai/skills/skills/pdf@v2").unwrap();
        assert_eq!(
            s,
            Source::Git {
                url: "https://github.com/openai/skills.git".into(),
                repo: Some("openai/skills".into()),
                subpath: Some("skills/pdf".into()),
                reference: Some("v2".into()),
            }
        );
        assert_eq!(s.kind(), "github");
        assert_eq!(s.identifier(""), "openai/skills/skills/pdf");
        assert_eq!(parse("o/r").unwrap().identifier("a"), "o/r/a");
        assert_eq!(s.trust("skills/pdf"), Trust::Trusted);
        let g = parse("https://github.com/me/tools").unwrap();
        assert_eq!(g.kind(), "github");
        assert_eq!(g.trust(""), Trust::Community);
        let f = parse("file:///srv/repo.git").unwrap();
        assert_eq!(f.kind(), "git");
        let t = parse("https://example.com/x/skill.tar.gz?dl=1").unwrap();
        assert_eq!(t.kind(), "url");
        assert!(parse("just-a-name").is_none());
        assert!(Source::parse("a/b/../../etc", None, None, Path::new("/")).is_err());
        assert!(Source::parse("a/b", Some("--upload-pack=x"), None, Path::new("/")).is_err());
    }

    #[test]
    fn lock_round_trip() {
        let s = parse("https://git.example.org/team/skills.git").unwrap();
        let entry = serde_json::json!({"source": "git", "identifier": "x", "metadata": {"hub_source": s.to_lock("deploy")}});
        let back = Source::from_lock(&entry).unwrap();
        assert_eq!(back.subpath(), Some("deploy"));
        let py = serde_json::json!({"source": "github", "identifier": "openai/skills/skills/pdf", "metadata": {}});
        assert_eq!(
            Source::from_lock(&py).unwrap().subpath(),
            Some("skills/pdf")
        );
    }
}
