//! Real chat servers for end-to-end tests, each started in its own temporary directory on a
//! free loopback port and stopped when dropped: [`Synapse`] (the Matrix homeserver, from the
//! venv `scripts/setup-peers` makes in the user's cache) and [`Ngircd`] (Debian's IRC
//! server). `start` returns `Err(reason)` when the server is not installed, so a test can
//! print why it skips.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http_client::{HttpReply, http};

/// `${XDG_CACHE_HOME:-$HOME/.cache}/hermes-rs/peers`, where `scripts/setup-peers` installs.
pub fn peers_dir() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("hermes-rs").join("peers"))
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// SIGTERM, then SIGKILL after `grace`; reaps the child.
fn stop_child(child: &mut Child, grace: Duration) {
    if child.try_wait().ok().flatten().is_some() {
        return;
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if child.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A Synapse homeserver (`server_name: localhost`) with relaxed rate limits and a
/// registration shared secret for the admin API.
pub struct Synapse {
    child: Option<Child>,
    dir: tempfile::TempDir,
    venv: PathBuf,
    pub port: u16,
}

const SHARED_SECRET: &str = "hermes-test-shared-secret";

impl Synapse {
    /// Starts Synapse from the setup venv; `Err` says why it cannot run here.
    pub fn start() -> Result<Synapse, String> {
        let venv = peers_dir()
            .map(|d| d.join("synapse"))
            .ok_or("no cache directory (HOME is not set)")?;
        if !venv.join("bin/python").exists() {
            return Err(format!(
                "Synapse is not installed in {} (run scripts/setup-peers)",
                venv.display()
            ));
        }
        let mut last = String::new();
        for _ in 0..3 {
            let mut s = Synapse {
                child: None,
                dir: tempfile::tempdir().map_err(|e| e.to_string())?,
                venv: venv.clone(),
                port: free_port()?,
            };
            // A failed attempt is dropped (its server stopped) and another port tried.
            match s.launch() {
                Ok(()) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(format!("Synapse did not start: {last}"))
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("homeserver.yaml")
    }

    fn launch(&mut self) -> Result<(), String> {
        let d = self.dir.path().display();
        let port = self.port;
        let limit = "{per_second: 1000, burst_count: 1000}";
        let yaml = format!(
            "server_name: \"localhost\"\n\
             pid_file: {d}/homeserver.pid\n\
             listeners:\n  - port: {port}\n    bind_addresses: ['127.0.0.1']\n    type: http\n    tls: false\n    x_forwarded: false\n    resources:\n      - names: [client]\n        compress: false\n\
             database:\n  name: sqlite3\n  args:\n    database: {d}/homeserver.db\n\
             media_store_path: {d}/media_store\n\
             signing_key_path: {d}/localhost.signing.key\n\
             registration_shared_secret: \"{SHARED_SECRET}\"\n\
             macaroon_secret_key: \"test-macaroon-secret\"\n\
             form_secret: \"test-form-secret\"\n\
             report_stats: false\n\
             trusted_key_servers: []\n\
             suppress_key_server_warning: true\n\
             rc_message: {limit}\n\
             rc_registration: {limit}\n\
             rc_login:\n  address: {limit}\n  account: {limit}\n  failed_attempts: {limit}\n\
             rc_joins:\n  local: {limit}\n  remote: {limit}\n\
             rc_invites:\n  per_room: {limit}\n  per_user: {limit}\n  per_issuer: {limit}\n"
        );
        std::fs::write(self.config(), yaml).map_err(|e| e.to_string())?;
        let log = std::fs::File::create(self.dir.path().join("synapse.log"))
            .map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(self.venv.join("bin/python"))
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(self.config())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("cannot run Synapse: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(90);
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                return Err(format!("Synapse exited ({status}): {}", self.log_tail()));
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && self.get("/_matrix/client/versions", None).status == 200
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("Synapse did not answer: {}", self.log_tail()))
    }

    /// The end of Synapse's log (for failure messages).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("synapse.log")).unwrap_or_default();
        let start = text.len().saturating_sub(3000);
        let mut cut = start;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text[cut..].to_string()
    }

    /// Stops the server (SIGTERM) and starts it again on the same port and database.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        self.launch()
    }

    /// Stops the server; [`Synapse::restart`] brings it back.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_child(&mut c, Duration::from_secs(15));
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn call(&self, method: &str, path: &str, token: Option<&str>, body: &str) -> HttpReply {
        let auth = token.map(|t| format!("Authorization: Bearer {t}"));
        let headers: Vec<&str> = auth.iter().map(String::as_str).collect();
        http(&self.addr(), method, path, &headers, body)
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> HttpReply {
        self.call("GET", path, token, "")
    }

    pub fn post(&self, path: &str, token: Option<&str>, body: &Value) -> HttpReply {
        self.call("POST", path, token, &body.to_string())
    }

    pub fn put(&self, path: &str, token: Option<&str>, body: &Value) -> HttpReply {
        self.call("PUT", path, token, &body.to_string())
    }

    /// Registers `user` through the admin API (shared-secret HMAC); returns its access token.
    #[allow(clippy::expect_used)]
    pub fn register(&self, user: &str, password: &str) -> String {
        let nonce = self.get("/_synapse/admin/v1/register", None).json()["nonce"]
            .as_str()
            .expect("a registration nonce")
            .to_string();
        let key = ring::hmac::Key::new(
            ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            SHARED_SECRET.as_bytes(),
        );
        let message = format!("{nonce}\0{user}\0{password}\0notadmin");
        let mac: String = ring::hmac::sign(&key, message.as_bytes())
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let reply = self.post(
            "/_synapse/admin/v1/register",
            None,
            &json!({"nonce": nonce, "username": user, "password": password, "admin": false, "mac": mac}),
        );
        assert_eq!(reply.status, 200, "register {user}: {}", reply.body);
        reply.json()["access_token"]
            .as_str()
            .expect("an access token")
            .to_string()
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An ngircd IRC server (`irc.hermes.test`) without PAM, DNS or ident lookups.
pub struct Ngircd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    program: PathBuf,
    pub port: u16,
}

impl Ngircd {
    pub fn start() -> Result<Ngircd, String> {
        let program = [
            "/usr/sbin/ngircd",
            "/usr/bin/ngircd",
            "/usr/local/sbin/ngircd",
        ]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or("ngircd is not installed (run scripts/setup-peers, or apt-get install ngircd)")?;
        let mut last = String::new();
        for _ in 0..3 {
            let mut s = Ngircd {
                child: None,
                dir: tempfile::tempdir().map_err(|e| e.to_string())?,
                program: program.clone(),
                port: free_port()?,
            };
            match s.launch() {
                Ok(()) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(format!("ngircd did not start: {last}"))
    }

    fn launch(&mut self) -> Result<(), String> {
        let conf = self.dir.path().join("ngircd.conf");
        std::fs::write(
            &conf,
            format!(
                "[Global]\nName = irc.hermes.test\nInfo = Hermes test server\nListen = 127.0.0.1\nPorts = {}\nMotdPhrase = \"Hermes test\"\n[Limits]\nMaxNickLength = 30\n[Options]\nPAM = no\nDNS = no\nIdent = no\n",
                self.port
            ),
        )
        .map_err(|e| e.to_string())?;
        let log =
            std::fs::File::create(self.dir.path().join("ngircd.log")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        self.child = Some(
            Command::new(&self.program)
                .arg("-n")
                .arg("-f")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log2)
                .spawn()
                .map_err(|e| format!("cannot run ngircd: {e}"))?,
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                let log =
                    std::fs::read_to_string(self.dir.path().join("ngircd.log")).unwrap_or_default();
                return Err(format!("ngircd exited ({status}): {log}"));
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("ngircd did not listen".into())
    }

    /// Stops the server (every client is disconnected) and starts it again on the same port.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        self.launch()
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_child(&mut c, Duration::from_secs(10));
        }
    }
}

impl Drop for Ngircd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A blocking IRC client for tests: registers a nick, joins, sends and waits for lines.
pub struct IrcClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    pub nick: String,
    /// Every line received, in order.
    pub seen: Vec<String>,
}

impl IrcClient {
    #[allow(clippy::expect_used)]
    pub fn connect(port: u16, nick: &str) -> IrcClient {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to ngircd");
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let mut c = IrcClient {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
            nick: nick.to_string(),
            seen: Vec::new(),
        };
        c.send(&format!("NICK {nick}"));
        c.send(&format!("USER {nick} 0 * :{nick}"));
        c.wait_line(" 001 ", Duration::from_secs(20));
        c
    }

    #[allow(clippy::expect_used)]
    pub fn send(&mut self, line: &str) {
        self.writer
            .write_all(format!("{line}\r\n").as_bytes())
            .expect("write to ngircd");
    }

    /// Reads lines until one contains `needle` (answering PINGs); panics after `timeout`.
    pub fn wait_line(&mut self, needle: &str, timeout: Duration) -> String {
        self.try_wait_line(needle, timeout)
            .unwrap_or_else(|| panic!("no line with {needle:?}; saw {:#?}", self.seen))
    }

    /// As [`IrcClient::wait_line`], `None` after `timeout`.
    pub fn try_wait_line(&mut self, needle: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => return None,
                Ok(_) => {
                    let line = line.trim_end().to_string();
                    if let Some(rest) = line.strip_prefix("PING ") {
                        self.send(&format!("PONG {rest}"));
                    }
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return Some(line);
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    // A partial line stays in the reader's buffer.
                }
                Err(_) => return None,
            }
        }
        None
    }

    /// The `PRIVMSG` texts received from `from` to `to`, in order.
    pub fn privmsgs(&self, from: &str, to: &str) -> Vec<String> {
        let head = format!(":{from}!");
        let mid = format!(" PRIVMSG {to} :");
        self.seen
            .iter()
            .filter(|l| l.starts_with(&head))
            .filter_map(|l| l.split_once(&mid).map(|(_, t)| t.to_string()))
            .collect()
    }
}
