//! AWS Signature Version 4 for Bedrock requests: canonical request, string to sign, the
//! derived signing key, and the `Authorization` header. Uses ring's SHA-256 and HMAC (already
//! linked for TLS).

use ring::{digest, hmac};

/// What a signature needs besides the request itself.
#[derive(Debug, Clone)]
pub struct SigningScope<'a> {
    pub access_key: &'a str,
    pub secret_key: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    /// `YYYYMMDDTHHMMSSZ`
    pub amz_date: &'a str,
}

/// A request to sign: already canonical URI and query, headers lower-case.
pub struct CanonicalRequest<'a> {
    pub method: &'a str,
    pub uri: &'a str,
    pub query: &'a str,
    /// `(name, value)`, names lower-case; sorted here.
    pub headers: Vec<(&'a str, String)>,
    pub payload: &'a [u8],
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, data).as_ref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

/// The `Authorization` header value for a request.
pub fn authorization(scope: &SigningScope<'_>, req: &CanonicalRequest<'_>) -> String {
    let mut headers = req.headers.clone();
    headers.sort_by(|a, b| a.0.cmp(b.0));
    let canonical_headers: String = headers
        .iter()
        .map(|(n, v)| format!("{n}:{}\n", v.trim()))
        .collect();
    let signed: Vec<&str> = headers.iter().map(|(n, _)| *n).collect();
    let signed = signed.join(";");
    let canonical = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method,
        req.uri,
        req.query,
        canonical_headers,
        signed,
        sha256_hex(req.payload)
    );
    let date = &scope.amz_date[..8.min(scope.amz_date.len())];
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{}\n{credential_scope}\n{}",
        scope.amz_date,
        sha256_hex(canonical.as_bytes())
    );
    let k_date = hmac_sha256(
        format!("AWS4{}", scope.secret_key).as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac_sha256(&k_date, scope.region.as_bytes());
    let k_service = hmac_sha256(&k_region, scope.service.as_bytes());
    let k_signing = hmac_sha256(&k_service, b"aws4_request");
    let signature = hex(&hmac_sha256(&k_signing, to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed}, Signature={signature}",
        scope.access_key
    )
}

/// URI-encodes a path segment the SigV4 way (unreserved characters kept).
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of the AWS SigV4 documentation (IAM ListUsers, 2015-08-30).
    #[test]
    fn matches_the_documented_example() {
        let scope = SigningScope {
            access_key: "AKIDEXAMPLE",
            secret_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            region: "us-east-1",
            service: "iam",
            amz_date: "20150830T123600Z",
        };
        let req = CanonicalRequest {
            method: "GET",
            uri: "/",
            query: "Action=ListUsers&Version=2010-05-08",
            headers: vec![
                ("host", "iam.amazonaws.com".into()),
                (
                    "content-type",
                    "application/x-www-form-urlencoded; charset=utf-8".into(),
                ),
                ("x-amz-date", "20150830T123600Z".into()),
            ],
            payload: b"",
        };
        assert_eq!(
            authorization(&scope, &req),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
    }

    #[test]
    fn segments_encode_reserved_characters() {
        assert_eq!(
            encode_segment("anthropic.claude-3-5-sonnet-20240620-v1:0"),
            "anthropic.claude-3-5-sonnet-20240620-v1%3A0"
        );
    }
}
