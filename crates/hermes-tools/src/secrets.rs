//! Secret hygiene for subprocesses: the environment a tool's child process gets is the
//! process environment minus anything that looks like a credential, by name (`*PASS*`,
//! `*SECRET*`, `*TOKEN*`, `*KEY*`, `*PWD*`, `*CREDENTIAL*`, `*AUTH*`, ...) or by value (a URL
//! or DSN carrying a password, `postgres://u:p@h/db`, in any variable; a value shaped like a
//! known key: `sk-...`, `ghp_...`, `AKIA...`), unless the user lets it through
//! (`terminal.env_passthrough`, names or `*` globs). [`protect_process_environment`] also makes
//! the Hermes process itself undumpable, so its own environment (`/proc/$PPID/environ`) and
//! memory are not readable by the commands it runs (unless they run as root).

/// Name fragments that mark a credential.
const SECRET_FRAGMENTS: &[&str] = &[
    "PASS",
    "SECRET",
    "TOKEN",
    "KEY",
    "PWD",
    "CREDENTIAL",
    "PRIVATE",
    "AUTH",
    "COOKIE",
    "SESSION",
    "SIGNATURE",
    "SALT",
];

/// Names that match a fragment but hold nothing secret, and the shell needs.
const NOT_SECRETS: &[&str] = &[
    "PWD",
    "OLDPWD",
    "TOKENIZERS_PARALLELISM",
    "KEYTIMEOUT",
    "XAUTHORITY",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "SESSION_MANAGER",
    "XDG_SESSION_ID",
    "XDG_SESSION_TYPE",
    "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP",
    "DESKTOP_SESSION",
    "DBUS_SESSION_BUS_ADDRESS",
    "PASSWORD_STORE_DIR",
];

/// Names that are credentials although no fragment says so.
const SECRET_NAMES: &[&str] = &[
    "DATABASE_URL",
    "REDIS_URL",
    "MONGODB_URI",
    "MONGO_URL",
    "SENTRY_DSN",
    "AWS_ACCESS_KEY_ID",
    "GH_PAT",
    "NPM_TOKEN",
];

/// Whether an environment variable name looks like it holds a credential.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if NOT_SECRETS.contains(&upper.as_str()) {
        return false;
    }
    SECRET_NAMES.contains(&upper.as_str())
        || SECRET_FRAGMENTS.iter().any(|f| upper.contains(f))
        || upper.ends_with("_PAT")
        || upper.ends_with("_DSN")
}

/// Whether a value carries a credential whatever its variable is called: a URL with a
/// password (`scheme://user:password@host`), or a known key shape.
pub fn is_secret_value(value: &str) -> bool {
    let v = value.trim();
    if v.len() < 8 {
        return false;
    }
    has_url_password(v) || crate::redact::looks_like_key(v)
}

/// `scheme://user:password@host...` with a non-empty password.
fn has_url_password(value: &str) -> bool {
    let mut rest = value;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let authority = after
            .split(['/', '?', '#', ' ', '\t', '\n'])
            .next()
            .unwrap_or("");
        if let Some((userinfo, _host)) = authority.rsplit_once('@')
            && let Some((_user, password)) = userinfo.split_once(':')
            && !password.is_empty()
        {
            return true;
        }
        rest = after;
    }
    false
}

/// Whether `name` is let through by one of the user's `terminal.env_passthrough` entries
/// (exact names, or globs with `*`).
fn passes(name: &str, passthrough: &[String]) -> bool {
    passthrough.iter().any(|p| {
        let p = p.trim();
        if !p.contains('*') {
            return p == name;
        }
        let parts: Vec<&str> = p.split('*').collect();
        let (first, last) = (parts[0], parts[parts.len() - 1]);
        if !name.starts_with(first) || !name[first.len()..].ends_with(last) {
            return false;
        }
        let mut rest = &name[first.len()..name.len() - last.len()];
        for middle in &parts[1..parts.len() - 1] {
            match rest.find(middle) {
                Some(i) => rest = &rest[i + middle.len()..],
                None => return false,
            }
        }
        true
    })
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
                .filter(|(k, v)| {
                    !(is_secret_name(k) || is_secret_value(v)) || passes(k, passthrough)
                })
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

/// Makes this process undumpable (`PR_SET_DUMPABLE` 0): its `/proc/<pid>/environ`, memory
/// and file descriptors are then readable only by root, so a command the agent runs cannot
/// read the keys Hermes was started with through `/proc/$PPID/environ`. Children are dumpable
/// again after their `exec`, as usual. Call once, early, from the binary.
#[allow(unsafe_code)]
pub fn protect_process_environment() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_removed_by_name_and_by_value_and_passthrough_kept() {
        let vars = [
            ("PATH", "/bin"),
            ("PWD", "/work"),
            ("OLDPWD", "/"),
            ("OPENAI_API_KEY", "sk"),
            ("GITHUB_TOKEN", "gh"),
            ("MY_SERVICE_PASSWORD", "pw"),
            ("PGPASSWORD", "pw"),
            ("SECRET_KEY", "django"),
            ("MYSQL_PWD", "pw"),
            ("PRIVATE_KEY", "----"),
            ("DB_PASS", "pw"),
            ("STRIPE_SK", "sk_live_51HxxxxxxxxxxxxxxxxxxxxxA"),
            ("APP_DB", "postgres://u:p@h/db"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("AWS_SESSION_TOKEN_X", "aws2"),
            ("REDIS_URL", "redis://:pw@h"),
            ("AWS_REGION", "eu-west-1"),
            ("HOME", "/h"),
            ("HTTP_PROXY", "http://proxy:3128"),
            ("TOKENIZERS_PARALLELISM", "false"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let env = ChildEnv::filtered(vars, &["GITHUB_TOKEN".to_string(), "DB_*".to_string()]);
        let names: Vec<&str> = env.vars().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "PWD",
                "OLDPWD",
                "GITHUB_TOKEN",
                "DB_PASS",
                "AWS_REGION",
                "HOME",
                "HTTP_PROXY",
                "TOKENIZERS_PARALLELISM"
            ]
        );
    }

    #[test]
    #[allow(unsafe_code)]
    fn the_process_becomes_undumpable() {
        protect_process_environment();
        #[cfg(target_os = "linux")]
        // SAFETY: PR_GET_DUMPABLE reads a flag; no memory is passed.
        assert_eq!(unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) }, 0);
    }

    #[test]
    fn url_passwords() {
        assert!(has_url_password("postgres://u:p@h/db"));
        assert!(has_url_password("x https://user:tok@github.com/r.git"));
        assert!(!has_url_password("https://user@host/x"));
        assert!(!has_url_password("https://host:8080/x"));
        assert!(!has_url_password("postgres://u:@h/db"));
    }
}
