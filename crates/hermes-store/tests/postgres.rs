//! The store's contract on PostgreSQL (a throwaway server): sessions and messages round-trip
//! with their counts, a streaming answer is searchable only once final, search finds and marks
//! hits in the same shape as FTS5, ids resolve by prefix, truncation and forks recount tool
//! calls. Skips with the reason when PostgreSQL is not installed.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_protocol::{Message, Role, ToolCall};
use hermes_store::{MessageMeta, NewSession, SearchQuery, StoreLocation};
use hermes_testkit::postgres::Postgres;

fn session(id: &str) -> NewSession {
    NewSession {
        id: id.into(),
        source: "cli".into(),
        model: Some("m1".into()),
        provider: Some("custom".into()),
        cwd: Some("/work".into()),
        parent_session_id: None,
        system_prompt: None,
    }
}

#[test]
fn the_store_contract_holds_on_postgres() {
    let pg = match Postgres::start() {
        Ok(pg) => pg,
        Err(reason) => {
            eprintln!("skipping: {reason}");
            return;
        }
    };
    let url = pg.create_database("h").unwrap();
    let location = StoreLocation::Postgres {
        url: url.clone(),
        schema: StoreLocation::postgres_schema(None),
    };
    let mut store = location.open().unwrap();
    store.create_session(&session("20260101_a")).unwrap();
    let meta = MessageMeta::default();
    store
        .append_message(
            "20260101_a",
            &Message::user("how do I configure nginx reverse proxies?"),
            &meta,
        )
        .unwrap();
    let call = ToolCall {
        id: "c1".into(),
        name: "terminal".into(),
        arguments: "{\"command\":\"cat /etc/nginx/nginx.conf\"}".into(),
    };
    store
        .append_message(
            "20260101_a",
            &Message::assistant_with_tools("Looking at the config.", vec![call]),
            &meta,
        )
        .unwrap();
    let partial = store
        .start_partial("20260101_a", "the upstream block")
        .unwrap();
    let q = SearchQuery::new("upstream");
    assert!(
        store.search(&q).unwrap().is_empty(),
        "partial rows stay out of search"
    );
    store
        .finish_partial(
            "20260101_a",
            partial,
            &Message::assistant("Use an upstream block and proxy_pass."),
            &meta,
        )
        .unwrap();
    let hits = store.search(&q).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id, "20260101_a");
    assert_eq!(hits[0].role, "assistant");
    assert!(
        hits[0].snippet.contains(">>>upstream<<<"),
        "{}",
        hits[0].snippet
    );
    // Tool calls are searchable, prefixes and operators work.
    assert_eq!(
        store.search(&SearchQuery::new("nginx.conf")).unwrap().len(),
        1
    );
    assert_eq!(store.search(&SearchQuery::new("confi*")).unwrap().len(), 2);
    assert_eq!(
        store
            .search(&SearchQuery::new("nginx NOT proxies"))
            .unwrap()
            .len(),
        1
    );
    let user_only = SearchQuery {
        roles: &[Role::User],
        ..SearchQuery::new("nginx")
    };
    assert_eq!(store.search(&user_only).unwrap().len(), 1);

    let record = store.resolve_session("20260101").unwrap();
    assert_eq!(record.message_count, 3);
    assert_eq!(record.tool_call_count, 1);
    let listed = store.list_sessions(10, None).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].preview,
        "how do I configure nginx reverse proxies?"
    );
    assert_eq!(store.set_title("20260101_a", "Nginx").unwrap(), "Nginx");
    assert_eq!(store.resolve_session("Nginx").unwrap().id, "20260101_a");

    // A fork copies the conversation and counts its tool calls; truncation recounts.
    let mut fork = session("20260101_b");
    fork.parent_session_id = Some("20260101_a".into());
    assert_eq!(store.fork_session(&fork).unwrap(), Some(3));
    assert_eq!(
        store
            .session("20260101_b")
            .unwrap()
            .unwrap()
            .tool_call_count,
        1
    );
    assert_eq!(store.truncate_messages("20260101_b", 1).unwrap(), 2);
    let b = store.session("20260101_b").unwrap().unwrap();
    assert_eq!((b.message_count, b.tool_call_count), (1, 0));
    let sessions_hit = store
        .search_sessions(&SearchQuery::new("nginx"), 5)
        .unwrap();
    assert_eq!(sessions_hit.len(), 2);

    // Another connection (another process, another machine) sees the same history.
    let other = location.open().unwrap();
    assert_eq!(other.messages("20260101_a").unwrap().len(), 3);
    assert!(store.delete_session("20260101_b").unwrap());
    assert!(other.session("20260101_b").unwrap().is_none());
}
