//! Content search: a regex over every file of the walk with grep-searcher (binary files
//! skipped at the first NUL byte, line numbers, context lines). Matches are paged by
//! `offset`/`limit`; the walk stops as soon as one result past the page is seen, so a search
//! over a huge tree returns quickly and says whether there is more.

use std::io;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{OutputMode, Query, walk};
use crate::ToolError;
use crate::protect::ProtectedPaths;

/// Characters kept of one matching line (minified files have enormous lines).
const MAX_LINE_CHARS: usize = 500;
/// The most a searcher buffers for one line; a file with a longer line is skipped.
const MAX_LINE_BUFFER: usize = 16 * 1024 * 1024;

pub(crate) fn search(
    q: &Query,
    protected: &ProtectedPaths,
    cancel: &CancellationToken,
) -> Result<Value, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(&q.pattern)
        .map_err(|e| {
            ToolError::new(format!(
                "invalid regex `{}`: {e}. Escape special characters such as ( [ {{ . * + ? with a backslash for a literal search.",
                q.pattern
            ))
        })?;
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(if q.mode == OutputMode::Content {
            q.context
        } else {
            0
        })
        .after_context(if q.mode == OutputMode::Content {
            q.context
        } else {
            0
        })
        .binary_detection(BinaryDetection::quit(0))
        // A single enormous line (minified or hostile files) is not buffered whole.
        .heap_limit(Some(MAX_LINE_BUFFER))
        .build();
    let wanted = q.offset + q.limit;
    let mut collector = Collector {
        window: q.offset..wanted,
        seen: 0,
        out: String::new(),
        pending_before: Vec::new(),
        last_emitted: 0,
        in_window: false,
        mode: q.mode,
        file_matches: 0,
        header: String::new(),
        header_written: false,
    };
    let mut files: Vec<String> = Vec::new();
    let mut counts = serde_json::Map::new();
    let mut file_hits = 0usize;
    let mut more = false;
    for entry in walk::files(&q.root, q.file_glob.as_deref(), protected)? {
        if cancel.is_cancelled() {
            return Err(ToolError::new("search interrupted by the user"));
        }
        let shown = q.display(entry.path());
        collector.start_file(&shown);
        if search_file(
            &mut searcher,
            &matcher,
            entry.path(),
            protected,
            &mut collector,
        )
        .is_err()
        {
            continue;
        }
        match q.mode {
            OutputMode::Content => {
                if collector.seen > wanted {
                    more = true;
                    break;
                }
            }
            OutputMode::FilesOnly | OutputMode::Count => {
                if collector.file_matches == 0 {
                    continue;
                }
                file_hits += 1;
                if file_hits > wanted {
                    more = true;
                    break;
                }
                if file_hits > q.offset {
                    files.push(shown.clone());
                    counts.insert(shown, json!(collector.file_matches));
                }
            }
        }
    }
    let mut result = match q.mode {
        OutputMode::Content => {
            let shown = collector.seen.min(wanted).saturating_sub(q.offset);
            json!({ "matches": collector.out.trim_end(), "match_count": shown })
        }
        OutputMode::FilesOnly => json!({ "files": files }),
        OutputMode::Count => json!({ "counts": counts }),
    };
    if more {
        result["truncated"] = json!(true);
        result["next_offset"] = json!(wanted);
    } else if collector.seen == 0 && file_hits == 0 {
        result["note"] = json!("no matches");
    }
    Ok(result)
}

/// Searches one file, opened and checked first: a FIFO, device or socket swapped in after the
/// walk, or a hard link to a credential, is skipped instead of read.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &std::path::Path,
    protected: &ProtectedPaths,
    collector: &mut Collector,
) -> io::Result<()> {
    let (file, _) = protected
        .open_read(path)
        .map_err(|e| io::Error::other(e.0))?;
    searcher.search_file(matcher, &file, &mut *collector)
}

/// Gathers the matches inside the page window, with their context lines, grouped by file:
/// `path` then `  12: matching line` / `  13- context line`.
struct Collector {
    window: std::ops::Range<usize>,
    /// Matching lines seen so far, over all files.
    seen: usize,
    out: String,
    pending_before: Vec<(u64, String)>,
    /// Last line number written for the current file (avoids repeating context lines).
    last_emitted: u64,
    /// The last match was inside the window (its after-context is shown).
    in_window: bool,
    mode: OutputMode,
    /// Matching lines in the current file.
    file_matches: usize,
    header: String,
    header_written: bool,
}

impl Collector {
    fn start_file(&mut self, shown: &str) {
        self.header = shown.to_string();
        self.header_written = false;
        self.pending_before.clear();
        self.last_emitted = 0;
        self.in_window = false;
        self.file_matches = 0;
    }

    fn emit(&mut self, line: u64, text: &str, sep: char) {
        if line <= self.last_emitted {
            return;
        }
        if !self.header_written {
            self.out.push_str(&self.header);
            self.out.push('\n');
            self.header_written = true;
        } else if self.last_emitted > 0 && line > self.last_emitted + 1 {
            self.out.push_str("  --\n");
        }
        self.out.push_str(&format!("  {line}{sep} {}\n", cap(text)));
        self.last_emitted = line;
    }
}

fn cap(text: &str) -> String {
    let text = text.trim_end_matches(['\n', '\r']);
    if text.chars().count() <= MAX_LINE_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept}… [line truncated]")
}

impl Sink for Collector {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        match self.mode {
            OutputMode::FilesOnly => {
                self.file_matches += 1;
                return Ok(false);
            }
            OutputMode::Count => {
                self.file_matches += mat.lines().count();
                return Ok(true);
            }
            OutputMode::Content => self.file_matches += 1,
        }
        let first_line = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            let in_window = self.window.contains(&self.seen);
            self.seen += 1;
            self.in_window = in_window;
            if in_window {
                for (n, text) in std::mem::take(&mut self.pending_before) {
                    self.emit(n, &text, '-');
                }
                self.emit(first_line + i as u64, &String::from_utf8_lossy(line), ':');
            }
        }
        self.pending_before.clear();
        // Past the page in content mode: one more match proves there is a next page.
        Ok(self.seen <= self.window.end)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        let line = ctx.line_number().unwrap_or(0);
        let text = String::from_utf8_lossy(ctx.bytes()).into_owned();
        match ctx.kind() {
            SinkContextKind::Before => self.pending_before.push((line, text)),
            SinkContextKind::After if self.in_window => self.emit(line, &text, '-'),
            _ => {}
        }
        Ok(true)
    }
}
