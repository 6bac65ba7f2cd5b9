//! The local provider's speed on a real GGUF beside llama.cpp's own, on the same file, build
//! and thread count. The reference runs in a child process: llama-cpp-2's `simple` example
//! loop (one prompt batch, then greedy sample + decode per token). Then the provider runs the
//! same sizes through everything it does (chat template, tokenizer, sampling chain, UTF-8
//! streaming, channel). Both report load time (the provider's includes its first one-token
//! reply), prompt processing (about 512 tokens, like llama-bench's `pp512`) and generation
//! (128 tokens, `tg128`) in tokens per second by the wall clock, and peak RSS.
//!
//! `HERMES_BENCH_GGUF=model.gguf [HERMES_BENCH_THREADS=2] [HERMES_BENCH_REPS=5]
//!  cargo bench -p hermes-local --features llama --bench local_inference`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hermes_config::ModelSettings;
use hermes_llm::{ChatRequest, Provider};
use hermes_local::{LocalProvider, LocalSettings};
use hermes_protocol::{Message, StreamEvent};

pub(crate) fn env_number(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One request: (prompt tokens, seconds to the first token, generated tokens, seconds
/// generating after the first token).
async fn run_once(provider: &LocalProvider, prompt: &str, max_tokens: u32) -> (u64, f64, u64, f64) {
    let messages = [Message::user(prompt)];
    let request = ChatRequest {
        model: "bench",
        system: "",
        messages: &messages,
        tools: &[],
        max_tokens: Some(max_tokens),
        temperature: None,
    };
    let started = Instant::now();
    let mut stream = provider.stream(&request).await.unwrap();
    let mut first: Option<Instant> = None;
    let mut usage = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::TextDelta(_) if first.is_none() => first = Some(Instant::now()),
            StreamEvent::Usage(u) => usage = Some(u),
            _ => {}
        }
    }
    let ended = Instant::now();
    let usage = usage.expect("usage reported");
    let first = first.unwrap_or(ended);
    (
        usage.input_tokens - usage.cache_read_tokens,
        (first - started).as_secs_f64(),
        usage.output_tokens.saturating_sub(1),
        (ended - first).as_secs_f64(),
    )
}

pub(crate) fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

pub(crate) fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

#[path = "local_inference/reference.rs"]
mod reference;

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    if std::env::var_os(reference::CHILD_MARK).is_some() {
        reference::run_child();
        return;
    }
    let Some(path) = std::env::var_os("HERMES_BENCH_GGUF").map(PathBuf::from) else {
        eprintln!("set HERMES_BENCH_GGUF to a GGUF file (e.g. the output of scripts/fetch-model)");
        std::process::exit(2);
    };
    let threads = env_number("HERMES_BENCH_THREADS", 2);
    let reps = env_number("HERMES_BENCH_REPS", 5).max(2);
    let config = ModelSettings {
        context_length: Some(1024),
        threads: Some(threads),
        chat_template: Some("gemma".into()),
        ..ModelSettings::default()
    };
    let settings = LocalSettings::from_config(&config, Some(&path), Path::new("/"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // Load: construction starts loading; the first (1-token) request waits for it.
    let started = Instant::now();
    let provider = LocalProvider::new(settings).unwrap();
    runtime.block_on(run_once(&provider, "hi", 1));
    let load = started.elapsed();

    let words = "the quick brown fox jumps over the lazy dog while ".repeat(50);
    let (mut pp, mut tg) = (Vec::new(), Vec::new());
    let mut prompt_tokens = 0;
    let mut generated = 0;
    for rep in 0..=reps {
        // A different first word each time, so no prompt prefix is reused from the cache.
        let prompt = format!("{rep} {words}");
        let (n_prompt, t_prompt, n_gen, t_gen) =
            runtime.block_on(run_once(&provider, &prompt, 129));
        if rep == 0 {
            continue; // warm-up
        }
        prompt_tokens = n_prompt;
        generated = n_gen;
        pp.push(n_prompt as f64 / t_prompt);
        tg.push(n_gen as f64 / t_gen.max(f64::EPSILON));
    }
    let ours = reference::Figures {
        load_ms: ms(load),
        pp: mean_sd(&pp),
        tg: mean_sd(&tg),
        rss_mib: peak_rss_mib(),
    };
    let base = reference::spawn(&path, threads, reps);
    println!(
        "model: {}  threads: {threads}  repetitions: {reps}",
        path.display()
    );
    println!("prompt: {prompt_tokens} tokens, generated: {generated} tokens per repetition");
    println!(
        "{:<28}{:>12}{:>22}{:>22}{:>12}",
        "", "load ms", "prompt t/s", "generation t/s", "peak RSS"
    );
    for (name, f) in [
        ("llama.cpp (simple loop)", &base),
        ("hermes local provider", &ours),
    ] {
        println!(
            "{name:<28}{:>12.0}{:>22}{:>22}{:>8.0} MiB",
            f.load_ms,
            format!("{:.1} ± {:.1}", f.pp.0, f.pp.1),
            format!("{:.1} ± {:.1}", f.tg.0, f.tg.1),
            f.rss_mib
        );
    }
    println!(
        "hermes / llama.cpp: prompt {:.1} %, generation {:.1} %",
        100.0 * ours.pp.0 / base.pp.0,
        100.0 * ours.tg.0 / base.tg.0
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
