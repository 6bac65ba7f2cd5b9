//! Store performance: full-text search over 100,000 stored messages (a generated corpus with a
//! Zipf-like vocabulary, 1,000 sessions of 100 messages), and message insert throughput, both
//! directly and through the writer thread.
//!
//! `cargo bench -p hermes-store`; medians are in `target/criterion/*/new/estimates.json`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hermes_protocol::{Message, Role};
use hermes_store::{
    MessageMeta, NewSession, SearchQuery, SessionStart, SessionWriter, Store, StoreOptions,
};

const SESSIONS: usize = 1_000;
const PER_SESSION: usize = 100;
const VOCABULARY: usize = 5_000;

/// A pronounceable made-up word for each vocabulary rank.
fn word(rank: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ner", "ta", "vu", "shi", "pra", "do", "gel", "qu", "zen", "ri", "fo",
        "bal", "tes",
    ];
    let mut n = rank + 16;
    let mut w = String::new();
    while n > 0 {
        w.push_str(SYLLABLES[n % 16]);
        n /= 16;
    }
    w
}

/// Text of `words` words drawn so that rank r appears with probability ~ 1/r.
fn sentence(rng: &mut fastrand::Rng, words: usize) -> String {
    (0..words)
        .map(|_| {
            let rank = (VOCABULARY as f64).powf(rng.f64()) as usize - 1;
            word(rank)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn corpus() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("sessions.db")).unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    for s in 0..SESSIONS {
        let id = format!("session-{s:04}");
        store
            .create_session(&NewSession {
                id: id.clone(),
                source: "cli".into(),
                ..NewSession::default()
            })
            .unwrap();
        for i in 0..PER_SESSION {
            let words = rng.usize(15..60);
            let text = sentence(&mut rng, words);
            let m = if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            };
            store
                .append_message(&id, &m, &MessageMeta::default())
                .unwrap();
        }
    }
    (dir, store)
}

fn search(c: &mut Criterion) {
    let (_dir, store) = corpus();
    let queries = [
        ("common_word", word(4)),
        ("medium_word", word(200)),
        ("rare_word", word(3_000)),
        ("two_words", format!("{} {}", word(30), word(60))),
        ("phrase", format!("\"{} {}\"", word(10), word(11))),
        (
            "phrase_of_most_common_words",
            format!("\"{} {}\"", word(1), word(2)),
        ),
        ("prefix", format!("{}*", &word(700)[..4])),
    ];
    let roles = [Role::User, Role::Assistant];
    let mut group = c.benchmark_group("fts_search_100k");
    group.measurement_time(Duration::from_secs(5));
    for (name, text) in &queries {
        let hits = store.search(&SearchQuery {
            limit: 1_000_000,
            ..SearchQuery::new(text)
        });
        eprintln!(
            "{name} `{text}`: {} matching messages",
            hits.map_or(0, |h| h.len())
        );
        group.bench_with_input(BenchmarkId::new("top20", name), text, |b, text| {
            let q = SearchQuery {
                roles: &roles,
                ..SearchQuery::new(text)
            };
            b.iter(|| black_box(store.search(&q).unwrap()));
        });
    }
    group.bench_function("session_search_tool_path/medium_word", |b| {
        let text = word(200);
        let q = SearchQuery {
            roles: &roles,
            ..SearchQuery::new(&text)
        };
        b.iter(|| black_box(store.search_sessions(&q, 3).unwrap()));
    });
    group.finish();
}

fn insert(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("direct.db")).unwrap();
    store
        .create_session(&NewSession {
            id: "bench".into(),
            source: "cli".into(),
            ..NewSession::default()
        })
        .unwrap();
    let mut rng = fastrand::Rng::with_seed(11);
    let text = sentence(&mut rng, 50);
    let mut group = c.benchmark_group("insert");
    group.throughput(Throughput::Elements(1));
    group.bench_function("append_message_committed", |b| {
        let m = Message::assistant(text.clone());
        b.iter(|| {
            store
                .append_message("bench", &m, &MessageMeta::default())
                .unwrap()
        });
    });
    const BATCH: u64 = 1_000;
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("writer_thread_1000_then_flush", |b| {
        let writer = SessionWriter::spawn(
            dir.path().join("writer.db"),
            SessionStart::New(NewSession {
                id: "bench-writer".into(),
                source: "cli".into(),
                ..NewSession::default()
            }),
            StoreOptions::default(),
        );
        b.iter(|| {
            for _ in 0..BATCH {
                writer.append(Message::user(text.clone()), MessageMeta::default());
            }
            writer.flush().unwrap();
        });
    });
    group.finish();
}

criterion_group!(benches, search, insert);
criterion_main!(benches);
