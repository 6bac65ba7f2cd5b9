//! Redaction of provider error text before anyone sees it. Error bodies and in-stream errors
//! may echo the request's own credentials (a proxy quoting the `Authorization` header, a
//! gateway printing the key it rejected), and the text ends up on the terminal, in the session
//! store and in API-server responses. [`Secrets`] holds the literal credentials of one request
//! and replaces them, and every credential-looking token (vendor key prefixes, `Bearer ...`,
//! `api_key=...`, `"access_token": "..."`, JWTs) is replaced whatever request it came from.

use std::sync::LazyLock;

use regex::Regex;

/// What a redacted credential becomes.
pub const MARK: &str = "[REDACTED]";

/// Credentials shorter than this are not replaced literally: they are not secrets worth the
/// garbled text ("1", "true").
const MIN_LITERAL: usize = 8;

static PATTERNS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        // Vendor key prefixes (OpenAI / OpenRouter / Anthropic `sk-`, Stripe-like `sk_`, GitHub,
        // Google, xAI, Groq, Hugging Face, AWS access key ids, Perplexity, Slack).
        r"\b(?:sk-[A-Za-z0-9_\-]{8,}|sk_[A-Za-z0-9_]{10,}|gh[pousr]_[A-Za-z0-9]{10,}",
        r"|github_pat_[A-Za-z0-9_]{10,}|AIza[A-Za-z0-9_\-]{20,}|xai-[A-Za-z0-9]{20,}",
        r"|gsk_[A-Za-z0-9]{10,}|hf_[A-Za-z0-9]{10,}|AKIA[A-Z0-9]{16}|pplx-[A-Za-z0-9]{10,}",
        r"|xox[baprs]-[A-Za-z0-9\-]{10,})",
        // JSON Web Tokens (OAuth access tokens).
        r"|\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
        // Authorization schemes.
        r"|(?i:\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=\-]{8,}",
        // key=value, key: value and "key": "value" for credential-like names.
        r#"|(?i:\b(?:api[_-]?key|x-api-key|access[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret|secret|password|passwd|token|key|authorization)"?\s*[:=]\s*"?(?:(?:bearer|basic)\s+)?)[^\s"',;&}]{6,}"#,
    ))
    .ok()
});

/// The literal credentials of one request, replaced wherever they appear.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Longest first, so a secret containing another is replaced whole.
    values: Vec<String>,
}

impl Secrets {
    pub fn new() -> Secrets {
        Secrets::default()
    }

    /// Adds a credential (`Bearer ` and `Basic ` prefixes are dropped first).
    pub fn add(&mut self, value: &str) {
        let value = value.trim();
        let value = ["Bearer ", "bearer ", "Basic ", "basic "]
            .iter()
            .find_map(|p| value.strip_prefix(p))
            .unwrap_or(value)
            .trim();
        if value.chars().count() < MIN_LITERAL || self.values.iter().any(|v| v == value) {
            return;
        }
        self.values.push(value.to_string());
        self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }

    /// The credentials among request headers (`authorization`, `x-api-key`, `api-key`, ...).
    pub fn from_headers<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Secrets {
        let mut s = Secrets::new();
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            if matches!(
                name.as_str(),
                "authorization"
                    | "x-api-key"
                    | "api-key"
                    | "x-goog-api-key"
                    | "proxy-authorization"
            ) {
                s.add(value);
            }
        }
        s
    }

    /// `text` without these credentials or any credential-looking token.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), MARK);
            }
        }
        redact(&out)
    }
}

/// `text` with every credential-looking token replaced by [`MARK`].
pub fn redact(text: &str) -> String {
    match PATTERNS.as_ref() {
        Some(re) => re.replace_all(text, MARK).into_owned(),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_key_shapes_are_replaced() {
        for (input, expected) in [
            (
                "Incorrect API key provided: sk-proj-abcdefghijklmnop",
                "Incorrect API key provided: [REDACTED]",
            ),
            (
                "header was Authorization: Bearer abc.def-ghi_jkl",
                "header was [REDACTED]",
            ),
            (
                "bad key AIzaSyA1234567890abcdefghijklmnop",
                "bad key [REDACTED]",
            ),
            (
                r#"{"api_key": "live-12345678", "model": "m"}"#,
                r#"{"[REDACTED]", "model": "m"}"#,
            ),
            ("url?key=abcdef123456&x=1", "url?[REDACTED]&x=1"),
            (
                "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nature expired",
                "token [REDACTED] expired",
            ),
        ] {
            assert_eq!(redact(input), expected, "{input}");
        }
    }

    #[test]
    fn ordinary_error_text_is_untouched() {
        for text in [
            "This model's maximum context length is 16384 tokens. However, your messages resulted in 40000 tokens.",
            "Rate limit reached for requests",
            "The model `gpt-9` does not exist",
            "max_tokens: 32768 > context_window: 200000",
            "Invalid 'messages[1].role'",
        ] {
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn the_requests_own_key_is_replaced_whatever_its_shape() {
        let s = Secrets::from_headers([
            ("authorization", "Bearer plain-looking-credential"),
            ("content-type", "application/json"),
        ]);
        assert_eq!(
            s.redact("upstream said: key plain-looking-credential is revoked"),
            "upstream said: key [REDACTED] is revoked"
        );
        let short = Secrets::from_headers([("x-api-key", "abc")]);
        assert_eq!(short.redact("abc"), "abc", "too short to be a secret");
    }
}
