//! The Honcho double as a process, for benchmarks that drive an agent binary against it:
//! prints its base URL on the first line of stdout and serves until stdin closes.
//!
//!   cargo run -p hermes-testkit --example honcho_double [API_KEY]

use std::io::BufRead;

use hermes_testkit::platforms::honcho::HonchoMock;

fn main() {
    let key = std::env::args().nth(1);
    let honcho = HonchoMock::start(key.as_deref());
    honcho.answer_chats_with(&["The user prefers short answers."]);
    println!("{}", honcho.base_url());
    // Serve until the parent closes stdin; then report what was asked of it.
    for _ in std::io::stdin().lock().lines() {}
    eprintln!("honcho double: {} requests", honcho.requests().len());
    for route in honcho.routes() {
        eprintln!("  {route}");
    }
}
