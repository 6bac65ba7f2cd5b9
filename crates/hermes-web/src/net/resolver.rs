//! Name resolution for outbound requests, injectable so tests can make a public-looking name
//! resolve to a loopback address. The fetcher resolves names itself, checks every answer, and
//! hands the HTTP client only the checked addresses.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::time::Duration;

/// How long one lookup may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

#[async_trait::async_trait]
pub trait Resolver: Send + Sync {
    /// The addresses of `host` (a domain name, never an IP literal).
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>>;
}

/// The system's resolver (getaddrinfo, on tokio's blocking pool), bounded in time.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

#[async_trait::async_trait]
impl Resolver for SystemResolver {
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        let query = format!("{host}:0");
        let found = tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host(query))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "name lookup timed out"))??;
        let mut addrs: Vec<IpAddr> = Vec::new();
        for a in found {
            if !addrs.contains(&a.ip()) {
                addrs.push(a.ip());
            }
        }
        Ok(addrs)
    }
}

/// A fixed table of names (for tests): unknown names do not resolve.
#[derive(Debug, Default, Clone)]
pub struct StaticResolver {
    table: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    pub fn new() -> StaticResolver {
        StaticResolver::default()
    }

    /// `host` resolves to `addrs`.
    pub fn with(mut self, host: &str, addrs: &[IpAddr]) -> StaticResolver {
        self.table.insert(host.to_ascii_lowercase(), addrs.to_vec());
        self
    }
}

#[async_trait::async_trait]
impl Resolver for StaticResolver {
    async fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        self.table
            .get(&host.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host"))
    }
}
