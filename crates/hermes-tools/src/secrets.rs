//! Secret hygiene for subprocesses: the environment a tool's child process gets is the
//! process environment minus anything that looks like a credential, unless the user lets it
//! through (`terminal.env_passthrough`).

/// Names that are credentials whatever their suffix.
const SECRET_NAMES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_SECURITY_TOKEN",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "HF_TOKEN",
    "API_SERVER_KEY",
    "DATABASE_URL",
    "REDIS_URL",
    "MONGODB_URI",
    "MONGO_URL",
    "SENTRY_DSN",
    "SLACK_BOT_TOKEN",
    "TELEGRAM_BOT_TOKEN",
    "DISCORD_BOT_TOKEN",
];

const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_APIKEY",
    "_TOKEN",
    "_SECRET",
    "_SECRET_KEY",
    "_PASSWORD",
    "_PASSWD",
    "_ACCESS_KEY",
    "_PRIVATE_KEY",
    "_CREDENTIALS",
    "_PAT",
];

/// Whether an environment variable name looks like it holds a credential.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str())
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || upper.contains("API_KEY")
        || (upper.starts_with("AWS_")
            && (upper.contains("SECRET") || upper.contains("TOKEN") || upper.contains("KEY")))
}

/// The environment of tool subprocesses.
#[derive(Debug, Clone, Default)]
pub struct ChildEnv {
    vars: Vec<(String, String)>,
}

impl ChildEnv {
    /// The current process environment without credentials, except names in `passthrough`.
    pub fn from_process(passthrough: &[String]) -> ChildEnv {
        Self::filtered(std::env::vars(), passthrough)
    }

    pub fn filtered(
        vars: impl IntoIterator<Item = (String, String)>,
        passthrough: &[String],
    ) -> ChildEnv {
        ChildEnv {
            vars: vars
                .into_iter()
                .filter(|(k, _)| !is_secret_name(k) || passthrough.iter().any(|p| p == k))
                .collect(),
        }
    }

    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_removed_and_passthrough_kept() {
        let vars = [
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk"),
            ("GITHUB_TOKEN", "gh"),
            ("MY_SERVICE_PASSWORD", "pw"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("AWS_SESSION_TOKEN_X", "aws2"),
            ("REDIS_URL", "redis://:pw@h"),
            ("AWS_REGION", "eu-west-1"),
            ("HOME", "/h"),
            ("TOKENIZERS_PARALLELISM", "false"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let env = ChildEnv::filtered(vars, &["GITHUB_TOKEN".to_string()]);
        let names: Vec<&str> = env.vars().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "GITHUB_TOKEN",
                "AWS_REGION",
                "HOME",
                "TOKENIZERS_PARALLELISM"
            ]
        );
    }
}
