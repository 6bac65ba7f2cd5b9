//! Which session a run records into: a new one, the one named by `--resume ID` (id, unique id
//! prefix or title), or with `--continue` the most recently active one started in this
//! directory (else the most recent of all). A resumed session's history is loaded so the model
//! sees the whole conversation, an answer cut off by a crash becomes the assistant message it
//! was, and tool calls left without a result are closed; the REPL prints it back as a recap.

use std::path::PathBuf;

use hermes_config::{Config, HermesHome};
use hermes_core::Agent;
use hermes_llm::ProviderSpec;
use hermes_protocol::{Message, Role};
use hermes_store::{
    MessageMeta, NewSession, SessionRecord, SessionStart, SessionWriter, Store, StoreError,
    StoreOptions, StoredMessage,
};
use hermes_tools::output::{first_string_arg, shorten_line};

use crate::args::CommonArgs;
use crate::error::CliError;
use crate::persist::{Recorder, RecorderParts, current_session};
use crate::trajectory::Trajectories;

/// A session picked up again.
pub struct Resumed {
    pub record: SessionRecord,
    /// Its messages as stored, for the recap.
    pub stored: Vec<StoredMessage>,
}

/// The session plan of one run, made before the agent is built.
pub struct Persistence {
    db_path: PathBuf,
    session_id: String,
    resumed: Option<Resumed>,
    source: String,
    model: String,
    provider: String,
    cwd: Option<String>,
    trajectories: Option<Trajectories>,
    /// `compression.in_place`: compressions continue in the same session.
    compress_in_place: bool,
}

/// Store failures while resuming: a wrong name is a usage error (2), a damaged or locked
/// database a failed run (1).
pub fn store_error(e: StoreError) -> CliError {
    match e {
        StoreError::SessionNotFound(_)
        | StoreError::Ambiguous { .. }
        | StoreError::InvalidTitle(_)
        | StoreError::TitleTaken { .. } => CliError::config(e.to_string()),
        _ => CliError::runtime(e.to_string()),
    }
}

impl Persistence {
    pub fn plan(
        args: &CommonArgs,
        home: &HermesHome,
        config: &Config,
        spec: &ProviderSpec,
        source: &str,
    ) -> Result<Persistence, CliError> {
        let db_path = home.join(hermes_store::DB_FILE_NAME);
        let cwd = std::env::current_dir()
            .ok()
            .map(|d| d.display().to_string());
        let resumed = if let Some(key) = &args.resume {
            let store = Store::open(&db_path).map_err(store_error)?;
            Some(load(
                &store,
                store.resolve_session(key).map_err(store_error)?,
            )?)
        } else if args.continue_last {
            let store = Store::open(&db_path).map_err(store_error)?;
            let latest = store.latest_session(cwd.as_deref()).map_err(store_error)?;
            let Some(record) = latest else {
                return Err(CliError::config(
                    "there is no earlier session to continue; start one with `hermes`",
                ));
            };
            Some(load(&store, record)?)
        } else {
            None
        };
        let session_id = match &resumed {
            Some(r) => r.record.id.clone(),
            None => hermes_store::time::new_session_id(),
        };
        current_session().set(session_id.clone());
        Ok(Persistence {
            db_path,
            session_id,
            resumed,
            source: source.to_string(),
            model: spec.model.clone(),
            provider: spec.provider.clone(),
            cwd,
            trajectories: Trajectories::from_config(home, config, args.save_trajectories)?,
            compress_in_place: config
                .raw
                .pointer("/compression/in_place")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
        })
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    pub fn resumed(&self) -> Option<&Resumed> {
        self.resumed.as_ref()
    }

    /// The conversation to continue from (empty for a new session), valid for providers.
    pub fn history(&self) -> Vec<Message> {
        let Some(r) = &self.resumed else {
            return Vec::new();
        };
        let mut history = as_stored(r);
        hermes_core::close_dangling_tool_calls(&mut history);
        history
    }

    /// The results that close tool calls a crash left unanswered at the end of the session,
    /// to be stored so the database holds what the model is sent.
    fn closing_results(&self) -> Vec<Message> {
        let Some(r) = &self.resumed else {
            return Vec::new();
        };
        let stored = as_stored(r);
        let closed = self.history();
        match closed.get(..stored.len()) {
            Some(prefix) if prefix == stored.as_slice() => closed[stored.len()..].to_vec(),
            _ => Vec::new(),
        }
    }

    /// Starts the writer thread (it opens the database itself, off the critical path).
    pub fn start(&self, agent: &Agent) -> Recorder {
        let template = NewSession {
            id: self.session_id.clone(),
            source: self.source.clone(),
            model: Some(self.model.clone()),
            provider: Some(self.provider.clone()),
            cwd: self.cwd.clone(),
            parent_session_id: None,
            system_prompt: Some(agent.system_prompt().to_string()),
        };
        let start = match &self.resumed {
            Some(r) => SessionStart::Resume {
                id: r.record.id.clone(),
                model: Some(self.model.clone()),
                provider: Some(self.provider.clone()),
            },
            None => SessionStart::New(template.clone()),
        };
        let writer = SessionWriter::spawn(self.db_path.clone(), start, StoreOptions::default());
        for result in self.closing_results() {
            writer.append(result, MessageMeta::default());
        }
        Recorder::new(RecorderParts {
            writer,
            template,
            trajectories: self.trajectories.clone(),
            system_prompt: agent.system_prompt().to_string(),
            tools: agent.tool_schemas().to_vec(),
            compress_in_place: self.compress_in_place,
        })
    }
}

/// The stored conversation as messages; a partial answer counts as the message it was
/// becoming, an empty one is left out.
fn as_stored(r: &Resumed) -> Vec<Message> {
    r.stored
        .iter()
        .filter(|m| !(m.partial && m.message.content.is_empty()))
        .map(|m| m.message.clone())
        .collect()
}

fn load(store: &Store, record: SessionRecord) -> Result<Resumed, CliError> {
    let stored = store.active_messages(&record.id).map_err(store_error)?;
    Ok(Resumed { record, stored })
}

/// The conversation so far, as the REPL showed it: user lines after `❯`, answers, one line per
/// tool call.
pub fn recap(resumed: &Resumed) -> String {
    let r = &resumed.record;
    let mut out = format!("Resumed session {}", r.id);
    if let Some(t) = &r.title {
        out.push_str(&format!(" · {t}"));
    }
    out.push_str(&format!(
        " · {} messages · last active {}\n",
        r.message_count,
        hermes_store::time::relative_age(r.updated_at, hermes_store::time::now())
    ));
    for m in &resumed.stored {
        match m.message.role {
            Role::User => out.push_str(&format!("\n❯ {}\n", m.message.content)),
            Role::Assistant => {
                let text = m.message.content.trim_end();
                if !text.is_empty() && text != "[interrupted]" {
                    out.push_str(text);
                    out.push('\n');
                }
                for call in &m.message.tool_calls {
                    let args = serde_json::from_str(&call.arguments).unwrap_or_default();
                    out.push_str(&format!("  · {}  {}\n", call.name, first_string_arg(&args)));
                }
                let cut =
                    m.partial || m.finish_reason.as_deref() == Some(hermes_store::INTERRUPTED);
                if cut || text == "[interrupted]" {
                    out.push_str("  · interrupted\n");
                }
            }
            Role::Tool if m.message.content.starts_with("{\"error\"") => out.push_str(&format!(
                "    ✗ {}\n",
                shorten_line(&m.message.content, 100)
            )),
            Role::Tool | Role::System => {}
        }
    }
    out
}
