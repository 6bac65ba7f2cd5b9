//! The one outbound fetcher for everything that leaves the machine on the model's behalf (page
//! extraction, media downloads, the browser's navigation checks). Each hop of a request is
//! checked before it is sent: the URL rules of [`UrlPolicy`], then the host is resolved here and
//! every address it resolves to is checked; the HTTP client's own resolver hands out only those
//! checked addresses ("pins"), so the address connected to is the address that was checked (no
//! DNS rebinding between check and connect). Redirects are followed by hand, each target
//! checked the same way (at most [`FetchLimits::max_redirects`]); bodies are read up to
//! [`FetchLimits::max_bytes`] and the whole exchange is bounded by [`FetchLimits::timeout`].
//! No system proxy is used: a proxy would resolve names out of our sight.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use url::{Host, Url};

use super::policy::{Refusal, RefusalReason, UrlPolicy};
use super::resolver::{Resolver, SystemResolver};

/// How long a checked lookup is handed to the HTTP client.
const PIN_TTL: Duration = Duration::from_secs(60);
/// Most pinned names kept (the oldest are dropped first).
const MAX_PINS: usize = 512;
const USER_AGENT: &str = concat!(
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) hermes-rs/",
    env!("CARGO_PKG_VERSION")
);

/// Bounds of one fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchLimits {
    /// Largest body read; a longer one is an error.
    pub max_bytes: usize,
    /// The whole exchange, redirects included.
    pub timeout: Duration,
    pub max_redirects: usize,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            max_bytes: 10 * 1024 * 1024,
            timeout: Duration::from_secs(60),
            max_redirects: 10,
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum FetchError {
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error("{0}")]
    Refused(#[from] Refusal),
    #[error("{from} redirected to {refusal}")]
    RedirectRefused { from: String, refusal: Refusal },
    #[error("{url}: more than {limit} redirects")]
    TooManyRedirects { url: String, limit: usize },
    #[error("{url}: the response is larger than {limit} bytes")]
    TooLarge { url: String, limit: usize },
    #[error("{url}: no complete answer within {secs} s")]
    Timeout { url: String, secs: u64 },
    #[error("{url}: cannot resolve {host}: {message}")]
    Dns {
        url: String,
        host: String,
        message: String,
    },
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: {message}")]
    Transport { url: String, message: String },
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
}

/// A fetched response: the final URL (after redirects), its status, type and body.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub url: Url,
    pub status: u16,
    /// The media type, lowercase, without parameters (`text/html`).
    pub content_type: Option<String>,
    /// The `charset` parameter of Content-Type, if any.
    pub charset: Option<String>,
    pub body: Vec<u8>,
}

/// The policy, the resolver and the pins the client's resolver reads.
struct Guard {
    policy: UrlPolicy,
    resolver: Arc<dyn Resolver>,
    pins: Mutex<HashMap<String, (Instant, Vec<IpAddr>)>>,
}

impl Guard {
    /// Every address of `host`, each checked; refused if any is refused (a name that mixes a
    /// public and a private answer is not trusted with either).
    async fn resolve_checked(
        &self,
        url: &Url,
        host: &str,
        port: u16,
    ) -> Result<Vec<IpAddr>, FetchError> {
        let addrs = self
            .resolver
            .lookup(host)
            .await
            .map_err(|e| FetchError::Dns {
                url: url.to_string(),
                host: host.to_string(),
                message: e.to_string(),
            })?;
        if addrs.is_empty() {
            return Err(FetchError::Dns {
                url: url.to_string(),
                host: host.to_string(),
                message: "no addresses".into(),
            });
        }
        for ip in &addrs {
            self.policy
                .check_addr(host, SocketAddr::new(*ip, port))
                .map_err(|reason| Refusal {
                    url: url.to_string(),
                    reason,
                })?;
        }
        Ok(addrs)
    }

    fn pin(&self, host: &str, addrs: Vec<IpAddr>) {
        let Ok(mut pins) = self.pins.lock() else {
            return;
        };
        let now = Instant::now();
        pins.retain(|_, (at, _)| now.duration_since(*at) < PIN_TTL);
        if pins.len() >= MAX_PINS
            && let Some(oldest) = pins
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone())
        {
            pins.remove(&oldest);
        }
        pins.insert(host.to_string(), (now, addrs));
    }

    fn pinned(&self, host: &str) -> Option<Vec<IpAddr>> {
        let pins = self.pins.lock().ok()?;
        let (at, addrs) = pins.get(host)?;
        (at.elapsed() < PIN_TTL).then(|| addrs.clone())
    }
}

/// The HTTP client's resolver: the pinned (checked) addresses of a name, else a checked lookup
/// of its own; never an unchecked address.
struct PinnedResolver(Arc<Guard>);

impl reqwest::dns::Resolve for PinnedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = match guard.pinned(&host) {
                Some(a) => a,
                None => {
                    let url = Url::parse(&format!("http://{host}/"))
                        .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
                    // Port unknown here: trusted (exact address and port) entries cannot
                    // match, which only ever refuses more.
                    guard
                        .resolve_checked(&url, &host, 0)
                        .await
                        .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?
                }
            };
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// The SSRF-safe fetcher. Cheap to clone (shared client and pins); the HTTP client is built on
/// first use.
#[derive(Clone)]
pub struct Fetcher {
    client: Arc<OnceLock<Result<reqwest::Client, String>>>,
    guard: Arc<Guard>,
    limits: FetchLimits,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("policy", &self.guard.policy)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher with the system resolver.
    pub fn new(policy: UrlPolicy) -> Fetcher {
        Fetcher::with_resolver(policy, Arc::new(SystemResolver))
    }

    /// A fetcher resolving names with `resolver` (tests inject a fixed table).
    pub fn with_resolver(policy: UrlPolicy, resolver: Arc<dyn Resolver>) -> Fetcher {
        let guard = Arc::new(Guard {
            policy,
            resolver,
            pins: Mutex::new(HashMap::new()),
        });
        Fetcher {
            client: Arc::new(OnceLock::new()),
            guard,
            limits: FetchLimits::default(),
        }
    }

    /// Where a connection for `url` may go: the checked addresses of its host (an address
    /// literal after the same checks), with the URL's port. What the browser's proxy connects
    /// to, so the address checked is the address used.
    pub async fn connect_addrs(&self, url: &Url) -> Result<Vec<SocketAddr>, FetchError> {
        self.guard.policy.check_url(url)?;
        let port = url.port_or_known_default().unwrap_or(0);
        let ips = match url.host() {
            Some(Host::Domain(name)) => self.guard.resolve_checked(url, name, port).await?,
            Some(Host::Ipv4(v4)) => vec![IpAddr::V4(v4)],
            Some(Host::Ipv6(v6)) => vec![IpAddr::V6(v6)],
            None => Vec::new(),
        };
        Ok(ips
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect())
    }

    fn http(&self) -> Result<&reqwest::Client, FetchError> {
        self.client
            .get_or_init(|| {
                let _ = rustls::crypto::ring::default_provider().install_default();
                reqwest::Client::builder()
                    .dns_resolver(Arc::new(PinnedResolver(self.guard.clone())))
                    .redirect(reqwest::redirect::Policy::none())
                    .no_proxy()
                    .connect_timeout(Duration::from_secs(15))
                    .user_agent(USER_AGENT)
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| FetchError::Client(e.clone()))
    }

    /// The same fetcher with other default limits.
    pub fn with_limits(mut self, limits: FetchLimits) -> Fetcher {
        self.limits = limits;
        self
    }

    pub fn policy(&self) -> &UrlPolicy {
        &self.guard.policy
    }

    pub fn limits(&self) -> &FetchLimits {
        &self.limits
    }

    /// Parses `raw` and runs every check a request to it would (URL rules, lookup, address
    /// rules) without sending anything: the browser's navigation gate.
    pub async fn check(&self, raw: &str) -> Result<Url, FetchError> {
        let url = parse_url(raw)?;
        self.check_parsed(&url).await?;
        Ok(url)
    }

    async fn check_parsed(&self, url: &Url) -> Result<(), FetchError> {
        self.guard.policy.check_url(url)?;
        if let Some(Host::Domain(name)) = url.host() {
            let port = url.port_or_known_default().unwrap_or(0);
            let addrs = self.guard.resolve_checked(url, name, port).await?;
            self.guard.pin(name, addrs);
        }
        Ok(())
    }

    /// GETs `raw` within the default limits.
    pub async fn get(&self, raw: &str) -> Result<Fetched, FetchError> {
        let limits = self.limits.clone();
        self.get_limited(raw, &limits).await
    }

    /// GETs `raw`: every hop checked, redirects followed by hand, the body capped. A final
    /// status of 400 or more is an error.
    pub async fn get_limited(
        &self,
        raw: &str,
        limits: &FetchLimits,
    ) -> Result<Fetched, FetchError> {
        let url = parse_url(raw)?;
        let shown = url.to_string();
        match tokio::time::timeout(limits.timeout, self.follow(url, limits)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout {
                url: shown,
                secs: limits.timeout.as_secs(),
            }),
        }
    }

    async fn follow(&self, mut url: Url, limits: &FetchLimits) -> Result<Fetched, FetchError> {
        let mut previous: Option<Url> = None;
        for _ in 0..=limits.max_redirects {
            if let Err(e) = self.check_parsed(&url).await {
                return Err(match (e, &previous) {
                    (FetchError::Refused(refusal), Some(from)) => FetchError::RedirectRefused {
                        from: from.to_string(),
                        refusal,
                    },
                    (e, _) => e,
                });
            }
            let response = self
                .http()?
                .get(url.clone())
                .header(
                    reqwest::header::ACCEPT,
                    "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5",
                )
                .send()
                .await
                .map_err(|e| transport_error(&url, &e))?;
            let status = response.status();
            if status.is_redirection()
                && let Some(location) = response.headers().get(reqwest::header::LOCATION)
            {
                let location = location.to_str().map_err(|_| FetchError::InvalidUrl {
                    url: url.to_string(),
                    reason: "the redirect Location is not text".into(),
                })?;
                let next = url
                    .join(location.trim())
                    .map_err(|e| FetchError::InvalidUrl {
                        url: location.to_string(),
                        reason: e.to_string(),
                    })?;
                previous = Some(url);
                url = next;
                continue;
            }
            if status.as_u16() >= 400 {
                return Err(FetchError::Status {
                    url: url.to_string(),
                    status: status.as_u16(),
                });
            }
            let (content_type, charset) = media_type(response.headers());
            let body = read_capped(response, &url, limits.max_bytes).await?;
            return Ok(Fetched {
                url,
                status: status.as_u16(),
                content_type,
                charset,
                body,
            });
        }
        Err(FetchError::TooManyRedirects {
            url: url.to_string(),
            limit: limits.max_redirects,
        })
    }
}

/// Reads a body up to `max` bytes; longer is an error (a cut page or PDF would mislead).
async fn read_capped(
    mut response: reqwest::Response,
    url: &Url,
    max: usize,
) -> Result<Vec<u8>, FetchError> {
    if let Some(len) = response.content_length()
        && len > max as u64
    {
        return Err(FetchError::TooLarge {
            url: url.to_string(),
            limit: max,
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| transport_error(url, &e))?
    {
        if body.len() + chunk.len() > max {
            return Err(FetchError::TooLarge {
                url: url.to_string(),
                limit: max,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn media_type(headers: &reqwest::header::HeaderMap) -> (Option<String>, Option<String>) {
    let Some(value) = headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return (None, None);
    };
    let mut parts = value.split(';');
    let media = parts
        .next()
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty());
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_ascii_lowercase())
    });
    (media, charset)
}

/// A transport failure in one line; a refusal raised by the client's resolver is reported as
/// the refusal it is.
fn transport_error(url: &Url, e: &reqwest::Error) -> FetchError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut parts: Vec<String> = Vec::new();
    while let Some(err) = source {
        if let Some(FetchError::Refused(r)) = err.downcast_ref::<FetchError>() {
            return FetchError::Refused(r.clone());
        }
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = err.source();
    }
    if e.is_timeout() {
        parts.insert(0, "timed out".into());
    }
    FetchError::Transport {
        url: url.to_string(),
        message: parts
            .last()
            .cloned()
            .unwrap_or_else(|| "request failed".into()),
    }
}

/// Parses a URL the model wrote: surrounding whitespace and a space after `://` are dropped;
/// the parser then normalises the host (IDNA, numeric IPv4 spellings) and percent-encodes.
pub fn parse_url(raw: &str) -> Result<Url, FetchError> {
    let trimmed = raw.trim();
    let fixed = match trimmed.split_once("://") {
        Some((scheme, rest)) if !scheme.contains(char::is_whitespace) => {
            format!("{scheme}://{}", rest.trim_start())
        }
        _ => trimmed.to_string(),
    };
    Url::parse(&fixed).map_err(|e| FetchError::InvalidUrl {
        url: raw.to_string(),
        reason: e.to_string(),
    })
}

impl FetchError {
    /// Whether the request was refused by policy (rather than failing on the network).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            FetchError::Refused(_) | FetchError::RedirectRefused { .. }
        )
    }

    /// The refusal's reason, when it is one.
    pub fn refusal_reason(&self) -> Option<&RefusalReason> {
        match self {
            FetchError::Refused(r) | FetchError::RedirectRefused { refusal: r, .. } => {
                Some(&r.reason)
            }
            _ => None,
        }
    }
}
