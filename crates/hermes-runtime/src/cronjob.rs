//! The `cronjob` tool (toolset `cronjob`): the model schedules prompts and manages the jobs,
//! with the actions of the Python Hermes's tool (create, list, update, pause, resume, remove,
//! run) over the same `cron/jobs.json`. Prompts are injection-scanned on create and update.
//! `run` starts `hermes cron run ID` as a child process, so the job gets its own fresh
//! session exactly as from the command line. Cron sessions never get this tool.

use std::path::PathBuf;

use hermes_config::HermesHome;
use hermes_cron::{CronStore, Job, JobEdit, NewJob};
use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

pub struct CronjobTool {
    home: PathBuf,
}

impl CronjobTool {
    pub fn new(home: &HermesHome) -> CronjobTool {
        CronjobTool {
            home: home.root().to_path_buf(),
        }
    }

    fn store(&self) -> Result<CronStore, ToolError> {
        let home = HermesHome::at(&self.home);
        let (config, env) =
            hermes_config::load(&home).map_err(|e| ToolError::new(e.to_string()))?;
        Ok(crate::cron::open_store(&home, &config, &env).0)
    }
}

fn text(args: &Value, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_string)
}

fn skills(args: &Value) -> Option<Vec<String>> {
    match args.get("skills")? {
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        Value::String(s) => Some(vec![s.clone()]),
        _ => None,
    }
}

fn err(e: hermes_cron::CronError) -> ToolError {
    ToolError::new(e.to_string())
}

/// A job as the model reads it.
fn describe(job: &Job) -> Value {
    let prompt = job.prompt();
    let preview: String = if prompt.chars().count() > 100 {
        format!("{}...", prompt.chars().take(100).collect::<String>())
    } else {
        prompt
    };
    let mut v = json!({
        "job_id": job.id(),
        "name": job.name(),
        "skills": job.skills(),
        "prompt_preview": preview,
        "schedule": job.schedule_display(),
        "repeat": job.repeat_display(),
        "deliver": job.deliver(),
        "next_run_at": job.next_run_at(),
        "last_run_at": job.last_run_at(),
        "last_status": job.last_status(),
        "state": job.state(),
    });
    if let Some(e) = job.last_error() {
        v["last_error"] = json!(e);
    }
    if let Some(e) = job.last_delivery_error() {
        v["last_delivery_error"] = json!(e);
    }
    v
}

#[async_trait::async_trait]
impl Tool for CronjobTool {
    fn name(&self) -> &str {
        "cronjob"
    }

    fn toolset(&self) -> &str {
        "cronjob"
    }

    fn description(&self) -> &str {
        "Schedule a prompt to run later in a fresh session with no memory of this chat (so it must be self-contained), once or repeatedly, and manage those jobs. The job's final answer is saved as its output. Actions: create (schedule + prompt), list, update, pause, resume, remove, run (now). List first to find a job_id; never guess one."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["create", "list", "update", "pause", "resume", "remove", "run"]},
                "job_id": {"type": "string", "description": "For update, pause, resume, remove, run: id or name"},
                "prompt": {"type": "string", "description": "Self-contained instruction for each run"},
                "schedule": {"type": "string", "description": "'30m' (once, after a delay), 'every 2h', '0 9 * * *' (cron, local time) or an ISO time (once)"},
                "name": {"type": "string"},
                "repeat": {"type": "integer", "description": "Runs before the job completes; default once for one-shots, forever otherwise"},
                "deliver": {"type": "string", "description": "'local' (default: saved) or 'origin' / 'platform:chat_id' (need the messaging gateway)"},
                "skills": {"type": "array", "items": {"type": "string"}, "description": "Skills loaded before the prompt, in order; [] clears on update"}
            },
            "required": ["action"]
        })
    }

    fn preview(&self, args: &Value) -> String {
        let action = text(args, "action").unwrap_or_default();
        match text(args, "job_id").or_else(|| text(args, "schedule")) {
            Some(x) => format!("{action} {x}"),
            None => action,
        }
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let action = text(&args, "action")
            .unwrap_or_default()
            .trim()
            .to_lowercase();
        let store = self.store()?;
        let scan =
            |prompt: &str| crate::cron::check_prompt(prompt).map_err(|e| ToolError::new(e.0));
        match action.as_str() {
            "create" => {
                let schedule = text(&args, "schedule")
                    .filter(|s| !s.trim().is_empty())
                    .ok_or_else(|| ToolError::new("schedule is required for create"))?;
                let prompt = text(&args, "prompt").unwrap_or_default();
                let skills = skills(&args).unwrap_or_default();
                if prompt.trim().is_empty() && skills.is_empty() {
                    return Err(ToolError::new(
                        "create needs a prompt or at least one skill",
                    ));
                }
                scan(&prompt)?;
                let job = store
                    .create(NewJob {
                        prompt,
                        schedule,
                        name: text(&args, "name"),
                        repeat: args.get("repeat").and_then(Value::as_i64),
                        deliver: text(&args, "deliver"),
                        skills,
                        ..NewJob::default()
                    })
                    .map_err(err)?;
                let mut message = format!(
                    "Cron job '{}' created. It runs when `hermes cron tick` runs (from the user's crontab; `hermes cron status` tells).",
                    job.name()
                );
                if let Some(note) = crate::cron::delivery_note(&job) {
                    message.push_str(&format!(" Note: {note}."));
                }
                Ok(json!({
                    "success": true,
                    "job_id": job.id(),
                    "name": job.name(),
                    "schedule": job.schedule_display(),
                    "repeat": job.repeat_display(),
                    "deliver": job.deliver(),
                    "next_run_at": job.next_run_at(),
                    "message": message,
                }))
            }
            "list" => {
                let jobs: Vec<Value> = store.list().map_err(err)?.iter().map(describe).collect();
                Ok(json!({"success": true, "count": jobs.len(), "jobs": jobs}))
            }
            "update" | "pause" | "resume" | "remove" | "run" => {
                let reference = text(&args, "job_id")
                    .filter(|s| !s.trim().is_empty())
                    .ok_or_else(|| ToolError::new(format!("job_id is required for {action}")))?;
                match action.as_str() {
                    "update" => {
                        if let Some(p) = text(&args, "prompt") {
                            scan(&p)?;
                        }
                        let job = store
                            .edit(
                                &reference,
                                JobEdit {
                                    schedule: text(&args, "schedule"),
                                    prompt: text(&args, "prompt"),
                                    name: text(&args, "name"),
                                    deliver: text(&args, "deliver"),
                                    repeat: args.get("repeat").and_then(Value::as_i64),
                                    skills: skills(&args),
                                },
                            )
                            .map_err(err)?;
                        Ok(json!({"success": true, "job": describe(&job)}))
                    }
                    "pause" => {
                        let job = store.pause(&reference, None).map_err(err)?;
                        Ok(json!({"success": true, "job": describe(&job)}))
                    }
                    "resume" => {
                        let job = store.resume(&reference).map_err(err)?;
                        Ok(json!({"success": true, "job": describe(&job)}))
                    }
                    "remove" => {
                        let job = store.remove(&reference).map_err(err)?;
                        Ok(json!({
                            "success": true,
                            "message": format!("Cron job '{}' removed.", job.name()),
                            "removed_job": {"id": job.id(), "name": job.name()},
                        }))
                    }
                    _ => self.run_now(&store, &reference).await,
                }
            }
            other => Err(ToolError::new(format!(
                "unknown action `{other}`: use create, list, update, pause, resume, remove or run"
            ))),
        }
    }
}

impl CronjobTool {
    /// Runs the job now in a child `hermes cron run`, and reports how it went.
    async fn run_now(&self, store: &CronStore, reference: &str) -> ToolResult {
        let job = store.resolve(reference).map_err(err)?;
        let exe = std::env::current_exe()
            .map_err(|e| ToolError::new(format!("cannot find the hermes binary: {e}")))?;
        let out = tokio::process::Command::new(exe)
            .args(["cron", "run", job.id()])
            .env("HERMES_HOME", &self.home)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| ToolError::new(format!("cannot start `hermes cron run`: {e}")))?;
        let after = store.resolve(job.id()).unwrap_or(job);
        let mut result = json!({
            "success": true,
            "executed": out.status.success(),
            "job": describe(&after),
        });
        if !out.status.success() {
            let reason = String::from_utf8_lossy(&out.stderr)
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim_start_matches("hermes: ").to_string())
                .unwrap_or_else(|| format!("exit status {}", out.status));
            result["execution_error"] = json!(reason);
        }
        Ok(result)
    }
}
