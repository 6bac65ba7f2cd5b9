//! The browser tools: one type, [`BrowserTool`], whose [`Kind`] says which of the eleven it is;
//! all of a session's share its [`BrowserManager`], so they act on the same page. Every call is
//! interruptible; results are small JSON objects (the snapshot as text inside).

use std::sync::Arc;

use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::{BrowserError, BrowserManager, Session};

/// Longest snapshot returned (the rest is cut with a note).
const MAX_SNAPSHOT_CHARS: usize = 15_000;
/// Images listed at most.
const MAX_IMAGES: usize = 50;
/// Longest evaluation result returned.
const MAX_EVAL_CHARS: usize = 20_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Navigate,
    Snapshot,
    Click,
    Type,
    Scroll,
    Press,
    Back,
    GetImages,
    Console,
    Screenshot,
    Close,
}

pub(super) const ALL: &[Kind] = &[
    Kind::Navigate,
    Kind::Snapshot,
    Kind::Click,
    Kind::Type,
    Kind::Scroll,
    Kind::Press,
    Kind::Back,
    Kind::GetImages,
    Kind::Console,
    Kind::Screenshot,
    Kind::Close,
];

pub struct BrowserTool {
    kind: Kind,
    manager: Arc<BrowserManager>,
}

impl BrowserTool {
    pub fn new(kind: Kind, manager: Arc<BrowserManager>) -> BrowserTool {
        BrowserTool { kind, manager }
    }
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ToolError::new(format!("{key} is required")))
}

fn fail(e: BrowserError) -> ToolError {
    ToolError::new(e.to_string())
}

fn cap(text: String, max: usize, what: &str) -> String {
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n[{what} cut at {max} of {total} characters]")
}

async fn page_state(session: &mut Session, full: bool) -> Result<Value, ToolError> {
    let (url, title) = session.location().await;
    let snap = session.snapshot(full).await.map_err(fail)?;
    Ok(json!({
        "url": url,
        "title": title,
        "snapshot": cap(snap.text, MAX_SNAPSHOT_CHARS, "snapshot"),
    }))
}

impl BrowserTool {
    async fn run(&self, args: &Value) -> ToolResult {
        if self.kind == Kind::Close {
            let closed = self.manager.close().await;
            return Ok(json!({ "closed": closed }));
        }
        // The navigation gate runs before any browser starts: a refused URL costs nothing.
        let checked = if self.kind == Kind::Navigate {
            let url = str_arg(args, "url")?;
            let url = self
                .manager
                .fetcher()
                .check(url)
                .await
                .map_err(|e| ToolError::new(e.to_string()))?;
            Some(url)
        } else {
            None
        };
        let mut slot = self.manager.lock().await;
        if self.kind == Kind::Navigate {
            self.manager.start(&mut slot).await.map_err(fail)?;
        }
        let session = slot
            .as_mut()
            .ok_or_else(|| fail(BrowserError::NotStarted))?;
        match self.kind {
            Kind::Navigate => {
                let url = checked.map(|u| u.to_string()).unwrap_or_default();
                session.navigate(&url).await.map_err(fail)?;
                page_state(session, false).await
            }
            Kind::Snapshot => {
                let full = args.get("full").and_then(Value::as_bool).unwrap_or(false);
                page_state(session, full).await
            }
            Kind::Click => {
                let r = str_arg(args, "ref")?;
                session.click(r).await.map_err(fail)?;
                let (url, title) = session.location().await;
                Ok(json!({"clicked": r, "url": url, "title": title}))
            }
            Kind::Type => {
                let r = str_arg(args, "ref")?;
                let text = args
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ToolError::new("text is required"))?;
                session.type_text(r, text).await.map_err(fail)?;
                Ok(json!({"typed": r}))
            }
            Kind::Scroll => {
                let dir = args
                    .get("direction")
                    .and_then(Value::as_str)
                    .unwrap_or("down");
                let down = match dir {
                    "down" => true,
                    "up" => false,
                    other => {
                        return Err(ToolError::new(format!(
                            "direction must be up or down, not {other:?}"
                        )));
                    }
                };
                session.scroll(down).await.map_err(fail)?;
                Ok(json!({"scrolled": dir}))
            }
            Kind::Press => {
                let key = str_arg(args, "key")?;
                session.press(key).await.map_err(fail)?;
                let (url, title) = session.location().await;
                Ok(json!({"pressed": key, "url": url, "title": title}))
            }
            Kind::Back => {
                if !session.back().await.map_err(fail)? {
                    return Ok(json!({"note": "there is no previous page"}));
                }
                let (url, title) = session.location().await;
                Ok(json!({"url": url, "title": title}))
            }
            Kind::GetImages => {
                let images = session.images(MAX_IMAGES).await.map_err(fail)?;
                Ok(json!({ "images": images }))
            }
            Kind::Console => {
                if let Some(expr) = args
                    .get("expression")
                    .and_then(Value::as_str)
                    .filter(|e| !e.trim().is_empty())
                {
                    let value = session.evaluate(expr).await.map_err(fail)?;
                    let text = cap(value.to_string(), MAX_EVAL_CHARS, "result");
                    return Ok(
                        json!({ "result": serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)) }),
                    );
                }
                let clear = args.get("clear").and_then(Value::as_bool).unwrap_or(false);
                Ok(json!({ "messages": session.console(clear) }))
            }
            Kind::Screenshot => {
                let full = args
                    .get("full_page")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let name = format!(
                    "browser_{}.png",
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_millis())
                        .unwrap_or(0)
                );
                let path = self.manager.screenshot_dir().join(name);
                let bytes = session.screenshot(&path, full).await.map_err(fail)?;
                Ok(json!({"path": path.display().to_string(), "bytes": bytes}))
            }
            Kind::Close => Ok(json!({ "closed": false })),
        }
    }
}

#[async_trait::async_trait]
impl Tool for BrowserTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Navigate => "browser_navigate",
            Kind::Snapshot => "browser_snapshot",
            Kind::Click => "browser_click",
            Kind::Type => "browser_type",
            Kind::Scroll => "browser_scroll",
            Kind::Press => "browser_press",
            Kind::Back => "browser_back",
            Kind::GetImages => "browser_get_images",
            Kind::Console => "browser_console",
            Kind::Screenshot => "browser_screenshot",
            Kind::Close => "browser_close",
        }
    }
    fn toolset(&self) -> &str {
        "browser"
    }
    fn description(&self) -> &str {
        match self.kind {
            Kind::Navigate => {
                "Open a URL in a real browser (headless Chromium) and get the page's accessibility snapshot, whose refs (@e1, ...) browser_click and browser_type take. To just read a page, web_extract is faster; use the browser for forms, clicks and script-driven pages."
            }
            Kind::Snapshot => {
                "The current page as an accessibility tree with refs for the interactive elements; full=true adds the text. Refs change with each snapshot."
            }
            Kind::Click => "Click the element with this ref from the latest snapshot.",
            Kind::Type => "Replace the text of the input field with this ref.",
            Kind::Scroll => "Scroll the page up or down.",
            Kind::Press => "Press a key: Enter, Tab, Escape, ArrowDown, PageDown, ...",
            Kind::Back => "Go back to the previous page.",
            Kind::GetImages => "List the page's images (src, alt, size).",
            Kind::Console => {
                "The page's console messages and JavaScript errors; with expression, evaluate JavaScript in the page and return its value."
            }
            Kind::Screenshot => "Save a PNG screenshot of the page; returns its path.",
            Kind::Close => "Close the browser.",
        }
    }
    fn parameters(&self) -> Value {
        let r = json!({"type": "string", "description": "Element ref, e.g. @e3"});
        let (props, required) = match self.kind {
            Kind::Navigate => (json!({"url": {"type": "string"}}), json!(["url"])),
            Kind::Snapshot => (json!({"full": {"type": "boolean"}}), json!([])),
            Kind::Click => (json!({"ref": r}), json!(["ref"])),
            Kind::Type => (
                json!({"ref": r, "text": {"type": "string"}}),
                json!(["ref", "text"]),
            ),
            Kind::Scroll => (
                json!({"direction": {"type": "string", "enum": ["up", "down"]}}),
                json!(["direction"]),
            ),
            Kind::Press => (json!({"key": {"type": "string"}}), json!(["key"])),
            Kind::Console => (
                json!({"clear": {"type": "boolean"}, "expression": {"type": "string"}}),
                json!([]),
            ),
            Kind::Screenshot => (json!({"full_page": {"type": "boolean"}}), json!([])),
            Kind::Back | Kind::GetImages | Kind::Close => (json!({}), json!([])),
        };
        json!({"type": "object", "properties": props, "required": required})
    }
    fn check_available(&self) -> Result<(), hermes_tools::Unavailable> {
        self.manager
            .settings()
            .launch()
            .map(|_| ())
            .ok_or_else(|| hermes_tools::Unavailable {
                reason: BrowserError::NotFound.to_string(),
            })
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        tokio::select! {
            () = ctx.cancel.cancelled() => Err(ToolError::new("interrupted")),
            r = self.run(&args) => r,
        }
    }
}
