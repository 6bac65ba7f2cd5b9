//! The API server over a fake turn runner: routes, auth, request errors, the JSON answer, the
//! SSE chunk stream with tool progress and usage, the concurrency limit, cancellation when the
//! client leaves and at shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hermes_core::EventSink;
use hermes_gateway::api_server::{
    ApiServer, ApiServerConfig, RunnerError, TurnInput, TurnOutcome, TurnRunner,
};
use hermes_protocol::{AgentEvent, ErrorClass, TurnEnd, Usage};
use hermes_testkit::http_client::{HttpReply, parse_reply, request_text, sse_events};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Fake {
    cancelled: AtomicUsize,
    seen: std::sync::Mutex<Vec<TurnInput>>,
}

#[async_trait::async_trait]
impl TurnRunner for Fake {
    async fn run(
        &self,
        input: TurnInput,
        events: Arc<dyn EventSink>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, RunnerError> {
        self.seen.lock().unwrap().push(input.clone());
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 4,
            ..Usage::default()
        };
        match input.user.as_str() {
            "setup" => {
                return Err(RunnerError {
                    message: "config.yaml is broken".into(),
                });
            }
            "fail" => {
                return Ok(TurnOutcome {
                    end: TurnEnd::failed(ErrorClass::ServerError, "provider said 500"),
                    ..TurnOutcome::default()
                });
            }
            "hang" => {
                events.emit(AgentEvent::TextDelta("waiting".into()));
                cancel.cancelled().await;
                self.cancelled.fetch_add(1, Ordering::SeqCst);
                return Ok(TurnOutcome {
                    end: TurnEnd::Interrupted,
                    ..TurnOutcome::default()
                });
            }
            "tool" => {
                events.emit(AgentEvent::ToolStarted {
                    call_id: "c1".into(),
                    name: "terminal".into(),
                    preview: "ls".into(),
                });
                events.emit(AgentEvent::ToolFinished {
                    call_id: "c1".into(),
                    name: "terminal".into(),
                    duration: Duration::from_millis(1),
                    ok: true,
                });
            }
            _ => {}
        }
        let text = format!(
            "echo {} (history {}, system {:?})",
            input.user,
            input.history.len(),
            input.system.as_deref().unwrap_or("")
        );
        let (a, b) = text.split_at(5);
        events.emit(AgentEvent::TextDelta(a.into()));
        events.emit(AgentEvent::TextDelta(b.into()));
        Ok(TurnOutcome {
            final_text: text,
            end: TurnEnd::Completed,
            usage,
            session_id: Some("20260101_000000_abc".into()),
        })
    }
}

struct Server {
    addr: SocketAddr,
    fake: Arc<Fake>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(config: ApiServerConfig) -> Server {
    let fake = Arc::new(Fake::default());
    let server = ApiServer::bind(
        ApiServerConfig {
            host: "127.0.0.1".into(),
            port: 0,
            ..config
        },
        fake.clone(),
    )
    .await
    .unwrap();
    let addr = server.local_addr().unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn(server.serve(stop.clone()));
    Server {
        addr,
        fake,
        stop,
        task,
    }
}

/// One HTTP/1.1 request with `Connection: close`; a chunked body is decoded.
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> HttpReply {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request_text(method, path, headers, body).as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    parse_reply(&String::from_utf8(raw).unwrap()).unwrap()
}

fn events(body: &str) -> Vec<(Option<String>, String)> {
    sse_events(body)
}

const CHAT: &str = r#"{"model":"hermes-agent","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"hello"}]}"#;

#[tokio::test]
async fn health_and_models() {
    let srv = start(ApiServerConfig {
        version: "9.9".into(),
        ..ApiServerConfig::default()
    })
    .await;
    let r = http(srv.addr, "GET", "/health", &[], "").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"status": "ok", "platform": "hermes-agent", "version": "9.9"})
    );
    let r = http(srv.addr, "GET", "/v1/models", &[], "").await;
    assert_eq!(r.status, 200);
    let m = r.json();
    assert_eq!(m["object"], "list");
    assert_eq!(m["data"][0]["id"], "hermes-agent");
    assert_eq!(m["data"][0]["object"], "model");
    let r = http(srv.addr, "GET", "/nope", &[], "").await;
    assert_eq!(r.status, 404);
    srv.stop.cancel();
    srv.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_key_is_required_when_set() {
    let srv = start(ApiServerConfig {
        key: Some("sekrit".into()),
        ..ApiServerConfig::default()
    })
    .await;
    for headers in [&[][..], &["Authorization: Bearer wrong"][..]] {
        let r = http(srv.addr, "POST", "/v1/chat/completions", headers, CHAT).await;
        assert_eq!(r.status, 401);
        assert_eq!(
            r.json(),
            json!({"error": {"message": "Invalid API key", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})
        );
        let r = http(srv.addr, "GET", "/v1/models", headers, "").await;
        assert_eq!(r.status, 401);
    }
    let ok = ["Authorization: Bearer sekrit"];
    let r = http(srv.addr, "POST", "/v1/chat/completions", &ok, CHAT).await;
    assert_eq!(r.status, 200);
    // Health stays open, for load balancers.
    assert_eq!(http(srv.addr, "GET", "/health", &[], "").await.status, 200);
    assert!(srv.fake.seen.lock().unwrap().len() == 1);
}

#[tokio::test]
async fn non_loopback_bind_without_key_is_refused() {
    let err = ApiServer::bind(
        ApiServerConfig {
            host: "0.0.0.0".into(),
            port: 0,
            ..ApiServerConfig::default()
        },
        Arc::new(Fake::default()),
    )
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("API_SERVER_KEY"), "{err}");
}

#[tokio::test]
async fn answer_as_json_with_history_and_system() {
    let srv = start(ApiServerConfig::default()).await;
    let r = http(srv.addr, "POST", "/v1/chat/completions", &[], CHAT).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.head
            .to_ascii_lowercase()
            .contains("x-hermes-session-id: 20260101_000000_abc")
    );
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(v["model"], "hermes-agent");
    assert_eq!(
        v["choices"],
        json!([{"index": 0, "message": {"role": "assistant", "content": "echo hello (history 2, system \"Be brief.\")"}, "finish_reason": "stop"}])
    );
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14})
    );
    let seen = srv.fake.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0].history,
        vec![
            hermes_protocol::Message::user("first"),
            hermes_protocol::Message::assistant("ok")
        ]
    );
}

#[tokio::test]
async fn failures_have_openai_error_shapes() {
    let srv = start(ApiServerConfig::default()).await;
    let chat = |u: &str| json!({"messages": [{"role": "user", "content": u}]}).to_string();
    let r = http(srv.addr, "POST", "/v1/chat/completions", &[], &chat("fail")).await;
    assert_eq!(r.status, 502);
    assert_eq!(
        r.json(),
        json!({"error": {"message": "provider said 500", "type": "upstream_error", "param": null, "code": "upstream_error"}})
    );
    let r = http(
        srv.addr,
        "POST",
        "/v1/chat/completions",
        &[],
        &chat("setup"),
    )
    .await;
    assert_eq!(r.status, 500);
    assert_eq!(r.json()["error"]["message"], "config.yaml is broken");
    let r = http(
        srv.addr,
        "POST",
        "/v1/chat/completions",
        &[],
        "{\"messages\": 3}",
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        json!({"error": {"message": "Missing or invalid 'messages' field", "type": "invalid_request_error", "param": "messages", "code": null}})
    );
    let r = http(srv.addr, "POST", "/v1/chat/completions", &[], "{oops").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn streamed_chunks_tool_progress_and_usage() {
    let srv = start(ApiServerConfig::default()).await;
    let body = json!({
        "messages": [{"role": "user", "content": "tool"}],
        "stream": true,
        "stream_options": {"include_usage": true},
    })
    .to_string();
    let r = http(srv.addr, "POST", "/v1/chat/completions", &[], &body).await;
    assert_eq!(r.status, 200);
    assert!(
        r.head
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream")
    );
    let evs = events(&r.body);
    let (last, evs) = evs.split_last().unwrap();
    assert_eq!(last, &(None, "[DONE]".to_string()));
    let parsed: Vec<(Option<String>, Value)> = evs
        .iter()
        .map(|(n, d)| (n.clone(), serde_json::from_str(d).unwrap()))
        .collect();
    let id = parsed[0].1["id"].clone();
    for (name, v) in &parsed {
        if name.is_none() {
            assert_eq!(v["object"], "chat.completion.chunk");
            assert_eq!(v["id"], id);
            assert_eq!(v["model"], "hermes-agent");
        }
    }
    assert_eq!(
        parsed[0].1["choices"],
        json!([{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}])
    );
    assert_eq!(
        parsed[1],
        (
            Some("hermes.tool.progress".into()),
            json!({"tool": "terminal", "label": "ls", "toolCallId": "c1", "status": "running"})
        )
    );
    assert_eq!(
        parsed[2],
        (
            Some("hermes.tool.progress".into()),
            json!({"tool": "terminal", "toolCallId": "c1", "status": "completed"})
        )
    );
    let text: String = parsed
        .iter()
        .filter_map(|(_, v)| v["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "echo tool (history 0, system \"\")");
    let n = parsed.len();
    assert_eq!(
        parsed[n - 2].1["choices"],
        json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])
    );
    assert_eq!(parsed[n - 1].1["choices"], json!([]));
    assert_eq!(
        parsed[n - 1].1["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14})
    );
}

#[tokio::test]
async fn streamed_failure_ends_with_an_error_chunk() {
    let srv = start(ApiServerConfig::default()).await;
    let body =
        json!({"messages": [{"role": "user", "content": "fail"}], "stream": true}).to_string();
    let r = http(srv.addr, "POST", "/v1/chat/completions", &[], &body).await;
    let evs = events(&r.body);
    assert_eq!(evs.last().unwrap().1, "[DONE]");
    let finish: Value = serde_json::from_str(&evs[evs.len() - 2].1).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "error");
    assert_eq!(finish["error"]["message"], "provider said 500");
    assert!(finish.get("usage").is_none());
}

#[tokio::test]
async fn a_client_that_leaves_cancels_its_turn() {
    let srv = start(ApiServerConfig::default()).await;
    let body =
        json!({"messages": [{"role": "user", "content": "hang"}], "stream": true}).to_string();
    let mut s = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = String::new();
    while !got.contains("waiting") {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0);
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    drop(s);
    for _ in 0..100 {
        if srv.fake.cancelled.load(Ordering::SeqCst) == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the turn was not cancelled");
}

#[tokio::test]
async fn shutdown_cancels_turns_in_flight_and_the_limit_answers_429() {
    let srv = start(ApiServerConfig {
        max_concurrent: 1,
        ..ApiServerConfig::default()
    })
    .await;
    let addr = srv.addr;
    let hanging = tokio::spawn(async move {
        let body = json!({"messages": [{"role": "user", "content": "hang"}]}).to_string();
        http(addr, "POST", "/v1/chat/completions", &[], &body).await
    });
    while srv.fake.seen.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = http(addr, "POST", "/v1/chat/completions", &[], CHAT).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.json()["error"]["code"], "concurrency_limit");
    assert!(r.head.to_ascii_lowercase().contains("retry-after: 1"));
    srv.stop.cancel();
    let r = hanging.await.unwrap();
    assert_eq!(r.status, 503);
    assert_eq!(srv.fake.cancelled.load(Ordering::SeqCst), 1);
    tokio::time::timeout(Duration::from_secs(5), srv.task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
