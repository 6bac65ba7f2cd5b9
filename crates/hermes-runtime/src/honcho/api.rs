//! The Honcho v3 HTTP API, as the official `honcho-ai` SDK calls it: workspaces, peers and
//! sessions are get-or-create `POST`s, messages are added in batches of at most 100,
//! conclusions are scoped by an observer and an observed peer. Our own serde types for the
//! parts Hermes reads; every response body is read with a cap, every request has the
//! configured timeout, and an error answer becomes [`HonchoError::Status`] with the server's
//! `detail`.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

/// The most bytes of one response read (a context or search result is a few kB).
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;
/// Distinct servers/keys/workspaces whose clients a process keeps.
const MAX_SHARED_CLIENTS: usize = 8;
/// Honcho's batch limit for `POST .../messages`.
const MAX_MESSAGES_PER_REQUEST: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum HonchoError {
    #[error("Honcho answered {status}: {detail}")]
    Status { status: u16, detail: String },
    #[error("Honcho could not be reached: {0}")]
    Transport(String),
    #[error("Honcho's answer was over {MAX_RESPONSE_BYTES} bytes")]
    TooLarge,
    #[error("Honcho's answer could not be read: {0}")]
    Decode(String),
}

/// A message as the API returns it.
#[derive(Debug, Clone, Deserialize)]
pub struct ApiMessage {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub peer_id: String,
    #[serde(default)]
    pub session_id: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Summary {
    #[serde(default)]
    pub content: String,
}

/// `GET .../sessions/{id}/context`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SessionContext {
    #[serde(default)]
    pub messages: Vec<ApiMessage>,
    #[serde(default)]
    pub summary: Option<Summary>,
    #[serde(default)]
    pub peer_representation: Option<String>,
    #[serde(default)]
    pub peer_card: Option<Vec<String>>,
}

/// `GET .../peers/{id}/context`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PeerContext {
    #[serde(default)]
    pub representation: Option<String>,
    #[serde(default)]
    pub peer_card: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Conclusion {
    pub id: String,
    #[serde(default)]
    pub content: String,
}

#[derive(Deserialize)]
struct Page<T> {
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

#[derive(Deserialize)]
struct Card {
    #[serde(default)]
    peer_card: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct Representation {
    #[serde(default)]
    representation: String,
}

#[derive(Deserialize)]
struct ChatAnswer {
    #[serde(default)]
    content: Option<String>,
}

/// What the session context call asks for.
#[derive(Debug, Clone, Default)]
pub struct ContextQuery<'a> {
    pub summary: bool,
    pub tokens: Option<u64>,
    pub peer_target: Option<&'a str>,
    pub peer_perspective: Option<&'a str>,
}

/// One workspace of one Honcho server.
pub struct Api {
    http: reqwest::Client,
    base: String,
    key: Option<String>,
    workspace: String,
    timeout: Duration,
    workspace_ready: OnceCell<()>,
}

impl Api {
    pub fn new(
        base: &str,
        key: Option<&str>,
        workspace: &str,
        timeout: Duration,
    ) -> Result<Api, HonchoError> {
        let http = hermes_llm::http_client(&hermes_llm::HttpTimeouts {
            connect: timeout.min(Duration::from_secs(10)),
            idle: timeout,
        })
        .map_err(|e| HonchoError::Transport(e.to_string()))?;
        Ok(Api {
            http,
            base: base.trim_end_matches('/').to_string(),
            key: key.map(str::to_string),
            workspace: workspace.to_string(),
            timeout,
            workspace_ready: OnceCell::new(),
        })
    }

    /// The client for this server, key and workspace, made once per process: a gateway's
    /// many chat sessions share its connection pool and its one workspace check.
    pub fn shared(
        base: &str,
        key: Option<&str>,
        workspace: &str,
        timeout: Duration,
    ) -> Result<Arc<Api>, HonchoError> {
        type Registry = Mutex<Vec<Arc<Api>>>;
        static CLIENTS: OnceLock<Registry> = OnceLock::new();
        let mut clients = CLIENTS
            .get_or_init(|| Mutex::new(Vec::new()))
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let base = base.trim_end_matches('/');
        if let Some(api) = clients.iter().find(|a| {
            a.base == base
                && a.key.as_deref() == key
                && a.workspace == workspace
                && a.timeout == timeout
        }) {
            return Ok(Arc::clone(api));
        }
        let api = Arc::new(Api::new(base, key, workspace, timeout)?);
        // Bounded: a settings change in a long-lived process replaces the oldest client.
        if clients.len() >= MAX_SHARED_CLIENTS {
            clients.remove(0);
        }
        clients.push(Arc::clone(&api));
        Ok(api)
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v3/workspaces/{}{path}", self.base, seg(&self.workspace))
    }

    async fn send(
        &self,
        method: reqwest::Method,
        url: String,
        query: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<Value, HonchoError> {
        let url = if query.is_empty() {
            reqwest::Url::parse(&url)
        } else {
            reqwest::Url::parse_with_params(&url, query)
        }
        .map_err(|e| HonchoError::Transport(format!("bad Honcho URL: {e}")))?;
        let mut request = self
            .http
            .request(method, url)
            .timeout(self.timeout)
            .header("Accept", "application/json");
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let mut response = request.send().await.map_err(|e| {
            HonchoError::Transport(if e.is_timeout() {
                format!("no answer within {}s", self.timeout.as_secs_f64())
            } else {
                e.without_url().to_string()
            })
        })?;
        let status = response.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| HonchoError::Transport(e.without_url().to_string()))?
        {
            if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(HonchoError::TooLarge);
            }
            bytes.extend_from_slice(&chunk);
        }
        let value = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&bytes).chars().take(300).collect())
            })
        };
        if !status.is_success() {
            let detail = match value.get("detail") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None if value.is_null() => status.canonical_reason().unwrap_or("").to_string(),
                None => value.to_string(),
            };
            return Err(HonchoError::Status {
                status: status.as_u16(),
                detail: detail.chars().take(500).collect(),
            });
        }
        Ok(value)
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<Value, HonchoError> {
        self.ensure_workspace().await?;
        self.send(method, self.url(path), query, body).await
    }

    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, HonchoError> {
        decode(self.call(reqwest::Method::GET, path, query, None).await?)
    }

    async fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: Value,
    ) -> Result<T, HonchoError> {
        decode(
            self.call(reqwest::Method::POST, path, &[], Some(body))
                .await?,
        )
    }

    /// `POST /v3/workspaces` once per client: get-or-create, as the SDK does.
    async fn ensure_workspace(&self) -> Result<(), HonchoError> {
        self.workspace_ready
            .get_or_try_init(|| async {
                let url = format!("{}/v3/workspaces", self.base);
                self.send(
                    reqwest::Method::POST,
                    url,
                    &[],
                    Some(json!({"id": self.workspace})),
                )
                .await
                .map(|_| ())
            })
            .await
            .map(|_| ())
    }

    /// Whether the server answers with these credentials (the workspace get-or-create).
    pub async fn check(&self) -> Result<(), HonchoError> {
        self.ensure_workspace().await
    }

    pub async fn get_or_create_peer(&self, peer: &str) -> Result<(), HonchoError> {
        self.call(
            reqwest::Method::POST,
            "/peers",
            &[],
            Some(json!({"id": peer})),
        )
        .await
        .map(|_| ())
    }

    /// Get-or-create the session with both peers and their observation settings.
    pub async fn get_or_create_session(
        &self,
        session: &str,
        peers: &[(&str, bool, bool)],
    ) -> Result<(), HonchoError> {
        let peers: serde_json::Map<String, Value> = peers
            .iter()
            .map(|(id, observe_me, observe_others)| {
                (
                    id.to_string(),
                    json!({"observe_me": observe_me, "observe_others": observe_others}),
                )
            })
            .collect();
        self.call(
            reqwest::Method::POST,
            "/sessions",
            &[],
            Some(json!({"id": session, "peers": peers})),
        )
        .await
        .map(|_| ())
    }

    /// Adds `(peer, content)` messages in order, in batches of at most 100.
    pub async fn add_messages(
        &self,
        session: &str,
        messages: &[(String, String)],
    ) -> Result<(), HonchoError> {
        for batch in messages.chunks(MAX_MESSAGES_PER_REQUEST) {
            let items: Vec<Value> = batch
                .iter()
                .map(|(peer, content)| json!({"peer_id": peer, "content": content}))
                .collect();
            self.call(
                reqwest::Method::POST,
                &format!("/sessions/{}/messages", seg(session)),
                &[],
                Some(json!({"messages": items})),
            )
            .await?;
        }
        Ok(())
    }

    /// Uploads a text file as messages of `peer` in the session (Honcho splits it).
    pub async fn upload_file(
        &self,
        session: &str,
        peer: &str,
        filename: &str,
        text: String,
        metadata: &Value,
    ) -> Result<(), HonchoError> {
        self.ensure_workspace().await?;
        let part = reqwest::multipart::Part::text(text)
            .file_name(filename.to_string())
            .mime_str("text/plain")
            .map_err(|e| HonchoError::Transport(e.to_string()))?;
        let form = reqwest::multipart::Form::new()
            .part("file", part)
            .text("peer_id", peer.to_string())
            .text("metadata", metadata.to_string());
        let mut request = self
            .http
            .post(self.url(&format!("/sessions/{}/messages/upload", seg(session))))
            .timeout(self.timeout)
            .multipart(form);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| HonchoError::Transport(e.without_url().to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(HonchoError::Status {
                status: status.as_u16(),
                detail: status.canonical_reason().unwrap_or("").to_string(),
            });
        }
        Ok(())
    }

    pub async fn session_context(
        &self,
        session: &str,
        q: &ContextQuery<'_>,
    ) -> Result<SessionContext, HonchoError> {
        let mut query = vec![
            ("summary", q.summary.to_string()),
            ("limit_to_session", "false".to_string()),
        ];
        if let Some(t) = q.tokens {
            query.push(("tokens", t.to_string()));
        }
        optional(&mut query, "peer_target", q.peer_target);
        optional(&mut query, "peer_perspective", q.peer_perspective);
        self.get(&format!("/sessions/{}/context", seg(session)), &query)
            .await
    }

    pub async fn peer_context(
        &self,
        peer: &str,
        target: Option<&str>,
        search_query: Option<&str>,
    ) -> Result<PeerContext, HonchoError> {
        let mut query = Vec::new();
        optional(&mut query, "target", target);
        optional(&mut query, "search_query", search_query);
        self.get(&format!("/peers/{}/context", seg(peer)), &query)
            .await
    }

    pub async fn representation(
        &self,
        peer: &str,
        target: Option<&str>,
    ) -> Result<String, HonchoError> {
        let mut body = serde_json::Map::new();
        if let Some(t) = target {
            body.insert("target".into(), json!(t));
        }
        let answer: Representation = self
            .post(
                &format!("/peers/{}/representation", seg(peer)),
                Value::Object(body),
            )
            .await?;
        Ok(answer.representation)
    }

    pub async fn card(&self, peer: &str, target: Option<&str>) -> Result<Vec<String>, HonchoError> {
        let mut query = Vec::new();
        optional(&mut query, "target", target);
        let card: Card = self
            .get(&format!("/peers/{}/card", seg(peer)), &query)
            .await?;
        Ok(card.peer_card.unwrap_or_default())
    }

    pub async fn set_card(
        &self,
        peer: &str,
        target: Option<&str>,
        card: &[String],
    ) -> Result<Vec<String>, HonchoError> {
        let mut query = Vec::new();
        optional(&mut query, "target", target);
        let v = self
            .call(
                reqwest::Method::PUT,
                &format!("/peers/{}/card", seg(peer)),
                &query,
                Some(json!({"peer_card": card})),
            )
            .await?;
        Ok(decode::<Card>(v)?.peer_card.unwrap_or_default())
    }

    /// The dialectic: Honcho's own model answers `query` about `target` (or the peer itself).
    pub async fn chat(
        &self,
        peer: &str,
        query: &str,
        target: Option<&str>,
        reasoning_level: Option<&str>,
    ) -> Result<String, HonchoError> {
        let mut body = json!({"query": query, "stream": false});
        if let Some(t) = target {
            body["target"] = json!(t);
        }
        if let Some(l) = reasoning_level {
            body["reasoning_level"] = json!(l);
        }
        let answer: ChatAnswer = self
            .post(&format!("/peers/{}/chat", seg(peer)), body)
            .await?;
        Ok(answer.content.unwrap_or_default())
    }

    /// Messages across the workspace matching `query`, seen from `peer_perspective`.
    pub async fn search(
        &self,
        query: &str,
        peer_perspective: &str,
        limit: usize,
    ) -> Result<Vec<ApiMessage>, HonchoError> {
        self.post(
            "/search",
            json!({"query": query, "filters": {"peer_perspective": peer_perspective}, "limit": limit}),
        )
        .await
    }

    /// Messages `peer` wrote matching `query` (the fallback of older servers).
    pub async fn peer_search(
        &self,
        peer: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<ApiMessage>, HonchoError> {
        self.post(
            &format!("/peers/{}/search", seg(peer)),
            json!({"query": query, "filters": null, "limit": limit}),
        )
        .await
    }

    pub async fn create_conclusion(
        &self,
        observer: &str,
        observed: &str,
        content: &str,
        session: Option<&str>,
    ) -> Result<(), HonchoError> {
        let mut item =
            json!({"observer_id": observer, "observed_id": observed, "content": content});
        if let Some(s) = session {
            item["session_id"] = json!(s);
        }
        self.call(
            reqwest::Method::POST,
            "/conclusions",
            &[],
            Some(json!({"conclusions": [item]})),
        )
        .await
        .map(|_| ())
    }

    pub async fn list_conclusions(
        &self,
        observer: &str,
        observed: &str,
        size: usize,
    ) -> Result<Vec<Conclusion>, HonchoError> {
        let v = self
            .call(
                reqwest::Method::POST,
                "/conclusions/list",
                &[("page", "1".to_string()), ("size", size.to_string())],
                Some(json!({"filters": {"observer_id": observer, "observed_id": observed}})),
            )
            .await?;
        Ok(decode::<Page<Conclusion>>(v)?.items)
    }

    pub async fn query_conclusions(
        &self,
        observer: &str,
        observed: &str,
        query: &str,
        top_k: usize,
    ) -> Result<Vec<Conclusion>, HonchoError> {
        self.post(
            "/conclusions/query",
            json!({"query": query, "top_k": top_k,
                "filters": {"observer_id": observer, "observed_id": observed}}),
        )
        .await
    }

    pub async fn delete_conclusion(&self, id: &str) -> Result<(), HonchoError> {
        self.call(
            reqwest::Method::DELETE,
            &format!("/conclusions/{}", seg(id)),
            &[],
            None,
        )
        .await
        .map(|_| ())
    }
}

fn optional<'a>(query: &mut Vec<(&'a str, String)>, key: &'a str, value: Option<&str>) {
    if let Some(v) = value {
        query.push((key, v.to_string()));
    }
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, HonchoError> {
    serde_json::from_value(v).map_err(|e| HonchoError::Decode(e.to_string()))
}

/// A path segment: ids are `[A-Za-z0-9_-]` already; anything else is percent-encoded so a
/// hostile id can never change the route.
fn seg(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_cannot_leave_their_path_segment() {
        assert_eq!(super::seg("a/../b?c"), "a%2F%2E%2E%2Fb%3Fc");
    }
}
