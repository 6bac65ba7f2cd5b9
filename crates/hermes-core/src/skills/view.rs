//! What `skill_view` returns: a skill's `SKILL.md` with its metadata and the list of its
//! supporting files, or one of those files. Paths stay inside the skill's folder (no `..`, no
//! absolute paths, no symlink leading out); text is capped like `read_file` (100,000
//! characters, the rest named); binary files are described, not dumped. Everything is scanned
//! for prompt injection first: a hit returns the `[BLOCKED: ...]` notice instead of the text
//! and is logged to `logs/security.log`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::loader::{Availability, Skill};
use super::{Library, SUPPORT_DIRS, SkillError};
use crate::injection::{self, Scope};

/// The most characters of one file the model gets (as `read_file`).
pub const MAX_VIEW_CHARS: usize = 100_000;
/// Supporting files listed for one skill.
const MAX_LISTED_FILES: usize = 100;

/// The skill called `name`, ready to be loaded: refused when disabled or made for another OS.
pub fn loadable(library: &Library, name: &str) -> Result<Skill, SkillError> {
    let skill = library.find(name)?;
    match &skill.availability {
        Availability::Disabled => Err(SkillError::Disabled(skill.name.clone())),
        Availability::OtherPlatform(platforms) => Err(SkillError::OtherPlatform {
            platforms: platforms.clone(),
            name: skill.name.clone(),
        }),
        Availability::Active | Availability::OtherEnvironment(_) => Ok(skill),
    }
}

/// `SKILL.md` of a skill, scanned: the text (template variables filled in), or the blocked
/// notice; [`SkillError::Blocked`] carries the notice, so callers that must not run it can
/// refuse.
pub fn instructions(
    library: &Library,
    skill: &Skill,
    session_id: &str,
) -> Result<String, SkillError> {
    if let Some(findings) = skill.scan() {
        library.log_blocked(&findings.describe(&skill.shown_path()));
        return Err(SkillError::Blocked(
            findings.blocked_notice(&skill.shown_path()),
        ));
    }
    Ok(if library.settings().template_vars {
        fill_template(&skill.text, &skill.dir, session_id)
    } else {
        skill.text.clone()
    })
}

/// `${HERMES_SKILL_DIR}` and `${HERMES_SESSION_ID}` filled in (the session's only when known).
pub fn fill_template(text: &str, dir: &Path, session_id: &str) -> String {
    let mut out = text.replace("${HERMES_SKILL_DIR}", &dir.display().to_string());
    if !session_id.is_empty() {
        out = out.replace("${HERMES_SESSION_ID}", session_id);
    }
    out
}

/// The `skill_view` result for `name` (and `file_path`, when given).
pub fn view(
    library: &Library,
    name: &str,
    file_path: Option<&str>,
    session_id: &str,
) -> Result<(Skill, Value), SkillError> {
    let skill = loadable(library, name)?;
    let file_path = file_path.map(str::trim).filter(|p| !p.is_empty());
    if let Some(rel) = file_path.filter(|p| *p != "SKILL.md") {
        let value = view_file(library, &skill, rel)?;
        return Ok((skill, value));
    }
    // A blocked skill is still viewed: the notice stands in for its text.
    let content =
        instructions(library, &skill, session_id).unwrap_or_else(|notice| notice.to_string());
    let mut out = json!({
        "name": skill.name,
        "description": skill.description,
        "content": cap(&content, &skill.skill_md()),
        "dir": skill.dir.display().to_string(),
    });
    if let Some(category) = &skill.category {
        out["category"] = json!(category);
    }
    for (key, list) in [
        ("tags", skill.tags()),
        ("related_skills", skill.related_skills()),
    ] {
        if !list.is_empty() {
            out[key] = json!(list);
        }
    }
    let files = supporting_files(&skill.dir);
    if !files.is_empty() {
        out["files"] = json!(files);
        out["hint"] = json!("Load a file with skill_view(name, file_path).");
    }
    Ok((skill, out))
}

fn view_file(library: &Library, skill: &Skill, rel: &str) -> Result<Value, SkillError> {
    let path = resolve(&skill.dir, rel)?;
    if !path.is_file() {
        return Err(SkillError::NoFile {
            skill: skill.name.clone(),
            rel: rel.to_string(),
            files: supporting_files(&skill.dir),
        });
    }
    let bytes = std::fs::read(&path).map_err(|source| SkillError::ReadFile {
        rel: rel.to_string(),
        source,
    })?;
    let content = match text_of(&bytes) {
        None => format!("[binary file: {rel}, {} bytes]", bytes.len()),
        Some(text) => {
            let shown = format!("skills/{}/{rel}", skill.rel);
            match injection::guard(&shown, text, Scope::Context) {
                (checked, Some(findings)) => {
                    library.log_blocked(&findings.describe(&shown));
                    checked.into_owned()
                }
                (checked, None) => cap(&checked, &path),
            }
        }
    };
    Ok(json!({"name": skill.name, "file": rel, "content": content}))
}

/// Text, unless the bytes look binary (a NUL early on, or not UTF-8).
fn text_of(bytes: &[u8]) -> Option<&str> {
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// At most [`MAX_VIEW_CHARS`] characters, with a note naming the file for the rest.
fn cap(text: &str, path: &Path) -> String {
    let total = text.chars().count();
    if total <= MAX_VIEW_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_VIEW_CHARS).collect();
    format!(
        "{kept}\n[truncated: the first {} of {} characters; read the rest of {} with read_file]",
        hermes_llm::util::thousands(MAX_VIEW_CHARS as u64),
        hermes_llm::util::thousands(total as u64),
        path.display()
    )
}

/// `rel` inside the skill folder `dir`: relative, without `..`, and not escaping through a
/// symlink. The file need not exist yet.
pub fn resolve(dir: &Path, rel: &str) -> Result<PathBuf, SkillError> {
    let rel = rel.trim();
    let outside = || SkillError::Outside(rel.to_string());
    if rel.is_empty() {
        return Err(SkillError::NoFilePath);
    }
    let path = Path::new(rel);
    if path.is_absolute()
        || rel.starts_with('/')
        || rel.starts_with('\\')
        || rel.split(['/', '\\']).any(|p| p == "..")
        || rel.contains(':')
    {
        return Err(outside());
    }
    let target = dir.join(path);
    let base = dir.canonicalize().map_err(SkillError::OpenFolder)?;
    // The deepest part that exists must resolve inside the folder.
    let mut existing = target.as_path();
    while !existing.exists() {
        existing = existing.parent().ok_or_else(outside)?;
    }
    let real = existing.canonicalize().map_err(|_| outside())?;
    if !real.starts_with(&base) {
        return Err(outside());
    }
    Ok(target)
}

/// The files under a skill's support folders, `/`-separated, sorted.
pub fn supporting_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for sub in SUPPORT_DIRS {
        collect(&dir.join(sub), sub, 0, &mut out);
    }
    out.sort();
    out.truncate(MAX_LISTED_FILES);
    out
}

fn collect(dir: &Path, rel: &str, depth: usize, out: &mut Vec<String>) {
    if depth > 4 || out.len() >= MAX_LISTED_FILES * 2 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let child = format!("{rel}/{name}");
        if path.is_dir() {
            collect(&path, &child, depth + 1, out);
        } else if path.is_file() {
            out.push(child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_skill() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::write(tmp.path().join("secret.txt"), "x").unwrap();
        assert!(resolve(&dir, "references/new.md").is_ok());
        assert!(resolve(&dir, "scripts/deep/new.sh").is_ok());
        for bad in [
            "../secret.txt",
            "/etc/passwd",
            "references/../../secret.txt",
            "",
            "C:\\x",
        ] {
            assert!(resolve(&dir, bad).is_err(), "{bad}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(tmp.path(), dir.join("assets")).unwrap();
            let e = resolve(&dir, "assets/secret.txt").unwrap_err();
            assert!(matches!(e, SkillError::Outside(_)), "{e}");
            assert!(e.to_string().contains("outside the skill's folder"), "{e}");
        }
    }

    #[test]
    fn templates_and_caps() {
        let dir = Path::new("/h/skills/x");
        assert_eq!(
            fill_template(
                "run ${HERMES_SKILL_DIR}/a.sh in ${HERMES_SESSION_ID}",
                dir,
                ""
            ),
            "run /h/skills/x/a.sh in ${HERMES_SESSION_ID}"
        );
        assert_eq!(fill_template("${HERMES_SESSION_ID}", dir, "s1"), "s1");
        let long = "é".repeat(MAX_VIEW_CHARS + 5);
        let capped = cap(&long, Path::new("/f"));
        assert!(capped.ends_with("[truncated: the first 100,000 of 100,005 characters; read the rest of /f with read_file]"));
        assert_eq!(text_of(b"a\0b"), None);
        assert_eq!(text_of(&[0xe9]), None);
    }
}
