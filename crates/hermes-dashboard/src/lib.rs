//! `hermes dashboard`: a local web UI over a home's sessions, usage, kanban board, skills, cron
//! jobs, memory files, config, MCP servers and chat platforms.
//!
//! One axum server ([`Dashboard::bind`] then [`Dashboard::serve`]) answers the page (one HTML
//! file, one script, one stylesheet, compiled in by [`assets`]; no CDN, no framework) and the
//! JSON API the page calls, whose routes are the single table [`routes::API_ROUTES`]. Every
//! request passes [`auth`]: a `Host` that is not the server's own is refused (DNS rebinding),
//! every `/api` request from another origin is refused, and every `/api` request needs the
//! login token printed at start (as `Authorization: Bearer`) or the session cookie the token
//! was exchanged for. The API reads and changes the home only through the crates that own each
//! thing (hermes-store, hermes-kanban, hermes-cron, hermes-config, hermes-core's skills and
//! memory); work on files and databases runs on the blocking pool under a deadline
//! ([`reply::blocking`]).

pub mod assets;
pub mod auth;
mod config_api;
mod cron_api;
mod kanban_api;
mod login;
mod memory_api;
mod reply;
pub mod routes;
mod sessions_api;
mod skills_api;
mod status_api;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hermes_config::HermesHome;
use hermes_gateway::api_server::listener::ConnectionLimits;
use tokio_util::sync::CancellationToken;

/// Python's port.
pub const DEFAULT_PORT: u16 = 9119;
/// Connections open at once (a browser opens a handful).
pub const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send a request's headers.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
pub const DEFAULT_HOST: &str = "127.0.0.1";

/// Why the dashboard could not start.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    #[error(
        "refusing to serve the dashboard on {0}, which is not a loopback address: anyone who can reach it could try the token; bind 127.0.0.1 and tunnel, or pass --insecure"
    )]
    NotLoopback(String),
    #[error("--host {0:?} is not an IP address (or localhost)")]
    BadHost(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot make a login token: the system's random source failed")]
    Random,
}

/// What `hermes dashboard` was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    pub home: HermesHome,
    pub host: String,
    pub port: u16,
    /// Serve on a non-loopback address anyway (Python's `--insecure`).
    pub insecure: bool,
    /// This program, for the work the dashboard hands to a command of its own: `skills install`
    /// (the hub's fetch, scan and install) and `cron run` (a job run now).
    pub exe: PathBuf,
}

/// What every handler shares.
pub(crate) struct App {
    pub(crate) home: HermesHome,
    pub(crate) exe: PathBuf,
    pub(crate) auth: auth::Auth,
    /// `cron run` children started by "run now", reaped as later requests come in.
    pub(crate) runs: Mutex<Vec<std::process::Child>>,
}

/// A bound, not yet serving, dashboard.
pub struct Dashboard {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    app: Arc<App>,
}

impl Dashboard {
    /// Checks the address, makes the login token and binds (`port` 0: one the OS picks).
    pub async fn bind(options: Options) -> Result<Dashboard, DashboardError> {
        let host = options.host.trim();
        let ip: IpAddr = if host.eq_ignore_ascii_case("localhost") {
            IpAddr::from([127, 0, 0, 1])
        } else {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| DashboardError::BadHost(options.host.clone()))?
        };
        if !ip.is_loopback() && !options.insecure {
            return Err(DashboardError::NotLoopback(ip.to_string()));
        }
        let wanted = SocketAddr::new(ip, options.port);
        let listener = tokio::net::TcpListener::bind(wanted)
            .await
            .map_err(|source| DashboardError::Bind {
                addr: wanted.to_string(),
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| DashboardError::Bind {
                addr: wanted.to_string(),
                source,
            })?;
        let auth = auth::Auth::new(addr)?;
        Ok(Dashboard {
            listener,
            addr,
            app: Arc::new(App {
                home: options.home,
                exe: options.exe,
                auth,
                runs: Mutex::new(Vec::new()),
            }),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address to open: the login link with the token.
    pub fn login_url(&self) -> String {
        format!("{}/?token={}", self.base_url(), self.app.auth.token())
    }

    /// `http://HOST:PORT` (IPv6 in brackets).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves until `shutdown` fires, through the API server's connection handling (headers
    /// within [`HEADER_TIMEOUT`], at most [`MAX_CONNECTIONS`] open, idle ones closed first).
    pub async fn serve(self, shutdown: CancellationToken) -> Result<(), DashboardError> {
        let router = routes::router(self.app.clone());
        let limits = ConnectionLimits {
            max_connections: MAX_CONNECTIONS,
            header_timeout: HEADER_TIMEOUT,
            body_timeout: reply::BODY_TIMEOUT,
        };
        hermes_gateway::api_server::listener::serve(self.listener, router, limits, shutdown).await;
        // "Run now" jobs still going finish on their own: they are commands of their own.
        Ok(())
    }
}

impl App {
    /// Collects the "run now" children that have exited; how many still run.
    pub(crate) fn reap_runs(&self) -> usize {
        let Ok(mut runs) = self.runs.lock() else {
            return 0;
        };
        runs.retain_mut(|child| matches!(child.try_wait(), Ok(None)));
        runs.len()
    }
}
