//! Fallback providers and credential rotation: when the primary fails for good the next
//! `fallback_providers` entry answers (and keeps answering for the session); a rejected key of
//! a pool is rotated without spending a retry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use hermes_core::{Agent, ModelTarget, NoEvents};
use hermes_llm::pool::{CredentialPool, PooledProvider, Strategy};
use hermes_llm::{HttpTimeouts, WireFormat};
use hermes_protocol::AgentEvent;
use hermes_testkit::{Fault, MockServer, Script, Turn};
use hermes_tools::{Registry, ToolContext};
use tokio_util::sync::CancellationToken;

fn target(server: &MockServer, model: &str) -> ModelTarget {
    let mut s = spec(server);
    s.model = model.into();
    ModelTarget {
        provider: hermes_llm::build_provider(&s, &HttpTimeouts::default()).unwrap(),
        model: model.into(),
    }
}

#[tokio::test]
async fn auth_failure_falls_back_at_once_and_stays_there() {
    let primary = MockServer::start(Script::new(vec![Fault::http(401, "bad key").into()]));
    let backup = MockServer::start(Script::new(vec![
        Turn::text("from backup"),
        Turn::text("still backup"),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&primary, tmp.path(), fast_options())
        .with_fallbacks(vec![target(&backup, "backup-model")]);
    let rec = Recorder::default();
    let r = agent
        .run_turn("hi", Vec::new(), &rec, CancellationToken::new())
        .await;
    assert_eq!(r.final_text, "from backup");
    assert!(!r.failed());
    assert_eq!(
        primary.chat_requests().len(),
        1,
        "auth errors are not retried"
    );
    assert_eq!(backup.chat_requests()[0]["model"], "backup-model");
    let notes: Vec<String> = rec
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Status(s) => Some(s),
            _ => None,
        })
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("falling back to backup-model")),
        "{notes:?}"
    );
    assert_eq!(agent.model(), "backup-model");

    let r = agent
        .run_turn("again", r.messages, &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(r.final_text, "still backup");
    assert_eq!(
        primary.chat_requests().len(),
        1,
        "the session stays on the fallback"
    );
}

#[tokio::test]
async fn exhausted_retries_fall_back_and_the_last_failure_is_reported() {
    let e = || Turn::from(Fault::http(503, "unavailable"));
    let primary = MockServer::start(Script::new(vec![e(), e(), e(), e()]));
    let backup = MockServer::start(Script::new(vec![
        Fault::http(404, "model `x` does not exist").into(),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let agent =
        agent(&primary, tmp.path(), fast_options()).with_fallbacks(vec![target(&backup, "x")]);
    let r = agent
        .run_turn("hi", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(primary.chat_requests().len(), 4);
    assert_eq!(backup.chat_requests().len(), 1);
    let err = r.failure().unwrap().message.clone();
    assert!(err.contains("HTTP 404"), "{err}");
}

#[tokio::test]
async fn a_rejected_pool_key_is_rotated_without_spending_a_retry() {
    let server = MockServer::start(Script::new(vec![
        Fault::http(401, "bad key").into(),
        Turn::text("second key worked"),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let pool = Arc::new(CredentialPool::new(
        "custom",
        vec!["sk-one".into(), "sk-two".into()],
        Strategy::FillFirst,
        Some(tmp.path().join("pool.json")),
    ));
    let base = spec(&server);
    let provider = Arc::new(PooledProvider::new(
        pool,
        "custom",
        &server.base_url(),
        move |key| {
            let mut s = base.clone();
            s.api_key = Some(key.into());
            assert_eq!(s.wire, WireFormat::OpenAiChat);
            hermes_llm::build_provider(&s, &HttpTimeouts::default())
        },
    ));
    let agent = Agent::new(
        provider,
        Registry::builtin(),
        "sys".into(),
        fast_options(),
        ToolContext::new(tmp.path().into()),
    );
    let r = agent
        .run_turn("hi", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(r.final_text, "second key worked");
    let reqs = server.requests();
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-one"));
    assert_eq!(reqs[1].header("authorization"), Some("Bearer sk-two"));
    assert!(
        tmp.path().join("pool.json").exists(),
        "the cooldown is persisted"
    );
}

#[tokio::test]
async fn cost_is_estimated_for_known_models_only() {
    let server = MockServer::start(Script::new(vec![
        hermes_testkit::Reply::text("ok")
            .with_usage(hermes_testkit::MockUsage {
                prompt_tokens: 1_000_000,
                completion_tokens: 0,
                cached_tokens: 0,
            })
            .into(),
        Turn::text("ok"),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let priced = agent(
        &server,
        tmp.path(),
        hermes_core::AgentOptions {
            model: "gpt-4o-mini".into(),
            ..fast_options()
        },
    );
    let r = priced
        .run_turn("hi", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert!(
        (r.cost_usd.unwrap() - 0.15).abs() < 1e-9,
        "{:?}",
        r.cost_usd
    );
    let unknown = agent(&server, tmp.path(), fast_options());
    let r = unknown
        .run_turn("hi", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(r.cost_usd, None);
}
