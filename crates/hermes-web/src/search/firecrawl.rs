//! Firecrawl (cloud or self-hosted at `FIRECRAWL_API_URL`): `POST {base}/v2/search` with a
//! Bearer key when there is one; answers `{success, data: {web: [{title, url, description}]}}`
//! (older servers: `data` as the list itself).

use serde_json::{Value, json};

use super::{SearchHit, text};
use crate::api::{ApiClient, ApiError};

pub(super) async fn search(
    api: &ApiClient,
    base: &str,
    key: Option<&str>,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, ApiError> {
    let body = json!({"query": query, "limit": limit});
    let mut request = api
        .http()?
        .post(format!("{base}/v2/search"))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let answer = api.json("Firecrawl", request).await?;
    if answer.get("success") == Some(&Value::Bool(false)) {
        let why = answer
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("the search failed");
        return Err(ApiError::format("Firecrawl", why));
    }
    let data = answer.get("data");
    let list = data
        .and_then(|d| d.get("web"))
        .or(data)
        .and_then(Value::as_array);
    Ok(list
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
