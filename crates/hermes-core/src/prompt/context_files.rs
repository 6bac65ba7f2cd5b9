//! Project context files: the rules a project keeps for coding agents, found from the working
//! directory and put into the system prompt. Only the first kind found is used, in this order:
//! `.hermes.md` / `HERMES.md` (in the working directory or a parent up to the git root),
//! `AGENTS.md`, `CLAUDE.md`, then `.cursorrules` with `.cursor/rules/*.mdc`. Each file is
//! scanned for prompt injection (a hit replaces it by a `[BLOCKED: ...]` notice) and capped:
//! past the limit (20,000 chars by default) the first 70 % and the last 20 % are kept around a
//! marker that says where to read the rest.

use std::path::{Path, PathBuf};

use crate::injection::{self, Scope};

/// Characters of one context source kept by default (`context_file_max_chars`).
pub const DEFAULT_MAX_CHARS: usize = 20_000;
/// Share of the cap kept from the start and from the end of an over-long file.
const HEAD_SHARE: f64 = 0.7;
const TAIL_SHARE: f64 = 0.2;

/// A context source ready for the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// How it is named in the prompt (`AGENTS.md`, `../HERMES.md`, `.cursorrules`).
    pub name: String,
    /// Scanned and capped content.
    pub body: String,
}

/// What loading produced: the file (if any) and what the user should be told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    pub file: Option<ContextFile>,
    /// Files skipped or truncated.
    pub warnings: Vec<String>,
    /// Files blocked by the injection scanner (also worth a security log line).
    pub blocked: Vec<String>,
}

/// Files of one kind found for a directory: (name shown in the prompt, path).
type Found = Vec<(String, PathBuf)>;

/// Finds and loads the context file for `cwd`.
pub fn load(cwd: &Path, max_chars: usize) -> Loaded {
    let mut loaded = Loaded::default();
    let candidates: [fn(&Path) -> Found; 4] = [hermes_md, agents_md, claude_md, cursor_rules];
    for find in candidates {
        let mut sections = Vec::new();
        let mut first_path = None;
        for (name, path) in find(cwd) {
            let Some(text) = read(&path, &name, &mut loaded.warnings) else {
                continue;
            };
            first_path.get_or_insert_with(|| (name.clone(), path.clone()));
            // Front matter of HERMES.md holds settings, not instructions.
            let text = if name.ends_with(".hermes.md") || name.ends_with("HERMES.md") {
                strip_front_matter(&text)
            } else {
                &text
            };
            let (body, findings) = injection::guard(&name, text, Scope::Context);
            if let Some(f) = findings {
                loaded.blocked.push(f.describe(&name));
            }
            sections.push((name, body.into_owned()));
        }
        let Some((name, path)) = first_path else {
            continue;
        };
        let body = match sections.len() {
            1 => sections.remove(0).1,
            _ => sections
                .iter()
                .map(|(n, b)| format!("## {n}\n{b}"))
                .collect::<Vec<_>>()
                .join("\n\n"),
        };
        let body = cap(&name, &path, body, max_chars, &mut loaded.warnings);
        loaded.file = Some(ContextFile { name, body });
        return loaded;
    }
    loaded
}

/// Reads a file as trimmed text without a byte-order mark; `None` when missing or empty.
pub(crate) fn read(path: &Path, name: &str, warnings: &mut Vec<String>) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => {
                let text = text.trim_start_matches('\u{FEFF}').trim();
                (!text.is_empty()).then(|| text.to_string())
            }
            Err(_) => {
                warnings.push(format!("{name} skipped: not valid UTF-8"));
                None
            }
        },
        Err(e) => {
            warnings.push(format!("{name} skipped: {e}"));
            None
        }
    }
}

/// Keeps the head and tail of an over-long text around a marker naming the full file.
pub(crate) fn cap(
    name: &str,
    path: &Path,
    text: String,
    max_chars: usize,
    warnings: &mut Vec<String>,
) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text;
    }
    let head = (max_chars as f64 * HEAD_SHARE) as usize;
    let tail = (max_chars as f64 * TAIL_SHARE) as usize;
    warnings.push(format!(
        "{name} has {total} characters, over the limit of {max_chars}: its middle is left out of the prompt (raise context_file_max_chars to keep more)"
    ));
    let head_text: String = text.chars().take(head).collect();
    let tail_text: String = text.chars().skip(total - tail).collect();
    format!(
        "{head_text}\n\n[... {} characters of {name} left out here (kept the first {head} and the last {tail} of {total}); read the whole file with read_file: {}]\n\n{tail_text}",
        total - head - tail,
        path.display()
    )
}

/// `.hermes.md` or `HERMES.md` in `cwd`, else in each parent up to the git root (without a
/// git root only `cwd` is searched: a stray file in /tmp or $HOME must not be picked up).
fn hermes_md(cwd: &Path) -> Found {
    let root = cwd.ancestors().find(|d| d.join(".git").exists());
    let mut prefix = String::new();
    for dir in cwd.ancestors() {
        for file in [".hermes.md", "HERMES.md"] {
            let path = dir.join(file);
            if path.is_file() {
                return vec![(format!("{prefix}{file}"), path)];
            }
        }
        if root.is_none_or(|r| r == dir) {
            break;
        }
        prefix.push_str("../");
    }
    Vec::new()
}

fn in_cwd(cwd: &Path, names: &[&str]) -> Found {
    names
        .iter()
        .map(|n| (n.to_string(), cwd.join(n)))
        .find(|(_, p)| p.is_file())
        .into_iter()
        .collect()
}

fn agents_md(cwd: &Path) -> Found {
    in_cwd(cwd, &["AGENTS.md", "agents.md"])
}

fn claude_md(cwd: &Path) -> Found {
    in_cwd(cwd, &["CLAUDE.md", "claude.md"])
}

fn cursor_rules(cwd: &Path) -> Found {
    let mut found = in_cwd(cwd, &[".cursorrules"]);
    if let Ok(dir) = std::fs::read_dir(cwd.join(".cursor/rules")) {
        let mut mdc: Vec<PathBuf> = dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "mdc"))
            .collect();
        mdc.sort();
        for p in mdc {
            let name = p
                .file_name()
                .map(|n| format!(".cursor/rules/{}", n.to_string_lossy()))
                .unwrap_or_default();
            found.push((name, p));
        }
    }
    found
}

/// Removes a leading YAML front matter block (`---` ... `---`).
pub(crate) fn strip_front_matter(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("---") else {
        return text;
    };
    match rest.find("\n---") {
        Some(end) => {
            let body = rest[end + 4..].trim_start_matches(['\r', '\n']);
            if body.trim().is_empty() { text } else { body }
        }
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_removed() {
        assert_eq!(strip_front_matter("---\nmodel: x\n---\nBody"), "Body");
        assert_eq!(strip_front_matter("No front matter"), "No front matter");
        assert_eq!(strip_front_matter("---\nunclosed"), "---\nunclosed");
    }

    #[test]
    fn cap_keeps_head_and_tail() {
        let mut w = Vec::new();
        let text: String = (0..100)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let out = cap("F.md", Path::new("/p/F.md"), text.clone(), 50, &mut w);
        assert!(out.starts_with(&text[..35]));
        assert!(out.ends_with(&text[90..]));
        assert!(out.contains("[... 55 characters of F.md left out here (kept the first 35 and the last 10 of 100); read the whole file with read_file: /p/F.md]"));
        assert_eq!(w.len(), 1);
        let short = cap("F.md", Path::new("/p/F.md"), "short".into(), 50, &mut w);
        assert_eq!(short, "short");
    }
}
