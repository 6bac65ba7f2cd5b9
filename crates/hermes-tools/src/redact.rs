//! Redaction of the credentials a session knows (the provider key, secret-looking variables of
//! the environment and of `$HERMES_HOME/.env`): every tool result passes through
//! [`Redactor::redact`] before the model, the transcript or a log sees it, so `cat .env` or
//! `env` in the terminal cannot leak a key into the conversation.

use hermes_config::Environment;

use crate::secrets::is_secret_name;

/// Values shorter than this are not redacted: short values ("1", "true") are not secrets and
/// replacing them would garble ordinary output.
const MIN_SECRET_LEN: usize = 8;

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
        Redactor::new(std::env::vars().filter(|(k, _)| is_secret_name(k)))
    }

    /// The secret-looking variables of the process environment and of `.env`.
    pub fn from_environment(env: &Environment) -> Redactor {
        let mut r = Redactor::from_process();
        let names: Vec<String> = env.dotenv_names().map(str::to_string).collect();
        for name in names.into_iter().filter(|n| is_secret_name(n)) {
            if let Some(value) = env.var(&name) {
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

    /// `text` with every known secret replaced by `[REDACTED:NAME]`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = None::<String>;
        for (value, name) in &self.secrets {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(value.as_str()) {
                out = Some(current.replace(value.as_str(), &format!("[REDACTED:{name}]")));
            }
        }
        out.unwrap_or_else(|| text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_are_replaced_by_their_names() {
        let r = Redactor::new([
            ("OPENAI_API_KEY", "sk-abcdef123456"),
            ("SHORT_TOKEN", "abc"),
            ("LONGER_API_KEY", "sk-abcdef123456-extra"),
        ]);
        assert_eq!(
            r.redact("a sk-abcdef123456 b sk-abcdef123456-extra"),
            "a [REDACTED:OPENAI_API_KEY] b [REDACTED:LONGER_API_KEY]"
        );
        assert_eq!(r.redact("abc stays"), "abc stays");
    }

    #[test]
    fn dotenv_secrets_are_included() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join(".env");
        std::fs::write(
            &p,
            "HERMES_REDACT_TEST_API_KEY=from-dotenv-123456\nPLAIN=not-a-secret-value\n",
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
