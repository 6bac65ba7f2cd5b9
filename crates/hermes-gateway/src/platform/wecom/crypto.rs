//! WeCom's callback crypto (<https://developer.work.weixin.qq.com/document/path/90968>), the
//! wire format of Tencent's `WXBizMsgCrypt`:
//!
//! - `msg_signature` is the hex SHA-1 of the token, the timestamp, the nonce and the encrypted
//!   value, sorted and concatenated;
//! - the AES key is the EncodingAESKey (43 characters) + `=` base64-decoded (32 bytes), its
//!   first 16 bytes the IV; AES-256-CBC with PKCS#7 padding to 32-byte blocks;
//! - the plaintext is 16 random bytes, the message length (4 bytes, big-endian), the message,
//!   then the receive id (the corp id), which must be ours.

use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::NoPadding};
use base64::Engine;
use ring::digest;

use crate::platform::http::constant_time_eq;

type Aes256CbcDec = cbc::Decryptor<aes::Aes256>;

/// WeCom's padding block (not AES's 16).
const PAD_BLOCK: usize = 32;
/// The longest encrypted value taken (callback bodies are capped at 64 KiB anyway).
const MAX_ENCRYPTED: usize = 128 * 1024;

/// Why a callback value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CryptoError {
    #[error("msg_signature does not match")]
    Signature,
    #[error("the encrypted value is not base64")]
    Base64,
    #[error("wrong EncodingAESKey or corrupted value (bad length or padding)")]
    Padding,
    #[error("the decrypted message is not for this corp id")]
    ReceiveId,
    #[error("the decrypted message is not UTF-8")]
    Utf8,
}

/// The AES key of an EncodingAESKey, `None` when it is not 43 base64 characters.
pub(crate) fn aes_key(encoding_aes_key: &str) -> Option<[u8; 32]> {
    if encoding_aes_key.len() != 43 {
        return None;
    }
    // WeCom's keys are not always canonical base64 (the last character's spare bits).
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    engine
        .decode(format!("{encoding_aes_key}="))
        .ok()?
        .try_into()
        .ok()
}

/// The hex SHA-1 signature of the sorted values.
pub(crate) fn signature(token: &str, timestamp: &str, nonce: &str, encrypted: &str) -> String {
    let mut parts = [token, timestamp, nonce, encrypted];
    parts.sort_unstable();
    let d = digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, parts.concat().as_bytes());
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks `msg_signature` and decrypts `encrypted`: the message inside.
pub(crate) fn open(
    token: &str,
    key: &[u8; 32],
    corp_id: &str,
    msg_signature: &str,
    timestamp: &str,
    nonce: &str,
    encrypted: &str,
) -> Result<String, CryptoError> {
    let expected = signature(token, timestamp, nonce, encrypted);
    if !constant_time_eq(
        expected.as_bytes(),
        msg_signature.to_ascii_lowercase().as_bytes(),
    ) {
        return Err(CryptoError::Signature);
    }
    if encrypted.len() > MAX_ENCRYPTED {
        return Err(CryptoError::Padding);
    }
    let mut buf = base64::engine::general_purpose::STANDARD
        .decode(encrypted.trim())
        .map_err(|_| CryptoError::Base64)?;
    if buf.is_empty() || buf.len() % 16 != 0 {
        return Err(CryptoError::Padding);
    }
    let iv: [u8; 16] = key[..16].try_into().map_err(|_| CryptoError::Padding)?;
    let plain = Aes256CbcDec::new(key.into(), &iv.into())
        .decrypt_padded_mut::<NoPadding>(&mut buf)
        .map_err(|_| CryptoError::Padding)?;
    let pad = usize::from(*plain.last().ok_or(CryptoError::Padding)?);
    if pad == 0
        || pad > PAD_BLOCK
        || pad > plain.len()
        || plain[plain.len() - pad..]
            .iter()
            .any(|b| usize::from(*b) != pad)
    {
        return Err(CryptoError::Padding);
    }
    let plain = &plain[..plain.len() - pad];
    if plain.len() < 20 {
        return Err(CryptoError::Padding);
    }
    let len = u32::from_be_bytes([plain[16], plain[17], plain[18], plain[19]]) as usize;
    let rest = &plain[20..];
    if len > rest.len() {
        return Err(CryptoError::Padding);
    }
    let (message, receive_id) = rest.split_at(len);
    if !constant_time_eq(receive_id, corp_id.as_bytes()) {
        return Err(CryptoError::ReceiveId);
    }
    String::from_utf8(message.to_vec()).map_err(|_| CryptoError::Utf8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::BlockEncryptMut;

    type Aes256CbcEnc = cbc::Encryptor<aes::Aes256>;

    const KEY: &str = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C";

    fn seal(key: &[u8; 32], corp: &str, msg: &str) -> String {
        let mut plain = vec![7u8; 16];
        plain.extend((msg.len() as u32).to_be_bytes());
        plain.extend(msg.as_bytes());
        plain.extend(corp.as_bytes());
        let pad = PAD_BLOCK - plain.len() % PAD_BLOCK;
        plain.extend(std::iter::repeat_n(pad as u8, pad));
        let n = plain.len();
        let iv: [u8; 16] = key[..16].try_into().unwrap();
        let out = Aes256CbcEnc::new(key.into(), &iv.into())
            .encrypt_padded_mut::<NoPadding>(&mut plain, n)
            .unwrap()
            .to_vec();
        base64::engine::general_purpose::STANDARD.encode(out)
    }

    #[test]
    fn round_trip_and_refusals() {
        let key = aes_key(KEY).unwrap();
        assert!(aes_key("short").is_none());
        let enc = seal(&key, "ww1", "<xml>hi</xml>");
        let sig = signature("tok", "1409659813", "263014780", &enc);
        assert_eq!(
            open("tok", &key, "ww1", &sig, "1409659813", "263014780", &enc),
            Ok("<xml>hi</xml>".to_string())
        );
        assert_eq!(
            open(
                "tok",
                &key,
                "ww1",
                &"0".repeat(40),
                "1409659813",
                "263014780",
                &enc
            ),
            Err(CryptoError::Signature)
        );
        assert_eq!(
            open("tok", &key, "ww2", &sig, "1409659813", "263014780", &enc),
            Err(CryptoError::ReceiveId)
        );
        let other = aes_key("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG").unwrap();
        assert!(open("tok", &other, "ww1", &sig, "1409659813", "263014780", &enc).is_err());
        // The signature sorts its inputs.
        assert_eq!(signature("b", "a", "d", "c"), signature("a", "b", "c", "d"));
    }
}
