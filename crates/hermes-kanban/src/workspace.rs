//! A task's working directory, created on claim: `scratch` (a fresh directory under the
//! board's workspaces, removed when the task is done), `dir` (an existing absolute path), or
//! `worktree` (a linked git worktree of the repository named by the task, at
//! `<repo>/.worktrees/<task id>` on branch `wt/<task id>` unless the task names one). Relative
//! paths are refused: they would resolve against whichever process happens to dispatch.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{KanbanError, Result};
use crate::model::Task;
use crate::paths::BoardPaths;

pub fn resolve(paths: &BoardPaths, task: &Task) -> Result<PathBuf> {
    let absolute = |p: &str| -> Result<PathBuf> {
        let path = PathBuf::from(p);
        if path.is_absolute() {
            Ok(path)
        } else {
            Err(KanbanError::InvalidValue {
                what: "workspace path (it must be absolute)",
                value: p.to_string(),
                allowed: "an absolute path",
            })
        }
    };
    let dir = match task.workspace_kind.as_str() {
        "scratch" => match task.workspace_path.as_deref() {
            Some(p) => absolute(p)?,
            None => paths.workspaces.join(&task.id),
        },
        "dir" => absolute(task.workspace_path.as_deref().unwrap_or_default())?,
        "worktree" => return worktree(task, absolute),
        other => {
            return Err(KanbanError::InvalidValue {
                what: "workspace kind",
                value: other.to_string(),
                allowed: "scratch, dir, worktree",
            });
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| KanbanError::io(&dir, e))?;
    Ok(dir)
}

fn worktree(task: &Task, absolute: impl Fn(&str) -> Result<PathBuf>) -> Result<PathBuf> {
    let Some(given) = task.workspace_path.as_deref() else {
        return Err(KanbanError::InvalidValue {
            what: "worktree workspace (it needs the repository)",
            value: "worktree".into(),
            allowed: "worktree:/absolute/path/to/repo",
        });
    };
    let given = absolute(given)?;
    if given.join(".git").is_file() {
        // Already a linked worktree (a retry): reuse it.
        return Ok(given);
    }
    let (repo, target) = if given.join(".git").is_dir() {
        (given.clone(), given.join(".worktrees").join(&task.id))
    } else {
        let repo = given
            .ancestors()
            .find(|a| a.join(".git").is_dir())
            .map(Path::to_path_buf)
            .ok_or_else(|| {
                KanbanError::Spawn(format!(
                    "{} is not inside a git repository",
                    given.display()
                ))
            })?;
        (repo, given.clone())
    };
    if target.join(".git").exists() {
        return Ok(target);
    }
    let branch = task
        .branch_name
        .clone()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| format!("wt/{}", task.id));
    let exists = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}"))
        .output()
        .is_ok_and(|o| o.status.success());
    let mut add = Command::new("git");
    add.arg("-C").arg(&repo).args(["worktree", "add"]);
    if exists {
        add.arg(&target).arg(&branch);
    } else {
        add.arg("-b").arg(&branch).arg(&target);
    }
    let out = add
        .output()
        .map_err(|e| KanbanError::Spawn(format!("git worktree add: {e}")))?;
    if !out.status.success() {
        return Err(KanbanError::Spawn(format!(
            "git worktree add {}: {}",
            target.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(target)
}
