//! Rendering of the AWS Bedrock Converse wire format for a scripted [`Reply`]: the
//! `converse-stream` event sequence (`messageStart`, `contentBlockStart/Delta/Stop` for reasoning,
//! text and `toolUse` blocks, `messageStop` with the stop reason, `metadata` with usage) as AWS
//! event-stream binary messages, the non-streaming `converse` object, and Bedrock's error shape
//! (`{"message": ..}` plus the `x-amzn-ErrorType` header).
//!
//! The event-stream encoder is written here on purpose, independently of hermes-llm's decoder,
//! so the two check each other.

use serde_json::{Value, json};

use crate::openai_sse::{
    DEFAULT_CHUNK_SIZE, RenderCtx, effective_usage, split_chars, tool_call_id,
};
use crate::script::Reply;

/// The `Content-Type` of a `converse-stream` response.
pub const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320): the event-stream checksum.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// One event-stream message: prelude (total length, headers length, prelude CRC), string
/// headers (value type 7), payload, message CRC. Big-endian throughout.
pub fn message(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(&u16::try_from(value.len()).unwrap_or(u16::MAX).to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = 12 + head.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&u32::try_from(head.len()).unwrap_or(u32::MAX).to_be_bytes());
    let prelude_crc = crc32(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let message_crc = crc32(&out);
    out.extend_from_slice(&message_crc.to_be_bytes());
    out
}

/// An `event` message of type `event_type` with a JSON payload.
pub fn event_frame(event_type: &str, payload: &Value) -> Vec<u8> {
    message(
        &[
            (":event-type", event_type),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An `exception` message, as Bedrock sends for failures after the stream began
/// (e.g. `throttlingException`, `modelStreamErrorException`).
pub fn exception_frame(exception_type: &str, text: &str) -> Vec<u8> {
    message(
        &[
            (":exception-type", exception_type),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({ "message": text }).to_string().as_bytes(),
    )
}

/// Bedrock pads every event with a `p` field of varying length to hide token sizes; clients
/// must ignore it.
fn padded(mut payload: Value, n: usize) -> Value {
    const PAD: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0";
    if let Some(obj) = payload.as_object_mut() {
        obj.insert("p".into(), json!(&PAD[..1 + n % PAD.len()]));
    }
    payload
}

fn stop_reason(reply: &Reply) -> &'static str {
    match reply.effective_finish_reason().as_str() {
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        "content_filter" => "content_filtered",
        _ => "end_turn",
    }
}

fn usage(reply: &Reply, ctx: &RenderCtx) -> Value {
    let u = effective_usage(reply, ctx);
    let mut usage = json!({
        "inputTokens": u.prompt_tokens.saturating_sub(u.cached_tokens),
        "outputTokens": u.completion_tokens,
        "totalTokens": u.prompt_tokens + u.completion_tokens,
    });
    if u.cached_tokens > 0 {
        usage["cacheReadInputTokens"] = json!(u.cached_tokens);
        usage["cacheWriteInputTokens"] = json!(0);
    }
    usage
}

fn input_of(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| json!({}))
}

/// One event before encoding: its `:event-type` and JSON payload.
pub type Event = (&'static str, Value);

/// The `(event type, payload)` sequence of a streamed reply: `(body, finish)`; a mid-stream
/// drop sends part of `body` and never `finish`.
pub fn stream_plan(reply: &Reply, ctx: &RenderCtx) -> (Vec<Event>, Vec<Event>) {
    let size = reply.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE);
    let mut body = vec![("messageStart", json!({"role": "assistant"}))];
    let mut index = 0;
    if let Some(r) = &reply.reasoning {
        for piece in split_chars(r, size) {
            body.push((
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"reasoningContent": {"text": piece}}}),
            ));
        }
        body.push((
            "contentBlockDelta",
            json!({"contentBlockIndex": index, "delta": {"reasoningContent": {"signature": "sig-mock"}}}),
        ));
        body.push(("contentBlockStop", json!({"contentBlockIndex": index})));
        index += 1;
    }
    if let Some(t) = &reply.content {
        // Text blocks have no contentBlockStart: their first delta opens them.
        for piece in split_chars(t, size) {
            body.push((
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"text": piece}}),
            ));
        }
        body.push(("contentBlockStop", json!({"contentBlockIndex": index})));
        index += 1;
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        body.push((
            "contentBlockStart",
            json!({"contentBlockIndex": index, "start": {"toolUse": {
                "toolUseId": tool_call_id(reply, ctx.turn, i), "name": c.name}}}),
        ));
        for piece in split_chars(&c.arguments, size) {
            body.push((
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}}),
            ));
        }
        body.push(("contentBlockStop", json!({"contentBlockIndex": index})));
        index += 1;
    }
    let finish = vec![
        ("messageStop", json!({"stopReason": stop_reason(reply)})),
        (
            "metadata",
            json!({"usage": usage(reply, ctx), "metrics": {"latencyMs": 1}}),
        ),
    ];
    (body, finish)
}

/// The event-stream messages of a streamed reply: `(body, finish)` as in [`stream_plan`].
pub fn stream_events(reply: &Reply, ctx: &RenderCtx) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let (body, finish) = stream_plan(reply, ctx);
    let mut n = 0;
    let mut encode = |events: Vec<Event>| -> Vec<Vec<u8>> {
        events
            .into_iter()
            .map(|(kind, payload)| {
                n += 1;
                event_frame(kind, &padded(payload, n))
            })
            .collect()
    };
    let body = encode(body);
    let finish = encode(finish);
    (body, finish)
}

/// The non-streaming `converse` response object.
pub fn converse_json(reply: &Reply, ctx: &RenderCtx) -> Value {
    let mut content = Vec::new();
    if let Some(r) = &reply.reasoning {
        content.push(
            json!({"reasoningContent": {"reasoningText": {"text": r, "signature": "sig-mock"}}}),
        );
    }
    if let Some(t) = &reply.content {
        content.push(json!({"text": t}));
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        content.push(json!({"toolUse": {
            "toolUseId": tool_call_id(reply, ctx.turn, i),
            "name": c.name,
            "input": input_of(&c.arguments),
        }}));
    }
    json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason(reply),
        "usage": usage(reply, ctx),
        "metrics": {"latencyMs": 1},
    })
}

/// The exception Bedrock names for an HTTP error status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        400 | 413 => "ValidationException",
        401 => "UnrecognizedClientException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        408 => "ModelTimeoutException",
        424 => "ModelErrorException",
        429 => "ThrottlingException",
        503 | 529 => "ServiceUnavailableException",
        500..=599 => "InternalServerException",
        _ => "ValidationException",
    }
}

/// The `x-amzn-ErrorType` header value and the JSON body of a Bedrock error response.
pub fn error_response(status: u16, text: &str) -> (String, Value) {
    (
        format!(
            "{}:http://internal.amazon.com/coral/com.amazon.bedrock/",
            error_type(status)
        ),
        json!({ "message": text }),
    )
}

/// The model id of a `/model/{modelId}/converse[-stream]` path, percent-decoded.
pub fn model_of_path(path: &str) -> Option<String> {
    let (_, rest) = path.split_once("/model/")?;
    let encoded = rest.split('/').next()?;
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok().filter(|m| !m.is_empty())
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    use super::*;
    use crate::{Fault, MockServer, Script, Turn};

    /// A decoded message: string headers and the JSON payload.
    #[derive(Debug)]
    struct Decoded {
        headers: Vec<(String, String)>,
        payload: Value,
    }

    impl Decoded {
        fn header(&self, name: &str) -> &str {
            self.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
                .unwrap_or_else(|| panic!("no header {name} in {:?}", self.headers))
        }
    }

    fn be32(b: &[u8]) -> u32 {
        u32::from_be_bytes(b[..4].try_into().unwrap())
    }

    /// Decodes whole messages, checking both CRCs; returns them and the undecoded tail.
    fn decode(mut bytes: &[u8]) -> (Vec<Decoded>, usize) {
        let mut out = Vec::new();
        while bytes.len() >= 12 {
            let total = be32(bytes) as usize;
            let headers_len = be32(&bytes[4..]) as usize;
            assert_eq!(crc32(&bytes[..8]), be32(&bytes[8..]), "prelude CRC");
            if bytes.len() < total {
                break;
            }
            let msg = &bytes[..total];
            assert_eq!(
                crc32(&msg[..total - 4]),
                be32(&msg[total - 4..]),
                "message CRC"
            );
            let mut h = &msg[12..12 + headers_len];
            let mut headers = Vec::new();
            while !h.is_empty() {
                let n = h[0] as usize;
                let name = String::from_utf8(h[1..1 + n].to_vec()).unwrap();
                assert_eq!(h[1 + n], 7, "string header");
                let len = u16::from_be_bytes([h[2 + n], h[3 + n]]) as usize;
                let value = String::from_utf8(h[4 + n..4 + n + len].to_vec()).unwrap();
                headers.push((name, value));
                h = &h[4 + n + len..];
            }
            let payload = serde_json::from_slice(&msg[12 + headers_len..total - 4]).unwrap();
            out.push(Decoded { headers, payload });
            bytes = &bytes[total..];
        }
        (out, bytes.len())
    }

    fn ctx() -> RenderCtx {
        RenderCtx {
            turn: 0,
            model: "m".into(),
            prompt_bytes: 400,
            created: 0,
        }
    }

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    /// The same message hermes-llm's decoder test recorded from an independent encoder
    /// (Python struct + zlib.crc32).
    #[test]
    fn frames_match_a_recorded_message_byte_for_byte() {
        let recorded = "0000009e00000057fe1b824f0b3a6576656e742d74797065070011636f6e74656e74426c6f636b44656c74610d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573736167652d747970650700056576656e747b22636f6e74656e74426c6f636b496e646578223a302c2264656c7461223a7b2274657874223a224869227d2c2270223a22616263227d9343f010";
        let frame = message(
            &[
                (":event-type", "contentBlockDelta"),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            br#"{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abc"}"#,
        );
        let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, recorded);
    }

    #[test]
    fn a_text_reply_is_the_converse_event_sequence() {
        let reply = Reply::text("Hello, Bedrock!").with_chunk_size(6);
        let (body, finish) = stream_events(&reply, &ctx());
        let bytes: Vec<u8> = body.iter().chain(&finish).flatten().copied().collect();
        let (msgs, rest) = decode(&bytes);
        assert_eq!(rest, 0);
        let kinds: Vec<&str> = msgs.iter().map(|m| m.header(":event-type")).collect();
        assert_eq!(
            kinds,
            [
                "messageStart",
                "contentBlockDelta",
                "contentBlockDelta",
                "contentBlockDelta",
                "contentBlockStop",
                "messageStop",
                "metadata"
            ]
        );
        for m in &msgs {
            assert_eq!(m.header(":message-type"), "event");
            assert_eq!(m.header(":content-type"), "application/json");
            assert!(m.payload["p"].is_string(), "padded like Bedrock");
        }
        assert_eq!(msgs[0].payload["role"], "assistant");
        let text: String = msgs[1..4]
            .iter()
            .map(|m| m.payload["delta"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(text, "Hello, Bedrock!");
        assert_eq!(msgs[5].payload["stopReason"], "end_turn");
        let usage = &msgs[6].payload["usage"];
        assert_eq!(usage["inputTokens"], 100);
        assert_eq!(usage["outputTokens"], 3);
        assert_eq!(usage["totalTokens"], 103);
        assert_eq!(msgs[6].payload["metrics"]["latencyMs"], 1);
    }

    #[test]
    fn reasoning_and_tool_calls_get_their_own_blocks() {
        let reply = Reply::text("Looking.")
            .with_reasoning("think")
            .with_tool_call("terminal", json!({"command": "ls"}))
            .with_chunk_size(8);
        let (body, finish) = stream_plan(&reply, &ctx());
        let blocks: Vec<(&str, i64)> = body
            .iter()
            .skip(1)
            .map(|(k, v)| (*k, v["contentBlockIndex"].as_i64().unwrap()))
            .collect();
        assert_eq!(
            blocks,
            [
                ("contentBlockDelta", 0),
                ("contentBlockDelta", 0),
                ("contentBlockStop", 0),
                ("contentBlockDelta", 1),
                ("contentBlockStop", 1),
                ("contentBlockStart", 2),
                ("contentBlockDelta", 2),
                ("contentBlockDelta", 2),
                ("contentBlockStop", 2),
            ]
        );
        assert_eq!(body[1].1["delta"]["reasoningContent"]["text"], "think");
        assert_eq!(body[4].1["delta"]["text"], "Looking.");
        assert_eq!(
            body[6].1["start"]["toolUse"],
            json!({"toolUseId": "call_0_0", "name": "terminal"})
        );
        let input: String = body[7..9]
            .iter()
            .map(|(_, v)| v["delta"]["toolUse"]["input"].as_str().unwrap())
            .collect();
        assert_eq!(input, r#"{"command":"ls"}"#);
        assert_eq!(finish[0].1["stopReason"], "tool_use");
        let length = Reply::text("x").with_finish_reason("length");
        assert_eq!(
            stream_plan(&length, &ctx()).1[0].1["stopReason"],
            "max_tokens"
        );
    }

    #[test]
    fn the_converse_object_and_errors_have_bedrock_shapes() {
        let reply = Reply::text("hi").with_tool_call("read_file", json!({"path": "a"}));
        let v = converse_json(&reply, &ctx());
        assert_eq!(v["output"]["message"]["content"][0]["text"], "hi");
        assert_eq!(
            v["output"]["message"]["content"][1]["toolUse"]["input"],
            json!({"path": "a"})
        );
        assert_eq!(v["stopReason"], "tool_use");
        let (kind, body) = error_response(429, "Too many requests");
        assert!(kind.starts_with("ThrottlingException:"), "{kind}");
        assert_eq!(body, json!({"message": "Too many requests"}));
        assert_eq!(error_type(403), "AccessDeniedException");
        assert_eq!(error_type(400), "ValidationException");
        let exc = exception_frame("throttlingException", "slow down");
        let (msgs, _) = decode(&exc);
        assert_eq!(msgs[0].header(":message-type"), "exception");
        assert_eq!(msgs[0].header(":exception-type"), "throttlingException");
        assert_eq!(msgs[0].payload["message"], "slow down");
    }

    #[test]
    fn model_ids_are_decoded_from_the_path() {
        assert_eq!(
            model_of_path("/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream")
                .as_deref(),
            Some("anthropic.claude-3-5-sonnet-20240620-v1:0")
        );
        assert_eq!(
            model_of_path("/v1/model/arn%3Aaws%3Abedrock%3Ax%2Fy/converse").as_deref(),
            Some("arn:aws:bedrock:x/y")
        );
        assert_eq!(
            model_of_path("/model/a%zz/converse").as_deref(),
            Some("a%zz")
        );
        assert_eq!(model_of_path("/chat/completions"), None);
    }

    /// A raw HTTP response: status, headers, and each chunk of a chunked body.
    struct RawResponse {
        status: u16,
        headers: Vec<(String, String)>,
        chunks: Vec<Vec<u8>>,
        /// The terminating zero-length chunk arrived.
        complete: bool,
        /// Content-Length body, when not chunked.
        body: Vec<u8>,
    }

    impl RawResponse {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    const PATH: &str = "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream";

    fn post(server: &MockServer, path: &str, auth: &str) -> RawResponse {
        let stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut r = BufReader::new(stream);
        let body = r#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#;
        write!(
            r.get_mut(),
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {auth}\r\n\
             Content-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut line = String::new();
        let mut read_line = |r: &mut BufReader<TcpStream>| {
            line.clear();
            r.read_line(&mut line).unwrap();
            line.trim_end().to_string()
        };
        let status = read_line(&mut r)
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let mut headers = Vec::new();
        loop {
            let l = read_line(&mut r);
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
        let mut resp = RawResponse {
            status,
            headers,
            chunks: Vec::new(),
            complete: false,
            body: Vec::new(),
        };
        if let Some(len) = resp.header("content-length") {
            let mut body = vec![0; len.parse().unwrap()];
            r.read_exact(&mut body).unwrap();
            resp.body = body;
            return resp;
        }
        loop {
            let size = read_line(&mut r);
            if size.is_empty() {
                return resp; // EOF mid-body
            }
            let size = usize::from_str_radix(&size, 16).unwrap();
            if size == 0 {
                resp.complete = true;
                return resp;
            }
            let mut chunk = vec![0; size + 2];
            r.read_exact(&mut chunk).unwrap();
            chunk.truncate(size);
            resp.chunks.push(chunk);
        }
    }

    #[test]
    fn the_server_answers_converse_stream_one_frame_per_chunk() {
        let server = MockServer::start(Script::new(vec![Turn::tool(
            "terminal",
            json!({"command": "ls"}),
        )]));
        let resp = post(&server, PATH, "Bearer test-key");
        assert_eq!(resp.status, 200);
        assert_eq!(resp.header("content-type"), Some(CONTENT_TYPE));
        assert!(resp.complete);
        let mut kinds = Vec::new();
        for chunk in &resp.chunks {
            let (msgs, rest) = decode(chunk);
            assert_eq!((msgs.len(), rest), (1, 0), "one whole message per chunk");
            kinds.push(msgs[0].header(":event-type").to_string());
        }
        assert_eq!(kinds.first().map(String::as_str), Some("messageStart"));
        assert_eq!(kinds[1], "contentBlockStart");
        assert_eq!(kinds[kinds.len() - 2..], ["messageStop", "metadata"]);
        let reqs = server.requests();
        assert_eq!(reqs[0].path, PATH);
        assert!(reqs[0].is_chat());
        assert_eq!(reqs[0].header("authorization"), Some("Bearer test-key"));
        assert_eq!(server.chat_requests()[0]["messages"][0]["role"], "user");
        assert_eq!(server.turns_consumed(), 1);
    }

    #[test]
    fn http_faults_use_the_bedrock_error_shape() {
        let server = MockServer::start(Script::new(vec![
            Fault::http(429, "Too many requests, please wait before trying again.").into(),
            Fault::http(
                403,
                "You don't have access to the model with the specified model ID.",
            )
            .into(),
        ]));
        let throttled = post(&server, PATH, "Bearer k");
        assert_eq!(throttled.status, 429);
        assert!(
            throttled
                .header("x-amzn-ErrorType")
                .unwrap()
                .starts_with("ThrottlingException:")
        );
        let body: Value = serde_json::from_slice(&throttled.body).unwrap();
        assert_eq!(
            body,
            json!({"message": "Too many requests, please wait before trying again."})
        );
        let denied = post(&server, PATH, "Bearer k");
        assert_eq!(denied.status, 403);
        assert!(
            denied
                .header("x-amzn-errortype")
                .unwrap()
                .starts_with("AccessDeniedException:")
        );
        // Exhausted: Bedrock's 500.
        let exhausted = post(&server, PATH, "Bearer k");
        assert_eq!(exhausted.status, 500);
        assert!(
            exhausted
                .header("x-amzn-ErrorType")
                .unwrap()
                .starts_with("InternalServerException:")
        );
    }

    #[test]
    fn a_mid_stream_drop_sends_whole_frames_then_closes() {
        let server = MockServer::start(Script::new(vec![
            Fault::drop_mid_stream(3, Reply::text("ALPHA-1 ALPHA-2 ALPHA-3").with_chunk_size(4))
                .into(),
        ]));
        let resp = post(&server, PATH, "Bearer k");
        assert_eq!(resp.status, 200);
        assert!(!resp.complete, "no chunked terminator");
        assert_eq!(resp.chunks.len(), 3);
        let bytes: Vec<u8> = resp.chunks.concat();
        let (msgs, rest) = decode(&bytes);
        assert_eq!(rest, 0);
        let kinds: Vec<&str> = msgs.iter().map(|m| m.header(":event-type")).collect();
        assert_eq!(
            kinds,
            ["messageStart", "contentBlockDelta", "contentBlockDelta"]
        );
        assert_eq!(msgs[1].payload["delta"]["text"], "ALPH");
    }

    #[test]
    fn plain_converse_answers_one_json_object() {
        let server = MockServer::start(Script::new(vec![Turn::text("whole")]));
        let resp = post(&server, "/model/m/converse", "Bearer k");
        assert_eq!(resp.status, 200);
        let v: Value = serde_json::from_slice(&resp.body).unwrap();
        assert_eq!(v["output"]["message"]["content"][0]["text"], "whole");
        assert_eq!(v["stopReason"], "end_turn");
    }
}
