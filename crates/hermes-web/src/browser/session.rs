//! One browser session over the DevTools protocol (chromiumoxide): a headless Chromium launched
//! for the session (its own temporary profile) or a tab in a running browser (`browser.cdp_url`),
//! one page, and three background tasks: the protocol handler, the request gate and the console
//! recorder. The gate pauses every request of the page (CDP `Fetch`) and lets it through only
//! when the SSRF-safe fetcher's checks pass for its URL, so a navigation, a redirect, a frame or
//! a subresource to a private address fails with `BlockedByClient` and the reason is kept for the
//! tool's answer. Closing (or dropping) the session ends the tasks and the browser it launched.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::accessibility::GetFullAxTreeParams;
use chromiumoxide::cdp::browser_protocol::dom::{
    BackendNodeId, FocusParams, GetBoxModelParams, ResolveNodeParams, ScrollIntoViewIfNeededParams,
};
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EventRequestPaused, FailRequestParams,
};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, ResourceType};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, GetNavigationHistoryParams, NavigateToHistoryEntryParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    CallFunctionOnParams, EventConsoleApiCalled, EventExceptionThrown,
};
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::page::{Page, ScreenshotParams};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::task::JoinHandle;

use super::BrowserError;
use super::proxy::GateProxy;
use super::snapshot::{self, Snapshot};
use crate::net::Fetcher;

/// Console lines kept (oldest dropped first) and the longest line.
const MAX_CONSOLE_LINES: usize = 200;
const MAX_CONSOLE_LINE: usize = 1_000;
/// How long a navigation or an action may take to settle.
const NAVIGATION_TIMEOUT: Duration = Duration::from_secs(30);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a URL check of the gate is reused for the same origin.
const VERDICT_TTL: Duration = Duration::from_secs(30);

/// Where the browser comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// A Chromium executable started for this session.
    Executable(PathBuf),
    /// A browser already running, by its DevTools URL (`http://host:port` or `ws://...`).
    Attach(String),
}

/// What the gate blocked, for the tool's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub url: String,
    pub reason: String,
    pub document: bool,
}

pub struct Session {
    browser: Browser,
    page: Page,
    launched: bool,
    tasks: Vec<JoinHandle<()>>,
    refs: HashMap<String, i64>,
    console: Arc<Mutex<VecDeque<String>>>,
    blocked: Arc<Mutex<Vec<Blocked>>>,
    /// The launched browser's profile, removed with the session.
    _profile: Option<tempfile::TempDir>,
    /// The launched browser's way out (see [`super::proxy`]), stopped with the session.
    _proxy: Option<GateProxy>,
}

fn cdp(e: impl std::fmt::Display) -> BrowserError {
    BrowserError::Protocol(e.to_string())
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

impl Session {
    /// Starts (or attaches to) the browser and opens the session's page.
    pub async fn start(launch: &Launch, fetcher: Fetcher) -> Result<Session, BrowserError> {
        let (browser, mut handler, profile, proxy, launched) = match launch {
            Launch::Executable(path) => {
                let profile = tempfile::Builder::new()
                    .prefix("hermes-browser-")
                    .tempdir()
                    .map_err(|e| {
                        BrowserError::Launch(format!("cannot create a profile directory: {e}"))
                    })?;
                let mut config = BrowserConfig::builder()
                    .chrome_executable(path)
                    .new_headless_mode()
                    .user_data_dir(profile.path())
                    .respect_https_errors()
                    .enable_request_intercept()
                    .launch_timeout(Duration::from_secs(30))
                    .request_timeout(NAVIGATION_TIMEOUT)
                    .window_size(1280, 900)
                    // chromiumoxide adds the leading `--` itself.
                    .args([
                        "disable-gpu",
                        "disable-dev-shm-usage",
                        "no-first-run",
                        "no-default-browser-check",
                        "disable-background-networking",
                        "disable-component-update",
                        "disable-sync",
                        "disable-quic",
                    ]);
                let proxy = GateProxy::start(fetcher.clone()).await.map_err(|e| {
                    BrowserError::Launch(format!("cannot start the browser's proxy: {e}"))
                })?;
                for (key, value) in proxy.chromium_args() {
                    config = config.arg((key, value.as_str()));
                }
                if running_as_root() {
                    // Chromium refuses to run as root with its sandbox.
                    config = config.no_sandbox();
                }
                let config = config.build().map_err(BrowserError::Launch)?;
                let (browser, handler) = Browser::launch(config)
                    .await
                    .map_err(|e| BrowserError::Launch(e.to_string()))?;
                (browser, handler, Some(profile), Some(proxy), true)
            }
            Launch::Attach(url) => {
                let config = HandlerConfig {
                    ignore_https_errors: false,
                    request_intercept: true,
                    request_timeout: NAVIGATION_TIMEOUT,
                    ..HandlerConfig::default()
                };
                let (browser, handler) = Browser::connect_with_config(url.clone(), config)
                    .await
                    .map_err(|e| BrowserError::Launch(format!("cannot attach to {url}: {e}")))?;
                (browser, handler, None, None, false)
            }
        };
        let mut tasks = vec![tokio::spawn(async move {
            // Errors are per message (a malformed event); only the end of the stream stops it.
            while handler.next().await.is_some() {}
        })];
        let page = match browser.new_page("about:blank").await {
            Ok(p) => p,
            Err(e) => {
                for t in &tasks {
                    t.abort();
                }
                return Err(cdp(e));
            }
        };
        let blocked: Arc<Mutex<Vec<Blocked>>> = Arc::default();
        let console: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let session_setup = async {
            let paused = page
                .event_listener::<EventRequestPaused>()
                .await
                .map_err(cdp)?;
            tasks.push(tokio::spawn(gate(
                page.clone(),
                paused,
                fetcher,
                blocked.clone(),
            )));
            let logs = page
                .event_listener::<EventConsoleApiCalled>()
                .await
                .map_err(cdp)?;
            let errors = page
                .event_listener::<EventExceptionThrown>()
                .await
                .map_err(cdp)?;
            tasks.push(tokio::spawn(record_console(logs, errors, console.clone())));
            page.enable_runtime().await.map_err(cdp)?;
            Ok::<(), BrowserError>(())
        };
        let setup = session_setup.await;
        let session = Session {
            browser,
            page,
            launched,
            tasks,
            refs: HashMap::new(),
            console,
            blocked,
            _profile: profile,
            _proxy: proxy,
        };
        setup?;
        Ok(session)
    }

    fn take_blocked(&self) -> Vec<Blocked> {
        self.blocked
            .lock()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default()
    }

    /// The page's URL and title.
    pub async fn location(&self) -> (String, String) {
        let url = self.page.url().await.ok().flatten().unwrap_or_default();
        let title = self
            .page
            .get_title()
            .await
            .ok()
            .flatten()
            .unwrap_or_default();
        (url, title)
    }

    /// Loads `url` (already checked by the caller) and waits for it; a load the gate blocked is
    /// an error with the reason.
    pub async fn navigate(&mut self, url: &str) -> Result<(), BrowserError> {
        self.take_blocked();
        let result = tokio::time::timeout(NAVIGATION_TIMEOUT, self.page.goto(url)).await;
        if let Some(b) = self.take_blocked().into_iter().find(|b| b.document) {
            return Err(BrowserError::Refused(b.reason));
        }
        match result {
            Err(_) => Err(BrowserError::Timeout(format!(
                "{url} did not load within {} s",
                NAVIGATION_TIMEOUT.as_secs()
            ))),
            Ok(Err(e)) => Err(BrowserError::Navigation(format!("{url}: {e}"))),
            Ok(Ok(_)) => {
                self.refs.clear();
                Ok(())
            }
        }
    }

    /// The accessibility snapshot; its refs replace the previous ones.
    pub async fn snapshot(&mut self, full: bool) -> Result<Snapshot, BrowserError> {
        let tree = self
            .page
            .execute(GetFullAxTreeParams::default())
            .await
            .map_err(cdp)?;
        let nodes = serde_json::to_value(&tree.result.nodes).map_err(cdp)?;
        let nodes = nodes.as_array().cloned().unwrap_or_default();
        let snap = snapshot::render(&nodes, full);
        self.refs = snap.refs.clone();
        Ok(snap)
    }

    fn node(&self, raw_ref: &str) -> Result<BackendNodeId, BrowserError> {
        let r = snapshot::normalize_ref(raw_ref);
        self.refs
            .get(&r)
            .map(|id| BackendNodeId::new(*id))
            .ok_or_else(|| BrowserError::UnknownRef(raw_ref.to_string()))
    }

    async fn call_on(&self, node: &BackendNodeId, function: &str) -> Result<Value, BrowserError> {
        let resolved = self
            .page
            .execute(ResolveNodeParams {
                backend_node_id: Some(*node),
                ..ResolveNodeParams::default()
            })
            .await
            .map_err(cdp)?;
        let object =
            resolved.result.object.object_id.clone().ok_or_else(|| {
                BrowserError::Protocol("the element has no JavaScript object".into())
            })?;
        let mut params = CallFunctionOnParams::new(function);
        params.object_id = Some(object);
        params.return_by_value = Some(true);
        params.await_promise = Some(true);
        let out = self.page.execute(params).await.map_err(cdp)?;
        Ok(out.result.result.value.clone().unwrap_or(Value::Null))
    }

    /// Clicks the element: a real mouse click at its centre, or a DOM click when it has no box.
    pub async fn click(&mut self, raw_ref: &str) -> Result<(), BrowserError> {
        let node = self.node(raw_ref)?;
        self.take_blocked();
        let _ = self
            .page
            .execute(ScrollIntoViewIfNeededParams {
                backend_node_id: Some(node),
                ..ScrollIntoViewIfNeededParams::default()
            })
            .await;
        let model = self
            .page
            .execute(GetBoxModelParams {
                backend_node_id: Some(node),
                ..GetBoxModelParams::default()
            })
            .await;
        let centre = model.ok().and_then(|m| {
            let q = m.result.model.content.inner().clone();
            (q.len() == 8).then(|| {
                (
                    (q[0] + q[2] + q[4] + q[6]) / 4.0,
                    (q[1] + q[3] + q[5] + q[7]) / 4.0,
                )
            })
        });
        match centre {
            Some((x, y)) => {
                for kind in [
                    DispatchMouseEventType::MouseMoved,
                    DispatchMouseEventType::MousePressed,
                    DispatchMouseEventType::MouseReleased,
                ] {
                    let mut ev = DispatchMouseEventParams::new(kind.clone(), x, y);
                    if kind != DispatchMouseEventType::MouseMoved {
                        ev.button = Some(MouseButton::Left);
                        ev.click_count = Some(1);
                    }
                    self.page.execute(ev).await.map_err(cdp)?;
                }
            }
            None => {
                self.call_on(&node, "function() { this.click(); }").await?;
            }
        }
        self.settle().await
    }

    /// Drags with real mouse input: the left button pressed at `from`, moved to `to` in
    /// `steps` steps while held, released there (pages see mouse and pointer events alike).
    pub async fn drag(
        &mut self,
        from: (f64, f64),
        to: (f64, f64),
        steps: u32,
    ) -> Result<(), BrowserError> {
        let steps = steps.max(1);
        let event = |kind: DispatchMouseEventType, (x, y): (f64, f64), held: bool| {
            let mut ev = DispatchMouseEventParams::new(kind, x, y);
            ev.button = Some(MouseButton::Left);
            ev.buttons = Some(i64::from(held));
            ev.click_count = Some(1);
            ev
        };
        self.page
            .execute(event(DispatchMouseEventType::MouseMoved, from, false))
            .await
            .map_err(cdp)?;
        self.page
            .execute(event(DispatchMouseEventType::MousePressed, from, true))
            .await
            .map_err(cdp)?;
        for i in 1..=steps {
            let t = f64::from(i) / f64::from(steps);
            let at = (from.0 + (to.0 - from.0) * t, from.1 + (to.1 - from.1) * t);
            self.page
                .execute(event(DispatchMouseEventType::MouseMoved, at, true))
                .await
                .map_err(cdp)?;
        }
        self.page
            .execute(event(DispatchMouseEventType::MouseReleased, to, false))
            .await
            .map_err(cdp)?;
        self.settle().await
    }

    /// Replaces the field's content with `text`.
    pub async fn type_text(&mut self, raw_ref: &str, text: &str) -> Result<(), BrowserError> {
        let node = self.node(raw_ref)?;
        let _ = self
            .page
            .execute(ScrollIntoViewIfNeededParams {
                backend_node_id: Some(node),
                ..ScrollIntoViewIfNeededParams::default()
            })
            .await;
        self.page
            .execute(FocusParams {
                backend_node_id: Some(node),
                ..FocusParams::default()
            })
            .await
            .map_err(cdp)?;
        self.call_on(
            &node,
            "function() { if ('value' in this) { this.value = ''; this.dispatchEvent(new Event('input', {bubbles: true})); } else if (this.isContentEditable) { this.textContent = ''; } }",
        )
        .await?;
        self.page
            .execute(InsertTextParams::new(text))
            .await
            .map_err(cdp)?;
        Ok(())
    }

    /// Presses one key (`Enter`, `Tab`, `Escape`, `ArrowDown`, a character, ...).
    pub async fn press(&mut self, key: &str) -> Result<(), BrowserError> {
        let def = chromiumoxide::keys::get_key_definition(key).ok_or_else(|| {
            BrowserError::Input(format!(
                "unknown key {key:?} (try Enter, Tab, Escape, ArrowDown, PageDown, Backspace)"
            ))
        })?;
        self.take_blocked();
        for kind in [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp] {
            let mut ev = DispatchKeyEventParams::new(kind.clone());
            ev.key = Some(def.key.to_string());
            ev.code = Some(def.code.to_string());
            ev.windows_virtual_key_code = Some(def.key_code);
            ev.native_virtual_key_code = Some(def.key_code);
            if kind == DispatchKeyEventType::KeyDown
                && let Some(text) = def.text
            {
                ev.text = Some(text.to_string());
            }
            self.page.execute(ev).await.map_err(cdp)?;
        }
        self.settle().await
    }

    /// Scrolls by most of a viewport.
    pub async fn scroll(&mut self, down: bool) -> Result<(), BrowserError> {
        let sign = if down { "" } else { "-" };
        self.page
            .evaluate(format!(
                "window.scrollBy(0, {sign}Math.round(window.innerHeight * 0.8))"
            ))
            .await
            .map_err(cdp)?;
        Ok(())
    }

    /// Goes back one entry of the history.
    pub async fn back(&mut self) -> Result<bool, BrowserError> {
        let history = self
            .page
            .execute(GetNavigationHistoryParams::default())
            .await
            .map_err(cdp)?;
        let index = history.result.current_index;
        if index <= 0 {
            return Ok(false);
        }
        let Some(entry) = usize::try_from(index - 1)
            .ok()
            .and_then(|i| history.result.entries.get(i))
        else {
            return Ok(false);
        };
        self.take_blocked();
        self.page
            .execute(NavigateToHistoryEntryParams::new(entry.id))
            .await
            .map_err(cdp)?;
        self.settle().await?;
        self.refs.clear();
        Ok(true)
    }

    /// The page's images: `[{src, alt, width, height}]`, at most `limit`.
    pub async fn images(&self, limit: usize) -> Result<Value, BrowserError> {
        let js = format!(
            "Array.from(document.images).filter(i => i.currentSrc || i.src).slice(0, {limit}).map(i => ({{src: i.currentSrc || i.src, alt: i.alt || '', width: i.naturalWidth, height: i.naturalHeight}}))"
        );
        self.evaluate(&js).await
    }

    /// Evaluates a JavaScript expression in the page; the value as JSON.
    pub async fn evaluate(&self, expression: &str) -> Result<Value, BrowserError> {
        let result = self.page.evaluate(expression).await.map_err(cdp)?;
        Ok(result.value().cloned().unwrap_or(Value::Null))
    }

    /// The console lines since the last clear.
    pub fn console(&self, clear: bool) -> Vec<String> {
        let Ok(mut lines) = self.console.lock() else {
            return Vec::new();
        };
        let out: Vec<String> = lines.iter().cloned().collect();
        if clear {
            lines.clear();
        }
        out
    }

    /// A PNG of the viewport (or the whole page) written to `path`.
    pub async fn screenshot(&self, path: &Path, full_page: bool) -> Result<usize, BrowserError> {
        let png = self
            .page
            .screenshot(
                ScreenshotParams::builder()
                    .format(CaptureScreenshotFormat::Png)
                    .full_page(full_page)
                    .build(),
            )
            .await
            .map_err(cdp)?;
        hermes_config::atomic_write(path, &png)
            .map_err(|e| BrowserError::Io(format!("cannot write {}: {e}", path.display())))?;
        Ok(png.len())
    }

    /// Waits until a navigation an action may have started has loaded; an action whose
    /// navigation the gate blocked is an error with the reason.
    async fn settle(&mut self) -> Result<(), BrowserError> {
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(250)).await;
        while start.elapsed() < SETTLE_TIMEOUT {
            match self.page.evaluate("document.readyState").await {
                Ok(v) if v.value().and_then(Value::as_str) == Some("complete") => break,
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        if let Some(b) = self.take_blocked().into_iter().find(|b| b.document) {
            return Err(BrowserError::Refused(b.reason));
        }
        Ok(())
    }

    /// Closes the page, and the browser when this session launched it.
    pub async fn close(mut self) {
        let page = self.page.clone();
        let _ = tokio::time::timeout(Duration::from_secs(5), page.close()).await;
        if self.launched {
            let _ = tokio::time::timeout(Duration::from_secs(5), self.browser.close()).await;
            let _ = tokio::time::timeout(Duration::from_secs(5), self.browser.wait()).await;
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        // A launched Chromium is killed with its `Child` (kill_on_drop) when `browser` drops.
    }
}

/// The request gate: every paused request continues only if its URL passes the fetcher's
/// checks (scheme, policy, resolved addresses); verdicts are reused per origin for a while.
async fn gate(
    page: Page,
    mut paused: chromiumoxide::listeners::EventStream<EventRequestPaused>,
    fetcher: Fetcher,
    blocked: Arc<Mutex<Vec<Blocked>>>,
) {
    let mut verdicts: HashMap<String, (Instant, Result<(), String>)> = HashMap::new();
    while let Some(event) = paused.next().await {
        let url = event.request.url.clone();
        let verdict =
            if url.starts_with("data:") || url.starts_with("blob:") || url == "about:blank" {
                Ok(())
            } else {
                let origin = url::Url::parse(&url)
                    .map(|u| {
                        format!(
                            "{}://{}:{}",
                            u.scheme(),
                            u.host_str().unwrap_or(""),
                            u.port_or_known_default().unwrap_or(0)
                        )
                    })
                    .unwrap_or_else(|_| url.clone());
                match verdicts.get(&origin) {
                    Some((at, v)) if at.elapsed() < VERDICT_TTL => v.clone(),
                    _ => {
                        let v = fetcher
                            .check(&url)
                            .await
                            .map(|_| ())
                            .map_err(|e| e.to_string());
                        if verdicts.len() > 256 {
                            verdicts.clear();
                        }
                        verdicts.insert(origin, (Instant::now(), v.clone()));
                        v
                    }
                }
            };
        let id = event.request_id.clone();
        match verdict {
            Ok(()) => {
                let _ = page.execute(ContinueRequestParams::new(id)).await;
            }
            Err(reason) => {
                if let Ok(mut b) = blocked.lock() {
                    if b.len() > 50 {
                        b.remove(0);
                    }
                    b.push(Blocked {
                        url,
                        reason,
                        document: event.resource_type == ResourceType::Document,
                    });
                }
                let _ = page
                    .execute(FailRequestParams::new(id, ErrorReason::BlockedByClient))
                    .await;
            }
        }
    }
}

/// Keeps the last console messages and uncaught exceptions as `[level] text` lines.
async fn record_console(
    mut logs: chromiumoxide::listeners::EventStream<EventConsoleApiCalled>,
    mut errors: chromiumoxide::listeners::EventStream<EventExceptionThrown>,
    lines: Arc<Mutex<VecDeque<String>>>,
) {
    let push = |line: String| {
        if let Ok(mut l) = lines.lock() {
            if l.len() >= MAX_CONSOLE_LINES {
                l.pop_front();
            }
            let line = if line.chars().count() > MAX_CONSOLE_LINE {
                format!(
                    "{}…",
                    line.chars().take(MAX_CONSOLE_LINE).collect::<String>()
                )
            } else {
                line
            };
            l.push_back(line);
        }
    };
    loop {
        tokio::select! {
            Some(ev) = logs.next() => {
                let text: Vec<String> = ev
                    .args
                    .iter()
                    .map(|a| match &a.value {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => a.description.clone().unwrap_or_default(),
                    })
                    .collect();
                let level = serde_json::to_value(&ev.r#type)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "log".into());
                push(format!("[{level}] {}", text.join(" ")));
            }
            Some(ev) = errors.next() => {
                let d = &ev.exception_details;
                let detail = d
                    .exception
                    .as_ref()
                    .and_then(|e| e.description.clone())
                    .unwrap_or_else(|| d.text.clone());
                push(format!("[exception] {detail}"));
            }
            else => break,
        }
    }
}
