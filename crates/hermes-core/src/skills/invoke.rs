//! Running a skill by its command: `/git-release 2.0` in a chat becomes one user message
//! carrying the skill's instructions (`SKILL.md`, template variables filled in), where its
//! folder is and which supporting files it has, then what the user typed after the command.
//! The command of a skill is its name as a slug (`Git_Release` answers to `/git-release`);
//! `_` and `-` are the same when typed. A skill the injection scanner blocks is refused.

use super::loader::Skill;
use super::view::{instructions, supporting_files};
use super::{Library, SkillError};

/// The offered skills by command, sorted; the first skill of a command wins.
pub fn commands(library: &Library) -> Vec<(String, Skill)> {
    let mut out: Vec<(String, Skill)> = Vec::new();
    for skill in library.load().skills.into_iter().filter(Skill::is_active) {
        if let Some(slug) = skill.command()
            && !out.iter().any(|(s, _)| *s == slug)
        {
            out.push((slug, skill));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The skill answering to `/word`, if any.
pub fn find_command(library: &Library, word: &str) -> Option<Skill> {
    let wanted = word.trim().to_lowercase().replace('_', "-");
    commands(library)
        .into_iter()
        .find(|(slug, _)| *slug == wanted)
        .map(|(_, skill)| skill)
}

/// The user message that runs `skill` with the user's `instruction` (may be empty); the
/// blocked notice when the scanner refuses the skill.
pub fn message(
    library: &Library,
    skill: &Skill,
    instruction: &str,
    session_id: &str,
) -> Result<String, SkillError> {
    let body = instructions(library, skill, session_id)?;
    let mut parts = vec![
        format!(
            "[The user ran the skill \"{}\": follow its instructions below for this request.]",
            skill.name
        ),
        body.trim().to_string(),
    ];
    let files = supporting_files(&skill.dir);
    let mut folder = format!(
        "[Skill folder: {}. Relative paths in the skill are inside it.",
        skill.dir.display()
    );
    if !files.is_empty() {
        folder.push_str(&format!(
            " Its files: {}; load one with skill_view(name=\"{}\", file_path=...) or run scripts by their full path.",
            files.join(", "),
            skill.name
        ));
    }
    folder.push(']');
    parts.push(folder);
    let instruction = instruction.trim();
    if !instruction.is_empty() {
        parts.push(format!("The user's request: {instruction}"));
    }
    library.usage().used(&skill.name);
    Ok(parts.join("\n\n"))
}
