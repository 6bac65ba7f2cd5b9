//! The skills page's routes: the home's skills (hermes-core's library, as `hermes skills list`
//! sees them) with whether each is enabled, its origin and curator state; one skill's
//! `SKILL.md`; enable/disable through `skills.disabled` in config.yaml (the key the loader
//! reads, edited in place so comments stay); and a hub install, run as `hermes skills install
//! SOURCE --yes` (the hub's own fetch, guard scan and install; Python's dashboard runs the
//! same command) within [`INSTALL_TIMEOUT`], its output sent back.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use hermes_core::skills::{Availability, Library, Provenance, SkillSettings};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::App;
use crate::reply::{ApiError, ApiResult, blocking, body};

/// How long a hub install may take (a git clone of a large repository included).
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(180);
/// Output of the install kept for the page, per stream.
const MAX_OUTPUT: u64 = 64 * 1024;

fn library(app: &App) -> Result<(Library, hermes_config::Config), ApiError> {
    let (config, _) = hermes_config::load(&app.home)
        .map_err(|e| ApiError::internal(format!("config.yaml: {e}")))?;
    let settings = SkillSettings::from_config(&config, app.home.root(), "cli");
    Ok((Library::for_home(&app.home, settings), config))
}

/// `GET /api/skills`: `[{name, category, description, version, path, enabled, offered,
/// provenance, state, pinned}]`.
pub(crate) async fn list(State(app): State<Arc<App>>) -> ApiResult {
    let skills = blocking(move || {
        let (library, _) = library(&app)?;
        let loaded = library.load();
        let provenance = Provenance::read(library.root());
        Ok(loaded
            .skills
            .iter()
            .map(|s| {
                let status = provenance.status(&s.name);
                let mut v = json!({
                    "name": s.name,
                    "category": s.category,
                    "description": s.description,
                    "version": s.version(),
                    "path": s.dir.display().to_string(),
                    "enabled": s.availability != Availability::Disabled,
                    "offered": s.availability == Availability::Active,
                    "provenance": status.origin.as_str(),
                });
                if let (Some(map), Value::Object(extra)) = (v.as_object_mut(), status.to_json()) {
                    for (k, val) in extra {
                        map.entry(k).or_insert(val);
                    }
                }
                v
            })
            .collect::<Vec<_>>())
    })
    .await?;
    Ok(Json(Value::Array(skills)))
}

#[derive(Debug, Deserialize)]
pub(crate) struct Toggle {
    name: String,
    enabled: bool,
}

/// The names in `skills.disabled` (a list, or one name).
fn disabled_names(config: &hermes_config::Config) -> Vec<String> {
    match config.raw.pointer("/skills/disabled") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(Value::String(one)) if !one.trim().is_empty() => vec![one.trim().to_string()],
        _ => Vec::new(),
    }
}

/// `PUT /api/skills/toggle` `{"name", "enabled"}`.
pub(crate) async fn toggle(
    State(app): State<Arc<App>>,
    raw: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let t: Toggle = body(raw)?;
    let name = t.name.trim().to_string();
    if name.is_empty() {
        return Err(ApiError::bad_request("name is required"));
    }
    let answer_name = name.clone();
    blocking(move || {
        let (library, config) = library(&app)?;
        let known = library.load().skills.iter().any(|s| s.name == name);
        let mut disabled = disabled_names(&config);
        if !known && !disabled.contains(&name) {
            return Err(ApiError::not_found(format!("Skill '{name}' not found.")));
        }
        let before = disabled.clone();
        if t.enabled {
            disabled.retain(|n| *n != name);
        } else if !disabled.contains(&name) {
            disabled.push(name);
        }
        if disabled != before {
            let value = Value::Array(disabled.into_iter().map(Value::String).collect());
            hermes_config::edit::set(&app.home.config_path(), "skills.disabled", &value)
                .map_err(|e| ApiError::internal(e.to_string()))?;
        }
        Ok(())
    })
    .await?;
    Ok(Json(
        json!({"ok": true, "name": answer_name, "enabled": t.enabled}),
    ))
}

/// `GET /api/skills/content?name=`: `{name, content, path, files}`.
pub(crate) async fn content(
    State(app): State<Arc<App>>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult {
    let name = q
        .get("name")
        .map(|n| n.trim().to_string())
        .unwrap_or_default();
    if name.is_empty() {
        return Err(ApiError::bad_request("name is required"));
    }
    let answer = blocking(move || {
        let (library, _) = library(&app)?;
        let skill = library
            .find(&name)
            .map_err(|_| ApiError::not_found(format!("Skill '{name}' not found.")))?;
        Ok(json!({
            "name": skill.name,
            "content": skill.text,
            "path": skill.dir.join("SKILL.md").display().to_string(),
            "files": hermes_core::skills::view::supporting_files(&skill.dir),
        }))
    })
    .await?;
    Ok(Json(answer))
}

#[derive(Debug, Deserialize)]
pub(crate) struct Install {
    #[serde(default)]
    identifier: String,
    category: Option<String>,
    #[serde(default)]
    force: bool,
}

/// Reads at most [`MAX_OUTPUT`] bytes of a stream, then drains the rest so the child never
/// blocks on a full pipe.
async fn bounded<R: tokio::io::AsyncRead + Unpin>(stream: Option<R>) -> String {
    let Some(stream) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut limited = stream.take(MAX_OUTPUT);
    let _ = limited.read_to_end(&mut kept).await;
    let mut rest = limited.into_inner();
    let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
    String::from_utf8_lossy(&kept).into_owned()
}

/// `POST /api/skills/hub/install` `{"identifier", "category"?, "force"?}`: `{ok, exit_code,
/// output}`; 504 when the install outlives [`INSTALL_TIMEOUT`] (it is stopped).
pub(crate) async fn hub_install(
    State(app): State<Arc<App>>,
    raw: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let req: Install = body(raw)?;
    let identifier = req.identifier.trim().to_string();
    if identifier.is_empty() {
        return Err(ApiError::bad_request("identifier is required"));
    }
    if identifier.starts_with('-') {
        return Err(ApiError::bad_request("identifier cannot start with '-'"));
    }
    let mut cmd = tokio::process::Command::new(&app.exe);
    cmd.args(["skills", "install", "--yes"]);
    if let Some(c) = req
        .category
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        cmd.args(["--category", c]);
    }
    if req.force {
        cmd.arg("--force");
    }
    cmd.arg("--").arg(&identifier);
    cmd.env("HERMES_HOME", app.home.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| {
        ApiError::internal(format!(
            "cannot start `{} skills install`: {e}",
            app.exe.display()
        ))
    })?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let run = async {
        let (out, err) = tokio::join!(bounded(stdout), bounded(stderr));
        let status = child.wait().await;
        (out, err, status)
    };
    let Ok((out, err, status)) = tokio::time::timeout(INSTALL_TIMEOUT, run).await else {
        return Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "the install did not finish within {} s and was stopped",
                INSTALL_TIMEOUT.as_secs()
            ),
        ));
    };
    let status = status.map_err(|e| ApiError::internal(e.to_string()))?;
    let mut output = out;
    if !err.is_empty() {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&err);
    }
    Ok(Json(json!({
        "ok": status.success(),
        "exit_code": status.code(),
        "identifier": identifier,
        "output": output,
    })))
}
