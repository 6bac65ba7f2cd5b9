//! Parallel: `POST {base}/v1beta/search` with `x-api-key` and the `parallel-beta` header, the
//! query as both objective and keyword query, mode from `PARALLEL_SEARCH_MODE` (agentic, fast or
//! one-shot; default agentic); answers `{results: [{title, url, excerpts: [...]}]}`.

use serde_json::{Value, json};

use super::{SearchHit, joined, text};
use crate::api::{ApiClient, ApiError};

const BETA: &str = "search-extract-2025-10-10";

pub(super) async fn search(
    api: &ApiClient,
    base: &str,
    key: &str,
    mode: &str,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, ApiError> {
    let mode = match mode.trim().to_ascii_lowercase().as_str() {
        m @ ("fast" | "one-shot" | "agentic") => m.to_string(),
        _ => "agentic".to_string(),
    };
    let body = json!({
        "objective": query,
        "search_queries": [query],
        "mode": mode,
        "max_results": limit.min(20),
    });
    let request = api
        .http()?
        .post(format!("{base}/v1beta/search"))
        .header("x-api-key", key)
        .header("parallel-beta", BETA)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    let answer = api.json("Parallel", request).await?;
    Ok(answer
        .get("results")
        .and_then(Value::as_array)
        .map(|results| {
            results
                .iter()
                .map(|r| SearchHit {
                    title: text(r, "title"),
                    url: text(r, "url"),
                    description: joined(r, "excerpts"),
                })
                .collect()
        })
        .unwrap_or_default())
}
