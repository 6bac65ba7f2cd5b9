//! `hermes setup`: the first configuration, guided. Asks (or takes from flags) the provider, its
//! API key, the base URL where one is needed and the model; writes `model.*` into config.yaml as
//! text edits that keep the file's comments, the key into `.env` (owner-only, never into
//! config.yaml), and then runs `hermes doctor` so the user sees at once whether it works.
//! Without a terminal every answer must come from flags (`--key-stdin` reads the key).

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use clap::Args;
use hermes_config::{Environment, HermesHome};
use hermes_llm::resolve::{LOCAL_PROVIDER, PRESETS, Preset, WireFormat, preset};
use serde_json::Value;

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The provider (openrouter, anthropic, openai, nous, gemini, deepseek, xai, bedrock, ollama,
    /// vllm, llamacpp, lmstudio, custom, local).
    #[arg(long)]
    pub provider: Option<String>,
    /// The model (default: the provider's usual one).
    #[arg(long)]
    pub model: Option<String>,
    /// The endpoint, for `custom` (or to move a local server to another port).
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,
    /// Read the API key from standard input (one line) instead of asking for it.
    #[arg(long = "key-stdin")]
    pub key_stdin: bool,
    /// Do not run `hermes doctor` at the end (no network request).
    #[arg(long = "no-check")]
    pub no_check: bool,
    /// Set up the profile NAME: the home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

/// What was decided, before anything is written.
struct Plan {
    provider: &'static Preset,
    model: Option<String>,
    base_url: Option<String>,
    /// `(variable, key)` to store in `.env`.
    key: Option<(String, String)>,
}

pub async fn run(top: &CommonArgs, args: &SetupArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        ..CommonArgs::default()
    };
    let (home, config, env) = crate::session::load_home(&common)?;
    let interactive = std::io::stdin().is_terminal() && !args.key_stdin;
    let mut ask = Asker { interactive };
    let plan = decide(args, &config.raw, &env, &mut ask)?;
    let notes = write(&home, &config.raw, &plan)?;
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| CliError::runtime(format!("cannot write the output: {e}"));
    for note in notes {
        writeln!(out, "{note}").map_err(io)?;
    }
    out.flush().map_err(io)?;
    drop(out);
    if args.no_check {
        return Ok(ExitCode::SUCCESS);
    }
    println!();
    let doctor = crate::status_cmd::DoctorArgs {
        profile: common.profile.clone(),
        offline: false,
    };
    crate::status_cmd::doctor(&CommonArgs::default(), &doctor).await
}

/// Provider, base URL, key and model: each from its flag, else asked on a terminal.
fn decide(
    args: &SetupArgs,
    raw: &Value,
    env: &Environment,
    ask: &mut Asker,
) -> Result<Plan, CliError> {
    let current_provider = raw
        .pointer("/model/provider")
        .and_then(Value::as_str)
        .map(str::to_string);
    let name = match &args.provider {
        Some(p) => p.clone(),
        None => ask.provider(current_provider.as_deref())?,
    };
    let provider = preset(&name).ok_or_else(|| {
        CliError::config(format!(
            "unknown provider `{name}` (one of: {})",
            PRESETS.iter().map(|p| p.id).collect::<Vec<_>>().join(", ")
        ))
    })?;

    let base_url = match &args.base_url {
        Some(url) => Some(url.trim().to_string()),
        None if provider.id == "custom" => Some(ask.line(
            "Base URL of the OpenAI-compatible endpoint (e.g. http://localhost:8000/v1)",
            None,
            true,
        )?),
        None => None,
    };

    let key = match provider.key_env.first() {
        None => None,
        Some(var) => {
            let given = if args.key_stdin {
                Some(read_stdin_line()?)
            } else if let Some(existing) = provider.key_env.iter().find(|v| env.var(v).is_some()) {
                ask.say(&format!(
                    "Using the key in {existing} ({}).",
                    if env.is_from_dotenv(existing) {
                        ".env"
                    } else {
                        "the environment"
                    }
                ));
                None
            } else {
                ask.secret(var)?
            };
            given
                .filter(|k| !k.trim().is_empty())
                .map(|k| (var.to_string(), k.trim().to_string()))
        }
    };

    let same_provider = current_provider.as_deref() == Some(provider.id);
    let current_model = raw
        .pointer("/model/default")
        .and_then(Value::as_str)
        .filter(|_| same_provider)
        .map(str::to_string);
    let suggested = current_model.or_else(|| provider.default_model.map(str::to_string));
    let model = match &args.model {
        Some(m) => Some(m.trim().to_string()),
        None if ask.interactive => {
            let needed = suggested.is_none() && provider.id != LOCAL_PROVIDER;
            let answer = ask.line("Model", suggested.as_deref(), needed)?;
            (!answer.is_empty()).then_some(answer).or(suggested)
        }
        None if suggested.is_none() && provider.wire != WireFormat::Bedrock => {
            return Err(CliError::config(format!(
                "`{}` has no default model: give one with --model",
                provider.id
            )));
        }
        None => suggested,
    };
    Ok(Plan {
        provider,
        model,
        base_url,
        key,
    })
}

/// Writes the plan; returns what to tell the user.
fn write(home: &HermesHome, raw: &Value, plan: &Plan) -> Result<Vec<String>, CliError> {
    let path = home.config_path();
    let edit_err = |e: hermes_config::edit::EditError| CliError::runtime(e.to_string());
    let set = |key: &str, value: &str| {
        hermes_config::edit::set(&path, key, &Value::String(value.into())).map_err(edit_err)
    };
    let mut notes = Vec::new();
    set("model.provider", plan.provider.id)?;
    if let Some(model) = &plan.model {
        set("model.default", model)?;
    }
    let previous = raw.pointer("/model/provider").and_then(Value::as_str);
    let switched = previous.is_some_and(|p| p != plan.provider.id);
    if let Some(url) = &plan.base_url {
        set("model.base_url", url)?;
    } else if switched && hermes_config::edit::unset(&path, "model.base_url").map_err(edit_err)? {
        // A base URL left from another provider would send this one's requests there.
        notes.push("Removed model.base_url (it belonged to the previous provider).".into());
    }
    if (switched || plan.key.is_some())
        && raw.pointer("/model/api_key").is_some()
        && hermes_config::edit::unset(&path, "model.api_key").map_err(edit_err)?
    {
        notes.push("Removed model.api_key from config.yaml (keys belong in .env).".into());
    }
    if let Some((var, key)) = &plan.key {
        hermes_config::set_dotenv_var(&home.env_path(), var, key).map_err(|e| {
            CliError::runtime(format!("cannot write {}: {e}", home.env_path().display()))
        })?;
        notes.push(format!(
            "Saved {var} in {} (readable by you only).",
            home.env_path().display()
        ));
    }
    if plan.provider.wire == WireFormat::Bedrock {
        notes.push(format!(
            "Bedrock signs in with AWS_BEARER_TOKEN_BEDROCK, or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION, from the environment or {}.",
            home.env_path().display()
        ));
    }
    notes.insert(
        0,
        format!(
            "Set up {}{} in {}.",
            plan.provider.id,
            plan.model
                .as_deref()
                .map(|m| format!(" · {m}"))
                .unwrap_or_default(),
            path.display()
        ),
    );
    Ok(notes)
}

fn read_stdin_line() -> Result<String, CliError> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::runtime(format!("cannot read the key from stdin: {e}")))?;
    Ok(line.trim().to_string())
}

/// Questions on the terminal; without one, a question is a usage error naming the flag.
struct Asker {
    interactive: bool,
}

impl Asker {
    fn say(&self, text: &str) {
        if self.interactive {
            eprintln!("{text}");
        }
    }

    fn provider(&mut self, current: Option<&str>) -> Result<String, CliError> {
        if !self.interactive {
            return Err(CliError::config(
                "no terminal to ask on: give the provider with --provider",
            ));
        }
        let choices: Vec<&Preset> = PRESETS.iter().collect();
        eprintln!("Providers:");
        for (i, p) in choices.iter().enumerate() {
            let what = match (p.key_env.first(), p.base_url) {
                _ if p.id == LOCAL_PROVIDER => "in-process, offline, no key".to_string(),
                (Some(var), url) => format!("{url} · key in {var}"),
                (None, "") if p.wire == WireFormat::Bedrock => "AWS credentials".to_string(),
                (None, "") => "any OpenAI-compatible URL".to_string(),
                (None, url) => format!("{url} · no key"),
            };
            eprintln!("  {:>2}. {:<11} {what}", i + 1, p.id);
        }
        let default = current.unwrap_or("openrouter");
        loop {
            let answer = self.line("Provider (number or name)", Some(default), false)?;
            let answer = if answer.is_empty() {
                default.to_string()
            } else {
                answer
            };
            if let Ok(n) = answer.parse::<usize>()
                && let Some(p) = choices.get(n.wrapping_sub(1))
            {
                return Ok(p.id.to_string());
            }
            if preset(&answer).is_some() {
                return Ok(answer);
            }
            eprintln!("`{answer}` is not one of them.");
        }
    }

    /// One line; `default` shown in brackets; `required` asks again on an empty answer.
    fn line(
        &mut self,
        question: &str,
        default: Option<&str>,
        required: bool,
    ) -> Result<String, CliError> {
        if !self.interactive {
            return Err(CliError::config(format!(
                "no terminal to ask on: give `{question}` with its flag (see `hermes setup --help`)"
            )));
        }
        loop {
            match default {
                Some(d) => eprint!("{question} [{d}]: "),
                None => eprint!("{question}: "),
            }
            let _ = std::io::stderr().flush();
            let mut answer = String::new();
            let read = std::io::stdin()
                .lock()
                .read_line(&mut answer)
                .map_err(|e| CliError::runtime(format!("cannot read the answer: {e}")))?;
            if read == 0 {
                return Err(CliError::interrupted());
            }
            let answer = answer.trim().to_string();
            if !answer.is_empty() || !required {
                return Ok(answer);
            }
        }
    }

    /// A secret typed without echo; Enter on an empty line skips it.
    fn secret(&mut self, var: &str) -> Result<Option<String>, CliError> {
        if !self.interactive {
            return Ok(None);
        }
        eprint!("{var} (typing is hidden; Enter to skip): ");
        let _ = std::io::stderr().flush();
        let typed =
            read_hidden().map_err(|e| CliError::runtime(format!("cannot read the key: {e}")))?;
        eprintln!();
        match typed {
            Hidden::Line(k) if !k.is_empty() => Ok(Some(k)),
            Hidden::Line(_) => Ok(None),
            Hidden::Interrupted => Err(CliError::interrupted()),
        }
    }
}

enum Hidden {
    Line(String),
    Interrupted,
}

/// Reads a line with the terminal in raw mode, echoing nothing.
fn read_hidden() -> std::io::Result<Hidden> {
    use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers, read};
    crossterm::terminal::enable_raw_mode()?;
    let result = (|| {
        let mut text = String::new();
        loop {
            if let Event::Key(key) = read()?
                && key.kind != KeyEventKind::Release
            {
                match key.code {
                    KeyCode::Enter => return Ok(Hidden::Line(text)),
                    KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                        return Ok(Hidden::Interrupted);
                    }
                    KeyCode::Char('d') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                        return Ok(Hidden::Line(text));
                    }
                    KeyCode::Backspace => {
                        text.pop();
                    }
                    KeyCode::Char(c) => text.push(c),
                    _ => {}
                }
            }
        }
    })();
    crossterm::terminal::disable_raw_mode()?;
    result
}
