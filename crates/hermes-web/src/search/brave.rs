//! Brave Search (free tier): `GET {base}/res/v1/web/search?q=…&count=N` with
//! `X-Subscription-Token`; answers `{web: {results: [{title, url, description}]}}`.

use serde_json::Value;

use super::{SearchHit, text};
use crate::api::{ApiClient, ApiError};

pub(super) async fn search(
    api: &ApiClient,
    base: &str,
    key: &str,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, ApiError> {
    let mut url = url::Url::parse(&format!("{base}/res/v1/web/search"))
        .map_err(|e| ApiError::format("Brave Search", e.to_string()))?;
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("count", &limit.clamp(1, 20).to_string());
    let request = api
        .http()?
        .get(url)
        .header("X-Subscription-Token", key)
        .header(reqwest::header::ACCEPT, "application/json");
    let answer = api.json("Brave Search", request).await?;
    Ok(answer
        .pointer("/web/results")
        .and_then(Value::as_array)
        .map(|results| {
            results
                .iter()
                .map(|r| SearchHit {
                    title: text(r, "title"),
                    url: text(r, "url"),
                    description: text(r, "description"),
                })
                .collect()
        })
        .unwrap_or_default())
}
