//! Where OAuth state lives: `$HERMES_HOME/mcp-tokens/` in the Python Hermes's layout, one set
//! of files per server (its name made file-safe): `<name>.json` (the tokens, with an absolute
//! `expires_at`), `<name>.client.json` (the client registration) and `<name>.meta.json` (the
//! authorization server's metadata). Files are written atomically, owner-only (0600) in an
//! owner-only directory (0700); fields we do not know are kept.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::OAuthError;

/// Tokens as stored (the OAuth token response plus `expires_at`, seconds since the epoch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    #[serde(default = "bearer")]
    pub token_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<f64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn bearer() -> String {
    "Bearer".into()
}

impl Tokens {
    /// Whether the access token has expired (or will within `margin` seconds).
    pub fn expired(&self, now: f64, margin: f64) -> bool {
        self.expires_at.is_some_and(|at| at <= now + margin)
    }
}

/// A client registration (RFC 7591 response, or the configured `client_id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientInfo {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// RFC 8414 authorization server metadata (the fields we use; the rest is kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The OAuth files of one server.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
    stem: String,
}

impl TokenStore {
    /// The files of server `name` under `home/mcp-tokens/`.
    pub fn new(home: &Path, name: &str) -> TokenStore {
        TokenStore {
            dir: home.join("mcp-tokens"),
            stem: safe_name(name),
        }
    }

    pub fn tokens_path(&self) -> PathBuf {
        self.dir.join(format!("{}.json", self.stem))
    }

    pub fn client_path(&self) -> PathBuf {
        self.dir.join(format!("{}.client.json", self.stem))
    }

    pub fn meta_path(&self) -> PathBuf {
        self.dir.join(format!("{}.meta.json", self.stem))
    }

    /// The stored tokens; a missing or unreadable file is none (a damaged one is not fatal:
    /// the user authorizes again).
    pub fn tokens(&self) -> Option<Tokens> {
        read(&self.tokens_path())
    }

    pub fn client(&self) -> Option<ClientInfo> {
        read(&self.client_path())
    }

    pub fn metadata(&self) -> Option<ServerMetadata> {
        read(&self.meta_path())
    }

    pub fn save_tokens(&self, tokens: &Tokens) -> Result<(), OAuthError> {
        write(&self.tokens_path(), tokens)
    }

    pub fn save_client(&self, client: &ClientInfo) -> Result<(), OAuthError> {
        write(&self.client_path(), client)
    }

    pub fn save_metadata(&self, meta: &ServerMetadata) -> Result<(), OAuthError> {
        write(&self.meta_path(), meta)
    }

    /// Forgets everything stored for this server.
    pub fn remove(&self) {
        for p in [self.tokens_path(), self.client_path(), self.meta_path()] {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Python's `_safe_filename`: anything but word characters and `-` becomes `_`, trimmed of
/// `_`, at most 128 characters, `default` when nothing is left.
fn safe_name(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed: String = mapped.trim_matches('_').chars().take(128).collect();
    if trimmed.is_empty() {
        "default".into()
    } else {
        trimmed
    }
}

/// At most this much of a stored file is read (they are small JSON documents).
const MAX_FILE: u64 = 1 << 20;

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_FILE).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// Atomic owner-only write: a fresh 0600 temp file beside the target, then a rename.
fn write<T: Serialize>(path: &Path, value: &T) -> Result<(), OAuthError> {
    use std::io::Write;
    let io = |e: std::io::Error| OAuthError::Storage(format!("{}: {e}", path.display()));
    let dir = path
        .parent()
        .ok_or_else(|| OAuthError::Storage(format!("{}: no directory", path.display())))?;
    std::fs::create_dir_all(dir).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    let body = serde_json::to_vec_pretty(value)
        .map_err(|e| OAuthError::Storage(format!("{}: {e}", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.tmp.{}.{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("oauth"),
        std::process::id(),
        super::pkce::random_token(6)
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = options.open(&tmp).and_then(|mut f| {
        f.write_all(&body)?;
        f.sync_all()
    });
    if let Err(e) = result.and_then(|_| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_follow_the_python_layout_and_are_owner_only() {
        let home = tempfile::tempdir().unwrap();
        let store = TokenStore::new(home.path(), "my srv/1");
        assert_eq!(
            store.tokens_path(),
            home.path().join("mcp-tokens/my_srv_1.json")
        );
        assert!(store.tokens().is_none());
        let tokens: Tokens = serde_json::from_value(serde_json::json!({
            "access_token": "a", "token_type": "Bearer", "expires_in": 60,
            "refresh_token": "r", "expires_at": 100.0, "id_token": "kept"
        }))
        .unwrap();
        store.save_tokens(&tokens).unwrap();
        assert_eq!(store.tokens().unwrap(), tokens);
        let text = std::fs::read_to_string(store.tokens_path()).unwrap();
        assert!(text.contains("\"id_token\": \"kept\""), "{text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&store.tokens_path()), 0o600);
            assert_eq!(mode(&home.path().join("mcp-tokens")), 0o700);
        }
        assert!(tokens.expired(99.0, 5.0) && !tokens.expired(10.0, 5.0));
        std::fs::write(store.client_path(), "{not json").unwrap();
        assert!(store.client().is_none());
        store.remove();
        assert!(store.tokens().is_none());
        assert_eq!(safe_name("__"), "default");
    }
}
