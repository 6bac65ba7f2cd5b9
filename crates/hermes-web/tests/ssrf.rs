//! The SSRF-safe fetcher against real HTTP servers on loopback: internal addresses in every
//! spelling are refused with the reason, a public-looking name resolving to loopback is
//! refused, a redirect to a private address is refused, and a page on an explicitly trusted
//! address is fetched (the checks still run for everything else).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use common::TestServer;
use hermes_web::net::{FetchError, FetchLimits, Fetcher, RefusalReason, StaticResolver, UrlPolicy};

fn loopback() -> IpAddr {
    "127.0.0.1".parse().unwrap()
}

/// A server with a page, redirects and a big body.
async fn server(private_target: String) -> TestServer {
    let router = Router::new()
        .route(
            "/page",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    "<h1>hello</h1>",
                )
            }),
        )
        .route(
            "/hop",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/page")]) }),
        )
        .route(
            "/to-private",
            get(move || {
                let target = private_target.clone();
                async move { (StatusCode::FOUND, [(header::LOCATION, target)]).into_response() }
            }),
        )
        .route(
            "/to-metadata",
            get(|| async {
                (
                    StatusCode::MOVED_PERMANENTLY,
                    [(header::LOCATION, "http://169.254.169.254/latest/meta-data")],
                )
            }),
        )
        .route(
            "/loop",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop")]) }),
        )
        .route("/big", get(|| async { "x".repeat(5000) }))
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        );
    TestServer::start(router).await
}

fn refusal(err: &FetchError) -> String {
    assert!(err.is_refusal(), "not a refusal: {err}");
    err.to_string()
}

#[tokio::test]
async fn internal_addresses_in_every_spelling_are_refused_with_the_reason() {
    let fetcher = Fetcher::with_resolver(UrlPolicy::strict(), Arc::new(StaticResolver::new()));
    for (url, expect) in [
        ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
        ("http://[::1]/", "::1 is a loopback address"),
        (
            "http://169.254.169.254/latest/meta-data",
            "169.254.169.254 is a cloud metadata address, which is never fetched",
        ),
        ("http://2130706433/", "127.0.0.1 is a loopback address"),
        ("http://0x7f000001/", "127.0.0.1 is a loopback address"),
        ("http://0177.0.0.1/", "127.0.0.1 is a loopback address"),
        ("http://0x7f.1/", "127.0.0.1 is a loopback address"),
        (
            "http://[::ffff:127.0.0.1]/",
            "::ffff:127.0.0.1 is 127.0.0.1, a loopback address",
        ),
        (
            "http://[::ffff:a9fe:a9fe]/",
            "is 169.254.169.254, a cloud metadata address",
        ),
        (
            "http://10.0.0.8:8080/admin",
            "10.0.0.8 is a private address",
        ),
        ("http://100.64.1.1/", "carrier-grade NAT"),
        ("http://[fd00:ec2::254]/", "cloud metadata"),
        (
            "http://metadata.google.internal/computeMetadata/v1/",
            "metadata.google.internal is a cloud metadata service",
        ),
    ] {
        let err = fetcher.get(url).await.unwrap_err();
        let text = refusal(&err);
        assert!(text.contains(expect), "{url}: {text}");
        assert!(text.contains("is refused"), "{url}: {text}");
    }
    let err = fetcher.get("file:///etc/passwd").await.unwrap_err();
    assert!(
        matches!(err.refusal_reason(), Some(RefusalReason::Scheme(s)) if s == "file"),
        "{err}"
    );
}

#[tokio::test]
async fn a_public_looking_name_resolving_to_loopback_is_refused() {
    let srv = server("http://127.0.0.1:1/".into()).await;
    let resolver = StaticResolver::new().with("docs.example.com", &[loopback()]);
    let fetcher = Fetcher::with_resolver(UrlPolicy::strict(), Arc::new(resolver));
    let url = format!("http://docs.example.com:{}/page", srv.addr.port());
    let err = fetcher.get(&url).await.unwrap_err();
    assert!(
        refusal(&err).contains("docs.example.com resolves to 127.0.0.1, a loopback address"),
        "{err}"
    );
    // Also when only one of several answers is internal.
    let resolver = StaticResolver::new().with(
        "mixed.example.com",
        &["93.184.216.34".parse().unwrap(), loopback()],
    );
    let fetcher = Fetcher::with_resolver(UrlPolicy::strict(), Arc::new(resolver));
    let err = fetcher.get("http://mixed.example.com/").await.unwrap_err();
    assert!(refusal(&err).contains("resolves to 127.0.0.1"), "{err}");
    assert!(srv.requests().is_empty(), "nothing may reach the server");
}

#[tokio::test]
async fn a_trusted_address_is_fetched_through_the_checked_pin() {
    let srv = server("http://127.0.0.1:1/".into()).await;
    let resolver = StaticResolver::new().with("allowed.example.com", &[loopback()]);
    let policy = UrlPolicy::strict().trusting(srv.addr);
    let fetcher = Fetcher::with_resolver(policy, Arc::new(resolver));
    let url = format!("http://allowed.example.com:{}/hop", srv.addr.port());
    let page = fetcher.get(&url).await.unwrap();
    assert_eq!(page.status, 200);
    assert_eq!(page.body, b"<h1>hello</h1>");
    assert_eq!(page.content_type.as_deref(), Some("text/html"));
    assert_eq!(page.charset.as_deref(), Some("utf-8"));
    assert_eq!(page.url.path(), "/page", "the redirect was followed");
    let seen = srv.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].uri, "/hop");
    assert_eq!(seen[1].uri, "/page");
    assert_eq!(
        seen[1].header("host"),
        Some(format!("allowed.example.com:{}", srv.addr.port()).as_str()),
        "the name was kept, the checked address connected to"
    );
    // The same server on another port of the same address is not trusted.
    let other = format!(
        "http://127.0.0.1:{}/page",
        srv.addr.port().wrapping_add(1).max(1)
    );
    assert!(fetcher.get(&other).await.unwrap_err().is_refusal());
}

#[tokio::test]
async fn a_redirect_from_an_allowed_page_to_a_private_one_is_refused() {
    let private =
        TestServer::start(Router::new().route("/secret", get(|| async { "secret" }))).await;
    let srv = server(private.url("/secret")).await;
    let fetcher = Fetcher::with_resolver(
        UrlPolicy::strict().trusting(srv.addr),
        Arc::new(StaticResolver::new()),
    );
    let err = fetcher.get(&srv.url("/to-private")).await.unwrap_err();
    let text = refusal(&err);
    assert!(matches!(err, FetchError::RedirectRefused { .. }), "{text}");
    assert!(text.contains("/to-private redirected to"), "{text}");
    assert!(text.contains("127.0.0.1 is a loopback address"), "{text}");
    assert!(
        private.requests().is_empty(),
        "the private server was never contacted"
    );

    let err = fetcher.get(&srv.url("/to-metadata")).await.unwrap_err();
    assert!(
        refusal(&err).contains("169.254.169.254 is a cloud metadata address"),
        "{err}"
    );
}

#[tokio::test]
async fn limits_bound_redirects_size_status_and_time() {
    let srv = server("http://127.0.0.1:1/".into()).await;
    let fetcher = Fetcher::with_resolver(
        UrlPolicy::strict().trusting(srv.addr),
        Arc::new(StaticResolver::new()),
    );
    let err = fetcher.get(&srv.url("/loop")).await.unwrap_err();
    assert!(
        matches!(err, FetchError::TooManyRedirects { limit: 10, .. }),
        "{err}"
    );
    assert_eq!(srv.requests().len(), 11);

    let small = FetchLimits {
        max_bytes: 1000,
        ..FetchLimits::default()
    };
    let err = fetcher
        .get_limited(&srv.url("/big"), &small)
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::TooLarge { limit: 1000, .. }),
        "{err}"
    );

    let err = fetcher.get(&srv.url("/missing")).await.unwrap_err();
    assert!(
        matches!(err, FetchError::Status { status: 404, .. }),
        "{err}"
    );

    let quick = FetchLimits {
        timeout: Duration::from_millis(300),
        ..FetchLimits::default()
    };
    let err = fetcher
        .get_limited(&srv.url("/slow"), &quick)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Timeout { .. }), "{err}");
}

#[tokio::test]
async fn allow_private_urls_opens_loopback_but_the_blocklist_still_applies() {
    let srv = server("http://127.0.0.1:1/".into()).await;
    let resolver = StaticResolver::new().with("blocked.example.org", &[loopback()]);
    let policy = UrlPolicy::strict()
        .allowing_private(true)
        .blocking(&["blocked.example.org"]);
    let fetcher = Fetcher::with_resolver(policy, Arc::new(resolver));
    let page = fetcher.get(&srv.url("/page")).await.unwrap();
    assert_eq!(page.body, b"<h1>hello</h1>");
    let err = fetcher
        .get(&format!(
            "http://blocked.example.org:{}/page",
            srv.addr.port()
        ))
        .await
        .unwrap_err();
    assert!(refusal(&err).contains("blocked by website policy"), "{err}");
    let err = fetcher.get("http://169.254.169.254/").await.unwrap_err();
    assert!(refusal(&err).contains("never fetched"), "{err}");
}
