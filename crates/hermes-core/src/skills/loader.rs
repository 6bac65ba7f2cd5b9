//! Finding and reading skills. Walks each skills folder (the home's, then
//! `skills.external_dirs`) for `SKILL.md` files, following symlinks to a bounded depth and
//! skipping dot-folders (`.archive`, `.hub`, `.git`, ...), dependency and cache folders, and
//! the support folders of a skill (a `SKILL.md` under `references/` is documentation, not a
//! skill). Each skill is parsed and judged for this session: disabled in config.yaml, made for
//! another OS (`platforms: [macos]`), or for another runtime (`environments: [docker]`). A skill
//! that cannot be read is skipped with a warning naming the file; one whose frontmatter is not
//! valid YAML is read the Python Hermes's way (plain `key: value` lines) with a warning.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::frontmatter::{self, hermes_meta, list_field, text_field};
use super::{Library, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, SUPPORT_DIRS, SkillError};
use crate::injection::{self, Findings, Scope};

/// How deep below a skills folder `SKILL.md` files are looked for.
const MAX_DEPTH: usize = 6;
/// Folders that never hold skills (besides every dot-folder).
const EXCLUDED_DIRS: &[&str] = &["venv", "node_modules", "site-packages", "__pycache__"];

/// Whether a skill is offered in this session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    Active,
    /// Listed in `skills.disabled` (or this platform's `skills.platform_disabled`).
    Disabled,
    /// `platforms:` names only other operating systems.
    OtherPlatform(Vec<String>),
    /// `environments:` names only runtimes this is not (kanban, docker, s6). Such a skill is
    /// left out of listings but can still be loaded by name.
    OtherEnvironment(Vec<String>),
}

/// One skill as found on disk.
#[derive(Debug, Clone)]
pub struct Skill {
    /// The frontmatter `name`, else the folder name.
    pub name: String,
    /// The folder's name.
    pub dir_name: String,
    /// The frontmatter `description`, else the first line of text of the body.
    pub description: String,
    /// The first folder between the skills folder and the skill's (`devops` for
    /// `skills/devops/git-release`), none for a skill at the top.
    pub category: Option<String>,
    /// The skill's folder.
    pub dir: PathBuf,
    /// Its path below its skills folder, `/`-separated (`devops/git-release`).
    pub rel: String,
    /// From `skills.external_dirs` rather than the home.
    pub external: bool,
    pub fields: Map<String, Value>,
    /// The whole `SKILL.md`.
    pub text: String,
    pub availability: Availability,
}

/// When a skill belongs in the index, from `metadata.hermes`: `requires_toolsets` /
/// `requires_tools` (hidden while one is off) and `fallback_for_toolsets` /
/// `fallback_for_tools` (hidden while one is on).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conditions {
    pub requires_toolsets: Vec<String>,
    pub requires_tools: Vec<String>,
    pub fallback_for_toolsets: Vec<String>,
    pub fallback_for_tools: Vec<String>,
}

impl Conditions {
    /// Whether the skill fits a session offering `tools` from `toolsets`.
    pub fn met(&self, tools: &[&str], toolsets: &[&str]) -> bool {
        let has = |list: &[&str], x: &String| list.contains(&x.as_str());
        self.requires_toolsets.iter().all(|t| has(toolsets, t))
            && self.requires_tools.iter().all(|t| has(tools, t))
            && !self.fallback_for_toolsets.iter().any(|t| has(toolsets, t))
            && !self.fallback_for_tools.iter().any(|t| has(tools, t))
    }
}

impl Skill {
    pub fn skill_md(&self) -> PathBuf {
        self.dir.join("SKILL.md")
    }

    pub fn is_active(&self) -> bool {
        self.availability == Availability::Active
    }

    pub fn version(&self) -> Option<String> {
        text_field(&self.fields, "version")
    }

    /// `metadata.hermes.tags`, else a top-level `tags`.
    pub fn tags(&self) -> Vec<String> {
        hermes_or_top(&self.fields, "tags")
    }

    /// `metadata.hermes.related_skills`, else a top-level `related_skills`.
    pub fn related_skills(&self) -> Vec<String> {
        hermes_or_top(&self.fields, "related_skills")
    }

    pub fn conditions(&self) -> Conditions {
        let get = |k| list_field(hermes_meta(&self.fields, k));
        Conditions {
            requires_toolsets: get("requires_toolsets"),
            requires_tools: get("requires_tools"),
            fallback_for_toolsets: get("fallback_for_toolsets"),
            fallback_for_tools: get("fallback_for_tools"),
        }
    }

    /// What the injection scanner finds in `SKILL.md` (`None`: clean).
    pub fn scan(&self) -> Option<Findings> {
        let findings = injection::scan(&self.text, Scope::Context);
        (!findings.is_clean()).then_some(findings)
    }

    /// How the skill is named in notices and logs: `skills/devops/git-release/SKILL.md`.
    pub fn shown_path(&self) -> String {
        if self.external {
            self.skill_md().display().to_string()
        } else {
            format!("skills/{}/SKILL.md", self.rel)
        }
    }

    /// The `/command` that runs it: the name in lowercase, spaces and underscores as hyphens,
    /// other characters dropped (`None` when nothing is left).
    pub fn command(&self) -> Option<String> {
        command_slug(&self.name)
    }
}

fn hermes_or_top(fields: &Map<String, Value>, key: &str) -> Vec<String> {
    let meta = list_field(hermes_meta(fields, key));
    if meta.is_empty() {
        list_field(fields.get(key))
    } else {
        meta
    }
}

/// See [`Skill::command`].
pub fn command_slug(name: &str) -> Option<String> {
    let mut slug = String::new();
    for c in name.to_lowercase().chars() {
        let c = if c == ' ' || c == '_' { '-' } else { c };
        if (c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !(c == '-' && slug.ends_with('-'))
        {
            slug.push(c);
        }
    }
    let slug = slug.trim_matches('-').to_string();
    (!slug.is_empty()).then_some(slug)
}

/// Every skill found, and what the user should hear about the ones that could not be read.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// Sorted by category, then name; one per name.
    pub skills: Vec<Skill>,
    pub warnings: Vec<String>,
}

impl Loaded {
    /// The skills offered in this session.
    pub fn active(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.is_active())
    }
}

impl Library {
    /// Reads every skill of every skills folder (a missing folder has none).
    pub fn load(&self) -> Loaded {
        let mut found: Vec<Skill> = Vec::new();
        let mut warnings = Vec::new();
        for (i, root) in self.roots().into_iter().enumerate() {
            for path in skill_files(root) {
                match read_skill(root, &path, i > 0, &mut warnings) {
                    Some(mut skill) => {
                        skill.availability = self.judge(&skill);
                        found.push(skill);
                    }
                    None => continue,
                }
            }
        }
        // One skill per name: the first active one (the home's before external folders).
        let mut skills: Vec<Skill> = Vec::new();
        for skill in found {
            match skills.iter_mut().find(|s| s.name == skill.name) {
                None => skills.push(skill),
                Some(kept) => {
                    if !kept.is_active() && skill.is_active() {
                        *kept = skill;
                    } else if kept.is_active() && skill.is_active() {
                        warnings.push(format!(
                            "skill {} has the name `{}` of {}; it is not used",
                            skill.shown_path(),
                            skill.name,
                            kept.shown_path()
                        ));
                    }
                }
            }
        }
        skills.sort_by(|a, b| {
            (a.category.as_deref().unwrap_or(""), &a.name)
                .cmp(&(b.category.as_deref().unwrap_or(""), &b.name))
        });
        Loaded { skills, warnings }
    }

    fn judge(&self, skill: &Skill) -> Availability {
        if self.settings.disabled.contains(&skill.name)
            || self.settings.disabled.contains(&skill.dir_name)
        {
            return Availability::Disabled;
        }
        let platforms = list_field(skill.fields.get("platforms"));
        if !platform_matches(&platforms) {
            return Availability::OtherPlatform(platforms);
        }
        let environments = list_field(skill.fields.get("environments"));
        if !environment_matches(&environments) {
            return Availability::OtherEnvironment(environments);
        }
        Availability::Active
    }

    /// The skill called `name` (its name, folder name, path below the skills folder such as
    /// `devops/git-release`, or `category:name`), whatever its availability.
    pub fn find(&self, name: &str) -> Result<Skill, SkillError> {
        let wanted = name.trim().trim_matches('/');
        if wanted.is_empty() {
            return Err(SkillError::NoName);
        }
        if Path::new(wanted).is_absolute()
            || wanted.split(['/', '\\']).any(|p| p == ".." || p == ".")
        {
            return Err(SkillError::PathAsName(name.to_string()));
        }
        let colon = wanted.replacen(':', "/", 1);
        let loaded = self.load();
        let matches: Vec<&Skill> = loaded
            .skills
            .iter()
            .filter(|s| {
                s.name == wanted || s.dir_name == wanted || s.rel == wanted || s.rel == colon
            })
            .collect();
        match matches.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(SkillError::NotFound {
                name: name.to_string(),
                known: loaded.active().map(|s| s.name.clone()).take(30).collect(),
            }),
            many => Err(SkillError::Ambiguous {
                name: name.to_string(),
                paths: many.iter().map(|s| s.rel.clone()).collect(),
            }),
        }
    }
}

/// Every `SKILL.md` under `root`, sorted by path.
fn skill_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(root, 0, &mut out);
    out.sort();
    out
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let skill_md = dir.join("SKILL.md");
    let is_skill = depth > 0 && skill_md.is_file();
    if is_skill {
        out.push(skill_md);
    }
    if depth >= MAX_DEPTH {
        return;
    }
    for entry in entries.filter_map(Result::ok) {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.')
            || EXCLUDED_DIRS.contains(&name.as_str())
            || (is_skill && SUPPORT_DIRS.contains(&name.as_str()))
        {
            continue;
        }
        let path = entry.path();
        // `is_dir` follows symlinks: linked skill folders count, as in the Python Hermes.
        if path.is_dir() {
            walk(&path, depth + 1, out);
        }
    }
}

/// Reads one `SKILL.md`; `None` (with a warning) when it cannot be read as text.
fn read_skill(
    root: &Path,
    path: &Path,
    external: bool,
    warnings: &mut Vec<String>,
) -> Option<Skill> {
    let dir = path.parent()?.to_path_buf();
    let rel: Vec<String> = dir
        .strip_prefix(root)
        .ok()?
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            warnings.push(format!("skill {} skipped: {e}", path.display()));
            return None;
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        warnings.push(format!(
            "skill {} skipped: it is not UTF-8 text",
            path.display()
        ));
        return None;
    };
    let parsed = frontmatter::parse(&text);
    if let Some(problem) = &parsed.problem {
        warnings.push(format!(
            "skill {}: {problem}; read as plain `key: value` lines",
            path.display()
        ));
    }
    let dir_name = rel.last().cloned().unwrap_or_default();
    let name: String = text_field(&parsed.fields, "name")
        .unwrap_or_else(|| dir_name.clone())
        .chars()
        .take(MAX_NAME_CHARS)
        .collect();
    let mut description = text_field(&parsed.fields, "description").unwrap_or_else(|| {
        parsed
            .body
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or_default()
            .to_string()
    });
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        description = description
            .chars()
            .take(MAX_DESCRIPTION_CHARS - 1)
            .collect();
        description.push('…');
    }
    Some(Skill {
        name,
        description,
        category: (rel.len() > 1).then(|| rel[0].clone()),
        rel: rel.join("/"),
        dir_name,
        dir,
        external,
        fields: parsed.fields,
        text,
        availability: Availability::Active,
    })
}

/// `sys.platform`-style name of this OS (`linux`, `darwin`, `win32`).
fn current_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

/// Whether `platforms` (empty: all) includes this OS (`macos`, `linux`, `windows`, or a
/// `sys.platform` prefix).
pub fn platform_matches(platforms: &[String]) -> bool {
    let current = current_platform();
    platforms.is_empty()
        || platforms.iter().any(|p| {
            let p = p.trim().to_lowercase();
            let mapped = match p.as_str() {
                "macos" | "mac" | "osx" => "darwin",
                "windows" => "win32",
                other => other,
            };
            current.starts_with(mapped)
        })
}

/// Whether one of `environments` (empty: all) is the runtime this is. Tags this build does
/// not know count as present.
fn environment_matches(environments: &[String]) -> bool {
    environments.is_empty()
        || environments.iter().any(|e| {
            let e = e.trim().to_lowercase();
            match e.as_str() {
                "" => false,
                "kanban" => ["HERMES_KANBAN_TASK", "HERMES_KANBAN_BOARD"]
                    .iter()
                    .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty())),
                "docker" => {
                    Path::new("/.dockerenv").exists() || Path::new("/run/.containerenv").exists()
                }
                "s6" => {
                    Path::new("/run/s6").is_dir() || Path::new("/package/admin/s6-overlay").is_dir()
                }
                _ => true,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::SkillSettings;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn slugs_for_commands() {
        assert_eq!(
            command_slug("Git_Release Notes").as_deref(),
            Some("git-release-notes")
        );
        assert_eq!(command_slug("c++ tips").as_deref(), Some("c-tips"));
        assert_eq!(command_slug("--").as_deref(), None);
    }

    #[test]
    fn platforms_and_conditions() {
        assert!(platform_matches(&[]));
        let here = match std::env::consts::OS {
            "macos" => "macos",
            "windows" => "windows",
            _ => "linux",
        };
        assert!(platform_matches(&["beos".into(), here.into()]));
        assert!(!platform_matches(&["beos".into()]));
        let c = Conditions {
            requires_toolsets: vec!["terminal".into()],
            fallback_for_tools: vec!["web_search".into()],
            ..Conditions::default()
        };
        assert!(c.met(&["terminal"], &["terminal"]));
        assert!(!c.met(&["terminal"], &["file"]));
        assert!(!c.met(&["web_search"], &["terminal", "web"]));
    }

    #[test]
    fn walking_skips_dot_and_support_folders_and_follows_links() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("skills");
        let doc = "---\nname: {n}\ndescription: d\n---\nbody\n";
        write(&root, "a/SKILL.md", &doc.replace("{n}", "a"));
        write(
            &root,
            "a/references/inner/SKILL.md",
            &doc.replace("{n}", "inner"),
        );
        write(&root, "cat/b/SKILL.md", &doc.replace("{n}", "b"));
        write(&root, ".archive/c/SKILL.md", &doc.replace("{n}", "c"));
        write(&root, "node_modules/d/SKILL.md", &doc.replace("{n}", "d"));
        write(&root, "SKILL.md", &doc.replace("{n}", "root"));
        write(
            &tmp.path().join("elsewhere"),
            "e/SKILL.md",
            &doc.replace("{n}", "e"),
        );
        #[cfg(unix)]
        std::os::unix::fs::symlink(tmp.path().join("elsewhere/e"), root.join("e")).unwrap();
        let loaded = Library::new(&root, SkillSettings::default()).load();
        let names: Vec<(&str, Option<&str>)> = loaded
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.category.as_deref()))
            .collect();
        #[cfg(unix)]
        assert_eq!(names, [("a", None), ("e", None), ("b", Some("cat"))]);
        #[cfg(not(unix))]
        assert_eq!(names, [("a", None), ("b", Some("cat"))]);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    }
}
