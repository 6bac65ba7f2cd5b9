//! The config page's routes: `config.yaml` as JSON (`GET /api/config`, parsed without `${VAR}`
//! substitution so values from `.env` never reach the page) and as text (`/api/config/raw`),
//! and both written back only after hermes-config's loader accepts the new text (the same
//! parse and typed sections every command runs at start). A refused edit answers 400 with
//! the loader's message and the `key` it names, and the file is left as it was. The raw editor
//! replaces the whole file (Python's behaviour), keeping the user's comments; `PUT /api/config`
//! with a JSON object writes it as YAML.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use hermes_config::{Config, ConfigError, Environment};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::App;
use crate::reply::{ApiError, ApiResult, blocking, body};

fn read_text(app: &App) -> Result<String, ApiError> {
    let path = app.home.config_path();
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(ApiError::internal(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// The loader's verdict on `text`; the answer for a refusal names the key when it can.
fn validate(app: &App, text: &str) -> Result<(), ApiError> {
    let env = Environment::load(&app.home.env_path())
        .map_err(|e| ApiError::internal(format!(".env: {e}")))?;
    match Config::from_yaml(&app.home.config_path(), text, &env) {
        Ok(_) => Ok(()),
        Err(e) => {
            let key = match &e {
                ConfigError::Invalid { key, .. } => Some(key.clone()),
                _ => None,
            };
            let mut err = ApiError::bad_request(e.to_string());
            err.extra = Some(json!({"key": key}));
            Err(err)
        }
    }
}

fn write(app: &App, text: &str) -> Result<(), ApiError> {
    validate(app, text)?;
    let path = app.home.config_path();
    hermes_config::atomic_write(&path, text.as_bytes())
        .map_err(|e| ApiError::internal(format!("cannot write {}: {e}", path.display())))
}

/// `GET /api/config`: the document as JSON (`{}` when there is no file).
pub(crate) async fn get_config(State(app): State<Arc<App>>) -> ApiResult {
    let value = blocking(move || {
        let text = read_text(&app)?;
        if text.trim().is_empty() {
            return Ok(json!({}));
        }
        serde_saphyr::from_str::<Value>(&text)
            .map_err(|e| ApiError::bad_request(format!("config.yaml does not parse: {e}")))
    })
    .await?;
    Ok(Json(value))
}

#[derive(Debug, Deserialize)]
pub(crate) struct WholeConfig {
    config: Value,
}

/// `PUT /api/config` `{"config": {...}}`: the whole document replaced.
pub(crate) async fn put_config(
    State(app): State<Arc<App>>,
    raw: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let whole: WholeConfig = body(raw)?;
    if !whole.config.is_object() {
        return Err(ApiError::bad_request("config must be a mapping"));
    }
    blocking(move || {
        let text = serde_saphyr::to_string(&whole.config)
            .map_err(|e| ApiError::bad_request(format!("cannot write that as YAML: {e}")))?;
        write(&app, &text)
    })
    .await?;
    Ok(Json(json!({"ok": true})))
}

/// `GET /api/config/raw`: `{"yaml": TEXT, "path": PATH}`.
pub(crate) async fn get_raw(State(app): State<Arc<App>>) -> ApiResult {
    let (text, path) = blocking(move || Ok((read_text(&app)?, app.home.config_path()))).await?;
    Ok(Json(
        json!({"yaml": text, "path": path.display().to_string()}),
    ))
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawConfig {
    yaml_text: String,
}

/// `PUT /api/config/raw` `{"yaml_text": TEXT}`.
pub(crate) async fn put_raw(
    State(app): State<Arc<App>>,
    raw: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let new: RawConfig = body(raw)?;
    blocking(move || write(&app, &new.yaml_text)).await?;
    Ok(Json(json!({"ok": true})))
}
