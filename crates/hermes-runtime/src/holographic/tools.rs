//! The holographic provider's tools: `fact_store` (add, search, probe, related, reason,
//! contradict, update, remove, list) and `fact_feedback` (helpful / unhelpful). A store failure is a tool error
//! the model reads, never a crash.

use std::sync::{Arc, Mutex};

use hermes_tools::{Access, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::{FactStore, FactUpdate, SearchQuery, lock};

const ACTIONS: &[&str] = &[
    "add",
    "search",
    "probe",
    "related",
    "reason",
    "contradict",
    "update",
    "remove",
    "list",
];

/// The most entities one `reason` call combines.
const MAX_REASON_ENTITIES: usize = 32;

pub struct FactStoreTool {
    store: Arc<Mutex<FactStore>>,
    min_trust: f64,
}

impl FactStoreTool {
    pub(super) fn new(store: Arc<Mutex<FactStore>>, min_trust: f64) -> Self {
        FactStoreTool { store, min_trust }
    }
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn required<'a>(args: &'a Value, key: &str, action: &str) -> Result<&'a str, ToolError> {
    str_arg(args, key)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ToolError::new(format!("`{action}` needs `{key}`")))
}

fn fact_id(args: &Value, action: &str) -> Result<i64, ToolError> {
    let v = args.get("fact_id");
    v.and_then(Value::as_i64)
        .or_else(|| v?.as_str()?.trim().parse().ok())
        .ok_or_else(|| ToolError::new(format!("`{action}` needs an integer `fact_id`")))
}

fn limit(args: &Value) -> usize {
    args.get("limit")
        .and_then(Value::as_u64)
        .map_or(10, |n| n.clamp(1, 100) as usize)
}

fn results<T: serde::Serialize>(facts: Vec<T>) -> Value {
    json!({ "count": facts.len(), "results": facts })
}

#[async_trait::async_trait]
impl Tool for FactStoreTool {
    fn name(&self) -> &str {
        "fact_store"
    }
    fn toolset(&self) -> &str {
        "memory"
    }
    fn description(&self) -> &str {
        // Python's schema text, so the model is steered the same way in both builds.
        "Deep structured memory with algebraic reasoning. Use alongside the memory tool \u{2014} \
         memory for always-on context, fact_store for deep recall and compositional queries.\n\n\
         ACTIONS (simple \u{2192} powerful):\n\
         \u{2022} add \u{2014} Store a fact the user would expect you to remember.\n\
         \u{2022} search \u{2014} Keyword lookup ('editor config', 'deploy process').\n\
         \u{2022} probe \u{2014} Entity recall: ALL facts about a person/thing.\n\
         \u{2022} related \u{2014} What connects to an entity? Structural adjacency.\n\
         \u{2022} reason \u{2014} Compositional: facts connected to MULTIPLE entities simultaneously.\n\
         \u{2022} contradict \u{2014} Memory hygiene: find facts making conflicting claims.\n\
         \u{2022} update/remove/list \u{2014} CRUD operations.\n\n\
         IMPORTANT: Before answering questions about the user, ALWAYS probe or reason first."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ACTIONS},
                "content": {"type": "string", "description": "Fact content (add, update)."},
                "query": {"type": "string", "description": "Search words (search)."},
                "entity": {"type": "string", "description": "Entity name (probe, related)."},
                "entities": {"type": "array", "items": {"type": "string"}, "description": "Entity names (reason)."},
                "fact_id": {"type": "integer", "description": "Fact id (update, remove)."},
                "category": {"type": "string", "enum": ["user_pref", "project", "tool", "general"]},
                "tags": {"type": "string", "description": "Comma-separated tags."},
                "trust_delta": {"type": "number", "description": "Trust adjustment (update)."},
                "min_trust": {"type": "number", "description": "Minimum trust (search, list)."},
                "limit": {"type": "integer", "description": "Most results (default 10)."}
            },
            "required": ["action"]
        })
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        // Writes go to one SQLite file behind a lock; nothing on the session's filesystem.
        Access::Read(Vec::new())
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let action = str_arg(&args, "action").unwrap_or("");
        let category = str_arg(&args, "category");
        let store = lock(&self.store);
        let err = |e: super::StoreError| ToolError::new(e.to_string());
        match action {
            "add" => {
                let content = required(&args, "content", action)?;
                let id = store
                    .add(
                        content,
                        category.unwrap_or("general"),
                        str_arg(&args, "tags").unwrap_or(""),
                    )
                    .map_err(err)?;
                Ok(json!({"fact_id": id, "status": "added"}))
            }
            "search" => {
                let query = required(&args, "query", action)?;
                let min_trust = args
                    .get("min_trust")
                    .and_then(Value::as_f64)
                    .unwrap_or(self.min_trust);
                let facts = store
                    .search(&SearchQuery {
                        text: query,
                        category,
                        min_trust,
                        limit: limit(&args),
                    })
                    .map_err(err)?;
                Ok(results(facts))
            }
            "probe" | "related" => {
                let entity = required(&args, "entity", action)?;
                let facts = if action == "probe" {
                    store.probe(entity, category, limit(&args))
                } else {
                    store.related(entity, category, limit(&args))
                };
                Ok(results(facts.map_err(err)?))
            }
            "reason" => {
                let entities: Vec<String> = args
                    .get("entities")
                    .and_then(Value::as_array)
                    .map(|a| {
                        // Bounded: each entity is a probe over the store.
                        a.iter()
                            .filter_map(|e| e.as_str().map(String::from))
                            .take(MAX_REASON_ENTITIES)
                            .collect()
                    })
                    .unwrap_or_default();
                if entities.is_empty() {
                    return Err(ToolError::new("`reason` needs a non-empty `entities` list"));
                }
                let facts = store
                    .reason(&entities, category, limit(&args))
                    .map_err(err)?;
                Ok(results(facts))
            }
            "contradict" => Ok(results(
                store.contradict(category, limit(&args)).map_err(err)?,
            )),
            "update" => {
                let id = fact_id(&args, action)?;
                let update = FactUpdate {
                    content: str_arg(&args, "content").map(String::from),
                    trust_delta: args.get("trust_delta").and_then(Value::as_f64),
                    tags: str_arg(&args, "tags").map(String::from),
                    category: category.map(String::from),
                };
                Ok(json!({"updated": store.update(id, &update).map_err(err)?}))
            }
            "remove" => {
                let id = fact_id(&args, action)?;
                Ok(json!({"removed": store.remove(id).map_err(err)?}))
            }
            "list" => {
                let min_trust = args.get("min_trust").and_then(Value::as_f64).unwrap_or(0.0);
                let facts = store.list(category, min_trust, limit(&args)).map_err(err)?;
                Ok(json!({"count": facts.len(), "facts": facts}))
            }
            other => Err(ToolError::new(format!(
                "unknown action `{other}`; this build supports: {}",
                ACTIONS.join(", ")
            ))),
        }
    }
}

pub struct FactFeedbackTool {
    store: Arc<Mutex<FactStore>>,
}

impl FactFeedbackTool {
    pub(super) fn new(store: Arc<Mutex<FactStore>>) -> Self {
        FactFeedbackTool { store }
    }
}

#[async_trait::async_trait]
impl Tool for FactFeedbackTool {
    fn name(&self) -> &str {
        "fact_feedback"
    }
    fn toolset(&self) -> &str {
        "memory"
    }
    fn description(&self) -> &str {
        "Rate a stored fact after using it: `helpful` if accurate, `unhelpful` if wrong or outdated. Good facts rise in recall, bad ones sink."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["helpful", "unhelpful"]},
                "fact_id": {"type": "integer", "description": "The fact to rate."}
            },
            "required": ["action", "fact_id"]
        })
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Read(Vec::new())
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let helpful = match str_arg(&args, "action") {
            Some("helpful") => true,
            Some("unhelpful") => false,
            _ => return Err(ToolError::new("`action` must be `helpful` or `unhelpful`")),
        };
        let id = fact_id(&args, "fact_feedback")?;
        let feedback = lock(&self.store)
            .feedback(id, helpful)
            .map_err(|e| ToolError::new(e.to_string()))?;
        serde_json::to_value(feedback).map_err(|e| ToolError::new(e.to_string()))
    }
}
