//! `hermes cron list|add|edit|pause|resume|run|remove|status|tick`: scheduled jobs in
//! `$HERMES_HOME/cron/jobs.json`, the Python Hermes's file (hermes-cron). There is no daemon:
//! `tick` runs the due jobs once and exits, for the system crontab or a systemd timer; `run ID`
//! runs one job now. Prompts are scanned for injection when a job is added or edited and
//! again before it runs. Running a job and the `cronjob` tool live in hermes-runtime.

pub mod run;

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_cron::{CronError, CronStore, Job, JobEdit, NewJob};
use hermes_runtime::cron::{check_prompt, delivery_note};

use crate::args::CommonArgs;
use crate::error::CliError;

/// The crontab line `hermes cron status` suggests.
pub const CRONTAB_LINE: &str = "* * * * * hermes cron tick >> ~/.hermes/logs/cron.log 2>&1";

#[derive(Debug, Args)]
pub struct CronArgs {
    /// Without an action: list.
    #[command(subcommand)]
    pub action: Option<CronAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME", global = true)]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum CronAction {
    /// The jobs, with schedule, next run and last result.
    List {
        /// Include completed and paused jobs.
        #[arg(long)]
        all: bool,
        /// Print the jobs as a JSON array of their `cron/jobs.json` records.
        #[arg(long)]
        json: bool,
    },
    /// Add a job: `hermes cron add "every 2h" "check the build"`.
    #[command(visible_alias = "create")]
    Add(AddArgs),
    /// Change a job's schedule, prompt, name, delivery, repeat count or skills.
    Edit(EditArgs),
    /// Stop a job from running until it is resumed.
    Pause { job: String },
    /// Resume a paused job; its next run is computed from now.
    Resume { job: String },
    /// Run a job now (whatever its schedule).
    Run { job: String },
    /// Delete a job and its saved outputs.
    #[command(visible_aliases = ["rm", "delete"])]
    Remove { job: String },
    /// Whether anything runs the jobs, and when the next one is due.
    Status,
    /// Run the jobs that are due, once, and exit (for crontab or a systemd timer).
    Tick,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// When: `30m` (once, after a delay), `every 2h`, `0 9 * * *` (cron, local time) or
    /// `2026-02-03T14:00` (once).
    #[arg(value_name = "SCHEDULE")]
    pub schedule_pos: Option<String>,
    /// What the agent is asked each time: a self-contained instruction.
    #[arg(value_name = "PROMPT")]
    pub prompt_pos: Option<String>,
    /// The schedule, as a flag.
    #[arg(long, conflicts_with = "schedule_pos")]
    pub schedule: Option<String>,
    /// The prompt, as a flag.
    #[arg(long, conflicts_with = "prompt_pos")]
    pub prompt: Option<String>,
    /// A name to refer to the job by.
    #[arg(long)]
    pub name: Option<String>,
    /// Where the answer goes: `local` (saved under cron/output/, the default), `origin` or
    /// `platform:chat_id` (delivered by a running `hermes gateway`; saved locally as well).
    #[arg(long)]
    pub deliver: Option<String>,
    /// Runs before the job completes (default: once for one-shots, forever otherwise).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub repeat: Option<i64>,
    /// A skill to load before the prompt; repeat for several.
    #[arg(long = "skill", value_name = "NAME")]
    pub skills: Vec<String>,
}

#[derive(Debug, Args)]
pub struct EditArgs {
    /// The job's id or name.
    pub job: String,
    #[arg(long)]
    pub schedule: Option<String>,
    #[arg(long)]
    pub prompt: Option<String>,
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long)]
    pub deliver: Option<String>,
    /// Runs before the job completes (0: forever).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub repeat: Option<i64>,
    /// Replace the job's skills with these (repeatable).
    #[arg(long = "skill", value_name = "NAME")]
    pub skills: Vec<String>,
    /// Add a skill (repeatable).
    #[arg(long = "add-skill", value_name = "NAME")]
    pub add_skills: Vec<String>,
    /// Remove a skill (repeatable).
    #[arg(long = "remove-skill", value_name = "NAME")]
    pub remove_skills: Vec<String>,
    /// Remove every skill.
    #[arg(long = "clear-skills")]
    pub clear_skills: bool,
}

/// A store failure as the CLI reports it: a wrong id or schedule is a usage error (2).
pub fn cron_error(e: CronError) -> CliError {
    if e.is_usage() {
        CliError::config(e.to_string())
    } else {
        CliError::runtime(e.to_string())
    }
}

/// `top` holds the flags given before the subcommand (`hermes -p NAME cron ...`).
pub async fn run(top: &CommonArgs, args: &CronArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        ..top.clone()
    };
    let runtime = crate::session::runtime(&common)?;
    let (store, zone_warning) =
        hermes_runtime::cron::open_store(runtime.home(), runtime.config(), runtime.env());
    if let Some(w) = zone_warning {
        eprintln!("hermes: {w}");
    }
    let list_all = |all: bool| list_text(&store, all).map_err(cron_error);
    let out = match args.action.as_ref().unwrap_or(&CronAction::List {
        all: false,
        json: false,
    }) {
        CronAction::List { all, json: true } => {
            let listed = listed_jobs(&store, *all).map_err(cron_error)?;
            let latest = latest_executions(&store, &listed);
            let records: Vec<_> = listed
                .iter()
                .map(|j| {
                    let mut record = serde_json::Value::Object(j.fields.clone());
                    record["latest_execution"] = latest
                        .get(j.id())
                        .map_or(serde_json::Value::Null, |e| e.to_json());
                    record
                })
                .collect();
            crate::json_out::print(&records)?;
            return Ok(ExitCode::SUCCESS);
        }
        CronAction::List { all, json: false } => list_all(*all)?,
        CronAction::Add(add) => add_job(&store, add)?,
        CronAction::Edit(edit) => edit_job(&store, edit)?,
        CronAction::Pause { job } => {
            let j = store.pause(job, None).map_err(cron_error)?;
            format!("Paused job: {} ({})\n", j.name(), j.id())
        }
        CronAction::Resume { job } => {
            let j = store.resume(job).map_err(cron_error)?;
            format!(
                "Resumed job: {} ({})\n  Next run: {}\n",
                j.name(),
                j.id(),
                j.next_run_at().unwrap_or("-")
            )
        }
        CronAction::Remove { job } => {
            let j = store.remove(job).map_err(cron_error)?;
            format!("Removed job: {} ({})\n", j.name(), j.id())
        }
        CronAction::Status => status_text(&store).map_err(cron_error)?,
        CronAction::Run { job } => return run::run_now(&common, &runtime, &store, job).await,
        CronAction::Tick => return run::tick(&common, &runtime, &store).await,
    };
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn add_job(store: &CronStore, add: &AddArgs) -> Result<String, CliError> {
    let schedule = add
        .schedule
        .clone()
        .or_else(|| add.schedule_pos.clone())
        .ok_or_else(|| CliError::config("give the schedule: hermes cron add SCHEDULE PROMPT"))?;
    let prompt = add
        .prompt
        .clone()
        .or_else(|| add.prompt_pos.clone())
        .unwrap_or_default();
    if prompt.trim().is_empty() && add.skills.is_empty() {
        return Err(CliError::config(
            "give the prompt (or at least one --skill): hermes cron add SCHEDULE PROMPT",
        ));
    }
    check_prompt(&prompt).map_err(|e| CliError::config(e.0))?;
    let job = store
        .create(NewJob {
            prompt,
            schedule,
            name: add.name.clone(),
            repeat: add.repeat,
            deliver: add.deliver.clone(),
            skills: add.skills.clone(),
            ..NewJob::default()
        })
        .map_err(cron_error)?;
    let mut out = format!(
        "Created job: {}\n  Name: {}\n  Schedule: {}\n",
        job.id(),
        job.name(),
        job.schedule_display()
    );
    if !job.skills().is_empty() {
        let _ = writeln!(out, "  Skills: {}", job.skills().join(", "));
    }
    let _ = writeln!(out, "  Next run: {}", job.next_run_at().unwrap_or("-"));
    if let Some(note) = delivery_note(&job) {
        let _ = writeln!(out, "  Note: {note}");
    }
    let _ = writeln!(
        out,
        "  Jobs run when `hermes cron tick` runs: `hermes cron status` says how to schedule it."
    );
    Ok(out)
}

fn edit_job(store: &CronStore, edit: &EditArgs) -> Result<String, CliError> {
    if let Some(prompt) = &edit.prompt {
        check_prompt(prompt).map_err(|e| CliError::config(e.0))?;
    }
    let skills = if edit.clear_skills {
        Some(Vec::new())
    } else if !edit.skills.is_empty() {
        Some(edit.skills.clone())
    } else if !edit.add_skills.is_empty() || !edit.remove_skills.is_empty() {
        let current = store.resolve(&edit.job).map_err(cron_error)?.skills();
        let mut next: Vec<String> = current
            .into_iter()
            .filter(|s| !edit.remove_skills.contains(s))
            .collect();
        next.extend(edit.add_skills.iter().cloned());
        Some(next)
    } else {
        None
    };
    let job = store
        .edit(
            &edit.job,
            JobEdit {
                schedule: edit.schedule.clone(),
                prompt: edit.prompt.clone(),
                name: edit.name.clone(),
                deliver: edit.deliver.clone(),
                repeat: edit.repeat,
                skills,
            },
        )
        .map_err(cron_error)?;
    let skills = job.skills();
    Ok(format!(
        "Updated job: {}\n  Name: {}\n  Schedule: {}\n  Skills: {}\n  Next run: {}\n",
        job.id(),
        job.name(),
        job.schedule_display(),
        if skills.is_empty() {
            "none".to_string()
        } else {
            skills.join(", ")
        },
        job.next_run_at().unwrap_or("-")
    ))
}

/// The `hermes cron list` text (also what `/cron` shows).
/// The jobs `cron list` shows: active and paused ones, or `all`.
fn listed_jobs(store: &CronStore, all: bool) -> Result<Vec<Job>, CronError> {
    Ok(store
        .list()?
        .into_iter()
        .filter(|j| all || j.enabled() || j.state() == "paused")
        .collect())
}

/// The newest attempt of each job in the execution ledger (none when it cannot be read: the
/// listing still works).
fn latest_executions(
    store: &CronStore,
    jobs: &[Job],
) -> std::collections::HashMap<String, hermes_cron::executions::Execution> {
    let ids: Vec<&str> = jobs.iter().map(Job::id).collect();
    store
        .executions()
        .latest(&ids)
        .inspect_err(|e| eprintln!("hermes: {e}"))
        .unwrap_or_default()
}

pub fn list_text(store: &CronStore, all: bool) -> Result<String, CronError> {
    let jobs = listed_jobs(store, all)?;
    let latest = latest_executions(store, &jobs);
    if jobs.is_empty() {
        return Ok(
            "No scheduled jobs. Add one with `hermes cron add SCHEDULE PROMPT`.\n".to_string(),
        );
    }
    let mut out = String::new();
    for job in &jobs {
        let state = match job.state().as_str() {
            "scheduled" if job.enabled() => "active".to_string(),
            "scheduled" => "disabled".to_string(),
            other => other.to_string(),
        };
        let (times, completed) = job.repeat();
        let repeat = match times {
            Some(t) => format!("{completed}/{t}"),
            None => "∞".to_string(),
        };
        let _ = writeln!(out, "{} [{state}]", job.id());
        let _ = writeln!(out, "    Name:      {}", job.name());
        let _ = writeln!(out, "    Schedule:  {}", job.schedule_display());
        let _ = writeln!(out, "    Repeat:    {repeat}");
        let _ = writeln!(out, "    Next run:  {}", job.next_run_at().unwrap_or("-"));
        let _ = writeln!(out, "    Deliver:   {}", job.deliver());
        let skills = job.skills();
        if !skills.is_empty() {
            let _ = writeln!(out, "    Skills:    {}", skills.join(", "));
        }
        if let Some(status) = job.last_status() {
            let last = job.last_run_at().unwrap_or("?");
            match (status, job.last_error()) {
                ("ok", _) => {
                    let _ = writeln!(out, "    Last run:  {last}  ok");
                }
                (s, err) => {
                    let _ = writeln!(out, "    Last run:  {last}  {s}: {}", err.unwrap_or("?"));
                }
            }
        }
        if let Some(e) = latest.get(job.id()) {
            let _ = writeln!(out, "    Execution: {}  {}", e.status, e.id);
        }
        if let Some(err) = job.last_delivery_error() {
            let _ = writeln!(out, "    Not delivered: {err}");
        }
        out.push('\n');
    }
    Ok(out)
}

fn status_text(store: &CronStore) -> Result<String, CronError> {
    let mut out = String::from(
        "No scheduler runs in the background in this build (there is no gateway): jobs run when `hermes cron tick` runs.\n",
    );
    let _ = writeln!(out, "Run it every minute from your crontab (`crontab -e`):");
    let _ = writeln!(out, "  {CRONTAB_LINE}");
    let _ = writeln!(out, "or from a systemd timer with OnCalendar=minutely.");
    match store.last_tick_age() {
        Some(age) => {
            let _ = writeln!(out, "Last tick: {} ago.", human_age(age));
        }
        None => {
            let _ = writeln!(out, "Last tick: never.");
        }
    }
    let active: Vec<Job> = store.list()?.into_iter().filter(Job::enabled).collect();
    if active.is_empty() {
        let _ = writeln!(out, "No active jobs.");
    } else {
        let _ = writeln!(out, "{} active job(s).", active.len());
        let next = active
            .iter()
            .filter_map(|j| {
                let at = j.next_run_at()?;
                Some((hermes_cron::clock::parse_instant(at)?, at.to_string()))
            })
            .min_by_key(|(t, _)| *t);
        if let Some((_, at)) = next {
            let _ = writeln!(out, "Next run: {at}");
        }
    }
    Ok(out)
}

fn human_age(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        _ => format!("{} h", s / 3600),
    }
}
