//! OAuth 2.1 for remote MCP servers (`auth: oauth`), on the workspace's reqwest: discovery
//! ([`discovery`]: RFC 9728 from the 401 challenge, RFC 8414), dynamic client registration
//! (RFC 7591), the authorization code flow with PKCE S256 ([`pkce`]) through a loopback
//! browser callback ([`callback`]), tokens kept owner-only in the home in the Python
//! Hermes's layout ([`store`]), refreshed when they expire and when the server answers 401.
//! [`http`] puts it in front of rmcp's Streamable HTTP client; the SSE transport asks
//! [`OAuth`] directly.
//!
//! Authorization needs a person at a browser: [`OAuth`] only starts it when the connection
//! is interactive ([`AuthPrompt`] shows the URL); otherwise the server fails with a message
//! naming `hermes mcp login NAME`.

pub mod callback;
pub mod discovery;
pub mod http;
pub mod pkce;
pub mod store;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde_json::{Map, Value, json};

use crate::config::{number, scalar_text};
use discovery::Challenge;
use store::{ClientInfo, ServerMetadata, TokenStore, Tokens};

/// The largest OAuth response body read (metadata, registration, tokens).
pub(crate) const MAX_BODY: usize = 1 << 20;
/// Seconds before expiry at which a token counts as expired.
const EXPIRY_MARGIN: f64 = 30.0;

/// The `oauth:` block of a server (all optional; the Python Hermes's keys).
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthSettings {
    /// A pre-registered client (skips dynamic registration).
    pub client_id: Option<String>,
    /// For confidential clients (`client_secret_post`).
    pub client_secret: Option<String>,
    /// The scope to ask for (default: what the server advertises).
    pub scope: Option<String>,
    /// The loopback callback port (0: a free one, or the one of the stored registration).
    pub redirect_port: u16,
    /// A redirect URI of its own (a proxy that forwards to the loopback listener).
    pub redirect_uri: Option<String>,
    /// The host name in the loopback redirect URI (`127.0.0.1`; some servers want `localhost`).
    pub redirect_host: String,
    /// The name registered for the client.
    pub client_name: String,
    /// How long to wait for the browser step.
    pub timeout: Duration,
}

impl Default for OAuthSettings {
    fn default() -> Self {
        OAuthSettings {
            client_id: None,
            client_secret: None,
            scope: None,
            redirect_port: 0,
            redirect_uri: None,
            redirect_host: "127.0.0.1".into(),
            client_name: "Hermes Agent".into(),
            timeout: Duration::from_secs(300),
        }
    }
}

impl OAuthSettings {
    pub fn from_value(v: &Value) -> OAuthSettings {
        let d = OAuthSettings::default();
        let text = |k: &str| {
            v.get(k)
                .and_then(scalar_text)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        OAuthSettings {
            client_id: text("client_id"),
            client_secret: text("client_secret"),
            scope: text("scope"),
            redirect_port: v
                .get("redirect_port")
                .and_then(number)
                .filter(|p| (0.0..=65535.0).contains(p))
                .map(|p| p as u16)
                .unwrap_or(0),
            redirect_uri: text("redirect_uri"),
            redirect_host: text("redirect_host").unwrap_or(d.redirect_host),
            client_name: text("client_name").unwrap_or(d.client_name),
            timeout: v
                .get("timeout")
                .and_then(number)
                .filter(|t| t.is_finite() && *t > 0.0)
                .map(|t| Duration::from_secs_f64(t.min(3600.0)))
                .unwrap_or(d.timeout),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OAuthError {
    #[error("OAuth authorization is needed: run `hermes mcp login {0}` in a terminal")]
    LoginNeeded(String),
    #[error("OAuth discovery failed: {0}")]
    Discovery(String),
    #[error("OAuth client registration failed: {0}")]
    Registration(String),
    #[error("the authorization was refused: {0}")]
    Denied(String),
    #[error("OAuth callback: {0}")]
    Callback(String),
    #[error("the token request failed: {0}")]
    Token(String),
    #[error("cannot store the OAuth tokens: {0}")]
    Storage(String),
    #[error("OAuth request failed: {0}")]
    Http(String),
}

/// Shows the authorization URL to the person who has to open it.
pub trait AuthPrompt: Send + Sync {
    fn show(&self, server: &str, url: &str);
}

/// Prints the URL on stderr and opens a browser when there is a display (`$BROWSER` when
/// set, else `xdg-open`; never over SSH).
#[derive(Debug, Default)]
pub struct ConsolePrompt;

impl AuthPrompt for ConsolePrompt {
    fn show(&self, server: &str, url: &str) {
        eprintln!(
            "\n  MCP server `{server}` needs authorization. Open this URL in a browser:\n\n    {url}\n"
        );
        let over_ssh =
            std::env::var_os("SSH_CLIENT").is_some() || std::env::var_os("SSH_TTY").is_some();
        let browser = std::env::var("BROWSER")
            .ok()
            .filter(|b| !b.trim().is_empty());
        let display =
            std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
        let opener = match browser {
            Some(b) => Some(b),
            None if display && !over_ssh => Some("xdg-open".to_string()),
            None => None,
        };
        if let Some(opener) = opener
            && let Ok(mut child) = std::process::Command::new(opener.trim())
                .arg(url)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
        {
            // Reaped in the background so no zombie is left behind.
            let _ = std::thread::Builder::new()
                .name("hermes-browser".into())
                .spawn(move || child.wait());
        }
    }
}

/// The OAuth state of one remote server.
pub struct OAuth {
    server: String,
    resource: Url,
    settings: OAuthSettings,
    store: TokenStore,
    http: reqwest::Client,
    prompt: Option<Arc<dyn AuthPrompt>>,
    /// Serialises refreshes and authorizations: one at a time per server.
    state: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("server", &self.server)
            .field("resource", &self.resource.as_str())
            .finish()
    }
}

impl OAuth {
    /// The OAuth state of server `name` at `url`, its files under `home`; `prompt` is who
    /// opens the browser (none: never authorize, only use and refresh stored tokens).
    pub fn new(
        name: &str,
        url: &str,
        settings: OAuthSettings,
        home: &Path,
        prompt: Option<Arc<dyn AuthPrompt>>,
    ) -> Result<OAuth, OAuthError> {
        let resource = Url::parse(url)
            .map_err(|e| OAuthError::Discovery(format!("`{url}` is not a URL: {e}")))?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::limited(3))
            .user_agent(concat!("hermes-rs/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| OAuthError::Http(e.to_string()))?;
        Ok(OAuth {
            server: name.to_string(),
            resource,
            settings,
            store: TokenStore::new(home, name),
            http,
            prompt,
            state: tokio::sync::Mutex::new(()),
        })
    }

    pub fn store(&self) -> &TokenStore {
        &self.store
    }

    /// The access token to send now: the stored one, refreshed first when it has expired.
    /// None when there is none yet (the request goes out without, and its 401 starts the
    /// authorization through [`OAuth::recover`]).
    pub async fn bearer(&self) -> Result<Option<String>, OAuthError> {
        let _guard = self.state.lock().await;
        let Some(tokens) = self.store.tokens() else {
            return Ok(None);
        };
        if !tokens.expired(now(), EXPIRY_MARGIN) {
            return Ok(Some(tokens.access_token));
        }
        match self.refresh(&tokens).await {
            Ok(fresh) => Ok(Some(fresh.access_token)),
            // An expired token that cannot be refreshed: send nothing, the 401 decides.
            Err(_) => Ok(None),
        }
    }

    /// After a 401 with `www_authenticate`: a token stored meanwhile (another process), else
    /// a refreshed one, else a new authorization. `sent` is the token that was refused.
    pub async fn recover(
        &self,
        sent: Option<&str>,
        www_authenticate: &str,
    ) -> Result<String, OAuthError> {
        let _guard = self.state.lock().await;
        let stored = self.store.tokens();
        if let Some(t) = &stored
            && Some(t.access_token.as_str()) != sent
            && !t.expired(now(), EXPIRY_MARGIN)
        {
            return Ok(t.access_token.clone());
        }
        if let Some(t) = &stored
            && t.refresh_token.is_some()
            && let Ok(fresh) = self.refresh(t).await
            && Some(fresh.access_token.as_str()) != sent
        {
            return Ok(fresh.access_token);
        }
        self.authorize(Some(&Challenge::parse(www_authenticate)))
            .await
            .map(|t| t.access_token)
    }

    /// Runs the whole authorization (discovery, registration, browser, code exchange) now.
    pub async fn login(&self) -> Result<(), OAuthError> {
        let _guard = self.state.lock().await;
        self.authorize(None).await.map(|_| ())
    }

    async fn metadata(
        &self,
        challenge: Option<&Challenge>,
    ) -> Result<(ServerMetadata, Option<String>), OAuthError> {
        if challenge.is_none()
            && let Some(meta) = self.store.metadata()
        {
            return Ok((meta, None));
        }
        let found = discovery::discover(&self.http, &self.resource, challenge).await?;
        self.store.save_metadata(&found.metadata)?;
        Ok((found.metadata, found.scope))
    }

    async fn refresh(&self, tokens: &Tokens) -> Result<Tokens, OAuthError> {
        let Some(refresh_token) = tokens.refresh_token.clone() else {
            return Err(OAuthError::Token("no refresh token".into()));
        };
        let (meta, _) = self.metadata(None).await?;
        let client = self
            .store
            .client()
            .map(|c| (c.client_id, c.client_secret))
            .or_else(|| {
                self.settings
                    .client_id
                    .clone()
                    .map(|id| (id, self.settings.client_secret.clone()))
            })
            .ok_or_else(|| OAuthError::Token("no client registration to refresh with".into()))?;
        let mut form = vec![
            ("grant_type", "refresh_token".to_string()),
            ("refresh_token", refresh_token.clone()),
            ("client_id", client.0),
            ("resource", self.resource.to_string()),
        ];
        if let Some(secret) = client.1 {
            form.push(("client_secret", secret));
        }
        let mut fresh = self.token_request(&meta.token_endpoint, &form).await?;
        if fresh.refresh_token.is_none() {
            fresh.refresh_token = Some(refresh_token);
        }
        self.store.save_tokens(&fresh)?;
        Ok(fresh)
    }

    async fn authorize(&self, challenge: Option<&Challenge>) -> Result<Tokens, OAuthError> {
        let Some(prompt) = self.prompt.clone() else {
            return Err(OAuthError::LoginNeeded(self.server.clone()));
        };
        let (meta, advertised_scope) = match challenge {
            Some(c) => self.metadata(Some(c)).await?,
            None => {
                let found = discovery::discover(&self.http, &self.resource, None).await?;
                self.store.save_metadata(&found.metadata)?;
                (found.metadata, found.scope)
            }
        };
        let scope = self.settings.scope.clone().or(advertised_scope);
        let stored_client = self.store.client();
        // The callback port: configured, else the one the stored registration was made for
        // (servers bind a client to its exact redirect URI), else any free one.
        let cached_port = stored_client
            .as_ref()
            .and_then(|c| c.redirect_uris.iter().find_map(|u| loopback_port(u)));
        let port = match (self.settings.redirect_port, cached_port) {
            (0, Some(p)) => p,
            (p, _) => p,
        };
        let callback = callback::Callback::bind(port, "/callback").await?;
        let redirect_uri = self.settings.redirect_uri.clone().unwrap_or_else(|| {
            format!(
                "http://{}:{}/callback",
                self.settings.redirect_host,
                callback.port()
            )
        });
        let client = match stored_client.filter(|c| c.redirect_uris.contains(&redirect_uri)) {
            Some(c) => c,
            None => {
                self.client_for(&meta, &redirect_uri, scope.as_deref())
                    .await?
            }
        };
        let (verifier, code_challenge) = pkce::pair();
        let state = pkce::random_token(24);
        let mut url = Url::parse(&meta.authorization_endpoint).map_err(|e| {
            OAuthError::Discovery(format!(
                "the authorization endpoint `{}` is not a URL: {e}",
                meta.authorization_endpoint
            ))
        })?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &code_challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", self.resource.as_str());
            if let Some(s) = &scope {
                q.append_pair("scope", s);
            }
        }
        prompt.show(&self.server, url.as_str());
        let got = callback.wait(self.settings.timeout).await?;
        if got.state.as_deref() != Some(state.as_str()) {
            return Err(OAuthError::Callback(
                "the state of the callback does not match the request (possible CSRF); try again"
                    .into(),
            ));
        }
        let mut form = vec![
            ("grant_type", "authorization_code".to_string()),
            ("code", got.code),
            ("redirect_uri", redirect_uri),
            ("client_id", client.client_id.clone()),
            ("code_verifier", verifier),
            ("resource", self.resource.to_string()),
        ];
        if let Some(secret) = &client.client_secret {
            form.push(("client_secret", secret.clone()));
        }
        let tokens = self.token_request(&meta.token_endpoint, &form).await?;
        self.store.save_tokens(&tokens)?;
        Ok(tokens)
    }

    /// The configured client, else a dynamically registered one (stored).
    async fn client_for(
        &self,
        meta: &ServerMetadata,
        redirect_uri: &str,
        scope: Option<&str>,
    ) -> Result<ClientInfo, OAuthError> {
        if let Some(id) = &self.settings.client_id {
            let client = ClientInfo {
                client_id: id.clone(),
                client_secret: self.settings.client_secret.clone(),
                redirect_uris: vec![redirect_uri.to_string()],
                extra: Map::new(),
            };
            self.store.save_client(&client)?;
            return Ok(client);
        }
        let Some(endpoint) = &meta.registration_endpoint else {
            return Err(OAuthError::Registration(
                "the server offers no dynamic registration; set `oauth.client_id`".into(),
            ));
        };
        let mut body = json!({
            "client_name": self.settings.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        if let Some(s) = scope {
            body["scope"] = json!(s);
        }
        let resp = self
            .http
            .post(endpoint)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| OAuthError::Registration(crate::text::redact(&e.to_string())))?;
        let status = resp.status();
        let bytes = read_capped(resp, MAX_BODY)
            .await
            .map_err(OAuthError::Registration)?;
        if !status.is_success() {
            return Err(OAuthError::Registration(format!(
                "HTTP {status}: {}",
                snippet(&bytes)
            )));
        }
        let mut client: ClientInfo = serde_json::from_slice(&bytes)
            .map_err(|e| OAuthError::Registration(format!("unreadable answer: {e}")))?;
        if client.redirect_uris.is_empty() {
            client.redirect_uris = vec![redirect_uri.to_string()];
        }
        self.store.save_client(&client)?;
        Ok(client)
    }

    async fn token_request(
        &self,
        endpoint: &str,
        form: &[(&str, String)],
    ) -> Result<Tokens, OAuthError> {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let resp = self
            .http
            .post(endpoint)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| OAuthError::Token(crate::text::redact(&e.to_string())))?;
        let status = resp.status();
        let bytes = read_capped(resp, MAX_BODY)
            .await
            .map_err(OAuthError::Token)?;
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !status.is_success() {
            let why = value
                .get("error")
                .and_then(Value::as_str)
                .map(|e| {
                    let d = value
                        .get("error_description")
                        .and_then(Value::as_str)
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default();
                    format!("{e}{d}")
                })
                .unwrap_or_else(|| snippet(&bytes));
            return Err(OAuthError::Token(format!("HTTP {status}: {why}")));
        }
        let mut tokens: Tokens = serde_json::from_value(value)
            .map_err(|e| OAuthError::Token(format!("unreadable token answer: {e}")))?;
        if let Some(expires_in) = tokens.expires_in.filter(|s| s.is_finite() && *s >= 0.0) {
            tokens.expires_at = Some(now() + expires_in);
        }
        Ok(tokens)
    }
}

/// The port of a loopback `http://127.0.0.1:PORT/callback` (or `localhost`) redirect URI.
fn loopback_port(uri: &str) -> Option<u16> {
    let url = Url::parse(uri).ok()?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost"));
    (url.scheme() == "http" && loopback && url.path() == "/callback")
        .then(|| url.port())
        .flatten()
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// The body of `resp`, at most `cap` bytes (more is an error: hostile servers are normal).
pub(crate) async fn read_capped(
    mut resp: reqwest::Response,
    cap: usize,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
        if out.len() + chunk.len() > cap {
            return Err(format!("the answer is larger than {cap} bytes"));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// The first 200 characters of a body, for error messages (secrets redacted).
fn snippet(bytes: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(bytes).chars().take(200).collect();
    crate::text::redact(text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_have_pythons_defaults() {
        let s = OAuthSettings::from_value(&Value::Null);
        assert_eq!(s, OAuthSettings::default());
        assert_eq!(s.client_name, "Hermes Agent");
        assert_eq!(s.timeout, Duration::from_secs(300));
        let s = OAuthSettings::from_value(
            &json!({"redirect_port": 70000, "redirect_host": "localhost",
                                                  "client_secret": "x", "timeout": 10}),
        );
        assert_eq!(s.redirect_port, 0);
        assert_eq!(s.redirect_host, "localhost");
        assert_eq!(s.client_secret.as_deref(), Some("x"));
        assert_eq!(s.timeout, Duration::from_secs(10));
    }

    #[test]
    fn loopback_ports_are_recognised() {
        assert_eq!(loopback_port("http://127.0.0.1:4567/callback"), Some(4567));
        assert_eq!(loopback_port("http://localhost:80/callback"), None);
        assert_eq!(loopback_port("https://proxy.test/callback"), None);
        assert_eq!(loopback_port("http://127.0.0.1:4567/other"), None);
    }
}
