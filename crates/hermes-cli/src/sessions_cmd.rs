//! `hermes sessions list|show|search|rename|delete|export|prune|import`: the session store from
//! the command line. Needs no provider and no config, only the home. Deleting asks first unless
//! `--yes` is given; a wrong id is a usage error (exit 2), a damaged or locked database a
//! failure (exit 1) that leaves the file as it was.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use hermes_config::HermesHome;
use hermes_protocol::Role;
use hermes_store::import::PYTHON_DB_FILE_NAME;
use hermes_store::time::{format_utc, now, relative_age};
use hermes_store::{
    ImportReport, SearchQuery, SessionRecord, Store, StoreError, StoredMessage, export,
};
use hermes_tools::output::{shorten_line, truncate_middle};

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub action: SessionsAction,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// List sessions, most recently active first.
    List {
        /// How many to show.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Only sessions from this source (cli, telegram, api, cron, ...).
        #[arg(long)]
        source: Option<String>,
        /// Print the sessions as a JSON array (every stored field but the system prompt).
        #[arg(long)]
        json: bool,
        /// Include the background reviews and curator passes (sources `review`, `curator`), hidden by default.
        #[arg(long)]
        all: bool,
    },
    /// Show a session: its details and every message.
    Show {
        /// Session id, unique id prefix, or title.
        id: String,
    },
    /// Full-text search over past messages.
    Search {
        /// Words, "a phrase", prefix*, OR / NOT.
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// How many matches to show.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Roles to search, comma-separated: user, assistant, tool.
        #[arg(long, value_name = "ROLES", default_value = "user,assistant")]
        role: String,
    },
    /// Set a session's title.
    Rename {
        id: String,
        #[arg(required = true, num_args = 1..)]
        title: Vec<String>,
    },
    /// Delete a session and its messages.
    Delete {
        id: String,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// Export sessions as JSON lines (a record, or a ShareGPT trajectory, per session): one
    /// session (`export ID`, or the Python Hermes's `export OUT --session-id ID`), or every
    /// session when none is named (`export`, `export all.jsonl`). `-` or no file is stdout.
    Export {
        /// A session (id, unique id prefix or title), or the file to write (Python's form; a
        /// word that names no session but looks like a path: `-`, `x.jsonl`, `dir/x`).
        target: Option<String>,
        /// The session to export (the positional word is then the output file).
        #[arg(long = "session-id", value_name = "ID")]
        session_id: Option<String>,
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
        /// Write to FILE instead of stdout.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Compress a session now (summary by the auxiliary model); it continues in a child session,
    /// or in place with `compression.in_place: true`.
    Compress {
        id: String,
        /// What the summary should keep in most detail.
        #[arg(long)]
        focus: Option<String>,
    },
    /// Import the Python Hermes's sessions (its state.db, only read) into this store.
    Import {
        /// The Python Hermes database [default: $HERMES_HOME/state.db].
        #[arg(long, value_name = "PATH")]
        from: Option<PathBuf>,
    },
    /// Delete every session inactive for more than DAYS days.
    Prune {
        #[arg(long = "older-than", value_name = "DAYS", default_value_t = 90)]
        older_than: u32,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// One JSON line: the session's fields and all its messages.
    Jsonl,
    /// One JSON line: `{conversations: [{from, value}], timestamp, model, completed}`.
    Sharegpt,
}

/// Writing to stdout failed (a closed pipe, a full disk).
fn output_error(e: std::io::Error) -> CliError {
    CliError::runtime(format!("cannot write the output: {e}"))
}

pub fn run(common: &CommonArgs, args: &SessionsArgs) -> Result<ExitCode, CliError> {
    let profile = args.profile.as_deref().or(common.profile.as_deref());
    let home = HermesHome::resolve(profile).map_err(|e| CliError::config(e.to_string()))?;
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let (config, env) = hermes_config::load(&home).map_err(|e| CliError::config(e.to_string()))?;
    let location = hermes_runtime::store_location(&home, &config, &env)
        .map_err(|e| CliError::config(e.to_string()))?;
    let mut store = location.open().map_err(store_error)?;
    let mut out = std::io::stdout().lock();
    match &args.action {
        SessionsAction::Compress { .. } => {
            return Err(CliError::runtime(
                "sessions compress runs on the async runtime",
            ));
        }
        SessionsAction::List {
            limit,
            source,
            json: true,
            all,
        } => list_json(&store, *limit, source.as_deref(), *all)?,
        SessionsAction::List {
            limit,
            source,
            json: false,
            all,
        } => {
            let python_db = home.join(PYTHON_DB_FILE_NAME);
            list(
                &store,
                *limit,
                source.as_deref(),
                *all,
                &python_db,
                &mut out,
            )?
        }
        SessionsAction::Show { id } => {
            let session = store.resolve_session(id).map_err(store_error)?;
            let messages = store.messages(&session.id).map_err(store_error)?;
            show(&session, &messages, &mut out).map_err(output_error)?;
        }
        SessionsAction::Search { query, limit, role } => {
            search(&store, &query.join(" "), *limit, role, &mut out)?;
        }
        SessionsAction::Rename { id, title } => {
            let session = store.resolve_session(id).map_err(store_error)?;
            let title = store
                .set_title(&session.id, &title.join(" "))
                .map_err(store_error)?;
            writeln!(out, "Session {} is now titled \"{title}\".", session.id)
                .map_err(output_error)?;
        }
        SessionsAction::Delete { id, yes } => {
            let session = store.resolve_session(id).map_err(store_error)?;
            let what = format!(
                "session {} ({}, {} messages)",
                session.id,
                session.title.as_deref().unwrap_or("untitled"),
                session.message_count
            );
            if !*yes && !confirm(&format!("Delete {what}?"))? {
                return Err(CliError::runtime("nothing was deleted"));
            }
            store.delete_session(&session.id).map_err(store_error)?;
            writeln!(out, "Deleted {what}.").map_err(output_error)?;
        }
        SessionsAction::Export {
            target,
            session_id,
            format,
            output,
        } => {
            let (sessions, output) = export_selection(
                &store,
                target.as_deref(),
                session_id.as_deref(),
                output.as_deref(),
            )?;
            let mut text = String::new();
            for session in &sessions {
                let messages = store.messages(&session.id).map_err(store_error)?;
                text.push_str(&export_line(session, &messages, *format));
                text.push('\n');
            }
            match output {
                Some(path) => std::fs::write(&path, text).map_err(|e| {
                    CliError::runtime(format!("cannot write {}: {e}", path.display()))
                })?,
                None => out.write_all(text.as_bytes()).map_err(output_error)?,
            }
        }
        SessionsAction::Prune { older_than, yes } => {
            prune(&mut store, *older_than, *yes, &mut out)?
        }
        SessionsAction::Import { from } => {
            let path = from
                .clone()
                .unwrap_or_else(|| home.join(PYTHON_DB_FILE_NAME));
            if !path.exists() {
                return Err(CliError::runtime(format!(
                    "there is no Python Hermes database at {} (give its path with --from)",
                    path.display()
                )));
            }
            let report = hermes_store::import_python(&mut store, &path).map_err(import_error)?;
            out.write_all(import_summary(&report).as_bytes())
                .map_err(output_error)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The sessions to export and where to: the forms `export ID [-o FILE]`,
/// `export OUT --session-id ID` and `export [OUT]` (every session, oldest first).
fn export_selection(
    store: &Store,
    target: Option<&str>,
    session_id: Option<&str>,
    output: Option<&Path>,
) -> Result<(Vec<SessionRecord>, Option<PathBuf>), CliError> {
    let file = |word: &str| (word != "-").then(|| PathBuf::from(word));
    let (sessions, positional_output) = match (session_id, target) {
        (Some(id), target) => (
            vec![store.resolve_session(id).map_err(store_error)?],
            target.and_then(file),
        ),
        (None, Some(word)) => match store.resolve_session(word) {
            Ok(session) => (vec![session], None),
            Err(StoreError::SessionNotFound(_)) if looks_like_path(word) => {
                (every_session(store)?, file(word))
            }
            Err(e) => return Err(store_error(e)),
        },
        (None, None) => (every_session(store)?, None),
    };
    if output.is_some() && positional_output.is_some() {
        return Err(CliError::config(
            "give the output file once: as the positional OUT or with -o, not both",
        ));
    }
    Ok((
        sessions,
        output.map(Path::to_path_buf).or(positional_output),
    ))
}

/// Whether a word that names no session was meant as an output file (`-`, `all.jsonl`,
/// `out/x`), rather than a mistyped session id, which stays an error.
fn looks_like_path(word: &str) -> bool {
    word == "-" || word.contains(['/', '.'])
}

fn every_session(store: &Store) -> Result<Vec<SessionRecord>, CliError> {
    let mut all: Vec<SessionRecord> = store
        .list_sessions(i64::MAX as usize, None)
        .map_err(store_error)?
        .into_iter()
        .map(|s| s.session)
        .collect();
    all.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
    Ok(all)
}

fn export_line(
    session: &SessionRecord,
    messages: &[StoredMessage],
    format: ExportFormat,
) -> String {
    match format {
        ExportFormat::Jsonl => export::session_json(session, messages).to_string(),
        ExportFormat::Sharegpt => export::session_trajectory(session, messages).to_json_line(),
    }
}

/// `sessions list --json`: the listing's sessions with every stored field and the preview,
/// without the system prompt (kilobytes per session; `sessions export` has it).
fn list_json(store: &Store, limit: usize, source: Option<&str>, all: bool) -> Result<(), CliError> {
    let sessions = listed(store, limit, source, all)?;
    let records: Vec<serde_json::Value> = sessions
        .iter()
        .map(|s| {
            let mut record = serde_json::to_value(s).unwrap_or_default();
            if let Some(fields) = record.as_object_mut() {
                fields.remove("system_prompt");
            }
            record
        })
        .collect();
    crate::json_out::print(&records)
}

/// The sessions `sessions list` shows: the background reviews and curator passes only with
/// `--all` (or `--source review` / `--source curator`).
fn listed(
    store: &Store,
    limit: usize,
    source: Option<&str>,
    all: bool,
) -> Result<Vec<hermes_store::SessionSummary>, CliError> {
    let listed = if all {
        store.list_sessions(limit, source)
    } else {
        store.list_sessions_hiding(
            limit,
            source,
            &[
                hermes_runtime::review::SOURCE,
                hermes_runtime::curator::SOURCE,
            ],
        )
    };
    listed.map_err(store_error)
}

fn list(
    store: &Store,
    limit: usize,
    source: Option<&str>,
    all: bool,
    python_db: &Path,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let sessions = listed(store, limit, source, all)?;
    if sessions.is_empty() {
        if source.is_none() && python_db.is_file() {
            return writeln!(
                out,
                "No sessions yet; the Python Hermes's are in {} (`hermes sessions import` brings them here).",
                python_db.display()
            )
            .map_err(output_error);
        }
        return writeln!(out, "No sessions yet.").map_err(output_error);
    }
    let now = now();
    let mut text = format!(
        "{:<24}{:<48}{:>6}  LAST ACTIVE\n",
        "ID", "TITLE / FIRST MESSAGE", "MSGS"
    );
    for s in sessions {
        let label = s.session.title.clone().unwrap_or(s.preview);
        text.push_str(&format!(
            "{:<24}{}{:>6}  {}\n",
            s.session.id,
            fit_columns(&shorten_line(&label, 46), 46, 48),
            s.session.message_count,
            relative_age(s.session.updated_at, now)
        ));
    }
    out.write_all(text.as_bytes()).map_err(output_error)
}

/// `text` cut to at most `max` screen columns (wide characters such as CJK take two) and padded
/// with spaces to `pad` columns, so the table stays aligned.
fn fit_columns(text: &str, max: usize, pad: usize) -> String {
    let width = crate::tui::style::width;
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > max {
            out.pop();
            out.push('…');
            used = width(&out);
            break;
        }
        out.push(c);
        used += w;
    }
    out.push_str(&" ".repeat(pad.saturating_sub(used)));
    out
}

fn show(
    s: &SessionRecord,
    messages: &[StoredMessage],
    out: &mut impl Write,
) -> std::io::Result<()> {
    writeln!(out, "Session {}", s.id)?;
    if let Some(t) = &s.title {
        writeln!(out, "  title     {t}")?;
    }
    let model = [s.model.as_deref(), s.provider.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" via ");
    writeln!(
        out,
        "  source    {} · {}",
        s.source,
        if model.is_empty() { "-" } else { &model }
    )?;
    if let Some(cwd) = &s.cwd {
        writeln!(out, "  cwd       {cwd}")?;
    }
    writeln!(out, "  started   {}", format_utc(s.started_at))?;
    match (s.ended_at, &s.end_reason) {
        (Some(t), reason) => writeln!(
            out,
            "  ended     {} ({})",
            format_utc(t),
            reason.as_deref().unwrap_or("-")
        )?,
        (None, _) => writeln!(out, "  active    {}", format_utc(s.updated_at))?,
    }
    writeln!(
        out,
        "  counts    {} messages · {} tool calls · {} model calls",
        s.message_count, s.tool_call_count, s.api_call_count
    )?;
    writeln!(
        out,
        "  tokens    {} in ({} cache read, {} cache write) · {} out · cost {}",
        s.input_tokens,
        s.cache_read_tokens,
        s.cache_write_tokens,
        s.output_tokens,
        s.estimated_cost_usd
            .map_or("unknown".to_string(), |c| format!("${c:.4}"))
    )?;
    for m in messages {
        let mut head = format!("\n[{}] {}", m.id, m.message.role.as_str());
        if let Some(name) = &m.message.name {
            head.push_str(&format!(" {name}"));
        }
        if m.partial || m.finish_reason.as_deref() == Some(hermes_store::INTERRUPTED) {
            head.push_str(" (interrupted)");
        }
        head.push_str(&format!(" · {}", format_utc(m.timestamp)));
        writeln!(out, "{head}")?;
        let body = match m.message.role {
            Role::Tool => truncate_middle(&m.message.content, 2_000, 0.7),
            _ => m.message.content.clone(),
        };
        if !body.is_empty() {
            writeln!(out, "{body}")?;
        }
        for call in &m.message.tool_calls {
            writeln!(
                out,
                "  → {} {}",
                call.name,
                shorten_line(&call.arguments, 200)
            )?;
        }
    }
    Ok(())
}

fn search(
    store: &Store,
    query: &str,
    limit: usize,
    roles: &str,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let mut wanted = Vec::new();
    for r in roles.split(',').map(str::trim).filter(|r| !r.is_empty()) {
        wanted.push(match r {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => {
                return Err(CliError::config(format!(
                    "--role: unknown role `{other}` (use user, assistant, tool)"
                )));
            }
        });
    }
    let marks = if std::io::stdout().is_terminal() {
        ("\x1b[1;33m", "\x1b[0m")
    } else {
        (">>>", "<<<")
    };
    let q = SearchQuery {
        roles: &wanted,
        limit,
        highlight: marks,
        ..SearchQuery::new(query)
    };
    let hits = store.search(&q).map_err(store_error)?;
    if hits.is_empty() {
        return writeln!(out, "No messages match.").map_err(output_error);
    }
    let mut text = String::new();
    for h in hits {
        text.push_str(&format!(
            "{} · {} · {}\n",
            h.session_id,
            h.session_title.as_deref().unwrap_or("untitled"),
            format_utc(h.timestamp)
        ));
        let snippet = h.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
        text.push_str(&format!("  [{}] {}: {snippet}\n", h.message_id, h.role));
    }
    out.write_all(text.as_bytes()).map_err(output_error)
}

fn prune(store: &mut Store, days: u32, yes: bool, out: &mut impl Write) -> Result<(), CliError> {
    let age = f64::from(days) * 86_400.0;
    let cutoff = now() - age;
    let stale = store
        .list_sessions(i64::MAX as usize, None)
        .map_err(store_error)?
        .into_iter()
        .filter(|s| s.session.updated_at < cutoff)
        .count();
    if stale == 0 {
        return writeln!(out, "No sessions inactive for more than {days} days.")
            .map_err(output_error);
    }
    let question = format!("Delete {stale} sessions inactive for more than {days} days?");
    if !yes && !confirm(&question)? {
        return Err(CliError::runtime("nothing was deleted"));
    }
    let deleted = store.prune_sessions(age).map_err(store_error)?;
    writeln!(out, "Deleted {} sessions.", deleted.len()).map_err(output_error)
}

/// An import refused: the Python file is named as such, and nothing was imported.
fn import_error(e: StoreError) -> CliError {
    match e {
        StoreError::NotOurs { path, detail } => CliError::runtime(format!(
            "{} is not the Python Hermes's state.db ({detail}); nothing was imported and the file was left untouched",
            path.display()
        )),
        StoreError::NewerSchema { path, found, known } => CliError::runtime(format!(
            "{} is from a newer Python Hermes (schema version {found}; this build reads up to {known}) and lacks what the import needs; nothing was imported",
            path.display()
        )),
        other => store_error(other),
    }
}

/// `Imported 12 sessions (1,234 messages) from PATH; 3 already here.`, then a line for each
/// title that was taken here and anything left out.
fn import_summary(r: &ImportReport) -> String {
    let plural = |n: usize, one: &str, many: &str| {
        format!(
            "{} {}",
            hermes_llm::util::thousands(n as u64),
            if n == 1 { one } else { many }
        )
    };
    let mut text = format!(
        "Imported {} ({}) from {}",
        plural(r.sessions_imported, "session", "sessions"),
        plural(r.messages_imported, "message", "messages"),
        r.source.display()
    );
    if r.sessions_skipped > 0 {
        text.push_str(&format!("; {} already here", r.sessions_skipped));
    }
    text.push_str(".\n");
    for (id, title) in &r.retitled {
        text.push_str(&format!(
            "  {id}: its title was taken here, now \"{title}\"\n"
        ));
    }
    if r.messages_dropped > 0 {
        text.push_str(&format!(
            "  {} left out (roles this Hermes does not keep)\n",
            plural(r.messages_dropped, "message", "messages")
        ));
    }
    text
}

/// Asks on stderr, reads the answer from stdin; only `y`/`yes` agrees.
fn confirm(question: &str) -> Result<bool, CliError> {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::runtime(format!("cannot read the answer: {e}")))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Store failures: a wrong name is a usage error (2), a damaged or locked database a failed
/// run (1).
fn store_error(e: hermes_store::StoreError) -> CliError {
    CliError::from(hermes_runtime::SessionError::from(e))
}

#[cfg(test)]
mod tests {
    use super::fit_columns;
    use crate::tui::style::width;

    #[test]
    fn wide_titles_keep_the_table_aligned() {
        assert_eq!(
            fit_columns("plain", 46, 48),
            format!("plain{}", " ".repeat(43))
        );
        let cjk = fit_columns("東京の天気", 46, 48);
        assert_eq!(width(&cjk), 48);
        assert!(cjk.starts_with("東京の天気"));
        let long = fit_columns(&"天".repeat(40), 46, 48);
        assert_eq!(width(&long), 48);
        assert!(long.trim_end().ends_with('…'));
    }
}
