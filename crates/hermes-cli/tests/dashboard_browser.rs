//! `hermes dashboard` in a real headless Chromium (Debian's `chromium`, driven over the
//! DevTools protocol by hermes-web's browser session): log in through the printed link, search
//! the sessions a mock-model run stored and open one (its resume command shown), see the usage
//! chart, drag a kanban card to another column with real mouse input and find the task moved
//! in the board's database, create a cron job and pause it (both in `cron/jobs.json`), and
//! save an invalid config.yaml (the loader's error shown in the page, the file unchanged),
//! untick a skill (disabled in config.yaml) and save MEMORY.md.
//! A PNG of each page is kept under `$CARGO_TARGET_DIR/test-artifacts/dashboard/` (the paths
//! are printed). Skipped with a printed reason when no Chromium is found.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(feature = "browser")]

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::dashboard::Dashboard;
use common::{bin, run, stderr, stdout};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use hermes_web::browser::{BrowserSettings, Launch, Session};
use hermes_web::net::{Fetcher, UrlPolicy};
use serde_json::Value;

/// Where the screenshots go: `$CARGO_TARGET_DIR/test-artifacts/dashboard/` (the target
/// directory the binary under test was built in when the variable is not set).
fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| bin().parent().unwrap().parent().unwrap().to_path_buf());
    let dir = target.join("test-artifacts").join("dashboard");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn chromium() -> Option<Launch> {
    let settings = BrowserSettings {
        path: std::env::var("PATH").ok(),
        ..BrowserSettings::default()
    };
    let launch = settings.launch();
    if launch.is_none() {
        eprintln!(
            "skipping: no Chromium on PATH (scripts/setup installs Debian's chromium when run as root)"
        );
    }
    launch
}

fn kanban(home: &TestHome, args: &[&str]) -> Value {
    let mut all = vec!["kanban"];
    all.extend_from_slice(args);
    let o = run(home, &all);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn create_task(home: &TestHome, args: &[&str]) -> String {
    let mut all = vec!["create"];
    all.extend_from_slice(args);
    all.push("--json");
    kanban(home, &all)["id"].as_str().unwrap().to_string()
}

fn task_status(home: &TestHome, id: &str) -> String {
    kanban(home, &["show", id, "--json"])["task"]["status"]
        .as_str()
        .unwrap()
        .to_string()
}

fn jobs_file(home: &TestHome) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(home.hermes_home().join("cron/jobs.json")).unwrap(),
    )
    .unwrap()
}

/// A JavaScript string literal.
fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

struct Page {
    session: Session,
}

impl Page {
    async fn eval(&self, expr: &str) -> Value {
        self.session
            .evaluate(expr)
            .await
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    /// Waits up to 30 s for `expr` to be truthy in the page.
    async fn wait_for(&self, what: &str, expr: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v = self.session.evaluate(expr).await.unwrap_or(Value::Null);
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return v;
            }
            if Instant::now() > deadline {
                let body = self
                    .session
                    .evaluate("document.body.innerText")
                    .await
                    .unwrap_or(Value::Null);
                panic!(
                    "timed out waiting for {what} ({expr}); console: {:?}; page: {body}",
                    self.session.console(false)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Opens a page of the app and waits until it has drawn.
    async fn open(&self, page: &str) {
        self.eval(&format!("location.hash = {}", js(&format!("#/{page}"))))
            .await;
        self.wait_for(
            &format!("the {page} page"),
            &format!("document.body.dataset.ready === {}", js(page)),
        )
        .await;
    }

    async fn shot(&self, name: &str) -> PathBuf {
        let path = artifacts().join(format!("{name}.png"));
        let bytes = self.session.screenshot(&path, true).await.unwrap();
        assert!(bytes > 1_000, "{name}: a {bytes}-byte screenshot");
        println!("screenshot: {}", path.display());
        path
    }

    /// The centre of the element `selector`, in CSS pixels of the viewport.
    async fn centre(&self, selector: &str) -> (f64, f64) {
        let v = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({}); e.scrollIntoView({{block: 'center', inline: 'center'}}); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + Math.min(r.height / 2, 40)]; }})()",
                js(selector)
            ))
            .await;
        (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
    }

    async fn click(&self, selector: &str) {
        self.eval(&format!("document.querySelector({}).click()", js(selector)))
            .await;
    }

    async fn fill(&self, selector: &str, value: &str) {
        self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); e.value = {}; e.dispatchEvent(new Event('input', {{bubbles: true}})); return true; }})()",
            js(selector),
            js(value)
        ))
        .await;
    }
}

/// Polls the home (a command each time) until `cond` holds, at most 30 s.
async fn wait_home(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_in_a_real_browser() {
    let Some(launch) = chromium() else { return };
    let server = MockServer::start(Script::new(vec![
        Turn::text("The harbour office is by the ferry terminal, open 8 to 16."),
        Turn::text("The fish market opens at seven."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    for prompt in [
        "Where is the harbour office?",
        "When does the fish market open?",
    ] {
        let o = run(&home, &["-z", prompt]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let notes = create_task(&home, &["Write the release notes", "--assignee", "writer"]);
    let gather = create_task(&home, &["Gather the merged changes"]);
    create_task(&home, &["Publish the notes", "--parent", &gather]);
    create_task(&home, &["Decide the release name", "--triage"]);
    assert_eq!(task_status(&home, &notes), "ready");
    home.write_file(
        "skills/writing/release-notes/SKILL.md",
        "---\nname: release-notes\ndescription: Write release notes from a changelog.\n---\n# Release notes\n\nGroup the changes by theme.\n",
    );
    home.write_file(
        "memories/MEMORY.md",
        "The user ships every second Thursday.",
    );

    let d = Dashboard::start(&home);
    let found = d.api("GET", "/api/sessions/search?q=harbour", "").json();
    let harbour_id = found["results"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let addr: SocketAddr = d.addr.parse().unwrap();
    // The dashboard's address is trusted; everything else keeps the browser's usual rules.
    let fetcher = Fetcher::new(UrlPolicy::strict().trusting(addr));
    let mut session = Session::start(&launch, fetcher).await.unwrap();

    // Log in with the printed link: the token becomes a cookie and leaves the address bar.
    session.navigate(&d.login_url).await.unwrap();
    let mut page = Page { session };
    page.wait_for(
        "the sessions page",
        "document.body.dataset.ready === 'sessions'",
    )
    .await;
    let href = page.eval("location.href").await;
    assert_eq!(href, format!("{}/", d.base), "the token left the address");
    assert_eq!(
        page.eval("document.cookie").await,
        "",
        "the cookie is HttpOnly"
    );

    // Search the sessions, open the hit.
    page.fill("#session-search", "harbour").await;
    page.click("#session-search-button").await;
    page.wait_for(
        "the search hit",
        &format!(
            "document.querySelectorAll('#session-results .session-item').length === 1 && document.querySelector('#session-results .session-item').dataset.id === {}",
            js(&harbour_id)
        ),
    )
    .await;
    assert_eq!(
        page.eval("document.querySelector('#session-results mark').textContent")
            .await,
        "harbour"
    );
    page.click("#session-results .session-item").await;
    let resume = page
        .wait_for(
            "the open session",
            "document.querySelector('#resume-command') && document.querySelector('#resume-command').textContent",
        )
        .await;
    assert_eq!(resume, format!("hermes --resume {harbour_id}"));
    let bodies = page
        .eval("Array.from(document.querySelectorAll('#session-messages .message .body')).map(b => b.textContent)")
        .await;
    assert_eq!(
        bodies,
        serde_json::json!([
            "Where is the harbour office?",
            "The harbour office is by the ferry terminal, open 8 to 16."
        ])
    );
    page.shot("sessions").await;

    // Usage: the chart is drawn by the page from the stored sessions.
    page.open("usage").await;
    assert_eq!(
        page.eval("document.querySelector('#usage-sessions .n').textContent")
            .await,
        "2"
    );
    let bars = page
        .eval("document.querySelectorAll('#usage-tokens-chart rect').length")
        .await;
    assert_eq!(bars, 2, "input and output bars of one day");
    page.shot("usage").await;

    // Kanban: drag the ready card to done with the mouse; the board's database follows.
    page.open("kanban").await;
    let card = format!("#column-ready #card-{notes}");
    page.wait_for(
        "the card",
        &format!("!!document.querySelector({})", js(&card)),
    )
    .await;
    page.shot("kanban").await;
    let from = page.centre(&card).await;
    let to = page.centre("#column-done").await;
    page.session.drag(from, to, 12).await.unwrap();
    wait_home("the task to be done in kanban.db", || {
        task_status(&home, &notes) == "done"
    })
    .await;
    let moved = format!("#column-done #card-{notes}");
    page.wait_for(
        "the card in the done column",
        &format!("!!document.querySelector({})", js(&moved)),
    )
    .await;
    // A press and release without moving opens the task with its events.
    let at = page.centre(&moved).await;
    page.session.drag(at, at, 1).await.unwrap();
    page.wait_for(
        "the task's events",
        "document.querySelector('#task-events') && document.querySelector('#task-events').textContent.includes('completed')",
    )
    .await;
    assert_eq!(
        page.eval("document.querySelector('#task-status').textContent")
            .await,
        "done"
    );
    page.shot("kanban-task").await;
    // A move the board refuses is shown, and nothing changes.
    let publish_card = page
        .eval("document.querySelector('#column-todo .kanban-card').dataset.id")
        .await;
    let publish = publish_card.as_str().unwrap().to_string();
    let from = page.centre(&format!("#card-{publish}")).await;
    let to = page.centre("#column-ready").await;
    page.session.drag(from, to, 12).await.unwrap();
    page.wait_for(
        "the refusal",
        "!document.querySelector('#toast').hidden && document.querySelector('#toast').textContent.includes('blocked by parent')",
    )
    .await;
    assert_eq!(task_status(&home, &publish), "todo");

    // Cron: create a job, then pause it.
    page.open("cron").await;
    page.fill("#cron-name", "Nightly digest").await;
    page.fill("#cron-schedule", "every 1d").await;
    page.fill("#cron-prompt", "Summarise the day's sessions.")
        .await;
    page.click("#cron-create").await;
    page.wait_for(
        "the job's row",
        "document.querySelectorAll('.cron-row').length === 1",
    )
    .await;
    let jobs = jobs_file(&home);
    assert_eq!(jobs["jobs"][0]["name"], "Nightly digest");
    assert_eq!(jobs["jobs"][0]["prompt"], "Summarise the day's sessions.");
    assert_eq!(jobs["jobs"][0]["enabled"], true);
    page.click(".cron-row .cron-pause").await;
    page.wait_for(
        "the paused row",
        "document.querySelector('.cron-row') && document.querySelector('.cron-row').dataset.state === 'paused'",
    )
    .await;
    let jobs = jobs_file(&home);
    assert_eq!(jobs["jobs"][0]["state"], "paused");
    assert_eq!(jobs["jobs"][0]["enabled"], false);
    page.shot("cron").await;

    // Config: an invalid value is refused with the loader's message; the file is unchanged.
    page.open("config").await;
    let config_path = home.hermes_home().join("config.yaml");
    let before = std::fs::read_to_string(&config_path).unwrap();
    assert_eq!(
        page.eval("document.querySelector('#config-text').value")
            .await,
        before.as_str()
    );
    page.fill(
        "#config-text",
        &format!("{before}agent:\n  max_turns: lots\n"),
    )
    .await;
    page.click("#config-save").await;
    let shown = page
        .wait_for(
            "the validation error",
            "document.querySelector('#config-error').textContent",
        )
        .await;
    let shown = shown.as_str().unwrap();
    assert!(
        shown.contains("invalid value for `agent.max_turns`"),
        "{shown}"
    );
    assert!(shown.contains("(key: agent.max_turns)"), "{shown}");
    assert_eq!(
        page.eval("document.querySelector('#config-status').textContent")
            .await,
        "Not saved: the file is unchanged."
    );
    assert_eq!(std::fs::read_to_string(&config_path).unwrap(), before);
    page.shot("config").await;

    // The other pages draw from the same home.
    page.open("skills").await;
    assert_eq!(
        page.eval("document.querySelector('.skill-toggle').dataset.name")
            .await,
        "release-notes"
    );
    // Unticked: disabled in config.yaml, where `hermes skills list` reads it.
    page.click(".skill-toggle").await;
    wait_home("skills.disabled in config.yaml", || {
        std::fs::read_to_string(&config_path)
            .unwrap()
            .contains("disabled: [release-notes]")
    })
    .await;
    page.shot("skills").await;
    page.open("memory").await;
    assert_eq!(
        page.eval("document.querySelector('#memory-memory').value")
            .await,
        "The user ships every second Thursday."
    );
    page.fill(
        "#memory-memory",
        "The user ships every second Thursday.\n§\nRelease notes go in CHANGES.md.",
    )
    .await;
    page.click("#memory-save-memory").await;
    page.wait_for(
        "the saved memory",
        "document.querySelector('#memory-status-memory').textContent.startsWith('Saved')",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(home.hermes_home().join("memories/MEMORY.md")).unwrap(),
        "The user ships every second Thursday.\n§\nRelease notes go in CHANGES.md."
    );
    page.shot("memory").await;
    page.open("mcp").await;
    page.shot("mcp").await;
    page.open("platforms").await;
    page.shot("platforms").await;

    let errors: Vec<String> = page
        .session
        .console(false)
        .into_iter()
        .filter(|l| l.to_ascii_lowercase().contains("error") && !l.contains("409"))
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    page.session.close().await;
}
