//! Tavily: `POST {base}/search` with the key in the JSON body (as the Python Hermes sends it),
//! answers `{results: [{title, url, content}]}`.

use serde_json::{Value, json};

use super::{SearchHit, text};
use crate::api::{ApiClient, ApiError};

pub(super) async fn search(
    api: &ApiClient,
    base: &str,
    key: &str,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, ApiError> {
    let body = json!({
        "query": query,
        "max_results": limit.min(20),
        "include_raw_content": false,
        "include_images": false,
        "api_key": key,
    });
    let request = api
        .http()?
        .post(format!("{base}/search"))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    let answer = api.json("Tavily", request).await?;
    Ok(answer
        .get("results")
        .and_then(Value::as_array)
        .map(|results| {
            results
                .iter()
                .map(|r| SearchHit {
                    title: text(r, "title"),
                    url: text(r, "url"),
                    description: text(r, "content"),
                })
                .collect()
        })
        .unwrap_or_default())
}
