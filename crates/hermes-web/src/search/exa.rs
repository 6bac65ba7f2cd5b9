//! Exa: `POST {base}/search` with `x-api-key`, asking for highlights; answers
//! `{results: [{title, url, highlights: [...]}]}`.

use serde_json::{Value, json};

use super::{SearchHit, joined, text};
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
        "numResults": limit,
        "contents": {"highlights": true},
    });
    let request = api
        .http()?
        .post(format!("{base}/search"))
        .header("x-api-key", key)
        .header("x-exa-integration", "hermes-agent")
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    let answer = api.json("Exa", request).await?;
    Ok(answer
        .get("results")
        .and_then(Value::as_array)
        .map(|results| {
            results
                .iter()
                .map(|r| SearchHit {
                    title: text(r, "title"),
                    url: text(r, "url"),
                    description: joined(r, "highlights"),
                })
                .collect()
        })
        .unwrap_or_default())
}
