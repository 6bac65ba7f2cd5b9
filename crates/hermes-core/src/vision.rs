//! `vision_analyze {image_url, question}` (toolset `vision`, as in the Python Hermes): an
//! image (a file under the session's working directory, an `http(s)` URL or a `data:` URL)
//! is shown to the vision model (`auxiliary.vision`, by default the session's own model),
//! which describes it and answers the question; the tool returns that text. Files are read
//! through the protected-path check like `read_file`; the catalogue holds a schema-only
//! instance until a session installs the working one with its model. `browser_vision
//! {question}` does the same with a screenshot of the session's browser page.

use std::sync::Arc;
use std::time::Duration;

use hermes_llm::ChatRequest;
use hermes_protocol::{Image, Message};
use hermes_tools::{Access, Registry, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use crate::ModelTarget;

pub const TOOL_NAME: &str = "vision_analyze";

/// How long the vision model may take to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);

const DESCRIPTION: &str = "Look at an image (local file path, http(s) URL or data: URL) and answer a question about it: returns a description of everything visible and the answer.";

/// What the vision model is asked besides the caller's question (the Python Hermes's words).
const PROMPT: &str = "Fully describe and explain everything about this image, then answer the following question:\n\n";

pub struct VisionAnalyzeTool {
    target: Option<ModelTarget>,
}

impl VisionAnalyzeTool {
    /// The catalogue's instance: listed, but a call says it is not set up.
    pub fn schema_only() -> VisionAnalyzeTool {
        VisionAnalyzeTool { target: None }
    }

    pub fn new(target: ModelTarget) -> VisionAnalyzeTool {
        VisionAnalyzeTool {
            target: Some(target),
        }
    }
}

/// `tools` with `browser_vision` (schema only) added when they hold `browser_screenshot`: a
/// session's catalogue as it is measured and offered, before [`install`] gives it a model.
pub fn with_browser_vision(tools: &Registry) -> Registry {
    let mut out = Registry::new();
    for name in tools.names() {
        if let Some(tool) = tools.get(name) {
            out.register(tool.clone());
        }
    }
    if let Some(screenshot) = tools.get(SCREENSHOT_TOOL)
        && tools.get(BROWSER_VISION).is_none()
    {
        out.register(Arc::new(BrowserVisionTool {
            screenshot: screenshot.clone(),
            vision: None,
        }));
    }
    out
}

/// `tools` with working `vision_analyze` and `browser_vision` on `target` in place of the
/// schema-only ones.
pub fn install(tools: &Registry, target: ModelTarget) -> Registry {
    let vision = Arc::new(VisionAnalyzeTool::new(target));
    let mut out = Registry::new();
    for name in tools.names() {
        let Some(tool) = tools.get(name) else {
            continue;
        };
        match name {
            TOOL_NAME => out.register(vision.clone()),
            BROWSER_VISION => match tools.get(SCREENSHOT_TOOL) {
                Some(screenshot) => out.register(Arc::new(BrowserVisionTool {
                    screenshot: screenshot.clone(),
                    vision: Some(vision.clone()),
                })),
                None => out.register(tool.clone()),
            },
            _ => out.register(tool.clone()),
        }
    }
    out
}

/// Whether [`install`] has anything to do for `tools`.
pub fn wanted(tools: &Registry) -> bool {
    tools.get(TOOL_NAME).is_some() || tools.get(BROWSER_VISION).is_some()
}

const BROWSER_VISION: &str = "browser_vision";

/// The browser tool whose `{"path": ...}` answer `browser_vision` looks at.
const SCREENSHOT_TOOL: &str = "browser_screenshot";

/// `browser_vision {question}` (toolset `browser`): a screenshot of the current page shown to
/// the vision model, for what the accessibility snapshot cannot say (layout, charts,
/// captchas, images).
pub struct BrowserVisionTool {
    screenshot: Arc<dyn Tool>,
    /// `None` in the catalogue, until a session installs its model.
    vision: Option<Arc<VisionAnalyzeTool>>,
}

#[async_trait::async_trait]
impl Tool for BrowserVisionTool {
    fn name(&self) -> &str {
        BROWSER_VISION
    }
    fn toolset(&self) -> &str {
        "browser"
    }
    fn description(&self) -> &str {
        "Take a screenshot of the current browser page and have a vision model answer a question about what it shows (layout, images, charts, visual state the snapshot misses)."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "What you want to know about the page as it looks"},
                "full_page": {"type": "boolean", "description": "Capture the whole page, not just the viewport"}
            },
            "required": ["question"]
        })
    }
    fn check_available(&self) -> Result<(), hermes_tools::Unavailable> {
        self.screenshot.check_available()
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let Some(vision) = &self.vision else {
            return Err(ToolError::new("vision is not set up in this session"));
        };
        let full = args
            .get("full_page")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let shot = self
            .screenshot
            .call(json!({"full_page": full}), ctx)
            .await?;
        let path = shot
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("the screenshot gave no file"))?;
        let question = args
            .get("question")
            .and_then(Value::as_str)
            .unwrap_or("What does the page show?");
        let mut answer = vision
            .call(json!({"image_url": path, "question": question}), ctx)
            .await?;
        answer["screenshot"] = json!(path);
        Ok(answer)
    }
}

/// The image an `image_url` argument names.
fn image_of(raw: &str, ctx: &ToolContext) -> Result<Image, ToolError> {
    let raw = raw.trim();
    if raw.starts_with("data:") {
        return match Image::from_url(raw) {
            image @ Image::Data { .. } => Ok(image),
            Image::Url { .. } => Err(ToolError::new(
                "a data: URL must be base64 (data:image/png;base64,...)",
            )),
        };
    }
    if raw.starts_with("https://") || raw.starts_with("http://") {
        return Ok(Image::Url {
            url: raw.to_string(),
        });
    }
    let path = hermes_tools::paths::resolve(&ctx.cwd, raw.strip_prefix("file://").unwrap_or(raw));
    ctx.protected.check_read(&path)?;
    crate::images::load(&path).map_err(|e| ToolError::new(e.to_string()))
}

#[async_trait::async_trait]
impl Tool for VisionAnalyzeTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn toolset(&self) -> &str {
        "vision"
    }
    fn description(&self) -> &str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "image_url": {"type": "string", "description": "Local file path, http(s) URL or data: URL of the image"},
                "question": {"type": "string", "description": "What you want to know about the image"}
            },
            "required": ["image_url", "question"]
        })
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Read(Vec::new())
    }
    fn preview(&self, args: &Value) -> String {
        args.get("image_url")
            .and_then(Value::as_str)
            .map(|s| hermes_tools::output::shorten_line(s, 80))
            .unwrap_or_default()
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let Some(target) = &self.target else {
            return Err(ToolError::new("vision is not set up in this session"));
        };
        let raw = args
            .get("image_url")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| ToolError::new("image_url is required"))?;
        let question = args
            .get("question")
            .and_then(Value::as_str)
            .unwrap_or("What is in this image?");
        let image = image_of(raw, ctx)?;
        let messages = [Message::user_with_images(
            format!("{PROMPT}{question}"),
            vec![image],
        )];
        let request = ChatRequest {
            model: &target.model,
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: Some(2_000),
            temperature: None,
            reasoning: None,
        };
        let ask = async {
            hermes_llm::complete(target.provider.as_ref(), &request)
                .await
                .map(|r| r.text)
                .map_err(|e| ToolError::new(format!("the vision model failed: {e}")))
        };
        let text = tokio::select! {
            r = tokio::time::timeout(ANSWER_TIMEOUT, ask) => r
                .map_err(|_| ToolError::new("the vision model did not answer in time"))??,
            () = ctx.cancel.cancelled() => return Err(ToolError::new("interrupted")),
        };
        let analysis = hermes_llm::think::strip_think(&text).trim().to_string();
        if analysis.is_empty() {
            return Err(ToolError::new("the vision model gave an empty answer"));
        }
        Ok(json!({"success": true, "analysis": analysis}))
    }
}
