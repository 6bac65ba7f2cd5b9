//! `hermes dashboard` through the binary, without a browser: every route of the API's one
//! table refuses a request without the token (401), from another origin (403) and with a
//! foreign `Host` (403, DNS rebinding), and nothing such a request asked for happens; the login
//! link and `/api/auth/login` exchange the token for an `HttpOnly`, `SameSite=Strict` cookie
//! and logout ends it; and the pages' JSON answers, with their exact fields, over a home seeded
//! through the binary and the mock model: sessions (list, search, messages, delete), usage, the
//! kanban board (moves through the board's verbs, refusals with their reasons, comments),
//! cron jobs (create, pause, resume, in `cron/jobs.json`), config (an invalid edit refused
//! with the loader's key and the file unchanged), memory, skills (enable/disable in
//! config.yaml), MCP servers and platforms.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::dashboard::Dashboard;
use common::{run, stderr, stdout};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

fn seeded_home(server: &MockServer) -> TestHome {
    let home = TestHome::new();
    home.write_mock_config(server);
    let o = run(&home, &["-z", "Where is the harbour office?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    home
}

/// A route's path with each `{parameter}` filled in.
fn fill(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').unwrap() + start;
        out.push_str("t_00000000");
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn kanban(home: &TestHome, args: &[&str]) -> Value {
    let mut all = vec!["kanban"];
    all.extend_from_slice(args);
    let o = run(home, &all);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn task_status(home: &TestHome, id: &str) -> String {
    kanban(home, &["show", id, "--json"])["task"]["status"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn every_route_refuses_without_the_token_from_other_origins_and_for_foreign_hosts() {
    let server = MockServer::start(Script::new(vec![Turn::text("By the ferry terminal.")]));
    let home = seeded_home(&server);
    let d = Dashboard::start(&home);
    let host = format!("Host: {}", d.addr);
    let bearer = d.bearer();
    let foreign_host = format!("Host: evil.example:{}", d.addr.rsplit(':').next().unwrap());
    let routes = hermes_dashboard::routes::API_ROUTES;
    assert!(routes.len() >= 30, "{}", routes.len());
    for route in routes {
        let path = fill(route.path);
        let body = if matches!(route.method, "GET" | "DELETE") {
            ""
        } else {
            "{}"
        };
        let what = format!("{} {}", route.method, route.path);
        let none = d.raw(route.method, &path, &[&host], body);
        assert_eq!(none.status, 401, "{what} without a token: {}", none.body);
        assert!(none.json()["detail"].is_string(), "{what}: {}", none.body);
        let wrong = d.raw(
            route.method,
            &path,
            &[
                &host,
                "Authorization: Bearer not-the-token",
                "Cookie: hermes_dashboard=forged",
            ],
            body,
        );
        assert_eq!(
            wrong.status, 401,
            "{what} with a wrong token: {}",
            wrong.body
        );
        for origin in ["Origin: http://evil.example", "Origin: null"] {
            let cross = d.raw(route.method, &path, &[&host, &bearer, origin], body);
            assert_eq!(cross.status, 403, "{what} with {origin}: {}", cross.body);
        }
        let fetched = d.raw(
            route.method,
            &path,
            &[&host, &bearer, "Sec-Fetch-Site: cross-site"],
            body,
        );
        assert_eq!(fetched.status, 403, "{what} cross-site: {}", fetched.body);
        let rebound = d.raw(route.method, &path, &[&foreign_host, &bearer], body);
        assert_eq!(
            rebound.status, 403,
            "{what} for a foreign Host: {}",
            rebound.body
        );
        assert!(rebound.head.contains("content-security-policy"), "{what}");
    }
    // Bodies are capped.
    let huge = format!(r#"{{"yaml_text":"{}"}}"#, "x".repeat(1024 * 1024 + 1));
    let over = d.raw("PUT", "/api/config/raw", &[&host, &bearer], &huge);
    assert_eq!(over.status, 413, "{}", over.body);
    // Nothing the refused requests asked for happened.
    let sessions = d.api("GET", "/api/sessions", "");
    assert_eq!(sessions.status, 200);
    assert_eq!(sessions.json()["sessions"].as_array().unwrap().len(), 1);
    assert!(!home.hermes_home().join("cron/jobs.json").exists());
    // The page itself also answers only to its own names.
    let page = d.raw("GET", "/", &[&foreign_host], "");
    assert_eq!(page.status, 403);
    let page = d.raw("GET", "/", &[&host], "");
    assert_eq!(page.status, 200);
}

#[test]
fn the_token_is_exchanged_for_a_strict_http_only_cookie_and_logout_ends_it() {
    let home = TestHome::new();
    let d = Dashboard::start(&home);
    let host = format!("Host: {}", d.addr);
    assert!(
        d.login_url.starts_with("http://127.0.0.1:"),
        "{}",
        d.login_url
    );
    assert_eq!(d.token.len(), 64);

    let login = d.raw("GET", &format!("/?token={}", d.token), &[&host], "");
    assert_eq!(login.status, 303, "{}", login.head);
    let head = login.head.to_ascii_lowercase();
    assert!(head.contains("\r\nlocation: /\r\n"), "{}", login.head);
    let cookie_line = login
        .head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap();
    assert!(cookie_line.contains("HttpOnly"), "{cookie_line}");
    assert!(cookie_line.contains("SameSite=Strict"), "{cookie_line}");
    let value = cookie_line
        .split_once("hermes_dashboard=")
        .unwrap()
        .1
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert_ne!(value, d.token, "the cookie is not the token");
    let cookie = format!("Cookie: hermes_dashboard={value}");

    let status = d.raw("GET", "/api/status", &[&host, &cookie], "");
    assert_eq!(status.status, 200, "{}", status.body);
    let s = status.json();
    assert_eq!(
        keys(&s),
        [
            "api_server",
            "auth_required",
            "config_path",
            "cron_jobs",
            "gateway_pid",
            "gateway_platforms",
            "gateway_running",
            "gateway_started_at",
            "gateway_state",
            "home",
            "kanban",
            "version",
        ]
    );
    assert_eq!(s["home"], home.hermes_home().display().to_string());
    assert_eq!(s["gateway_running"], false);
    assert_eq!(s["gateway_state"], "stopped");
    assert_eq!(s["auth_required"], true);
    assert_eq!(s["version"], env!("CARGO_PKG_VERSION"));

    // A wrong token, and the right one from a link on another site, log nobody in.
    let wrong = d.raw("GET", "/?token=0000", &[&host], "");
    assert_eq!(wrong.status, 401);
    assert!(!wrong.head.to_ascii_lowercase().contains("set-cookie"));
    let cross = d.raw(
        "GET",
        &format!("/?token={}", d.token),
        &[&host, "Sec-Fetch-Site: cross-site"],
        "",
    );
    assert_eq!(cross.status, 401);
    assert!(!cross.head.to_ascii_lowercase().contains("set-cookie"));

    // The page's own login form.
    let bad = d.raw("POST", "/api/auth/login", &[&host], r#"{"token":"nope"}"#);
    assert_eq!(bad.status, 401);
    assert_eq!(bad.json(), json!({"detail": "Invalid token"}));
    let good = d.raw(
        "POST",
        "/api/auth/login",
        &[&host, &format!("Origin: {}", d.base)],
        &json!({"token": d.token}).to_string(),
    );
    assert_eq!(good.status, 200, "{}", good.body);
    assert_eq!(good.json(), json!({"ok": true}));
    assert!(good.head.contains("SameSite=Strict"));

    // Logout ends this cookie's session; the bearer token still works for scripts.
    let out = d.raw("POST", "/api/auth/logout", &[&host, &cookie], "");
    assert_eq!(out.status, 200);
    assert!(out.head.contains("Max-Age=0"));
    assert_eq!(
        d.raw("GET", "/api/status", &[&host, &cookie], "").status,
        401
    );
    assert_eq!(d.api("GET", "/api/status", "").status, 200);

    // The page: compiled in, only this server's own script, style and connections.
    let page = d.raw("GET", "/", &[&host], "");
    assert_eq!(page.status, 200);
    assert!(page.head.contains("text/html"));
    assert!(page.head.contains("script-src 'self'"), "{}", page.head);
    assert!(page.head.contains("frame-ancestors 'none'"));
    assert!(page.body.contains("<script src=\"/app.js\"></script>"));
    let script = d.raw("GET", "/app.js", &[&host], "");
    assert_eq!(script.status, 200);
    assert!(script.head.contains("text/javascript"));
    for asset in [
        hermes_dashboard::assets::INDEX_HTML,
        hermes_dashboard::assets::APP_JS,
        hermes_dashboard::assets::APP_CSS,
    ] {
        assert!(!asset.contains("https://"), "an asset names a remote URL");
        let http: Vec<&str> = asset.matches("http://").collect();
        assert!(
            http.is_empty() || asset.matches("http://www.w3.org/2000/svg").count() == http.len(),
            "an asset names a remote URL"
        );
    }
}

#[test]
fn sessions_usage_and_kanban_answers() {
    let server = MockServer::start(Script::new(vec![Turn::text("By the ferry terminal.")]));
    let home = seeded_home(&server);
    let d = Dashboard::start(&home);

    let list = d.api("GET", "/api/sessions", "");
    assert_eq!(list.status, 200, "{}", list.body);
    let list = list.json();
    assert_eq!(list["limit"], 50);
    assert_eq!(list["total"], 1);
    assert_eq!(list["offset"], 0);
    let s = &list["sessions"][0];
    let id = s["id"].as_str().unwrap().to_string();
    for key in [
        "id",
        "source",
        "model",
        "title",
        "started_at",
        "ended_at",
        "message_count",
        "input_tokens",
        "output_tokens",
        "estimated_cost_usd",
        "last_active",
        "is_active",
        "resume_command",
        "preview",
    ] {
        assert!(s.get(key).is_some(), "no {key} in {s}");
    }
    assert!(s.get("system_prompt").is_none(), "{s}");
    assert_eq!(s["source"], "cli");
    assert_eq!(s["model"], "mock-model");
    assert_eq!(s["message_count"], 2);
    assert_eq!(s["resume_command"], format!("hermes --resume {id}"));
    assert_eq!(s["preview"], "Where is the harbour office?");

    let found = d.api("GET", "/api/sessions/search?q=harbour", "").json();
    let hit = &found["results"][0];
    assert_eq!(
        keys(hit),
        [
            "model",
            "role",
            "session_id",
            "session_started",
            "snippet",
            "source",
            "title"
        ]
    );
    assert_eq!(hit["session_id"], id.as_str());
    assert_eq!(hit["role"], "user");
    assert!(
        hit["snippet"].as_str().unwrap().contains(">>>harbour<<<"),
        "{hit}"
    );
    assert_eq!(found["results"].as_array().unwrap().len(), 1);
    let none = d.api("GET", "/api/sessions/search?q=zeppelin", "").json();
    assert_eq!(none, json!({"results": []}));
    // An id pasted in the search box finds its session first.
    let by_id = d
        .api("GET", &format!("/api/sessions/search?q={id}"), "")
        .json();
    assert_eq!(by_id["results"][0]["session_id"], id.as_str());

    let one = d.api("GET", &format!("/api/sessions/{id}"), "").json();
    assert_eq!(one["resume_command"], format!("hermes --resume {id}"));
    let msgs = d
        .api("GET", &format!("/api/sessions/{id}/messages"), "")
        .json();
    assert_eq!(msgs["session_id"], id.as_str());
    let roles: Vec<&str> = msgs["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(
        msgs["messages"][0]["content"],
        "Where is the harbour office?"
    );
    assert_eq!(msgs["messages"][1]["content"], "By the ferry terminal.");
    assert_eq!(msgs["pagination"]["returned"], 2);

    let usage = d.api("GET", "/api/analytics/usage?days=7", "").json();
    assert_eq!(keys(&usage), ["by_model", "daily", "period_days", "totals"]);
    assert_eq!(usage["period_days"], 7);
    assert_eq!(usage["totals"]["total_sessions"], 1);
    assert_eq!(usage["daily"].as_array().unwrap().len(), 1);
    assert_eq!(usage["daily"][0]["sessions"], 1);
    assert_eq!(usage["daily"][0]["day"].as_str().unwrap().len(), 10);
    assert_eq!(usage["by_model"][0]["model"], "mock-model");
    assert_eq!(
        keys(&usage["daily"][0]),
        [
            "api_calls",
            "cache_read_tokens",
            "day",
            "estimated_cost",
            "input_tokens",
            "output_tokens",
            "reasoning_tokens",
            "sessions"
        ]
    );

    // Kanban: a card moved through the board's own verbs.
    let task = kanban(&home, &["create", "Write the release notes", "--json"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let parent = kanban(&home, &["create", "Gather the changes", "--json"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let child = kanban(
        &home,
        &["create", "Publish the notes", "--parent", &parent, "--json"],
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let board = d.api("GET", "/api/kanban/board", "").json();
    let names: Vec<&str> = board["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "triage",
            "todo",
            "scheduled",
            "ready",
            "running",
            "blocked",
            "review",
            "done"
        ]
    );
    assert_eq!(board["columns"][3]["tasks"].as_array().unwrap().len(), 2);
    assert_eq!(board["columns"][1]["tasks"][0]["id"], child.as_str());

    let path = format!("/api/kanban/tasks/{task}");
    let moved = d.api(
        "PATCH",
        &path,
        r#"{"status":"blocked","block_reason":"waiting for legal"}"#,
    );
    assert_eq!(moved.status, 200, "{}", moved.body);
    assert_eq!(moved.json()["task"]["status"], "blocked");
    assert_eq!(task_status(&home, &task), "blocked");
    assert_eq!(d.api("PATCH", &path, r#"{"status":"ready"}"#).status, 200);
    assert_eq!(task_status(&home, &task), "ready");
    assert_eq!(d.api("PATCH", &path, r#"{"status":"todo"}"#).status, 200);
    assert_eq!(task_status(&home, &task), "todo");
    let running = d.api("PATCH", &path, r#"{"status":"running"}"#);
    assert_eq!(running.status, 400);
    assert_eq!(
        running.json()["detail"],
        "Cannot set status to 'running' directly; the dispatcher claims tasks"
    );
    let early = d.api(
        "PATCH",
        &format!("/api/kanban/tasks/{child}"),
        r#"{"status":"ready"}"#,
    );
    assert_eq!(early.status, 409, "{}", early.body);
    assert_eq!(
        early.json()["detail"],
        format!(
            "Cannot move to 'ready': blocked by parent(s) not done — 'Gather the changes' ({parent}, status=ready)"
        )
    );
    assert_eq!(task_status(&home, &child), "todo");
    // Completing needs a task that could be worked on: back to ready first.
    let refused = d.api("PATCH", &path, r#"{"status":"done"}"#);
    assert_eq!(refused.status, 409);
    assert_eq!(
        refused.json()["detail"],
        "status transition to 'done' not valid from 'todo'"
    );
    assert_eq!(d.api("PATCH", &path, r#"{"status":"ready"}"#).status, 200);
    let done = d.api("PATCH", &path, r#"{"status":"done","summary":"Shipped."}"#);
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(task_status(&home, &task), "done");
    let c = d.api(
        "POST",
        &format!("{path}/comments"),
        r#"{"body":"Looks good to me."}"#,
    );
    assert_eq!(c.status, 200, "{}", c.body);
    let detail = d.api("GET", &path, "").json();
    assert_eq!(
        keys(&detail),
        ["comments", "events", "links", "runs", "task"]
    );
    assert_eq!(detail["comments"][0]["author"], "dashboard");
    assert_eq!(detail["comments"][0]["body"], "Looks good to me.");
    let kinds: Vec<&str> = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"blocked"), "{kinds:?}");
    assert!(kinds.contains(&"status"), "{kinds:?}");
    assert!(kinds.contains(&"completed"), "{kinds:?}");
    assert_eq!(
        d.api("GET", "/api/kanban/tasks/t_nothere", "").json(),
        json!({"detail": "task t_nothere not found"})
    );

    // Delete, and it is gone.
    let del = d.api("DELETE", &format!("/api/sessions/{id}"), "");
    assert_eq!(del.json(), json!({"ok": true}));
    let gone = d.api("GET", &format!("/api/sessions/{id}"), "");
    assert_eq!(gone.status, 404);
    assert_eq!(gone.json(), json!({"detail": "Session not found"}));
    let again = d.api("DELETE", &format!("/api/sessions/{id}"), "");
    assert_eq!(again.json(), json!({"ok": true, "already_absent": true}));
}

#[test]
fn cron_config_memory_skills_mcp_and_platform_answers() {
    let home = TestHome::new();
    let original = "# my settings\nmodel:\n  default: some-model\nmcp_servers:\n  files:\n    command: npx\n    args: [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]\n";
    home.write_config(original);
    home.write_file(
        "skills/writing/release-notes/SKILL.md",
        "---\nname: release-notes\ndescription: Write release notes from a changelog.\n---\n# Release notes\n\nRead the changelog, group by theme.\n",
    );
    let d = Dashboard::start(&home);
    let jobs_file = || -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(home.hermes_home().join("cron/jobs.json")).unwrap(),
        )
        .unwrap()
    };

    // Cron.
    let created = d.api(
        "POST",
        "/api/cron/jobs",
        r#"{"name":"Morning report","schedule":"every 1h","prompt":"Summarise the overnight alerts."}"#,
    );
    assert_eq!(created.status, 200, "{}", created.body);
    let job = created.json();
    let job_id = job["id"].as_str().unwrap().to_string();
    assert_eq!(job["name"], "Morning report");
    assert_eq!(job["state"], "scheduled");
    assert_eq!(job["deliver"], "local");
    assert_eq!(job["last_output"], Value::Null);
    assert_eq!(jobs_file()["jobs"][0]["id"], job_id.as_str());
    assert_eq!(
        jobs_file()["jobs"][0]["prompt"],
        "Summarise the overnight alerts."
    );
    let paused = d.api("POST", &format!("/api/cron/jobs/{job_id}/pause"), "");
    assert_eq!(paused.status, 200, "{}", paused.body);
    assert_eq!(paused.json()["state"], "paused");
    assert_eq!(jobs_file()["jobs"][0]["state"], "paused");
    assert_eq!(jobs_file()["jobs"][0]["enabled"], false);
    let listed = d.api("GET", "/api/cron/jobs", "").json();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["state"], "paused");
    let resumed = d.api("POST", &format!("/api/cron/jobs/{job_id}/resume"), "");
    assert_eq!(resumed.json()["state"], "scheduled");
    assert_eq!(jobs_file()["jobs"][0]["enabled"], true);
    let bad = d.api(
        "POST",
        "/api/cron/jobs",
        r#"{"name":"x","schedule":"whenever you like","prompt":"p"}"#,
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.json()["detail"].is_string());
    assert_eq!(jobs_file()["jobs"].as_array().unwrap().len(), 1);
    let runs = d
        .api("GET", &format!("/api/cron/jobs/{job_id}/runs"), "")
        .json();
    assert_eq!(runs, json!({"runs": [], "limit": 100}));
    assert_eq!(
        d.api("GET", "/api/cron/jobs/000000000000", "").json(),
        json!({"detail": "Job not found"})
    );

    // Config: the loader refuses, the file stays; a good edit is written as given.
    let raw = d.api("GET", "/api/config/raw", "").json();
    assert_eq!(raw["yaml"], original);
    assert_eq!(
        raw["path"],
        home.hermes_home().join("config.yaml").display().to_string()
    );
    let invalid = format!("{original}agent:\n  max_turns: lots\n");
    let refused = d.api(
        "PUT",
        "/api/config/raw",
        &json!({ "yaml_text": invalid }).to_string(),
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    let refusal = refused.json();
    assert_eq!(refusal["key"], "agent.max_turns");
    assert!(
        refusal["detail"]
            .as_str()
            .unwrap()
            .contains("invalid value for `agent.max_turns`"),
        "{refusal}"
    );
    let on_disk = || std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert_eq!(on_disk(), original);
    let unparsable = d.api(
        "PUT",
        "/api/config/raw",
        &json!({ "yaml_text": "model: [unclosed\n" }).to_string(),
    );
    assert_eq!(unparsable.status, 400);
    assert_eq!(on_disk(), original);
    let edited = format!("{original}agent:\n  max_turns: 40\n");
    let saved = d.api(
        "PUT",
        "/api/config/raw",
        &json!({ "yaml_text": edited }).to_string(),
    );
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert_eq!(on_disk(), edited);
    let as_json = d.api("GET", "/api/config", "").json();
    assert_eq!(as_json["agent"]["max_turns"], 40);
    assert_eq!(as_json["model"]["default"], "some-model");

    // MCP servers and platforms, from config.yaml.
    let mcp = d.api("GET", "/api/mcp/servers", "").json();
    assert_eq!(mcp["servers"][0]["name"], "files");
    assert_eq!(mcp["servers"][0]["enabled"], true);
    assert_eq!(mcp["servers"][0]["toolset"], "mcp-files");
    assert_eq!(
        mcp["servers"][0]["transport"],
        "npx -y @modelcontextprotocol/server-filesystem"
    );
    let platforms = d.api("GET", "/api/messaging/platforms", "").json();
    assert_eq!(platforms["gateway_running"], false);
    assert_eq!(platforms["platforms"], json!([]));

    // Memory: replaced whole, checked as the memory tool checks.
    let put = d.api(
        "PUT",
        "/api/memory",
        &json!({"target": "memory", "content": "Likes tea.\n§\nLives by the harbour."}).to_string(),
    );
    assert_eq!(put.status, 200, "{}", put.body);
    let memory_file = home.hermes_home().join("memories/MEMORY.md");
    assert_eq!(
        std::fs::read_to_string(&memory_file).unwrap(),
        "Likes tea.\n§\nLives by the harbour."
    );
    let memory = d.api("GET", "/api/memory", "").json();
    assert_eq!(memory["files"][0]["entries"], 2);
    assert_eq!(memory["files"][0]["file"], "MEMORY.md");
    assert_eq!(memory["files"][1]["file"], "USER.md");
    let too_long = "x".repeat(5_000);
    let refused = d.api(
        "PUT",
        "/api/memory",
        &json!({"target": "user", "content": too_long}).to_string(),
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(!home.hermes_home().join("memories/USER.md").exists());

    // Skills: listed, read, disabled through skills.disabled in config.yaml and enabled again.
    let skills = d.api("GET", "/api/skills", "").json();
    assert_eq!(skills[0]["name"], "release-notes");
    assert_eq!(skills[0]["category"], "writing");
    assert_eq!(skills[0]["enabled"], true);
    let content = d
        .api("GET", "/api/skills/content?name=release-notes", "")
        .json();
    assert!(
        content["content"]
            .as_str()
            .unwrap()
            .contains("Read the changelog")
    );
    let off = d.api(
        "PUT",
        "/api/skills/toggle",
        r#"{"name":"release-notes","enabled":false}"#,
    );
    assert_eq!(
        off.json(),
        json!({"ok": true, "name": "release-notes", "enabled": false})
    );
    assert!(on_disk().starts_with("# my settings\n"), "{}", on_disk());
    let o = run(&home, &["skills", "list", "--json"]);
    let listed: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(listed[0]["offered"], false, "{listed}");
    assert_eq!(d.api("GET", "/api/skills", "").json()[0]["enabled"], false);
    d.api(
        "PUT",
        "/api/skills/toggle",
        r#"{"name":"release-notes","enabled":true}"#,
    );
    assert_eq!(d.api("GET", "/api/skills", "").json()[0]["enabled"], true);
    let unknown = d.api(
        "PUT",
        "/api/skills/toggle",
        r#"{"name":"nope","enabled":false}"#,
    );
    assert_eq!(unknown.status, 404);
}

#[test]
fn run_now_runs_the_job_and_its_output_is_shown_and_hub_installs_go_through_the_guard() {
    let server = MockServer::start(Script::new(vec![Turn::text(
        "Three alerts overnight, all resolved.",
    )]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let source = home.root().join("incoming/changelog-digest");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("SKILL.md"),
        "---\nname: changelog-digest\ndescription: Summarise a changelog in five lines.\n---\n# Changelog digest\n\nRead the changelog and list the five most important changes.\n",
    )
    .unwrap();
    let d = Dashboard::start(&home);

    let job = d
        .api(
            "POST",
            "/api/cron/jobs",
            r#"{"name":"Overnight alerts","schedule":"every 1d","prompt":"Summarise the overnight alerts."}"#,
        )
        .json();
    let id = job["id"].as_str().unwrap().to_string();
    let started = d.api("POST", &format!("/api/cron/jobs/{id}/trigger"), "");
    assert_eq!(started.status, 200, "{}", started.body);
    let started = started.json();
    assert_eq!(started["runner"], "dashboard");
    assert!(started["pid"].as_u64().is_some());
    common::wait("the run's saved output", || {
        d.api("GET", &format!("/api/cron/jobs/{id}"), "").json()["last_output"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Three alerts overnight, all resolved."))
    });
    let request = server.last_chat_request().unwrap().to_string();
    assert!(
        request.contains("Summarise the overnight alerts."),
        "{request}"
    );
    common::wait("the run's attempt in the ledger", || {
        d.api("GET", &format!("/api/cron/jobs/{id}/runs"), "")
            .json()["runs"][0]["status"]
            == "completed"
    });

    // The hub's own install, guard scan included, run for the page.
    let installed = d.api(
        "POST",
        "/api/skills/hub/install",
        &json!({"identifier": source.display().to_string()}).to_string(),
    );
    assert_eq!(installed.status, 200, "{}", installed.body);
    let installed = installed.json();
    assert_eq!(installed["ok"], true, "{installed}");
    assert_eq!(installed["exit_code"], 0);
    assert!(
        installed["output"]
            .as_str()
            .unwrap()
            .contains("Installed: changelog-digest"),
        "{installed}"
    );
    let skills = d.api("GET", "/api/skills", "").json();
    assert_eq!(skills[0]["name"], "changelog-digest");
    assert_eq!(skills[0]["provenance"], "hub");
    let again = d
        .api(
            "POST",
            "/api/skills/hub/install",
            &json!({"identifier": source.display().to_string()}).to_string(),
        )
        .json();
    assert_eq!(again["ok"], false, "{again}");
    assert!(
        again["output"]
            .as_str()
            .unwrap()
            .contains("already installed"),
        "{again}"
    );
    let flag = d.api(
        "POST",
        "/api/skills/hub/install",
        r#"{"identifier":"--force"}"#,
    );
    assert_eq!(flag.status, 400);
}

#[test]
fn a_non_loopback_host_is_refused_unless_insecure() {
    let home = TestHome::new();
    let o = run(
        &home,
        &["dashboard", "--host", "0.0.0.0", "--port", "0", "--no-open"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "hermes: refusing to serve the dashboard on 0.0.0.0, which is not a loopback address: anyone who can reach it could try the token; bind 127.0.0.1 and tunnel, or pass --insecure\n"
    );
    assert_eq!(stdout(&o), "");
    let o = run(
        &home,
        &["dashboard", "--host", "not-an-address", "--no-open"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not-an-address"), "{}", stderr(&o));
    // `localhost` is loopback.
    let d = Dashboard::start_with(&home, &["--no-open", "--host", "localhost"], None);
    assert!(
        d.login_url.starts_with("http://127.0.0.1:"),
        "{}",
        d.login_url
    );
    assert_eq!(d.api("GET", "/api/status", "").status, 200);
}

#[test]
fn with_a_gateway_running_run_now_is_left_to_its_scheduler() {
    let server = MockServer::start(Script::new(vec![Turn::text("Backups verified.")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}cron:\n  tick_interval: 1\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let _gateway = common::gateway::Gateway::start(&home, &[]);
    let d = Dashboard::start(&home);
    let status = d.api("GET", "/api/status", "").json();
    assert_eq!(status["gateway_running"], true, "{status}");
    assert_eq!(status["gateway_state"], "running");
    let job = d
        .api(
            "POST",
            "/api/cron/jobs",
            r#"{"name":"Backups","schedule":"every 1d","prompt":"Check the backups."}"#,
        )
        .json();
    let id = job["id"].as_str().unwrap().to_string();
    let started = d
        .api("POST", &format!("/api/cron/jobs/{id}/trigger"), "")
        .json();
    assert_eq!(started["runner"], "gateway", "{started}");
    assert!(started.get("pid").is_none());
    common::wait("the gateway's run of the job", || {
        d.api("GET", &format!("/api/cron/jobs/{id}"), "").json()["last_output"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Backups verified."))
    });
    assert_eq!(server.requests().len(), 1, "run once, by the gateway");
}

#[test]
fn without_no_open_the_browser_is_opened_on_the_login_link() {
    use std::os::unix::fs::PermissionsExt;
    let home = TestHome::new();
    let bin_dir = home.root().join("fakebin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let opened = home.root().join("opened.txt");
    let opener = bin_dir.join("xdg-open");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > {}\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin_dir.display());
    let d = Dashboard::start_with(&home, &[], Some(&path));
    common::wait("the browser opener", || {
        std::fs::read_to_string(&opened).is_ok_and(|t| !t.is_empty())
    });
    assert_eq!(std::fs::read_to_string(&opened).unwrap(), d.login_url);
}
