//! The skills index of the system prompt: one line per skill (name and the first line of its
//! description, cut at 80 characters), grouped by category, under two sentences on how to use
//! them. It is sent with every request, so it says nothing else. Only skills offered in this
//! session appear: not disabled, made for this OS, and with the toolsets they require on
//! (`metadata.hermes.requires_toolsets`); a skill the injection scanner blocks is left out, with
//! a warning and a line in `logs/security.log`. No index without `skill_view` (the model could
//! not load what it lists); with `skill_manage` it also says when to save a skill, even while
//! there are none.

use super::Library;
use super::loader::Skill;

/// The longest description shown in the index, in characters.
const INDEX_DESCRIPTION_CHARS: usize = 80;

const HEADER: &str = "# Skills\nSaved procedures for tasks that come back. When one fits the task, load it with skill_view(name) before you start, and follow it.";
const SAVE_HINT: &str = "After a hard task (many tool calls, a tricky fix, a workflow worth repeating), save what worked with skill_manage; when a skill you followed was wrong or incomplete, patch it before you finish.";
const NONE_YET: &str = "# Skills\nNo skills are saved yet. After a hard task (many tool calls, a tricky fix, a workflow worth repeating), save what worked with skill_manage so later sessions can follow it.";

/// The index for a session and what the user should know about the skills.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionIndex {
    pub text: Option<String>,
    pub warnings: Vec<String>,
}

/// Builds the index for a session whose model has `tools` (from `toolsets`).
pub fn session_index(library: &Library, tools: &[&str], toolsets: &[&str]) -> SessionIndex {
    if !tools.contains(&"skill_view") {
        return SessionIndex::default();
    }
    let loaded = library.load();
    let mut warnings = loaded.warnings.clone();
    let mut shown: Vec<&Skill> = Vec::new();
    for skill in loaded.active() {
        if !skill.conditions().met(tools, toolsets) {
            continue;
        }
        if let Some(findings) = skill.scan() {
            let line = findings.describe(&skill.shown_path());
            library.log_blocked(&line);
            warnings.push(format!("{line}; it is left out of the skills index"));
            continue;
        }
        shown.push(skill);
    }
    SessionIndex {
        text: render(&shown, tools.contains(&"skill_manage")),
        warnings,
    }
}

/// The index text for `skills` (already filtered and sorted by category, then name).
pub fn render(skills: &[&Skill], can_save: bool) -> Option<String> {
    if skills.is_empty() {
        return can_save.then(|| NONE_YET.to_string());
    }
    let mut out = HEADER.to_string();
    if can_save {
        out.push(' ');
        out.push_str(SAVE_HINT);
    }
    let mut category: Option<&str> = None;
    for skill in skills {
        let indent = match skill.category.as_deref() {
            None => "",
            Some(c) => {
                if category != Some(c) {
                    out.push_str(&format!("\n{c}:"));
                    category = Some(c);
                }
                "  "
            }
        };
        out.push_str(&format!("\n{indent}- {}", skill.name));
        let description = one_line(&skill.description);
        if !description.is_empty() {
            out.push_str(": ");
            out.push_str(&description);
        }
    }
    Some(out)
}

/// The first line, cut at a word boundary to 80 characters with `…` (as the index shows it).
pub fn one_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= INDEX_DESCRIPTION_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(INDEX_DESCRIPTION_CHARS - 1).collect();
    let at_boundary = line
        .chars()
        .nth(INDEX_DESCRIPTION_CHARS - 1)
        .is_some_and(char::is_whitespace);
    let cut = match cut.rfind(' ') {
        Some(i) if !at_boundary && i > INDEX_DESCRIPTION_CHARS / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', '.', ' ']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_cut_at_words() {
        assert_eq!(one_line("Short.\nMore."), "Short.");
        let long = "Summarise a PDF: extract the text with pdftotext, then write a one-page summary of it.";
        let cut = one_line(long);
        assert_eq!(
            cut,
            "Summarise a PDF: extract the text with pdftotext, then write a one-page summary…"
        );
        assert!(cut.chars().count() <= INDEX_DESCRIPTION_CHARS);
        let words = "word ".repeat(30);
        assert_eq!(
            one_line(&words),
            format!("{}…", "word ".repeat(16).trim_end())
        );
    }

    #[test]
    fn nothing_to_list() {
        assert_eq!(render(&[], false), None);
        assert_eq!(render(&[], true).as_deref(), Some(NONE_YET));
    }
}
