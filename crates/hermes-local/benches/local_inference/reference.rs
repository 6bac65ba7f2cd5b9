//! The llama.cpp reference of the benchmark, in a child process of its own (llama.cpp's
//! backend can be started once per process, and peak RSS is then the reference's alone):
//! llama-cpp-2's `simple` example loop, timed by the wall clock like llama-bench does.

use std::num::NonZeroU32;
use std::path::Path;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;

use crate::{env_number, mean_sd, peak_rss_mib};

/// Set in the child's environment.
pub const CHILD_MARK: &str = "HERMES_BENCH_REFERENCE_CHILD";

/// One reference run: load time, prompt and generation tokens per second, peak RSS.
pub struct Figures {
    pub load_ms: f64,
    pub pp: f64,
    pub tg: f64,
    pub rss_mib: f64,
}

/// Runs this benchmark binary again as the reference (a warm-up and one measured
/// repetition) and reads its one-line result.
pub fn spawn(path: &Path, threads: u32) -> Figures {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .env(CHILD_MARK, "1")
        .env("HERMES_BENCH_GGUF", path)
        .env("HERMES_BENCH_THREADS", threads.to_string())
        .env("HERMES_BENCH_REPS", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("REFERENCE "))
        .unwrap_or_else(|| {
            panic!(
                "reference run failed: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let v: Vec<f64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
    Figures {
        load_ms: v[0],
        pp: v[1],
        tg: v[3],
        rss_mib: v[5],
    }
}

/// The reference itself: llama-cpp-2's `simple` example loop, timed by llama.cpp.
pub fn run_child() {
    let path = std::env::var("HERMES_BENCH_GGUF").unwrap();
    let threads = i32::try_from(env_number("HERMES_BENCH_THREADS", 2)).unwrap();
    let reps = env_number("HERMES_BENCH_REPS", 5);
    llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default().with_logs_enabled(false));
    let backend = LlamaBackend::init().unwrap();
    let started = Instant::now();
    let model = LlamaModel::load_from_file(&backend, &path, &LlamaModelParams::default()).unwrap();
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(1024))
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model.new_context(&backend, params).unwrap();
    let load_ms = started.elapsed().as_secs_f64() * 1000.0;

    let words = "the quick brown fox jumps over the lazy dog while ".repeat(50);
    let (mut pp, mut tg) = (Vec::new(), Vec::new());
    for rep in 0..=reps {
        let tokens = model
            .vocab()
            .tokenize(format!("{rep} {words}").as_bytes(), true, false);
        ctx.clear_kv_cache();
        let prompt_started = Instant::now();
        let mut batch = LlamaBatch::new(tokens.len(), 1);
        let last = tokens.len() - 1;
        for (i, token) in tokens.iter().enumerate() {
            batch
                .add(*token, i32::try_from(i).unwrap(), &[0], i == last)
                .unwrap();
        }
        ctx.decode(&mut batch).unwrap();
        let prompt_secs = prompt_started.elapsed().as_secs_f64();
        let generation_started = Instant::now();
        let mut sampler = LlamaSampler::greedy();
        let start = i32::try_from(tokens.len()).unwrap();
        let mut one = LlamaBatch::new(1, 1);
        let mut logits_at = batch.n_tokens() - 1;
        for pos in start..start + 128 {
            let token = sampler.sample(&ctx, logits_at);
            one.clear();
            one.add(token, pos, &[0], true).unwrap();
            ctx.decode(&mut one).unwrap();
            logits_at = 0;
        }
        let generation_secs = generation_started.elapsed().as_secs_f64();
        if rep == 0 {
            continue; // warm-up
        }
        pp.push(tokens.len() as f64 / prompt_secs);
        tg.push(128.0 / generation_secs);
    }
    let (pp, tg) = (mean_sd(&pp), mean_sd(&tg));
    println!(
        "REFERENCE {load_ms:.1} {:.3} {:.3} {:.3} {:.3} {:.1}",
        pp.0,
        pp.1,
        tg.0,
        tg.1,
        peak_rss_mib()
    );
}
