//! Where `tracing` goes. Every library reports warnings through `tracing`; the binary shows
//! them on stderr as it always spoke, `hermes: MESSAGE`. `-v` adds what Hermes does (info),
//! `-vv` debugging detail; `HERMES_LOG` (an env-filter such as `debug` or `hermes_llm=trace`)
//! chooses precisely and wins over `-v`. Anything below warning level names its level and
//! source, so it is never mistaken for an answer or a warning.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Our crates: by default only they speak (a dependency's own logging stays quiet unless
/// `HERMES_LOG` asks for it).
const OURS: &[&str] = &[
    "hermes",
    "hermes_config",
    "hermes_core",
    "hermes_cron",
    "hermes_gateway",
    "hermes_llm",
    "hermes_local",
    "hermes_mcp",
    "hermes_runtime",
    "hermes_store",
    "hermes_tools",
];

/// Installs the subscriber for this process (once; later calls do nothing).
pub fn init(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = std::env::var("HERMES_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .and_then(|v| EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| {
            let directives: Vec<String> = OURS.iter().map(|c| format!("{c}={level}")).collect();
            EnvFilter::new(directives.join(","))
        });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .event_format(HermesLine)
        .try_init();
}

/// `hermes: MESSAGE` for warnings and errors; `hermes: [LEVEL target] MESSAGE` below.
struct HermesLine;

impl<S, N> FormatEvent<S, N> for HermesLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        write!(writer, "hermes: ")?;
        if *meta.level() > Level::WARN {
            write!(writer, "[{} {}] ", meta.level(), meta.target())?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
