//! What API clients see of the store: empty sessions with titles, forks carrying their parent's
//! conversation, the listing that hides child sessions but keeps forks, paging, lineage titles.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_protocol::{Message, ToolCall};
use hermes_store::{BRANCHED, MessageMeta, NewSession, SessionPage, Store, StoreError};

fn new(id: &str, parent: Option<&str>) -> NewSession {
    NewSession {
        id: id.into(),
        source: "api".into(),
        parent_session_id: parent.map(str::to_string),
        ..NewSession::default()
    }
}

fn page(limit: usize, offset: usize, include_children: bool) -> SessionPage<'static> {
    SessionPage {
        limit,
        offset,
        source: None,
        include_children,
    }
}

fn ids(store: &Store, p: &SessionPage<'_>) -> Vec<String> {
    store
        .list_sessions_page(p)
        .unwrap()
        .into_iter()
        .map(|s| s.session.id)
        .collect()
}

#[test]
fn forks_copy_the_conversation_and_are_listed_unlike_other_children() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("sessions.db")).unwrap();
    assert!(
        store
            .create_empty_session(&new("a", None), Some("Ada"))
            .unwrap()
    );
    assert!(!store.create_empty_session(&new("a", None), None).unwrap());
    let err = store
        .create_empty_session(&new("b", None), Some("Ada"))
        .unwrap_err();
    assert!(matches!(err, StoreError::TitleTaken { .. }), "{err}");
    assert!(store.session("b").unwrap().is_none());

    let meta = MessageMeta::default();
    store
        .append_message("a", &Message::user("hi"), &meta)
        .unwrap();
    let call = Message::assistant_with_tools(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "terminal".into(),
            arguments: "{}".into(),
        }],
    );
    store.append_message("a", &call, &meta).unwrap();
    store.start_partial("a", "half an answ").unwrap();
    // A continuation (not a fork) is hidden from the default listing.
    store.create_session(&new("cont", Some("a"))).unwrap();

    assert_eq!(store.fork_session(&new("f", Some("a"))).unwrap(), Some(2));
    assert_eq!(store.fork_session(&new("f", Some("a"))).unwrap(), None);
    let fork = store.session("f").unwrap().unwrap();
    assert_eq!(fork.parent_session_id.as_deref(), Some("a"));
    assert_eq!((fork.message_count, fork.tool_call_count), (2, 1));
    let copied: Vec<Message> = store.conversation("f").unwrap();
    assert_eq!(copied.len(), 2);
    assert_eq!(copied[0].content, "hi");
    assert_eq!(copied[1].tool_calls[0].name, "terminal");
    let parent = store.session("a").unwrap().unwrap();
    assert_eq!(parent.end_reason.as_deref(), Some(BRANCHED));

    // Branched parents make their children visible: the fork, and here the continuation too.
    let mut listed = ids(&store, &page(10, 0, false));
    listed.sort();
    assert_eq!(listed, ["a", "cont", "f"]);
    store.end_session("a", "cli_close").unwrap();
    let mut listed = ids(&store, &page(10, 0, false));
    listed.sort();
    assert_eq!(listed, ["a"]);
    assert_eq!(ids(&store, &page(10, 0, true)).len(), 3);
    assert_eq!(ids(&store, &page(1, 0, true)).len(), 1);
    assert_eq!(ids(&store, &page(10, 2, true)).len(), 1);
    // The count is of every page.
    assert_eq!(store.count_sessions_page(&page(1, 0, false)).unwrap(), 1);
    assert_eq!(store.count_sessions_page(&page(1, 0, true)).unwrap(), 3);

    // Lineage titles.
    assert_eq!(store.next_title_in_lineage("Ada").unwrap(), "Ada #2");
    store.set_title("f", "Ada #2").unwrap();
    assert_eq!(store.next_title_in_lineage("Ada #2").unwrap(), "Ada #3");
    assert_eq!(store.next_title_in_lineage("Bob").unwrap(), "Bob");
    assert!(store.clear_title("a").unwrap());
    assert_eq!(store.session("a").unwrap().unwrap().title, None);
    assert!(!store.clear_title("nope").unwrap());
}
