//! Where a board lives, the Python Hermes's layout so its boards carry over: the board is
//! shared by every profile and anchored at the default home (not a profile's), `default`'s
//! database is `<root>/kanban.db` with its files under `<root>/kanban/`, any other board lives
//! in `<root>/kanban/boards/<slug>/`. The dispatcher pins its workers to the exact files it
//! claimed from with `HERMES_KANBAN_DB`, `HERMES_KANBAN_WORKSPACES_ROOT` and
//! `HERMES_KANBAN_BOARD`, which win over everything else (as in Python).

use std::path::{Path, PathBuf};

use hermes_config::StoreTarget;

use crate::error::{KanbanError, Result};

pub const DEFAULT_BOARD: &str = "default";

/// The files of one board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardPaths {
    /// Where its tables are: the SQLite file `db`, or a schema on the PostgreSQL server
    /// `store.backend: postgres` names (the board's files stay under `root` either way).
    pub backend: StoreTarget,
    /// The board's slug (`default`, ...).
    pub slug: String,
    /// The shared root every board hangs from.
    pub root: PathBuf,
    pub db: PathBuf,
    /// Scratch workspaces, one directory per task.
    pub workspaces: PathBuf,
    /// Worker logs, `<task id>.log`.
    pub logs: PathBuf,
    /// Attached files, `<task id>/<name>`.
    pub attachments: PathBuf,
}

/// The process environment the board paths read (a seam for tests).
pub trait EnvLookup {
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvLookup for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }
}

impl BoardPaths {
    /// The board `slug` (else `HERMES_KANBAN_BOARD`, else the one `boards switch` chose, else
    /// `default`) under `root` (else `HERMES_KANBAN_HOME`), honouring the dispatcher's pins.
    pub fn resolve(root: &Path, slug: Option<&str>, env: &dyn EnvLookup) -> Result<BoardPaths> {
        let root = env
            .var("HERMES_KANBAN_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.to_path_buf());
        let slug = match slug {
            Some(s) => {
                let s = normalize_slug(s)?;
                if s != DEFAULT_BOARD && !board_exists(&root, &s) {
                    return Err(KanbanError::UnknownBoard(s));
                }
                s
            }
            None => current_board(&root, env),
        };
        let dir = board_dir(&root, &slug);
        let (db, workspaces, logs, attachments) = if slug == DEFAULT_BOARD {
            let k = root.join("kanban");
            (
                root.join("kanban.db"),
                k.join("workspaces"),
                k.join("logs"),
                k.join("attachments"),
            )
        } else {
            (
                dir.join("kanban.db"),
                dir.join("workspaces"),
                dir.join("logs"),
                dir.join("attachments"),
            )
        };
        Ok(BoardPaths {
            backend: backend(&root, env)?,
            db: env.var("HERMES_KANBAN_DB").map(PathBuf::from).unwrap_or(db),
            workspaces: env
                .var("HERMES_KANBAN_WORKSPACES_ROOT")
                .map(PathBuf::from)
                .unwrap_or(workspaces),
            attachments: env
                .var("HERMES_KANBAN_ATTACHMENTS_ROOT")
                .map(PathBuf::from)
                .unwrap_or(attachments),
            logs,
            slug,
            root,
        })
    }

    /// The board's PostgreSQL schema: `kanban` for the default board, `kanban_<slug>` for
    /// the others.
    pub fn pg_schema(&self) -> String {
        if self.slug == DEFAULT_BOARD {
            "kanban".into()
        } else {
            format!("kanban_{}", self.slug)
        }
    }

    /// The board's metadata directory (`board.json`).
    pub fn dir(&self) -> PathBuf {
        board_dir(&self.root, &self.slug)
    }

    /// A task's worker log.
    pub fn worker_log(&self, task_id: &str) -> PathBuf {
        self.logs.join(format!("{task_id}.log"))
    }
}

/// The store the root home's `config.yaml` selects (the board is shared by every profile, so
/// the default home's choice holds for all); the URL from the environment, else the root's
/// `.env`.
fn backend(root: &Path, env: &dyn EnvLookup) -> Result<StoreTarget> {
    let dotenv = hermes_config::Environment::load(&root.join(".env"))?;
    let config = hermes_config::Config::load(&root.join("config.yaml"), &dotenv)?;
    if hermes_config::store_backend_name(&config)? == "sqlite" {
        return Ok(StoreTarget::Sqlite);
    }
    match env.var(hermes_config::STORE_URL_VAR) {
        Some(url) => Ok(StoreTarget::Postgres(hermes_config::StoreUrl::new(url))),
        None => Ok(hermes_config::store_target(&config, &dotenv)?),
    }
}

fn board_dir(root: &Path, slug: &str) -> PathBuf {
    root.join("kanban").join("boards").join(slug)
}

/// Whether a board has metadata or a database (`default` always exists).
pub fn board_exists(root: &Path, slug: &str) -> bool {
    if slug == DEFAULT_BOARD {
        return true;
    }
    let dir = board_dir(root, slug);
    dir.join("board.json").exists() || dir.join("kanban.db").exists()
}

/// The file `hermes kanban boards switch` writes.
pub fn current_board_file(root: &Path) -> PathBuf {
    root.join("kanban").join("current")
}

/// `HERMES_KANBAN_BOARD`, else `<root>/kanban/current`, else `default`; a stale or malformed
/// choice falls through to the next (the dispatcher must never fail on a hand-edited file).
fn current_board(root: &Path, env: &dyn EnvLookup) -> String {
    let candidates = [
        env.var("HERMES_KANBAN_BOARD"),
        std::fs::read_to_string(current_board_file(root))
            .ok()
            .map(|s| s.trim().to_string()),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter_map(|s| normalize_slug(&s).ok())
        .find(|s| board_exists(root, s))
        .unwrap_or_else(|| DEFAULT_BOARD.to_string())
}

/// Python's slug rule: `^[a-z0-9][a-z0-9\-_]{0,63}$` after trimming and lowercasing.
pub fn normalize_slug(raw: &str) -> Result<String> {
    let s = raw.trim().to_lowercase();
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok =
        chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if first_ok && rest_ok && s.len() <= 64 {
        Ok(s)
    } else {
        Err(KanbanError::InvalidBoard(raw.to_string()))
    }
}

/// Creates a board's directory and `board.json` (Python's fields).
pub fn create_board(root: &Path, slug: &str, name: Option<&str>) -> Result<BoardPaths> {
    let slug = normalize_slug(slug)?;
    let dir = board_dir(root, &slug);
    std::fs::create_dir_all(&dir).map_err(|e| KanbanError::io(&dir, e))?;
    let meta = dir.join("board.json");
    if !meta.exists() {
        let body = serde_json::json!({
            "slug": slug,
            "name": name.map(str::to_string).unwrap_or_else(|| display_name(&slug)),
            "description": "",
            "icon": "",
            "color": "",
            "created_at": crate::time::now(),
            "archived": false,
        });
        let text = serde_json::to_string_pretty(&body).unwrap_or_default();
        std::fs::write(&meta, text + "\n").map_err(|e| KanbanError::io(&meta, e))?;
    }
    BoardPaths::resolve(root, Some(&slug), &ProcessEnv)
}

/// Python's default display name: words of the slug, capitalised.
fn display_name(slug: &str) -> String {
    slug.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The boards on disk: `default` first, then the others by slug.
pub fn list_boards(root: &Path) -> Vec<String> {
    let mut out = vec![DEFAULT_BOARD.to_string()];
    let mut others: Vec<String> = std::fs::read_dir(root.join("kanban").join("boards"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|s| s != DEFAULT_BOARD && normalize_slug(s).is_ok())
                .filter(|s| board_exists(root, s))
                .collect()
        })
        .unwrap_or_default();
    others.sort();
    out.extend(others);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Vars(HashMap<&'static str, String>);
    impl EnvLookup for Vars {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
    }

    #[test]
    fn default_board_keeps_the_legacy_paths() {
        let root = Path::new("/h");
        let p = BoardPaths::resolve(root, None, &Vars(HashMap::new())).unwrap();
        assert_eq!(p.db, Path::new("/h/kanban.db"));
        assert_eq!(p.workspaces, Path::new("/h/kanban/workspaces"));
        assert_eq!(p.logs, Path::new("/h/kanban/logs"));
        assert_eq!(p.slug, "default");
    }

    #[test]
    fn dispatcher_pins_win() {
        let vars = Vars(HashMap::from([
            ("HERMES_KANBAN_DB", "/x/k.db".to_string()),
            ("HERMES_KANBAN_WORKSPACES_ROOT", "/x/ws".to_string()),
        ]));
        let p = BoardPaths::resolve(Path::new("/h"), None, &vars).unwrap();
        assert_eq!(p.db, Path::new("/x/k.db"));
        assert_eq!(p.workspaces, Path::new("/x/ws"));
    }

    #[test]
    fn slugs_follow_python() {
        assert_eq!(normalize_slug(" Proj-1 ").unwrap(), "proj-1");
        assert!(normalize_slug("-x").is_err());
        assert!(normalize_slug("a/b").is_err());
        assert!(normalize_slug("").is_err());
        assert_eq!(display_name("my-big_board"), "My Big Board");
    }

    #[test]
    fn other_boards_live_in_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        create_board(dir.path(), "research", None).unwrap();
        let p = BoardPaths::resolve(dir.path(), Some("research"), &Vars(HashMap::new())).unwrap();
        assert_eq!(p.db, dir.path().join("kanban/boards/research/kanban.db"));
        assert!(BoardPaths::resolve(dir.path(), Some("nope"), &Vars(HashMap::new())).is_err());
        assert_eq!(list_boards(dir.path()), vec!["default", "research"]);
    }
}
