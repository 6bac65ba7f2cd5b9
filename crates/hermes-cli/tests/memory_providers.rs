//! External memory providers through the real binary: `memory.provider: holographic` gives
//! the model `fact_store` and `fact_feedback`, and every later session recalls the matching
//! facts into the user's message (fenced as memory context), ordered by relevance × trust.
//! An unknown provider is a warning and the session runs without one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::requests::{tool_names, tool_results, user_message};
use common::*;

use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const HOLOGRAPHIC: &str = "memory:\n  provider: holographic\n";

fn home_with(server: &MockServer, extra_yaml: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}{extra_yaml}",
        hermes_testkit::mock_config_yaml(server)
    ));
    home
}

fn oneshot(home: &TestHome, prompt: &str) {
    let o = run(home, &["-z", prompt]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_fact_added_in_one_session_is_recalled_into_the_next() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "fact_store",
            json!({"action": "add", "content": "The user's editor is Helix", "category": "user_pref"}),
        ),
        Turn::text("Noted."),
        Turn::text("Helix."),
    ]));
    let home = home_with(&server, HOLOGRAPHIC);
    let o = run(&home, &["-z", "I use Helix"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "no warning for a known provider");
    let reqs = server.chat_requests();
    let names = tool_names(&reqs[0]);
    assert!(
        names.contains(&"fact_store".to_string()) && names.contains(&"fact_feedback".to_string())
    );
    assert_eq!(
        user_message(&reqs[0]),
        "I use Helix",
        "nothing to recall yet"
    );
    assert_eq!(
        tool_results(&reqs[1]),
        vec![json!({"fact_id": 1, "status": "added"})]
    );
    assert!(home.hermes_home().join("memory_store.db").is_file());

    let system = |request: &Value| {
        request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        system(&reqs[0]).ends_with(
            "# Holographic Memory\nActive. Empty fact store \u{2014} proactively add facts the user would expect you to remember.\n\
             Use fact_store(action='add') to store durable structured facts about people, projects, preferences, decisions.\n\
             Use fact_feedback to rate facts after using them (trains trust scores)."
        ),
        "Python's block for an empty store: {}",
        system(&reqs[0])
    );

    oneshot(&home, "Which editor do I use?");
    assert!(
        system(&server.chat_requests()[2])
            .ends_with("# Holographic Memory\nActive. 1 facts stored with entity resolution and trust scoring.\n\
                Use fact_store to search, probe entities, reason across entities, or add facts.\n\
                Use fact_feedback to rate facts after using them (trains trust scores)."),
        "{}",
        system(&server.chat_requests()[2])
    );
    let sent = user_message(&server.chat_requests()[2]);
    assert!(
        sent.starts_with("Which editor do I use?\n\n<memory-context>"),
        "{sent}"
    );
    assert!(
        sent.contains("## Holographic Memory\n- [0.50] The user's editor is Helix"),
        "{sent}"
    );
    assert!(sent.contains("memory provider `holographic`"), "{sent}");
}

#[test]
fn feedback_reorders_recall_and_search_list_remove_work() {
    let server = MockServer::start(Script::new(vec![
        // Session 1: two facts.
        Turn::tool(
            "fact_store",
            json!({"action": "add", "content": "coffee order: flat white"}),
        ),
        Turn::tool(
            "fact_store",
            json!({"action": "add", "content": "coffee order: cortado"}),
        ),
        Turn::text("ok"),
        // Session 2: the cortado fact turns out wrong.
        Turn::tool(
            "fact_feedback",
            json!({"action": "unhelpful", "fact_id": 2}),
        ),
        Turn::text("sorry"),
        // Session 3: search, list, remove the flat white.
        Turn::tool("fact_store", json!({"action": "search", "query": "coffee"})),
        Turn::tool("fact_store", json!({"action": "list"})),
        Turn::tool("fact_store", json!({"action": "remove", "fact_id": 1})),
        Turn::tool("fact_store", json!({"action": "frobnicate"})),
        Turn::text("done"),
        // Session 4.
        Turn::text("cortado"),
    ]));
    let home = home_with(&server, HOLOGRAPHIC);
    oneshot(&home, "remember my coffee orders");

    oneshot(&home, "what is my coffee order?");
    let reqs = server.chat_requests();
    let sent = user_message(&reqs[3]);
    let (cortado, flat) = (
        sent.find("cortado").unwrap(),
        sent.find("flat white").unwrap(),
    );
    assert!(
        cortado < flat,
        "shorter, closer match first at equal trust: {sent}"
    );
    let fb = &tool_results(&reqs[4])[0];
    assert_eq!(fb["old_trust"], json!(0.5));
    assert_eq!(fb["new_trust"], json!(0.4));

    oneshot(&home, "what is my coffee order?");
    let reqs = server.chat_requests();
    let sent = user_message(&reqs[5]);
    assert!(
        sent.contains("- [0.50] coffee order: flat white\n- [0.40] coffee order: cortado"),
        "lower trust sinks: {sent}"
    );
    let results = tool_results(&reqs[9]);
    let search = &results[0];
    assert_eq!(search["count"], 2);
    assert_eq!(search["results"][0]["content"], "coffee order: flat white");
    let list = &results[1];
    assert_eq!(list["count"], 2);
    assert_eq!(list["facts"][0]["trust_score"], json!(0.5));
    assert_eq!(results[2], json!({"removed": true}));
    assert!(
        results[3]
            .to_string()
            .contains("unknown action `frobnicate`"),
        "{}",
        results[3]
    );

    oneshot(&home, "coffee order?");
    let sent = user_message(&server.chat_requests()[10]);
    assert!(sent.contains("- [0.40] coffee order: cortado"), "{sent}");
    assert!(!sent.contains("flat white"), "{sent}");
}

#[test]
fn an_unknown_provider_is_a_warning_and_the_session_still_works() {
    let server = MockServer::start(Script::new(vec![Turn::text("hello")]));
    let home = home_with(&server, "memory:\n  provider: mem0\n");
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "hello\n");
    assert!(
        stderr(&o).contains(
            "memory.provider `mem0` is not available in this build (available: holographic, honcho)"
        ),
        "{}",
        stderr(&o)
    );
    let reqs = server.chat_requests();
    assert!(!tool_names(&reqs[0]).contains(&"fact_store".to_string()));
    assert_eq!(user_message(&reqs[0]), "hi");
}

#[test]
fn db_path_and_trust_settings_are_honoured() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "fact_store",
            json!({"action": "add", "content": "Project Zephyr ships in May"}),
        ),
        Turn::text("ok"),
        Turn::text("May"),
    ]));
    let home = home_with(
        &server,
        "memory:\n  provider: holographic\nplugins:\n  hermes-memory-store:\n    db_path: $HERMES_HOME/facts/store.db\n    default_trust: 0.8\n",
    );
    oneshot(&home, "note the Zephyr date");
    assert!(home.hermes_home().join("facts/store.db").is_file());
    assert!(!home.hermes_home().join("memory_store.db").exists());
    oneshot(&home, "When does Zephyr ship?");
    let sent = user_message(&server.chat_requests()[2]);
    assert!(
        sent.contains("- [0.80] Project Zephyr ships in May"),
        "{sent}"
    );
}

#[test]
fn memory_status_shows_the_provider_and_its_fact_count() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "fact_store",
            json!({"action": "add", "content": "Likes rust"}),
        ),
        Turn::tool(
            "fact_store",
            json!({"action": "add", "content": "Lives in Lyon"}),
        ),
        Turn::text("ok"),
    ]));
    let home = home_with(&server, HOLOGRAPHIC);
    let o = run(&home, &["memory", "status"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let db = home.hermes_home().join("memory_store.db");
    assert!(
        stdout(&o).ends_with(&format!(
            "Memory provider: holographic · 0 facts · {}\n",
            db.display()
        )),
        "{}",
        stdout(&o)
    );
    oneshot(&home, "remember");
    let o = run(&home, &["memory", "status"]);
    assert!(
        stdout(&o).contains("Memory provider: holographic · 2 facts · "),
        "{}",
        stdout(&o)
    );

    let other = home_with(&server, "memory:\n  provider: mem0\n");
    let o = run(&other, &["memory"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Memory provider: memory.provider `mem0` is not available in this build (available: holographic, honcho)"),
        "{}",
        stdout(&o)
    );
    let plain = home_with(&server, "");
    assert!(!stdout(&run(&plain, &["memory"])).contains("Memory provider"));
}

/// `[fact_id, score]` of each result of a `fact_store` query.
fn scored(result: &Value) -> Vec<(i64, f64)> {
    result["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results in {result}"))
        .iter()
        .map(|f| (f["fact_id"].as_i64().unwrap(), f["score"].as_f64().unwrap()))
        .collect()
}

/// Same ids in the same order, scores equal to the last bits a thousand cosines allow.
fn assert_scores(what: &str, result: &Value, expected: &[(i64, f64)]) {
    let ours = scored(result);
    assert_eq!(result["count"], json!(expected.len()), "{what}: {result}");
    assert_eq!(
        ours.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        expected.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        "{what}: {result}"
    );
    for ((id, score), (_, python)) in ours.iter().zip(expected) {
        assert!(
            (score - python).abs() < 1e-9,
            "{what}: fact {id}: {score} vs {python}"
        );
    }
}

#[test]
fn probe_related_reason_and_contradict_answer_as_python_does() {
    let add = |content: &str, category: &str| {
        Turn::tool(
            "fact_store",
            json!({"action": "add", "content": content, "category": category}),
        )
    };
    let server = MockServer::start(Script::new(vec![
        add("Alice Smith maintains the billing service", "project"),
        add("Alice Smith prefers tea over coffee", "user_pref"),
        add("Bob Jones deploys with \"ArgoCD\"", "project"),
        add("Alice Smith and Bob Jones pair on 'billing'", "project"),
        Turn::tool(
            "fact_store",
            json!({"action": "probe", "entity": "Alice Smith"}),
        ),
        Turn::tool(
            "fact_store",
            json!({"action": "probe", "entity": "alice smith", "category": "project", "limit": 2}),
        ),
        Turn::tool(
            "fact_store",
            json!({"action": "related", "entity": "billing"}),
        ),
        Turn::tool(
            "fact_store",
            json!({"action": "reason", "entities": ["Alice Smith", "Bob Jones"]}),
        ),
        Turn::tool("fact_store", json!({"action": "contradict"})),
        Turn::tool("fact_store", json!({"action": "related"})),
        Turn::text("done"),
    ]));
    // Eleven model calls would make a skill review due; this script has no turn for it.
    let home = home_with(
        &server,
        &format!("{HOLOGRAPHIC}skills:\n  creation_nudge_interval: 0\n"),
    );
    oneshot(&home, "who works on billing?");
    let reqs = server.chat_requests();
    let results = tool_results(reqs.last().unwrap());
    assert_eq!(results.len(), 10);
    // Scores printed by Python's FactRetriever (numpy) after the same four adds.
    assert_scores(
        "probe",
        &results[4],
        &[
            (2, 0.26122097052375937),
            (4, 0.2596638716384509),
            (3, 0.2564552680008852),
            (1, 0.24505205565901778),
        ],
    );
    let first = &results[4]["results"][0];
    assert_eq!(
        (
            &first["content"],
            &first["category"],
            &first["tags"],
            &first["trust_score"],
            &first["retrieval_count"],
            &first["helpful_count"],
        ),
        (
            &json!("Alice Smith prefers tea over coffee"),
            &json!("user_pref"),
            &json!(""),
            &json!(0.5),
            &json!(0),
            &json!(0),
        )
    );
    assert_scores(
        "probe in a category (through its bank)",
        &results[5],
        &[(3, 0.2555343316797956), (4, 0.25185424710558796)],
    );
    assert_scores(
        "related",
        &results[6],
        &[
            (4, 0.36490715745134555),
            (1, 0.30689882331225604),
            (2, 0.25748516426074075),
            (3, 0.2549036963821119),
        ],
    );
    assert_scores(
        "reason",
        &results[7],
        &[
            (1, 0.24543090169437162),
            (2, 0.24332994600247668),
            (3, 0.24300607167883584),
            (4, 0.23929917133947265),
        ],
    );
    assert_eq!(results[8], json!({"count": 0, "results": []}));
    assert!(
        results[9].to_string().contains("`related` needs `entity`"),
        "{}",
        results[9]
    );

    // The entity graph is Python's tables.
    let db = rusqlite::Connection::open(home.hermes_home().join("memory_store.db")).unwrap();
    let entities: Vec<String> = db
        .prepare("SELECT name FROM entities ORDER BY entity_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(entities, ["Alice Smith", "Bob Jones", "ArgoCD", "billing"]);
}

#[test]
fn auto_extract_stores_the_users_stated_preferences_when_the_session_ends() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("Noted."),
        Turn::tool("fact_store", json!({"action": "list"})),
        Turn::text("You prefer tabs."),
        Turn::text("ok"),
    ]));
    let home = home_with(
        &server,
        &format!("{HOLOGRAPHIC}plugins:\n  hermes-memory-store:\n    auto_extract: true\n"),
    );
    let o = run(&home, &["-z", "I prefer tabs over spaces in Go code"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "auto_extract is supported: no warning");

    oneshot(&home, "What do I prefer?");
    let reqs = server.chat_requests();
    let sent = user_message(&reqs[1]);
    assert!(
        sent.contains("- [0.50] I prefer tabs over spaces in Go code"),
        "recalled in the next session: {sent}"
    );
    let list = &tool_results(&reqs[2])[0];
    assert_eq!(list["count"], 1, "{list}");
    let fact = &list["facts"][0];
    assert_eq!(fact["content"], "I prefer tabs over spaces in Go code");
    assert_eq!(fact["category"], "user_pref");

    // The second session's own message is no preference; its recall fence is not re-stored.
    let db = rusqlite::Connection::open(home.hermes_home().join("memory_store.db")).unwrap();
    let count: i64 = db
        .query_row("SELECT COUNT(*) FROM facts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 1);

    // Off (the default): nothing is extracted.
    let off = home_with(&server, HOLOGRAPHIC);
    oneshot(&off, "I prefer tabs over spaces in Go code");
    let db = rusqlite::Connection::open(off.hermes_home().join("memory_store.db")).unwrap();
    let count: i64 = db
        .query_row("SELECT COUNT(*) FROM facts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 0);
}
