//! The text rules shared by the client: tool names (`mcp__<server>__<tool>`, every character
//! outside `[A-Za-z0-9_]` made `_`, as the Python Hermes does), credential redaction of error
//! text (the same patterns as Python's `_sanitize_error`) and the rendering of a `tools/call`
//! result for the model (`{"result": text}` or `{"error": text}`).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

/// `mcp__<server>__<tool>`, both parts sanitised.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{}__{}", sanitize(server), sanitize(tool))
}

fn sanitize(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

static CREDENTIALS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)ghp_[A-Za-z0-9_]{1,255}|sk-[A-Za-z0-9_]{1,255}|Bearer\s+\S+|(?:token|key|API_KEY|password|secret)=[^\s&,;"']{1,255}"#,
    )
    .ok()
});

/// `text` with credential-looking parts (tokens, keys, `Bearer ...`, `password=...`) replaced
/// by `[REDACTED]`.
pub fn redact(text: &str) -> String {
    match CREDENTIALS.as_ref() {
        Some(re) => re.replace_all(text, "[REDACTED]").into_owned(),
        None => text.to_string(),
    }
}

/// A `tools/call` result (its JSON form) as the model reads it: text blocks joined by newlines
/// (other blocks summarised as `[image: image/png]` and the like), `structuredContent` added
/// when present; `isError` results become `{"error": ...}`.
pub fn render_result(result: &Value) -> Value {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let parts: Vec<String> = blocks.iter().filter_map(render_block).collect();
    let text = parts.join("\n");
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let message = if text.is_empty() {
            "MCP tool returned an error".to_string()
        } else {
            text
        };
        return json!({ "error": redact(&message) });
    }
    match result.get("structuredContent") {
        Some(structured) if !structured.is_null() => {
            if text.is_empty() {
                json!({ "result": structured })
            } else {
                json!({ "result": text, "structuredContent": structured })
            }
        }
        _ => json!({ "result": text }),
    }
}

fn render_block(block: &Value) -> Option<String> {
    let field = |k: &str| block.get(k).and_then(Value::as_str);
    match field("type").unwrap_or_default() {
        "text" => field("text").filter(|t| !t.is_empty()).map(str::to_string),
        "image" | "audio" => Some(format!(
            "[{}: {}]",
            field("type").unwrap_or_default(),
            field("mimeType").unwrap_or("unknown type")
        )),
        "resource" => {
            let res = block.get("resource")?;
            match res.get("text").and_then(Value::as_str) {
                Some(t) => Some(t.to_string()),
                None => Some(format!(
                    "[resource: {}]",
                    res.get("uri").and_then(Value::as_str).unwrap_or("?")
                )),
            }
        }
        "resource_link" => Some(format!("[resource link: {}]", field("uri").unwrap_or("?"))),
        other => Some(format!("[{other} content]")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised() {
        assert_eq!(tool_name("my-fs", "read.file"), "mcp__my_fs__read_file");
        assert_eq!(tool_name("gh", "search_code"), "mcp__gh__search_code");
    }

    #[test]
    fn credentials_are_redacted() {
        assert_eq!(
            redact("failed: Authorization: Bearer abc.def token=xyz&x=1 sk-12345 ghp_AAA"),
            "failed: Authorization: [REDACTED] [REDACTED]&x=1 [REDACTED] [REDACTED]"
        );
    }

    #[test]
    fn results_are_rendered() {
        let r = json!({"content": [{"type": "text", "text": "a"},
            {"type": "image", "data": "..", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "body"}}]});
        assert_eq!(
            render_result(&r),
            json!({"result": "a\n[image: image/png]\nbody"})
        );
        let r = json!({"content": [], "structuredContent": {"n": 1}});
        assert_eq!(render_result(&r), json!({"result": {"n": 1}}));
        let r = json!({"content": [{"type": "text", "text": "bad key=s3cret"}], "isError": true});
        assert_eq!(render_result(&r), json!({"error": "bad [REDACTED]"}));
        let r = json!({"isError": true});
        assert_eq!(
            render_result(&r),
            json!({"error": "MCP tool returned an error"})
        );
    }
}
