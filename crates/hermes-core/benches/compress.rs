//! Compression without the model: pruning, boundaries and pair repair (steps 1-3 and 5) on a
//! generated 500-message, ~400K-token history. Prints the tokens before and after pruning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use hermes_core::ModelTarget;
use hermes_core::compress::{CompressionSettings, Compressor};
use hermes_protocol::{Message, ToolCall};
use serde_json::json;

fn prose(chars: usize, seed: u64) -> String {
    const WORDS: [&str; 10] = [
        "fn", "parse", "token", "struct", "impl", "match", "error", "span", "node", "emit",
    ];
    let mut out = String::with_capacity(chars + 16);
    let mut x = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    while out.len() < chars {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push_str(WORDS[(x % 10) as usize]);
        out.push_str(&format!("{} ", x % 1000));
    }
    out
}

/// 500 messages: a user task, then rounds of a tool call and a large result (~3.2K tokens).
fn history() -> Vec<Message> {
    let mut m = vec![Message::user("Rewrite the parser module.")];
    let mut i = 0u64;
    while m.len() < 499 {
        let id = format!("c{i}");
        let (name, args) = if i.is_multiple_of(3) {
            (
                "read_file",
                json!({"path": format!("src/file{}.rs", i % 40)}),
            )
        } else {
            (
                "terminal",
                json!({"command": format!("cargo test --test t{i}")}),
            )
        };
        m.push(Message::assistant_with_tools(
            "",
            vec![ToolCall {
                id: id.clone(),
                name: name.into(),
                arguments: args.to_string(),
            }],
        ));
        m.push(Message::tool_result(
            id,
            name,
            json!({"output": prose(6_400, i), "exit_code": 0}).to_string(),
        ));
        i += 1;
    }
    m.push(Message::user("Continue."));
    m
}

fn bench(c: &mut Criterion) {
    let spec = hermes_llm::ProviderSpec {
        provider: "custom".into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        api_key: None,
        model: "m".into(),
        wire: hermes_llm::WireFormat::OpenAiChat,
        chosen_by: "bench".into(),
        key_source: None,
    };
    let provider = hermes_llm::build_provider(&spec, &hermes_llm::HttpTimeouts::default()).unwrap();
    let compressor = Compressor::new(
        CompressionSettings {
            context_length: Some(1_000_000),
            ..CompressionSettings::default()
        },
        "m",
        ModelTarget {
            provider,
            model: "m".into(),
        },
    );
    let h = history();
    let out = compressor.prune_pass("", &[], &h);
    let exact_before = hermes_core::compress::tokens::exact_request("", &[], &h);
    let exact_after = hermes_core::compress::tokens::exact_request("", &[], &out.messages);
    println!(
        "history: {} messages; tokens before {} (o200k {}), after pruning alone {} (o200k {}); {} results pruned",
        h.len(),
        out.tokens_before,
        exact_before,
        out.tokens_after,
        exact_after,
        out.pruned
    );
    c.bench_function("compress_prune_pass_500_messages", |b| {
        b.iter(|| compressor.prune_pass("", &[], &h))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
