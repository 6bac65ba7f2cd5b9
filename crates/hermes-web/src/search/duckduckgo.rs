//! DuckDuckGo without a key: its HTML endpoint (`POST {base}/html/`, form field `q`), the page
//! parsed for result blocks (`div.result`, ads skipped): the title link `a.result__a` (its
//! redirect `//duckduckgo.com/l/?uddg=<target>` unwrapped) and the snippet `.result__snippet`.
//! A bot-check page is reported as such rather than as "no results".

use dom_query::Document;

use super::SearchHit;
use crate::api::{ApiClient, ApiError};

const BROWSER_UA: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";

pub(super) async fn search(
    api: &ApiClient,
    base: &str,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, ApiError> {
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("q", query)
        .append_pair("b", "")
        .append_pair("kl", "wt-wt")
        .finish();
    let request = api
        .http()?
        .post(format!("{base}/html/"))
        .header(reqwest::header::USER_AGENT, BROWSER_UA)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(reqwest::header::ACCEPT, "text/html")
        .body(form);
    let page = api.text("DuckDuckGo", request).await?;
    parse(&page, limit)
}

/// The results of one HTML result page.
pub(super) fn parse(page: &str, limit: usize) -> Result<Vec<SearchHit>, ApiError> {
    let doc = Document::from(page);
    let mut hits = Vec::new();
    for block in doc.select("div.result").iter() {
        if hits.len() >= limit {
            break;
        }
        if block.has_class("result--ad") {
            continue;
        }
        let link = block.select("a.result__a").first();
        let Some(href) = link.attr("href") else {
            continue;
        };
        let Some(url) = target(&href) else { continue };
        hits.push(SearchHit {
            title: link.text().trim().to_string(),
            url,
            description: block
                .select(".result__snippet")
                .first()
                .text()
                .trim()
                .to_string(),
        });
    }
    if hits.is_empty() && (page.contains("anomaly-modal") || page.contains("challenge-form")) {
        return Err(ApiError::format(
            "DuckDuckGo",
            "it answered with a bot check instead of results; try again later or configure another backend (web.backend)",
        ));
    }
    Ok(hits)
}

/// The destination of a result link: DuckDuckGo's `/l/?uddg=` redirect unwrapped; its ad
/// links (`/y.js`) are none.
fn target(href: &str) -> Option<String> {
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else {
        href.to_string()
    };
    let url = url::Url::parse(&absolute).ok()?;
    let is_ddg = url
        .host_str()
        .is_some_and(|h| h == "duckduckgo.com" || h.ends_with(".duckduckgo.com"));
    if is_ddg {
        if url.path() == "/y.js" {
            return None;
        }
        return url
            .query_pairs()
            .find(|(k, _)| k == "uddg")
            .map(|(_, v)| v.into_owned());
    }
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_links_are_unwrapped_and_ads_dropped() {
        assert_eq!(
            target("//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2F&rut=abc")
                .as_deref(),
            Some("https://www.rust-lang.org/")
        );
        assert_eq!(target("https://duckduckgo.com/y.js?ad_provider=x"), None);
        assert_eq!(
            target("https://example.com/a").as_deref(),
            Some("https://example.com/a")
        );
        assert_eq!(target("javascript:alert(1)"), None);
    }
}
