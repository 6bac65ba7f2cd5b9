//! `web_extract` against pages served by the test: a news article, a documentation page and a
//! navigation-heavy page (saved HTML under tests/fixtures) keep their main text and lose their
//! navigation; a PDF generated here is read as text; long pages are cut with the full text
//! saved, or summarised when a summariser is set; refusals and failures come back per URL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use common::TestServer;
use hermes_tools::{Redactor, Registry, ToolContext};
use hermes_web::extract::WebExtractTool;
use hermes_web::net::{Fetcher, StaticResolver, UrlPolicy};
use serde_json::{Value, json};

const NEWS: &str = include_str!("fixtures/news_article.html");
const DOCS: &str = include_str!("fixtures/docs_page.html");
const NAV: &str = include_str!("fixtures/nav_heavy.html");

/// A one-page PDF with two lines of text in Helvetica, offsets computed so the file is valid.
fn pdf(lines: &[&str]) -> Vec<u8> {
    let mut stream = String::new();
    let mut y = 720;
    for line in lines {
        stream.push_str(&format!("BT /F1 12 Tf 72 {y} Td ({line}) Tj ET\n"));
        y -= 20;
    }
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_string(),
        format!("<< /Length {} >>\nstream\n{stream}endstream", stream.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_string(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

fn html(body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body)
}

async fn site() -> TestServer {
    let long: String = (1..=600)
        .map(|i| format!("<p>Paragraph {i} of the very long report about estuary sediment.</p>\n"))
        .collect();
    let long_page: &'static str = Box::leak(format!("<html><head><title>Long report</title></head><body><article><h1>Long report</h1>{long}</article></body></html>").into_boxed_str());
    let router = Router::new()
        .route("/news", get(|| async { html(NEWS) }))
        .route("/docs/retries", get(|| async { html(DOCS) }))
        .route("/visit", get(|| async { html(NAV) }))
        .route("/long", get(move || async move { html(long_page) }))
        .route(
            "/report.pdf",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/pdf")],
                    pdf(&[
                        "Quarterly tide report",
                        "Spring tides reached 6.2 metres at Pellwick.",
                    ]),
                )
            }),
        )
        .route(
            "/logo.png",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/png")],
                    vec![0x89u8, b'P', b'N', b'G', 0, 1, 2],
                )
            }),
        )
        .route(
            "/notes.txt",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/plain")],
                    "plain notes\nsecond line",
                )
            }),
        )
        .route(
            "/moved",
            get(|| async {
                (
                    StatusCode::FOUND,
                    [(header::LOCATION, "http://10.0.0.7/internal")],
                )
            }),
        )
        .route("/gone", get(|| async { StatusCode::GONE }));
    TestServer::start(router).await
}

fn tool(srv: &TestServer, cache: &std::path::Path) -> WebExtractTool {
    let resolver = StaticResolver::new().with("news.example.com", &["127.0.0.1".parse().unwrap()]);
    let fetcher =
        Fetcher::with_resolver(UrlPolicy::strict().trusting(srv.addr), Arc::new(resolver));
    WebExtractTool::new(fetcher, cache.to_path_buf(), 15_000)
}

async fn extract(tool: &WebExtractTool, ctx: &ToolContext, args: Value) -> Value {
    let out = Registry::execute(tool, args, ctx).await;
    assert!(out.ok, "{}", out.content);
    serde_json::from_str(&out.content).unwrap()
}

fn ctx() -> ToolContext {
    ToolContext::new(std::env::temp_dir())
}

#[tokio::test]
async fn saved_pages_keep_the_main_text_and_lose_the_navigation() {
    let srv = site().await;
    let cache = tempfile::tempdir().unwrap();
    let t = tool(&srv, cache.path());
    let news_url = format!("http://news.example.com:{}/news", srv.addr.port());
    let result = extract(
        &t,
        &ctx(),
        json!({"urls": [news_url, srv.url("/docs/retries"), {"url": srv.url("/visit"), "title": "from a search"}]}),
    )
    .await;
    let results = result["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);

    let news = &results[0];
    assert_eq!(news["url"], news_url);
    let text = news["content"].as_str().unwrap();
    assert!(
        news["title"]
            .as_str()
            .unwrap()
            .contains("Harbour town trials tidal power"),
        "{news}"
    );
    for kept in [
        "two tidal turbines, moored off the north breakwater",
        "41 megawatt-hours",
        "We are simply the first town to let it pay for the ferry",
        "Why the night crossings matter",
        "extend the scheme to the daytime crossings by 2027",
    ] {
        assert!(text.contains(kept), "news lost {kept:?}:\n{text}");
    }
    for dropped in [
        "Politics",
        "Subscribe to the Ledger",
        "Manage cookie preferences",
        "Regatta cancelled",
        "Careers at the Ledger",
        "morning briefing newsletter",
        "dataLayer",
    ] {
        assert!(!text.contains(dropped), "news kept {dropped:?}:\n{text}");
    }

    assert!(
        results[1]["title"]
            .as_str()
            .unwrap()
            .starts_with("Configuring retries"),
        "{}",
        results[1]
    );
    let docs = results[1]["content"].as_str().unwrap();
    for kept in [
        "## The retry policy",
        "RetryPolicy::exponential(3)",
        "```",
        "Only idempotent methods (GET, HEAD, PUT, DELETE, OPTIONS)",
        "first_delay",
    ] {
        assert!(docs.contains(kept), "docs lost {kept:?}:\n{docs}");
    }
    for dropped in [
        "TLS and certificates",
        "Cookie jars",
        "Writing middleware",
        "Search the docs",
        "Edit this page on GitHub",
    ] {
        assert!(!docs.contains(dropped), "docs kept {dropped:?}:\n{docs}");
    }

    let visit = results[2]["content"].as_str().unwrap();
    for kept in [
        "open every day from 9:00 to 17:30",
        "closed on 25 and 26 December",
        "Assistance dogs are welcome everywhere",
    ] {
        assert!(visit.contains(kept), "nav page lost {kept:?}:\n{visit}");
    }
    for dropped in [
        "Mega menu item",
        "Footer link",
        "Member login",
        "Buy tickets online",
    ] {
        assert!(
            !visit.contains(dropped),
            "nav page kept {dropped:?}:\n{visit}"
        );
    }
    assert!(
        visit.len() < NAV.len() / 3,
        "{} of {}",
        visit.len(),
        NAV.len()
    );
}

#[tokio::test]
async fn a_pdf_is_read_as_text_and_plain_text_passes_through() {
    let srv = site().await;
    let cache = tempfile::tempdir().unwrap();
    let t = tool(&srv, cache.path());
    let result = extract(
        &t,
        &ctx(),
        json!({"urls": [srv.url("/report.pdf"), srv.url("/notes.txt"), srv.url("/logo.png")]}),
    )
    .await;
    let pdf_text = result["results"][0]["content"].as_str().unwrap();
    assert!(pdf_text.contains("Quarterly tide report"), "{pdf_text:?}");
    assert!(
        pdf_text.contains("Spring tides reached 6.2 metres at Pellwick."),
        "{pdf_text:?}"
    );
    assert_eq!(result["results"][1]["content"], "plain notes\nsecond line");
    let err = result["results"][2]["error"].as_str().unwrap();
    assert!(err.contains("not a text page (image/png)"), "{err}");
}

#[tokio::test]
async fn refusals_and_failures_are_reported_per_url_in_order() {
    let srv = site().await;
    let cache = tempfile::tempdir().unwrap();
    let t = tool(&srv, cache.path());
    let result = extract(
        &t,
        &ctx(),
        json!({"urls": ["http://127.0.0.1:9/", srv.url("/moved"), srv.url("/gone"), 42, srv.url("/notes.txt")]}),
    )
    .await;
    let r = result["results"].as_array().unwrap();
    assert!(
        r[0]["error"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1 is a loopback address"),
        "{}",
        r[0]
    );
    let moved = r[1]["error"].as_str().unwrap();
    assert!(
        moved.contains("/moved redirected to http://10.0.0.7/internal is refused"),
        "{moved}"
    );
    assert!(
        r[2]["error"].as_str().unwrap().contains("HTTP 410"),
        "{}",
        r[2]
    );
    assert!(
        r[3]["error"].as_str().unwrap().contains("not a URL"),
        "{}",
        r[3]
    );
    assert_eq!(r[4]["content"], "plain notes\nsecond line");
}

#[tokio::test]
async fn a_url_holding_a_session_secret_is_never_fetched() {
    let srv = site().await;
    let cache = tempfile::tempdir().unwrap();
    let t = tool(&srv, cache.path());
    let mut ctx = ctx();
    ctx.redactor = Arc::new(Redactor::new([(
        "OPENAI_API_KEY",
        "sk-test-abcdefghijklmnop",
    )]));
    let url = srv.url("/notes.txt?key=sk-test-abcdefghijklmnop");
    let result = extract(&t, &ctx, json!({"urls": [url]})).await;
    let err = result["results"][0]["error"].as_str().unwrap();
    assert!(err.contains("secrets are never sent in URLs"), "{err}");
    assert!(!err.contains("sk-test-abcdefghijklmnop"), "{err}");
    assert!(srv.requests().is_empty());
}

#[tokio::test]
async fn long_pages_are_cut_with_the_full_text_saved() {
    let srv = site().await;
    let cache = tempfile::tempdir().unwrap();
    let t = tool(&srv, cache.path());
    let result = extract(
        &t,
        &ctx(),
        json!({"urls": [srv.url("/long")], "char_limit": 3000}),
    )
    .await;
    let text = result["results"][0]["content"].as_str().unwrap();
    assert!(text.contains("Paragraph 1 of"), "{text}");
    assert!(text.contains("Paragraph 600 of"), "{text}");
    assert!(!text.contains("Paragraph 300 of"), "{text}");
    let saved = text
        .lines()
        .find_map(|l| l.strip_prefix("Full text saved to: "))
        .unwrap();
    assert!(saved.starts_with(cache.path().to_str().unwrap()), "{saved}");
    let full = std::fs::read_to_string(saved).unwrap();
    assert!(full.contains("Paragraph 300 of"));
}
