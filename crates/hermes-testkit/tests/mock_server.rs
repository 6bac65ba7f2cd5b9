//! Specification of the scripted mock LLM server's wire behaviour, driven by
//! a raw byte-level HTTP client (see `support`).

mod support;

use std::time::{Duration, Instant};

use hermes_testkit::{Exhausted, Fault, MockServer, MockUsage, Reply, Script, Turn};
use serde_json::{Value, json};
use support::{Conn, post_chat};

fn stream_body(model: &str) -> Value {
    json!({"model": model, "stream": true, "messages": [{"role": "user", "content": "hi"}]})
}

fn delta(chunk: &Value) -> &Value {
    &chunk["choices"][0]["delta"]
}

#[test]
fn streaming_text_turn_emits_the_openai_event_sequence() {
    let server = MockServer::start(Script::new(vec![Turn::text("Hello, world!")]));
    let resp = post_chat(server.port(), &stream_body("gpt-test"));

    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert!(resp.complete, "stream must end with the 0-length chunk");
    // Each SSE event is its own HTTP chunk.
    assert_eq!(resp.chunks.len(), resp.sse_data().len());
    assert!(
        resp.chunks
            .iter()
            .all(|c| c.starts_with("data: ") && c.ends_with("\n\n"))
    );

    let data = resp.sse_data();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks = resp.sse_json();
    assert_eq!(chunks.len(), 4, "role, 2 content deltas, finish; no usage");
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "gpt-test");
        assert!(c["id"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(c["created"].as_u64().is_some());
    }
    assert_eq!(
        *delta(&chunks[0]),
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(*delta(&chunks[1]), json!({"content": "Hello, w"}));
    assert_eq!(*delta(&chunks[2]), json!({"content": "orld!"}));
    assert_eq!(*delta(&chunks[3]), json!({}));
    assert_eq!(chunks[3]["choices"][0]["finish_reason"], "stop");
    assert!(
        chunks[..3]
            .iter()
            .all(|c| c["choices"][0]["finish_reason"].is_null())
    );
    assert_eq!(server.turns_consumed(), 1);
}

#[test]
fn usage_chunk_is_sent_only_when_include_usage_is_requested() {
    let usage = MockUsage {
        prompt_tokens: 100,
        completion_tokens: 20,
        cached_tokens: 40,
    };
    let server = MockServer::start(Script::new(vec![
        Reply::text("a").with_usage(usage).into(),
        Reply::text("b").with_usage(usage).into(),
    ]));
    let mut body = stream_body("m");
    body["stream_options"] = json!({"include_usage": true});
    let resp = post_chat(server.port(), &body);
    let chunks = resp.sse_json();
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(
        last["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
               "prompt_tokens_details": {"cached_tokens": 40}})
    );
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "stop"
    );
    assert_eq!(resp.sse_data().last().map(String::as_str), Some("[DONE]"));

    body["stream_options"] = json!({"include_usage": false});
    let resp = post_chat(server.port(), &body);
    assert!(resp.sse_json().iter().all(|c| c.get("usage").is_none()));
}

#[test]
fn reasoning_is_streamed_before_content() {
    let reply = Reply::text("answer").with_reasoning("think hard");
    let server = MockServer::start(Script::new(vec![reply.into()]));
    let chunks = post_chat(server.port(), &stream_body("m")).sse_json();
    let deltas: Vec<&Value> = chunks.iter().map(delta).collect();
    assert_eq!(*deltas[1], json!({"reasoning_content": "think ha"}));
    assert_eq!(*deltas[2], json!({"reasoning_content": "rd"}));
    assert_eq!(*deltas[3], json!({"content": "answer"}));
}

#[test]
fn tool_calls_stream_as_indexed_deltas() {
    let calls = Reply::tool_calls(vec![
        ("read_file", json!({"path": "a.txt"})),
        ("terminal", json!({"command": "ls -la"})),
    ])
    .with_chunk_size(5);
    let server = MockServer::start(Script::new(vec![Turn::text("first"), calls.into()]));
    post_chat(server.port(), &stream_body("m"));
    let chunks = post_chat(server.port(), &stream_body("m")).sse_json();

    let tool_deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| delta(c).get("tool_calls"))
        .map(|tc| {
            assert_eq!(tc.as_array().unwrap().len(), 1);
            &tc[0]
        })
        .collect();
    // Head of call 0: id (script index 1), type, name, empty arguments.
    assert_eq!(
        *tool_deltas[0],
        json!({"index": 0, "id": "call_1_0", "type": "function",
               "function": {"name": "read_file", "arguments": ""}})
    );
    let mut args = [String::new(), String::new()];
    let mut heads = Vec::new();
    for d in &tool_deltas {
        let i = d["index"].as_u64().unwrap() as usize;
        if d.get("id").is_some() {
            heads.push((i, d["id"].clone(), d["function"]["name"].clone()));
        } else {
            assert!(d.get("type").is_none() && d["function"].get("name").is_none());
            let frag = d["function"]["arguments"].as_str().unwrap();
            assert!(frag.chars().count() <= 5);
            args[i].push_str(frag);
        }
    }
    assert_eq!(
        heads,
        vec![
            (0, json!("call_1_0"), json!("read_file")),
            (1, json!("call_1_1"), json!("terminal")),
        ]
    );
    assert_eq!(args[0], r#"{"path":"a.txt"}"#);
    assert_eq!(args[1], r#"{"command":"ls -la"}"#);
    // All of call 0 precedes call 1.
    let indices: Vec<u64> = tool_deltas
        .iter()
        .map(|d| d["index"].as_u64().unwrap())
        .collect();
    assert!(indices.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[test]
fn raw_tool_call_arguments_are_sent_verbatim() {
    let reply = Reply::default()
        .with_raw_tool_call("broken", "{not json")
        .with_finish_reason("stop");
    let server = MockServer::start(Script::new(vec![reply.into()]));
    let resp = post_chat(server.port(), &json!({"model": "m", "messages": []}));
    let msg = &resp.json()["choices"][0];
    assert_eq!(
        msg["message"]["tool_calls"][0]["function"]["arguments"],
        "{not json"
    );
    assert_eq!(msg["finish_reason"], "stop");
}

#[test]
fn non_streaming_request_gets_one_chat_completion_object() {
    let reply = Reply::text("hi there")
        .with_reasoning("hmm")
        .with_tool_call("todo", json!({"items": []}));
    let server = MockServer::start(Script::new(vec![reply.into(), Turn::tool("x", json!({}))]));
    let body = json!({"model": "mock-model", "messages": [{"role": "user", "content": "hello"}]});
    let resp = post_chat(server.port(), &body);

    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(
        resp.header("content-length"),
        Some(resp.body.len().to_string().as_str())
    );
    let v = resp.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "mock-model");
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(
        choice["message"],
        json!({"role": "assistant", "content": "hi there", "reasoning_content": "hmm",
               "tool_calls": [{"id": "call_0_0", "type": "function",
                               "function": {"name": "todo", "arguments": "{\"items\":[]}"}}]})
    );
    // Default usage estimate: body bytes / 4 and output chars / 4.
    let prompt = (body.to_string().len() / 4) as u64;
    let completion = (("hi there".len() + "hmm".len() + "{\"items\":[]}".len()) / 4) as u64;
    assert_eq!(v["usage"]["prompt_tokens"], prompt);
    assert_eq!(v["usage"]["completion_tokens"], completion);
    assert_eq!(v["usage"]["total_tokens"], prompt + completion);
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

    let v = post_chat(server.port(), &body).json();
    assert!(v["choices"][0]["message"]["content"].is_null());
}

#[test]
fn rate_limit_fault_sends_429_with_retry_after_and_keeps_the_connection() {
    let server = MockServer::start(Script::new(vec![
        Fault::rate_limited(7).into(),
        Fault::http(503, "overloaded").into(),
        Turn::text("ok"),
    ]));
    let mut conn = Conn::connect(server.port());
    let body = json!({"model": "m", "messages": []});
    conn.post_json("/v1/chat/completions", &body);
    let resp = conn.read_response().unwrap();
    assert_eq!(resp.status, 429);
    assert_eq!(resp.header("retry-after"), Some("7"));
    let err = &resp.json()["error"];
    assert!(err["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert_eq!(err["code"], "rate_limit_exceeded");
    assert!(err.get("type").is_some());

    conn.post_json("/v1/chat/completions", &body);
    let resp = conn.read_response().unwrap();
    assert_eq!(resp.status, 503);
    assert_eq!(resp.header("retry-after"), None);
    assert_eq!(resp.json()["error"]["message"], "overloaded");
    assert_eq!(resp.json()["error"]["type"], "server_error");

    conn.post_json("/v1/chat/completions", &body);
    assert_eq!(
        conn.read_response().unwrap().json()["choices"][0]["message"]["content"],
        "ok"
    );
    assert_eq!(server.turns_consumed(), 3);
}

#[test]
fn drop_fault_closes_before_any_byte_but_captures_the_request() {
    let server = MockServer::start(Script::new(vec![Fault::Drop.into(), Turn::text("after")]));
    let mut conn = Conn::connect(server.port());
    conn.post_json("/v1/chat/completions", &stream_body("m"));
    match conn.read_rest() {
        Ok(bytes) => assert!(bytes.is_empty(), "got {bytes:?}"),
        Err(e) => assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "timed out: {e}"),
    }
    assert_eq!(server.turns_consumed(), 1);
    assert_eq!(server.chat_requests(), vec![stream_body("m")]);
    // The next turn is served on a new connection.
    let resp = post_chat(server.port(), &json!({"model": "m"}));
    assert_eq!(resp.json()["choices"][0]["message"]["content"], "after");
}

#[test]
fn drop_mid_stream_leaves_the_chunked_body_unterminated() {
    let reply = Reply::text("abcdefghijklmnopqrstuvwxyz").with_chunk_size(4);
    let server = MockServer::start(Script::new(vec![Fault::drop_mid_stream(3, reply).into()]));
    let resp = post_chat(server.port(), &stream_body("m"));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert!(!resp.complete, "no 0-length terminator chunk");
    assert_eq!(resp.chunks.len(), 3);
    let data = resp.sse_data();
    assert!(!data.contains(&"[DONE]".to_owned()));
    let chunks = resp.sse_json();
    assert!(
        chunks
            .iter()
            .all(|c| c["choices"][0]["finish_reason"].is_null())
    );
    assert_eq!(*delta(&chunks[1]), json!({"content": "abcd"}));
    assert_eq!(*delta(&chunks[2]), json!({"content": "efgh"}));
}

#[test]
fn hang_sends_nothing_for_the_duration_then_closes() {
    let server = MockServer::start(Script::new(vec![Fault::hang(300).into()]));
    let mut conn = Conn::connect(server.port());
    let start = Instant::now();
    conn.post_json("/v1/chat/completions", &stream_body("m"));
    let rest = conn.read_rest().unwrap();
    assert!(rest.is_empty());
    assert!(
        start.elapsed() >= Duration::from_millis(280),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn raw_sse_lines_are_written_verbatim_one_event_per_chunk() {
    let server = MockServer::start(Script::new(vec![
        Fault::raw_sse(vec!["data: {not json", ": comment\n", "data: [DONE]"]).into(),
    ]));
    let mut conn = Conn::connect(server.port());
    conn.post_json("/v1/chat/completions", &stream_body("m"));
    let resp = conn.read_response().unwrap();
    assert_eq!(resp.status, 200);
    assert!(resp.complete);
    assert_eq!(
        resp.chunks,
        vec!["data: {not json\n\n", ": comment\n", "data: [DONE]\n\n"]
    );
    assert!(
        conn.read_rest().unwrap().is_empty(),
        "connection closed afterwards"
    );
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection_until_close() {
    let server = MockServer::start(Script::new(vec![Turn::text("one"), Turn::text("two")]));
    let mut conn = Conn::connect(server.port());
    conn.post_json("/v1/chat/completions", &stream_body("m"));
    let first = conn.read_response().unwrap();
    assert!(first.complete);
    assert_eq!(first.header("connection"), Some("keep-alive"));
    let body = json!({"model": "m"}).to_string();
    conn.send(
        "POST",
        "/v1/chat/completions",
        &[("Connection", "close")],
        body.as_bytes(),
    );
    let second = conn.read_response().unwrap();
    assert_eq!(second.header("connection"), Some("close"));
    assert_eq!(second.json()["choices"][0]["message"]["content"], "two");
    assert!(conn.read_rest().unwrap().is_empty());
    assert_eq!(server.turns_consumed(), 2);
}

#[test]
fn turns_are_shared_across_connections_in_arrival_order() {
    let server = MockServer::start(Script::new(vec![Turn::text("a"), Turn::text("b")]));
    let body = json!({"model": "m"});
    let a = post_chat(server.port(), &body).json();
    let b = post_chat(server.port(), &body).json();
    assert_eq!(a["choices"][0]["message"]["content"], "a");
    assert_eq!(b["choices"][0]["message"]["content"], "b");
}

#[test]
fn requests_are_captured_with_lowercased_headers_and_parsed_bodies() {
    let server = MockServer::start(Script::new(vec![Turn::text("x")]));
    let mut conn = Conn::connect(server.port());
    conn.send("GET", "/v1/models", &[("X-Trace", "t1")], b"");
    conn.read_response().unwrap();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "héllo"}]});
    conn.send(
        "POST",
        "/v1/chat/completions",
        &[
            ("Authorization", "Bearer sk-test"),
            ("Content-Type", "application/json"),
        ],
        body.to_string().as_bytes(),
    );
    conn.read_response().unwrap();

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        (reqs[0].method.as_str(), reqs[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(reqs[0].body, Value::Null);
    assert_eq!(reqs[0].raw_body, "");
    let chat = &reqs[1];
    assert_eq!(
        (chat.method.as_str(), chat.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert!(
        chat.headers
            .iter()
            .any(|(n, v)| n == "authorization" && v == "Bearer sk-test")
    );
    assert_eq!(chat.header("AUTHORIZATION"), Some("Bearer sk-test"));
    assert_eq!(chat.header("x-missing"), None);
    assert_eq!(chat.body, body);
    assert_eq!(chat.raw_body, body.to_string());
    assert!(chat.received_at >= reqs[0].received_at);
    assert_eq!(server.chat_requests(), vec![body.clone()]);
    assert_eq!(server.last_chat_request(), Some(body));
}

#[test]
fn chunked_request_bodies_are_accepted() {
    let server = MockServer::start(Script::new(vec![Turn::text("x")]));
    let mut conn = Conn::connect(server.port());
    conn.send_raw(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\n{\"mod\r\nC;ext=1\r\nel\":\"m\",\"a\":\r\n2\r\n1}\r\n0\r\n\r\n",
    );
    assert_eq!(conn.read_response().unwrap().status, 200);
    assert_eq!(server.chat_requests(), vec![json!({"model": "m", "a": 1})]);
}

#[test]
fn exhausted_script_answers_500_by_default() {
    let server = MockServer::start(Script::new(vec![Turn::text("only")]));
    let body = json!({"model": "m"});
    post_chat(server.port(), &body);
    let resp = post_chat(server.port(), &body);
    assert_eq!(resp.status, 500);
    assert_eq!(
        resp.json(),
        json!({"error": {"message": "mock script exhausted", "type": "server_error", "param": null, "code": null}})
    );
    assert_eq!(server.turns_consumed(), 1);
    assert_eq!(server.chat_requests().len(), 2);
}

#[test]
fn exhausted_script_can_keep_replying_with_text() {
    let script = Script::default().with_on_exhausted(Exhausted::Text("done".into()));
    let server = MockServer::start(script);
    for _ in 0..2 {
        let chunks = post_chat(server.port(), &stream_body("m")).sse_json();
        assert_eq!(*delta(&chunks[1]), json!({"content": "done"}));
    }
    assert_eq!(server.turns_consumed(), 0);
}

#[test]
fn models_and_unknown_paths_do_not_consume_turns() {
    let server = MockServer::start(Script::new(vec![Turn::text("x")]));
    let mut conn = Conn::connect(server.port());
    conn.send("GET", "/v1/models", &[], b"");
    let models = conn.read_response().unwrap();
    assert_eq!(models.status, 200);
    assert_eq!(
        models.json(),
        json!({"object": "list", "data": [{"id": "mock-model", "object": "model"}]})
    );
    conn.send("POST", "/v1/embeddings", &[], b"{}");
    let missing = conn.read_response().unwrap();
    assert_eq!(missing.status, 404);
    assert!(missing.json()["error"]["message"].is_string());
    assert_eq!(server.turns_consumed(), 0);
    assert_eq!(server.requests().len(), 2);
    assert!(server.chat_requests().is_empty());
}

#[test]
fn multibyte_content_is_chunked_on_char_boundaries() {
    let text = "héllo wörld ✓ 日本語🙂";
    let server = MockServer::start(Script::new(vec![
        Reply::text(text).with_chunk_size(3).into(),
    ]));
    let chunks = post_chat(server.port(), &stream_body("m")).sse_json();
    let pieces: Vec<String> = chunks
        .iter()
        .filter_map(|c| delta(c).get("content").and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    assert_eq!(pieces, vec!["hél", "lo ", "wör", "ld ", "✓ 日", "本語🙂"]);
    assert_eq!(pieces.concat(), text);
}

#[test]
fn reply_delay_holds_back_the_response_headers() {
    let server = MockServer::start(Script::new(vec![
        Reply::text("x").with_delay_ms(200).into(),
    ]));
    let start = Instant::now();
    assert_eq!(post_chat(server.port(), &json!({"model": "m"})).status, 200);
    assert!(start.elapsed() >= Duration::from_millis(190));
}

#[test]
fn wait_for_chat_requests_polls_until_they_arrive_or_times_out() {
    let server = MockServer::start(Script::new(vec![Turn::text("x")]));
    assert!(!server.wait_for_chat_requests(1, Duration::from_millis(50)));
    let port = server.port();
    let client = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        post_chat(port, &json!({"model": "m"}))
    });
    assert!(server.wait_for_chat_requests(1, Duration::from_secs(10)));
    assert_eq!(client.join().unwrap().status, 200);
}

#[test]
fn dropping_the_server_closes_the_listener() {
    let server = MockServer::start(Script::default());
    let port = server.port();
    assert_eq!(server.base_url(), format!("http://127.0.0.1:{port}/v1"));
    drop(server);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[allow(clippy::unwrap_used)]
async fn tokio_roundtrip(server: &MockServer) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = stream_body("m").to_string();
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", server.port()))
        .await
        .unwrap();
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "current_thread")]
async fn works_from_a_current_thread_tokio_test() {
    let server = MockServer::start(Script::new(vec![Turn::text("async")]));
    let out = tokio_roundtrip(&server).await;
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(out.contains("\"content\":\"async\""));
    assert!(out.ends_with("data: [DONE]\n\n\r\n0\r\n\r\n"));
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_from_a_multi_thread_tokio_test() {
    let server = MockServer::start(Script::new(vec![Turn::text("mt")]));
    let out = tokio_roundtrip(&server).await;
    assert!(out.contains("\"content\":\"mt\""));
    assert_eq!(server.turns_consumed(), 1);
}
