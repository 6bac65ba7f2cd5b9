//! Nous Portal: the device-code sign-in (`POST {portal}/api/oauth/device/code`, then polling
//! `POST {portal}/api/oauth/token`), the refresh (`grant_type=refresh_token` with the token in
//! the `x-nous-refresh-token` header; refresh tokens are single-use, so the rotated one is
//! written back before anything else can fail), and the invoke JWT: the access token is used
//! for inference while it carries the `inference:invoke` scope and expires more than two
//! minutes from now, and is mirrored into the `agent_key*` fields as the Python Hermes keeps
//! them. Portal URLs read from `auth.json` are only followed to the Portal's own host (or this
//! machine); inference URLs from the Portal only to its inference host.

use serde_json::{Map, Value, json};

use super::{AuthProvider, Credential, Endpoints, LoginOutcome, PostBody, REFRESH_SKEW_SECS};
use super::{oauth_error, post, text};
use crate::auth_store::{
    AuthError, AuthStore, iso_at, jwt_claims, now_secs, parse_iso, provider_state,
    set_provider_state,
};

const PROVIDER: &str = "Nous Portal";
pub(super) const DEFAULT_PORTAL: &str = "https://portal.nousresearch.com";
pub(super) const DEFAULT_INFERENCE: &str = "https://inference-api.nousresearch.com/v1";
const DEFAULT_CLIENT_ID: &str = "hermes-cli";
const INVOKE_SCOPE: &str = "inference:invoke";
const PORTAL_HOSTS: [&str; 3] = ["portal.nousresearch.com", "localhost", "127.0.0.1"];
const INFERENCE_HOSTS: [&str; 1] = ["inference-api.nousresearch.com"];
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// The Python Hermes polls at most once a second.
const POLL_CAP_SECS: u64 = 1;

/// The portal to talk to: the operator's override, else the stored one when it is the
/// Portal's host (or this machine over http), else the default.
fn portal(state: &Map<String, Value>, endpoints: &Endpoints) -> String {
    if let Some(p) = &endpoints.nous_portal_override {
        return p.clone();
    }
    text(state, "portal_base_url")
        .map(|p| p.trim_end_matches('/').to_string())
        .filter(|p| {
            let host = crate::resolve::url_host(p);
            let https = p.to_ascii_lowercase().starts_with("https://");
            let local_http = p.to_ascii_lowercase().starts_with("http://")
                && matches!(host.as_str(), "localhost" | "127.0.0.1");
            PORTAL_HOSTS.contains(&host.as_str()) && (https || local_http)
        })
        .unwrap_or_else(|| DEFAULT_PORTAL.to_string())
}

/// An inference URL a Portal answer named: https on the Portal's inference host only.
fn trusted_inference(url: Option<&str>) -> Option<String> {
    let url = url?.trim().trim_end_matches('/');
    (url.to_ascii_lowercase().starts_with("https://")
        && INFERENCE_HOSTS.contains(&crate::resolve::url_host(url).as_str()))
    .then(|| url.to_string())
}

/// Why the access token cannot be used for inference, if it cannot.
fn unusable(token: &str, state: &Map<String, Value>) -> Option<&'static str> {
    let Some(claims) = jwt_claims(token) else {
        return Some("the access token is not a JWT");
    };
    let scopes = |v: Option<&Value>| -> Vec<String> {
        match v {
            Some(Value::String(s)) => s
                .replace(',', " ")
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut all = scopes(state.get("scope"));
    all.extend(scopes(claims.get("scope")));
    all.extend(scopes(claims.get("scp")));
    if !all.iter().any(|s| s == INVOKE_SCOPE) {
        return Some("the access token lacks the inference:invoke scope");
    }
    let expiry = claims.get("exp").and_then(Value::as_f64).or_else(|| {
        state
            .get("expires_at")
            .and_then(Value::as_str)
            .and_then(parse_iso)
    });
    match expiry {
        Some(exp) if exp > now_secs() + REFRESH_SKEW_SECS => None,
        _ => Some("the access token expires"),
    }
}

/// Mirrors the access token into the `agent_key*` fields; true when they changed.
fn select_invoke_jwt(state: &mut Map<String, Value>) -> bool {
    let Some(token) = text(state, "access_token") else {
        return false;
    };
    if text(state, "agent_key").as_deref() == Some(token.as_str()) {
        return false;
    }
    let expires_at = crate::auth_store::jwt_expiry(&token)
        .map(iso_at)
        .or_else(|| text(state, "expires_at"));
    let expires_in = expires_at
        .as_deref()
        .and_then(parse_iso)
        .map_or(0, |e| (e - now_secs()).max(0.0) as u64);
    if let Some(at) = &expires_at {
        state.insert("expires_at".into(), json!(at));
        state.insert("expires_in".into(), json!(expires_in));
    }
    state.insert("agent_key".into(), json!(token));
    state.insert("agent_key_id".into(), Value::Null);
    state.insert("agent_key_expires_at".into(), json!(expires_at));
    state.insert("agent_key_expires_in".into(), json!(expires_in));
    state.insert("agent_key_reused".into(), json!(false));
    state.insert("agent_key_obtained_at".into(), json!(iso_at(now_secs())));
    true
}

/// Applies a token answer (login or refresh) to the state.
fn apply_tokens(
    state: &mut Map<String, Value>,
    answer: &Map<String, Value>,
    previous_refresh: Option<String>,
) {
    let now = now_secs();
    let ttl = answer
        .get("expires_in")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if let Some(t) = text(answer, "access_token") {
        state.insert("access_token".into(), json!(t));
    }
    let refresh = text(answer, "refresh_token").or(previous_refresh);
    state.insert("refresh_token".into(), json!(refresh));
    let token_type = text(answer, "token_type")
        .or_else(|| text(state, "token_type"))
        .unwrap_or_else(|| "Bearer".into());
    state.insert("token_type".into(), json!(token_type));
    if let Some(scope) = text(answer, "scope") {
        state.insert("scope".into(), json!(scope));
    }
    state.insert("obtained_at".into(), json!(iso_at(now)));
    state.insert("expires_in".into(), json!(ttl));
    state.insert("expires_at".into(), json!(iso_at(now + ttl as f64)));
}

async fn refresh(
    client: &reqwest::Client,
    portal: &str,
    client_id: &str,
    refresh_token: &str,
) -> Result<Map<String, Value>, AuthError> {
    let url = format!("{portal}/api/oauth/token");
    let answer = post(
        client,
        &url,
        PostBody::Form(&[("grant_type", "refresh_token"), ("client_id", client_id)]),
        &[("x-nous-refresh-token", refresh_token)],
    )
    .await?;
    if answer.status == 200 {
        return match answer.body {
            Value::Object(map) if text(&map, "access_token").is_some() => Ok(map),
            _ => Err(AuthError::Refresh {
                provider: PROVIDER,
                message: "the answer carried no access_token".into(),
                relogin: true,
            }),
        };
    }
    let (code, description) = oauth_error(&answer.body);
    let reused =
        code == "refresh_token_reused" || description.to_ascii_lowercase().contains("reuse");
    let message = if reused {
        "the Portal saw this refresh token used twice and revoked the session (another program refreshed with Hermes's token without saving the new one)".to_string()
    } else if description.is_empty() {
        format!("HTTP {} {code}", answer.status)
    } else {
        format!("{code}: {description}")
    };
    Err(AuthError::Refresh {
        provider: PROVIDER,
        message: crate::redact::redact(&message),
        relogin: reused || matches!(code.as_str(), "invalid_grant" | "invalid_token"),
    })
}

fn credential_of(state: &Map<String, Value>, endpoints: &Endpoints) -> Option<Credential> {
    Some(Credential {
        token: text(state, "agent_key").or_else(|| text(state, "access_token"))?,
        base_url: endpoints
            .nous_inference_override
            .clone()
            .or_else(|| trusted_inference(state.get("inference_base_url").and_then(Value::as_str))),
        headers: Vec::new(),
    })
}

pub(super) async fn credential(
    store: &AuthStore,
    endpoints: &Endpoints,
    client: &reqwest::Client,
    rejected: Option<&str>,
) -> Result<Credential, AuthError> {
    let not_signed_in = || AuthProvider::Nous.not_signed_in();
    // The common case needs no lock: a usable token already mirrored into agent_key.
    let state = store.provider_state("nous")?.ok_or_else(not_signed_in)?;
    let access = text(&state, "access_token").ok_or_else(not_signed_in)?;
    if rejected.is_none()
        && unusable(&access, &state).is_none()
        && text(&state, "agent_key").as_deref() == Some(access.as_str())
        && let Some(c) = credential_of(&state, endpoints)
    {
        return Ok(c);
    }
    store
        .locked(|| async {
            // Read again under the lock: another process may have refreshed meanwhile.
            let mut doc = store.read()?;
            let mut state = provider_state(&doc, "nous").ok_or_else(not_signed_in)?;
            let access = text(&state, "access_token").ok_or_else(not_signed_in)?;
            let portal = portal(&state, endpoints);
            let client_id = text(&state, "client_id").unwrap_or_else(|| DEFAULT_CLIENT_ID.into());
            let forced = rejected.is_some_and(|r| r == access);
            let mut changed = false;
            if forced || unusable(&access, &state).is_some() {
                let refresh_token = text(&state, "refresh_token").ok_or(AuthError::Refresh {
                    provider: PROVIDER,
                    message: "the session expired and no refresh token is stored".into(),
                    relogin: true,
                })?;
                let answer = refresh(client, &portal, &client_id, &refresh_token).await?;
                apply_tokens(&mut state, &answer, Some(refresh_token));
                let inference =
                    trusted_inference(answer.get("inference_base_url").and_then(Value::as_str))
                        .unwrap_or_else(|| DEFAULT_INFERENCE.to_string());
                state.insert("inference_base_url".into(), json!(inference));
                // Rotated refresh tokens are single-use: save before anything else can fail.
                set_provider_state(&mut doc, "nous", state.clone());
                store.write(&mut doc)?;
            }
            let access = text(&state, "access_token").ok_or_else(not_signed_in)?;
            if let Some(why) = unusable(&access, &state) {
                return Err(AuthError::Refresh {
                    provider: PROVIDER,
                    message: format!("{why} even after a refresh"),
                    relogin: true,
                });
            }
            changed |= select_invoke_jwt(&mut state);
            if state.get("portal_base_url").and_then(Value::as_str) != Some(portal.as_str())
                && endpoints.nous_portal_override.is_none()
            {
                state.insert("portal_base_url".into(), json!(portal));
                changed = true;
            }
            if changed {
                set_provider_state(&mut doc, "nous", state.clone());
                store.write(&mut doc)?;
            }
            credential_of(&state, endpoints).ok_or_else(not_signed_in)
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
    let portal = endpoints
        .nous_portal_override
        .clone()
        .unwrap_or_else(|| DEFAULT_PORTAL.to_string());
    say(&format!("Signing in to {PROVIDER} ({portal})..."));
    let device = post(
        client,
        &format!("{portal}/api/oauth/device/code"),
        PostBody::Form(&[("client_id", DEFAULT_CLIENT_ID), ("scope", INVOKE_SCOPE)]),
        &[],
    )
    .await?;
    let Value::Object(device) = device.body.clone() else {
        return Err(fail(format!(
            "the device-code request answered HTTP {}",
            device.status
        )));
    };
    let field =
        |k: &str| text(&device, k).ok_or_else(|| fail(format!("the device-code answer lacks {k}")));
    let device_code = field("device_code")?;
    let user_code = field("user_code")?;
    let url = text(&device, "verification_uri_complete")
        .or_else(|| text(&device, "verification_uri"))
        .ok_or_else(|| fail("the device-code answer lacks verification_uri".into()))?;
    let expires_in = device
        .get("expires_in")
        .and_then(Value::as_u64)
        .unwrap_or(900)
        .clamp(1, 3600);
    let interval = device.get("interval").and_then(Value::as_u64).unwrap_or(5);
    say("To continue:");
    say(&format!("  1. Open: {url}"));
    say(&format!("  2. If prompted, enter code: {user_code}"));
    say("Waiting for approval...");

    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(expires_in);
    let mut wait = interval.clamp(1, POLL_CAP_SECS);
    let token = loop {
        if tokio::time::Instant::now() >= deadline {
            return Err(fail(
                "the code expired before it was approved; run `hermes login nous` again".into(),
            ));
        }
        let answer = post(
            client,
            &format!("{portal}/api/oauth/token"),
            PostBody::Form(&[
                ("grant_type", DEVICE_GRANT),
                ("client_id", DEFAULT_CLIENT_ID),
                ("device_code", &device_code),
            ]),
            &[],
        )
        .await?;
        if answer.status == 200 {
            match answer.body {
                Value::Object(map) if text(&map, "access_token").is_some() => break map,
                _ => return Err(fail("the token answer carried no access_token".into())),
            }
        }
        let (code, description) = oauth_error(&answer.body);
        match code.as_str() {
            "authorization_pending" => {}
            "slow_down" => wait = (wait + 1).min(30),
            _ => {
                return Err(fail(if description.is_empty() {
                    format!("HTTP {} {code}", answer.status)
                } else {
                    format!("{code}: {description}")
                }));
            }
        }
        tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    };

    let mut state = Map::new();
    state.insert("portal_base_url".into(), json!(portal));
    let inference = endpoints
        .nous_inference_override
        .clone()
        .or_else(|| trusted_inference(token.get("inference_base_url").and_then(Value::as_str)))
        .unwrap_or_else(|| DEFAULT_INFERENCE.to_string());
    state.insert("inference_base_url".into(), json!(inference));
    state.insert("client_id".into(), json!(DEFAULT_CLIENT_ID));
    state.insert("scope".into(), json!(INVOKE_SCOPE));
    apply_tokens(&mut state, &token, None);
    state.insert("tls".into(), json!({"insecure": false, "ca_bundle": null}));
    if let Some(why) = unusable(
        text(&state, "access_token").as_deref().unwrap_or(""),
        &state,
    ) {
        return Err(fail(format!(
            "{why}; the Portal may not have granted inference access"
        )));
    }
    select_invoke_jwt(&mut state);
    store
        .locked(|| async {
            let mut doc = store.read_for_update()?;
            set_provider_state(&mut doc, "nous", state);
            store.write(&mut doc)
        })
        .await?;
    Ok(LoginOutcome {
        auth_file: store.path().to_path_buf(),
        base_url: inference,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn jwt(claims: Value) -> String {
        let b = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string());
        format!("eyJhbGciOiJub25lIn0.{b}.sig")
    }

    #[test]
    fn usability_needs_the_scope_and_time_left() {
        let state = Map::new();
        let later = now_secs() + 3600.0;
        assert_eq!(
            unusable(
                &jwt(json!({"exp": later, "scope": "inference:invoke"})),
                &state
            ),
            None
        );
        assert!(
            unusable(
                &jwt(json!({"exp": later, "scope": "billing:manage"})),
                &state
            )
            .is_some()
        );
        assert!(
            unusable(
                &jwt(json!({"exp": now_secs() + 60.0, "scp": ["inference:invoke"]})),
                &state
            )
            .is_some()
        );
        assert!(unusable("opaque", &state).is_some());
    }

    #[test]
    fn stored_urls_are_only_followed_to_trusted_hosts() {
        let e = Endpoints::default();
        let with = |url: &str| {
            let mut m = Map::new();
            m.insert("portal_base_url".into(), json!(url));
            portal(&m, &e)
        };
        assert_eq!(with("https://evil.example"), DEFAULT_PORTAL);
        assert_eq!(with("http://127.0.0.1:8080/"), "http://127.0.0.1:8080");
        assert_eq!(
            with("http://portal.nousresearch.com"),
            DEFAULT_PORTAL,
            "https only"
        );
        assert_eq!(trusted_inference(Some("https://evil.example/v1")), None);
        assert_eq!(
            trusted_inference(Some("https://inference-api.nousresearch.com/v1/")).as_deref(),
            Some("https://inference-api.nousresearch.com/v1")
        );
    }
}
