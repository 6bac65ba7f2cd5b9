//! `hermes skills search`: the Hermes skills index (the JSON catalog the Python Hermes reads
//! from `HERMES_INDEX_URL`, `{"skills": [{name, description, source, identifier,
//! trust_level, repo, path, tags, extra}]}`), cached in `skills/.hub/index-cache/
//! hermes-index.json` for six hours with the stale copy used when the network fails, and
//! ranked as Python ranks it (exact name, name prefix, provider, whole word, substring,
//! then index order); plus a search of the skills inside any source fetched here.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;

/// Python's `HERMES_INDEX_URL`.
pub const DEFAULT_INDEX_URL: &str =
    "https://hermes-agent.nousresearch.com/docs/api/skills-index.json";
/// Python's `HERMES_INDEX_TTL`.
pub const INDEX_TTL: Duration = Duration::from_secs(6 * 3600);
/// The largest index read (Python's is tens of megabytes).
pub const MAX_INDEX_BYTES: usize = 64 * 1024 * 1024;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub name: String,
    pub description: String,
    pub source: String,
    pub identifier: String,
    pub trust_level: String,
    /// `owner/repo` and the path inside it, when the index resolved them.
    pub repo: Option<String>,
    pub path: Option<String>,
}

impl Hit {
    fn of(entry: &Value) -> Hit {
        let s = |k: &str| {
            entry
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let opt = |k: &str| {
            entry
                .get(k)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(String::from)
        };
        Hit {
            name: s("name"),
            description: s("description"),
            source: opt("source").unwrap_or_else(|| "hermes-index".into()),
            identifier: s("identifier"),
            trust_level: opt("trust_level").unwrap_or_else(|| "community".into()),
            repo: opt("repo"),
            path: opt("path"),
        }
    }

    /// What `hermes skills install` fetches for this hit: the index's resolved GitHub id,
    /// else `repo/path`, else the identifier.
    pub fn install_id(&self, entry: Option<&Value>) -> String {
        if let Some(r) = entry
            .and_then(|e| e.get("resolved_github_id"))
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
        {
            return r.to_string();
        }
        match (&self.repo, &self.path) {
            (Some(r), Some(p)) => format!("{r}/{}", p.trim_matches('/')),
            _ => self.identifier.clone(),
        }
    }

    /// JSON for `--json` (Python's keys).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "identifier": self.identifier,
            "source": self.source,
            "trust_level": self.trust_level,
            "description": self.description,
        })
    }
}

/// The index's `skills` array.
fn skills(index: &Value) -> &[Value] {
    index
        .get("skills")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Python's `HermesIndexSource.search`.
pub fn search(index: &Value, query: &str, limit: usize) -> Vec<Hit> {
    let all = skills(index);
    let q = query.trim().to_lowercase();
    if q.is_empty() {
        return all.iter().take(limit).map(Hit::of).collect();
    }
    let mut scored: Vec<(u8, usize, &Value)> = Vec::new();
    for (i, s) in all.iter().enumerate() {
        let text = |k: &str| {
            s.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_lowercase()
        };
        let name = text("name");
        let provider = s
            .pointer("/extra/provider")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_lowercase();
        let tags: Vec<String> = s
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .map(|v| {
                        v.as_str()
                            .map_or_else(|| v.to_string(), String::from)
                            .to_lowercase()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let haystack = [
            name.clone(),
            text("description"),
            tags.join(" "),
            text("identifier"),
            provider.clone(),
        ]
        .join(" ");
        if !haystack.contains(&q) {
            continue;
        }
        let score = if name == q {
            0
        } else if name.starts_with(&q) {
            1
        } else if provider == q {
            2
        } else if name.split_whitespace().any(|w| w == q)
            || provider.split_whitespace().any(|w| w == q)
        {
            3
        } else if name.contains(&q) {
            4
        } else {
            5
        };
        scored.push((score, i, s));
    }
    scored.sort_by_key(|(score, i, _)| (*score, *i));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, _, s)| Hit::of(s))
        .collect()
}

/// Python's `_find_entry`: by identifier, then with a source prefix stripped from either.
pub fn find<'a>(index: &'a Value, identifier: &str) -> Option<&'a Value> {
    let all = skills(index);
    let id = |s: &Value| {
        s.get("identifier")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if let Some(hit) = all.iter().find(|s| id(s) == identifier) {
        return Some(hit);
    }
    let strip = |v: &str| -> String {
        [
            "skills-sh/",
            "skills.sh/",
            "official/",
            "github/",
            "clawhub/",
        ]
        .iter()
        .find_map(|p| v.strip_prefix(p))
        .unwrap_or(v)
        .to_string()
    };
    let wanted = strip(identifier);
    all.iter().find(|s| strip(&id(s)) == wanted).or_else(|| {
        all.iter()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(identifier))
    })
}

/// `skills/.hub/index-cache/hermes-index.json`.
pub fn cache_path(hub_dir: &Path) -> PathBuf {
    hub_dir.join("index-cache").join("hermes-index.json")
}

/// The cached index if it is younger than [`INDEX_TTL`] (or any age with `stale`).
pub fn cached(hub_dir: &Path, stale: bool) -> Option<Value> {
    let path = cache_path(hub_dir);
    let meta = std::fs::metadata(&path).ok()?;
    let fresh = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age < INDEX_TTL);
    if !fresh && !stale {
        return None;
    }
    let value: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    value.get("skills").is_some().then_some(value)
}

/// Parses downloaded index bytes and caches them; `None` when they are not an index.
pub fn accept(hub_dir: &Path, bytes: &[u8]) -> Option<Value> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    if !value.get("skills").is_some_and(Value::is_array) {
        return None;
    }
    let path = cache_path(hub_dir);
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::write(&path, bytes);
    Some(value)
}

/// The skills inside a fetched source matching `query` (name, description or folder; all
/// of them for an empty query), as `(folder, name, description)`.
pub fn search_tree(root: &Path, query: &str) -> Vec<(String, String, String)> {
    let q = query.trim().to_lowercase();
    super::fetch::find_skills(root)
        .into_iter()
        .filter_map(|rel| {
            let dir = if rel.is_empty() {
                root.to_path_buf()
            } else {
                root.join(&rel)
            };
            let text = std::fs::read_to_string(dir.join("SKILL.md")).ok()?;
            let parsed = crate::skills::frontmatter::parse(&text);
            let field = |k: &str| crate::skills::frontmatter::text_field(&parsed.fields, k);
            let folder = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = field("name").unwrap_or(folder);
            let description = field("description").unwrap_or_default();
            let hay = format!("{name} {description} {rel}").to_lowercase();
            hay.contains(&q).then_some((rel, name, description))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ranking_follows_python() {
        let index = json!({"skills": [
            {"name": "docs-helper", "description": "writes pdf docs", "identifier": "a/b/docs-helper"},
            {"name": "pdf-tools", "description": "x", "identifier": "a/b/pdf-tools", "repo": "a/b", "path": "skills/pdf-tools"},
            {"name": "pdf", "description": "y", "identifier": "skills-sh/o/r/pdf", "trust_level": "trusted"},
            {"name": "other", "description": "z", "identifier": "o/other", "extra": {"provider": "PDF"}},
        ]});
        let names: Vec<String> = search(&index, "PDF", 10)
            .into_iter()
            .map(|h| h.name)
            .collect();
        assert_eq!(names, ["pdf", "pdf-tools", "other", "docs-helper"]);
        assert_eq!(search(&index, "", 2).len(), 2);
        let hit = search(&index, "pdf-tools", 1).remove(0);
        assert_eq!(
            hit.install_id(find(&index, "a/b/pdf-tools")),
            "a/b/skills/pdf-tools"
        );
        assert_eq!(find(&index, "o/r/pdf").unwrap()["name"], "pdf");
        assert!(search(&json!({"skills": 3}), "x", 5).is_empty());
    }

    #[test]
    fn cache_is_fresh_then_stale() {
        let dir = tempfile::tempdir().unwrap();
        assert!(accept(dir.path(), b"{\"nope\": 1}").is_none());
        assert!(accept(dir.path(), br#"{"skills": []}"#).is_some());
        assert!(cached(dir.path(), false).is_some());
    }
}
