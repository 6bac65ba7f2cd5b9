//! SASL for the XMPP client: SCRAM-SHA-256 and SCRAM-SHA-1 (RFC 5802 / RFC 7677, without
//! channel binding: the `n,,` header) with `ring`'s HMAC, PBKDF2 and digests, and PLAIN
//! (RFC 4616), which the connection offers only over TLS or when plaintext is explicitly
//! allowed. The server's signature is checked, so a server that does not know the password
//! cannot pretend to have accepted it.

use std::num::NonZeroU32;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ring::{digest, hmac, pbkdf2};

/// Highest iteration count accepted from a server: more would let it stall the client.
const MAX_ITERATIONS: u32 = 1_000_000;

/// Why authentication cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SaslError {
    #[error("malformed SCRAM message from the server: {0}")]
    Malformed(&'static str),
    #[error("the server's nonce does not extend ours")]
    Nonce,
    #[error("the server asks for {0} PBKDF2 iterations (at most {MAX_ITERATIONS} accepted)")]
    Iterations(u32),
    #[error("the server's signature is wrong: it does not know the password")]
    ServerSignature,
    #[error("the server reported an error: {0}")]
    Server(String),
}

/// A SCRAM hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScramHash {
    Sha1,
    Sha256,
}

impl ScramHash {
    pub fn mechanism(self) -> &'static str {
        match self {
            ScramHash::Sha1 => "SCRAM-SHA-1",
            ScramHash::Sha256 => "SCRAM-SHA-256",
        }
    }

    fn hmac_alg(self) -> hmac::Algorithm {
        match self {
            ScramHash::Sha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            ScramHash::Sha256 => hmac::HMAC_SHA256,
        }
    }

    fn pbkdf2_alg(self) -> pbkdf2::Algorithm {
        match self {
            ScramHash::Sha1 => pbkdf2::PBKDF2_HMAC_SHA1,
            ScramHash::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
        }
    }

    fn digest_alg(self) -> &'static digest::Algorithm {
        match self {
            ScramHash::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
            ScramHash::Sha256 => &digest::SHA256,
        }
    }

    fn len(self) -> usize {
        match self {
            ScramHash::Sha1 => 20,
            ScramHash::Sha256 => 32,
        }
    }
}

fn hmac_of(alg: ScramHash, key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(alg.hmac_alg(), key), data)
        .as_ref()
        .to_vec()
}

/// `=` and `,` in a SCRAM user name (RFC 5802 §5.1).
fn saslname(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

/// One SCRAM exchange, client side.
#[derive(Debug)]
pub(crate) struct Scram {
    hash: ScramHash,
    password: String,
    client_first_bare: String,
    nonce: String,
    /// The server signature expected in the final message (after `respond`).
    expected_server_signature: Option<Vec<u8>>,
}

impl Scram {
    /// Starts with a random nonce.
    pub fn new(hash: ScramHash, user: &str, password: &str) -> Scram {
        let mut raw = [0u8; 18];
        if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut raw).is_err() {
            // A nonce must be unique rather than secret: the process RNG is enough then.
            raw.iter_mut().for_each(|b| *b = fastrand::u8(..));
        }
        Scram::with_nonce(hash, user, password, &B64.encode(raw))
    }

    pub fn with_nonce(hash: ScramHash, user: &str, password: &str, nonce: &str) -> Scram {
        Scram {
            hash,
            password: password.to_string(),
            client_first_bare: format!("n={},r={nonce}", saslname(user)),
            nonce: nonce.to_string(),
            expected_server_signature: None,
        }
    }

    /// The client-first message (sent with `<auth>`).
    pub fn client_first(&self) -> String {
        format!("n,,{}", self.client_first_bare)
    }

    /// The client-final message for the server-first message.
    pub fn respond(&mut self, server_first: &str) -> Result<String, SaslError> {
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for part in server_first.split(',') {
            if let Some(v) = part.strip_prefix("r=") {
                nonce = Some(v);
            } else if let Some(v) = part.strip_prefix("s=") {
                salt = Some(v);
            } else if let Some(v) = part.strip_prefix("i=") {
                iterations = Some(v);
            } else if part.starts_with("m=") {
                return Err(SaslError::Malformed("mandatory extension"));
            }
        }
        let nonce = nonce.ok_or(SaslError::Malformed("no nonce"))?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(SaslError::Nonce);
        }
        let salt = B64
            .decode(salt.ok_or(SaslError::Malformed("no salt"))?)
            .map_err(|_| SaslError::Malformed("salt is not base64"))?;
        let iterations: u32 = iterations
            .ok_or(SaslError::Malformed("no iteration count"))?
            .parse()
            .map_err(|_| SaslError::Malformed("iteration count is not a number"))?;
        if iterations > MAX_ITERATIONS {
            return Err(SaslError::Iterations(iterations));
        }
        let iterations =
            NonZeroU32::new(iterations).ok_or(SaslError::Malformed("zero iterations"))?;
        let mut salted = vec![0u8; self.hash.len()];
        pbkdf2::derive(
            self.hash.pbkdf2_alg(),
            iterations,
            &salt,
            self.password.as_bytes(),
            &mut salted,
        );
        let client_key = hmac_of(self.hash, &salted, b"Client Key");
        let stored_key = digest::digest(self.hash.digest_alg(), &client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hmac_of(self.hash, stored_key.as_ref(), auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = hmac_of(self.hash, &salted, b"Server Key");
        self.expected_server_signature =
            Some(hmac_of(self.hash, &server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", B64.encode(proof)))
    }

    /// Checks the server-final message (`v=...` or `e=...`).
    pub fn verify(&self, server_final: &str) -> Result<(), SaslError> {
        if let Some(e) = server_final.strip_prefix("e=") {
            return Err(SaslError::Server(e.chars().take(100).collect()));
        }
        let v = server_final
            .split(',')
            .find_map(|p| p.strip_prefix("v="))
            .ok_or(SaslError::Malformed("no server signature"))?;
        let got = B64
            .decode(v)
            .map_err(|_| SaslError::Malformed("server signature is not base64"))?;
        match &self.expected_server_signature {
            Some(want) if equal_in_constant_time(want, &got) => Ok(()),
            _ => Err(SaslError::ServerSignature),
        }
    }
}

/// Compares without an early exit, so timing does not tell how much of a guess was right.
fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The PLAIN message: no authorisation identity, the user, the password.
pub(crate) fn plain(user: &str, password: &str) -> String {
    B64.encode(format!("\0{user}\0{password}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 5802 §5.
    #[test]
    fn rfc5802_test_vector() {
        let mut s = Scram::with_nonce(
            ScramHash::Sha1,
            "user",
            "pencil",
            "fyko+d2lbbFgONRv9qkxdawL",
        );
        assert_eq!(s.client_first(), "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL");
        let fin = s
            .respond("r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
            .unwrap();
        assert_eq!(
            fin,
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
        );
        s.verify("v=rmF9pqV8S7suAoZWja4dJRkFsKQ=").unwrap();
        assert_eq!(
            s.verify("v=AAAAAAAAAAAAAAAAAAAAAAAAAAA="),
            Err(SaslError::ServerSignature)
        );
    }

    /// RFC 7677 §3.
    #[test]
    fn rfc7677_test_vector() {
        let mut s = Scram::with_nonce(ScramHash::Sha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
        let fin = s
            .respond("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .unwrap();
        assert_eq!(
            fin,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        s.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
    }

    #[test]
    fn hostile_server_messages_are_refused() {
        let mut s = Scram::with_nonce(ScramHash::Sha1, "u,=", "p", "abc");
        assert_eq!(s.client_first(), "n,,n=u=2C=3D,r=abc");
        assert_eq!(s.respond("r=xyz1,s=QQ==,i=1"), Err(SaslError::Nonce));
        assert_eq!(s.respond("r=abc,s=QQ==,i=1"), Err(SaslError::Nonce));
        assert_eq!(
            s.respond("r=abcd,s=QQ==,i=4000000000"),
            Err(SaslError::Iterations(4_000_000_000))
        );
        assert!(s.respond("r=abcd,s=!!,i=1").is_err());
        assert!(s.respond("r=abcd,s=QQ==,i=0").is_err());
        assert!(s.respond("r=abcd,s=QQ==").is_err());
        assert!(s.respond("m=x,r=abcd,s=QQ==,i=1").is_err());
        assert!(s.respond("").is_err());
        // No signature expected before a response.
        assert!(s.verify("v=AAAA").is_err());
        assert!(matches!(
            s.verify("e=other-error"),
            Err(SaslError::Server(_))
        ));
        assert_eq!(plain("u", "p"), "AHUAcA==");
    }
}
