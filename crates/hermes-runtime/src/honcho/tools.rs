//! The Honcho provider's five tools, Python's names, schemas and results: `honcho_profile`
//! (read or replace a peer card), `honcho_search` (raw excerpts across sessions),
//! `honcho_context` (the session's standing snapshot), `honcho_reasoning` (Honcho's model
//! answers) and `honcho_conclude` (write, list or delete conclusions). A Honcho failure is a
//! tool error the model reads, never a crash.

use std::sync::Arc;

use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::{Inner, api};

const PEER: &str = "Peer to query. Built-in aliases: 'user' (default), 'ai'. Or pass any peer ID from this workspace.";

pub(super) fn all(inner: &Arc<Inner>) -> Vec<Arc<dyn Tool>> {
    [
        Kind::Profile,
        Kind::Search,
        Kind::Reasoning,
        Kind::Context,
        Kind::Conclude,
    ]
    .into_iter()
    .map(|kind| {
        Arc::new(HonchoTool {
            kind,
            inner: Arc::clone(inner),
        }) as Arc<dyn Tool>
    })
    .collect()
}

#[derive(Clone, Copy)]
enum Kind {
    Profile,
    Search,
    Reasoning,
    Context,
    Conclude,
}

struct HonchoTool {
    kind: Kind,
    inner: Arc<Inner>,
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn failed(tool: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::new(format!("Honcho {tool} failed: {e}"))
}

#[async_trait::async_trait]
impl Tool for HonchoTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Profile => "honcho_profile",
            Kind::Search => "honcho_search",
            Kind::Reasoning => "honcho_reasoning",
            Kind::Context => "honcho_context",
            Kind::Conclude => "honcho_conclude",
        }
    }

    fn toolset(&self) -> &str {
        "memory"
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::Profile => {
                "Read or write a peer's CARD — a short, curated list of standing facts about that peer \
                 (name, role, preferences, communication style, recurring patterns). This is the cheapest, \
                 fastest Honcho call: no query, no LLM, just the current card. Pass `card` to overwrite it; \
                 omit `card` to read. An empty read returns a `hint` explaining why — that is NOT an error. \
                 Related tools: honcho_context for the fuller snapshot; honcho_search to find specific things \
                 that were said; honcho_reasoning for a synthesized answer to a question."
            }
            Kind::Search => {
                "Hybrid (semantic + keyword) search over a peer's actual message history across ALL past \
                 sessions they took part in — not just the current one. Returns ranked raw message excerpts \
                 (what was literally said), no LLM synthesis. Cheaper and faster than honcho_reasoning. Use \
                 this to recall specific past facts and reason over the excerpts yourself."
            }
            Kind::Reasoning => {
                "Ask Honcho's dialectic agent a natural-language question about a peer and get back a \
                 SYNTHESIZED answer. The only Honcho tool that runs an LLM, so the slowest and most \
                 expensive. For a specific fact that was stated, prefer honcho_search; for standing profile \
                 facts, honcho_profile / honcho_context. Pass reasoning_level to control depth: minimal \
                 (fast/cheap), low (default), medium, high, max (deep/expensive)."
            }
            Kind::Context => {
                "Retrieve the standing SNAPSHOT Honcho holds for the current session — session summary, the \
                 peer's representation, the peer card, and the most recent messages — in one call. No query, \
                 no LLM synthesis. To look up a specific past fact use honcho_search; for a synthesized answer \
                 honcho_reasoning; for just the card honcho_profile."
            }
            Kind::Conclude => {
                "Write, delete, or list CONCLUSIONS — persistent, derived facts about a peer that feed their \
                 long-term profile. Record something durable you learned (a stable preference, a correction, \
                 a standing constraint). Pass exactly one of `conclusion` (create), `delete_id` (delete) or \
                 `list` (list/search, with optional `query`). Get ids from `list` first, never guess them. \
                 Deletion is for PII removal only; for a wrong fact write a corrected conclusion."
            }
        }
    }

    fn parameters(&self) -> Value {
        match self.kind {
            Kind::Profile => json!({"type": "object", "properties": {
                "peer": {"type": "string", "description": PEER},
                "card": {"type": "array", "items": {"type": "string"},
                         "description": "New peer card as a list of fact strings. Omit to read the current card."}
            }, "required": []}),
            Kind::Search => json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "What to look for — a topic, keyword, name, or description of the fact."},
                "max_tokens": {"type": "integer", "description": "Approximate budget for returned excerpts (default 800, max 2000)."},
                "peer": {"type": "string", "description": "Whose history to search. Built-in aliases: 'user' (default), 'ai'. Or any peer ID from this workspace."}
            }, "required": ["query"]}),
            Kind::Reasoning => json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "A natural language question."},
                "reasoning_level": {"type": "string", "enum": ["minimal", "low", "medium", "high", "max"],
                    "description": "Override the default reasoning depth. minimal only for a single quick factual lookup; low/medium/high/max for synthesized answers."},
                "peer": {"type": "string", "description": PEER}
            }, "required": ["query"]}),
            Kind::Context => json!({"type": "object", "properties": {
                "peer": {"type": "string", "description": PEER}
            }, "required": []}),
            Kind::Conclude => json!({"type": "object", "properties": {
                "conclusion": {"type": "string", "description": "A factual statement to persist. Not together with delete_id or list."},
                "delete_id": {"type": "string", "description": "Conclusion ID to delete for PII removal, from a prior `list` call."},
                "list": {"type": "boolean", "description": "True to list or search stored conclusions (with their ids)."},
                "query": {"type": "string", "description": "Optional semantic search query, only with `list`."},
                "peer": {"type": "string", "description": "The peer the conclusion is ABOUT. Built-in aliases: 'user' (default), 'ai'."}
            }, "required": []}),
        }
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let inner = &self.inner;
        inner
            .ensure_ready()
            .await
            .map_err(|e| ToolError::new(format!("Honcho session could not be initialized: {e}")))?;
        let peer = str_arg(&args, "peer");
        match self.kind {
            Kind::Profile => profile(inner, peer, &args).await,
            Kind::Search => search(inner, peer, &args).await,
            Kind::Reasoning => {
                let query = str_arg(&args, "query")
                    .ok_or_else(|| ToolError::new("Missing required parameter: query"))?;
                let answer = inner
                    .dialectic(query, str_arg(&args, "reasoning_level"), peer, false)
                    .await
                    .map_err(|e| failed("honcho_reasoning", e))?;
                // Automatic recall leaves a gap after an explicit question.
                let mut st = inner.state();
                st.last_dialectic_turn = Some(st.turn);
                drop(st);
                let answer = if answer.is_empty() {
                    "No result from Honcho.".to_string()
                } else {
                    answer
                };
                Ok(json!({"result": answer}))
            }
            Kind::Context => context(inner, peer).await,
            Kind::Conclude => conclude(inner, peer, &args).await,
        }
    }
}

async fn profile(inner: &Inner, peer: Option<&str>, args: &Value) -> ToolResult {
    let (observer, target) = inner.observer_target(peer);
    if let Some(card) = args
        .get("card")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
    {
        let card: Vec<String> = card
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        let saved = inner
            .api
            .set_card(&observer, target.as_deref(), &card)
            .await
            .map_err(|e| failed("honcho_profile", e))?;
        return Ok(
            json!({"result": format!("Peer card updated ({} facts).", saved.len()), "card": saved}),
        );
    }
    let mut card = inner
        .api
        .card(&observer, target.as_deref())
        .await
        .map_err(|e| failed("honcho_profile", e))?;
    // Some servers keep the card on the peer itself rather than the observer's view.
    if card.is_empty()
        && let Some(target) = &target
    {
        card = inner.api.card(target, None).await.unwrap_or_default();
    }
    if !card.is_empty() {
        return Ok(json!({"result": card}));
    }
    let alias = if inner.resolve_peer(peer) == inner.id.ai_peer {
        "ai"
    } else {
        "user"
    };
    let o = inner.cfg.observation;
    let (me, others) = if alias == "user" {
        (o.user_observe_me, o.user_observe_others)
    } else {
        (o.ai_observe_me, o.ai_observe_others)
    };
    let mut reasons = Vec::new();
    if !(me || others) {
        reasons.push(format!(
            "observation is disabled for peer '{alias}' (user_observe_me/ai_observe_me in config)"
        ));
    }
    let (turn, cadence) = (inner.state().turn, inner.cfg.dialectic_cadence);
    if turn < cadence.max(2) {
        reasons.push(format!(
            "this session has only {turn} turn(s); peer cards accumulate as the dialectic layer reasons over conversation history (cadence every {cadence} turn(s))"
        ));
    }
    if reasons.is_empty() {
        reasons.push(
            "peer card has no facts yet — Honcho's dialectic layer builds this over time from observed turns; self-hosted Honcho < 3.x does not support peer cards at all"
                .to_string(),
        );
    }
    Ok(json!({
        "result": "No profile facts available yet.",
        "hint": format!(
            "This is not an error.  {}.  Try honcho_reasoning for a synthesized answer, or honcho_search to query raw conversation excerpts.",
            reasons.join("; ")
        ),
    }))
}

async fn search(inner: &Inner, peer: Option<&str>, args: &Value) -> ToolResult {
    let query = str_arg(args, "query")
        .ok_or_else(|| ToolError::new("Missing required parameter: query"))?;
    let max_tokens = args
        .get("max_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(800)
        .min(2000) as usize;
    let peer_id = inner.resolve_peer(peer);
    let q: String = query.chars().take(4000).collect();
    let budget = (max_tokens * 4).max(200);
    let limit = (budget / 300).clamp(3, 20);
    let messages = match inner.api.search(&q, &peer_id, limit).await {
        Ok(m) => m,
        // Servers without the perspective filter: what the peer itself said.
        Err(first) => inner
            .api
            .peer_search(&peer_id, &q, limit)
            .await
            .map_err(|_| failed("honcho_search", first))?,
    };
    let mut lines: Vec<String> = Vec::new();
    let mut used = 0usize;
    for m in messages.iter().take(limit) {
        let content = m.content.trim();
        if content.is_empty() {
            continue;
        }
        let who = if m.peer_id == inner.id.ai_peer {
            "assistant"
        } else if m.peer_id.is_empty() {
            "unknown"
        } else {
            m.peer_id.as_str()
        };
        let snippet: String = content.chars().take(1200).collect();
        let session = if m.session_id.is_empty() {
            String::new()
        } else {
            format!(" · {}", m.session_id)
        };
        let entry = format!("[{who}{session}] {snippet}");
        let separator = if lines.is_empty() { 0 } else { 2 };
        let remaining = budget.saturating_sub(used + separator);
        if remaining == 0 {
            break;
        }
        if entry.chars().count() > remaining {
            let cut: String = entry.chars().take(remaining).collect();
            let cut = cut.trim_end().to_string();
            if !cut.is_empty() {
                lines.push(cut);
            }
            break;
        }
        used += separator + entry.chars().count();
        lines.push(entry);
    }
    if lines.is_empty() {
        return Ok(json!({"result": "No relevant context found."}));
    }
    Ok(json!({"result": lines.join("\n\n")}))
}

async fn context(inner: &Inner, peer: Option<&str>) -> ToolResult {
    let (observer, target) = inner.observer_target(peer);
    let target = target.unwrap_or_else(|| observer.clone());
    let ctx = inner
        .api
        .session_context(
            &inner.id.session,
            &api::ContextQuery {
                summary: true,
                tokens: None,
                peer_target: Some(&target),
                peer_perspective: Some(&observer),
            },
        )
        .await
        .map_err(|e| failed("honcho_context", e))?;
    let mut parts = Vec::new();
    if let Some(summary) = ctx.summary.filter(|s| !s.content.is_empty()) {
        parts.push(format!("## Summary\n{}", summary.content));
    }
    if let Some(rep) = ctx.peer_representation.filter(|r| !r.is_empty()) {
        parts.push(format!("## Representation\n{rep}"));
    }
    if let Some(card) = ctx.peer_card.filter(|c| !c.is_empty()) {
        parts.push(format!("## Card\n{}", card.join("\n")));
    }
    let recent = &ctx.messages[ctx.messages.len().saturating_sub(5)..];
    if !recent.is_empty() {
        let lines: Vec<String> = recent
            .iter()
            .map(|m| {
                let content: String = m.content.chars().take(200).collect();
                format!("  [{}] {content}", m.peer_id)
            })
            .collect();
        parts.push(format!("## Recent messages\n{}", lines.join("\n")));
    }
    let result = if parts.is_empty() {
        "No context available.".to_string()
    } else {
        parts.join("\n\n")
    };
    Ok(json!({"result": result}))
}

async fn conclude(inner: &Inner, peer: Option<&str>, args: &Value) -> ToolResult {
    let delete_id = str_arg(args, "delete_id");
    let conclusion = str_arg(args, "conclusion");
    let list = args.get("list").and_then(Value::as_bool).unwrap_or(false);
    if [delete_id.is_some(), conclusion.is_some(), list]
        .iter()
        .filter(|b| **b)
        .count()
        != 1
    {
        return Err(ToolError::new(
            "Exactly one of conclusion, delete_id, or list must be provided.",
        ));
    }
    let query = str_arg(args, "query");
    if query.is_some() && !list {
        return Err(ToolError::new("query is only valid when list is true."));
    }
    let (observer, observed) = inner.conclusion_scope(peer);
    if list {
        let found = match query {
            Some(q) => {
                inner
                    .api
                    .query_conclusions(&observer, &observed, q, 20)
                    .await
            }
            None => inner.api.list_conclusions(&observer, &observed, 20).await,
        }
        .map_err(|e| failed("honcho_conclude", e))?;
        let items: Vec<Value> = found
            .into_iter()
            .map(|c| json!({"id": c.id, "content": c.content}))
            .collect();
        return Ok(json!({"conclusions": items}));
    }
    if let Some(id) = delete_id {
        inner
            .api
            .delete_conclusion(id)
            .await
            .map_err(|e| ToolError::new(format!("Failed to delete conclusion {id}: {e}")))?;
        return Ok(json!({"result": format!("Conclusion {id} deleted.")}));
    }
    let content = conclusion.unwrap_or_default();
    inner
        .api
        .create_conclusion(&observer, &observed, content, Some(&inner.id.session))
        .await
        .map_err(|e| ToolError::new(format!("Failed to save conclusion: {e}")))?;
    let alias = peer.unwrap_or("user");
    Ok(json!({"result": format!("Conclusion saved for {alias}: {content}")}))
}
