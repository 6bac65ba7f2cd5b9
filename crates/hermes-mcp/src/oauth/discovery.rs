//! Finding the authorization server of an MCP server: the `WWW-Authenticate` challenge of a
//! 401 (its `resource_metadata` and `scope` parameters), the protected-resource metadata
//! (RFC 9728) it points to or the well-known path, then the authorization server's metadata
//! (RFC 8414, else OpenID Connect discovery), else the endpoints the 2025-03-26 MCP spec
//! assumes on the server's origin.

use reqwest::Url;
use serde::Deserialize;
use serde_json::Value;

use super::OAuthError;
use super::store::ServerMetadata;

/// The parameters of a `Bearer` challenge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

impl Challenge {
    /// Parses `Bearer realm="x", resource_metadata="https://...", scope="a b"`.
    pub fn parse(header: &str) -> Challenge {
        let mut out = Challenge::default();
        let rest = header.trim();
        let rest = match rest.split_once(char::is_whitespace) {
            Some((scheme, params)) if scheme.eq_ignore_ascii_case("bearer") => params,
            _ if rest.eq_ignore_ascii_case("bearer") => "",
            _ => rest,
        };
        for (key, value) in params(rest) {
            match key.to_ascii_lowercase().as_str() {
                "resource_metadata" => out.resource_metadata = Some(value),
                "scope" => out.scope = Some(value),
                "error" => out.error = Some(value),
                _ => {}
            }
        }
        out
    }
}

/// `key=value` / `key="quoted, value"` pairs separated by commas.
fn params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=' && *c != ','))
            .collect::<String>()
            .trim()
            .to_string();
        if key.is_empty() && chars.peek().is_none() {
            break;
        }
        if chars.next_if_eq(&'=').is_none() {
            continue;
        }
        let value = if chars.next_if_eq(&'"').is_some() {
            let mut v = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => v.extend(chars.next()),
                    '"' => break,
                    c => v.push(c),
                }
            }
            v
        } else {
            std::iter::from_fn(|| chars.next_if(|c| *c != ','))
                .collect::<String>()
                .trim()
                .to_string()
        };
        if !key.is_empty() {
            out.push((key, value));
        }
    }
    out
}

/// RFC 9728 protected resource metadata (what we use of it).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourceMetadata {
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

/// What discovery found.
#[derive(Debug, Clone)]
pub struct Discovered {
    pub metadata: ServerMetadata,
    /// The scope to ask for when the settings name none.
    pub scope: Option<String>,
}

/// Runs discovery for the MCP server at `server` after `challenge` (none: no 401 seen yet).
pub async fn discover(
    http: &reqwest::Client,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Result<Discovered, OAuthError> {
    let resource = resource_metadata(http, server, challenge).await;
    let issuer = match resource
        .as_ref()
        .and_then(|r| r.authorization_servers.first())
    {
        Some(s) => Url::parse(s).map_err(|e| {
            OAuthError::Discovery(format!("the authorization server `{s}` is not a URL: {e}"))
        })?,
        None => origin(server),
    };
    let metadata = match authorization_metadata(http, &issuer).await? {
        Some(m) => m,
        None => fallback(&issuer),
    };
    if let Some(methods) = &metadata.code_challenge_methods_supported
        && !methods.iter().any(|m| m == "S256")
    {
        return Err(OAuthError::Discovery(format!(
            "the authorization server {issuer} does not support PKCE with S256"
        )));
    }
    let scope = challenge
        .and_then(|c| c.scope.clone())
        .or_else(|| {
            resource
                .as_ref()
                .filter(|r| !r.scopes_supported.is_empty())
                .map(|r| r.scopes_supported.join(" "))
        })
        .filter(|s| !s.trim().is_empty());
    Ok(Discovered { metadata, scope })
}

async fn resource_metadata(
    http: &reqwest::Client,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Option<ResourceMetadata> {
    let mut candidates = Vec::new();
    if let Some(url) = challenge
        .and_then(|c| c.resource_metadata.as_deref())
        .and_then(|u| server.join(u).ok())
    {
        candidates.push(url);
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.extend(well_known(server, "oauth-protected-resource", path));
    }
    candidates.extend(well_known(server, "oauth-protected-resource", ""));
    for url in candidates {
        if let Some(doc) = get_json::<ResourceMetadata>(http, &url).await {
            return Some(doc);
        }
    }
    None
}

async fn authorization_metadata(
    http: &reqwest::Client,
    issuer: &Url,
) -> Result<Option<ServerMetadata>, OAuthError> {
    let path = issuer.path().trim_end_matches('/');
    let mut candidates = Vec::new();
    candidates.extend(well_known(issuer, "oauth-authorization-server", path));
    candidates.extend(well_known(issuer, "openid-configuration", path));
    if !path.is_empty() {
        candidates.extend(
            issuer
                .join(&format!("{path}/.well-known/openid-configuration"))
                .ok(),
        );
    }
    for url in candidates {
        if let Some(meta) = get_json::<ServerMetadata>(http, &url).await {
            return Ok(Some(meta));
        }
    }
    Ok(None)
}

/// `https://host/.well-known/<name><path>`.
fn well_known(base: &Url, name: &str, path: &str) -> Option<Url> {
    base.join(&format!("/.well-known/{name}{path}")).ok()
}

fn origin(url: &Url) -> Url {
    let mut o = url.clone();
    o.set_path("/");
    o.set_query(None);
    o.set_fragment(None);
    o
}

/// The endpoints assumed when no metadata is published.
fn fallback(issuer: &Url) -> ServerMetadata {
    let at = |p: &str| {
        issuer
            .join(p)
            .map(|u| u.to_string())
            .unwrap_or_else(|_| p.to_string())
    };
    ServerMetadata {
        issuer: Some(origin(issuer).to_string()),
        authorization_endpoint: at("/authorize"),
        token_endpoint: at("/token"),
        registration_endpoint: Some(at("/register")),
        code_challenge_methods_supported: None,
        scopes_supported: None,
        extra: Default::default(),
    }
}

/// A JSON document, or none (not found, not JSON, too large, unreachable).
async fn get_json<T: for<'de> Deserialize<'de>>(http: &reqwest::Client, url: &Url) -> Option<T> {
    let resp = http
        .get(url.clone())
        .header("Accept", "application/json")
        .send()
        .await
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body = super::read_capped(resp, super::MAX_BODY).await.ok()?;
    let value: Value = serde_json::from_slice(&body).ok()?;
    serde_json::from_value(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_parsed() {
        let c = Challenge::parse(
            r#"Bearer realm="mcp", error="invalid_token", resource_metadata="https://a.test/.well-known/oauth-protected-resource/mcp", scope="read \"x\" write""#,
        );
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://a.test/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some(r#"read "x" write"#));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
        assert_eq!(
            Challenge::parse("Bearer scope=a").scope.as_deref(),
            Some("a")
        );
        assert_eq!(Challenge::parse("garbage ,,= =").scope, None);
    }

    #[test]
    fn the_fallback_endpoints_are_on_the_origin() {
        let m = fallback(&Url::parse("https://h.test/some/mcp").unwrap());
        assert_eq!(m.authorization_endpoint, "https://h.test/authorize");
        assert_eq!(m.token_endpoint, "https://h.test/token");
        assert_eq!(
            m.registration_endpoint.as_deref(),
            Some("https://h.test/register")
        );
        assert_eq!(
            well_known(
                &Url::parse("https://h.test/mcp").unwrap(),
                "oauth-protected-resource",
                "/mcp"
            )
            .unwrap()
            .as_str(),
            "https://h.test/.well-known/oauth-protected-resource/mcp"
        );
    }
}
