//! A running `hermes dashboard --port 0 --no-open` for the binary's tests: started in a test
//! home, its login link read from its first line, stopped with SIGTERM when dropped (killed
//! if it does not stop within 10 s).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hermes_testkit::TestHome;
use hermes_testkit::http_client::HttpReply;

use super::bin;

pub struct Dashboard {
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub token: String,
    /// The whole first line's link.
    pub login_url: String,
}

impl Dashboard {
    pub fn start(home: &TestHome) -> Dashboard {
        Dashboard::start_with(home, &["--no-open"], None)
    }

    /// With `extra` flags after `dashboard --port 0`, and `path` as PATH when given.
    pub fn start_with(home: &TestHome, extra: &[&str], path: Option<&str>) -> Dashboard {
        let mut cmd = home.command(bin());
        if let Some(path) = path {
            cmd.env("PATH", path);
        }
        let mut child = cmd
            .args(["dashboard", "--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the dashboard printed nothing within a minute");
        let login_url = line
            .strip_prefix("Dashboard: ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        let (base, token) = login_url.split_once("/?token=").unwrap();
        let addr = base.strip_prefix("http://").unwrap().to_string();
        Dashboard {
            child,
            addr,
            base: base.to_string(),
            token: token.to_string(),
            login_url: login_url.clone(),
        }
    }

    pub fn bearer(&self) -> String {
        format!("Authorization: Bearer {}", self.token)
    }

    /// A request with the token as a bearer and `Host` this server's own.
    pub fn api(&self, method: &str, path: &str, body: &str) -> HttpReply {
        let host = format!("Host: {}", self.addr);
        let bearer = self.bearer();
        hermes_testkit::http_client::http(&self.addr, method, path, &[&host, &bearer], body)
    }

    pub fn raw(&self, method: &str, path: &str, headers: &[&str], body: &str) -> HttpReply {
        hermes_testkit::http_client::http(&self.addr, method, path, headers, body)
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
