//! The `holographic` memory provider (Python's `hermes-memory-store` plugin): a local SQLite
//! fact store the model writes through the `fact_store` tool and rates through
//! `fact_feedback`; facts are linked to the entities named in them and encoded as HRR
//! vectors, which `probe`, `related`, `reason` and `contradict` query algebraically. Before
//! each turn the facts best matching the user's message (FTS5 rank, word overlap and vector
//! similarity, times trust) are recalled into it; with `auto_extract` the user's stated
//! preferences and decisions become facts when the session ends. Selected with
//! `memory.provider: holographic`; settings under `plugins.hermes-memory-store`.

mod entities;
mod extract;
mod hrr;
mod retrieval;
mod store;
mod tools;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hermes_config::HermesHome;
use hermes_core::memory::Target;
use hermes_core::memory::provider::{MemoryAction, MemoryProvider, MemoryWrite, ProviderError};
use hermes_tools::Tool;
use serde_json::Value;

pub use retrieval::{Contradiction, FactBrief, SearchQuery, Weights};
pub use store::{Fact, FactStore, FactUpdate, Feedback, StoreError};

use crate::memory_providers::PROVIDERS;

/// Facts recalled before a turn, at most.
const RECALL_FACTS: usize = 5;
/// Characters of one recalled fact, at most: recall is a hint, not a document.
const RECALL_FACT_CHARS: usize = 400;

/// `plugins.hermes-memory-store`.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub db_path: PathBuf,
    pub default_trust: f64,
    pub min_trust: f64,
    pub auto_extract: bool,
    /// Phases per HRR vector (`hrr_dim`, default 1024).
    pub hrr_dim: usize,
    /// Weight of vector similarity in a search (`hrr_weight`, default 0.3).
    pub hrr_weight: f64,
    /// Days for a fact's search score to halve (`temporal_decay_half_life`; 0, the
    /// default, keeps scores from decaying).
    pub half_life_days: f64,
}

impl Settings {
    /// Reads the settings from the whole config document; `$HERMES_HOME` and `~` in
    /// `db_path` are expanded, a relative path is under the home.
    pub fn from_config(raw: &Value, home: &HermesHome) -> Settings {
        let section = raw.pointer("/plugins/hermes-memory-store");
        let get = |key: &str| section.and_then(|s| s.get(key));
        let number = |key: &str, default: f64| {
            get(key)
                .and_then(|v| v.as_f64().or_else(|| v.as_str()?.trim().parse().ok()))
                .unwrap_or(default)
        };
        let root = home.root().display().to_string();
        let db_path = match get("db_path").and_then(Value::as_str) {
            Some(p) if !p.trim().is_empty() => {
                let p = p
                    .replace("${HERMES_HOME}", &root)
                    .replace("$HERMES_HOME", &root);
                let p = match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
                    (Some(rest), Some(h)) => PathBuf::from(h).join(rest),
                    _ => PathBuf::from(p),
                };
                home.root().join(p)
            }
            _ => home.root().join("memory_store.db"),
        };
        let auto_extract = match get("auto_extract") {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
            _ => false,
        };
        Settings {
            db_path,
            default_trust: number("default_trust", 0.5),
            min_trust: number("min_trust_threshold", 0.3),
            auto_extract,
            hrr_dim: number("hrr_dim", hrr::DEFAULT_DIM as f64).clamp(1.0, hrr::MAX_DIM as f64)
                as usize,
            hrr_weight: number("hrr_weight", retrieval::DEFAULT_HRR_WEIGHT).max(0.0),
            half_life_days: number("temporal_decay_half_life", 0.0).max(0.0),
        }
    }
}

/// The provider `memory.provider` names, or why none is attached.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error(
        "memory.provider `{0}` is not available in this build (available: {providers}); continuing without an external memory provider",
        providers = PROVIDERS.join(", ")
    )]
    Unknown(String),
    #[error("memory provider `holographic` not attached: {0}")]
    Open(#[from] StoreError),
}

/// The provider named by `memory.provider`, `None` when none is configured. `scope` (an
/// API client's `X-Hermes-Session-Key`) limits it to the facts written under that scope.
pub fn from_config(
    raw: &Value,
    home: &HermesHome,
    scope: Option<&str>,
) -> Result<Option<Arc<HolographicProvider>>, SelectError> {
    let name = raw
        .pointer("/memory/provider")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("");
    match name {
        "" | "builtin" | "none" | "honcho" => Ok(None),
        "holographic" | "hermes-memory-store" => Ok(Some(Arc::new(HolographicProvider::open(
            Settings::from_config(raw, home),
            scope.unwrap_or(""),
        )?))),
        other => Err(SelectError::Unknown(other.to_string())),
    }
}

pub struct HolographicProvider {
    store: Arc<Mutex<FactStore>>,
    settings: Settings,
}

impl HolographicProvider {
    pub fn open(settings: Settings, scope: &str) -> Result<Self, StoreError> {
        let store = FactStore::open(&settings.db_path, settings.default_trust)?
            .scoped(scope)
            .with_dim(settings.hrr_dim)
            .with_weights(Weights {
                hrr_weight: settings.hrr_weight,
                half_life_days: settings.half_life_days,
            });
        store.backfill_vectors()?;
        Ok(HolographicProvider {
            store: Arc::new(Mutex::new(store)),
            settings,
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// How many facts are stored.
    pub fn count(&self) -> Result<i64, StoreError> {
        lock(&self.store).count()
    }

    /// The recall block for `query`: the best facts with their trust, empty when none match.
    pub fn recall(&self, query: &str) -> Result<String, StoreError> {
        let facts = lock(&self.store).search(&SearchQuery {
            text: query,
            category: None,
            min_trust: self.settings.min_trust,
            limit: RECALL_FACTS,
        })?;
        if facts.is_empty() {
            return Ok(String::new());
        }
        let lines: Vec<String> = facts
            .iter()
            .map(|f| {
                let content: String = f.content.chars().take(RECALL_FACT_CHARS).collect();
                format!("- [{:.2}] {content}", f.trust_score)
            })
            .collect();
        Ok(format!("## Holographic Memory\n{}", lines.join("\n")))
    }
}

impl HolographicProvider {
    /// Python's `_auto_extract_facts`: each user message of the conversation that states a
    /// preference ("I prefer ...", "my favorite X is ...", "I always ...") becomes a
    /// `user_pref` fact, one that states a decision ("we decided ...", "the project uses
    /// ...") a `project` fact, both cut at 400 characters. Returns how many facts were
    /// stored (a fact already stored counts, as in Python).
    pub fn auto_extract(&self, messages: &[hermes_protocol::Message]) -> Result<usize, StoreError> {
        let store = lock(&self.store);
        let mut stored = 0;
        for (content, category) in extract::statements(messages) {
            match store.add(&content, category, "") {
                Ok(_) => stored += 1,
                // Python skips a fact it cannot add and goes on with the rest.
                Err(StoreError::OtherScope | StoreError::EmptyContent) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(stored)
    }
}

/// The store stays usable after a panic elsewhere: every write is one statement.
fn lock(store: &Mutex<FactStore>) -> std::sync::MutexGuard<'_, FactStore> {
    store.lock().unwrap_or_else(|e| e.into_inner())
}

#[async_trait::async_trait]
impl MemoryProvider for HolographicProvider {
    fn name(&self) -> &str {
        "holographic"
    }

    async fn prefetch(&self, query: &str) -> Result<String, ProviderError> {
        self.recall(query).map_err(|e| ProviderError(e.to_string()))
    }

    /// Facts are written by the model through `fact_store`, never from the raw exchange
    /// (as in Python, where only the opt-in session-end extraction writes on its own).
    async fn sync_turn(&self, _user: &str, _assistant: &str) -> Result<(), ProviderError> {
        Ok(())
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(tools::FactStoreTool::new(
                self.store.clone(),
                self.settings.min_trust,
            )),
            Arc::new(tools::FactFeedbackTool::new(self.store.clone())),
        ]
    }

    /// Python's block: how many facts there are and how to use the tools (an empty store
    /// asks for facts to be added). Counted in this session's scope.
    fn system_prompt_block(&self) -> String {
        match lock(&self.store).scope_count() {
            Ok(0) => "# Holographic Memory\n\
                 Active. Empty fact store \u{2014} proactively add facts the user would expect you to remember.\n\
                 Use fact_store(action='add') to store durable structured facts about people, projects, preferences, decisions.\n\
                 Use fact_feedback to rate facts after using them (trains trust scores)."
                .to_string(),
            Ok(total) => format!(
                "# Holographic Memory\n\
                 Active. {total} facts stored with entity resolution and trust scoring.\n\
                 Use fact_store to search, probe entities, reason across entities, or add facts.\n\
                 Use fact_feedback to rate facts after using them (trains trust scores)."
            ),
            // Python shows the empty-store text when it cannot count; a broken store says
            // so through its tools instead.
            Err(_) => String::new(),
        }
    }

    /// A fact added to `USER.md` or `MEMORY.md` is mirrored as a fact (`user_pref` for the
    /// user file), as Python's `on_memory_write` does; replacements and removals are not.
    fn on_memory_write(&self, write: &MemoryWrite) {
        if write.action != MemoryAction::Add || write.content.trim().is_empty() {
            return;
        }
        let category = match write.target {
            Target::User => "user_pref",
            Target::Memory => "general",
        };
        if let Err(e) = lock(&self.store).add(&write.content, category, "") {
            tracing::debug!("holographic: mirroring a memory write failed: {e}");
        }
    }

    /// With `auto_extract`, the user's stated preferences and decisions become facts.
    async fn on_session_end(
        &self,
        messages: &[hermes_protocol::Message],
    ) -> Result<(), ProviderError> {
        if !self.settings.auto_extract || messages.is_empty() {
            return Ok(());
        }
        let stored = self
            .auto_extract(messages)
            .map_err(|e| ProviderError(format!("auto_extract: {e}")))?;
        if stored > 0 {
            tracing::info!("holographic: auto-extracted {stored} facts from the conversation");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::Message;

    fn provider(dir: &tempfile::TempDir, scope: &str) -> HolographicProvider {
        let home = HermesHome::at(dir.path());
        let raw = serde_json::json!({"plugins": {"hermes-memory-store": {"auto_extract": true}}});
        HolographicProvider::open(Settings::from_config(&raw, &home), scope).unwrap()
    }

    #[tokio::test]
    async fn memory_writes_are_mirrored_and_the_session_end_extracts() {
        let dir = tempfile::tempdir().unwrap();
        let p = provider(&dir, "");
        let write = |action, target, content: &str| MemoryWrite {
            action,
            target,
            content: content.into(),
        };
        p.on_memory_write(&write(MemoryAction::Add, Target::User, "User likes Helix"));
        p.on_memory_write(&write(MemoryAction::Add, Target::Memory, "Repo uses Nix"));
        p.on_memory_write(&write(
            MemoryAction::Replace,
            Target::User,
            "User likes Vim",
        ));
        p.on_memory_write(&write(
            MemoryAction::Remove,
            Target::User,
            "User likes Helix",
        ));
        let facts = lock(&p.store).list(None, 0.0, 10).unwrap();
        let got: Vec<(&str, &str)> = facts
            .iter()
            .map(|f| (f.content.as_str(), f.category.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("User likes Helix", "user_pref"),
                ("Repo uses Nix", "general")
            ]
        );
        assert!(p.system_prompt_block().contains("Active. 2 facts stored"));
        p.on_session_end(&[Message::user("I always write tests first")])
            .await
            .unwrap();
        assert_eq!(p.count().unwrap(), 3);
        assert!(
            provider(&dir, "other")
                .system_prompt_block()
                .contains("Empty fact store"),
            "counted in the scope"
        );
    }

    #[test]
    fn auto_extract_stores_stated_preferences_and_decisions() {
        let dir = tempfile::tempdir().unwrap();
        let p = provider(&dir, "");
        assert!(p.settings().auto_extract);
        let messages = [
            Message::user("I prefer tabs over spaces"),
            Message::assistant("We decided to use tabs then."),
            Message::user("we agreed to deploy with Nix"),
            Message::user("thanks"),
        ];
        assert_eq!(p.auto_extract(&messages).unwrap(), 2);
        let store = lock(&p.store);
        let facts = store.list(None, 0.0, 10).unwrap();
        let got: Vec<(&str, &str)> = facts
            .iter()
            .map(|f| (f.content.as_str(), f.category.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("I prefer tabs over spaces", "user_pref"),
                ("we agreed to deploy with Nix", "project")
            ]
        );
        drop(store);
        assert_eq!(
            p.auto_extract(&messages).unwrap(),
            2,
            "again: the same facts"
        );
        assert_eq!(p.count().unwrap(), 2);
        // Another session key keeps its own copies.
        assert_eq!(provider(&dir, "k").auto_extract(&messages).unwrap(), 2);
        assert_eq!(p.count().unwrap(), 4);
    }
}
