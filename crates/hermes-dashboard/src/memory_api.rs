//! The memory page's routes: the built-in memory files (`memories/MEMORY.md`, the agent's
//! notes, and `memories/USER.md`, what it knows about the user) read, and one replaced as a
//! whole through hermes-core's `MemoryStore::replace_all` (the same entry checks, character
//! limit and file lock as the memory tool; nothing is written when a check fails).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use hermes_core::memory::{MemorySettings, MemoryStore, Target, file};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::App;
use crate::reply::{ApiError, ApiResult, blocking, body};

fn open(app: &App) -> Result<(MemoryStore, bool), ApiError> {
    let (config, _) = hermes_config::load(&app.home)
        .map_err(|e| ApiError::internal(format!("config.yaml: {e}")))?;
    let settings =
        MemorySettings::from_config(&config).map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((
        MemoryStore::new(app.home.join("memories"), settings.limits()),
        settings.enabled(),
    ))
}

fn file_json(store: &MemoryStore, target: Target) -> Value {
    let path = store.path(target);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let entries = file::parse(&text);
    json!({
        "target": target.name(),
        "file": target.file_name(),
        "path": path.display().to_string(),
        "content": text,
        "entries": entries.len(),
        "used": file::char_count(&entries),
        "limit": store.limits().of(target),
    })
}

/// `GET /api/memory`: `{enabled, files: [{target, file, path, content, entries, used, limit}],
/// builtin_files: {memory, user}}` (the last as Python's: each file's size in bytes).
pub(crate) async fn get_files(State(app): State<Arc<App>>) -> ApiResult {
    let answer = blocking(move || {
        let (store, enabled) = open(&app)?;
        let size = |t: Target| std::fs::metadata(store.path(t)).map_or(0, |m| m.len());
        Ok(json!({
            "enabled": enabled,
            "files": [file_json(&store, Target::Memory), file_json(&store, Target::User)],
            "builtin_files": {"memory": size(Target::Memory), "user": size(Target::User)},
        }))
    })
    .await?;
    Ok(Json(answer))
}

#[derive(Debug, Deserialize)]
pub(crate) struct Edit {
    target: String,
    content: String,
}

/// `PUT /api/memory` `{"target": "memory"|"user", "content": TEXT}`: entries are separated by a
/// line holding only `§`, as in the file.
pub(crate) async fn put_file(
    State(app): State<Arc<App>>,
    raw: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let edit: Edit = body(raw)?;
    let target = Target::parse(edit.target.trim())
        .ok_or_else(|| ApiError::bad_request("target must be memory or user"))?;
    let answer = blocking(move || {
        let (store, _) = open(&app)?;
        let entries = file::parse(&edit.content.replace("\r\n", "\n"));
        store
            .replace_all(target, &entries)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(file_json(&store, target))
    })
    .await?;
    Ok(Json(json!({"ok": true, "file": answer})))
}
