//! Webhook signatures, checked the way the Python Hermes checks them (first header present
//! wins): Svix (`svix-id`, `svix-timestamp`, `svix-signature: v1,<base64>` over
//! `id.timestamp.body`, `whsec_` secrets base64), GitHub (`X-Hub-Signature-256:
//! sha256=<hex>`), GitLab (`X-Gitlab-Token` equal to the secret), the generic V2
//! (`X-Webhook-Signature-V2: <hex>` of `timestamp.body` with `X-Webhook-Timestamp`, within
//! 5 minutes) and the legacy generic V1 (`X-Webhook-Signature: <hex>` of the body). All
//! HMAC-SHA256, compared in constant time.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;

use crate::platform::http::constant_time_eq;

/// Timestamps older or newer than this are replays.
pub const TOLERANCE_SECS: i64 = 300;

/// A header lookup (case-insensitive).
pub trait Headers {
    fn get(&self, name: &str) -> Option<&str>;
}

impl Headers for axum::http::HeaderMap {
    fn get(&self, name: &str) -> Option<&str> {
        axum::http::HeaderMap::get(self, name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
    }
}

/// HMAC-SHA256 of `data` as lowercase hex.
pub fn hmac_hex(key: &[u8], data: &[u8]) -> String {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data);
    tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac_raw(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

/// Which scheme accepted (or refused) a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Svix,
    GitHub,
    GitLab,
    GenericV2,
    /// Body-only, no replay protection (deprecated in Python; still accepted).
    GenericV1,
}

/// Checks the request's signature against `secret` at time `now` (Unix seconds). `Ok` with
/// the scheme that matched, `Err` with the scheme that failed (`None`: no signature header).
pub fn verify(
    headers: &dyn Headers,
    body: &[u8],
    secret: &str,
    now: i64,
) -> Result<Scheme, Option<Scheme>> {
    let svix = (
        headers.get("svix-id"),
        headers.get("svix-timestamp"),
        headers.get("svix-signature"),
    );
    if svix.0.is_some() || svix.1.is_some() || svix.2.is_some() {
        return match svix {
            (Some(id), Some(ts), Some(sig)) if svix_ok(id, ts, sig, body, secret, now) => {
                Ok(Scheme::Svix)
            }
            _ => Err(Some(Scheme::Svix)),
        };
    }
    if let Some(sig) = headers.get("x-hub-signature-256") {
        let expected = format!("sha256={}", hmac_hex(secret.as_bytes(), body));
        return if constant_time_eq(sig.as_bytes(), expected.as_bytes()) {
            Ok(Scheme::GitHub)
        } else {
            Err(Some(Scheme::GitHub))
        };
    }
    if let Some(token) = headers.get("x-gitlab-token") {
        return if constant_time_eq(token.as_bytes(), secret.as_bytes()) {
            Ok(Scheme::GitLab)
        } else {
            Err(Some(Scheme::GitLab))
        };
    }
    if let Some(sig) = headers.get("x-webhook-signature-v2") {
        // Without its timestamp a V2 signature is refused, not checked as V1.
        let Some(ts) = headers.get("x-webhook-timestamp") else {
            return Err(Some(Scheme::GenericV2));
        };
        let Ok(t) = ts.trim().parse::<i64>() else {
            return Err(Some(Scheme::GenericV2));
        };
        if (now - t).abs() > TOLERANCE_SECS {
            return Err(Some(Scheme::GenericV2));
        }
        let mut signed = ts.as_bytes().to_vec();
        signed.push(b'.');
        signed.extend_from_slice(body);
        let expected = hmac_hex(secret.as_bytes(), &signed);
        return if constant_time_eq(sig.as_bytes(), expected.as_bytes()) {
            Ok(Scheme::GenericV2)
        } else {
            Err(Some(Scheme::GenericV2))
        };
    }
    if let Some(sig) = headers.get("x-webhook-signature") {
        let expected = hmac_hex(secret.as_bytes(), body);
        return if constant_time_eq(sig.as_bytes(), expected.as_bytes()) {
            Ok(Scheme::GenericV1)
        } else {
            Err(Some(Scheme::GenericV1))
        };
    }
    Err(None)
}

fn svix_ok(id: &str, ts: &str, header: &str, body: &[u8], secret: &str, now: i64) -> bool {
    let Ok(t) = ts.trim().parse::<i64>() else {
        return false;
    };
    if (now - t).abs() > TOLERANCE_SECS {
        return false;
    }
    let key = match secret.strip_prefix("whsec_") {
        Some(encoded) => match STANDARD.decode(encoded) {
            Ok(k) => k,
            Err(_) => return false,
        },
        None => secret.as_bytes().to_vec(),
    };
    let mut signed = format!("{id}.{ts}.").into_bytes();
    signed.extend_from_slice(body);
    let expected = STANDARD.encode(hmac_raw(&key, &signed));
    header.split_whitespace().any(|part| {
        part.split_once(',').is_some_and(|(version, sig)| {
            version == "v1" && constant_time_eq(sig.as_bytes(), expected.as_bytes())
        })
    })
}

/// The V2 headers for `body` signed now with `secret` (for callbacks we send).
pub fn sign_v2(secret: &str, body: &[u8], now: i64) -> (String, String) {
    let ts = now.to_string();
    let mut signed = ts.as_bytes().to_vec();
    signed.push(b'.');
    signed.extend_from_slice(body);
    (ts, hmac_hex(secret.as_bytes(), &signed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct H(HashMap<String, String>);
    impl Headers for H {
        fn get(&self, name: &str) -> Option<&str> {
            self.0.get(&name.to_ascii_lowercase()).map(String::as_str)
        }
    }
    fn h(pairs: &[(&str, &str)]) -> H {
        H(pairs
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
            .collect())
    }

    #[test]
    fn hmac_matches_the_rfc_4231_vector() {
        // RFC 4231 test case 2.
        assert_eq!(
            hmac_hex(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn each_scheme() {
        let body = br#"{"a":1}"#;
        let gh = format!("sha256={}", hmac_hex(b"s", body));
        assert_eq!(
            verify(&h(&[("X-Hub-Signature-256", &gh)]), body, "s", 0),
            Ok(Scheme::GitHub)
        );
        assert_eq!(
            verify(&h(&[("X-Hub-Signature-256", "sha256=00")]), body, "s", 0),
            Err(Some(Scheme::GitHub))
        );
        assert_eq!(
            verify(&h(&[("X-Gitlab-Token", "s")]), body, "s", 0),
            Ok(Scheme::GitLab)
        );
        let v1 = hmac_hex(b"s", body);
        assert_eq!(
            verify(&h(&[("X-Webhook-Signature", &v1)]), body, "s", 0),
            Ok(Scheme::GenericV1)
        );
        let (ts, v2) = sign_v2("s", body, 1000);
        let ok = h(&[
            ("X-Webhook-Signature-V2", &v2),
            ("X-Webhook-Timestamp", &ts),
        ]);
        assert_eq!(verify(&ok, body, "s", 1100), Ok(Scheme::GenericV2));
        assert_eq!(
            verify(&ok, body, "s", 2000),
            Err(Some(Scheme::GenericV2)),
            "replay window"
        );
        assert_eq!(
            verify(&h(&[("X-Webhook-Signature-V2", &v2)]), body, "s", 1000),
            Err(Some(Scheme::GenericV2))
        );
        assert_eq!(verify(&h(&[]), body, "s", 0), Err(None));
    }

    #[test]
    fn svix_with_a_whsec_secret() {
        let key = b"0123456789abcdef";
        let secret = format!("whsec_{}", STANDARD.encode(key));
        let body = b"payload";
        let sig = STANDARD.encode(hmac_raw(key, b"msg_1.1000.payload"));
        let headers = h(&[
            ("svix-id", "msg_1"),
            ("svix-timestamp", "1000"),
            ("svix-signature", &format!("v1,bad v1,{sig}")),
        ]);
        assert_eq!(verify(&headers, body, &secret, 1000), Ok(Scheme::Svix));
        assert_eq!(
            verify(&headers, body, &secret, 5000),
            Err(Some(Scheme::Svix))
        );
        assert_eq!(
            verify(&headers, b"other", &secret, 1000),
            Err(Some(Scheme::Svix))
        );
    }
}
