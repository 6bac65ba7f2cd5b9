//! One `memory_store.db` for both builds: a store written by the Python Hermes' holographic
//! plugin (with numpy, so with HRR vectors and banks; see
//! fixtures/holographic/make_python_memory_store.py) is read here, and its retriever's answers
//! are compared with this build's over the same file. The same writes replayed on a fresh
//! store must give the same entities, links, vectors and banks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use hermes_runtime::holographic::{FactStore, FactUpdate, SearchQuery};
use rusqlite::Connection;
use serde_json::Value;

/// Scores are sums of a thousand cosines: the two builds' `cos` may differ in the last bit.
const TOLERANCE: f64 = 1e-9;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/holographic")
        .join(name)
}

fn python_results() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("python_results.json")).unwrap()).unwrap()
}

/// A private copy of the Python store (opening it adds the `scope` column).
fn python_store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory_store.db");
    std::fs::copy(fixture("python_memory_store.db"), &path).unwrap();
    (dir, path)
}

fn assert_scored(what: &str, ours: &[hermes_runtime::holographic::Fact], python: &Value) {
    let python = python.as_array().unwrap();
    assert_eq!(ours.len(), python.len(), "{what}: result count");
    for (fact, expected) in ours.iter().zip(python) {
        assert_eq!(fact.fact_id, expected[0].as_i64().unwrap(), "{what}: order");
        let score = fact.score.unwrap();
        let theirs = expected[1].as_f64().unwrap();
        assert!(
            (score - theirs).abs() < TOLERANCE,
            "{what}: fact {} scores {score}, Python {theirs}",
            fact.fact_id
        );
    }
}

fn rows(conn: &Connection, sql: &str) -> Value {
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    let rows = stmt
        .query_map([], |r| {
            let mut row = Vec::new();
            for i in 0..n {
                row.push(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Integer(v) => Value::from(v),
                    rusqlite::types::ValueRef::Text(t) => {
                        Value::from(String::from_utf8_lossy(t).into_owned())
                    }
                    other => panic!("unexpected column {other:?}"),
                });
            }
            Ok(Value::Array(row))
        })
        .unwrap();
    Value::Array(rows.map(Result::unwrap).collect())
}

fn vectors(conn: &Connection, sql: &str) -> Vec<(String, Vec<f64>)> {
    let mut stmt = conn.prepare(sql).unwrap();
    stmt.query_map([], |r| {
        let bytes: Vec<u8> = r.get(1)?;
        let phases = bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        Ok((
            r.get::<_, rusqlite::types::Value>(0)
                .map(|v| format!("{v:?}"))?,
            phases,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn assert_same_phases(what: &str, ours: &[(String, Vec<f64>)], theirs: &[(String, Vec<f64>)]) {
    assert_eq!(ours.len(), theirs.len(), "{what}: count");
    for ((key, a), (their_key, b)) in ours.iter().zip(theirs) {
        assert_eq!(key, their_key, "{what}");
        assert_eq!(a.len(), b.len(), "{what} {key}: dim");
        for (x, y) in a.iter().zip(b) {
            // Phases wrap at 2π: 6.283185307179586 and 0.0 are the same angle.
            let d = (x - y).abs();
            let d = d.min(std::f64::consts::TAU - d);
            assert!(d < TOLERANCE, "{what} {key}: {x} vs {y}");
        }
    }
}

#[test]
fn python_store_answers_the_same_queries_the_same_way() {
    let python = python_results();
    let (_dir, path) = python_store();
    let store = FactStore::open(&path, 0.5).unwrap();
    assert_eq!(
        store.backfill_vectors().unwrap(),
        0,
        "Python stored every vector"
    );

    assert_scored(
        "probe",
        &store.probe("Alice Smith", None, 10).unwrap(),
        &python["probe"],
    );
    assert_scored(
        "probe in project",
        &store.probe("Alice Smith", Some("project"), 10).unwrap(),
        &python["probe_project"],
    );
    assert_scored(
        "related",
        &store.related("billing", None, 10).unwrap(),
        &python["related"],
    );
    assert_scored(
        "reason",
        &store
            .reason(&["Alice Smith".into(), "Bob Jones".into()], None, 10)
            .unwrap(),
        &python["reason"],
    );
    let search = store
        .search(&SearchQuery {
            text: "where does alice live",
            category: None,
            min_trust: 0.3,
            limit: 10,
        })
        .unwrap();
    assert_scored("search", &search, &python["search"]);
    let contradictions = serde_json::to_value(store.contradict(None, 10).unwrap()).unwrap();
    assert_eq!(contradictions, python["contradict"]);
}

#[test]
fn the_same_writes_make_the_same_tables_and_vectors() {
    let python = python_results();
    let dir = tempfile::tempdir().unwrap();
    let ours_path = dir.path().join("ours.db");
    let store = FactStore::open(&ours_path, 0.5).unwrap();
    let facts = python["facts"].as_array().unwrap();
    for fact in facts {
        store
            .add(fact[0].as_str().unwrap(), fact[1].as_str().unwrap(), "")
            .unwrap();
    }
    assert_eq!(
        store
            .add(facts[0][0].as_str().unwrap(), "general", "")
            .unwrap(),
        1
    );
    let update = &python["update"];
    assert!(
        store
            .update(
                update[0].as_i64().unwrap(),
                &FactUpdate {
                    content: Some(update[1].as_str().unwrap().into()),
                    ..Default::default()
                },
            )
            .unwrap()
    );
    assert!(store.remove(python["remove"].as_i64().unwrap()).unwrap());
    drop(store);

    let ours = Connection::open(&ours_path).unwrap();
    let (_pdir, python_path) = python_store();
    let theirs = Connection::open(&python_path).unwrap();
    assert_eq!(
        rows(
            &ours,
            "SELECT entity_id, name FROM entities ORDER BY entity_id"
        ),
        python["entities"]
    );
    assert_eq!(
        rows(
            &ours,
            "SELECT fact_id, entity_id FROM fact_entities ORDER BY fact_id, entity_id"
        ),
        python["links"]
    );
    assert_eq!(
        rows(
            &ours,
            "SELECT bank_name, fact_count, dim FROM memory_banks ORDER BY bank_name"
        ),
        python["banks"]
    );
    let facts_sql = "SELECT fact_id, hrr_vector FROM facts ORDER BY fact_id";
    assert_same_phases(
        "fact vector",
        &vectors(&ours, facts_sql),
        &vectors(&theirs, facts_sql),
    );
    let banks_sql = "SELECT bank_name, vector FROM memory_banks ORDER BY bank_name";
    assert_same_phases(
        "bank",
        &vectors(&ours, banks_sql),
        &vectors(&theirs, banks_sql),
    );
}
