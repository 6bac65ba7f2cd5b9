//! `hermes curator status|run [--dry-run]|pause|resume|pin NAME|unpin NAME|restore NAME`: the
//! curator of the skills the agent wrote, with the Python Hermes's commands and output.
//! `status` (the default) shows whether it runs, its last pass and settings, and the
//! agent-made skills by state; `run` makes a pass now, whatever the schedule (`--dry-run` lists
//! what it would change and changes nothing, not even the state file); `pause`/`resume` flip
//! `paused` in `skills/.curator_state`; `pin`/`unpin` protect a skill from the curator (and
//! from deletion); `restore` brings an archived skill back, active.

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_core::skills::State;
use hermes_core::skills::curator::consolidate::CuratorAction as ConsolidationAction;
use hermes_core::skills::curator::lifecycle::latest_activity;
use hermes_core::skills::curator::{Curator, CuratorError, RunOutcome};
use hermes_core::skills::usage::parse_at;
use hermes_runtime::curator::Consolidation;
use serde_json::{Map, Value};

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct CuratorArgs {
    /// Without an action: status.
    #[command(subcommand)]
    pub action: Option<CuratorAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum CuratorAction {
    /// Whether the curator runs, its last pass, and the agent-made skills by state.
    Status,
    /// Make a pass now: mark unused agent-made skills stale, archive long-unused ones; with
    /// consolidation, then let the model merge overlapping skills into umbrellas.
    Run {
        /// Only say what the pass would change.
        #[arg(long)]
        dry_run: bool,
        /// Run the LLM consolidation pass this time (`curator.consolidate` in config.yaml
        /// turns it on for every pass).
        #[arg(long)]
        consolidate: bool,
    },
    /// Stop the automatic passes (`hermes curator run` still works).
    Pause,
    /// Start the automatic passes again.
    Resume,
    /// Keep a skill out of the curator's passes (and from being deleted).
    Pin {
        /// The skill's name.
        name: String,
    },
    /// Let the curator manage a pinned skill again.
    Unpin {
        /// The skill's name.
        name: String,
    },
    /// Bring an archived skill back from skills/.archive/, active.
    Restore {
        /// The skill's name.
        name: String,
    },
}

/// `top` holds the flags given before the subcommand (`hermes -p NAME curator ...`).
pub async fn run(top: &CommonArgs, args: &CuratorArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        ..CommonArgs::default()
    };
    let (home, config, _) = crate::session::load_home(&common)?;
    let curator = Curator::new(home.root(), &config);
    let now = now();
    let refused = |e: CuratorError| CliError::runtime(format!("curator: {e}"));
    let text = match args.action.as_ref().unwrap_or(&CuratorAction::Status) {
        CuratorAction::Status => status(&curator, now),
        CuratorAction::Run {
            dry_run,
            consolidate,
        } => {
            let consolidate = *consolidate || curator.settings.consolidate;
            pass(&common, &curator, *dry_run, consolidate, now).await?
        }
        CuratorAction::Pause => {
            curator.set_paused(true).map_err(refused)?;
            "curator: paused\n".into()
        }
        CuratorAction::Resume => {
            curator.set_paused(false).map_err(refused)?;
            "curator: resumed\n".into()
        }
        CuratorAction::Pin { name } => {
            curator.pin(name, true).map_err(refused)?;
            format!("curator: pinned '{name}' (will bypass auto-transitions)\n")
        }
        CuratorAction::Unpin { name } => {
            curator.pin(name, false).map_err(refused)?;
            format!("curator: unpinned '{name}'\n")
        }
        CuratorAction::Restore { name } => {
            let dest = curator.restore(name, now).map_err(refused)?;
            // Its last use is as old as it was, so a later pass may archive it again.
            format!(
                "curator: restored to {}\nPin it (`hermes curator pin {name}`) to keep later passes from archiving it again.\n",
                dest.display()
            )
        }
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

async fn pass(
    common: &CommonArgs,
    curator: &Curator,
    dry_run: bool,
    consolidate: bool,
    now: f64,
) -> Result<String, CliError> {
    if !curator.settings.enabled {
        return Err(CliError::runtime(
            "curator: disabled via config; enable with `curator.enabled: true`",
        ));
    }
    let mut out = String::new();
    let verb = |to: State, dry: bool| match (to, dry) {
        (State::Stale, true) => "would mark stale",
        (State::Archived, true) => "would archive",
        (State::Active, true) => "would reactivate",
        (State::Stale, false) => "marked stale",
        (State::Archived, false) => "archived",
        (State::Active, false) => "reactivated",
    };
    if dry_run {
        out.push_str("curator: running DRY-RUN (report only, no mutations)...\n");
        let plan = curator.plan(now);
        for t in &plan.transitions {
            let _ = writeln!(
                out,
                "  {}: {} (unused {}d)",
                verb(t.to, true),
                t.name,
                t.idle_days
            );
        }
        let _ = writeln!(
            out,
            "auto (preview): {} candidate skill(s), {} — no transitions applied in dry-run",
            plan.checked,
            plan.summary()
        );
        if consolidate {
            let runtime = crate::session::runtime(common)?;
            let mut preview = RunOutcome {
                plan,
                snapshot: None,
                archived: Vec::new(),
                summary: String::new(),
            };
            let done =
                hermes_runtime::curator::consolidate(&runtime, curator, &mut preview, now, true)
                    .await;
            consolidation_lines(&mut out, &done);
        }
        out.push_str("dry-run: no changes applied. Run `hermes curator run` (no flag) to apply.\n");
        return Ok(out);
    }
    out.push_str("curator: running review pass...\n");
    let mut outcome = curator
        .run(now)
        .map_err(|e| CliError::runtime(format!("curator: {e}")))?;
    let consolidation = if consolidate {
        let runtime = crate::session::runtime(common)?;
        Some(
            hermes_runtime::curator::consolidate(&runtime, curator, &mut outcome, now, false).await,
        )
    } else {
        None
    };
    if let Some(snap) = &outcome.snapshot
        && let Some(id) = snap.file_name()
    {
        let _ = writeln!(out, "curator: snapshot created ({})", id.to_string_lossy());
    }
    for t in &outcome.plan.transitions {
        let to = outcome
            .archived
            .iter()
            .find(|(n, _)| *n == t.name)
            .map(|(_, p)| format!(" → {}", p.display()))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}: {} (unused {}d){to}",
            verb(t.to, false),
            t.name,
            t.idle_days
        );
    }
    if let Some(done) = &consolidation {
        consolidation_lines(&mut out, done);
    }
    let _ = writeln!(out, "curator: {}", outcome.summary);
    let p = &outcome.plan;
    let _ = writeln!(
        out,
        "auto: checked={} stale={} archived={} reactivated={}",
        p.checked,
        p.count(State::Stale),
        p.count(State::Archived),
        p.count(State::Active)
    );
    Ok(out)
}

/// What the consolidation did, one line per skill it created, changed or archived, then
/// where its report is.
fn consolidation_lines(out: &mut String, done: &Consolidation) {
    if !done.model.is_empty() {
        let _ = writeln!(
            out,
            "curator: consolidation on {} ({})",
            done.model, done.provider
        );
    }
    for action in &done.actions {
        let _ = match action {
            ConsolidationAction::Created(name) => writeln!(out, "  created: {name}"),
            ConsolidationAction::Changed(name) => writeln!(out, "  updated: {name}"),
            ConsolidationAction::Archived {
                name,
                into: Some(into),
            } => writeln!(out, "  consolidated: {name} → {into}"),
            ConsolidationAction::Archived { name, into: None } => {
                writeln!(out, "  pruned: {name}")
            }
        };
    }
    if let Some(error) = &done.error {
        let _ = writeln!(out, "curator: consolidation failed: {error}");
    }
    if let Some(report) = &done.report {
        let _ = writeln!(out, "curator: report {}", report.display());
    }
}

/// `3d ago`, `5h ago`, `never` (the Python `hermes curator status` wording).
fn ago(value: Option<&Value>, now: f64) -> String {
    let Some(at) = value.and_then(parse_at) else {
        return match value.and_then(Value::as_str) {
            Some(raw) => raw.to_string(),
            None => "never".into(),
        };
    };
    since(at, now)
}

fn since(at: f64, now: f64) -> String {
    match (now - at) as i64 {
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86_400),
    }
}

fn status(curator: &Curator, now: f64) -> String {
    let state = curator.state();
    let s = &curator.settings;
    let line = if !s.enabled {
        "DISABLED"
    } else if state.paused() {
        "PAUSED"
    } else {
        "ENABLED"
    };
    let mut out = format!("curator: {line}\n");
    let _ = writeln!(out, "  runs:           {}", state.run_count());
    let _ = writeln!(
        out,
        "  last run:       {}",
        ago(state.fields.get("last_run_at"), now)
    );
    let summary = state.text("last_run_summary").unwrap_or("(none)");
    for (i, l) in summary.lines().enumerate() {
        let label = if i == 0 {
            "  last summary:   "
        } else {
            "                  "
        };
        let _ = writeln!(out, "{label}{l}");
    }
    if let Some(report) = state.text("last_report_path") {
        let missing = if std::path::Path::new(report).exists() {
            ""
        } else {
            " (missing)"
        };
        let _ = writeln!(out, "  last report:    {report}{missing}");
    }
    let _ = writeln!(out, "  interval:       every {}", s.interval_label());
    let _ = writeln!(out, "  idle before:    {}h", s.min_idle_hours);
    let _ = writeln!(out, "  stale after:    {}d unused", s.stale_after_days);
    let _ = writeln!(out, "  archive after:  {}d unused", s.archive_after_days);

    let rows = curator.agent_skills();
    if rows.is_empty() {
        out.push_str("\nno agent-created skills\n");
        return out;
    }
    let _ = writeln!(out, "\nagent-created skills: {} total", rows.len());
    let state_of = |r: &Map<String, Value>| State::of(Some(r));
    for st in [State::Active, State::Stale, State::Archived] {
        let n = rows.iter().filter(|(_, r)| state_of(r) == st).count();
        let _ = writeln!(out, "  {:<10} {n}", st.as_str());
    }
    let pinned: Vec<&str> = rows
        .iter()
        .filter(|(_, r)| r.get("pinned").and_then(Value::as_bool) == Some(true))
        .map(|(n, _)| n.as_str())
        .collect();
    if !pinned.is_empty() {
        let _ = writeln!(out, "\npinned ({}): {}", pinned.len(), pinned.join(", "));
    }
    let mut active: Vec<(&String, &Map<String, Value>, Option<f64>)> = rows
        .iter()
        .filter(|(_, r)| state_of(r) == State::Active)
        .map(|(n, r)| (n, r, latest_activity(r)))
        .collect();
    if !active.is_empty() {
        active.sort_by(|a, b| {
            let key = |x: &(&String, &Map<String, Value>, Option<f64>)| {
                x.2.or_else(|| x.1.get("created_at").and_then(parse_at))
                    .unwrap_or(0.0)
            };
            key(a).total_cmp(&key(b))
        });
        out.push_str("\nleast recently active (top 5):\n");
        for (name, r, last) in active.iter().take(5) {
            let count = |k: &str| r.get(k).and_then(Value::as_u64).unwrap_or(0);
            let (u, v, p) = (
                count("use_count"),
                count("view_count"),
                count("patch_count"),
            );
            let last = last.map_or("never".to_string(), |at| since(at, now));
            let _ = writeln!(
                out,
                "  {name:40}  activity={:3}  use={u:3}  view={v:3}  patches={p:3}  last_activity={last}",
                u + v + p
            );
        }
    }
    out
}

/// When a one-shot or a chat has ended (its answer already out): a curator pass if one is
/// due. Like the Python Hermes at the start of a CLI session, the user counts as idle here; a
/// failure is silent, since it must never turn a finished session into an error.
pub fn after_session(args: &CommonArgs) {
    let Ok((home, config, _)) = crate::session::load_home(args) else {
        return;
    };
    let curator = Curator::new(home.root(), &config);
    if curator.settings.consolidate {
        // The model part takes minutes: a pass that is due runs whole in its own process,
        // so this one exits now.
        let now = now();
        if curator.due(now) {
            match curator.claim(now) {
                Ok(()) => spawn_detached_pass(args),
                Err(e) => tracing::warn!("curator: {e}"),
            }
        }
        return;
    }
    if let Some(outcome) = curator.maybe_run(now(), None) {
        tracing::info!("curator: {}", outcome.summary);
    }
}

/// Starts `hermes [-p NAME] curator run --consolidate` on its own, its output discarded; the
/// pass records itself in the curator's state and report.
fn spawn_detached_pass(args: &CommonArgs) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut command = std::process::Command::new(exe);
    if let Some(profile) = &args.profile {
        command.args(["-p", profile]);
    }
    command
        .args(["curator", "run", "--consolidate"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: a Ctrl-C in this terminal does not stop it.
        command.process_group(0);
    }
    match command.spawn() {
        Ok(child) => tracing::info!("curator: consolidation pass started (pid {})", child.id()),
        Err(e) => tracing::warn!("curator: cannot start the consolidation pass: {e}"),
    }
}

/// The gateway's curator check: at start, then hourly (the Python gateway's poll rate), until
/// `shutdown`; the pass itself runs only when due, off the async threads, followed by the
/// consolidation when `curator.consolidate` is on.
pub async fn gateway_ticker(
    curator: Curator,
    runtime: hermes_runtime::Runtime,
    shutdown: tokio_util::sync::CancellationToken,
) {
    loop {
        let c = curator.clone();
        let started = now();
        if let Ok(Some(mut outcome)) =
            tokio::task::spawn_blocking(move || c.maybe_run(started, None)).await
        {
            if curator.settings.consolidate {
                hermes_runtime::curator::consolidate(
                    &runtime,
                    &curator,
                    &mut outcome,
                    started,
                    false,
                )
                .await;
            }
            tracing::info!("curator: {}", outcome.summary);
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(std::time::Duration::from_secs(3600)) => {}
        }
    }
}
