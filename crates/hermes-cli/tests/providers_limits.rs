//! Nothing a provider sends is unbounded, through the binary: an endless stream, one SSE
//! event of endless `data:` lines, and a stream that only trickles keep-alives each end the
//! turn with a clear error (exit 1), within the deadline configured here and under 100 MB of
//! resident memory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_testkit::{Fault, MockServer, Script, TestHome, run_measured};

/// The resident-memory bound of the issue.
const MAX_RSS_KIB: u64 = 100 * 1024;

/// Small limits so each case ends quickly: 256 KiB of answer, 64 KiB per event, 1 s without
/// progress, 30 s in all; `retries` retries 100 ms apart.
fn limited_home(server: &MockServer, retries: u32) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}agent:\n  api_max_retries: {retries}\n  retry_base_delay: 0.1\n  stream_max_bytes: 262144\n  stream_max_event_bytes: 65536\nproviders:\n  custom:\n    stale_timeout_seconds: 1\n    request_timeout_seconds: 30\n",
        hermes_testkit::mock_config_yaml(server)
    ));
    home
}

/// Runs `-z` against a single fault and returns stderr, checking exit 1, that the fault was
/// not retried (a stall would be: `retries` 0 for it) and the memory bound.
fn run_fault(fault: Fault, retries: u32) -> String {
    let server = MockServer::start(Script::new(vec![fault.into()]));
    let home = limited_home(&server, retries);
    let mut cmd = home.command(bin());
    cmd.args(["-z", "hi"]);
    let measured = run_measured(cmd).unwrap();
    let err = String::from_utf8_lossy(&measured.output.stderr).into_owned();
    assert_eq!(measured.output.status.code(), Some(1), "{err}");
    assert_eq!(server.chat_request_count(), 1, "not retried: {err}");
    if cfg!(target_os = "linux") {
        let peak = measured
            .peak_rss_kib
            .expect("the child's VmHWM could be read");
        assert!(peak < MAX_RSS_KIB, "peak resident memory {peak} KiB");
    }
    err
}

#[test]
fn an_endless_stream_is_cut_at_the_answer_cap() {
    let err = run_fault(
        Fault::EndlessStream {
            piece: "all work and no play ".repeat(20),
        },
        3,
    );
    assert!(
        err.contains("the response exceeded 262144 bytes") && err.contains("stream_max_bytes"),
        "{err}"
    );
}

#[test]
fn an_endless_sse_event_is_cut_at_the_event_cap() {
    let err = run_fault(
        Fault::EndlessEvent {
            line: "{\"choices\": [{\"delta\": {\"content\": \"x\"}}]}".into(),
        },
        3,
    );
    assert!(
        err.contains("one stream event exceeded 65536 bytes")
            && err.contains("stream_max_event_bytes"),
        "{err}"
    );
}

#[test]
fn a_stream_of_keep_alives_ends_at_the_idle_deadline() {
    let err = run_fault(Fault::Trickle { every_ms: 50 }, 0);
    assert!(
        err.contains("no progress from the provider for 1s")
            && err.contains("keep-alives do not count"),
        "{err}"
    );
}

#[test]
fn a_slow_but_steady_answer_ends_at_the_overall_deadline() {
    // Text every 200 ms is progress (the idle deadline never passes), but the whole answer
    // may take 2 s at most.
    let server = MockServer::start(Script::new(vec![
        hermes_testkit::Reply::text("word ".repeat(200))
            .with_chunk_size(5)
            .with_chunk_delay_ms(200)
            .into(),
    ]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}agent:\n  retry_base_delay: 0.1\nproviders:\n  custom:\n    stale_timeout_seconds: 1\n    request_timeout_seconds: 2\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("the response took longer than 2s"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        server.chat_request_count(),
        1,
        "a spent deadline is not retried"
    );
}
