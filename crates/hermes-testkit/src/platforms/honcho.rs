//! A double of the Honcho v3 API (honcho.dev), faithful to its documented routes and to the
//! request and response types of the official `honcho-ai` SDK (2.7): workspaces, peers and
//! sessions are get-or-create; messages come in batches of 1–100 of at most 25,000
//! characters; ids must match `^[A-Za-z0-9_-]+$` (FastAPI's 422 otherwise); conclusions are
//! scoped by observer and observed; lists are pages (`items`, `total`, `page`, `size`,
//! `pages`); errors carry `detail`. What Honcho's own models produce (representations,
//! cards, summaries, dialectic answers) is scripted by the test; search is a word match.
//! Every request is recorded.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};

const CREATED_AT: &str = "2026-12-01T10:00:00Z";
const MAX_MESSAGE_CHARS: usize = 25_000;

/// One request as the double saw it.
#[derive(Debug, Clone)]
pub struct HonchoRequest {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Debug, Clone)]
pub struct StoredMessage {
    pub id: String,
    pub session: String,
    pub peer: String,
    pub content: String,
}

#[derive(Debug, Clone)]
pub struct StoredConclusion {
    pub id: String,
    pub observer: String,
    pub observed: String,
    pub content: String,
    pub session: Option<String>,
}

#[derive(Default)]
struct State {
    requests: Vec<HonchoRequest>,
    workspaces: Vec<String>,
    /// (workspace, peer)
    peers: Vec<(String, String)>,
    /// (workspace, session) → peer → (observe_me, observe_others)
    sessions: BTreeMap<(String, String), BTreeMap<String, Value>>,
    messages: Vec<StoredMessage>,
    conclusions: Vec<StoredConclusion>,
    /// (observer, target) → card
    cards: BTreeMap<(String, String), Vec<String>>,
    /// (observer, target) → representation
    representations: BTreeMap<(String, String), String>,
    summaries: BTreeMap<String, String>,
    chat_answers: Vec<String>,
    /// The form fields of each file upload.
    uploads: Vec<Value>,
    next_id: u64,
}

struct HonchoService {
    key: Option<String>,
    state: Mutex<State>,
}

impl HonchoService {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn detail(status: u16, text: &str) -> MockResponse {
    MockResponse::json(status, &json!({"detail": text}))
}

/// FastAPI's validation error shape.
fn invalid(loc: &[&str], msg: &str) -> MockResponse {
    MockResponse::json(
        422,
        &json!({"detail": [{"type": "value_error", "loc": loc, "msg": msg, "input": null}]}),
    )
}

/// The `id` of a create body, or FastAPI's refusal.
fn body_id(body: &Value) -> Result<&str, MockResponse> {
    let Some(id) = body.get("id").and_then(Value::as_str) else {
        return Err(invalid(&["body", "id"], "Field required"));
    };
    if !valid_id(id) {
        return Err(invalid(
            &["body", "id"],
            "String should match pattern '^[a-zA-Z0-9_-]+$'",
        ));
    }
    Ok(id)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 512
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn message_json(m: &StoredMessage, workspace: &str) -> Value {
    json!({
        "id": m.id, "content": m.content, "peer_id": m.peer, "session_id": m.session,
        "metadata": {}, "created_at": CREATED_AT, "workspace_id": workspace,
        "token_count": m.content.split_whitespace().count(),
    })
}

fn conclusion_json(c: &StoredConclusion) -> Value {
    json!({
        "id": c.id, "content": c.content, "observer_id": c.observer, "observed_id": c.observed,
        "session_id": c.session, "level": "explicit", "source_ids": null, "times_derived": 1,
        "created_at": CREATED_AT,
    })
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .map(str::to_lowercase)
        .collect()
}

fn matches(query: &str, content: &str) -> bool {
    let content = content.to_lowercase();
    words(query).iter().any(|w| content.contains(w.as_str()))
}

impl HonchoService {
    fn handle(&self, req: MockRequest) -> MockResponse {
        let multipart = req
            .header("content-type")
            .is_some_and(|c| c.starts_with("multipart/form-data"));
        let body: Value = if req.body.is_empty() {
            Value::Null
        } else if multipart {
            req.params()
        } else {
            match serde_json::from_slice(&req.body) {
                Ok(v) => v,
                Err(_) => return invalid(&["body"], "JSON decode error"),
            }
        };
        self.lock().requests.push(HonchoRequest {
            method: req.method.clone(),
            target: req.target.clone(),
            authorization: req.header("authorization").map(str::to_string),
            body: body.clone(),
        });
        if let Some(key) = &self.key
            && req.header("authorization") != Some(format!("Bearer {key}").as_str())
        {
            return detail(401, "Invalid API key");
        }
        let query: BTreeMap<String, String> = req.query().into_iter().collect();
        let path = req.path().to_string();
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (req.method.as_str(), parts.as_slice()) {
            ("POST", ["v3", "workspaces"]) => {
                let id = match body_id(&body) {
                    Ok(id) => id,
                    Err(refused) => return refused,
                };
                let mut st = self.lock();
                if !st.workspaces.iter().any(|w| w == id) {
                    st.workspaces.push(id.to_string());
                }
                MockResponse::json(
                    200,
                    &json!({"id": id, "metadata": {}, "configuration": {}, "created_at": CREATED_AT}),
                )
            }
            ("POST", ["v3", "workspaces", ws, rest @ ..]) => {
                self.workspace_post(ws, rest, &query, &body)
            }
            ("GET", ["v3", "workspaces", ws, rest @ ..]) => self.workspace_get(ws, rest, &query),
            ("PUT", ["v3", "workspaces", ws, "peers", peer, "card"]) => {
                let Some(card) = body.get("peer_card").and_then(Value::as_array) else {
                    return invalid(&["body", "peer_card"], "Field required");
                };
                let card: Vec<String> = card
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                let target = query
                    .get("target")
                    .cloned()
                    .unwrap_or_else(|| peer.to_string());
                let _ = ws;
                self.lock()
                    .cards
                    .insert((peer.to_string(), target), card.clone());
                MockResponse::json(200, &json!({"peer_card": card}))
            }
            ("DELETE", ["v3", "workspaces", _ws, "conclusions", id]) => {
                let mut st = self.lock();
                let before = st.conclusions.len();
                st.conclusions.retain(|c| c.id != *id);
                if st.conclusions.len() == before {
                    return detail(404, "Conclusion not found");
                }
                MockResponse::empty(204)
            }
            _ => detail(404, "Not Found"),
        }
    }

    fn workspace_known(&self, ws: &str) -> bool {
        self.lock().workspaces.iter().any(|w| w == ws)
    }

    fn workspace_post(
        &self,
        ws: &str,
        rest: &[&str],
        query: &BTreeMap<String, String>,
        body: &Value,
    ) -> MockResponse {
        if !self.workspace_known(ws) {
            return detail(404, &format!("Workspace {ws} not found"));
        }
        match rest {
            ["peers"] => {
                let id = match body_id(body) {
                    Ok(id) => id,
                    Err(refused) => return refused,
                };
                let mut st = self.lock();
                let key = (ws.to_string(), id.to_string());
                if !st.peers.contains(&key) {
                    st.peers.push(key);
                }
                MockResponse::json(
                    200,
                    &json!({"id": id, "workspace_id": ws, "created_at": CREATED_AT, "metadata": {}, "configuration": {}}),
                )
            }
            ["sessions"] => {
                let Some(id) = body.get("id").and_then(Value::as_str) else {
                    return invalid(&["body", "id"], "Field required");
                };
                if !valid_id(id) || id.len() > 100 {
                    return invalid(
                        &["body", "id"],
                        "String should match pattern '^[a-zA-Z0-9_-]+$' and have at most 100 characters",
                    );
                }
                let mut st = self.lock();
                let members = st
                    .sessions
                    .entry((ws.to_string(), id.to_string()))
                    .or_default();
                if let Some(peers) = body.get("peers").and_then(Value::as_object) {
                    for (peer, config) in peers {
                        members.insert(peer.clone(), config.clone());
                    }
                }
                let peers: Vec<String> = members.keys().cloned().collect();
                for peer in peers {
                    let key = (ws.to_string(), peer);
                    if !st.peers.contains(&key) {
                        st.peers.push(key);
                    }
                }
                MockResponse::json(
                    200,
                    &json!({"id": id, "is_active": true, "workspace_id": ws, "metadata": {}, "configuration": {}, "created_at": CREATED_AT}),
                )
            }
            ["sessions", session, "peers"] => {
                let mut st = self.lock();
                let Some(members) = st.sessions.get_mut(&(ws.to_string(), session.to_string()))
                else {
                    return detail(404, &format!("Session {session} not found"));
                };
                if let Some(peers) = body.as_object() {
                    for (peer, config) in peers {
                        members.insert(peer.clone(), config.clone());
                    }
                }
                MockResponse::json(
                    200,
                    &json!({"id": session, "is_active": true, "workspace_id": ws, "metadata": {}, "configuration": {}, "created_at": CREATED_AT}),
                )
            }
            ["sessions", session, "messages", "upload"] => {
                // The server turns the file into messages of the peer; one here.
                let (Some(peer), Some(text)) = (
                    body.get("peer_id").and_then(Value::as_str),
                    body.pointer("/file/text").and_then(Value::as_str),
                ) else {
                    return invalid(&["body", "file"], "file and peer_id are required");
                };
                let mut st = self.lock();
                if !st
                    .sessions
                    .contains_key(&(ws.to_string(), session.to_string()))
                {
                    return detail(404, &format!("Session {session} not found"));
                }
                st.next_id += 1;
                let m = StoredMessage {
                    id: format!("msg_{}", st.next_id),
                    session: session.to_string(),
                    peer: peer.to_string(),
                    content: text.to_string(),
                };
                let out = message_json(&m, ws);
                st.uploads.push(body.clone());
                st.messages.push(m);
                MockResponse::json(200, &json!([out]))
            }
            ["sessions", session, "messages"] => {
                let Some(items) = body.get("messages").and_then(Value::as_array) else {
                    return invalid(&["body", "messages"], "Field required");
                };
                if items.is_empty() || items.len() > 100 {
                    return invalid(
                        &["body", "messages"],
                        "List should have at least 1 item and at most 100 items",
                    );
                }
                let mut st = self.lock();
                if !st
                    .sessions
                    .contains_key(&(ws.to_string(), session.to_string()))
                {
                    return detail(404, &format!("Session {session} not found"));
                }
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let (Some(peer), Some(content)) = (
                        item.get("peer_id").and_then(Value::as_str),
                        item.get("content").and_then(Value::as_str),
                    ) else {
                        return invalid(
                            &["body", "messages", &i.to_string()],
                            "peer_id and content are required",
                        );
                    };
                    if content.chars().count() > MAX_MESSAGE_CHARS {
                        return invalid(
                            &["body", "messages", &i.to_string(), "content"],
                            "String should have at most 25000 characters",
                        );
                    }
                    st.next_id += 1;
                    let m = StoredMessage {
                        id: format!("msg_{}", st.next_id),
                        session: session.to_string(),
                        peer: peer.to_string(),
                        content: content.to_string(),
                    };
                    out.push(message_json(&m, ws));
                    // A message's peer joins the session, as on the server.
                    if let Some(members) =
                        st.sessions.get_mut(&(ws.to_string(), session.to_string()))
                    {
                        members.entry(peer.to_string()).or_insert_with(|| json!({}));
                    }
                    st.messages.push(m);
                }
                MockResponse::json(200, &Value::Array(out))
            }
            ["peers", peer, "chat"] => {
                let Some(q) = body
                    .get("query")
                    .and_then(Value::as_str)
                    .filter(|q| !q.is_empty())
                else {
                    return invalid(
                        &["body", "query"],
                        "String should have at least 1 character",
                    );
                };
                if q.chars().count() > 10_000 {
                    return invalid(
                        &["body", "query"],
                        "String should have at most 10000 characters",
                    );
                }
                let _ = peer;
                let mut st = self.lock();
                let answer = if st.chat_answers.len() > 1 {
                    st.chat_answers.remove(0)
                } else {
                    st.chat_answers.first().cloned().unwrap_or_default()
                };
                MockResponse::json(
                    200,
                    &json!({"content": if answer.is_empty() { Value::Null } else { json!(answer) }}),
                )
            }
            ["peers", peer, "representation"] => {
                let target = body.get("target").and_then(Value::as_str).unwrap_or(peer);
                MockResponse::json(
                    200,
                    &json!({"representation": self.representation(peer, target)}),
                )
            }
            ["peers", peer, "search"] => {
                let q = body.get("query").and_then(Value::as_str).unwrap_or("");
                let limit = body.get("limit").and_then(Value::as_u64).unwrap_or(10) as usize;
                let st = self.lock();
                let found: Vec<Value> = st
                    .messages
                    .iter()
                    .filter(|m| m.peer == *peer && matches(q, &m.content))
                    .take(limit)
                    .map(|m| message_json(m, ws))
                    .collect();
                MockResponse::json(200, &Value::Array(found))
            }
            ["search"] => {
                let q = body.get("query").and_then(Value::as_str).unwrap_or("");
                let limit = body
                    .get("limit")
                    .and_then(Value::as_u64)
                    .unwrap_or(10)
                    .clamp(1, 100) as usize;
                let perspective = body
                    .pointer("/filters/peer_perspective")
                    .and_then(Value::as_str);
                let st = self.lock();
                let visible = |session: &str| match perspective {
                    None => true,
                    Some(p) => st
                        .sessions
                        .get(&(ws.to_string(), session.to_string()))
                        .is_some_and(|members| members.contains_key(p)),
                };
                let found: Vec<Value> = st
                    .messages
                    .iter()
                    .rev()
                    .filter(|m| visible(&m.session) && matches(q, &m.content))
                    .take(limit)
                    .map(|m| message_json(m, ws))
                    .collect();
                MockResponse::json(200, &Value::Array(found))
            }
            ["conclusions"] => {
                let Some(items) = body.get("conclusions").and_then(Value::as_array) else {
                    return invalid(&["body", "conclusions"], "Field required");
                };
                if items.is_empty() || items.len() > 100 {
                    return invalid(
                        &["body", "conclusions"],
                        "List should have at least 1 item and at most 100 items",
                    );
                }
                let mut st = self.lock();
                let mut out = Vec::new();
                for item in items {
                    let (Some(content), Some(observer), Some(observed)) = (
                        item.get("content").and_then(Value::as_str),
                        item.get("observer_id").and_then(Value::as_str),
                        item.get("observed_id").and_then(Value::as_str),
                    ) else {
                        return invalid(
                            &["body", "conclusions"],
                            "content, observer_id and observed_id are required",
                        );
                    };
                    st.next_id += 1;
                    let c = StoredConclusion {
                        id: format!("con_{}", st.next_id),
                        observer: observer.to_string(),
                        observed: observed.to_string(),
                        content: content.to_string(),
                        session: item
                            .get("session_id")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    };
                    out.push(conclusion_json(&c));
                    st.conclusions.push(c);
                }
                MockResponse::json(200, &Value::Array(out))
            }
            ["conclusions", "list"] => {
                let page: usize = query
                    .get("page")
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(1)
                    .max(1);
                let size: usize = query
                    .get("size")
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(50)
                    .clamp(1, 100);
                let filters = body.get("filters").cloned().unwrap_or(Value::Null);
                let st = self.lock();
                let all: Vec<&StoredConclusion> = st
                    .conclusions
                    .iter()
                    .rev()
                    .filter(|c| conclusion_matches(c, &filters))
                    .collect();
                let items: Vec<Value> = all
                    .iter()
                    .skip((page - 1) * size)
                    .take(size)
                    .map(|c| conclusion_json(c))
                    .collect();
                MockResponse::json(
                    200,
                    &json!({"items": items, "total": all.len(), "page": page, "size": size, "pages": all.len().div_ceil(size)}),
                )
            }
            ["conclusions", "query"] => {
                let Some(q) = body.get("query").and_then(Value::as_str) else {
                    return invalid(&["body", "query"], "Field required");
                };
                let top_k = body.get("top_k").and_then(Value::as_u64).unwrap_or(10) as usize;
                let filters = body.get("filters").cloned().unwrap_or(Value::Null);
                let st = self.lock();
                let found: Vec<Value> = st
                    .conclusions
                    .iter()
                    .filter(|c| conclusion_matches(c, &filters) && matches(q, &c.content))
                    .take(top_k)
                    .map(conclusion_json)
                    .collect();
                MockResponse::json(200, &Value::Array(found))
            }
            _ => detail(404, "Not Found"),
        }
    }

    fn workspace_get(
        &self,
        ws: &str,
        rest: &[&str],
        query: &BTreeMap<String, String>,
    ) -> MockResponse {
        if !self.workspace_known(ws) {
            return detail(404, &format!("Workspace {ws} not found"));
        }
        match rest {
            ["sessions", session, "context"] => {
                let st = self.lock();
                if !st
                    .sessions
                    .contains_key(&(ws.to_string(), session.to_string()))
                {
                    return detail(404, &format!("Session {session} not found"));
                }
                let tokens: Option<usize> = query.get("tokens").and_then(|t| t.parse().ok());
                let mut messages: Vec<&StoredMessage> = st
                    .messages
                    .iter()
                    .filter(|m| m.session == *session)
                    .collect();
                // The newest messages that fit the token budget (a word is a token here).
                if let Some(budget) = tokens {
                    let mut used = 0;
                    let mut keep = messages.len();
                    for (i, m) in messages.iter().enumerate().rev() {
                        used += m.content.split_whitespace().count();
                        if used > budget {
                            break;
                        }
                        keep = i;
                    }
                    messages.drain(..keep);
                }
                let summary = (query.get("summary").map(String::as_str) == Some("true"))
                    .then(|| st.summaries.get(*session))
                    .flatten()
                    .map(|s| json!({"content": s, "message_id": "msg_0", "summary_type": "short", "created_at": CREATED_AT, "token_count": s.split_whitespace().count()}));
                let target = query.get("peer_target").cloned();
                let perspective = query.get("peer_perspective").cloned();
                let (rep, card) = match &target {
                    Some(t) => {
                        let observer = perspective.clone().unwrap_or_else(|| t.clone());
                        (
                            Some(self.representation_in(&st, &observer, t)),
                            st.cards.get(&(observer.clone(), t.clone())).cloned(),
                        )
                    }
                    None => (None, None),
                };
                MockResponse::json(
                    200,
                    &json!({
                        "id": session,
                        "messages": messages.iter().map(|m| message_json(m, ws)).collect::<Vec<_>>(),
                        "summary": summary,
                        "peer_representation": rep,
                        "peer_card": card,
                    }),
                )
            }
            ["sessions", session, "peers", peer, "config"] => {
                let st = self.lock();
                match st
                    .sessions
                    .get(&(ws.to_string(), session.to_string()))
                    .and_then(|m| m.get(*peer))
                {
                    Some(config) => MockResponse::json(
                        200,
                        &json!({
                            "observe_me": config.get("observe_me").cloned().unwrap_or(Value::Null),
                            "observe_others": config.get("observe_others").cloned().unwrap_or(Value::Null),
                        }),
                    ),
                    None => detail(404, "Peer not in session"),
                }
            }
            ["peers", peer, "card"] => {
                let target = query
                    .get("target")
                    .cloned()
                    .unwrap_or_else(|| peer.to_string());
                let card = self.lock().cards.get(&(peer.to_string(), target)).cloned();
                MockResponse::json(200, &json!({"peer_card": card}))
            }
            ["peers", peer, "context"] => {
                let target = query
                    .get("target")
                    .cloned()
                    .unwrap_or_else(|| peer.to_string());
                let st = self.lock();
                let rep = self.representation_in(&st, peer, &target);
                let card = st.cards.get(&(peer.to_string(), target.clone())).cloned();
                MockResponse::json(
                    200,
                    &json!({"peer_id": peer, "target_id": target, "representation": rep, "peer_card": card}),
                )
            }
            ["conclusions", id] => {
                let st = self.lock();
                match st.conclusions.iter().find(|c| c.id == *id) {
                    Some(c) => MockResponse::json(200, &conclusion_json(c)),
                    None => detail(404, "Conclusion not found"),
                }
            }
            _ => detail(404, "Not Found"),
        }
    }

    fn representation(&self, observer: &str, target: &str) -> String {
        let st = self.lock();
        self.representation_in(&st, observer, target)
    }

    /// The scripted representation, else the observer's conclusions about the target.
    fn representation_in(&self, st: &State, observer: &str, target: &str) -> String {
        if let Some(rep) = st
            .representations
            .get(&(observer.to_string(), target.to_string()))
        {
            return rep.clone();
        }
        let facts: Vec<String> = st
            .conclusions
            .iter()
            .filter(|c| c.observer == observer && c.observed == target)
            .map(|c| format!("- {}", c.content))
            .collect();
        if facts.is_empty() {
            String::new()
        } else {
            format!("## Explicit Observations\n{}", facts.join("\n"))
        }
    }
}

fn conclusion_matches(c: &StoredConclusion, filters: &Value) -> bool {
    let field = |key: &str| filters.get(key).and_then(Value::as_str);
    field("observer_id").is_none_or(|o| o == c.observer)
        && field("observed_id").is_none_or(|o| o == c.observed)
        && field("session_id").is_none_or(|s| Some(s) == c.session.as_deref())
}

impl Service for HonchoService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.handle(req) })
    }
}

/// The Honcho double; dropping it stops it.
pub struct HonchoMock {
    server: Server,
    service: Arc<HonchoService>,
}

impl std::fmt::Debug for HonchoMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HonchoMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl HonchoMock {
    /// A server that requires `Bearer <key>` when `key` is given (Honcho cloud), or none
    /// (a self-hosted server with auth off).
    #[allow(clippy::expect_used)]
    pub fn start(key: Option<&str>) -> HonchoMock {
        let service = Arc::new(HonchoService {
            key: key.map(str::to_string),
            state: Mutex::new(State::default()),
        });
        let server = Server::start("honcho", Arc::clone(&service)).expect("start the Honcho mock");
        HonchoMock { server, service }
    }

    /// The value for `baseUrl` / `HONCHO_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    pub fn requests(&self) -> Vec<HonchoRequest> {
        self.service.lock().requests.clone()
    }

    /// `METHOD /path` of each request, query left out.
    pub fn routes(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.target.split('?').next().unwrap_or("")))
            .collect()
    }

    pub fn messages(&self) -> Vec<StoredMessage> {
        self.service.lock().messages.clone()
    }

    /// Each file upload's form: `peer_id`, `metadata` and `file` (`filename`, `text`, ...).
    pub fn uploads(&self) -> Vec<Value> {
        self.service.lock().uploads.clone()
    }

    pub fn conclusions(&self) -> Vec<StoredConclusion> {
        self.service.lock().conclusions.clone()
    }

    /// The sessions of `workspace` with their peers' observation settings.
    pub fn sessions(&self, workspace: &str) -> BTreeMap<String, BTreeMap<String, Value>> {
        self.service
            .lock()
            .sessions
            .iter()
            .filter(|((ws, _), _)| ws == workspace)
            .map(|((_, s), peers)| (s.clone(), peers.clone()))
            .collect()
    }

    /// The dialectic's answers, in order (the last one repeats).
    pub fn answer_chats_with(&self, answers: &[&str]) {
        self.service.lock().chat_answers = answers.iter().map(|a| a.to_string()).collect();
    }

    pub fn set_representation(&self, observer: &str, target: &str, text: &str) {
        self.service
            .lock()
            .representations
            .insert((observer.into(), target.into()), text.into());
    }

    pub fn set_card(&self, observer: &str, target: &str, card: &[&str]) {
        self.service.lock().cards.insert(
            (observer.into(), target.into()),
            card.iter().map(|c| c.to_string()).collect(),
        );
    }

    pub fn set_summary(&self, session: &str, text: &str) {
        self.service
            .lock()
            .summaries
            .insert(session.into(), text.into());
    }

    /// Stores a message as if an earlier session had sent it.
    pub fn seed_message(&self, workspace: &str, session: &str, peer: &str, content: &str) {
        let mut st = self.service.lock();
        st.next_id += 1;
        let id = format!("msg_{}", st.next_id);
        st.sessions
            .entry((workspace.into(), session.into()))
            .or_default()
            .insert(peer.into(), json!({}));
        st.messages.push(StoredMessage {
            id,
            session: session.into(),
            peer: peer.into(),
            content: content.into(),
        });
    }
}
