//! The store's contract on a real database file: sessions and messages round-trip, partial
//! answers stay out of search until final, titles are unique, ids resolve by prefix or title,
//! search finds and highlights, windows and bookends put a hit in context.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_protocol::{Message, Role, ToolCall, Usage};
use hermes_store::{
    MessageMeta, NewSession, SearchQuery, Store, StoreError, export, sharegpt::ShareGptTurn,
};
use serde_json::json;

fn new_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("sessions.db")).unwrap();
    (dir, store)
}

fn session(id: &str) -> NewSession {
    NewSession {
        id: id.into(),
        source: "cli".into(),
        model: Some("m1".into()),
        provider: Some("custom".into()),
        cwd: Some("/work/project".into()),
        parent_session_id: None,
        system_prompt: Some("You are Hermes.".into()),
    }
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

fn append(store: &mut Store, sid: &str, m: Message) -> i64 {
    store
        .append_message(sid, &m, &MessageMeta::default())
        .unwrap()
}

#[test]
fn messages_round_trip_with_counts_and_usage() {
    let (_dir, mut store) = new_store();
    store.create_session(&session("s1")).unwrap();
    append(&mut store, "s1", Message::user("list the files"));
    let with_tools = Message::assistant_with_tools(
        "Looking.",
        vec![call("c1", "terminal", "{\"command\":\"ls\"}")],
    )
    .with_reasoning(Some("think".into()))
    .with_reasoning_details(vec![json!({"type": "thinking", "signature": "sig"})]);
    store
        .append_message(
            "s1",
            &with_tools,
            &MessageMeta {
                finish_reason: Some("tool_calls".into()),
                token_count: Some(12),
            },
        )
        .unwrap();
    append(
        &mut store,
        "s1",
        Message::tool_result("c1", "terminal", "a b"),
    );
    store
        .record_usage(
            "s1",
            &Usage {
                input_tokens: 100,
                output_tokens: 12,
                cache_read_tokens: 40,
                ..Usage::default()
            },
            None,
        )
        .unwrap();
    store.record_api_call("s1").unwrap();

    let conv = store.conversation("s1").unwrap();
    assert_eq!(conv.len(), 3);
    assert_eq!(
        conv[1], with_tools,
        "every field survives, reasoning details included"
    );
    assert_eq!(conv[2].tool_call_id.as_deref(), Some("c1"));

    let stored = store.messages("s1").unwrap();
    assert_eq!(stored[1].finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(stored[1].token_count, Some(12));
    assert!(stored.windows(2).all(|w| w[0].id < w[1].id));

    let s = store.session("s1").unwrap().unwrap();
    assert_eq!(
        (s.message_count, s.tool_call_count, s.api_call_count),
        (3, 1, 1)
    );
    assert_eq!(
        (s.input_tokens, s.output_tokens, s.cache_read_tokens),
        (100, 12, 40)
    );
    assert_eq!(s.estimated_cost_usd, None, "unknown cost stays unknown");
    assert_eq!(s.system_prompt.as_deref(), Some("You are Hermes."));
}

#[test]
fn a_streaming_answer_is_searchable_only_once_final() {
    let (_dir, mut store) = new_store();
    store.create_session(&session("s1")).unwrap();
    append(&mut store, "s1", Message::user("hello"));
    let row = store.start_partial("s1", "The zebra").unwrap();
    store.update_partial(row, "The zebra crossing is").unwrap();
    assert!(store.search(&SearchQuery::new("zebra")).unwrap().is_empty());
    let conv = store.conversation("s1").unwrap();
    assert_eq!(
        conv[1].content, "The zebra crossing is",
        "partial text is kept"
    );
    assert_eq!(store.session("s1").unwrap().unwrap().message_count, 1);

    store
        .finish_partial(
            "s1",
            row,
            &Message::assistant("The zebra crossing is safe."),
            &MessageMeta::default(),
        )
        .unwrap();
    let hits = store.search(&SearchQuery::new("zebra")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(
        hits[0].message_id, row,
        "the partial row became the message"
    );
    assert_eq!(store.session("s1").unwrap().unwrap().message_count, 2);
}

#[test]
fn sealing_keeps_interrupted_text_and_drops_empty_rows() {
    let (_dir, mut store) = new_store();
    store.create_session(&session("s1")).unwrap();
    append(&mut store, "s1", Message::user("go"));
    store.start_partial("s1", "half an ans").unwrap();
    store.start_partial("s1", "").unwrap();
    assert_eq!(store.seal_partials("s1").unwrap(), 1);
    let stored = store.messages("s1").unwrap();
    assert_eq!(stored.len(), 2);
    assert!(!stored[1].partial);
    assert_eq!(stored[1].finish_reason.as_deref(), Some("interrupted"));
    assert_eq!(store.search(&SearchQuery::new("half")).unwrap().len(), 1);
}

#[test]
fn titles_are_unique_and_auto_titles_are_numbered() {
    let (_dir, mut store) = new_store();
    for id in ["s1", "s2", "s3"] {
        store.create_session(&session(id)).unwrap();
    }
    assert_eq!(
        store.set_title("s1", "  Deploy   fix ").unwrap(),
        "Deploy fix"
    );
    let err = store.set_title("s2", "Deploy fix").unwrap_err();
    assert!(
        matches!(&err, StoreError::TitleTaken { session_id, .. } if session_id == "s1"),
        "{err}"
    );
    assert_eq!(
        store
            .set_auto_title("s2", "Deploy fix\nmore")
            .unwrap()
            .as_deref(),
        Some("Deploy fix #2")
    );
    assert_eq!(
        store.set_auto_title("s2", "something else").unwrap(),
        None,
        "a titled session keeps its title"
    );
    assert!(matches!(
        store.set_title("nope", "x"),
        Err(StoreError::SessionNotFound(_))
    ));
}

#[test]
fn sessions_resolve_by_id_title_or_unique_prefix() {
    let (_dir, mut store) = new_store();
    for id in [
        "20250101_100000_aaaaaa",
        "20250101_100000_abbbbb",
        "20250202_090000_cccccc",
    ] {
        store.create_session(&session(id)).unwrap();
    }
    store
        .set_title("20250202_090000_cccccc", "release notes")
        .unwrap();
    assert_eq!(
        store.resolve_session("20250101_100000_abbbbb").unwrap().id,
        "20250101_100000_abbbbb"
    );
    assert_eq!(
        store.resolve_session("release notes").unwrap().id,
        "20250202_090000_cccccc"
    );
    assert_eq!(
        store.resolve_session("20250202").unwrap().id,
        "20250202_090000_cccccc"
    );
    let err = store.resolve_session("20250101_100000_a").unwrap_err();
    assert!(matches!(err, StoreError::Ambiguous { .. }), "{err}");
    assert!(err.to_string().contains("20250101_100000_aaaaaa"), "{err}");
    assert!(
        matches!(
            store.resolve_session("2025%"),
            Err(StoreError::SessionNotFound(_))
        ),
        "LIKE wildcards are literal"
    );
}

#[test]
fn latest_session_prefers_this_directory() {
    let (_dir, mut store) = new_store();
    let mut a = session("a");
    a.cwd = Some("/here".into());
    let mut b = session("b");
    b.cwd = Some("/elsewhere".into());
    store.create_session(&a).unwrap();
    store.create_session(&b).unwrap();
    append(&mut store, "a", Message::user("x"));
    std::thread::sleep(std::time::Duration::from_millis(5));
    append(&mut store, "b", Message::user("y"));
    assert_eq!(
        store.latest_session(Some("/here")).unwrap().unwrap().id,
        "a"
    );
    assert_eq!(
        store.latest_session(Some("/nowhere")).unwrap().unwrap().id,
        "b"
    );
    assert_eq!(store.latest_session(None).unwrap().unwrap().id, "b");
    let listed = store.list_sessions(10, None).unwrap();
    assert_eq!(listed[0].session.id, "b");
    assert_eq!(listed[0].preview, "y");
}

#[test]
fn search_ranks_filters_and_highlights() {
    let (_dir, mut store) = new_store();
    store.create_session(&session("s1")).unwrap();
    store.create_session(&session("s2")).unwrap();
    append(
        &mut store,
        "s1",
        Message::user("How do I configure the kubernetes ingress?"),
    );
    append(
        &mut store,
        "s1",
        Message::assistant("Use an ingress controller; kubernetes ingress needs one."),
    );
    append(
        &mut store,
        "s2",
        Message::user("Tell me about docker-compose networking"),
    );
    append(
        &mut store,
        "s2",
        Message::assistant_with_tools(
            "",
            vec![call(
                "c1",
                "terminal",
                "{\"command\":\"kubectl get ingress\"}",
            )],
        ),
    );
    append(
        &mut store,
        "s2",
        Message::tool_result("c1", "terminal", "ingress-nginx running"),
    );

    let q = SearchQuery {
        roles: &[Role::User, Role::Assistant],
        ..SearchQuery::new("kubernetes ingress")
    };
    let hits = store.search(&q).unwrap();
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| h.session_id == "s1"));
    assert!(
        hits[0].snippet.contains(">>>kubernetes<<<"),
        "{}",
        hits[0].snippet
    );

    let tools = SearchQuery {
        roles: &[Role::Tool],
        ..SearchQuery::new("nginx")
    };
    assert_eq!(store.search(&tools).unwrap()[0].role, "tool");
    let args = store.search(&SearchQuery::new("kubectl")).unwrap();
    assert_eq!(args.len(), 1, "tool call arguments are indexed");

    let phrase = store.search(&SearchQuery::new("docker-compose")).unwrap();
    assert_eq!(phrase.len(), 1, "punctuated terms search as phrases");
    let excluded = SearchQuery {
        exclude_session_id: Some("s1"),
        ..SearchQuery::new("ingress")
    };
    assert!(
        store
            .search(&excluded)
            .unwrap()
            .iter()
            .all(|h| h.session_id == "s2")
    );
    let per_session = store
        .search_sessions(&SearchQuery::new("ingress"), 10)
        .unwrap();
    assert_eq!(per_session.len(), 2, "one hit per session");
    assert!(
        store
            .search(&SearchQuery::new("\" OR ("))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn windows_and_bookends_frame_a_hit() {
    let (_dir, mut store) = new_store();
    store.create_session(&session("s1")).unwrap();
    let ids: Vec<i64> = (0..20)
        .map(|i| {
            let m = if i % 2 == 0 {
                Message::user(format!("question {i}"))
            } else {
                Message::assistant(format!("answer {i}"))
            };
            append(&mut store, "s1", m)
        })
        .collect();
    let w = store.messages_around("s1", ids[10], 3).unwrap().unwrap();
    let got: Vec<i64> = w.messages.iter().map(|m| m.id).collect();
    assert_eq!(got, ids[7..14].to_vec());
    assert_eq!((w.more_before, w.more_after), (7, 6));
    let edge = store.messages_around("s1", ids[1], 5).unwrap().unwrap();
    assert_eq!(edge.messages.len(), 7);
    assert_eq!(edge.more_before, 0);
    assert!(store.messages_around("s1", 999_999, 3).unwrap().is_none());
    assert!(store.messages_around("other", ids[3], 3).unwrap().is_none());

    let (start, end) = store.bookends("s1", ids[7], ids[13], 3).unwrap();
    assert_eq!(
        start.iter().map(|m| m.id).collect::<Vec<_>>(),
        ids[0..3].to_vec()
    );
    assert_eq!(
        end.iter().map(|m| m.id).collect::<Vec<_>>(),
        ids[17..20].to_vec()
    );
}

#[test]
fn delete_and_prune_remove_sessions_with_their_messages_and_index() {
    let (dir, mut store) = new_store();
    store.create_session(&session("old")).unwrap();
    store.create_session(&session("new")).unwrap();
    append(&mut store, "old", Message::user("ancient walrus"));
    append(&mut store, "new", Message::user("recent walrus"));
    let raw = rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap();
    raw.execute(
        "UPDATE sessions SET updated_at = ?1 WHERE id = 'old'",
        [hermes_store::time::now() - 40.0 * 86_400.0],
    )
    .unwrap();
    assert_eq!(
        store.prune_sessions(30.0 * 86_400.0).unwrap(),
        vec!["old".to_string()]
    );
    assert!(store.session("old").unwrap().is_none());
    assert!(store.messages("old").unwrap().is_empty());
    let hits = store.search(&SearchQuery::new("walrus")).unwrap();
    assert_eq!(hits.len(), 1, "the index forgets deleted messages");
    assert!(store.delete_session("new").unwrap());
    assert!(!store.delete_session("new").unwrap());
    assert!(
        store
            .search(&SearchQuery::new("walrus"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn exports_carry_the_session_and_its_messages() {
    let (_dir, mut store) = new_store();
    store.create_session(&session("s1")).unwrap();
    append(&mut store, "s1", Message::user("hi"));
    append(&mut store, "s1", Message::assistant("hello"));
    let record = store.session("s1").unwrap().unwrap();
    let messages = store.messages("s1").unwrap();
    let v = export::session_json(&record, &messages);
    assert_eq!(v["id"], "s1");
    assert_eq!(v["model"], "m1");
    assert_eq!(v["messages"][1]["role"], "assistant");
    assert_eq!(v["messages"][1]["content"], "hello");
    let t = export::session_trajectory(&record, &messages);
    assert!(t.completed);
    assert_eq!(
        t.conversations[1],
        ShareGptTurn {
            from: "human",
            value: "hi".into()
        }
    );
    assert_eq!(t.conversations[0].value, "You are Hermes.");
}

#[test]
fn only_the_most_recent_thousand_matches_are_ranked_unless_searching_one_session() {
    let (_dir, mut store) = new_store();
    store.create_session(&session("old")).unwrap();
    store.create_session(&session("new")).unwrap();
    let old = append(&mut store, "old", Message::user("common needle"));
    for i in 0..1_000 {
        append(
            &mut store,
            "new",
            Message::user(format!("common filler {i}")),
        );
    }
    let everywhere = SearchQuery {
        limit: 5_000,
        ..SearchQuery::new("common")
    };
    let hits = store.search(&everywhere).unwrap();
    assert_eq!(hits.len(), 1_000, "ranked within the newest 1,000 matches");
    assert!(hits.iter().all(|h| h.message_id != old));
    let in_old = SearchQuery {
        session_id: Some("old"),
        ..SearchQuery::new("common")
    };
    assert_eq!(store.search(&in_old).unwrap()[0].message_id, old);
    assert_eq!(
        store.search(&SearchQuery::new("needle")).unwrap()[0].message_id,
        old
    );
}

#[test]
fn phrase_queries_list_matches_newest_first() {
    let (_dir, mut store) = new_store();
    store.create_session(&session("s1")).unwrap();
    let first = append(
        &mut store,
        "s1",
        Message::user("docker networking docker networking bridge"),
    );
    let second = append(
        &mut store,
        "s1",
        Message::user("a long message that mentions docker networking once among many other words"),
    );
    let _unrelated = append(&mut store, "s1", Message::user("networking for docker"));
    let hits = store
        .search(&SearchQuery::new("\"docker networking\""))
        .unwrap();
    let ids: Vec<i64> = hits.iter().map(|h| h.message_id).collect();
    assert_eq!(ids, [second, first], "only exact phrases, newest first");
    let ranked = store
        .search(&SearchQuery::new("docker networking"))
        .unwrap();
    assert_eq!(ranked.len(), 3);
    assert_eq!(ranked[0].message_id, first, "plain words rank by BM25");
}

#[test]
fn closing_keeps_the_wal_so_exits_cost_no_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let mut store = Store::open(&path).unwrap();
    store.create_session(&session("s1")).unwrap();
    append(&mut store, "s1", Message::user("kept"));
    drop(store);
    assert!(
        dir.path().join("sessions.db-wal").exists(),
        "no checkpoint-and-delete on close"
    );
    let store = Store::open(&path).unwrap();
    assert_eq!(store.conversation("s1").unwrap()[0].content, "kept");
}

#[test]
fn truncating_takes_back_the_tail_with_its_counts_and_index() {
    let (_dir, mut store) = new_store();
    store.create_session(&session("s1")).unwrap();
    append(&mut store, "s1", Message::user("first question"));
    append(&mut store, "s1", Message::assistant("first answer"));
    append(
        &mut store,
        "s1",
        Message::user("second question about zebras"),
    );
    append(
        &mut store,
        "s1",
        Message::assistant_with_tools("", vec![call("c1", "terminal", "{}")]),
    );
    store.start_partial("s1", "half").unwrap();
    assert_eq!(store.truncate_messages("s1", 2).unwrap(), 3);
    assert_eq!(
        contents_of(&store, "s1"),
        ["first question", "first answer"]
    );
    let s = store.session("s1").unwrap().unwrap();
    assert_eq!((s.message_count, s.tool_call_count), (2, 0));
    assert!(
        store
            .search(&SearchQuery::new("zebras"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.truncate_messages("s1", 5).unwrap(), 0);
}

fn contents_of(store: &Store, sid: &str) -> Vec<String> {
    store
        .messages(sid)
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect()
}
