//! Tab completion in the line editor: slash-command names (with their help as description) and
//! the `/<skill-name>` of each skill (with its description), command arguments (model names, provider ids, toolsets, stored session ids, skin names,
//! command names for `/help`, on/off), and file paths after `@` anywhere in the line.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_core::skills::{Library, invoke};
use reedline::{Completer, CompletionResult, Span, Suggestion};

use crate::repl::slash::{self, Arg, COMMANDS};

/// Stored sessions are listed again after this long.
const SESSION_CACHE: Duration = Duration::from_secs(5);
/// Sessions offered for `/resume`.
const SESSION_LIMIT: usize = 50;
/// Paths offered for one `@` completion.
const PATH_LIMIT: usize = 200;

/// What completion knows about this run (filled in once the session is built).
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    pub models: Vec<String>,
    pub providers: Vec<String>,
    pub toolsets: Vec<String>,
    /// `$HERMES_HOME/skins`.
    pub skins_dir: PathBuf,
    /// Where the stored sessions are (`sessions.db`, or PostgreSQL with `store.backend`).
    pub sessions: Option<hermes_store::StoreLocation>,
    /// Where `@` paths are relative to.
    pub cwd: PathBuf,
    /// The session's skills, offered as `/<skill-name>`.
    pub skills: Option<Arc<Library>>,
}

/// A stored session as completion shows it: id, title or first words, model.
#[derive(Debug, Clone)]
struct StoredSession {
    id: String,
    label: String,
    model: Option<String>,
}

pub struct SlashCompleter {
    shared: Arc<Mutex<Vocabulary>>,
    vocabulary: Vocabulary,
    sessions: Option<(Instant, Vec<StoredSession>)>,
    /// Skill commands and descriptions, read again after [`SESSION_CACHE`].
    skills: Option<(Instant, Vec<(String, String)>)>,
}

impl SlashCompleter {
    pub fn new(shared: Arc<Mutex<Vocabulary>>) -> SlashCompleter {
        SlashCompleter {
            shared,
            vocabulary: Vocabulary::default(),
            sessions: None,
            skills: None,
        }
    }

    /// Suggestions for the text before the cursor.
    pub fn suggest(&mut self, line: &str, pos: usize) -> Vec<Suggestion> {
        if let Ok(v) = self.shared.lock() {
            self.vocabulary = v.clone();
        }
        let pos = pos.min(line.len());
        let Some(before) = line.get(..pos) else {
            return Vec::new();
        };
        let word_start = before.rfind(char::is_whitespace).map_or(0, |i| {
            i + before[i..].chars().next().map_or(1, char::len_utf8)
        });
        let word = &before[word_start..];
        if let Some(path) = word.strip_prefix('@') {
            return paths(&self.vocabulary.cwd, path, word_start + 1, pos);
        }
        let Some(rest) = before.strip_prefix('/') else {
            return Vec::new();
        };
        if word_start == 0 {
            let mut out = commands(rest, pos);
            let lower = rest.to_lowercase().replace('_', "-");
            let builtin: Vec<String> = out.iter().map(|s| s.value.clone()).collect();
            for (command, description) in self.skill_commands() {
                let value = format!("/{command}");
                if command.starts_with(&lower) && !builtin.contains(&value) {
                    out.push(suggestion(value, Some(description), 0, pos, true));
                }
            }
            return out;
        }
        let name = rest.split_whitespace().next().unwrap_or_default();
        let Ok(command) = slash::resolve(name) else {
            return Vec::new();
        };
        // Only the first argument is completed.
        if before[..word_start].split_whitespace().count() > 1 {
            return Vec::new();
        }
        let candidates: Vec<(String, Option<String>)> = match command.arg {
            Arg::Model => {
                // Models configured, then those used in stored sessions.
                let mut models = self.vocabulary.models.clone();
                for m in self.sessions().into_iter().filter_map(|s| s.model) {
                    if !models.contains(&m) {
                        models.push(m);
                    }
                }
                plain(&models)
            }
            Arg::Provider => plain(&self.vocabulary.providers),
            Arg::Toolset => plain(&self.vocabulary.toolsets),
            Arg::OnOff => plain(&["on".to_string(), "off".to_string()]),
            Arg::Reasoning => plain(
                &["show", "hide"]
                    .iter()
                    .chain(hermes_llm::reasoning::LEVELS)
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>(),
            ),
            Arg::Skin => super::skin::list(&self.vocabulary.skins_dir)
                .into_iter()
                .map(|s| (s.name, Some(s.description).filter(|d| !d.is_empty())))
                .collect(),
            Arg::Session => self
                .sessions()
                .into_iter()
                .map(|s| (s.id, Some(s.label)))
                .collect(),
            Arg::Command => COMMANDS
                .iter()
                .map(|c| (c.name.to_string(), Some(c.help.to_string())))
                .collect(),
            Arg::None | Arg::Text | Arg::Number => Vec::new(),
        };
        let lower = word.to_lowercase();
        candidates
            .into_iter()
            .filter(|(value, _)| value.to_lowercase().starts_with(&lower))
            .map(|(value, description)| suggestion(value, description, word_start, pos, true))
            .collect()
    }

    /// The skills' commands, cached for a few seconds (skills change during a session).
    fn skill_commands(&mut self) -> Vec<(String, String)> {
        if let Some((at, list)) = &self.skills
            && at.elapsed() < SESSION_CACHE
        {
            return list.clone();
        }
        let list: Vec<(String, String)> = match &self.vocabulary.skills {
            Some(library) => invoke::commands(library)
                .into_iter()
                .filter(|(c, _)| {
                    !COMMANDS
                        .iter()
                        .any(|b| b.name == c || b.aliases.contains(&c.as_str()))
                })
                .map(|(c, s)| (c, hermes_tools::output::shorten_line(&s.description, 60)))
                .collect(),
            None => Vec::new(),
        };
        self.skills = Some((Instant::now(), list.clone()));
        list
    }

    /// Recent sessions, cached for a few seconds.
    fn sessions(&mut self) -> Vec<StoredSession> {
        if let Some((at, list)) = &self.sessions
            && at.elapsed() < SESSION_CACHE
        {
            return list.clone();
        }
        let location = self.vocabulary.sessions.clone().filter(|l| match l {
            hermes_store::StoreLocation::File(p) => p.is_file(),
            hermes_store::StoreLocation::Postgres { .. } => true,
        });
        let list: Vec<StoredSession> = if let Some(location) = location {
            location
                .open()
                .and_then(|s| s.list_sessions(SESSION_LIMIT, None))
                .map(|sessions| {
                    sessions
                        .into_iter()
                        .map(|s| {
                            let label = s.session.title.clone().unwrap_or(s.preview);
                            StoredSession {
                                id: s.session.id,
                                label: hermes_tools::output::shorten_line(&label, 50),
                                model: s.session.model,
                            }
                        })
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        self.sessions = Some((Instant::now(), list.clone()));
        list
    }
}

impl Completer for SlashCompleter {
    fn complete(&mut self, line: &str, pos: usize) -> CompletionResult {
        CompletionResult::fresh(self.suggest(line, pos))
    }
}

fn plain(values: &[String]) -> Vec<(String, Option<String>)> {
    values.iter().map(|v| (v.clone(), None)).collect()
}

fn suggestion(
    value: String,
    description: Option<String>,
    start: usize,
    end: usize,
    space: bool,
) -> Suggestion {
    Suggestion {
        value,
        description,
        span: Span::new(start, end),
        append_whitespace: space,
        ..Suggestion::default()
    }
}

/// `/` plus a prefix: command names and aliases.
fn commands(prefix: &str, pos: usize) -> Vec<Suggestion> {
    let lower = prefix.to_lowercase();
    let mut out = Vec::new();
    for c in COMMANDS {
        let names = std::iter::once(c.name).chain(c.aliases.iter().copied());
        for n in names.filter(|n| n.starts_with(&lower)) {
            let description = if n == c.name {
                c.help.to_string()
            } else {
                format!("same as /{}", c.name)
            };
            let display = if c.args.is_empty() || n != c.name {
                None
            } else {
                Some(format!("/{n} {}", c.args))
            };
            let mut s = suggestion(
                format!("/{n}"),
                Some(description),
                0,
                pos,
                c.arg != Arg::None,
            );
            s.display_override = display;
            out.push(s);
        }
    }
    out
}

/// Files and directories matching `typed` (relative to `cwd`, or absolute, or `~/`);
/// directories end in `/` so completion can go on into them.
fn paths(cwd: &Path, typed: &str, start: usize, end: usize) -> Vec<Suggestion> {
    let (dir_part, file_prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let dir = if let Some(rest) = dir_part.strip_prefix("~/") {
        std::env::var_os("HOME").map_or_else(|| cwd.join(dir_part), |h| PathBuf::from(h).join(rest))
    } else if dir_part.starts_with('/') {
        PathBuf::from(dir_part)
    } else {
        cwd.join(dir_part)
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let hidden = name.starts_with('.') && !file_prefix.starts_with('.');
            (!hidden && name.starts_with(file_prefix)).then(|| (name, e.path().is_dir()))
        })
        .take(PATH_LIMIT)
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(name, is_dir)| {
            let value = format!("{dir_part}{name}{}", if is_dir { "/" } else { "" });
            suggestion(value, None, start, end, !is_dir)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(s: &[Suggestion]) -> Vec<String> {
        s.iter().map(|s| s.value.clone()).collect()
    }

    fn completer(dir: &Path) -> SlashCompleter {
        SlashCompleter::new(Arc::new(Mutex::new(Vocabulary {
            models: vec!["gpt-5.1".into(), "claude-sonnet-4-5".into()],
            providers: vec!["openrouter".into(), "openai".into()],
            toolsets: vec!["file".into(), "terminal".into()],
            skins_dir: dir.join("skins"),
            sessions: Some(hermes_store::StoreLocation::File(dir.join("sessions.db"))),
            cwd: dir.to_path_buf(),
            skills: Some(Arc::new(Library::new(
                dir.join("skills"),
                hermes_core::skills::SkillSettings::default(),
            ))),
        })))
    }

    #[test]
    fn commands_and_their_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = completer(dir.path());
        assert_eq!(values(&c.suggest("/he", 3)), vec!["/help"]);
        assert_eq!(values(&c.suggest("/tool", 5)), vec!["/tools", "/toolsets"]);
        assert_eq!(values(&c.suggest("/ex", 3)), vec!["/exit"]);
        assert_eq!(values(&c.suggest("/model g", 8)), vec!["gpt-5.1"]);
        assert_eq!(
            values(&c.suggest("/provider open", 14)),
            vec!["openrouter", "openai"]
        );
        assert_eq!(values(&c.suggest("/tools te", 9)), vec!["terminal"]);
        assert_eq!(values(&c.suggest("/verbose o", 10)), vec!["on", "off"]);
        assert_eq!(values(&c.suggest("/skin mo", 8)), vec!["mono"]);
        assert_eq!(values(&c.suggest("/help und", 9)), vec!["undo"]);
        assert!(
            c.suggest("/model gpt-5.1 x", 16).is_empty(),
            "one argument only"
        );
        assert!(c.suggest("hello", 5).is_empty());
        let s = &c.suggest("/model g", 8)[0];
        assert_eq!((s.span.start, s.span.end), (7, 8));
    }

    #[test]
    fn skills_complete_as_commands() {
        let dir = tempfile::tempdir().unwrap();
        for (rel, name) in [
            ("deploy-app", "deploy-app"),
            ("ops/Helper_Tool", "Helper_Tool"),
            ("help", "help"),
        ] {
            let d = dir.path().join("skills").join(rel);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: Does {name}.\n---\nSteps.\n"),
            )
            .unwrap();
        }
        let mut c = completer(dir.path());
        assert_eq!(values(&c.suggest("/dep", 4)), vec!["/deploy-app"]);
        let s = &c.suggest("/dep", 4)[0];
        assert_eq!(s.description.as_deref(), Some("Does deploy-app."));
        assert_eq!(values(&c.suggest("/helper_", 8)), vec!["/helper-tool"]);
        assert_eq!(
            values(&c.suggest("/hel", 4)),
            vec!["/help", "/helper-tool"],
            "a skill named like a command is not offered twice"
        );
    }

    #[test]
    fn paths_after_at() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
        let mut c = completer(dir.path());
        assert_eq!(
            values(&c.suggest("look at @", 9)),
            vec!["README.md", "src/"]
        );
        assert_eq!(
            values(&c.suggest("look at @src/m", 14)),
            vec!["src/main.rs"]
        );
        let s = &c.suggest("see @R", 6)[0];
        assert_eq!((s.span.start, s.span.end), (5, 6));
        assert!(c.suggest("@nope/", 6).is_empty());
    }
}
