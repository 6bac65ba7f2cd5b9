//! Property test: whatever a server streams back (events of each wire format with arbitrary
//! field values, truncated JSON, wrong types, unknown events, comments and junk, in any order),
//! the provider and the response accumulator end in a response or a clear error, never a panic
//! or a hang. Each case goes through the real HTTP path against the mock server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{one_message, plain_request, provider_at};

use futures_util::StreamExt;
use hermes_llm::{ResponseAccumulator, WireFormat};
use hermes_testkit::{Fault, MockServer, Script};
use proptest::prelude::*;
use serde_json::json;

/// A JSON string value: plain words, escapes, Unicode, or JSON fragments.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,12}",
        ".{0,12}",
        Just("{\"cmd\": \"ls".to_string()),
        Just("}\"]".to_string()),
        Just("\u{200b}\u{202e}é😀".to_string()),
    ]
}

/// A value where a number or object is expected: sometimes the wrong type.
fn index() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        (0u64..4).prop_map(|n| json!(n)),
        Just(json!(-1)),
        Just(json!(u64::MAX)),
        Just(json!("0")),
        Just(json!(null)),
    ]
}

fn data(v: serde_json::Value) -> String {
    format!("data: {v}")
}

fn event(name: &str, v: serde_json::Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

fn openai_entry() -> impl Strategy<Value = String> {
    prop_oneof![
        text().prop_map(|t| data(json!({"choices": [{"index": 0, "delta": {"content": t}}]}))),
        text().prop_map(|t| data(json!({"choices": [{"delta": {"reasoning_content": t}}]}))),
        (index(), proptest::option::of(text()), proptest::option::of(text()), text()).prop_map(
            |(i, id, name, args)| data(json!({"choices": [{"delta": {"tool_calls": [
                {"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": args}}
            ]}}]}))
        ),
        prop_oneof![Just("stop"), Just("tool_calls"), Just("length"), Just("weird")].prop_map(
            |r| data(json!({"choices": [{"delta": {}, "finish_reason": r}]}))
        ),
        index().prop_map(|n| data(json!({"choices": [], "usage": {"prompt_tokens": n, "completion_tokens": 3}}))),
        text().prop_map(|m| data(json!({"error": {"message": m, "type": "server_error"}}))),
        Just("data: [DONE]".to_string()),
        Just(data(json!({"choices": [{"delta": {"content": 7}}]}))),
        Just(data(json!({"choices": null}))),
    ]
}

fn anthropic_entry() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(event("message_start", json!({"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}))),
        (index(), text(), text()).prop_map(|(i, id, name)| event("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}))),
        (index(), prop_oneof![Just("text"), Just("thinking"), Just("redacted_thinking")]).prop_map(|(i, kind)| event("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": kind}}))),
        (index(), text()).prop_map(|(i, t)| event("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": t}}))),
        (index(), text()).prop_map(|(i, t)| event("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": t}}))),
        (index(), text()).prop_map(|(i, t)| event("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": t}}))),
        (index(), text()).prop_map(|(i, t)| event("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "signature_delta", "signature": t}}))),
        index().prop_map(|i| event("content_block_stop", json!({"type": "content_block_stop", "index": i}))),
        (prop_oneof![Just("end_turn"), Just("tool_use"), Just("max_tokens"), Just("x")], index()).prop_map(|(r, n)| event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": r}, "usage": {"output_tokens": n}}))),
        Just(event("message_stop", json!({"type": "message_stop"}))),
        Just(event("ping", json!({"type": "ping"}))),
        text().prop_map(|m| event("error", json!({"type": "error", "error": {"type": "overloaded_error", "message": m}}))),
    ]
}

fn responses_entry() -> impl Strategy<Value = String> {
    prop_oneof![
        text().prop_map(|t| event("response.output_text.delta", json!({"type": "response.output_text.delta", "delta": t}))),
        text().prop_map(|t| event("response.reasoning_summary_text.delta", json!({"type": "response.reasoning_summary_text.delta", "delta": t}))),
        (index(), text(), text()).prop_map(|(i, id, name)| event("response.output_item.added", json!({"type": "response.output_item.added", "output_index": i, "item": {"type": "function_call", "id": id, "call_id": id, "name": name, "arguments": ""}}))),
        (index(), text()).prop_map(|(i, t)| event("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta", "output_index": i, "delta": t}))),
        (index(), text()).prop_map(|(i, id)| event("response.output_item.done", json!({"type": "response.output_item.done", "output_index": i, "item": {"type": "function_call", "call_id": id, "name": "terminal", "arguments": "{}"}}))),
        index().prop_map(|n| event("response.completed", json!({"type": "response.completed", "response": {"status": "completed", "output": [], "usage": {"input_tokens": n, "output_tokens": 2}}}))),
        text().prop_map(|m| event("response.failed", json!({"type": "response.failed", "response": {"error": {"code": "server_error", "message": m}}}))),
    ]
}

/// Noise any stream may carry: comments, retry lines, unknown events, broken JSON.
fn junk() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(": keep-alive".to_string()),
        Just("retry: 100".to_string()),
        ".{0,30}".prop_map(|t| format!("data: {t}")),
        ".{0,30}",
        "[a-z._]{1,20}".prop_map(|e| event(&e, json!({"type": e}))),
        Just("data: {\"choices\": [{\"delta\": {\"content\": \"cut".to_string()),
    ]
}

fn stream_of(entry: impl Strategy<Value = String>) -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(prop_oneof![4 => entry, 1 => junk()], 0..24)
}

/// Streams `entries` to the provider for `wire` and drains it.
fn drain(wire: WireFormat, entries: Vec<String>) {
    let server = MockServer::start(Script::new(vec![Fault::raw_sse(entries).into()]));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let provider = provider_at(&server, wire);
        let messages = one_message();
        let req = plain_request(&messages);
        let Ok(mut stream) = provider.stream(&req).await else {
            return;
        };
        let mut acc = ResponseAccumulator::new();
        let drained = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while let Some(event) = stream.next().await {
                match event {
                    Ok(e) => acc.push(&e),
                    Err(e) => {
                        assert!(!e.to_string().is_empty());
                        break;
                    }
                }
            }
        })
        .await;
        assert!(drained.is_ok(), "the stream never ended");
        let _ = acc.finish();
    });
}

proptest! {
    #![proptest_config(hermes_testkit::proptest_config(150))]

    #[test]
    fn openai_chat_streams_never_panic(entries in stream_of(openai_entry())) {
        drain(WireFormat::OpenAiChat, entries);
    }

    #[test]
    fn anthropic_streams_never_panic(entries in stream_of(anthropic_entry())) {
        drain(WireFormat::Anthropic, entries);
    }

    #[test]
    fn responses_streams_never_panic(entries in stream_of(responses_entry())) {
        drain(WireFormat::Responses, entries);
    }
}

/// AWS event-stream framing: arbitrary bytes, and valid frames cut at arbitrary points or with
/// flipped bytes, give frames or an error, never a panic or a huge allocation.
#[cfg(feature = "bedrock")]
mod bedrock_frames {
    use hermes_llm::bedrock::eventstream::FrameDecoder;
    use proptest::prelude::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        hermes_testkit::bedrock_stream::message(
            &[
                (":event-type", "contentBlockDelta"),
                (":message-type", "event"),
            ],
            payload,
        )
    }

    proptest! {
        #![proptest_config(hermes_testkit::proptest_config(400))]

        #[test]
        fn arbitrary_bytes_never_panic(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)) {
            let mut decoder = FrameDecoder::new();
            for chunk in &chunks {
                if decoder.push(chunk).is_err() {
                    break;
                }
            }
        }

        #[test]
        fn damaged_frames_never_panic(
            payload in proptest::collection::vec(any::<u8>(), 0..80),
            cut in 0usize..200,
            flip in proptest::option::of((0usize..200, any::<u8>())),
        ) {
            let mut bytes = frame(&payload);
            bytes.extend(frame(b"{}"));
            if let Some((at, value)) = flip {
                let at = at % bytes.len();
                bytes[at] ^= value | 1;
            }
            let cut = cut.min(bytes.len());
            let mut decoder = FrameDecoder::new();
            let first = decoder.push(&bytes[..cut]);
            if first.is_ok() {
                let _ = decoder.push(&bytes[cut..]);
            }
            if flip.is_none() {
                let mut clean = FrameDecoder::new();
                let frames = clean.push(&bytes).unwrap();
                prop_assert_eq!(frames.len(), 2);
                prop_assert_eq!(&frames[0].payload, &payload);
            }
        }
    }
}
