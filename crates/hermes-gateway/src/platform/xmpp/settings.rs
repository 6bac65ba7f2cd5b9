//! XMPP's settings. The Python Hermes has no XMPP adapter; the keys follow its other
//! adapters: `XMPP_JID` / `extra.jid` (the bot's account, `bot@example.org`, optionally with
//! `/resource`), `XMPP_PASSWORD` / `extra.password`, `XMPP_SERVER` / `extra.server`
//! (`host[:port]` to connect to instead of the JID's domain, port 5222), `XMPP_ROOMS` /
//! `extra.rooms` (MUC rooms to join, comma-separated or a list), `XMPP_NICK` / `extra.nick`
//! (the nickname in rooms, default the JID's local part), `XMPP_ALLOW_PLAINTEXT` /
//! `extra.allow_plaintext` (connect without TLS, and allow PLAIN on it, when the server does
//! not offer STARTTLS: only for a server on loopback), `extra.max_message_length` (4,000
//! characters per message) and `extra.corrections` (stream answers by XEP-0308 message
//! corrections; off, as not every client shows them). The shared keys work as for every
//! adapter: `XMPP_ALLOWED_USERS` (bare JIDs), `XMPP_HOME_CHANNEL`, `XMPP_REQUIRE_MENTION`,
//! `XMPP_FREE_RESPONSE_CHANNELS`, ... Both variables `XMPP_JID` and `XMPP_PASSWORD` enable
//! the platform.

use std::net::IpAddr;

use hermes_config::Environment;
use serde_json::Value;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{MentionSettings, PlatformSettings, scalar_string, split_csv};

pub(crate) const PLATFORM: &str = "xmpp";
const DEFAULT_PORT: u16 = 5222;

/// A JID split into its parts; local part and domain lower-cased (they compare
/// case-insensitively), the resource as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Jid {
    pub local: Option<String>,
    pub domain: String,
    pub resource: Option<String>,
}

impl Jid {
    /// Parses `[local@]domain[/resource]`; `None` for something that is not a JID.
    pub fn parse(s: &str) -> Option<Jid> {
        let s = s.trim();
        let (bare, resource) = match s.split_once('/') {
            Some((b, r)) => (b, Some(r)),
            None => (s, None),
        };
        let (local, domain) = match bare.split_once('@') {
            Some((l, d)) => (Some(l), d),
            None => (None, bare),
        };
        let bad = |p: &str| {
            p.is_empty()
                || p.len() > 1023
                || p.chars()
                    .any(|c| c.is_control() || c.is_whitespace() || "\"&'<>@/:".contains(c))
        };
        if bad(domain) || local.is_some_and(bad) {
            return None;
        }
        if resource
            .is_some_and(|r| r.is_empty() || r.len() > 1023 || r.chars().any(char::is_control))
        {
            return None;
        }
        Some(Jid {
            local: local.map(str::to_lowercase),
            domain: domain.to_lowercase(),
            resource: resource.map(str::to_string),
        })
    }

    /// `local@domain` (or the domain).
    pub fn bare(&self) -> String {
        match &self.local {
            Some(l) => format!("{l}@{}", self.domain),
            None => self.domain.clone(),
        }
    }
}

#[derive(Clone)]
pub struct XmppSettings {
    pub(crate) jid: Jid,
    pub password: String,
    /// Where to connect: `XMPP_SERVER`, else the JID's domain.
    pub host: String,
    pub port: u16,
    /// Rooms' bare JIDs, lower-cased.
    pub rooms: Vec<String>,
    pub nick: String,
    pub allow_plaintext: bool,
    pub max_message_length: usize,
    pub corrections: bool,
    pub mentions: MentionSettings,
}

impl std::fmt::Debug for XmppSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XmppSettings")
            .field("jid", &self.jid.bare())
            .field("host", &self.host)
            .field("port", &self.port)
            .field("rooms", &self.rooms)
            .field("nick", &self.nick)
            .finish_non_exhaustive()
    }
}

fn invalid(message: String) -> PlatformConfigError {
    PlatformConfigError::Invalid {
        platform: PLATFORM,
        message,
    }
}

/// `host`, `host:port`, `[v6]:port` or `[v6]`.
fn parse_server(s: &str) -> Result<(String, u16), PlatformConfigError> {
    let s = s.trim();
    let bad = || invalid(format!("XMPP_SERVER {s:?} is not host[:port]"));
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or_else(bad)?;
        match after.strip_prefix(':') {
            Some(p) => (h, Some(p)),
            None if after.is_empty() => (h, None),
            None => return Err(bad()),
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            Some(_) => (s, None),
            None => (s, None),
        }
    };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(bad());
    }
    let port = match port {
        Some(p) => p.parse().ok().filter(|p| *p > 0).ok_or_else(bad)?,
        None => DEFAULT_PORT,
    };
    Ok((host.to_string(), port))
}

/// Whether `host` is this machine (plaintext is allowed only there).
pub(crate) fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl XmppSettings {
    pub fn from_platform(
        p: &PlatformSettings,
        env: &Environment,
    ) -> Result<XmppSettings, PlatformConfigError> {
        // The variable first, then `extra`, as the Python plugins read theirs.
        let get = |var: &str, key: &str| {
            env.var(var)
                .filter(|v| !v.trim().is_empty())
                .or_else(|| p.extra_str(key).filter(|v| !v.trim().is_empty()))
        };
        let jid_text = get("XMPP_JID", "jid").ok_or(PlatformConfigError::MissingCredential {
            platform: PLATFORM,
            variable: "XMPP_JID",
        })?;
        let jid = Jid::parse(&jid_text)
            .filter(|j| j.local.is_some())
            .ok_or_else(|| invalid(format!("XMPP_JID {jid_text:?} is not user@domain")))?;
        let password = get("XMPP_PASSWORD", "password")
            .or_else(|| p.token.clone().filter(|t| !t.trim().is_empty()))
            .ok_or(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "XMPP_PASSWORD",
            })?;
        let (host, port) = match get("XMPP_SERVER", "server") {
            Some(s) => parse_server(&s)?,
            None => (jid.domain.clone(), DEFAULT_PORT),
        };
        let rooms_text = env
            .var("XMPP_ROOMS")
            .filter(|v| !v.trim().is_empty())
            .map(|v| split_csv(&v))
            .or_else(|| match p.extra.get("rooms") {
                Some(Value::Array(items)) => Some(items.iter().filter_map(scalar_string).collect()),
                Some(other) => scalar_string(other).map(|s| split_csv(&s)),
                None => None,
            })
            .unwrap_or_default();
        let mut rooms = Vec::new();
        for room in rooms_text {
            let parsed = Jid::parse(&room)
                .filter(|j| j.local.is_some() && j.resource.is_none())
                .ok_or_else(|| {
                    invalid(format!(
                        "XMPP_ROOMS: {room:?} is not a room JID (room@conference.example.org)"
                    ))
                })?;
            if !rooms.contains(&parsed.bare()) {
                rooms.push(parsed.bare());
            }
        }
        let nick = get("XMPP_NICK", "nick")
            .map(|n| n.trim().to_string())
            .unwrap_or_else(|| jid.local.clone().unwrap_or_else(|| "hermes".into()));
        if nick.is_empty() || nick.chars().any(char::is_control) || nick.len() > 100 {
            return Err(invalid(format!(
                "XMPP_NICK {nick:?} is not a usable nickname"
            )));
        }
        let allow_plaintext = match env
            .var("XMPP_ALLOW_PLAINTEXT")
            .filter(|v| !v.trim().is_empty())
        {
            Some(v) => matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            ),
            None => p.extra_bool("allow_plaintext").unwrap_or(false),
        };
        if allow_plaintext && !is_loopback(&host) {
            return Err(invalid(format!(
                "XMPP_ALLOW_PLAINTEXT is only for a server on this machine, not {host}: the password would cross the network in clear"
            )));
        }
        let mut mentions = p.mentions.clone();
        // Room JIDs compare case-insensitively.
        for set in [
            &mut mentions.free_response_channels,
            &mut mentions.allowed_channels,
            &mut mentions.ignored_channels,
        ] {
            *set = set.iter().map(|c| c.to_lowercase()).collect();
        }
        Ok(XmppSettings {
            jid,
            password,
            host,
            port,
            rooms,
            nick,
            allow_plaintext,
            max_message_length: p
                .extra_u64("max_message_length")
                .map_or(4000, |n| n.clamp(100, 60_000) as usize),
            corrections: p.extra_bool("corrections").unwrap_or(false),
            mentions,
        })
    }

    /// The bot's bare JID.
    pub fn bare_jid(&self) -> String {
        self.jid.bare()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::Config;
    use std::path::Path;

    fn settings(yaml: &str, vars: &[(&str, &str)]) -> Result<XmppSettings, PlatformConfigError> {
        let env = Environment::isolated(vars.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get(PLATFORM).expect("xmpp configured");
        assert!(p.enabled);
        XmppSettings::from_platform(p, &env)
    }

    #[test]
    fn the_variables_enable_and_configure_it() {
        let s = settings(
            "",
            &[
                ("XMPP_JID", "Bot@Example.org/desk"),
                ("XMPP_PASSWORD", "pw"),
                ("XMPP_SERVER", "[::1]:5333"),
                (
                    "XMPP_ROOMS",
                    "Ops@Conference.example.org, ops@conference.example.org,dev@muc.x",
                ),
                ("XMPP_ALLOW_PLAINTEXT", "yes"),
                ("XMPP_ALLOWED_USERS", "ann@example.org"),
            ],
        )
        .unwrap();
        assert_eq!(s.bare_jid(), "bot@example.org");
        assert_eq!(s.jid.resource.as_deref(), Some("desk"));
        assert_eq!((s.host.as_str(), s.port), ("::1", 5333));
        assert_eq!(s.rooms, vec!["ops@conference.example.org", "dev@muc.x"]);
        assert_eq!(s.nick, "bot");
        assert!(s.allow_plaintext);
        assert!(s.mentions.require_mention);
        assert_eq!(s.max_message_length, 4000);
    }

    #[test]
    fn config_yaml_and_errors() {
        let s = settings(
            "platforms:\n  xmpp:\n    enabled: true\n    extra: {jid: b@x.org, password: p, rooms: [r@muc.x.org], nick: Hermes, max_message_length: 500}\n",
            &[],
        )
        .unwrap();
        assert_eq!((s.host.as_str(), s.port), ("x.org", 5222));
        assert_eq!(s.nick, "Hermes");
        assert_eq!(s.rooms, vec!["r@muc.x.org"]);
        assert_eq!(s.max_message_length, 500);
        assert!(!s.allow_plaintext);

        let e = settings("platforms:\n  xmpp:\n    enabled: true\n", &[]).unwrap_err();
        assert!(e.to_string().contains("XMPP_JID"), "{e}");
        let e = settings("", &[("XMPP_JID", "x.org"), ("XMPP_PASSWORD", "p")]).unwrap_err();
        assert!(e.to_string().contains("user@domain"), "{e}");
        let e = settings(
            "",
            &[
                ("XMPP_JID", "b@x.org"),
                ("XMPP_PASSWORD", "p"),
                ("XMPP_ALLOW_PLAINTEXT", "1"),
            ],
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("only for a server on this machine"),
            "{e}"
        );
        let e = settings(
            "",
            &[
                ("XMPP_JID", "b@x.org"),
                ("XMPP_PASSWORD", "p"),
                ("XMPP_ROOMS", "#ops"),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("XMPP_ROOMS"), "{e}");
        let e = settings(
            "",
            &[
                ("XMPP_JID", "b@x.org"),
                ("XMPP_PASSWORD", "p"),
                ("XMPP_SERVER", "h:port"),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("XMPP_SERVER"), "{e}");
    }

    #[test]
    fn jids() {
        let j = Jid::parse("Room@Conf.X/Nick Name").unwrap();
        assert_eq!(j.bare(), "room@conf.x");
        assert_eq!(j.resource.as_deref(), Some("Nick Name"));
        assert_eq!(Jid::parse("x.org").unwrap().bare(), "x.org");
        for bad in ["", "@x", "a@", "a b@x", "a@x/", "a<@x", "a@b@c"] {
            assert!(Jid::parse(bad).is_none(), "{bad}");
        }
        assert!(is_loopback("127.0.0.1") && is_loopback("::1") && is_loopback("LOCALHOST"));
        assert!(!is_loopback("10.0.0.1") && !is_loopback("example.org"));
    }
}
