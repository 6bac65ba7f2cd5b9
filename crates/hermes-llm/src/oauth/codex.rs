//! OpenAI Codex (ChatGPT sign-in): the device-code sign-in of the Codex CLI
//! (`{issuer}/api/accounts/deviceauth/usercode`, polling `.../deviceauth/token` until the user
//! approved, then exchanging the authorization code with its PKCE verifier at
//! `{issuer}/oauth/token`), the refresh (`grant_type=refresh_token`), and the headers the
//! ChatGPT backend wants (`originator: codex_cli_rs` and the account id from the token).
//! Stored as the Python Hermes stores it: `providers.openai-codex = {tokens: {access_token,
//! refresh_token, ...}, last_refresh, auth_mode: "chatgpt"}`.

use serde_json::{Map, Value, json};

use super::{AuthProvider, Credential, Endpoints, LoginOutcome, PostBody, REFRESH_SKEW_SECS};
use super::{oauth_error, post, text};
use crate::auth_store::{
    AuthError, AuthStore, jwt_claims, jwt_expiry, now_secs, provider_state, set_provider_state,
};

const PROVIDER: &str = "OpenAI Codex";
const ID: &str = "openai-codex";
pub(super) const DEFAULT_ISSUER: &str = "https://auth.openai.com";
pub(super) const DEFAULT_BASE_URL: &str = "https://chatgpt.com/backend-api/codex";
const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// Sign-ins not approved within this time are abandoned (the Python Hermes's 15 minutes).
const LOGIN_WAIT_SECS: u64 = 15 * 60;

/// `2025-01-31T12:00:00.123456Z`: how the Python Hermes writes `last_refresh`.
fn last_refresh_now() -> String {
    crate::auth_store::iso_at(now_secs()).replace("+00:00", "Z")
}

/// The headers the ChatGPT backend requires from a client: a Codex originator and, from the
/// token's claims, the ChatGPT account.
fn headers(token: &str) -> Vec<(String, String)> {
    let mut out = vec![
        (
            "user-agent".to_string(),
            "codex_cli_rs/0.0.0 (Hermes Agent)".to_string(),
        ),
        ("originator".to_string(), "codex_cli_rs".to_string()),
    ];
    let account = jwt_claims(token).and_then(|c| {
        c.get("https://api.openai.com/auth")?
            .get("chatgpt_account_id")?
            .as_str()
            .map(str::to_string)
    });
    if let Some(a) = account.filter(|a| !a.is_empty()) {
        out.push(("chatgpt-account-id".to_string(), a));
    }
    out
}

/// Whether the token expires within two minutes (tokens that are not JWTs are not judged).
fn expiring(token: &str) -> bool {
    jwt_expiry(token).is_some_and(|exp| exp <= now_secs() + REFRESH_SKEW_SECS)
}

/// `(tokens map, access token)` of the stored state.
fn stored(state: &Map<String, Value>) -> Result<(Map<String, Value>, String), AuthError> {
    let tokens = state
        .get("tokens")
        .and_then(Value::as_object)
        .cloned()
        .ok_or_else(|| AuthProvider::Codex.not_signed_in())?;
    let access =
        text(&tokens, "access_token").ok_or_else(|| AuthProvider::Codex.not_signed_in())?;
    Ok((tokens, access))
}

fn credential_for(token: String, endpoints: &Endpoints) -> Credential {
    Credential {
        headers: headers(&token),
        token,
        base_url: Some(endpoints.codex_base_url.clone()),
    }
}

async fn refresh(
    client: &reqwest::Client,
    issuer: &str,
    refresh_token: &str,
) -> Result<Map<String, Value>, AuthError> {
    let answer = post(
        client,
        &format!("{issuer}/oauth/token"),
        PostBody::Form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", CLIENT_ID),
        ]),
        &[(
            "user-agent",
            concat!("hermes-rs/", env!("CARGO_PKG_VERSION")),
        )],
    )
    .await?;
    match answer.status {
        200 => match answer.body {
            Value::Object(map) if text(&map, "access_token").is_some() => Ok(map),
            _ => Err(AuthError::Refresh {
                provider: PROVIDER,
                message: "the answer carried no access_token".into(),
                relogin: true,
            }),
        },
        429 => Err(AuthError::Refresh {
            provider: PROVIDER,
            message: match answer.retry_after {
                Some(s) => format!("the usage quota is exhausted (HTTP 429); retry in {s}s, the sign-in is still valid"),
                None => "the usage quota is exhausted (HTTP 429); retry later, the sign-in is still valid".into(),
            },
            relogin: false,
        }),
        status => {
            let (code, description) = oauth_error(&answer.body);
            let message = if code == "refresh_token_reused" {
                "the refresh token was already used by another client (the Codex CLI or VS Code?)".to_string()
            } else if description.is_empty() {
                format!("HTTP {status} {code}")
            } else {
                description
            };
            Err(AuthError::Refresh {
                provider: PROVIDER,
                message: crate::redact::redact(&message),
                relogin: matches!(status, 401 | 403)
                    || matches!(
                        code.as_str(),
                        "invalid_grant" | "invalid_token" | "invalid_request" | "refresh_token_reused"
                    ),
            })
        }
    }
}

pub(super) async fn credential(
    store: &AuthStore,
    endpoints: &Endpoints,
    client: &reqwest::Client,
    rejected: Option<&str>,
) -> Result<Credential, AuthError> {
    let state = store
        .provider_state(ID)?
        .ok_or_else(|| AuthProvider::Codex.not_signed_in())?;
    let (_, access) = stored(&state)?;
    if rejected.is_none() && !expiring(&access) {
        return Ok(credential_for(access, endpoints));
    }
    store
        .locked(|| async {
            let mut doc = store.read()?;
            let mut state =
                provider_state(&doc, ID).ok_or_else(|| AuthProvider::Codex.not_signed_in())?;
            let (mut tokens, access) = stored(&state)?;
            // Refreshed by another process since the token was rejected: use theirs.
            let forced = rejected.is_some_and(|r| r == access);
            if !forced && !expiring(&access) {
                return Ok(credential_for(access, endpoints));
            }
            let refresh_token = text(&tokens, "refresh_token").ok_or(AuthError::Refresh {
                provider: PROVIDER,
                message: "no refresh token is stored".into(),
                relogin: true,
            })?;
            let answer = refresh(client, &endpoints.codex_issuer, &refresh_token).await?;
            let fresh = text(&answer, "access_token").unwrap_or_default();
            tokens.insert("access_token".into(), json!(fresh));
            tokens.insert(
                "refresh_token".into(),
                json!(text(&answer, "refresh_token").unwrap_or(refresh_token)),
            );
            if let Some(id) = text(&answer, "id_token") {
                tokens.insert("id_token".into(), json!(id));
            }
            state.insert("tokens".into(), Value::Object(tokens));
            state.insert("last_refresh".into(), json!(last_refresh_now()));
            state.insert("auth_mode".into(), json!("chatgpt"));
            set_provider_state(&mut doc, ID, state);
            store.write(&mut doc)?;
            Ok(credential_for(fresh, endpoints))
        })
        .await
}

pub(super) async fn login(
    store: &AuthStore,
    endpoints: &Endpoints,
    client: &reqwest::Client,
    say: &mut (dyn FnMut(&str) + Send),
) -> Result<LoginOutcome, AuthError> {
    let fail = |message: String| AuthError::Login {
        provider: PROVIDER,
        message,
    };
    let issuer = endpoints.codex_issuer.as_str();
    say(&format!("Signing in to {PROVIDER}..."));
    let device = post(
        client,
        &format!("{issuer}/api/accounts/deviceauth/usercode"),
        PostBody::Json(&json!({"client_id": CLIENT_ID})),
        &[],
    )
    .await?;
    if device.status == 429 {
        return Err(fail(
            "OpenAI is rate-limiting sign-in requests (HTTP 429); wait a minute and try again"
                .into(),
        ));
    }
    let Value::Object(body) = &device.body else {
        return Err(fail(format!(
            "the device-code request answered HTTP {}",
            device.status
        )));
    };
    let (Some(user_code), Some(device_auth_id)) =
        (text(body, "user_code"), text(body, "device_auth_id"))
    else {
        return Err(fail(format!(
            "the device-code answer (HTTP {}) lacks user_code or device_auth_id",
            device.status
        )));
    };
    let interval = match body.get("interval") {
        Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
        Some(v) => v.as_u64(),
        None => None,
    }
    .unwrap_or(5)
    .clamp(1, 60);
    say("To continue:");
    say(&format!("  1. Open: {issuer}/codex/device"));
    say(&format!("  2. Enter code: {user_code}"));
    say("Waiting for sign-in...");

    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(LOGIN_WAIT_SECS);
    let approved = loop {
        tokio::time::sleep(std::time::Duration::from_secs(interval)).await;
        if tokio::time::Instant::now() >= deadline {
            return Err(fail(
                "the sign-in was not completed within 15 minutes".into(),
            ));
        }
        let poll = post(
            client,
            &format!("{issuer}/api/accounts/deviceauth/token"),
            PostBody::Json(&json!({"device_auth_id": device_auth_id, "user_code": user_code})),
            &[],
        )
        .await?;
        match poll.status {
            200 => match poll.body {
                Value::Object(map) => break map,
                _ => return Err(fail("the approval answer is not JSON".into())),
            },
            // Not approved yet.
            403 | 404 => {}
            status => return Err(fail(format!("polling for approval answered HTTP {status}"))),
        }
    };
    let (Some(code), Some(verifier)) = (
        text(&approved, "authorization_code"),
        text(&approved, "code_verifier"),
    ) else {
        return Err(fail(
            "the approval lacks authorization_code or code_verifier".into(),
        ));
    };
    let redirect = format!("{issuer}/deviceauth/callback");
    let exchange = post(
        client,
        &format!("{issuer}/oauth/token"),
        PostBody::Form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &redirect),
            ("client_id", CLIENT_ID),
            ("code_verifier", &verifier),
        ]),
        &[],
    )
    .await?;
    let Value::Object(tokens_answer) = exchange.body else {
        return Err(fail(format!(
            "the token exchange answered HTTP {}",
            exchange.status
        )));
    };
    let Some(access) = text(&tokens_answer, "access_token").filter(|_| exchange.status == 200)
    else {
        return Err(fail(format!(
            "the token exchange (HTTP {}) returned no access_token",
            exchange.status
        )));
    };
    let mut tokens = Map::new();
    tokens.insert("access_token".into(), json!(access));
    tokens.insert(
        "refresh_token".into(),
        json!(text(&tokens_answer, "refresh_token").unwrap_or_default()),
    );
    store
        .locked(|| async {
            let mut doc = store.read_for_update()?;
            let mut state = provider_state(&doc, ID).unwrap_or_default();
            state.insert("tokens".into(), Value::Object(tokens));
            state.insert("last_refresh".into(), json!(last_refresh_now()));
            state.insert("auth_mode".into(), json!("chatgpt"));
            set_provider_state(&mut doc, ID, state);
            store.write(&mut doc)
        })
        .await?;
    Ok(LoginOutcome {
        auth_file: store.path().to_path_buf(),
        base_url: endpoints.codex_base_url.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn headers_carry_the_originator_and_the_account() {
        let claims =
            json!({"exp": 1, "https://api.openai.com/auth": {"chatgpt_account_id": "acct_1"}});
        let b = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string());
        let h = headers(&format!("h.{b}.s"));
        assert!(h.contains(&("originator".to_string(), "codex_cli_rs".to_string())));
        assert!(h.contains(&("chatgpt-account-id".to_string(), "acct_1".to_string())));
        assert!(expiring(&format!("h.{b}.s")));
        assert!(!expiring("opaque-token"));
        assert_eq!(headers("opaque").len(), 2);
    }
}
