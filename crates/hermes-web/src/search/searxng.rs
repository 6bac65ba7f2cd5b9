//! SearXNG (the user's instance at `SEARXNG_URL`): `GET {base}/search?q=…&format=json&pageno=1`;
//! answers `{results: [{title, url, content, score}]}`, best score first.

use serde_json::Value;

use super::{SearchHit, text};
use crate::api::{ApiClient, ApiError};

pub(super) async fn search(
    api: &ApiClient,
    base: &str,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, ApiError> {
    let mut url = url::Url::parse(&format!("{base}/search"))
        .map_err(|e| ApiError::format("SearXNG", format!("SEARXNG_URL is not a URL: {e}")))?;
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("format", "json")
        .append_pair("pageno", "1");
    let request = api
        .http()?
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json");
    let answer = api.json("SearXNG", request).await?;
    let mut results: Vec<&Value> = answer
        .get("results")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let score = |r: &Value| r.get("score").and_then(Value::as_f64).unwrap_or(0.0);
    results.sort_by(|a, b| score(b).total_cmp(&score(a)));
    Ok(results
        .into_iter()
        .take(limit)
        .map(|r| SearchHit {
            title: text(r, "title"),
            url: text(r, "url"),
            description: text(r, "content"),
        })
        .collect())
}
