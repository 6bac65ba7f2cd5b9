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
use hermes_protocol::{AgentEvent, ErrorClass, Message, ToolCall, TurnEnd, Usage};
use hermes_testkit::http_client::{HttpReply, parse_reply, request_text, sse_comments, sse_events};
use hermes_tools::{ApprovalAnswer, ApprovalRequest};
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
                return Err(RunnerError::Setup("config.yaml is broken".into()));
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
            "dangerous" => {
                let request = ApprovalRequest {
                    command: "rm -rf build".into(),
                    description: "recursive delete".into(),
                    allow_permanent: true,
                    judge_denied: false,
                };
                let answer = match &input.approver {
                    Some(a) => a.0.approve(&request).await,
                    None => ApprovalAnswer::Deny,
                };
                events.emit(AgentEvent::TextDelta(format!("{answer:?}. ")));
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
        if input.session.as_deref() == Some("missing") {
            return Err(RunnerError::SessionNotFound("missing".into()));
        }
        let history = input.history.clone().unwrap_or_default();
        let text = format!(
            "echo {} (history {}, system {:?})",
            input.user,
            history.len(),
            input.system.as_deref().unwrap_or("")
        );
        let mut added = vec![Message::user(input.user.clone())];
        if input.user == "tool" {
            added.push(Message::assistant_with_tools(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "terminal".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }],
            ));
            added.push(Message::tool_result("c1", "terminal", "file.txt"));
        }
        added.push(Message::assistant(text.clone()));
        for m in &added {
            events.emit(AgentEvent::MessageAdded(m.clone()));
        }
        let mut conversation = history;
        conversation.extend(added.iter().cloned());
        let (a, b) = text.split_at(5);
        events.emit(AgentEvent::TextDelta(a.into()));
        events.emit(AgentEvent::TextDelta(b.into()));
        Ok(TurnOutcome {
            final_text: text,
            end: TurnEnd::Completed,
            usage,
            session_id: Some(
                input
                    .session
                    .unwrap_or_else(|| "20260101_000000_abc".into()),
            ),
            conversation,
            client_calls: Vec::new(),
            added,
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
    let r = http(srv.addr, "GET", "/v1/models/hermes-agent", &[], "").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), m["data"][0]);
    let r = http(srv.addr, "GET", "/v1/models/gpt-4", &[], "").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "model_not_found");
    let r = http(srv.addr, "GET", "/v1/capabilities", &[], "").await;
    assert_eq!(r.status, 200);
    let caps = r.json();
    assert_eq!(caps["object"], "hermes.api_server.capabilities");
    assert_eq!(caps["auth"], json!({"type": "bearer", "required": false}));
    assert_eq!(caps["features"]["responses_api"], true);
    assert_eq!(caps["features"]["session_fork"], false);
    // Every endpoint advertised is served.
    for e in caps["endpoints"].as_object().unwrap().values() {
        let path = e["path"]
            .as_str()
            .unwrap()
            .replace("{model}", "hermes-agent");
        if path.contains('{') {
            continue;
        }
        let r = http(srv.addr, e["method"].as_str().unwrap(), &path, &[], "").await;
        assert_ne!(r.status, 404, "{path}");
    }
    let r = http(srv.addr, "POST", "/v1/nope", &[], "{}").await;
    assert_eq!(r.status, 404);
    let e = r.json();
    assert_eq!(e["error"]["type"], "invalid_request_error");
    assert_eq!(e["error"]["code"], "unknown_route");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Unknown route: POST /v1/nope."),
        "{message}"
    );
    for route in [
        "POST /v1/chat/completions",
        "POST /v1/responses",
        "GET /v1/models",
    ] {
        assert!(message.contains(route), "{message}");
    }
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
        Some(vec![Message::user("first"), Message::assistant("ok")])
    );
    assert_eq!(seen[0].system.as_deref(), Some("Be brief."));
    assert_eq!(seen[0].session, None);
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
    // Without the opt-in header, progress is comment lines only: every event is a chunk.
    let plain = http(srv.addr, "POST", "/v1/chat/completions", &[], &body).await;
    assert_eq!(plain.status, 200);
    assert!(events(&plain.body).iter().all(|(name, _)| name.is_none()));
    // Compared as parsed JSON: the key order of the text is serde_json's business.
    let comments: Vec<(String, Value)> = sse_comments(&plain.body)
        .iter()
        .map(|c| {
            let (name, payload) = c.split_once(' ').unwrap();
            (name.to_string(), serde_json::from_str(payload).unwrap())
        })
        .collect();
    assert_eq!(
        comments,
        vec![
            (
                "hermes.tool.progress".to_string(),
                json!({"label": "ls", "status": "running", "tool": "terminal", "toolCallId": "c1"})
            ),
            (
                "hermes.tool.progress".to_string(),
                json!({"status": "completed", "tool": "terminal", "toolCallId": "c1"})
            ),
        ]
    );
    let r = http(
        srv.addr,
        "POST",
        "/v1/chat/completions",
        &["X-Hermes-Tool-Progress: events"],
        &body,
    )
    .await;
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
        "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
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

#[tokio::test]
async fn a_session_header_continues_a_stored_session() {
    // Without a key, continuing a stored conversation is refused.
    let open = start(ApiServerConfig::default()).await;
    let sid = ["X-Hermes-Session-Id: 20250101_000000_old"];
    let r = http(open.addr, "POST", "/v1/chat/completions", &sid, CHAT).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"]["code"], "session_continuation_forbidden");
    assert!(open.fake.seen.lock().unwrap().is_empty());

    let srv = start(ApiServerConfig {
        key: Some("k".into()),
        ..ApiServerConfig::default()
    })
    .await;
    let auth = "Authorization: Bearer k";
    let r = http(
        srv.addr,
        "POST",
        "/v1/chat/completions",
        &[auth, sid[0]],
        CHAT,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.head
            .to_ascii_lowercase()
            .contains("x-hermes-session-id: 20250101_000000_old"),
        "{}",
        r.head
    );
    // The stored conversation is used, not the request's history; the system text still is.
    let seen = srv.fake.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0],
        TurnInput {
            system: Some("Be brief.".into()),
            history: None,
            user: "hello".into(),
            images: Vec::new(),
            session: Some("20250101_000000_old".into()),
            ..TurnInput::default()
        }
    );
    // Streamed: the header is on the answer before the turn runs.
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "stream": true}).to_string();
    let r = http(
        srv.addr,
        "POST",
        "/v1/chat/completions",
        &[auth, sid[0]],
        &body,
    )
    .await;
    assert!(
        r.head
            .to_ascii_lowercase()
            .contains("x-hermes-session-id: 20250101_000000_old")
    );
    for bad in ["../etc", "a/b", &"x".repeat(300)] {
        let h = format!("X-Hermes-Session-Id: {bad}");
        let r = http(srv.addr, "POST", "/v1/chat/completions", &[auth, &h], CHAT).await;
        assert_eq!(r.status, 400, "{bad}");
        assert_eq!(r.json()["error"]["code"], "invalid_session_id");
    }
    let r = http(
        srv.addr,
        "POST",
        "/v1/chat/completions",
        &[auth, "X-Hermes-Session-Id: missing"],
        CHAT,
    )
    .await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json(),
        json!({"error": {"message": "Session not found: missing", "type": "invalid_request_error", "param": null, "code": "session_not_found"}})
    );
}

#[tokio::test]
async fn responses_answer_chain_retrieve_and_delete() {
    let srv = start(ApiServerConfig {
        key: Some("k".into()),
        ..ApiServerConfig::default()
    })
    .await;
    let auth = ["Authorization: Bearer k"];
    let body = json!({"model": "hermes-agent", "input": "tool", "instructions": "Be brief."});
    let r = http(srv.addr, "POST", "/v1/responses", &auth, &body.to_string()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let first = r.json();
    let id = first["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("resp_"));
    assert_eq!(first["object"], "response");
    assert_eq!(first["status"], "completed");
    assert_eq!(first["instructions"], "Be brief.");
    assert_eq!(
        first["usage"],
        json!({"input_tokens": 10, "output_tokens": 4, "total_tokens": 14})
    );
    let output = first["output"].as_array().unwrap();
    assert_eq!(output.len(), 3, "{output:?}");
    assert_eq!(output[0]["type"], "function_call");
    assert_eq!(output[0]["call_id"], "c1");
    assert_eq!(output[0]["name"], "terminal");
    assert_eq!(output[0]["arguments"], r#"{"command":"ls"}"#);
    assert_eq!(output[1]["type"], "function_call_output");
    assert_eq!(output[1]["call_id"], "c1");
    assert_eq!(output[1]["output"], "file.txt");
    assert_eq!(output[2]["type"], "message");
    assert_eq!(output[2]["role"], "assistant");
    assert_eq!(
        output[2]["content"],
        json!([{"type": "output_text", "text": "echo tool (history 0, system \"Be brief.\")", "annotations": []}])
    );

    // Chained: the stored conversation (tool call and result included), the stored session
    // and the instructions carry over.
    let body = json!({"input": "again", "previous_response_id": id});
    let r = http(srv.addr, "POST", "/v1/responses", &auth, &body.to_string()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let second = r.json();
    assert_eq!(second["previous_response_id"], id.as_str());
    assert_eq!(
        second["output"][0]["content"][0]["text"],
        "echo again (history 4, system \"Be brief.\")"
    );
    let seen = srv.fake.seen.lock().unwrap().clone();
    assert_eq!(seen[1].session.as_deref(), Some("20260101_000000_abc"));
    let history = seen[1].history.clone().unwrap();
    assert_eq!(history[0], Message::user("tool"));
    assert_eq!(history[2].tool_call_id.as_deref(), Some("c1"));

    // Retrieve and delete.
    let path = format!("/v1/responses/{id}");
    let r = http(srv.addr, "GET", &path, &auth, "").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), first);
    let r = http(srv.addr, "DELETE", &path, &auth, "").await;
    assert_eq!(
        r.json(),
        json!({"id": id, "object": "response", "deleted": true})
    );
    for method in ["GET", "DELETE"] {
        let r = http(srv.addr, method, &path, &auth, "").await;
        assert_eq!(r.status, 404);
        assert_eq!(r.json()["error"]["code"], "response_not_found");
    }
    let r = http(srv.addr, "POST", "/v1/responses", &auth, &body.to_string()).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["error"]["message"],
        format!("Previous response not found: {id}")
    );
    // Not stored when asked not to; the key is required.
    let body = json!({"input": "x", "store": false});
    let r = http(srv.addr, "POST", "/v1/responses", &auth, &body.to_string()).await;
    let path = format!("/v1/responses/{}", r.json()["id"].as_str().unwrap());
    assert_eq!(http(srv.addr, "GET", &path, &auth, "").await.status, 404);
    assert_eq!(http(srv.addr, "GET", &path, &[], "").await.status, 401);
    let r = http(srv.addr, "POST", "/v1/responses", &auth, r#"{"input": 3}"#).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "input");
}

#[tokio::test]
async fn responses_stream_the_responses_event_types() {
    let srv = start(ApiServerConfig::default()).await;
    let body = json!({"input": [{"role": "user", "content": "tool"}], "stream": true});
    let r = http(srv.addr, "POST", "/v1/responses", &[], &body.to_string()).await;
    assert_eq!(r.status, 200);
    let evs: Vec<(String, Value)> = events(&r.body)
        .into_iter()
        .map(|(n, d)| (n.unwrap(), serde_json::from_str(&d).unwrap()))
        .collect();
    let kinds: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        kinds,
        vec![
            "response.created",
            "response.in_progress",
            // The tool call and its result, as they were added to the conversation.
            "response.output_item.added",
            "response.output_item.done",
            "response.output_item.added",
            "response.output_item.done",
            // Then the answer.
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (i, (name, data)) in evs.iter().enumerate() {
        assert_eq!(data["type"], name.as_str());
        assert_eq!(data["sequence_number"], i as u64);
    }
    assert_eq!(evs[0].1["response"]["status"], "in_progress");
    let text = "echo tool (history 0, system \"\")";
    assert_eq!(evs[10].1["text"], text);
    let done = &evs[13].1["response"];
    assert_eq!(done["status"], "completed");
    let types: Vec<&str> = done["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        vec!["function_call", "function_call_output", "message"]
    );
    assert_eq!(done["output"][2]["content"][0]["text"], text);
    // Stored: retrievable by its id.
    let path = format!("/v1/responses/{}", done["id"].as_str().unwrap());
    let r = http(srv.addr, "GET", &path, &[], "").await;
    assert_eq!(&r.json(), done);

    // A failed turn ends in response.failed with the error.
    let body = json!({"input": "fail", "stream": true});
    let r = http(srv.addr, "POST", "/v1/responses", &[], &body.to_string()).await;
    let evs = events(&r.body);
    let (name, data) = evs.last().unwrap();
    assert_eq!(name.as_deref(), Some("response.failed"));
    let data: Value = serde_json::from_str(data).unwrap();
    assert_eq!(
        data["response"]["error"],
        json!({"code": "upstream_error", "message": "provider said 500"})
    );
}

async fn wait_for_status(addr: SocketAddr, id: &str, want: &str) -> Value {
    for _ in 0..500 {
        let r = http(addr, "GET", &format!("/v1/runs/{id}"), &[], "").await;
        let v = r.json();
        if v["status"] == want {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {id} never reached {want}");
}

fn run_events(body: &str) -> Vec<Value> {
    events(body)
        .into_iter()
        .map(|(name, data)| {
            assert_eq!(name, None);
            serde_json::from_str(&data).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn a_run_asks_for_approval_through_the_api_and_can_be_stopped() {
    let srv = start(ApiServerConfig::default()).await;
    let r = http(
        srv.addr,
        "POST",
        "/v1/runs",
        &[],
        r#"{"input": "dangerous"}"#,
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let started = r.json();
    assert_eq!(started["status"], "started");
    let id = started["run_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("run_"));
    let waiting = wait_for_status(srv.addr, &id, "waiting_for_approval").await;
    assert_eq!(waiting["object"], "hermes.run");
    assert_eq!(waiting["last_event"], "approval.request");
    let path = format!("/v1/runs/{id}/approval");
    let r = http(srv.addr, "POST", &path, &[], r#"{"choice": "maybe"}"#).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], "invalid_approval_choice");
    let r = http(srv.addr, "POST", &path, &[], r#"{"choice": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"object": "hermes.run.approval_response", "run_id": id, "choice": "once", "resolved": 1})
    );
    let done = wait_for_status(srv.addr, &id, "completed").await;
    assert_eq!(done["output"], "echo dangerous (history 0, system \"\")");
    assert_eq!(done["session_id"], "20260101_000000_abc");
    // The whole lifecycle, replayed to a subscriber that comes late; then the stream closes.
    let r = http(srv.addr, "GET", &format!("/v1/runs/{id}/events"), &[], "").await;
    assert_eq!(r.status, 200);
    assert!(r.body.ends_with(": stream closed\n\n"), "{}", r.body);
    let evs = run_events(&r.body);
    let kinds: Vec<&str> = evs.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        vec![
            "run.started",
            "approval.request",
            "approval.responded",
            "message.delta",
            "message.delta",
            "message.delta",
            "run.completed",
        ]
    );
    assert!(evs.iter().all(|e| e["run_id"] == id.as_str()));
    assert_eq!(evs[1]["command"], "rm -rf build");
    assert_eq!(evs[1]["description"], "recursive delete");
    assert_eq!(
        evs[1]["choices"],
        json!(["once", "session", "always", "deny"])
    );
    assert_eq!(evs[3]["delta"], "Once. ");
    assert_eq!(
        evs[6]["usage"],
        json!({"input_tokens": 10, "output_tokens": 4, "total_tokens": 14})
    );
    // Nothing is pending any more.
    let r = http(srv.addr, "POST", &path, &[], r#"{"choice": "deny"}"#).await;
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["error"]["code"], "approval_not_pending");

    // A run followed live and stopped.
    let r = http(srv.addr, "POST", "/v1/runs", &[], r#"{"input": "hang"}"#).await;
    let id = r.json()["run_id"].as_str().unwrap().to_string();
    let addr = srv.addr;
    let follow = {
        let id = id.clone();
        tokio::spawn(
            async move { http(addr, "GET", &format!("/v1/runs/{id}/events"), &[], "").await },
        )
    };
    wait_for_status(srv.addr, &id, "running").await;
    let r = http(srv.addr, "POST", &format!("/v1/runs/{id}/stop"), &[], "").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"run_id": id, "status": "stopping"}));
    wait_for_status(srv.addr, &id, "cancelled").await;
    let evs = run_events(&follow.await.unwrap().body);
    assert_eq!(evs.last().unwrap()["event"], "run.cancelled");
    assert_eq!(srv.fake.cancelled.load(Ordering::SeqCst), 1);

    for (method, path) in [
        ("GET", "/v1/runs/run_nope"),
        ("GET", "/v1/runs/run_nope/events"),
        ("POST", "/v1/runs/run_nope/stop"),
        ("POST", "/v1/runs/run_nope/approval"),
    ] {
        let r = http(srv.addr, method, path, &[], r#"{"choice":"once"}"#).await;
        assert_eq!(r.status, 404, "{method} {path}");
        assert_eq!(r.json()["error"]["code"], "run_not_found");
    }
    let r = http(srv.addr, "POST", "/v1/runs", &[], r#"{"input": []}"#).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn resource_routes_without_a_backing_say_so_and_run_no_turn() {
    let srv = start(ApiServerConfig::default()).await;
    for (method, path, status, body) in [
        (
            "GET",
            "/api/sessions",
            503,
            json!({"code": "session_db_unavailable"}),
        ),
        (
            "POST",
            "/api/sessions/x/chat",
            503,
            json!({"code": "session_db_unavailable"}),
        ),
        (
            "GET",
            "/api/jobs",
            501,
            json!({"error": "Cron module not available"}),
        ),
        (
            "GET",
            "/v1/skills",
            500,
            json!({"message": "Failed to enumerate skills"}),
        ),
        (
            "GET",
            "/v1/toolsets",
            500,
            json!({"message": "Failed to enumerate toolsets"}),
        ),
    ] {
        let r = http(srv.addr, method, path, &[], r#"{"message": "hi"}"#).await;
        assert_eq!(r.status, status, "{method} {path}: {}", r.body);
        let v = r.json();
        for (key, want) in body.as_object().unwrap() {
            let got = v.get("error").and_then(|e| e.get(key)).unwrap_or(&v[key]);
            assert_eq!(got, want, "{method} {path}: {v}");
        }
    }
    let r = http(srv.addr, "GET", "/v1/capabilities", &[], "").await;
    assert_eq!(r.json()["features"]["session_resources"], false);
    let r = http(srv.addr, "GET", "/health/detailed", &[], "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["platforms"],
        json!({"api_server": {"state": "connected"}})
    );
    assert_eq!(r.json()["active_agents"], 0);
    assert!(srv.fake.seen.lock().unwrap().is_empty());
}
