//! Bounds on what a provider sends, measured in this process (nextest runs each test in its
//! own process, so `VmHWM` is this test's peak): an endless stream, an endless SSE event and a
//! trickle of keep-alives each end the turn with a clear error naming the bound it crossed,
//! under 100 MB resident.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use hermes_core::{Agent, NoEvents};
use hermes_llm::{HttpTimeouts, ProviderOptions, StreamLimits};
use hermes_testkit::{Fault, MockServer, Script, own_peak_rss_kib};
use hermes_tools::{Registry, ToolContext};
use tokio_util::sync::CancellationToken;

const MAX_RSS_KIB: u64 = 100 * 1024;

fn limits() -> StreamLimits {
    StreamLimits {
        max_answer_bytes: 512 * 1024,
        max_event_bytes: 64 * 1024,
        idle: Duration::from_secs(1),
        total: Duration::from_secs(20),
    }
}

async fn turn_against(fault: Fault) -> (String, usize) {
    let server = MockServer::start(Script::new(vec![fault.into()]));
    let tmp = tempfile::tempdir().unwrap();
    let options = ProviderOptions {
        timeouts: HttpTimeouts {
            connect: Duration::from_secs(5),
            idle: Duration::from_secs(60),
        },
        limits: limits(),
        ..ProviderOptions::default()
    };
    let provider = hermes_llm::build_provider_with(&spec(&server), &options).unwrap();
    let mut opts = fast_options();
    opts.retry.max_retries = 0;
    let agent = Agent::new(
        provider,
        Registry::builtin(),
        "You are a test agent.".into(),
        opts,
        ToolContext::new(tmp.path().to_path_buf()),
    );
    let result = agent
        .run_turn("go", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    let peak = own_peak_rss_kib().unwrap_or(0);
    assert!(peak < MAX_RSS_KIB, "peak resident memory {peak} KiB");
    (
        result
            .failure()
            .map(|f| f.message.clone())
            .unwrap_or_default(),
        server.chat_request_count(),
    )
}

#[tokio::test]
async fn an_endless_stream_ends_the_turn_at_the_answer_cap() {
    let (error, requests) = turn_against(Fault::EndlessStream {
        piece: "x".repeat(500),
    })
    .await;
    assert!(
        error.contains("the response exceeded 524288 bytes"),
        "{error}"
    );
    assert_eq!(requests, 1);
}

#[tokio::test]
async fn an_endless_sse_event_ends_the_turn_at_the_event_cap() {
    let (error, _) = turn_against(Fault::EndlessEvent {
        line: "y".repeat(200),
    })
    .await;
    assert!(
        error.contains("one stream event exceeded 65536 bytes"),
        "{error}"
    );
}

#[tokio::test]
async fn keep_alives_are_not_progress() {
    let (error, _) = turn_against(Fault::Trickle { every_ms: 20 }).await;
    assert!(
        error.contains("no progress from the provider for 1s"),
        "{error}"
    );
}
