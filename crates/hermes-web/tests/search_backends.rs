//! `web_search` against mocks of each backend's documented API: the request each backend sends
//! (method, path, query, headers, body) and the compact results the model gets back; backend
//! selection from the keys present; service errors surfaced with the service's message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use common::TestServer;
use hermes_config::Environment;
use hermes_tools::{Registry, ToolContext};
use hermes_web::api::ApiClient;
use hermes_web::search::{SearchSettings, WebSearchTool};
use serde_json::{Value, json};

fn tool(env: &[(&str, &str)], backend: Option<&str>) -> WebSearchTool {
    WebSearchTool::new(
        ApiClient::new(Duration::from_secs(10)),
        Environment::isolated(env.iter().copied()),
        SearchSettings {
            backend: backend.map(str::to_string),
            search_backend: None,
        },
    )
}

async fn run(tool: &WebSearchTool, args: Value) -> (Value, bool) {
    let ctx = ToolContext::new(std::env::temp_dir());
    let out = Registry::execute(tool, args, &ctx).await;
    (serde_json::from_str(&out.content).unwrap(), out.ok)
}

fn hits(result: &Value) -> Vec<(String, String, String)> {
    result["data"]["web"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["title"].as_str().unwrap().to_string(),
                h["url"].as_str().unwrap().to_string(),
                h["description"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn tavily_posts_the_key_in_the_body() {
    let srv = TestServer::start(Router::new().route(
        "/search",
        post(|| async {
            axum::Json(json!({"query": "rust", "results": [
                {"title": "Rust", "url": "https://www.rust-lang.org/", "content": "A language empowering everyone", "score": 0.9},
                {"title": "Book", "url": "https://doc.rust-lang.org/book/", "content": "The Rust\nbook"}
            ]}))
        }),
    ))
    .await;
    let base = srv.url("");
    let t = tool(
        &[("TAVILY_API_KEY", "tvly-key"), ("TAVILY_BASE_URL", &base)],
        None,
    );
    let (result, ok) = run(&t, json!({"query": "rust"})).await;
    assert!(ok, "{result}");
    assert_eq!(
        hits(&result),
        [
            (
                "Rust".into(),
                "https://www.rust-lang.org/".into(),
                "A language empowering everyone".into()
            ),
            (
                "Book".into(),
                "https://doc.rust-lang.org/book/".into(),
                "The Rust book".into()
            ),
        ]
    );
    let seen = srv.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path()),
        ("POST", "/search")
    );
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    assert_eq!(
        seen[0].json(),
        json!({"query": "rust", "max_results": 5, "include_raw_content": false, "include_images": false, "api_key": "tvly-key"})
    );
}

#[tokio::test]
async fn exa_sends_x_api_key_and_asks_for_highlights() {
    let srv = TestServer::start(Router::new().route(
        "/search",
        post(|| async {
            axum::Json(json!({"requestId": "r1", "results": [
                {"id": "1", "title": "Tokio", "url": "https://tokio.rs/", "highlights": ["An asynchronous runtime", "for Rust"]}
            ]}))
        }),
    ))
    .await;
    let base = srv.url("");
    let t = tool(&[("EXA_API_KEY", "exa-key"), ("EXA_BASE_URL", &base)], None);
    let (result, ok) = run(&t, json!({"query": "async rust", "limit": 3})).await;
    assert!(ok, "{result}");
    assert_eq!(
        hits(&result),
        [(
            "Tokio".into(),
            "https://tokio.rs/".into(),
            "An asynchronous runtime for Rust".into()
        )]
    );
    let req = &srv.requests()[0];
    assert_eq!((req.method.as_str(), req.path()), ("POST", "/search"));
    assert_eq!(req.header("x-api-key"), Some("exa-key"));
    assert_eq!(req.header("x-exa-integration"), Some("hermes-agent"));
    assert_eq!(
        req.json(),
        json!({"query": "async rust", "numResults": 3, "contents": {"highlights": true}})
    );
}

#[tokio::test]
async fn parallel_uses_the_beta_search_endpoint() {
    let srv = TestServer::start(Router::new().route(
        "/v1beta/search",
        post(|| async {
            axum::Json(json!({"search_id": "s", "results": [
                {"url": "https://serde.rs/", "title": "Serde", "excerpts": ["Serialization framework", "for Rust"]}
            ]}))
        }),
    ))
    .await;
    let base = srv.url("");
    let t = tool(
        &[
            ("PARALLEL_API_KEY", "par-key"),
            ("PARALLEL_BASE_URL", &base),
            ("PARALLEL_SEARCH_MODE", "fast"),
        ],
        None,
    );
    let (result, ok) = run(&t, json!({"query": "serde"})).await;
    assert!(ok, "{result}");
    assert_eq!(hits(&result)[0].2, "Serialization framework for Rust");
    let req = &srv.requests()[0];
    assert_eq!(
        (req.method.as_str(), req.path()),
        ("POST", "/v1beta/search")
    );
    assert_eq!(req.header("x-api-key"), Some("par-key"));
    assert_eq!(
        req.header("parallel-beta"),
        Some("search-extract-2025-10-10")
    );
    assert_eq!(
        req.json(),
        json!({"objective": "serde", "search_queries": ["serde"], "mode": "fast", "max_results": 5})
    );
}

#[tokio::test]
async fn firecrawl_v2_search_with_bearer_key_or_self_hosted_without() {
    let srv = TestServer::start(Router::new().route(
        "/v2/search",
        post(|| async {
            axum::Json(json!({"success": true, "data": {"web": [
                {"url": "https://axum.rs/", "title": "Axum", "description": "Web framework", "position": 1}
            ]}}))
        }),
    ))
    .await;
    let base = srv.url("");
    let t = tool(
        &[
            ("FIRECRAWL_API_KEY", "fc-key"),
            ("FIRECRAWL_API_URL", &base),
        ],
        None,
    );
    let (result, ok) = run(&t, json!({"query": "axum"})).await;
    assert!(ok, "{result}");
    assert_eq!(
        hits(&result),
        [(
            "Axum".into(),
            "https://axum.rs/".into(),
            "Web framework".into()
        )]
    );
    let req = &srv.requests()[0];
    assert_eq!((req.method.as_str(), req.path()), ("POST", "/v2/search"));
    assert_eq!(req.header("authorization"), Some("Bearer fc-key"));
    assert_eq!(req.json(), json!({"query": "axum", "limit": 5}));

    // Self-hosted: the URL alone selects Firecrawl, and no Authorization is sent.
    let t = tool(&[("FIRECRAWL_API_URL", &base)], None);
    let (_, ok) = run(&t, json!({"query": "axum"})).await;
    assert!(ok);
    assert_eq!(srv.requests()[1].header("authorization"), None);
}

#[tokio::test]
async fn searxng_asks_for_json_and_orders_by_score() {
    let srv = TestServer::start(Router::new().route(
        "/search",
        get(|| async {
            axum::Json(json!({"query": "q", "results": [
                {"title": "Low", "url": "https://low.example/", "content": "low", "score": 0.2},
                {"title": "High", "url": "https://high.example/", "content": "high", "score": 3.5},
                {"title": "Mid", "url": "https://mid.example/", "content": "mid", "score": 1.0}
            ]}))
        }),
    ))
    .await;
    let base = srv.url("/");
    let t = tool(&[("SEARXNG_URL", &base)], None);
    let (result, ok) = run(&t, json!({"query": "rust & c++", "limit": 2})).await;
    assert!(ok, "{result}");
    let titles: Vec<String> = hits(&result).into_iter().map(|h| h.0).collect();
    assert_eq!(titles, ["High", "Mid"]);
    let req = &srv.requests()[0];
    assert_eq!((req.method.as_str(), req.path()), ("GET", "/search"));
    assert_eq!(req.header("accept"), Some("application/json"));
    assert_eq!(
        req.query(),
        [
            ("q".to_string(), "rust & c++".to_string()),
            ("format".into(), "json".into()),
            ("pageno".into(), "1".into())
        ]
    );
}

#[tokio::test]
async fn brave_sends_the_subscription_token() {
    let srv = TestServer::start(Router::new().route(
        "/res/v1/web/search",
        get(|| async {
            axum::Json(json!({"type": "search", "web": {"type": "search", "results": [
                {"title": "Cargo", "url": "https://doc.rust-lang.org/cargo/", "description": "The <strong>Cargo</strong> Book"}
            ]}}))
        }),
    ))
    .await;
    let base = srv.url("");
    let t = tool(
        &[
            ("BRAVE_SEARCH_API_KEY", "brave-key"),
            ("BRAVE_SEARCH_BASE_URL", &base),
        ],
        None,
    );
    let (result, ok) = run(&t, json!({"query": "cargo book", "limit": 4})).await;
    assert!(ok, "{result}");
    assert_eq!(hits(&result)[0].1, "https://doc.rust-lang.org/cargo/");
    let req = &srv.requests()[0];
    assert_eq!(
        (req.method.as_str(), req.path()),
        ("GET", "/res/v1/web/search")
    );
    assert_eq!(req.header("x-subscription-token"), Some("brave-key"));
    assert_eq!(req.header("accept"), Some("application/json"));
    assert_eq!(
        req.query(),
        [
            ("q".to_string(), "cargo book".to_string()),
            ("count".into(), "4".into())
        ]
    );
}

const DDG_PAGE: &str = r#"<!DOCTYPE html><html><body><div class="serp__results"><div id="links" class="results">
<div class="result results_links results_links_deep result--ad "><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;u3=x">Buy now</a></h2>
<a class="result__snippet" href="https://duckduckgo.com/y.js?x">An advertisement</a></div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2Flearn&amp;rut=abc">Learn <b>Rust</b></a></h2>
<div class="result__extras"><div class="result__extras__url"><a class="result__url" href="//duckduckgo.com/l/?uddg=x">www.rust-lang.org/learn</a></div></div>
<a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">Get started with <b>Rust</b>: the book,   rustlings and more.</a>
<div class="clear"></div></div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdoc.rust-lang.org%2Fstd%2F&amp;rut=def">std - Rust</a></h2>
<a class="result__snippet" href="//duckduckgo.com/l/?uddg=y">The Rust Standard Library</a></div></div>
</div></div></body></html>"#;

#[tokio::test]
async fn duckduckgo_html_needs_no_key_and_skips_ads() {
    let srv = TestServer::start(
        Router::new().route("/html/", post(|| async { axum::response::Html(DDG_PAGE) })),
    )
    .await;
    let base = srv.url("");
    // No key of any backend: DuckDuckGo is the keyless fallback.
    let t = tool(&[("DUCKDUCKGO_BASE_URL", &base)], None);
    let (result, ok) = run(&t, json!({"query": "learn rust"})).await;
    assert!(ok, "{result}");
    assert_eq!(
        hits(&result),
        [
            (
                "Learn Rust".into(),
                "https://www.rust-lang.org/learn".into(),
                "Get started with Rust: the book, rustlings and more.".into()
            ),
            (
                "std - Rust".into(),
                "https://doc.rust-lang.org/std/".into(),
                "The Rust Standard Library".into()
            ),
        ]
    );
    let req = &srv.requests()[0];
    assert_eq!((req.method.as_str(), req.path()), ("POST", "/html/"));
    assert_eq!(
        req.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        String::from_utf8_lossy(&req.body),
        "q=learn+rust&b=&kl=wt-wt"
    );
    assert!(req.header("user-agent").unwrap().starts_with("Mozilla/5.0"));
}

#[tokio::test]
async fn a_configured_backend_without_its_key_and_service_errors_are_clear() {
    let t = tool(&[], Some("tavily"));
    let (result, ok) = run(&t, json!({"query": "x"})).await;
    assert!(!ok);
    assert_eq!(
        result["error"],
        "web search failed: Tavily: TAVILY_API_KEY is not set"
    );

    let srv = TestServer::start(Router::new().route(
        "/search",
        post(|| async {
            (
                StatusCode::UNAUTHORIZED,
                axum::Json(
                    json!({"detail": {"error": "Unauthorized: missing or invalid API key."}}),
                ),
            )
        }),
    ))
    .await;
    let base = srv.url("");
    let t = tool(
        &[("TAVILY_API_KEY", "bad"), ("TAVILY_BASE_URL", &base)],
        None,
    );
    let (result, ok) = run(&t, json!({"query": "x"})).await;
    assert!(!ok);
    let msg = result["error"].as_str().unwrap();
    assert!(
        msg.starts_with("web search failed: Tavily answered HTTP 401:"),
        "{msg}"
    );
    assert!(msg.contains("invalid API key"), "{msg}");

    let (result, ok) = run(&t, json!({"query": "  "})).await;
    assert!(!ok);
    assert_eq!(result["error"], "query is required");
}
