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
async fn run_once(
    provider: &LocalProvider,
    prompt: &str,
    max_tokens: u32,
    temperature: Option<f32>,
) -> (u64, f64, u64, f64) {
    let messages = [Message::user(prompt)];
    let request = ChatRequest {
        model: "bench",
        system: "",
        messages: &messages,
        tools: &[],
        max_tokens: Some(max_tokens),
        temperature,
        reasoning: None,
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
        ..ModelSettings::default()
    };
    let mut settings = LocalSettings::from_config(&config, Some(&path), Path::new("/"));
    // Every request evaluates its whole prompt: no saved prefixes.
    settings.kv_cache_dir = None;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // Load: construction starts loading; the first (1-token) request waits for it.
    let started = Instant::now();
    let provider = LocalProvider::new(settings).unwrap();
    runtime.block_on(run_once(&provider, "hi", 1, None));
    let load = started.elapsed();

    // The three runs alternate, one repetition each, so a busy machine slows them alike.
    let words = "the quick brown fox jumps over the lazy dog while ".repeat(50);
    let mut rows: [Row; 3] = Default::default();
    let mut sizes = (0, 0);
    for rep in 0..=reps {
        // A different first word each time, so no prompt prefix is reused from the cache.
        let sampled = runtime.block_on(run_once(&provider, &format!("{rep}s {words}"), 129, None));
        let greedy = runtime.block_on(run_once(
            &provider,
            &format!("{rep}g {words}"),
            129,
            Some(0.0),
        ));
        if rep == 0 {
            continue; // warm-up
        }
        let base = reference::spawn(&path, threads);
        rows[0].add(base.load_ms, base.pp, base.tg, base.rss_mib);
        for (row, (n_prompt, t_prompt, n_gen, t_gen)) in rows[1..].iter_mut().zip([sampled, greedy])
        {
            sizes = (sizes.0.max(n_prompt), sizes.1.max(n_gen));
            row.add(
                ms(load),
                n_prompt as f64 / t_prompt,
                n_gen as f64 / t_gen.max(f64::EPSILON),
                peak_rss_mib(),
            );
        }
    }
    println!(
        "model: {}  threads: {threads}  repetitions: {reps}",
        path.display()
    );
    println!(
        "prompt: {} tokens, generated: {} tokens per repetition (mean ± sd, median)",
        sizes.0, sizes.1
    );
    println!(
        "{:<34}{:>9}{:>28}{:>28}{:>12}",
        "", "load ms", "prompt t/s", "generation t/s", "peak RSS"
    );
    let names = [
        "llama.cpp (llama-cpp-2 simple)",
        "hermes provider (default sampling)",
        "hermes provider (greedy)",
    ];
    for (name, row) in names.iter().zip(&rows) {
        println!(
            "{name:<34}{:>9.0}{:>28}{:>28}{:>8.0} MiB",
            median(&row.load_ms),
            stats(&row.pp),
            stats(&row.tg),
            row.rss_mib.iter().copied().fold(0.0, f64::max)
        );
    }
    for (name, row) in names.iter().zip(&rows).skip(1) {
        println!(
            "{name} / llama.cpp (medians): prompt {:.1} %, generation {:.1} %",
            100.0 * median(&row.pp) / median(&rows[0].pp),
            100.0 * median(&row.tg) / median(&rows[0].tg)
        );
    }
}

/// One benchmarked configuration's measurements, one entry per repetition.
#[derive(Default)]
struct Row {
    load_ms: Vec<f64>,
    pp: Vec<f64>,
    tg: Vec<f64>,
    rss_mib: Vec<f64>,
}

impl Row {
    fn add(&mut self, load_ms: f64, pp: f64, tg: f64, rss_mib: f64) {
        self.load_ms.push(load_ms);
        self.pp.push(pp);
        self.tg.push(tg);
        self.rss_mib.push(rss_mib);
    }
}

fn stats(values: &[f64]) -> String {
    let (mean, sd) = mean_sd(values);
    format!("{mean:.1} ± {sd:.1}, {:.1}", median(values))
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
