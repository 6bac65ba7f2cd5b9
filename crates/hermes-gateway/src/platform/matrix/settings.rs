//! Matrix's settings, with the Python Hermes's keys and variables: the homeserver
//! (`extra.homeserver` / `MATRIX_HOMESERVER`), an access token (`token` /
//! `MATRIX_ACCESS_TOKEN`) or a password login (`extra.user_id` + `extra.password` /
//! `MATRIX_USER_ID` + `MATRIX_PASSWORD`, `MATRIX_DEVICE_ID`), end-to-end encryption
//! (`MATRIX_E2EE_MODE`, legacy `MATRIX_ENCRYPTION`), rooms (`MATRIX_FREE_RESPONSE_ROOMS`,
//! `MATRIX_ALLOWED_ROOMS`), threads (`MATRIX_AUTO_THREAD`, `MATRIX_DM_AUTO_THREAD`), notices
//! (`MATRIX_PROCESS_NOTICES`), sizes (`MATRIX_MAX_MESSAGE_LENGTH`, `MATRIX_MAX_MEDIA_BYTES`).

use std::path::PathBuf;

use hermes_config::Environment;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{MentionSettings, PlatformSettings, UnauthorizedDm};

pub(crate) const PLATFORM: &str = "matrix";

/// Python's default chunk size and its bounds.
const DEFAULT_MAX_MESSAGE: usize = 16_000;
const MAX_MESSAGE_CEILING: usize = 65_535;
const DEFAULT_MAX_MEDIA: u64 = 100 * 1024 * 1024;

/// How the bot proves who it is.
#[derive(Clone, PartialEq, Eq)]
pub enum MatrixAuth {
    /// `MATRIX_ACCESS_TOKEN` (the user id comes from `whoami`).
    Token(String),
    /// `MATRIX_USER_ID` + `MATRIX_PASSWORD`: `m.login.password` at start.
    Password { user_id: String, password: String },
}

impl std::fmt::Debug for MatrixAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MatrixAuth::Token(_) => f.write_str("Token(..)"),
            MatrixAuth::Password { user_id, .. } => write!(f, "Password({user_id}, ..)"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct MatrixSettings {
    /// The homeserver's base URL, without a trailing slash.
    pub homeserver: String,
    pub auth: MatrixAuth,
    /// `MATRIX_USER_ID` when given with a token (checked against `whoami`).
    pub user_id: Option<String>,
    pub device_id: Option<String>,
    /// Users whose invites are accepted (`MATRIX_ALLOWED_USERS`); `allow_all_invites` when
    /// `GATEWAY_ALLOW_ALL_USERS` / `MATRIX_ALLOW_ALL_USERS` is on.
    pub allowed_users: Vec<String>,
    pub allow_all_invites: bool,
    /// Direct-chat invites from strangers are accepted so they can ask for a pairing code
    /// (`unauthorized_dm_behavior: pair`, the default); with `ignore` only allowed users'
    /// invites are, as in the Python Hermes.
    pub pair_strangers: bool,
    /// Mention rules; `MATRIX_FREE_RESPONSE_ROOMS` and `MATRIX_ALLOWED_ROOMS` included.
    pub mentions: MentionSettings,
    /// Answer room messages in a thread rooted at the message (`MATRIX_AUTO_THREAD`, on).
    pub auto_thread: bool,
    /// The same in DMs (`MATRIX_DM_AUTO_THREAD`, off).
    pub dm_auto_thread: bool,
    /// Read `m.notice` messages too (`MATRIX_PROCESS_NOTICES`, off: bots send notices).
    pub process_notices: bool,
    pub max_message_len: usize,
    /// Largest attachment fetched from the media repository.
    pub max_media_bytes: u64,
    /// `MATRIX_E2EE_MODE=optional`: encrypted rooms are refused, the others served.
    pub e2ee_requested: bool,
    /// Where the sync token and device id are kept (`<home>/matrix/state.json`).
    pub state_path: Option<PathBuf>,
    /// Long-poll timeout of `/sync` (`extra.sync_timeout` seconds, default 30).
    pub sync_timeout: std::time::Duration,
}

fn flag(v: Option<String>) -> Option<bool> {
    v.map(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "true" | "1" | "yes" | "on"
        )
    })
}

impl MatrixSettings {
    pub fn from_platform(
        p: &PlatformSettings,
        env: &Environment,
        home: Option<&std::path::Path>,
    ) -> Result<MatrixSettings, PlatformConfigError> {
        let homeserver = p
            .extra_str("homeserver")
            .or_else(|| env.var("MATRIX_HOMESERVER"))
            .filter(|h| !h.trim().is_empty())
            .ok_or(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "MATRIX_HOMESERVER",
            })?;
        let homeserver = homeserver.trim().trim_end_matches('/').to_string();
        if !reqwest::Url::parse(&homeserver).is_ok_and(|u| matches!(u.scheme(), "http" | "https")) {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("MATRIX_HOMESERVER must be an http(s) URL, not {homeserver:?}"),
            });
        }
        let user_id = p
            .extra_str("user_id")
            .or_else(|| env.var("MATRIX_USER_ID"))
            .filter(|u| !u.trim().is_empty());
        let password = p
            .extra_str("password")
            .or_else(|| env.var("MATRIX_PASSWORD"))
            .filter(|u| !u.is_empty());
        let token = p
            .token
            .clone()
            .or_else(|| env.var("MATRIX_ACCESS_TOKEN"))
            .filter(|t| !t.trim().is_empty());
        let auth = match (token, password, &user_id) {
            (Some(token), _, _) => MatrixAuth::Token(token),
            (None, Some(password), Some(user)) => MatrixAuth::Password {
                user_id: user.clone(),
                password,
            },
            (None, Some(_), None) => {
                return Err(PlatformConfigError::MissingCredential {
                    platform: PLATFORM,
                    variable: "MATRIX_USER_ID (required with MATRIX_PASSWORD)",
                });
            }
            (None, None, _) => {
                return Err(PlatformConfigError::MissingCredential {
                    platform: PLATFORM,
                    variable: "MATRIX_ACCESS_TOKEN (or MATRIX_USER_ID + MATRIX_PASSWORD)",
                });
            }
        };
        // E2EE: `MATRIX_E2EE_MODE` wins; the legacy `MATRIX_ENCRYPTION=true` means required.
        let mode = p
            .config_or_env("e2ee_mode", "MATRIX_E2EE_MODE", env)
            .map(|m| m.trim().to_ascii_lowercase())
            .filter(|m| !m.is_empty())
            .or_else(|| {
                let legacy = p
                    .extra_bool("encryption")
                    .or_else(|| flag(env.var("MATRIX_ENCRYPTION")));
                legacy.filter(|on| *on).map(|_| "required".to_string())
            });
        let e2ee_requested = match mode.as_deref() {
            None | Some("off" | "disabled" | "false" | "none") => false,
            Some("optional" | "prefer" | "preferred") => true,
            Some(_) => {
                return Err(PlatformConfigError::Invalid {
                    platform: PLATFORM,
                    message: "end-to-end encryption is required (MATRIX_E2EE_MODE / MATRIX_ENCRYPTION) but this build has no Matrix encryption; set MATRIX_E2EE_MODE=off or optional (encrypted rooms are then refused)".into(),
                });
            }
        };
        let mut mentions = p.mentions.clone();
        mentions.free_response_channels.extend(p.config_or_env_set(
            "free_response_rooms",
            "MATRIX_FREE_RESPONSE_ROOMS",
            env,
        ));
        mentions.allowed_channels.extend(p.config_or_env_set(
            "allowed_rooms",
            "MATRIX_ALLOWED_ROOMS",
            env,
        ));
        let max_message_len = p
            .config_or_env("max_message_length", "MATRIX_MAX_MESSAGE_LENGTH", env)
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(DEFAULT_MAX_MESSAGE)
            .clamp(500, MAX_MESSAGE_CEILING);
        let max_media_bytes = p
            .config_or_env("max_media_bytes", "MATRIX_MAX_MEDIA_BYTES", env)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_MAX_MEDIA);
        let allow_all = p.access.allow_all
            || flag(env.var("GATEWAY_ALLOW_ALL_USERS")).unwrap_or(false)
            || p.access.allowed_users.iter().any(|u| u == "*");
        Ok(MatrixSettings {
            homeserver,
            auth,
            user_id,
            device_id: p
                .extra_str("device_id")
                .or_else(|| env.var("MATRIX_DEVICE_ID"))
                .filter(|d| !d.trim().is_empty()),
            allowed_users: p.access.allowed_users.clone(),
            allow_all_invites: allow_all,
            pair_strangers: p.access.unauthorized_dm == UnauthorizedDm::Pair,
            mentions,
            auto_thread: p
                .config_or_env_bool("auto_thread", "MATRIX_AUTO_THREAD", env)
                .unwrap_or(true),
            dm_auto_thread: p
                .config_or_env_bool("dm_auto_thread", "MATRIX_DM_AUTO_THREAD", env)
                .unwrap_or(false),
            process_notices: p
                .config_or_env_bool("process_notices", "MATRIX_PROCESS_NOTICES", env)
                .unwrap_or(false),
            max_message_len,
            max_media_bytes,
            e2ee_requested,
            state_path: home.map(|h| h.join("matrix").join("state.json")),
            sync_timeout: std::time::Duration::from_secs(
                p.extra_u64("sync_timeout").unwrap_or(30).clamp(1, 120),
            ),
        })
    }

    /// Whether an invite from `user` is accepted (`direct`: the invite is for a DM).
    pub fn accepts_invite_from(&self, user: &str, direct: bool) -> bool {
        self.allow_all_invites
            || self.allowed_users.iter().any(|u| u == user)
            || (direct && self.pair_strangers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::Config;
    use std::path::Path;

    fn settings(yaml: &str, vars: &[(&str, &str)]) -> Result<MatrixSettings, PlatformConfigError> {
        let env = Environment::isolated(vars.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get("matrix").expect("matrix configured");
        assert!(p.enabled);
        MatrixSettings::from_platform(p, &env, Some(Path::new("/h")))
    }

    #[test]
    fn variables_enable_and_configure_matrix_as_python_names_them() {
        let s = settings(
            "",
            &[
                ("MATRIX_HOMESERVER", "https://m.example.org/"),
                ("MATRIX_ACCESS_TOKEN", "syt_x"),
                ("MATRIX_ALLOWED_USERS", "@ann:example.org"),
                ("MATRIX_FREE_RESPONSE_ROOMS", "!free:example.org"),
                ("MATRIX_AUTO_THREAD", "false"),
                ("MATRIX_MAX_MESSAGE_LENGTH", "10"),
            ],
        )
        .unwrap();
        assert_eq!(s.homeserver, "https://m.example.org");
        assert_eq!(s.auth, MatrixAuth::Token("syt_x".into()));
        assert!(s.accepts_invite_from("@ann:example.org", false));
        assert!(!s.accepts_invite_from("@eve:example.org", false));
        // A stranger's DM invite is joined so they can ask for a pairing code.
        assert!(s.accepts_invite_from("@eve:example.org", true));
        assert!(s.mentions.require_mention);
        assert!(
            s.mentions
                .free_response_channels
                .contains("!free:example.org")
        );
        assert!(!s.auto_thread);
        assert_eq!(s.max_message_len, 500);
        assert_eq!(s.state_path.unwrap(), Path::new("/h/matrix/state.json"));
    }

    #[test]
    fn password_login_needs_a_user_and_required_e2ee_is_refused() {
        let s = settings(
            "",
            &[
                ("MATRIX_HOMESERVER", "http://127.0.0.1:1"),
                ("MATRIX_PASSWORD", "pw"),
                ("MATRIX_USER_ID", "@bot:localhost"),
            ],
        )
        .unwrap();
        assert!(
            matches!(s.auth, MatrixAuth::Password { ref user_id, .. } if user_id == "@bot:localhost")
        );
        let e = settings(
            "",
            &[("MATRIX_HOMESERVER", "http://h"), ("MATRIX_PASSWORD", "pw")],
        )
        .unwrap_err();
        assert!(e.to_string().contains("MATRIX_USER_ID"), "{e}");
        let e = settings(
            "",
            &[
                ("MATRIX_HOMESERVER", "http://h"),
                ("MATRIX_ACCESS_TOKEN", "t"),
                ("MATRIX_ENCRYPTION", "true"),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("MATRIX_E2EE_MODE"), "{e}");
        let e = settings("", &[("MATRIX_ACCESS_TOKEN", "t")]).unwrap_err();
        assert!(e.to_string().contains("MATRIX_HOMESERVER"), "{e}");
    }
}
