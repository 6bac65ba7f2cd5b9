//! Which stored session a live session records into: a new one, the one a spec names
//! ([`Resume::Session`]: id, unique id prefix or title), or the most recently active one started
//! in the spec's working directory ([`Resume::Latest`], else the most recent of all). A resumed
//! session's history is loaded so the model sees the whole conversation, an answer cut off by a
//! crash becomes the assistant message it was, and tool calls left without a result are closed.

use hermes_config::{Config, HermesHome};
use hermes_core::Agent;
use hermes_llm::ProviderSpec;
use hermes_protocol::Message;
use hermes_store::{
    MessageMeta, NewSession, SessionRecord, SessionStart, Store, StoreWriter, StoredMessage,
};
use hermes_tools::SessionHandle;

use crate::error::SessionError;
use crate::recorder::{Recorder, RecorderParts};
use crate::spec::{Resume, SessionSpec};
use crate::trajectory::Trajectories;

/// A session picked up again.
pub struct Resumed {
    pub record: SessionRecord,
    /// Its messages as stored, for the recap.
    pub stored: Vec<StoredMessage>,
}

/// The session plan of one run, made before the agent is built.
pub struct Persistence {
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

impl Persistence {
    /// Plans where `spec` records (opening the store only to resume); `provider` names the
    /// model it starts with.
    pub fn plan(
        spec: &SessionSpec,
        home: &HermesHome,
        config: &Config,
        provider: &ProviderSpec,
        store: &hermes_store::StoreLocation,
    ) -> Result<Persistence, SessionError> {
        let cwd = Some(spec.cwd.display().to_string());
        let resumed = match &spec.resume {
            Resume::New => None,
            Resume::Session(key) => {
                let store = store.open()?;
                let record = store.resolve_session(key)?;
                Some(load(&store, record)?)
            }
            Resume::Latest => {
                let store = store.open()?;
                let Some(record) = store.latest_session(cwd.as_deref())? else {
                    return Err(SessionError::NothingToContinue);
                };
                Some(load(&store, record)?)
            }
        };
        let session_id = match &resumed {
            Some(r) => r.record.id.clone(),
            None => hermes_store::time::new_session_id(),
        };
        Ok(Persistence {
            session_id,
            resumed,
            source: spec.platform.name().to_string(),
            model: provider.model.clone(),
            provider: provider.provider.clone(),
            cwd,
            trajectories: Trajectories::from_config(home, config, spec.save_trajectories)?,
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

    /// The resumed session as it was loaded, keeping nothing else of the plan.
    pub fn into_resumed(self) -> Option<Resumed> {
        self.resumed
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

    /// Starts recording through `writer` (the runtime's store thread, which opened the
    /// database off the critical path); the recorder keeps `handle` on the stored session it
    /// writes.
    pub fn start(&self, agent: &Agent, handle: SessionHandle, writer: &StoreWriter) -> Recorder {
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
        let writer = writer.session(start);
        for result in self.closing_results() {
            writer.append(result, MessageMeta::default());
        }
        Recorder::new(RecorderParts {
            writer,
            template,
            handle,
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

fn load(store: &Store, record: SessionRecord) -> Result<Resumed, SessionError> {
    let stored = store.active_messages(&record.id)?;
    Ok(Resumed { record, stored })
}
