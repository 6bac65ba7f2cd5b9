//! Many writers at once, each with its own connection (as separate `hermes` processes would
//! have): 16 sessions written in parallel, 2,000 messages each, one transaction per message.
//! Every write must succeed and every row must be there, in order, counted and indexed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Barrier};

use hermes_protocol::Message;
use hermes_store::{MessageMeta, NewSession, SearchQuery, Store};

const WRITERS: usize = 16;
const MESSAGES: usize = 2_000;

#[test]
fn sixteen_parallel_writers_lose_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    drop(Store::open(&path).unwrap());
    let start = Arc::new(Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let path = path.clone();
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let mut store = Store::open(&path).unwrap();
                let id = format!("session-{w:02}");
                store
                    .create_session(&NewSession {
                        id: id.clone(),
                        source: "cli".into(),
                        ..NewSession::default()
                    })
                    .unwrap();
                start.wait();
                for i in 0..MESSAGES {
                    let m = if i % 2 == 0 {
                        Message::user(format!("writer{w} line {i}"))
                    } else {
                        Message::assistant(format!("writer{w} reply {i}"))
                    };
                    if let Err(e) = store.append_message(&id, &m, &MessageMeta::default()) {
                        panic!("writer {w}, message {i}: {e}");
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }

    let store = Store::open(&path).unwrap();
    for w in 0..WRITERS {
        let id = format!("session-{w:02}");
        let messages = store.messages(&id).unwrap();
        assert_eq!(messages.len(), MESSAGES, "{id}");
        for (i, m) in messages.iter().enumerate() {
            let kind = if i % 2 == 0 { "line" } else { "reply" };
            assert_eq!(
                m.message.content,
                format!("writer{w} {kind} {i}"),
                "{id} in order"
            );
        }
        assert_eq!(
            store.session(&id).unwrap().unwrap().message_count,
            MESSAGES as i64
        );
        let term = format!("writer{w}");
        let q = SearchQuery {
            limit: 10_000,
            session_id: Some(&id),
            ..SearchQuery::new(&term)
        };
        assert_eq!(
            store.search(&q).unwrap().len(),
            MESSAGES,
            "{id} fully indexed"
        );
    }
}

#[test]
fn many_connections_creating_the_same_new_database_all_succeed() {
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let start = Arc::new(Barrier::new(8));
        let openers: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    Store::open(&path).map(drop)
                })
            })
            .collect();
        for o in openers {
            if let Err(e) = o.join().unwrap() {
                panic!("round {round}: {e}");
            }
        }
    }
}
