//! The browser tools against a real headless Chromium (Debian's `chromium`, installed by
//! `scripts/setup`) on pages served by the test: navigate, snapshot with refs, fill a form,
//! click submit, read the result page, go back, images, console and JavaScript, a screenshot,
//! and navigations to private addresses refused (directly, by a public-looking name, and by a
//! redirect the browser would have followed). Skipped with a printed reason when no Chromium
//! can be found.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(feature = "browser")]

mod common;

use std::sync::Arc;

use axum::Router;
use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use common::TestServer;
use hermes_tools::{Registry, ToolContext};
use hermes_web::browser::{self, BrowserManager, BrowserSettings};
use hermes_web::net::{Fetcher, StaticResolver, UrlPolicy};
use serde_json::{Value, json};

const FORM: &str = r#"<!DOCTYPE html><html><head><title>Contact the harbour office</title></head>
<body><nav><a href="/">Home</a></nav>
<main><h1>Contact the harbour office</h1>
<img src="/ferry.png" alt="The night ferry" width="40" height="20">
<form action="/submit" method="get">
  <label for="name">Name</label> <input id="name" name="name" type="text">
  <label for="email">Email</label> <input id="email" name="email" type="email">
  <button type="submit">Send message</button>
</form></main>
<script>console.log("form ready"); window.harbour = {berths: 12};</script>
</body></html>"#;

/// 1x1 transparent PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

async fn site() -> TestServer {
    let router = Router::new()
        .route("/form", get(|| async { Html(FORM) }))
        .route(
            "/submit",
            get(|Query(q): Query<std::collections::HashMap<String, String>>| async move {
                let name = q.get("name").cloned().unwrap_or_default();
                let email = q.get("email").cloned().unwrap_or_default();
                Html(format!(
                    "<html><head><title>Message sent</title></head><body><h1>Message sent</h1><p>Thank you, {name}! We will write to {email} within a day.</p></body></html>"
                ))
            }),
        )
        .route("/ferry.png", get(|| async { ([(header::CONTENT_TYPE, "image/png")], PNG) }))
        .route("/to-private", get(|| async { (StatusCode::FOUND, [(header::LOCATION, "http://10.1.2.3/admin")]).into_response() }));
    TestServer::start(router).await
}

fn chromium() -> Option<BrowserSettings> {
    let settings = BrowserSettings {
        path: std::env::var("PATH").ok(),
        ..BrowserSettings::default()
    };
    if settings.launch().is_none() {
        eprintln!(
            "skipping: no Chromium on PATH (scripts/setup installs Debian's chromium when run as root)"
        );
        return None;
    }
    Some(settings)
}

struct Browser {
    tools: Registry,
    manager: Arc<BrowserManager>,
    ctx: ToolContext,
    _shots: tempfile::TempDir,
}

impl Browser {
    fn new(settings: BrowserSettings, srv: &TestServer) -> Browser {
        let resolver = StaticResolver::new()
            .with("harbour.example.com", &["127.0.0.1".parse().unwrap()])
            .with("intranet.example.com", &["127.0.0.1".parse().unwrap()]);
        // The test server's address is trusted; every other check still runs.
        let policy = UrlPolicy::strict().trusting(srv.addr);
        let fetcher = Fetcher::with_resolver(policy, Arc::new(resolver));
        let shots = tempfile::tempdir().unwrap();
        let manager = Arc::new(BrowserManager::new(
            settings,
            fetcher,
            shots.path().to_path_buf(),
        ));
        let mut tools = Registry::new();
        for t in browser::tools(manager.clone()) {
            tools.register(t);
        }
        Browser {
            tools,
            manager,
            ctx: ToolContext::new(std::env::temp_dir()),
            _shots: shots,
        }
    }

    async fn call(&self, name: &str, args: Value) -> Result<Value, String> {
        let tool = self.tools.get(name).unwrap();
        let out = Registry::execute(tool.as_ref(), args, &self.ctx).await;
        let v: Value = serde_json::from_str(&out.content).unwrap();
        if out.ok {
            Ok(v)
        } else {
            Err(v["error"].as_str().unwrap_or("").to_string())
        }
    }

    async fn ok(&self, name: &str, args: Value) -> Value {
        self.call(name, args.clone())
            .await
            .unwrap_or_else(|e| panic!("{name} {args}: {e}"))
    }
}

/// The ref of the first snapshot line containing `needle`.
fn find_ref(snapshot: &str, needle: &str) -> String {
    let line = snapshot
        .lines()
        .find(|l| l.contains(needle) && l.contains("[ref="))
        .unwrap_or_else(|| panic!("no {needle:?} with a ref in:\n{snapshot}"));
    let start = line.find("[ref=").unwrap() + 5;
    let end = line[start..].find(']').unwrap() + start;
    format!("@{}", &line[start..end])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fill_a_form_submit_and_read_the_result_page() {
    let Some(settings) = chromium() else { return };
    let srv = site().await;
    let b = Browser::new(settings, &srv);
    assert!(
        b.tools
            .get("browser_navigate")
            .unwrap()
            .check_available()
            .is_ok()
    );

    let url = format!("http://harbour.example.com:{}/form", srv.addr.port());
    let page = b.ok("browser_navigate", json!({ "url": url })).await;
    assert_eq!(page["title"], "Contact the harbour office");
    let snap = page["snapshot"].as_str().unwrap();
    assert!(
        snap.contains("- heading \"Contact the harbour office\" [level=1]"),
        "{snap}"
    );
    assert!(snap.contains("- link \"Home\" [ref=e"), "{snap}");
    let name = find_ref(snap, "textbox \"Name\"");
    let email = find_ref(snap, "textbox \"Email\"");
    let send = find_ref(snap, "button \"Send message\"");

    b.ok("browser_type", json!({"ref": name, "text": "Ada Lovelace"}))
        .await;
    b.ok(
        "browser_type",
        json!({"ref": email, "text": "ada@example.org"}),
    )
    .await;
    let again = b.ok("browser_snapshot", json!({})).await;
    assert!(
        again["snapshot"]
            .as_str()
            .unwrap()
            .contains("value=\"Ada Lovelace\""),
        "{again}"
    );
    // Refs are renewed by every snapshot: take the button's again.
    let send_now = find_ref(
        again["snapshot"].as_str().unwrap(),
        "button \"Send message\"",
    );
    assert_eq!(send_now, send);

    let clicked = b.ok("browser_click", json!({ "ref": send_now })).await;
    assert_eq!(clicked["title"], "Message sent", "{clicked}");
    assert!(
        clicked["url"]
            .as_str()
            .unwrap()
            .contains("/submit?name=Ada+Lovelace&email=ada%40example.org"),
        "{clicked}"
    );
    let result = b.ok("browser_snapshot", json!({"full": true})).await;
    let text = result["snapshot"].as_str().unwrap();
    assert!(
        text.contains("Thank you, Ada Lovelace! We will write to ada@example.org within a day."),
        "{text}"
    );

    let shot = b.ok("browser_screenshot", json!({})).await;
    let path = shot["path"].as_str().unwrap();
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.starts_with(&[0x89, b'P', b'N', b'G']), "not a PNG");
    assert_eq!(shot["bytes"].as_u64().unwrap() as usize, bytes.len());

    let back = b.ok("browser_back", json!({})).await;
    assert_eq!(back["title"], "Contact the harbour office");
    let images = b.ok("browser_get_images", json!({})).await;
    assert_eq!(images["images"][0]["alt"], "The night ferry");
    assert!(
        images["images"][0]["src"]
            .as_str()
            .unwrap()
            .ends_with("/ferry.png")
    );
    let value = b
        .ok(
            "browser_console",
            json!({"expression": "window.harbour.berths * 2"}),
        )
        .await;
    assert_eq!(value["result"], 24);
    let console = b.ok("browser_console", json!({"clear": true})).await;
    let messages: Vec<&str> = console["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(messages.contains(&"[log] form ready"), "{messages:?}");
    b.ok("browser_scroll", json!({"direction": "down"})).await;
    b.ok("browser_press", json!({"key": "Tab"})).await;

    let err = b
        .call("browser_click", json!({"ref": "@e999"}))
        .await
        .unwrap_err();
    assert!(err.contains("unknown element ref"), "{err}");

    let closed = b.ok("browser_close", json!({})).await;
    assert_eq!(closed["closed"], true);
    let err = b.call("browser_snapshot", json!({})).await.unwrap_err();
    assert!(err.contains("call browser_navigate first"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigations_to_private_addresses_are_refused() {
    let Some(settings) = chromium() else { return };
    let srv = site().await;
    let b = Browser::new(settings, &srv);

    // Refused before any browser starts.
    let err = b
        .call("browser_navigate", json!({"url": "http://127.0.0.1:9/"}))
        .await
        .unwrap_err();
    assert!(err.contains("127.0.0.1 is a loopback address"), "{err}");
    let err = b
        .call(
            "browser_navigate",
            json!({"url": "http://169.254.169.254/latest/meta-data"}),
        )
        .await
        .unwrap_err();
    assert!(err.contains("cloud metadata"), "{err}");
    let err = b
        .call(
            "browser_navigate",
            json!({"url": "http://intranet.example.com:8080/"}),
        )
        .await
        .unwrap_err();
    assert!(
        err.contains("intranet.example.com resolves to 127.0.0.1"),
        "{err}"
    );
    let err = b
        .call("browser_navigate", json!({"url": "file:///etc/passwd"}))
        .await
        .unwrap_err();
    assert!(err.contains("file: scheme is not fetched"), "{err}");
    assert!(
        b.manager.lock().await.is_none(),
        "no browser was started for refused URLs"
    );

    // A trusted page that redirects to a private address: the browser's request is blocked.
    let err = b
        .call("browser_navigate", json!({"url": srv.url("/to-private")}))
        .await
        .unwrap_err();
    assert!(err.contains("10.1.2.3 is a private address"), "{err}");
    b.manager.close().await;
}
