//! The `web_extract` tool: up to 5 URLs fetched concurrently through the SSRF-safe fetcher,
//! each turned into text and kept within the per-page budget; one result per URL in the order
//! given, `{"results": [{url, title, content} | {url, error}]}`. A URL holding one of the
//! session's known secrets is never fetched.

use std::path::PathBuf;

use hermes_tools::{Access, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::limit::{self, MAX_CHAR_LIMIT, MIN_CHAR_LIMIT};
use super::page_from;
use crate::net::Fetcher;

/// URLs one call may ask for.
pub const MAX_URLS: usize = 5;

const DESCRIPTION: &str = "Read web pages (up to 5 URLs) as clean markdown: the main content without navigation; PDFs as text. Long pages come back as head and tail with the path of the full text for read_file. Private and internal addresses are refused.";

pub struct WebExtractTool {
    fetcher: Fetcher,
    /// Where full texts of long pages are saved (`$HERMES_HOME/cache/web`).
    cache_dir: PathBuf,
    /// The default per-page budget (`web.extract_char_limit`, else 15,000).
    char_limit: usize,
}

impl WebExtractTool {
    pub fn new(fetcher: Fetcher, cache_dir: PathBuf, char_limit: usize) -> WebExtractTool {
        WebExtractTool {
            fetcher,
            cache_dir,
            char_limit: char_limit.clamp(MIN_CHAR_LIMIT, MAX_CHAR_LIMIT),
        }
    }

    async fn one(&self, url: &str, budget: usize, ctx: &ToolContext) -> Value {
        let fail = |error: String| json!({"url": url, "error": error});
        let redacted = ctx.redactor.redact(url);
        if redacted != url {
            return fail(format!(
                "refused: the URL contains a secret ({redacted}); secrets are never sent in URLs"
            ));
        }
        let fetched = match self.fetcher.get(url).await {
            Ok(f) => f,
            Err(e) => return fail(e.to_string()),
        };
        let page = match tokio::task::spawn_blocking(move || page_from(&fetched)).await {
            Ok(Ok(page)) => page,
            Ok(Err(e)) => return fail(e.to_string()),
            Err(_) => return fail(super::ExtractError::Crashed.to_string()),
        };
        let content = limit::strip_inline_images(&page.content);
        let content = self.fit(&page.url, content, budget);
        json!({"url": page.url, "title": page.title, "content": content})
    }

    fn fit(&self, url: &str, content: String, budget: usize) -> String {
        if content.chars().count() <= budget {
            return content;
        }
        limit::truncate_with_footer(&content, url, budget, &self.cache_dir).0
    }
}

/// A URL item: a string, or a search result object with `url` / `href`.
fn url_of(item: &Value) -> Option<String> {
    let v = match item {
        Value::Object(m) => m.get("url").or_else(|| m.get("href"))?,
        other => other,
    };
    v.as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[async_trait::async_trait]
impl Tool for WebExtractTool {
    fn name(&self) -> &str {
        "web_extract"
    }
    fn toolset(&self) -> &str {
        "web"
    }
    fn description(&self) -> &str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "urls": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_URLS},
                "char_limit": {"type": "integer", "minimum": MIN_CHAR_LIMIT, "description": "Characters per page (default 15000)"}
            },
            "required": ["urls"]
        })
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Read(Vec::new())
    }
    fn preview(&self, args: &Value) -> String {
        let urls: Vec<String> = args
            .get("urls")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(url_of).collect())
            .unwrap_or_default();
        hermes_tools::output::shorten_line(&urls.join(" "), 80)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let items = match args.get("urls") {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) => vec![Value::String(s.clone())],
            _ => return Err(ToolError::new("urls is required (a list of up to 5 URLs)")),
        };
        if items.is_empty() {
            return Err(ToolError::new("urls is empty"));
        }
        let budget = args
            .get("char_limit")
            .and_then(Value::as_u64)
            .map_or(self.char_limit, |n| {
                usize::try_from(n)
                    .unwrap_or(MAX_CHAR_LIMIT)
                    .clamp(MIN_CHAR_LIMIT, MAX_CHAR_LIMIT)
            });
        let runs = items.iter().take(MAX_URLS).enumerate().map(|(i, item)| async move {
            match url_of(item) {
                Some(url) => self.one(&url, budget, ctx).await,
                None => json!({"url": "", "error": format!("item {i} is not a URL (a string, or an object with url)")}),
            }
        });
        let results = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(ToolError::new("interrupted")),
            r = futures_util::future::join_all(runs) => r,
        };
        let mut out = json!({ "results": results });
        if items.len() > MAX_URLS {
            out["note"] = json!(format!(
                "only the first {MAX_URLS} of {} URLs were read",
                items.len()
            ));
        }
        Ok(out)
    }
}
