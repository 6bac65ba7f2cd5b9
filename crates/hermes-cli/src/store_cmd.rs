//! `hermes store migrate --to postgres|sqlite`: copies the home's session history (`-p` picks
//! a profile's) and every kanban board from one store to the other (SQLite files in the home,
//! or the PostgreSQL server of `HERMES_STORE_URL`), whatever `store.backend` currently says;
//! what the target already has is left alone, so a second run copies nothing. Counts are
//! printed per table and checked after the copy (the target must hold every source row).

use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use hermes_config::{STORE_URL_VAR, StoreTarget, StoreUrl};
use hermes_kanban::{Board, BoardPaths, ProcessEnv};
use hermes_sql::copy::TableCopy;
use hermes_store::StoreLocation;
use serde_json::json;

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub action: StoreAction,
}

#[derive(Debug, Subcommand)]
pub enum StoreAction {
    /// Copy sessions and kanban boards to the other store (idempotent), then verify counts.
    Migrate {
        /// The store to copy into; the other one is read.
        #[arg(long, value_enum)]
        to: Backend,
        /// Print the counts as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// One group of copied tables (a board, or the sessions).
struct Part {
    name: String,
    tables: Vec<TableCopy>,
}

pub async fn run(top: &CommonArgs, args: &StoreArgs) -> Result<ExitCode, CliError> {
    let StoreAction::Migrate { to, json } = &args.action;
    let (home, _config, env) = crate::session::load_home(top)?;
    let sessions_file = StoreLocation::File(home.join(hermes_store::DB_FILE_NAME));
    let sessions_schema = StoreLocation::postgres_schema(home.profile_name().as_deref());
    let root = hermes_kanban::kanban_root(home.root());
    // The kanban root's .env counts too: the board is shared from there.
    let root_env = hermes_config::Environment::load(&root.join(".env"))
        .map_err(|e| CliError::config(e.to_string()))?;
    let url = env
        .var(STORE_URL_VAR)
        .or_else(|| root_env.var(STORE_URL_VAR))
        .ok_or_else(|| {
            CliError::config(format!(
                "store migrate needs the PostgreSQL URL in {STORE_URL_VAR} (environment or .env)"
            ))
        })?;
    let pg = StoreTarget::Postgres(StoreUrl::new(url.clone()));
    let sessions_pg = StoreLocation::Postgres {
        url: url.clone(),
        schema: sessions_schema,
    };
    let (source, target, sessions) = match to {
        Backend::Postgres => (StoreTarget::Sqlite, pg, (sessions_file, sessions_pg)),
        Backend::Sqlite => (pg, StoreTarget::Sqlite, (sessions_pg, sessions_file)),
    };
    let to_name = target.name();
    let shown = hermes_sql::redact_url(&url);
    let (parts, boards) =
        tokio::task::spawn_blocking(move || copy_all(&root, &sessions, &source, &target))
            .await
            .map_err(|e| CliError::runtime(e.to_string()))??;
    if *json {
        let body: Vec<_> = parts
            .iter()
            .map(|p| {
                json!({
                    "part": p.name,
                    "tables": p.tables.iter().map(|t| json!({
                        "table": t.table,
                        "source_rows": t.source_rows,
                        "copied": t.copied,
                        "target_rows": t.target_rows,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            json!({"to": to_name, "server": shown, "parts": body, "verified": true})
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("Copied to {to_name} ({shown}):");
    for p in &parts {
        println!("{}:", p.name);
        for t in &p.tables {
            println!(
                "  {:<20} {:>7} rows, {:>7} copied, {:>7} in {to_name}",
                t.table, t.source_rows, t.copied, t.target_rows
            );
        }
    }
    println!(
        "Verified: every row of the source is in {to_name} ({} kanban board{}).",
        boards,
        if boards == 1 { "" } else { "s" }
    );
    println!("To use it, set `store.backend: {to_name}` in config.yaml.");
    Ok(ExitCode::SUCCESS)
}

fn copy_all(
    root: &std::path::Path,
    sessions: &(StoreLocation, StoreLocation),
    source: &StoreTarget,
    target: &StoreTarget,
) -> Result<(Vec<Part>, usize), CliError> {
    let store_err = |e: hermes_store::StoreError| CliError::runtime(e.to_string());
    let from = sessions.0.open().map_err(store_err)?;
    let mut to = sessions.1.open().map_err(store_err)?;
    let h = hermes_store::migrate::copy_history(&from, &mut to).map_err(store_err)?;
    let mut parts = vec![Part {
        name: "sessions".into(),
        tables: vec![
            TableCopy {
                table: "sessions".into(),
                source_rows: h.source_sessions,
                copied: h.copied_sessions,
                target_rows: h.target_sessions,
            },
            TableCopy {
                table: "messages".into(),
                source_rows: h.source_messages,
                copied: h.copied_messages,
                target_rows: h.target_messages,
            },
        ],
    }];
    let slugs = hermes_kanban::paths::list_boards(root);
    for slug in &slugs {
        let base = BoardPaths::resolve(root, Some(slug), &ProcessEnv)?;
        let from = Board::open(BoardPaths {
            backend: source.clone(),
            ..base.clone()
        })?;
        let to = Board::open(BoardPaths {
            backend: target.clone(),
            ..base
        })?;
        parts.push(Part {
            name: format!("kanban board {slug}"),
            tables: hermes_kanban::migrate::copy_board(&from, &to)?,
        });
    }
    Ok((parts, slugs.len()))
}
