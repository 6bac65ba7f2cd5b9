//! `hermes dashboard [--port 9119] [--host 127.0.0.1] [--no-open] [--insecure]`: the local web
//! UI of hermes-dashboard for the selected home. The first line on stdout is the login link
//! (`Dashboard: http://127.0.0.1:PORT/?token=...`, the real port when `--port 0` let the OS
//! pick); the browser is opened on it unless `--no-open` (`xdg-open`, `open` on macOS; a
//! missing opener is no error). Runs until Ctrl-C or SIGTERM. A non-loopback `--host` is
//! refused unless `--insecure`. The config is not loaded here: a broken config.yaml is what
//! the dashboard's config page can fix.

use std::io::Write;
use std::process::{ExitCode, Stdio};

use clap::Args;
use hermes_config::HermesHome;
use hermes_dashboard::{DEFAULT_HOST, DEFAULT_PORT, Dashboard, Options};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Port (0: one the OS picks).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Address to listen on (a loopback address unless --insecure).
    #[arg(long, default_value = DEFAULT_HOST)]
    pub host: String,
    /// Do not open a browser.
    #[arg(long = "no-open")]
    pub no_open: bool,
    /// Allow a --host that is not a loopback address (the login token still guards every route).
    #[arg(long)]
    pub insecure: bool,
    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

pub async fn run(top: &CommonArgs, args: &DashboardArgs) -> Result<ExitCode, CliError> {
    let profile = args.profile.clone().or_else(|| top.profile.clone());
    let home =
        HermesHome::resolve(profile.as_deref()).map_err(|e| CliError::config(e.to_string()))?;
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let exe = std::env::current_exe()
        .map_err(|e| CliError::runtime(format!("cannot find this program's path: {e}")))?;
    let dashboard = Dashboard::bind(Options {
        home,
        host: args.host.clone(),
        port: args.port,
        insecure: args.insecure,
        exe,
    })
    .await
    .map_err(|e| match e {
        hermes_dashboard::DashboardError::NotLoopback(_)
        | hermes_dashboard::DashboardError::BadHost(_) => CliError::config(e.to_string()),
        e => CliError::runtime(e.to_string()),
    })?;
    let url = dashboard.login_url();
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "Dashboard: {url}");
        let _ = writeln!(
            out,
            "Anyone with this link can use the dashboard until it stops: keep it private. Ctrl-C stops it."
        );
        let _ = out.flush();
    }
    if !args.no_open {
        open_browser(&url);
    }
    let shutdown = CancellationToken::new();
    crate::gateway_cmd::spawn_signal_handler(shutdown.clone());
    dashboard
        .serve(shutdown)
        .await
        .map_err(|e| CliError::runtime(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` in the desktop's browser; says so and goes on when there is no opener.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            // The opener returns at once (the browser lives on); reaped off the main path.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
        }
        Err(_) => eprintln!("hermes: no `{opener}` to open a browser; open the link above"),
    }
}
