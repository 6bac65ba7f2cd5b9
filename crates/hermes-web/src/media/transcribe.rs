//! Transcription of voice messages and audio files, for the gateway (no tool: the Python Hermes
//! has none either). Providers as in the Python Hermes: `stt.provider: groq | openai`, else the
//! first with a key: Groq (`GROQ_API_KEY`, `GROQ_BASE_URL`, model `STT_GROQ_MODEL` or
//! `stt.groq.model`, default `whisper-large-v3-turbo`), then OpenAI (`VOICE_TOOLS_OPENAI_KEY` or
//! `OPENAI_API_KEY`, `STT_OPENAI_BASE_URL`, model `STT_OPENAI_MODEL` or `stt.openai.model`,
//! default `whisper-1`). Both take `POST /audio/transcriptions` as multipart form data (file and
//! model) and answer `{"text": ...}`. Files over the APIs' 25 MB limit are refused up front.

use std::path::Path;

use hermes_config::{Config, Environment};
use serde_json::Value;

use super::cfg_str;
use crate::api::{ApiClient, ApiError};

/// The Whisper APIs' upload limit.
pub const MAX_AUDIO_BYTES: u64 = 25 * 1024 * 1024;
/// The formats the APIs accept.
pub const FORMATS: &[&str] = &[
    "mp3", "mp4", "mpeg", "mpga", "m4a", "wav", "webm", "ogg", "oga", "opus", "aac", "flac",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SttProvider {
    Groq,
    OpenAi,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranscribeError {
    #[error("no transcription provider: set GROQ_API_KEY or OPENAI_API_KEY (or stt.provider)")]
    NoProvider,
    #[error("stt.provider `{0}` is not available in this build (groq or openai)")]
    UnknownProvider(String),
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
    #[error("{0}")]
    Api(#[from] ApiError),
}

/// How audio is transcribed in a home.
#[derive(Debug, Clone)]
pub struct Transcriber {
    api: ApiClient,
    env: Environment,
    configured: Option<String>,
    raw: Value,
}

impl Transcriber {
    pub fn new(api: ApiClient, config: &Config, env: &Environment) -> Transcriber {
        Transcriber {
            api,
            env: env.clone(),
            configured: cfg_str(&config.raw, "/stt/provider"),
            raw: config.raw.clone(),
        }
    }

    fn openai_key(&self) -> Option<String> {
        self.env
            .var("VOICE_TOOLS_OPENAI_KEY")
            .or_else(|| self.env.var("OPENAI_API_KEY"))
    }

    /// The provider a transcription would use now.
    pub fn provider(&self) -> Result<SttProvider, TranscribeError> {
        match self.configured.as_deref() {
            Some("groq") => Ok(SttProvider::Groq),
            Some("openai") => Ok(SttProvider::OpenAi),
            Some(other) => Err(TranscribeError::UnknownProvider(other.to_string())),
            None if self.env.var("GROQ_API_KEY").is_some() => Ok(SttProvider::Groq),
            None if self.openai_key().is_some() => Ok(SttProvider::OpenAi),
            None => Err(TranscribeError::NoProvider),
        }
    }

    /// The text spoken in the audio file at `path`.
    pub async fn transcribe(&self, path: &Path) -> Result<String, TranscribeError> {
        let provider = self.provider()?;
        let file_err = |reason: String| TranscribeError::File {
            path: path.display().to_string(),
            reason,
        };
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        if !FORMATS.contains(&ext.as_str()) {
            return Err(file_err(format!(
                "unsupported audio format (one of {})",
                FORMATS.join(", ")
            )));
        }
        let meta = tokio::fs::metadata(path)
            .await
            .map_err(|e| file_err(e.to_string()))?;
        if meta.len() > MAX_AUDIO_BYTES {
            return Err(file_err(format!(
                "larger than the {MAX_AUDIO_BYTES}-byte upload limit"
            )));
        }
        let audio = tokio::fs::read(path)
            .await
            .map_err(|e| file_err(e.to_string()))?;
        let (service, key, base, model) = match provider {
            SttProvider::Groq => (
                "Groq",
                self.env
                    .var("GROQ_API_KEY")
                    .ok_or_else(|| ApiError::missing_key("Groq", "GROQ_API_KEY"))?,
                self.env
                    .var("GROQ_BASE_URL")
                    .unwrap_or_else(|| "https://api.groq.com/openai/v1".into()),
                self.env
                    .var("STT_GROQ_MODEL")
                    .or_else(|| cfg_str(&self.raw, "/stt/groq/model"))
                    .unwrap_or_else(|| "whisper-large-v3-turbo".into()),
            ),
            SttProvider::OpenAi => (
                "OpenAI Whisper",
                self.openai_key()
                    .ok_or_else(|| ApiError::missing_key("OpenAI Whisper", "OPENAI_API_KEY"))?,
                self.env
                    .var("STT_OPENAI_BASE_URL")
                    .unwrap_or_else(|| "https://api.openai.com/v1".into()),
                self.env
                    .var("STT_OPENAI_MODEL")
                    .or_else(|| cfg_str(&self.raw, "/stt/openai/model"))
                    .unwrap_or_else(|| "whisper-1".into()),
            ),
        };
        let file_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("audio")
            .replace(['"', '\r', '\n'], "_");
        let (boundary, body) = multipart(
            &[("model", model.as_bytes()), ("response_format", b"json")],
            ("file", &file_name, mime(&ext), &audio),
        );
        let request = self
            .api
            .http()?
            .post(format!(
                "{}/audio/transcriptions",
                base.trim_end_matches('/')
            ))
            .bearer_auth(key)
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body);
        let answer = self.api.json(service, request).await?;
        answer
            .get("text")
            .and_then(Value::as_str)
            .map(|t| t.trim().to_string())
            .ok_or_else(|| {
                TranscribeError::Api(ApiError::format(service, "the answer holds no text"))
            })
    }
}

fn mime(ext: &str) -> &'static str {
    match ext {
        "mp3" | "mpga" | "mpeg" => "audio/mpeg",
        "mp4" | "m4a" => "audio/mp4",
        "wav" => "audio/wav",
        "webm" => "audio/webm",
        "ogg" | "oga" | "opus" => "audio/ogg",
        "aac" => "audio/aac",
        "flac" => "audio/flac",
        _ => "application/octet-stream",
    }
}

type Field<'a> = (&'a str, &'a [u8]);

/// A multipart/form-data body: the text fields, then one file; its boundary and bytes.
fn multipart(fields: &[Field<'_>], file: (&str, &str, &str, &[u8])) -> (String, Vec<u8>) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let boundary = format!("hermes-{nanos:x}");
    let mut body = Vec::with_capacity(file.3.len() + 512);
    for (name, value) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(value);
        body.extend_from_slice(b"\r\n");
    }
    let (name, filename, content_type, bytes) = file;
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (boundary, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)], yaml: Option<&str>) -> Transcriber {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, yaml.unwrap_or("")).unwrap();
        let env = Environment::isolated(pairs.iter().copied());
        let config = Config::load(&path, &env).unwrap();
        Transcriber::new(
            ApiClient::new(std::time::Duration::from_secs(5)),
            &config,
            &env,
        )
    }

    #[test]
    fn provider_choice_follows_the_python_order() {
        assert_eq!(with(&[], None).provider(), Err(TranscribeError::NoProvider));
        assert_eq!(
            with(&[("OPENAI_API_KEY", "k")], None).provider(),
            Ok(SttProvider::OpenAi)
        );
        assert_eq!(
            with(&[("OPENAI_API_KEY", "k"), ("GROQ_API_KEY", "g")], None).provider(),
            Ok(SttProvider::Groq)
        );
        assert_eq!(
            with(&[("GROQ_API_KEY", "g")], Some("stt:\n  provider: openai\n")).provider(),
            Ok(SttProvider::OpenAi)
        );
    }

    #[test]
    fn multipart_bodies_are_well_formed() {
        let (b, body) = multipart(
            &[("model", b"whisper-1")],
            ("file", "a.ogg", "audio/ogg", b"OGG"),
        );
        let text = String::from_utf8(body).unwrap();
        assert!(text.starts_with(&format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"
        )));
        assert!(text.contains(
            "name=\"file\"; filename=\"a.ogg\"\r\nContent-Type: audio/ogg\r\n\r\nOGG\r\n"
        ));
        assert!(text.ends_with(&format!("--{b}--\r\n")));
    }
}
