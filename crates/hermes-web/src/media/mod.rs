//! Media in and out: `image_generate` ([`image`]: OpenAI images API, FAL), `text_to_speech`
//! ([`tts`]: Edge TTS ([`edge`]), OpenAI, ElevenLabs, local espeak-ng) and transcription of
//! voice messages and audio files ([`transcribe`]: OpenAI and Groq Whisper APIs) for the
//! gateway. Generated files go to the home's cache (`cache/images`, `cache/audio`) and are
//! answered as paths.

pub mod edge;
pub mod image;
pub mod transcribe;
pub mod tts;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use image::ImageGenerateTool;
pub use transcribe::{SttProvider, TranscribeError, Transcriber};
pub use tts::TextToSpeechTool;

/// A new file name in `dir`: `<prefix>_<unix millis>_<4 random hex>.<ext>`.
pub(crate) fn new_path(dir: &Path, prefix: &str, ext: &str) -> PathBuf {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let salt: u16 = std::process::id() as u16 ^ (millis as u16).rotate_left(7);
    dir.join(format!("{prefix}_{millis}_{salt:04x}.{ext}"))
}

/// Writes `bytes` to a new file of `dir`; its path.
pub(crate) fn save(dir: &Path, prefix: &str, ext: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let path = new_path(dir, prefix, ext);
    hermes_config::atomic_write(&path, bytes)?;
    Ok(path)
}

/// A string at `pointer` of config.yaml, trimmed, if set.
pub(crate) fn cfg_str(raw: &Value, pointer: &str) -> Option<String> {
    raw.pointer(pointer)
        .and_then(Value::as_str)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
