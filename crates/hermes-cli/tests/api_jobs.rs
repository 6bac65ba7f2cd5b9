//! `/api/jobs` through the binary: a cron job created over the API lands in `cron/jobs.json`
//! and `hermes cron list`; it is read, edited, paused (hidden from the default listing),
//! resumed, run now (the gateway's scheduler wakes and the job's prompt reaches the mock model
//! within moments, though its schedule says an hour and the tick interval too) and deleted;
//! bad ids are 400, unknown ones 404, and nothing answers without the key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::gateway::Gateway;
use hermes_testkit::http_client::HttpReply;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const AUTH: &str = "Authorization: Bearer k1";

fn http(addr: &str, method: &str, path: &str, body: &str) -> HttpReply {
    hermes_testkit::http_client::http(addr, method, path, &[AUTH], body)
}

fn jobs_file(home: &TestHome) -> Value {
    let text = std::fs::read_to_string(home.hermes_home().join("cron/jobs.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn jobs_are_managed_over_the_api_and_run_now_wakes_the_scheduler() {
    let server = MockServer::start(Script::new(vec![Turn::text("Report: all good.")]));
    let home = TestHome::new();
    // Ticks an hour apart: only a wake can run the job during the test.
    home.write_config(&format!(
        "{}cron:\n  tick_interval: 3600\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    home.write_file(".env", "API_SERVER_KEY=k1\n");
    let gw = Gateway::start(&home, &[]);

    let r = hermes_testkit::http_client::http(&gw.addr, "GET", "/api/jobs", &[], "");
    assert_eq!(r.status, 401, "{}", r.body);

    // Created: stored where `hermes cron` keeps its jobs.
    let body = json!({"name": "Daily report", "schedule": "every 1h", "prompt": "Say the report."});
    let r = http(&gw.addr, "POST", "/api/jobs", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let job = r.json()["job"].clone();
    let id = job["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 12);
    assert_eq!(job["name"], "Daily report");
    assert_eq!(job["prompt"], "Say the report.");
    assert_eq!(job["schedule_display"], "every 60m");
    assert_eq!(job["deliver"], "local");
    assert_eq!(job["enabled"], true);
    assert_eq!(job["state"], "scheduled");
    assert_eq!(job["origin"]["platform"], "api_server");
    let stored = jobs_file(&home);
    assert_eq!(stored["jobs"][0]["id"], id.as_str());
    let out = common::run(&home, &["cron", "list"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{listing}");
    assert!(
        listing.contains(&id) && listing.contains("Daily report"),
        "{listing}"
    );

    // Refused: no name, a bad repeat, bad and unknown ids, nothing to change.
    let r = http(&gw.addr, "POST", "/api/jobs", r#"{"schedule": "every 1h"}"#);
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "Name is required"}))
    );
    let r = http(
        &gw.addr,
        "POST",
        "/api/jobs",
        r#"{"name": "x", "schedule": "every 1h", "repeat": 0}"#,
    );
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "Repeat must be a positive integer"}))
    );
    let r = http(&gw.addr, "GET", "/api/jobs/not-a-job", "");
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "Invalid job ID format"}))
    );
    let r = http(&gw.addr, "GET", "/api/jobs/0123456789ab", "");
    assert_eq!(
        (r.status, r.json()),
        (404, json!({"error": "Job not found"}))
    );
    let path = format!("/api/jobs/{id}");
    let r = http(&gw.addr, "PATCH", &path, r#"{"id": "x"}"#);
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "No valid fields to update"}))
    );

    // Read and edited.
    let r = http(&gw.addr, "GET", &path, "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["job"]["id"], id.as_str());
    let r = http(&gw.addr, "PATCH", &path, r#"{"name": "Hourly report"}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["job"]["name"], "Hourly report");
    assert_eq!(jobs_file(&home)["jobs"][0]["name"], "Hourly report");

    // Paused: out of the default listing; resumed.
    let r = http(&gw.addr, "POST", &format!("{path}/pause"), "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["job"]["state"], "paused");
    assert_eq!(r.json()["job"]["enabled"], false);
    let r = http(&gw.addr, "GET", "/api/jobs", "");
    assert_eq!(r.json(), json!({"jobs": []}));
    let r = http(&gw.addr, "GET", "/api/jobs?include_disabled=true", "");
    assert_eq!(r.json()["jobs"][0]["id"], id.as_str());
    let r = http(&gw.addr, "POST", &format!("{path}/resume"), "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["job"]["state"], "scheduled");
    let r = http(&gw.addr, "GET", "/api/jobs", "");
    assert_eq!(r.json()["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(r.json()["jobs"][0]["latest_execution"], Value::Null);

    // Run now: the scheduler is woken and the job's prompt reaches the model at once.
    assert_eq!(server.chat_request_count(), 0);
    let asked = Instant::now();
    let r = http(&gw.addr, "POST", &format!("{path}/run"), "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["job"]["id"], id.as_str());
    assert!(server.wait_for_chat_requests(1, Duration::from_secs(20)));
    assert!(asked.elapsed() < Duration::from_secs(20));
    let request = server.last_chat_request().unwrap();
    let user = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(user.contains("Say the report."), "{user}");
    // The run is recorded on the job.
    let deadline = Instant::now() + Duration::from_secs(20);
    let job = loop {
        let job = http(&gw.addr, "GET", &path, "").json()["job"].clone();
        if job["last_status"] == "ok" {
            break job;
        }
        assert!(Instant::now() < deadline, "the run was not recorded: {job}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(job["last_run_at"].is_string());
    assert_eq!(job["state"], "scheduled");
    // The attempt is in the execution ledger, listed as Python's `latest_execution`.
    let execution = loop {
        let jobs = http(&gw.addr, "GET", "/api/jobs", "").json()["jobs"].clone();
        if jobs[0]["latest_execution"]["status"] == "completed" {
            break jobs[0]["latest_execution"].clone();
        }
        assert!(Instant::now() < deadline, "no finished attempt: {jobs}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(execution["job_id"], id.as_str());
    assert_eq!(execution["source"], "builtin");
    assert_eq!(execution["error"], Value::Null);
    assert!(execution["started_at"].is_string() && execution["finished_at"].is_string());
    assert_eq!(
        http(&gw.addr, "GET", &path, "").json()["job"]["latest_execution"]["id"],
        execution["id"]
    );

    // Deleted.
    let r = http(&gw.addr, "DELETE", &path, "");
    assert_eq!((r.status, r.json()), (200, json!({"ok": true})));
    assert_eq!(jobs_file(&home)["jobs"], json!([]));
    let r = http(&gw.addr, "DELETE", &path, "");
    assert_eq!(r.status, 404, "{}", r.body);
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}
