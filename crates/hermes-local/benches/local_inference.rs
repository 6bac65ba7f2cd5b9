//! The local provider's speed on a real GGUF, in llama-bench's terms so the two can be put
//! side by side on the same file and thread count: load time, prompt processing (about 512
//! prompt tokens, `pp512`) and generation (128 tokens, `tg128`) in tokens per second through
//! the whole provider (chat template, tokenizer, sampling, streaming), and peak RSS.
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

fn env_number(name: &str, default: u32) -> u32 {
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

fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
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
        let (n_prompt, t_prompt, n_gen, t_gen) = runtime.block_on(run_once(&provider, &prompt, 129));
        if rep == 0 {
            continue; // warm-up
        }
        prompt_tokens = n_prompt;
        generated = n_gen;
        pp.push(n_prompt as f64 / t_prompt);
        tg.push(n_gen as f64 / t_gen.max(f64::EPSILON));
    }
    let (pp_mean, pp_sd) = mean_sd(&pp);
    let (tg_mean, tg_sd) = mean_sd(&tg);
    println!("model: {}  threads: {threads}  repetitions: {reps}", path.display());
    println!("load (first request answered): {:.0} ms", ms(load));
    println!("pp{prompt_tokens}: {pp_mean:.2} ± {pp_sd:.2} t/s");
    println!("tg{generated}: {tg_mean:.2} ± {tg_sd:.2} t/s");
    println!("peak RSS: {:.0} MiB", peak_rss_mib());
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
