//! `text_to_speech {text}`: speech from the provider the user chose (`tts.provider`, default
//! `edge` as in the Python Hermes), saved to `$HERMES_HOME/cache/audio/` and answered as a path
//! with the `MEDIA:` tag the gateway delivers as a voice message. Providers: `edge` (keyless,
//! [`super::edge`]; voice `tts.edge.voice`), `openai` (`POST /audio/speech`; key
//! `VOICE_TOOLS_OPENAI_KEY` or `OPENAI_API_KEY`; `tts.openai.model|voice|base_url`),
//! `elevenlabs` (`POST /v1/text-to-speech/<voice_id>`; key `ELEVENLABS_API_KEY`;
//! `tts.elevenlabs.voice_id|model_id|base_url`) and `espeak-ng` (local, when installed; WAV).
//! When Edge cannot be reached and espeak-ng is installed, espeak-ng speaks instead. Over-long
//! text is cut to the provider's limit.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hermes_config::{Config, Environment};
use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::{cfg_str, edge, new_path, save};
use crate::api::{ApiClient, MAX_MEDIA_BYTES};

const ESPEAK: &str = "espeak-ng";
const ESPEAK_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtsProvider {
    Edge,
    OpenAi,
    ElevenLabs,
    Espeak,
}

impl TtsProvider {
    pub fn parse(name: &str) -> Option<TtsProvider> {
        match name.trim().to_ascii_lowercase().as_str() {
            "edge" | "edge-tts" => Some(TtsProvider::Edge),
            "openai" => Some(TtsProvider::OpenAi),
            "elevenlabs" => Some(TtsProvider::ElevenLabs),
            "espeak" | "espeak-ng" | "local" => Some(TtsProvider::Espeak),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TtsProvider::Edge => "edge",
            TtsProvider::OpenAi => "openai",
            TtsProvider::ElevenLabs => "elevenlabs",
            TtsProvider::Espeak => "espeak-ng",
        }
    }

    /// Characters one request may carry (the providers' documented limits).
    fn max_chars(self) -> usize {
        match self {
            TtsProvider::Edge | TtsProvider::Espeak => 5_000,
            TtsProvider::OpenAi => 4_096,
            TtsProvider::ElevenLabs => 10_000,
        }
    }
}

/// The `tts:` section.
#[derive(Debug, Clone)]
pub struct TtsSettings {
    pub provider: TtsProvider,
    /// The configured name when it is not one this build speaks.
    pub unknown: Option<String>,
    raw: Value,
}

impl TtsSettings {
    pub fn from_config(config: &Config) -> TtsSettings {
        let name = cfg_str(&config.raw, "/tts/provider");
        let provider = name.as_deref().and_then(TtsProvider::parse);
        TtsSettings {
            provider: provider.unwrap_or(TtsProvider::Edge),
            unknown: name.filter(|_| provider.is_none()),
            raw: config.raw.clone(),
        }
    }

    fn get(&self, provider: &str, key: &str) -> Option<String> {
        cfg_str(&self.raw, &format!("/tts/{provider}/{key}"))
    }
}

pub struct TextToSpeechTool {
    api: ApiClient,
    env: Environment,
    settings: TtsSettings,
    dir: PathBuf,
}

/// Whether espeak-ng is on PATH.
pub fn espeak_installed(path: Option<&str>) -> bool {
    path.is_some_and(|p| std::env::split_paths(p).any(|d| d.join(ESPEAK).is_file()))
}

impl TextToSpeechTool {
    pub fn new(
        api: ApiClient,
        env: Environment,
        settings: TtsSettings,
        dir: PathBuf,
    ) -> TextToSpeechTool {
        TextToSpeechTool {
            api,
            env,
            settings,
            dir,
        }
    }

    async fn openai(&self, text: &str) -> Result<Vec<u8>, String> {
        let key = self
            .env
            .var("VOICE_TOOLS_OPENAI_KEY")
            .or_else(|| self.env.var("OPENAI_API_KEY"))
            .ok_or("OpenAI TTS: OPENAI_API_KEY is not set")?;
        let s = &self.settings;
        let base = s
            .get("openai", "base_url")
            .unwrap_or_else(|| "https://api.openai.com/v1".into());
        let body = json!({
            "model": s.get("openai", "model").unwrap_or_else(|| "gpt-4o-mini-tts".into()),
            "voice": s.get("openai", "voice").unwrap_or_else(|| "alloy".into()),
            "input": text,
            "response_format": "mp3",
        });
        let request = self
            .api
            .http()
            .map_err(|e| e.to_string())?
            .post(format!("{}/audio/speech", base.trim_end_matches('/')))
            .bearer_auth(key)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        self.api
            .bytes("OpenAI TTS", request, MAX_MEDIA_BYTES)
            .await
            .map_err(|e| e.to_string())
    }

    async fn elevenlabs(&self, text: &str) -> Result<Vec<u8>, String> {
        let key = self
            .env
            .var("ELEVENLABS_API_KEY")
            .ok_or("ElevenLabs: ELEVENLABS_API_KEY is not set")?;
        let s = &self.settings;
        let base = s
            .get("elevenlabs", "base_url")
            .or_else(|| self.env.var("ELEVENLABS_BASE_URL"))
            .unwrap_or_else(|| "https://api.elevenlabs.io".into());
        let voice = s
            .get("elevenlabs", "voice_id")
            .unwrap_or_else(|| "pNInz6obpgDQGcFmaJgB".into());
        let mut url = url::Url::parse(&format!(
            "{}/v1/text-to-speech/{voice}",
            base.trim_end_matches('/')
        ))
        .map_err(|e| format!("ElevenLabs: bad base URL: {e}"))?;
        url.query_pairs_mut()
            .append_pair("output_format", "mp3_44100_128");
        let body = json!({
            "text": text,
            "model_id": s.get("elevenlabs", "model_id").unwrap_or_else(|| "eleven_multilingual_v2".into()),
        });
        let request = self
            .api
            .http()
            .map_err(|e| e.to_string())?
            .post(url)
            .header("xi-api-key", key)
            .header(reqwest::header::ACCEPT, "audio/mpeg")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        self.api
            .bytes("ElevenLabs", request, MAX_MEDIA_BYTES)
            .await
            .map_err(|e| e.to_string())
    }

    async fn edge(&self, text: &str) -> Result<Vec<u8>, String> {
        let s = &self.settings;
        let base = s
            .get("edge", "base_url")
            .unwrap_or_else(|| edge::DEFAULT_BASE.to_string());
        let voice = s
            .get("edge", "voice")
            .unwrap_or_else(|| edge::DEFAULT_VOICE.to_string());
        edge::synthesize(&base, &voice, text)
            .await
            .map_err(|e| e.to_string())
    }

    /// espeak-ng writes a WAV file at `out`.
    async fn espeak(&self, text: &str, out: &Path, ctx: &ToolContext) -> Result<(), String> {
        let mut cmd = tokio::process::Command::new(ESPEAK);
        cmd.arg("-w").arg(out);
        if let Some(voice) = self.settings.get("espeak", "voice") {
            cmd.arg("-v").arg(voice);
        }
        // `--` so a text starting with '-' is never read as an option.
        cmd.arg("--")
            .arg(text)
            .env_clear()
            .envs(ctx.child_env.vars().iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {ESPEAK}: {e}"))?;
        let output = tokio::time::timeout(ESPEAK_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| format!("{ESPEAK} took longer than {} s", ESPEAK_TIMEOUT.as_secs()))?
            .map_err(|e| format!("{ESPEAK} failed: {e}"))?;
        if !output.status.success() {
            let err = String::from_utf8_lossy(&output.stderr);
            return Err(format!("{ESPEAK} failed: {}", err.trim()));
        }
        Ok(())
    }

    /// The audio file, the provider that made it, and why another than the configured one did.
    async fn speak(
        &self,
        provider: TtsProvider,
        text: &str,
        ctx: &ToolContext,
    ) -> Result<(PathBuf, TtsProvider, Option<String>), String> {
        let mp3 = match provider {
            TtsProvider::Edge => match self.edge(text).await {
                Ok(b) => b,
                // Offline or blocked: a local voice is better than none.
                Err(e) if espeak_installed(ctx.child_env.get("PATH")) => {
                    let (path, used, _) =
                        Box::pin(self.speak(TtsProvider::Espeak, text, ctx)).await?;
                    return Ok((path, used, Some(format!("{e}; spoken by {ESPEAK} instead"))));
                }
                Err(e) => return Err(e),
            },
            TtsProvider::OpenAi => self.openai(text).await?,
            TtsProvider::ElevenLabs => self.elevenlabs(text).await?,
            TtsProvider::Espeak => {
                std::fs::create_dir_all(&self.dir).map_err(|e| e.to_string())?;
                let out = new_path(&self.dir, "tts", "wav");
                self.espeak(text, &out, ctx).await?;
                return Ok((out, TtsProvider::Espeak, None));
            }
        };
        let path = save(&self.dir, "tts", "mp3", &mp3)
            .map_err(|e| format!("cannot save the audio in {}: {e}", self.dir.display()))?;
        Ok((path, provider, None))
    }
}

#[async_trait::async_trait]
impl Tool for TextToSpeechTool {
    fn name(&self) -> &str {
        "text_to_speech"
    }
    fn toolset(&self) -> &str {
        "tts"
    }
    fn description(&self) -> &str {
        "Turn text into speech; returns the audio file's path and a MEDIA: tag that chat platforms deliver as a voice message. The voice is the user's setting."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        })
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let text = args
            .get("text")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ToolError::new("text is required"))?;
        if let Some(name) = &self.settings.unknown {
            return Err(ToolError::new(format!(
                "tts.provider `{name}` is not available in this build (edge, openai, elevenlabs or espeak-ng)"
            )));
        }
        let provider = self.settings.provider;
        let total = text.chars().count();
        let text: String = text.chars().take(provider.max_chars()).collect();
        let (path, used, fallback) = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(ToolError::new("interrupted")),
            r = self.speak(provider, &text, ctx) => r.map_err(ToolError::new)?,
        };
        let shown = path.display().to_string();
        let mut out =
            json!({"path": shown, "provider": used.name(), "media": format!("MEDIA:{shown}")});
        if let Some(why) = fallback {
            out["fallback"] = json!(why);
        }
        if total > provider.max_chars() {
            out["note"] = json!(format!(
                "the text was cut to {} of {total} characters",
                provider.max_chars()
            ));
        }
        Ok(out)
    }
}
