//! Redaction of credentials in text the model, the transcript or a log will see: the values
//! the session knows (the provider key, secret-looking variables of the environment and of
//! `$HERMES_HOME/.env`) become `[REDACTED:NAME]`, and anything shaped like a common key
//! (`sk-...`, `sk_live_...`, `ghp_...`, `github_pat_...`, `xoxb-...`, `AKIA...`, `AIza...`,
//! `glpat-...`, `hf_...`, `Bearer <token>`, the password of `scheme://user:password@host`,
//! PEM private keys) is replaced even when its value was never seen. Every tool result passes
//! through [`Redactor::redact`], so `cat .env` or `env` in the terminal cannot leak a key into
//! the conversation.

use std::sync::LazyLock;

use hermes_config::Environment;
use regex::Regex;

use crate::secrets::is_secret_name;

/// Values shorter than this are not redacted: short values ("1", "true") are not secrets and
/// replacing them would garble ordinary output.
const MIN_SECRET_LEN: usize = 8;

/// Key shapes: (pattern, replacement). The replacement keeps what kind of key it was.
const SHAPES: &[(&str, &str)] = &[
    (
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        "[REDACTED:private key]",
    ),
    (
        r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",
        "[REDACTED:stripe key]",
    ),
    (
        r"\bsk-(?:ant-|proj-|or-v1-|or-)?[A-Za-z0-9_-]{20,}",
        "[REDACTED:sk- key]",
    ),
    (
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",
        "[REDACTED:github token]",
    ),
    (r"\bgithub_pat_[A-Za-z0-9_]{40,}", "[REDACTED:github token]"),
    (r"\bxox[abposr]-[A-Za-z0-9-]{10,}", "[REDACTED:slack token]"),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "[REDACTED:aws key id]"),
    (r"\bAIza[0-9A-Za-z_-]{35}", "[REDACTED:google key]"),
    (r"\bglpat-[A-Za-z0-9_-]{20,}", "[REDACTED:gitlab token]"),
    (r"\bhf_[A-Za-z0-9]{30,}", "[REDACTED:huggingface token]"),
    (r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}", "$1 [REDACTED]"),
    (
        r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)[^@\s/]+@",
        "${1}[REDACTED]@",
    ),
];

static COMPILED: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    SHAPES
        .iter()
        .filter_map(|(re, rep)| Regex::new(re).ok().map(|r| (r, *rep)))
        .collect()
});

/// Whether `value` (a whole value, or a word) contains a known key shape.
pub fn looks_like_key(value: &str) -> bool {
    COMPILED.iter().any(|(re, _)| re.is_match(value))
}

/// `text` with every known key shape replaced.
pub fn redact_shapes(text: &str) -> String {
    let mut out: Option<String> = None;
    for (re, rep) in COMPILED.iter() {
        let current = out.as_deref().unwrap_or(text);
        if re.is_match(current) {
            out = Some(re.replace_all(current, *rep).into_owned());
        }
    }
    out.unwrap_or_else(|| text.to_string())
}

/// Known secret values and the names they are reported under.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// `(value, name)`, longest value first so a key containing another is replaced whole.
    secrets: Vec<(String, String)>,
}

impl Redactor {
    /// A redactor for these `(name, value)` pairs; short or empty values are ignored.
    pub fn new<N: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> Redactor {
        let mut r = Redactor::default();
        for (name, value) in pairs {
            r.add(name, value);
        }
        r
    }

    /// The secret-looking variables of the process environment.
    pub fn from_process() -> Redactor {
        Redactor::new(
            std::env::vars()
                .filter(|(k, v)| is_secret_name(k) || crate::secrets::is_secret_value(v)),
        )
    }

    /// The secret-looking variables of the process environment and of `.env`.
    pub fn from_environment(env: &Environment) -> Redactor {
        let mut r = Redactor::from_process();
        let names: Vec<String> = env.dotenv_names().map(str::to_string).collect();
        for name in names {
            if let Some(value) = env.var(&name)
                && (is_secret_name(&name) || crate::secrets::is_secret_value(&value))
            {
                r.add(name, value);
            }
        }
        r
    }

    /// Adds one secret.
    pub fn add(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let value = value.into();
        let value = value.trim();
        if value.chars().count() < MIN_SECRET_LEN || self.secrets.iter().any(|(v, _)| v == value) {
            return;
        }
        self.secrets.push((value.to_string(), name.into()));
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every known secret replaced by `[REDACTED:NAME]`, then every key shape.
    pub fn redact(&self, text: &str) -> String {
        let mut out = None::<String>;
        for (value, name) in &self.secrets {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(value.as_str()) {
                out = Some(current.replace(value.as_str(), &format!("[REDACTED:{name}]")));
            }
        }
        redact_shapes(out.as_deref().unwrap_or(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_are_replaced_by_their_names() {
        let r = Redactor::new([
            ("OPENAI_API_KEY", "abcdef123456"),
            ("SHORT_TOKEN", "abc"),
            ("LONGER_API_KEY", "abcdef123456-extra"),
        ]);
        assert_eq!(
            r.redact("a abcdef123456 b abcdef123456-extra"),
            "a [REDACTED:OPENAI_API_KEY] b [REDACTED:LONGER_API_KEY]"
        );
        assert_eq!(r.redact("abc stays"), "abc stays");
    }

    #[test]
    fn key_shapes_are_replaced_without_knowing_the_value() {
        let r = Redactor::default();
        for (text, kind) in [
            ("key=sk-proj-abcdefghijklmnopqrstuvwx", "sk- key"),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "sk- key"),
            ("STRIPE=sk_live_51HabcdefghijklmnOP", "stripe key"),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github token"),
            ("xoxb-1234567890-abcdefghij", "slack token"),
            ("id AKIAABCDEFGHIJKLMNOP end", "aws key id"),
        ] {
            let out = r.redact(text);
            assert!(
                out.contains(&format!("[REDACTED:{kind}]")),
                "{text} -> {out}"
            );
        }
        assert_eq!(
            r.redact("Authorization: Bearer abcdefghijklmnop.qrstuv"),
            "Authorization: Bearer [REDACTED]"
        );
        assert_eq!(
            r.redact("DATABASE_URL=postgres://app:hunter2secret@db:5432/x"),
            "DATABASE_URL=postgres://app:[REDACTED]@db:5432/x"
        );
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----";
        assert_eq!(r.redact(pem), "[REDACTED:private key]");
        for benign in [
            "task-1234 done",
            "https://example.com/path",
            "sk-short",
            "the risk-assessment-document-v2",
        ] {
            assert_eq!(r.redact(benign), benign);
        }
    }

    #[test]
    fn dotenv_secrets_are_included() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join(".env");
        std::fs::write(
            &p,
            "HERMES_REDACT_TEST_API_KEY=from-dotenv-123456\nPLAIN=not-a-secret-value\nLINK=mysql://u:pw123456@h/d\n",
        )
        .unwrap();
        let env = Environment::load(&p).unwrap();
        let r = Redactor::from_environment(&env);
        assert_eq!(
            r.redact("k=from-dotenv-123456 p=not-a-secret-value"),
            "k=[REDACTED:HERMES_REDACT_TEST_API_KEY] p=not-a-secret-value"
        );
    }
}
