//! The security of Feishu's event deliveries
//! (<https://open.feishu.cn/document/server-docs/event-subscription-guide/event-subscription-configure-/encrypt-key-encryption-configuration-case>):
//!
//! - with an Encrypt Key, the body is `{"encrypt": "<base64>"}`: AES-256-CBC under
//!   SHA-256(encrypt key), the first 16 bytes of the decoded value the IV, PKCS#7 padding;
//! - and every delivery carries `X-Lark-Request-Timestamp`, `X-Lark-Request-Nonce` and
//!   `X-Lark-Signature`, the hex SHA-256 of timestamp + nonce + encrypt key + raw body.

use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine;
use ring::digest;

use crate::platform::http::constant_time_eq;

type Aes256CbcDec = cbc::Decryptor<aes::Aes256>;

/// The longest `encrypt` value taken (the webhook body is capped at 1 MiB anyway).
const MAX_ENCRYPTED: usize = 2 * 1024 * 1024;

/// Why a payload could not be decrypted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DecryptError {
    #[error("the encrypted value is not base64")]
    Base64,
    #[error("the encrypted value is too short or not whole blocks")]
    Length,
    #[error("wrong encrypt key or corrupted value (bad padding)")]
    Padding,
    #[error("the decrypted value is not UTF-8")]
    Utf8,
}

/// The plaintext of an `encrypt` value under `encrypt_key`.
pub(crate) fn decrypt(encrypt_key: &str, encrypted: &str) -> Result<String, DecryptError> {
    if encrypted.len() > MAX_ENCRYPTED {
        return Err(DecryptError::Length);
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(encrypted.trim())
        .map_err(|_| DecryptError::Base64)?;
    // An IV and at least one block, whole blocks only.
    if raw.len() < 32 || raw.len() % 16 != 0 {
        return Err(DecryptError::Length);
    }
    let key = digest::digest(&digest::SHA256, encrypt_key.as_bytes());
    let (iv, data) = raw.split_at(16);
    let mut buf = data.to_vec();
    let plain = Aes256CbcDec::new_from_slices(key.as_ref(), iv)
        .map_err(|_| DecryptError::Length)?
        .decrypt_padded_mut::<Pkcs7>(&mut buf)
        .map_err(|_| DecryptError::Padding)?;
    String::from_utf8(plain.to_vec()).map_err(|_| DecryptError::Utf8)
}

/// The hex signature Feishu sends in `X-Lark-Signature`.
pub(crate) fn signature(timestamp: &str, nonce: &str, encrypt_key: &str, body: &[u8]) -> String {
    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(timestamp.as_bytes());
    ctx.update(nonce.as_bytes());
    ctx.update(encrypt_key.as_bytes());
    ctx.update(body);
    ctx.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether the signature headers match the body; compared in constant time, and never with
/// a missing header.
pub(crate) fn signature_ok(
    encrypt_key: &str,
    timestamp: &str,
    nonce: &str,
    given: &str,
    body: &[u8],
) -> bool {
    if encrypt_key.is_empty() || timestamp.is_empty() || nonce.is_empty() || given.len() != 64 {
        return false;
    }
    let expected = signature(timestamp, nonce, encrypt_key, body);
    constant_time_eq(
        expected.as_bytes(),
        given.trim().to_ascii_lowercase().as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_test_vector_decrypts() {
        // From Feishu's "Encrypt Key" guide: key "test key".
        assert_eq!(
            decrypt("test key", "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=").unwrap(),
            "hello world"
        );
        assert_eq!(
            decrypt("other key", "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="),
            Err(DecryptError::Padding)
        );
    }

    #[test]
    fn hostile_encrypted_values_fail_cleanly() {
        for bad in [
            "",
            "not base64 !!",
            "AAAA",
            &base64::engine::general_purpose::STANDARD.encode([0u8; 16]),
            &base64::engine::general_purpose::STANDARD.encode([0u8; 33]),
            &"A".repeat(MAX_ENCRYPTED + 4),
        ] {
            assert!(decrypt("k", bad).is_err(), "{bad:.20}");
        }
        // Whole blocks of garbage: a padding error (or, rarely, valid padding and garbage).
        let garbage = base64::engine::general_purpose::STANDARD.encode([7u8; 64]);
        let _ = decrypt("k", &garbage);
    }

    #[test]
    fn signatures_cover_timestamp_nonce_key_and_body() {
        let body = br#"{"encrypt":"abc"}"#;
        let sig = signature("1700000000", "n0nce", "ek", body);
        assert_eq!(sig.len(), 64);
        assert!(signature_ok("ek", "1700000000", "n0nce", &sig, body));
        assert!(signature_ok(
            "ek",
            "1700000000",
            "n0nce",
            &sig.to_uppercase(),
            body
        ));
        assert!(!signature_ok("ek", "1700000001", "n0nce", &sig, body));
        assert!(!signature_ok("ek", "1700000000", "other", &sig, body));
        assert!(!signature_ok("ek2", "1700000000", "n0nce", &sig, body));
        assert!(!signature_ok("ek", "1700000000", "n0nce", &sig, b"{}"));
        assert!(!signature_ok(
            "",
            "1700000000",
            "n0nce",
            &signature("1700000000", "n0nce", "", body),
            body
        ));
        for given in ["", "zz", &"é".repeat(32), &"0".repeat(100_000)] {
            assert!(!signature_ok("ek", "1", "n", given, body));
        }
        assert!(!signature_ok("ek", "", "n0nce", &sig, body));
    }
}
