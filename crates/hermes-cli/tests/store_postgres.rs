//! Sessions in PostgreSQL (`store.backend: postgres`), through the binary against a real
//! throwaway server: a session one home (machine) records is found by `hermes sessions search`
//! in another; `hermes store migrate` copies a SQLite home (sessions made by running the
//! binary, a kanban task) to PostgreSQL and back with every message and search hit intact, and
//! a second run copies nothing. Skips with the reason when PostgreSQL is not installed.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_testkit::postgres::Postgres;
use hermes_testkit::{MockServer, Script, TestHome, Turn, mock_config_yaml};
use serde_json::Value;

fn server_or_skip() -> Option<Postgres> {
    match Postgres::start() {
        Ok(pg) => Some(pg),
        Err(reason) => {
            eprintln!("skipping: {reason}");
            None
        }
    }
}

/// A home on the mock model; `postgres`: the shared store. The URL is in its .env either way.
fn home(server: &MockServer, url: &str, postgres: bool) -> TestHome {
    let home = TestHome::new();
    let store = if postgres {
        "store:\n  backend: postgres\n"
    } else {
        ""
    };
    home.write_config(&format!("{}{store}", mock_config_yaml(server)));
    std::fs::write(
        home.hermes_home().join(".env"),
        format!("HERMES_STORE_URL={url}\n"),
    )
    .unwrap();
    home
}

fn ok(home: &TestHome, args: &[&str]) -> String {
    let o = run(home, args);
    assert!(
        o.status.success(),
        "hermes {args:?}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

fn user_text(req: &Value) -> String {
    req["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The model answers about whatever was asked.
fn echo_server() -> MockServer {
    MockServer::start(Script::responding(|req| {
        Turn::text(format!("About {}: it is a fine subject.", user_text(req)))
    }))
}

#[test]
fn a_session_one_machine_records_is_found_from_another() {
    let Some(pg) = server_or_skip() else { return };
    let url = pg.create_database("team").unwrap();
    let server = echo_server();
    let (a, b) = (home(&server, &url, true), home(&server, &url, true));
    assert_eq!(
        ok(&a, &["-z", "the aurora borealis"]),
        "About the aurora borealis: it is a fine subject.\n"
    );

    let listed: Value = serde_json::from_str(&ok(&b, &["sessions", "list", "--json"])).unwrap();
    let sessions = listed.as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    assert_eq!(sessions[0]["message_count"], 2);
    let found = ok(&b, &["sessions", "search", "aurora"]);
    let lines: Vec<&str> = found.lines().collect();
    assert_eq!(lines.len(), 4, "{found}");
    assert!(lines[0].starts_with(&format!("{id} · ")), "{found}");
    assert!(
        lines[1].contains("] user: the >>>aurora<<< borealis"),
        "{found}"
    );
    assert!(
        lines[3].contains("] assistant: About the >>>aurora<<< borealis"),
        "{found}"
    );
    let shown = ok(&b, &["sessions", "show", &id]);
    assert!(
        shown.contains("About the aurora borealis: it is a fine subject."),
        "{shown}"
    );
    // Nothing went to the local file of the home that recorded it.
    assert!(!a.hermes_home().join("sessions.db").exists());
    // `hermes status` counts the server's sessions, not a local file's (regression: it read
    // sessions.db), and doctor's `sessions` line defers to its `store` check.
    let status = ok(&b, &["status"]);
    let line = status
        .lines()
        .find(|l| l.trim_start().starts_with("sessions"))
        .unwrap_or_default();
    assert!(
        line.ends_with(&format!(
            "1 session in PostgreSQL ({} (schema sessions))",
            url
        )),
        "{status}"
    );
    let doctor = stdout(&run(&b, &["doctor", "--offline"]));
    assert!(
        doctor.contains("sessions     kept in PostgreSQL (")
            && doctor.contains("), checked by `store`"),
        "{doctor}"
    );
    assert_eq!(
        pg.psql("team", "SELECT COUNT(*) FROM sessions.messages")
            .unwrap(),
        "2"
    );
}

#[test]
fn doctor_checks_the_server_and_masks_the_password() {
    let Some(pg) = server_or_skip() else { return };
    let url = pg.create_database("team").unwrap();
    pg.psql("team", "ALTER USER postgres PASSWORD 's3cret'")
        .unwrap();
    let server = echo_server();
    let good = home(&server, &url.replace("postgres@", "postgres:s3cret@"), true);
    let o = run(&good, &["doctor", "--offline"]);
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.contains(" store "))
        .unwrap_or_default();
    assert!(
        line.starts_with(&format!(
            "✓ store        postgres at postgres://postgres:***@127.0.0.1:{}/team: PostgreSQL 1",
            pg.port
        )),
        "{text}"
    );
    assert!(line.ends_with(", 0 sessions"), "{line}");
    assert!(!text.contains("s3cret"), "{text}");

    // A server that does not answer is a problem with the fix.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let down = home(
        &server,
        &format!("postgres://bob:hunter2@127.0.0.1:{port}/x?connect_timeout=2"),
        true,
    );
    let o = run(&down, &["doctor", "--offline"]);
    assert!(!o.status.success());
    let text = stdout(&o);
    assert!(
        text.contains(&format!(
            "✗ store        session store at postgres://bob:***@127.0.0.1:{port}/x"
        )),
        "{text}"
    );
    assert!(text.contains("fix: check HERMES_STORE_URL"), "{text}");
    assert!(!text.contains("hunter2") && !stderr(&o).contains("hunter2"));

    // postgres without a URL: the message names the variable.
    let none = TestHome::new();
    none.write_config(&format!(
        "{}store:\n  backend: postgres\n",
        mock_config_yaml(&server)
    ));
    let o = run(&none, &["sessions", "list"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o)
            .contains("`store.backend: postgres` needs the connection URL in HERMES_STORE_URL"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn store_migrate_round_trips_a_sqlite_home() {
    let Some(pg) = server_or_skip() else { return };
    let url = pg.create_database("team").unwrap();
    let server = echo_server();
    let local = home(&server, &url, false);
    for q in ["volcanic soils", "tidal energy", "volcanic glass"] {
        ok(&local, &["-z", q]);
    }
    ok(
        &local,
        &["kanban", "create", "Survey the volcano", "--json"],
    );
    let export = ok(&local, &["sessions", "export"]);
    assert_eq!(export.lines().count(), 3);
    let search = ok(&local, &["sessions", "search", "volcanic"]);
    assert_eq!(search.lines().count(), 8, "{search}");

    // To PostgreSQL: counts, then a second run that copies nothing.
    let first: Value = serde_json::from_str(&ok(
        &local,
        &["store", "migrate", "--to", "postgres", "--json"],
    ))
    .unwrap();
    let table = |report: &Value, part: &str, table: &str| -> Value {
        report["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["part"] == part)
            .unwrap()["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == table)
            .unwrap()
            .clone()
    };
    assert_eq!(
        table(&first, "sessions", "sessions")["copied"],
        3,
        "{first}"
    );
    assert_eq!(
        table(&first, "sessions", "messages")["copied"],
        6,
        "{first}"
    );
    assert_eq!(
        table(&first, "kanban board default", "tasks")["copied"],
        1,
        "{first}"
    );
    assert_eq!(first["verified"], true);
    let again: Value = serde_json::from_str(&ok(
        &local,
        &["store", "migrate", "--to", "postgres", "--json"],
    ))
    .unwrap();
    assert_eq!(
        table(&again, "sessions", "messages")["copied"],
        0,
        "{again}"
    );
    assert_eq!(
        table(&again, "sessions", "messages")["target_rows"],
        6,
        "{again}"
    );
    assert_eq!(
        table(&again, "kanban board default", "task_events")["copied"],
        0
    );

    // A home on PostgreSQL sees the same history and the same hits.
    let shared = home(&server, &url, true);
    assert_eq!(ok(&shared, &["sessions", "export"]), export);
    let pg_search = ok(&shared, &["sessions", "search", "volcanic"]);
    // The same hits (session, message, role), best first by each engine's ranking.
    let frame = |s: &str| -> Vec<String> {
        let mut hits: Vec<String> = s
            .lines()
            .collect::<Vec<_>>()
            .chunks(2)
            .map(|h| format!("{} {}", h[0], h[1].split(": ").next().unwrap_or("")))
            .collect();
        hits.sort();
        hits
    };
    assert_eq!(frame(&pg_search), frame(&search), "{pg_search}\n{search}");
    assert!(pg_search.contains(">>>volcanic<<<"), "{pg_search}");
    let listed = ok(&shared, &["kanban", "list"]);
    assert!(listed.contains("Survey the volcano"), "{listed}");

    // And back to SQLite in a fresh home: identical to where it started.
    let back = home(&server, &url, false);
    ok(&back, &["store", "migrate", "--to", "sqlite"]);
    assert_eq!(ok(&back, &["sessions", "export"]), export);
    assert_eq!(ok(&back, &["sessions", "search", "volcanic"]), search);
    assert!(ok(&back, &["kanban", "list"]).contains("Survey the volcano"));
}
