//! `image_generate {prompt, size}`: one image from the configured provider, saved to
//! `$HERMES_HOME/cache/images/` and answered as `{"image": path}`. Providers as in the Python
//! Hermes: `image_gen.provider: openai` (the images API, `gpt-image-2` at the quality of
//! `image_gen.openai.model` / `OPENAI_IMAGE_MODEL`: `gpt-image-2-low|medium|high`, base64
//! answer) or FAL (the default when `FAL_KEY` is set: `POST https://fal.run/<model>` with
//! `Authorization: Key …`, model `image_gen.model`, default `fal-ai/flux-2/klein/9b`, the image
//! downloaded from the URL it answers, through the SSRF-safe fetcher). Sizes: square,
//! landscape, portrait. A paid provider is never chosen from an inference key alone.

use std::path::PathBuf;

use base64::Engine;
use hermes_config::{Config, Environment};
use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::{cfg_str, save};
use crate::api::{ApiClient, ApiError, MAX_MEDIA_BYTES};
use crate::net::{FetchLimits, Fetcher};

const DEFAULT_FAL_MODEL: &str = "fal-ai/flux-2/klein/9b";
const OPENAI_API_MODEL: &str = "gpt-image-2";
const OPENAI_TIERS: &[(&str, &str)] = &[
    ("gpt-image-2-low", "low"),
    ("gpt-image-2-medium", "medium"),
    ("gpt-image-2-high", "high"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageProvider {
    OpenAi,
    Fal,
}

/// The `image_gen:` settings and the keys that go with them.
#[derive(Debug, Clone)]
pub struct ImageSettings {
    pub provider: Option<ImageProvider>,
    /// `image_gen.model` (FAL model, or an OpenAI tier).
    pub model: Option<String>,
    pub openai_model: Option<String>,
    pub openai_base: String,
    pub fal_base: String,
}

impl ImageSettings {
    pub fn from_config(config: &Config, env: &Environment) -> ImageSettings {
        let raw = &config.raw;
        let provider = match cfg_str(raw, "/image_gen/provider").as_deref() {
            Some("openai") => Some(ImageProvider::OpenAi),
            Some("fal") => Some(ImageProvider::Fal),
            Some(_) => None,
            None => env.var("FAL_KEY").map(|_| ImageProvider::Fal),
        };
        ImageSettings {
            provider,
            model: cfg_str(raw, "/image_gen/model"),
            openai_model: env
                .var("OPENAI_IMAGE_MODEL")
                .or_else(|| cfg_str(raw, "/image_gen/openai/model")),
            openai_base: cfg_str(raw, "/image_gen/openai/base_url")
                .or_else(|| env.var("OPENAI_BASE_URL"))
                .unwrap_or_else(|| "https://api.openai.com/v1".into()),
            fal_base: env
                .var("FAL_BASE_URL")
                .unwrap_or_else(|| "https://fal.run".into()),
        }
    }
}

pub struct ImageGenerateTool {
    api: ApiClient,
    fetcher: Fetcher,
    env: Environment,
    settings: ImageSettings,
    dir: PathBuf,
}

impl ImageGenerateTool {
    pub fn new(
        api: ApiClient,
        fetcher: Fetcher,
        env: Environment,
        settings: ImageSettings,
        dir: PathBuf,
    ) -> ImageGenerateTool {
        ImageGenerateTool {
            api,
            fetcher,
            env,
            settings,
            dir,
        }
    }

    fn key(&self, var: &str, service: &str) -> Result<String, ApiError> {
        self.env
            .var(var)
            .ok_or_else(|| ApiError::missing_key(service, var))
    }

    async fn openai(&self, prompt: &str, size: &str) -> Result<(Vec<u8>, String), ToolError> {
        let key = self.key("OPENAI_API_KEY", "OpenAI images").map_err(err)?;
        let tier = self
            .settings
            .openai_model
            .as_deref()
            .or(self.settings.model.as_deref())
            .and_then(|m| OPENAI_TIERS.iter().find(|(id, _)| *id == m))
            .unwrap_or(&OPENAI_TIERS[1]);
        let dims = match size {
            "landscape" => "1536x1024",
            "portrait" => "1024x1536",
            _ => "1024x1024",
        };
        let body = json!({"model": OPENAI_API_MODEL, "prompt": prompt, "size": dims, "quality": tier.1, "n": 1});
        let base = self.settings.openai_base.trim_end_matches('/');
        let request = self
            .api
            .http()
            .map_err(err)?
            .post(format!("{base}/images/generations"))
            .bearer_auth(key)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        let answer = self.api.json("OpenAI images", request).await.map_err(err)?;
        let first = answer.pointer("/data/0").cloned().unwrap_or(Value::Null);
        if let Some(b64) = first.get("b64_json").and_then(Value::as_str) {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| {
                    ToolError::new(format!("OpenAI images: the image is not valid base64: {e}"))
                })?;
            return Ok((bytes, tier.0.to_string()));
        }
        if let Some(url) = first.get("url").and_then(Value::as_str) {
            return Ok((self.download(url).await?, tier.0.to_string()));
        }
        Err(ToolError::new("OpenAI images: the answer holds no image"))
    }

    async fn fal(&self, prompt: &str, size: &str) -> Result<(Vec<u8>, String), ToolError> {
        let key = self.key("FAL_KEY", "FAL").map_err(err)?;
        let model = self
            .settings
            .model
            .clone()
            .filter(|m| m.contains('/'))
            .unwrap_or_else(|| DEFAULT_FAL_MODEL.to_string());
        let preset = match size {
            "landscape" => "landscape_16_9",
            "portrait" => "portrait_16_9",
            _ => "square_hd",
        };
        let body = json!({
            "prompt": prompt,
            "image_size": preset,
            "num_inference_steps": 4,
            "output_format": "png",
            "enable_safety_checker": false,
        });
        let base = self.settings.fal_base.trim_end_matches('/');
        let request = self
            .api
            .http()
            .map_err(err)?
            .post(format!("{base}/{model}"))
            .header(reqwest::header::AUTHORIZATION, format!("Key {key}"))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        let answer = self.api.json("FAL", request).await.map_err(err)?;
        let url = answer
            .pointer("/images/0/url")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("FAL: the answer holds no image URL"))?;
        Ok((self.download(url).await?, model))
    }

    async fn download(&self, url: &str) -> Result<Vec<u8>, ToolError> {
        if let Some(data) = url.strip_prefix("data:") {
            let b64 = data.split_once(";base64,").map(|(_, b)| b).unwrap_or("");
            return base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| {
                    ToolError::new(format!("the image data URL is not valid base64: {e}"))
                });
        }
        let limits = FetchLimits {
            max_bytes: MAX_MEDIA_BYTES,
            ..FetchLimits::default()
        };
        self.fetcher
            .get_limited(url, &limits)
            .await
            .map(|f| f.body)
            .map_err(|e| ToolError::new(format!("cannot download the generated image: {e}")))
    }
}

fn err(e: ApiError) -> ToolError {
    ToolError::new(e.to_string())
}

/// The file extension of image bytes (PNG, JPEG, WebP, GIF), PNG when unknown.
fn extension(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "jpg"
    } else if bytes.len() > 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        "webp"
    } else if bytes.starts_with(b"GIF8") {
        "gif"
    } else {
        "png"
    }
}

#[async_trait::async_trait]
impl Tool for ImageGenerateTool {
    fn name(&self) -> &str {
        "image_generate"
    }
    fn toolset(&self) -> &str {
        "image_gen"
    }
    fn description(&self) -> &str {
        "Generate an image from a text prompt; returns the saved file's path (show it to the user by that path). The provider and model are the user's choice."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "A detailed description of the image"},
                "size": {"type": "string", "enum": ["square", "landscape", "portrait"]}
            },
            "required": ["prompt"]
        })
    }
    fn check_available(&self) -> Result<(), hermes_tools::Unavailable> {
        match self.settings.provider {
            Some(ImageProvider::OpenAi) if self.env.var("OPENAI_API_KEY").is_some() => Ok(()),
            Some(ImageProvider::Fal) if self.env.var("FAL_KEY").is_some() => Ok(()),
            _ => Err(hermes_tools::Unavailable {
                reason: "no image provider: set FAL_KEY, or image_gen.provider: openai with OPENAI_API_KEY".into(),
            }),
        }
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let prompt = args
            .get("prompt")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| ToolError::new("prompt is required"))?;
        let size = args
            .get("size")
            .or_else(|| args.get("aspect_ratio"))
            .and_then(Value::as_str)
            .unwrap_or("square");
        let provider = self.settings.provider.ok_or_else(|| {
            ToolError::new(
                "no image provider: set FAL_KEY, or image_gen.provider: openai with OPENAI_API_KEY",
            )
        })?;
        let work = async {
            match provider {
                ImageProvider::OpenAi => self.openai(prompt, size).await,
                ImageProvider::Fal => self.fal(prompt, size).await,
            }
        };
        let (bytes, model) = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(ToolError::new("interrupted")),
            r = work => r?,
        };
        let path = save(&self.dir, "image", extension(&bytes), &bytes).map_err(|e| {
            ToolError::new(format!(
                "cannot save the image in {}: {e}",
                self.dir.display()
            ))
        })?;
        let provider = match provider {
            ImageProvider::OpenAi => "openai",
            ImageProvider::Fal => "fal",
        };
        Ok(json!({"image": path.display().to_string(), "provider": provider, "model": model}))
    }
}
