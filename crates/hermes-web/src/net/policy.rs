//! What the agent may reach: the URL rules (http and https only, a host, no metadata host
//! names), the address rules of [`super::ip`] applied to every address a host resolves to, the
//! user's website blocklist (`security.website_blocklist` in config.yaml, the Python Hermes's
//! keys: `enabled`, `domains`, `shared_files`), and the explicit opt-out
//! (`security.allow_private_urls: true`, `HERMES_ALLOW_PRIVATE_URLS`, or the legacy
//! `browser.allow_private_urls`), which never opens the metadata endpoints.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use hermes_config::{Config, Environment, HermesHome};
use serde_json::Value;
use url::{Host, Url};

use super::ip::{self, METADATA_HOSTS};

/// Why a URL is not fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url} is refused: {reason}")]
pub struct Refusal {
    pub url: String,
    pub reason: RefusalReason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusalReason {
    /// Only http and https leave the machine.
    Scheme(String),
    NoHost,
    /// A cloud metadata host name.
    MetadataHost(String),
    /// The host is, or resolves to, an address that is not public.
    Address {
        host: String,
        addr: IpAddr,
        kind: &'static str,
        always: bool,
    },
    /// The user's website blocklist.
    Blocklist {
        host: String,
        rule: String,
        source: String,
    },
}

impl std::fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RefusalReason::Scheme(s) => {
                write!(f, "the {s}: scheme is not fetched (only http and https)")
            }
            RefusalReason::NoHost => write!(f, "the URL has no host"),
            RefusalReason::MetadataHost(h) => {
                write!(f, "{h} is a cloud metadata service and is never fetched")
            }
            RefusalReason::Address {
                host,
                addr,
                kind,
                always,
            } => {
                let target = match host.parse::<IpAddr>() {
                    Ok(literal) if literal == *addr => format!("{addr} is {kind}"),
                    Ok(_) => format!("{host} is {addr}, {kind}"),
                    Err(_) => format!("{host} resolves to {addr}, {kind}"),
                };
                if *always {
                    write!(f, "{target}, which is never fetched")
                } else {
                    write!(
                        f,
                        "{target}; private and internal addresses are not fetched \
                         (security.allow_private_urls: true in config.yaml allows them)"
                    )
                }
            }
            RefusalReason::Blocklist { host, rule, source } => write!(
                f,
                "blocked by website policy: {host} matches rule {rule} from {source}"
            ),
        }
    }
}

/// One blocklist rule and where it came from (`config` or a shared file's path).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    pattern: String,
    source: String,
}

/// The rules outbound requests are held to.
#[derive(Debug, Clone, Default)]
pub struct UrlPolicy {
    allow_private: bool,
    /// Exact addresses (with port) exempt from the address rules: a test server, or a service
    /// the embedding program trusts. Never filled from config.
    trusted: Vec<SocketAddr>,
    blocklist_enabled: bool,
    rules: Vec<Rule>,
}

impl UrlPolicy {
    /// Everything internal refused, no blocklist.
    pub fn strict() -> UrlPolicy {
        UrlPolicy::default()
    }

    /// The policy of a home: `security.allow_private_urls` (or `HERMES_ALLOW_PRIVATE_URLS`,
    /// which wins, or the legacy `browser.allow_private_urls`) and `security.website_blocklist`
    /// with its shared files (relative paths are under the home).
    pub fn from_config(config: &Config, env: &Environment, home: &HermesHome) -> UrlPolicy {
        let raw = &config.raw;
        let allow_private = match env.var("HERMES_ALLOW_PRIVATE_URLS").as_deref() {
            Some(v) if is_true(v) => true,
            Some(v) if is_false(v) => false,
            _ => {
                truthy(raw.pointer("/security/allow_private_urls"))
                    || truthy(raw.pointer("/browser/allow_private_urls"))
            }
        };
        let mut policy = UrlPolicy {
            allow_private,
            ..UrlPolicy::default()
        };
        if let Some(list) = raw.pointer("/security/website_blocklist") {
            policy.load_blocklist(list, home.root());
        }
        policy
    }

    fn load_blocklist(&mut self, list: &Value, home: &Path) {
        // Python's default when the section exists without `enabled` is on.
        self.blocklist_enabled = list.get("enabled").and_then(Value::as_bool).unwrap_or(true);
        let strings = |key: &str| -> Vec<String> {
            list.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        for domain in strings("domains") {
            self.add_rule(&domain, "config");
        }
        for file in strings("shared_files") {
            let file = file.trim();
            if file.is_empty() {
                continue;
            }
            let path = expand_path(file, home);
            // A missing or unreadable shared file is skipped, as in the Python Hermes: one
            // bad path must not disable the web tools.
            if let Ok(text) = std::fs::read_to_string(&path) {
                let source = path.display().to_string();
                for line in text.lines() {
                    self.add_rule(line, &source);
                }
            }
        }
    }

    fn add_rule(&mut self, raw: &str, source: &str) {
        if let Some(pattern) = normalize_rule(raw)
            && !self
                .rules
                .iter()
                .any(|r| r.pattern == pattern && r.source == source)
        {
            self.rules.push(Rule {
                pattern,
                source: source.to_string(),
            });
        }
    }

    /// Private addresses allowed (metadata endpoints stay refused).
    pub fn allowing_private(mut self, allow: bool) -> UrlPolicy {
        self.allow_private = allow;
        self
    }

    /// `addr` (exact address and port) exempt from the address rules.
    pub fn trusting(mut self, addr: SocketAddr) -> UrlPolicy {
        self.trusted.push(addr);
        self
    }

    /// Adds blocklist rules (the `domains` of `security.website_blocklist`) and turns it on.
    pub fn blocking<S: AsRef<str>>(mut self, domains: &[S]) -> UrlPolicy {
        self.blocklist_enabled = true;
        for d in domains {
            self.add_rule(d.as_ref(), "config");
        }
        self
    }

    pub fn allows_private(&self) -> bool {
        self.allow_private
    }

    /// The checks that need no lookup: scheme, host, metadata names, the blocklist, and the
    /// address rules when the host is an IP literal (any spelling the URL parser accepts:
    /// `2130706433`, `0x7f.1`, `0177.0.0.1`, `[::ffff:127.0.0.1]`, ...).
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        let refuse = |reason| Refusal {
            url: url.to_string(),
            reason,
        };
        let scheme = url.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(refuse(RefusalReason::Scheme(scheme.to_string())));
        }
        let port = url.port_or_known_default().unwrap_or(0);
        match url.host() {
            None => Err(refuse(RefusalReason::NoHost)),
            Some(Host::Ipv4(v4)) => self
                .check_addr(&v4.to_string(), SocketAddr::new(v4.into(), port))
                .map_err(refuse),
            Some(Host::Ipv6(v6)) => self
                .check_addr(&v6.to_string(), SocketAddr::new(v6.into(), port))
                .map_err(refuse),
            Some(Host::Domain(name)) => {
                let host = normalize_host(name);
                if host.is_empty() {
                    return Err(refuse(RefusalReason::NoHost));
                }
                if METADATA_HOSTS.contains(&host.as_str()) {
                    return Err(refuse(RefusalReason::MetadataHost(host)));
                }
                self.check_blocklist(&host).map_err(refuse)
            }
        }
    }

    fn check_blocklist(&self, host: &str) -> Result<(), RefusalReason> {
        if !self.blocklist_enabled {
            return Ok(());
        }
        match self.rules.iter().find(|r| host_matches(host, &r.pattern)) {
            Some(rule) => Err(RefusalReason::Blocklist {
                host: host.to_string(),
                rule: rule.pattern.clone(),
                source: rule.source.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Whether `host` may be reached at `addr` (one of the addresses it resolved to).
    pub fn check_addr(&self, host: &str, addr: SocketAddr) -> Result<(), RefusalReason> {
        let ip = canonical(addr.ip());
        if self.trusted.contains(&SocketAddr::new(ip, addr.port())) {
            return Ok(());
        }
        match ip::classify(ip) {
            None => Ok(()),
            Some(b) if self.allow_private && !b.always => Ok(()),
            Some(b) => Err(RefusalReason::Address {
                host: host.to_string(),
                addr: ip,
                kind: b.kind,
                always: b.always,
            }),
        }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is (for messages and the trust list).
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn normalize_host(host: &str) -> String {
    host.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// A blocklist entry as a bare host pattern: lowercase, no scheme, path or leading `www.`;
/// comments and blanks are none.
fn normalize_rule(raw: &str) -> Option<String> {
    let mut value = raw.trim().to_ascii_lowercase();
    if value.is_empty() || value.starts_with('#') {
        return None;
    }
    if let Some((_, rest)) = value.split_once("://") {
        value = rest.to_string();
    }
    let value = value
        .split('/')
        .next()
        .unwrap_or("")
        .trim()
        .trim_end_matches('.');
    let value = value.strip_prefix("www.").unwrap_or(value);
    (!value.is_empty()).then(|| value.to_string())
}

/// `example.com` matches itself and its subdomains; `*.example.com` matches subdomains only.
fn host_matches(host: &str, pattern: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(base) => host.len() > base.len() + 1 && host.ends_with(&format!(".{base}")),
        None => host == pattern || host.ends_with(&format!(".{pattern}")),
    }
}

fn expand_path(path: &str, home: &Path) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(user_home) = std::env::var_os("HOME")
    {
        return PathBuf::from(user_home).join(rest);
    }
    let p = PathBuf::from(path);
    if p.is_absolute() { p } else { home.join(p) }
}

fn is_true(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes")
}

fn is_false(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "false" | "0" | "no")
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => is_true(s) || s.trim().eq_ignore_ascii_case("on"),
        Some(Value::Number(n)) => n.as_i64() == Some(1),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(policy: &UrlPolicy, url: &str) -> Result<(), Refusal> {
        policy.check_url(&Url::parse(url).unwrap())
    }

    #[test]
    fn schemes_other_than_http_are_refused() {
        let p = UrlPolicy::strict();
        for url in [
            "file:///etc/passwd",
            "ftp://example.com/",
            "gopher://x/",
            "data:text/plain,hi",
        ] {
            let e = check(&p, url).unwrap_err();
            assert!(matches!(e.reason, RefusalReason::Scheme(_)), "{url}: {e}");
        }
        assert!(check(&p, "https://example.com/").is_ok());
    }

    #[test]
    fn every_ipv4_spelling_is_parsed_and_checked() {
        let p = UrlPolicy::strict();
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.0.0.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://127.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://169.254.169.254/latest/meta-data",
            "http://0xa9fea9fe/",
        ] {
            let e = check(&p, url).unwrap_err();
            assert!(
                matches!(e.reason, RefusalReason::Address { .. }),
                "{url}: {e}"
            );
        }
    }

    #[test]
    fn allow_private_opens_private_but_never_metadata() {
        let p = UrlPolicy::strict().allowing_private(true);
        assert!(check(&p, "http://127.0.0.1:8080/").is_ok());
        assert!(check(&p, "http://10.0.0.1/").is_ok());
        let e = check(&p, "http://169.254.169.254/").unwrap_err();
        assert!(e.to_string().contains("never fetched"), "{e}");
        let e = check(&p, "http://metadata.google.internal/computeMetadata/v1/").unwrap_err();
        assert!(matches!(e.reason, RefusalReason::MetadataHost(_)));
    }

    #[test]
    fn trusted_addresses_are_exact() {
        let addr: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let p = UrlPolicy::strict().trusting(addr);
        assert!(check(&p, "http://127.0.0.1:4000/x").is_ok());
        assert!(check(&p, "http://127.0.0.1:4001/x").is_err());
        assert!(check(&p, "http://[::ffff:127.0.0.1]:4000/").is_ok());
    }

    #[test]
    fn blocklist_matches_hosts_and_subdomains() {
        let p = UrlPolicy::strict().blocking(&["https://www.Evil.com/path", "*.ads.net", "# c"]);
        assert!(check(&p, "https://evil.com/").is_err());
        assert!(check(&p, "https://sub.evil.com/").is_err());
        assert!(check(&p, "https://notevil.com/").is_ok());
        assert!(check(&p, "https://x.ads.net/").is_err());
        assert!(check(&p, "https://ads.net/").is_ok());
        let e = check(&p, "https://evil.com/").unwrap_err();
        assert_eq!(
            e.reason.to_string(),
            "blocked by website policy: evil.com matches rule evil.com from config"
        );
    }

    #[test]
    fn config_keys_of_the_python_hermes() {
        let dir = tempfile::tempdir().unwrap();
        let home = HermesHome::at(dir.path());
        std::fs::write(dir.path().join("blocked.txt"), "# list\nbad.example\n").unwrap();
        std::fs::write(
            dir.path().join("config.yaml"),
            "security:\n  allow_private_urls: true\n  website_blocklist:\n    enabled: true\n    domains: [tracker.test]\n    shared_files: [blocked.txt, missing.txt]\n",
        )
        .unwrap();
        let env = Environment::isolated::<&str, &str>([]);
        let (config, _) = hermes_config::load(&home).unwrap();
        let p = UrlPolicy::from_config(&config, &env, &home);
        assert!(p.allows_private());
        assert!(check(&p, "http://tracker.test/").is_err());
        let e = check(&p, "http://www.bad.example/").unwrap_err();
        assert!(e.to_string().contains("blocked.txt"), "{e}");
        let env = Environment::isolated([("HERMES_ALLOW_PRIVATE_URLS", "false")]);
        assert!(!UrlPolicy::from_config(&config, &env, &home).allows_private());
    }
}
