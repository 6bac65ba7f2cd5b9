//! llama.cpp explains a failed load only in its log ("tensor data is not within the file
//! bounds", "unknown model architecture", ...) and returns a bare null. Its log is routed to
//! `tracing`; [`errors_during`] installs, for one call on this thread, a subscriber that keeps
//! the error lines so the user sees the real reason. Everything else llama.cpp logs is dropped,
//! keeping the terminal clean.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Runs `f`, returning its result and the error messages logged meanwhile on this thread.
pub(crate) fn errors_during<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    let collector = ErrorCollector::default();
    let lines = Arc::clone(&collector.lines);
    let result = tracing::subscriber::with_default(collector, f);
    let lines = lines.lock().map(|l| l.clone()).unwrap_or_default();
    (result, lines)
}

#[derive(Default)]
struct ErrorCollector {
    lines: Arc<Mutex<Vec<String>>>,
}

impl Subscriber for ErrorCollector {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::ERROR
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut message = MessageField(String::new());
        event.record(&mut message);
        let text = message.0.trim().to_string();
        if !text.is_empty()
            && let Ok(mut lines) = self.lines.lock()
        {
            lines.push(text);
        }
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

struct MessageField(String);

impl Visit for MessageField {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_string();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}
