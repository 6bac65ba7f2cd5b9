//! Providers signed in with OAuth instead of an API key, as the Python Hermes does it: Nous
//! Portal (`nous`, device-code sign-in, inference with the short-lived invoke JWT) and OpenAI
//! Codex / ChatGPT (`openai-codex`, device-code sign-in, the Responses API of the ChatGPT
//! backend). Their tokens live in `auth.json` ([`crate::auth_store`]); [`credential`] returns a
//! usable token, refreshing it at the token endpoint when it is about to expire and writing
//! the rotated tokens back; [`OAuthProvider`] is the [`Provider`] that does this before every
//! request (and once more after a 401); [`login`] runs the device-code sign-in.

mod codex;
mod nous;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_config::Environment;
use serde_json::Value;

use crate::auth_store::{AuthError, AuthStore};
use crate::{ChatRequest, EventStream, LlmError, Provider, ProviderOptions, ProviderSpec};

/// Longest wait for an authorization server's answer.
const AUTH_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer of an authorization server we read.
const MAX_AUTH_BODY: usize = 256 * 1024;
/// Tokens expiring within this many seconds are refreshed first (the Python Hermes's skew).
const REFRESH_SKEW_SECS: f64 = 120.0;

/// A provider whose credentials come from an OAuth sign-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthProvider {
    Nous,
    Codex,
}

impl AuthProvider {
    /// The provider id, also the key under `providers` in `auth.json`.
    pub fn id(self) -> &'static str {
        match self {
            AuthProvider::Nous => "nous",
            AuthProvider::Codex => "openai-codex",
        }
    }

    pub fn display_name(self) -> &'static str {
        match self {
            AuthProvider::Nous => "Nous Portal",
            AuthProvider::Codex => "OpenAI Codex",
        }
    }

    /// The argument of `hermes login` for it.
    pub fn login_name(self) -> &'static str {
        match self {
            AuthProvider::Nous => "nous",
            AuthProvider::Codex => "codex",
        }
    }

    /// `nous`, `codex` / `openai-codex` / `chatgpt`.
    pub fn parse(name: &str) -> Option<AuthProvider> {
        match name.trim().to_ascii_lowercase().as_str() {
            "nous" | "nous-portal" | "portal" => Some(AuthProvider::Nous),
            "codex" | "openai-codex" | "chatgpt" => Some(AuthProvider::Codex),
            _ => None,
        }
    }

    fn not_signed_in(self) -> AuthError {
        AuthError::NotSignedIn {
            provider: self.display_name(),
            login: self.login_name(),
            alternative: match self {
                AuthProvider::Nous => " (or set NOUS_API_KEY)",
                AuthProvider::Codex => "",
            },
        }
    }
}

/// Where the authorization servers are: the defaults, or the environment's overrides
/// (`HERMES_PORTAL_BASE_URL` / `NOUS_PORTAL_BASE_URL` and `NOUS_INFERENCE_BASE_URL` as in the
/// Python Hermes; `HERMES_CODEX_AUTH_URL` for the OpenAI issuer and `HERMES_CODEX_BASE_URL`
/// for the Codex backend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// A portal the operator chose (trusted, unlike a URL stored in `auth.json`).
    pub nous_portal_override: Option<String>,
    pub nous_inference_override: Option<String>,
    pub codex_issuer: String,
    pub codex_base_url: String,
}

impl Default for Endpoints {
    fn default() -> Self {
        Endpoints {
            nous_portal_override: None,
            nous_inference_override: None,
            codex_issuer: codex::DEFAULT_ISSUER.to_string(),
            codex_base_url: codex::DEFAULT_BASE_URL.to_string(),
        }
    }
}

impl Endpoints {
    pub fn from_env(env: &Environment) -> Endpoints {
        let var = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| env.var(n))
                .map(|v| v.trim().trim_end_matches('/').to_string())
                .filter(|v| !v.is_empty())
        };
        let d = Endpoints::default();
        Endpoints {
            nous_portal_override: var(&["HERMES_PORTAL_BASE_URL", "NOUS_PORTAL_BASE_URL"]),
            nous_inference_override: var(&["NOUS_INFERENCE_BASE_URL"]),
            codex_issuer: var(&["HERMES_CODEX_AUTH_URL"]).unwrap_or(d.codex_issuer),
            codex_base_url: var(&["HERMES_CODEX_BASE_URL"]).unwrap_or(d.codex_base_url),
        }
    }
}

/// Whether `store` holds a sign-in of `kind` (the tokens may still need a refresh).
pub fn check_signed_in(kind: AuthProvider, store: &AuthStore) -> Result<(), AuthError> {
    let state = store.provider_state(kind.id())?;
    let has_token = match kind {
        AuthProvider::Nous => state.as_ref().and_then(|s| text(s, "access_token")),
        AuthProvider::Codex => state
            .as_ref()
            .and_then(|s| s.get("tokens"))
            .and_then(Value::as_object)
            .and_then(|t| text(t, "access_token")),
    };
    match has_token {
        Some(_) => Ok(()),
        None => Err(kind.not_signed_in()),
    }
}

/// A token ready for inference, and how requests carrying it must look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub token: String,
    /// Where inference goes, when the sign-in says so.
    pub base_url: Option<String>,
    /// Headers the endpoint requires besides the bearer token.
    pub headers: Vec<(String, String)>,
}

/// A usable token of `kind`: the stored one, or a refreshed one (written back to `auth.json`)
/// when it expires within two minutes, is not usable, or — `rejected` — was just refused by
/// the provider (then another process may already have refreshed it).
pub async fn credential(
    kind: AuthProvider,
    store: &AuthStore,
    endpoints: &Endpoints,
    client: &reqwest::Client,
    rejected: Option<&str>,
) -> Result<Credential, AuthError> {
    match kind {
        AuthProvider::Nous => nous::credential(store, endpoints, client, rejected).await,
        AuthProvider::Codex => codex::credential(store, endpoints, client, rejected).await,
    }
}

/// Where a sign-in was saved and what it enables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginOutcome {
    pub auth_file: std::path::PathBuf,
    /// The inference endpoint the sign-in is for.
    pub base_url: String,
}

/// Runs the device-code sign-in of `kind`: `say` receives the lines to show the user (the URL
/// to open and the code to enter, then progress); the tokens are saved in `auth.json` with
/// `kind` as the active provider.
pub async fn login(
    kind: AuthProvider,
    store: &AuthStore,
    endpoints: &Endpoints,
    client: &reqwest::Client,
    say: &mut (dyn FnMut(&str) + Send),
) -> Result<LoginOutcome, AuthError> {
    match kind {
        AuthProvider::Nous => nous::login(store, endpoints, client, say).await,
        AuthProvider::Codex => codex::login(store, endpoints, client, say).await,
    }
}

/// The provider of a signed-in route: before each request it gets a usable token (refreshing
/// it when needed) and sends the request through the wire format of `spec` with that token;
/// a 401 makes it refresh once and try again.
pub struct OAuthProvider {
    kind: AuthProvider,
    store: AuthStore,
    endpoints: Endpoints,
    spec: ProviderSpec,
    options: ProviderOptions,
    /// Send inference where the sign-in says (the spec's base URL is the preset's default).
    base_from_login: bool,
    client: reqwest::Client,
    endpoint: String,
    /// The wire provider built for the current token.
    current: Mutex<Option<(Credential, Arc<dyn Provider>)>>,
}

impl OAuthProvider {
    /// A provider of `spec` (whose key is empty) signed in as `kind` in `store`.
    pub fn new(
        kind: AuthProvider,
        spec: &ProviderSpec,
        options: &ProviderOptions,
        store: AuthStore,
        endpoints: Endpoints,
        base_from_login: bool,
    ) -> Result<OAuthProvider, LlmError> {
        let client = crate::http::client(&crate::HttpTimeouts {
            connect: Duration::from_secs(15),
            idle: AUTH_HTTP_TIMEOUT,
        })?;
        let endpoint = crate::build_provider_with(spec, options)?
            .endpoint()
            .to_string();
        Ok(OAuthProvider {
            kind,
            store,
            endpoints,
            spec: spec.clone(),
            options: options.clone(),
            base_from_login,
            client,
            endpoint,
            current: Mutex::new(None),
        })
    }

    async fn credential(&self, rejected: Option<&str>) -> Result<Credential, LlmError> {
        credential(
            self.kind,
            &self.store,
            &self.endpoints,
            &self.client,
            rejected,
        )
        .await
        .map_err(|e| LlmError::Auth(e.to_string()))
    }

    /// The wire provider for a credential (rebuilt when the token changed).
    fn wire_for(&self, cred: &Credential) -> Result<Arc<dyn Provider>, LlmError> {
        let Ok(mut current) = self.current.lock() else {
            return Err(LlmError::Config("the provider's state is unusable".into()));
        };
        if let Some((c, p)) = current.as_ref()
            && c == cred
        {
            return Ok(p.clone());
        }
        let mut spec = self.spec.clone();
        spec.api_key = Some(cred.token.clone());
        if self.base_from_login
            && let Some(base) = &cred.base_url
        {
            spec.base_url = base.clone();
        }
        let mut options = self.options.clone();
        options.headers.extend(cred.headers.iter().cloned());
        let provider = crate::build_provider_with(&spec, &options)?;
        *current = Some((cred.clone(), provider.clone()));
        Ok(provider)
    }
}

#[async_trait::async_trait]
impl Provider for OAuthProvider {
    fn name(&self) -> &str {
        &self.spec.provider
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        let cred = self.credential(None).await?;
        let wire = self.wire_for(&cred)?;
        match wire.stream(request).await {
            Err(LlmError::Http { status: 401, .. }) => {
                let fresh = self.credential(Some(&cred.token)).await?;
                self.wire_for(&fresh)?.stream(request).await
            }
            other => other,
        }
    }
}

/// An authorization server's answer: status and JSON body (`Null` when it is not JSON).
struct AuthResponse {
    status: u16,
    body: Value,
    retry_after: Option<u64>,
}

/// POSTs a form (`application/x-www-form-urlencoded`) or a JSON body.
async fn post(
    client: &reqwest::Client,
    url: &str,
    body: PostBody<'_>,
    headers: &[(&str, &str)],
) -> Result<AuthResponse, AuthError> {
    let transport = |detail: String| AuthError::Transport {
        url: url.to_string(),
        detail: crate::redact::redact(&detail),
    };
    let mut request = client.post(url).header("accept", "application/json");
    request = match body {
        PostBody::Form(pairs) => {
            let encoded = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(pairs)
                .finish();
            request
                .header("content-type", "application/x-www-form-urlencoded")
                .body(encoded)
        }
        PostBody::Json(v) => request
            .header("content-type", "application/json")
            .body(v.to_string()),
    };
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let read = async {
        let response = request.send().await.map_err(|e| transport(e.to_string()))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let mut bytes = Vec::new();
        let mut stream = futures_util::StreamExt::boxed(response.bytes_stream());
        while let Some(chunk) = futures_util::StreamExt::next(&mut stream).await {
            let chunk = chunk.map_err(|e| transport(e.to_string()))?;
            if bytes.len() + chunk.len() > MAX_AUTH_BODY {
                return Err(transport(format!(
                    "answer larger than {MAX_AUTH_BODY} bytes"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(AuthResponse {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            retry_after,
        })
    };
    tokio::time::timeout(AUTH_HTTP_TIMEOUT, read)
        .await
        .map_err(|_| transport(format!("no answer within {}s", AUTH_HTTP_TIMEOUT.as_secs())))?
}

enum PostBody<'a> {
    Form(&'a [(&'a str, &'a str)]),
    Json(&'a Value),
}

/// The OAuth error code and description of an error answer (`{"error": "...",
/// "error_description": "..."}` or OpenAI's `{"error": {"code", "message"}}`).
fn oauth_error(body: &Value) -> (String, String) {
    match body.get("error") {
        Some(Value::String(code)) => (
            code.clone(),
            body.get("error_description")
                .or_else(|| body.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        ),
        Some(Value::Object(e)) => (
            e.get("code")
                .or_else(|| e.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            e.get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        ),
        _ => (String::new(), String::new()),
    }
}

/// A string field of a JSON object, trimmed and non-empty.
fn text(map: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    map.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_environment_overrides() {
        assert_eq!(AuthProvider::parse("codex"), Some(AuthProvider::Codex));
        assert_eq!(AuthProvider::parse("Nous"), Some(AuthProvider::Nous));
        assert_eq!(AuthProvider::parse("openrouter"), None);
        let env = Environment::isolated([
            ("NOUS_PORTAL_BASE_URL", "http://127.0.0.1:9/"),
            ("HERMES_CODEX_AUTH_URL", "http://127.0.0.1:8"),
        ]);
        let e = Endpoints::from_env(&env);
        assert_eq!(
            e.nous_portal_override.as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(e.codex_issuer, "http://127.0.0.1:8");
        assert_eq!(e.codex_base_url, codex::DEFAULT_BASE_URL);
    }

    #[test]
    fn oauth_errors_of_both_shapes() {
        let (c, d) = oauth_error(
            &serde_json::json!({"error": "invalid_grant", "error_description": "expired"}),
        );
        assert_eq!((c.as_str(), d.as_str()), ("invalid_grant", "expired"));
        let (c, d) = oauth_error(
            &serde_json::json!({"error": {"code": "refresh_token_reused", "message": "used"}}),
        );
        assert_eq!((c.as_str(), d.as_str()), ("refresh_token_reused", "used"));
    }
}
