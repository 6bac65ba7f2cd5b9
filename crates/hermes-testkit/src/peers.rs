//! Real chat servers for end-to-end tests, each started in its own temporary directory on a
//! free loopback port and stopped when dropped: [`Synapse`] (the Matrix homeserver, from the
//! venv `scripts/setup-peers` makes in the user's cache), [`Ngircd`] (Debian's IRC server) and
//! [`MailServer`] (Debian's Dovecot for IMAP behind aiosmtpd for SMTP). `start` returns
//! `Err(reason)` when the server is not installed, so a test can print why it skips.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
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

/// The SMTP side of [`MailServer`]: aiosmtpd with AUTH offered on plain connections (the test
/// server has no TLS), every accepted mail recorded as `NNNN.eml` (plus `NNNN.json`: envelope
/// and login) and recipients `@localhost` delivered to Dovecot over LMTP, one transaction per
/// recipient (LMTP answers DATA once per recipient, smtplib reads only the first answer).
const SMTPD_PY: &str = r#"
import asyncio, json, os, smtplib, sys
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

host, port, lmtp_port, outbox, passwd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
users = {}
for line in open(passwd):
    name, _, pw = line.strip().partition(":{PLAIN}")
    if name:
        users[name] = pw

def authenticator(server, session, envelope, mechanism, auth_data):
    if not isinstance(auth_data, LoginPassword):
        return AuthResult(success=False, handled=False)
    login = auth_data.login.decode()
    ok = users.get(login.split("@")[0]) == auth_data.password.decode()
    return AuthResult(success=ok, auth_data=login if ok else None)

class Handler:
    async def handle_DATA(self, server, session, envelope):
        n = len([f for f in os.listdir(outbox) if f.endswith(".eml")])
        base = os.path.join(outbox, "%04d" % n)
        with open(base + ".json.tmp", "w") as f:
            json.dump({"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos,
                       "login": session.auth_data if isinstance(session.auth_data, str) else None}, f)
        os.rename(base + ".json.tmp", base + ".json")
        with open(base + ".eml.tmp", "wb") as f:
            f.write(envelope.original_content)
        os.rename(base + ".eml.tmp", base + ".eml")
        refused = {}
        local = [r for r in envelope.rcpt_tos if r.lower().endswith("@localhost")]
        if local:
            with smtplib.LMTP("127.0.0.1", lmtp_port) as lmtp:
                for rcpt in local:
                    try:
                        lmtp.sendmail(envelope.mail_from, [rcpt], envelope.original_content)
                    except smtplib.SMTPException as e:
                        refused[rcpt] = str(e)
        if refused:
            return "550 some recipients refused: %r" % (refused,)
        return "250 OK"

async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(Handler(), authenticator=authenticator, auth_require_tls=False,
                     auth_required=False, hostname="smtp.hermes.test"),
        host, port)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"#;

/// One mail the test SMTP server accepted.
#[derive(Debug, Clone)]
pub struct RecordedMail {
    pub mail_from: String,
    pub rcpt_tos: Vec<String>,
    /// The SMTP login the client used, if any.
    pub login: Option<String>,
    pub raw: String,
}

impl RecordedMail {
    /// The first header `name` (case-insensitive), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.raw.split("\r\n\r\n").next().unwrap_or_default();
        let mut value: Option<String> = None;
        for line in head.split("\r\n") {
            if line.starts_with([' ', '\t']) {
                if let Some(v) = value.as_mut() {
                    v.push(' ');
                    v.push_str(line.trim());
                }
                continue;
            }
            if value.is_some() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.trim().eq_ignore_ascii_case(name)
            {
                value = Some(v.trim().to_string());
            }
        }
        value
    }

    /// Everything after the header.
    pub fn body(&self) -> &str {
        self.raw.split_once("\r\n\r\n").map_or("", |(_, b)| b)
    }

    /// The body of a single-part mail, its transfer encoding undone.
    pub fn text(&self) -> String {
        let encoding = self
            .header("Content-Transfer-Encoding")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let body = self.body();
        match encoding.as_str() {
            "quoted-printable" => {
                let joined = body.replace("=\r\n", "");
                let bytes = joined.as_bytes();
                let mut out = Vec::with_capacity(bytes.len());
                let mut i = 0;
                while i < bytes.len() {
                    if bytes[i] == b'='
                        && let Some(hex) = joined.get(i + 1..i + 3)
                        && let Ok(b) = u8::from_str_radix(hex, 16)
                    {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    out.push(bytes[i]);
                    i += 1;
                }
                String::from_utf8_lossy(&out).into_owned()
            }
            "base64" => {
                use base64::Engine;
                let compact: String = body.split_whitespace().collect();
                base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default()
            }
            _ => body.to_string(),
        }
    }
}

/// A mail system on loopback: Dovecot (IMAP, plain, `PLAIN`/`LOGIN` auth, users from a
/// passwd file, Maildir in the temp dir, LMTP for delivery) and aiosmtpd in front of it (see
/// [`SMTPD_PY`]). Mail for `user@localhost` lands in that user's INBOX; every mail is recorded.
/// Dovecot runs as the current user, or (as root) with Debian's `dovenull`/`dovecot` users and
/// the mail owned by `nobody`.
pub struct MailServer {
    dovecot: Option<Child>,
    smtpd: Option<Child>,
    dir: tempfile::TempDir,
    python: PathBuf,
    pub imap_port: u16,
    pub lmtp_port: u16,
    pub smtp_port: u16,
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl MailServer {
    /// Starts both servers with the given `(user, password)` mailboxes; `Err` says why it
    /// cannot run here.
    pub fn start(users: &[(&str, &str)]) -> Result<MailServer, String> {
        for program in [
            "/usr/sbin/dovecot",
            "/usr/lib/dovecot/imap",
            "/usr/lib/dovecot/lmtp",
        ] {
            if !PathBuf::from(program).exists() {
                return Err(format!(
                    "{program} is missing (run scripts/setup-peers, or apt-get install dovecot-imapd dovecot-lmtpd)"
                ));
            }
        }
        let python = peers_dir()
            .map(|d| d.join("aiosmtpd/bin/python"))
            .ok_or("no cache directory (HOME is not set)")?;
        if !python.exists() {
            return Err(format!(
                "aiosmtpd is not installed in {} (run scripts/setup-peers)",
                python.display()
            ));
        }
        let mut last = String::new();
        for _ in 0..3 {
            let mut s = MailServer {
                dovecot: None,
                smtpd: None,
                dir: tempfile::tempdir().map_err(|e| e.to_string())?,
                python: python.clone(),
                imap_port: free_port()?,
                lmtp_port: free_port()?,
                smtp_port: free_port()?,
            };
            let prepared = s.prepare(users);
            match prepared
                .and_then(|()| s.launch_dovecot())
                .and_then(|()| s.launch_smtpd())
            {
                Ok(()) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(format!("the mail servers did not start: {last}"))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn prepare(&self, users: &[(&str, &str)]) -> Result<(), String> {
        let d = self.dir.path();
        for sub in ["run", "state", "mail", "outbox"] {
            std::fs::create_dir_all(d.join(sub)).map_err(|e| e.to_string())?;
        }
        let passwd: String = users
            .iter()
            .map(|(u, p)| format!("{u}:{{PLAIN}}{p}\n"))
            .collect();
        std::fs::write(self.path("passwd"), passwd).map_err(|e| e.to_string())?;
        let root = command_output("id", &["-u"]).as_deref() == Some("0");
        let (login_user, internal, group_line, chroot, mail_user, mail_group) = if root {
            (
                "dovenull".to_string(),
                "dovecot".to_string(),
                String::new(),
                "",
                "nobody".to_string(),
                "nogroup".to_string(),
            )
        } else {
            let user = command_output("id", &["-un"]).ok_or("cannot tell the user name")?;
            let group = command_output("id", &["-gn"]).ok_or("cannot tell the group name")?;
            (
                user.clone(),
                user.clone(),
                format!("default_internal_group = {group}\n"),
                "service anvil {\n  chroot =\n}\n",
                user,
                group,
            )
        };
        let login_chroot = if root { "" } else { "  chroot =\n" };
        let conf = format!(
            "base_dir = {d}/run\nstate_dir = {d}/state\ninstance_name = dovecot-test-{imap}\nlog_path = {d}/dovecot.log\n\
             protocols = imap lmtp\nlisten = 127.0.0.1\nssl = no\ndisable_plaintext_auth = no\nauth_mechanisms = plain login\n\
             mail_location = maildir:{d}/mail/%n\ndefault_login_user = {login_user}\ndefault_internal_user = {internal}\n{group_line}\
             passdb {{\n  driver = passwd-file\n  args = scheme=PLAIN username_format=%n {d}/passwd\n}}\n\
             userdb {{\n  driver = static\n  args = uid={mail_user} gid={mail_group} home={d}/mail/%n\n}}\n\
             {chroot}\
             service imap-login {{\n{login_chroot}  inet_listener imap {{\n    address = 127.0.0.1\n    port = {imap}\n  }}\n  inet_listener imaps {{\n    port = 0\n  }}\n}}\n\
             service lmtp {{\n  inet_listener lmtp {{\n    address = 127.0.0.1\n    port = {lmtp}\n  }}\n}}\n\
             protocol lmtp {{\n  postmaster_address = postmaster@localhost\n}}\n",
            d = d.display(),
            imap = self.imap_port,
            lmtp = self.lmtp_port,
        );
        std::fs::write(self.path("dovecot.conf"), conf).map_err(|e| e.to_string())?;
        std::fs::write(self.path("smtpd.py"), SMTPD_PY).map_err(|e| e.to_string())?;
        if root {
            // Dovecot's unprivileged processes must reach their sockets and the mail.
            let _ = Command::new("chmod")
                .arg("755")
                .arg(d)
                .arg(d.join("run"))
                .status();
            let _ = Command::new("chown")
                .arg("nobody:nogroup")
                .arg(d.join("mail"))
                .status();
        }
        Ok(())
    }

    fn wait_port(
        child: &mut Option<Child>,
        port: u16,
        what: &str,
        log: &Path,
    ) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(c) = child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                let log = std::fs::read_to_string(log).unwrap_or_default();
                return Err(format!("{what} exited ({status}): {log}"));
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("{what} did not listen on {port}"))
    }

    fn launch_dovecot(&mut self) -> Result<(), String> {
        let log = std::fs::File::create(self.path("dovecot.out")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        use std::os::unix::process::CommandExt;
        self.dovecot = Some(
            Command::new("/usr/sbin/dovecot")
                // A group of its own: its IMAP processes outlive the master, a restart must
                // end them too (as a real server restart ends every session).
                .process_group(0)
                .arg("-F")
                .arg("-c")
                .arg(self.path("dovecot.conf"))
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log2)
                .spawn()
                .map_err(|e| format!("cannot run dovecot: {e}"))?,
        );
        let out = self.path("dovecot.out");
        Self::wait_port(&mut self.dovecot, self.imap_port, "dovecot", &out)?;
        Self::wait_port(&mut self.dovecot, self.lmtp_port, "dovecot", &out)
    }

    fn launch_smtpd(&mut self) -> Result<(), String> {
        let log = std::fs::File::create(self.path("smtpd.log")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        self.smtpd = Some(
            Command::new(&self.python)
                .arg(self.path("smtpd.py"))
                .arg("127.0.0.1")
                .arg(self.smtp_port.to_string())
                .arg(self.lmtp_port.to_string())
                .arg(self.path("outbox"))
                .arg(self.path("passwd"))
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log2)
                .spawn()
                .map_err(|e| format!("cannot run aiosmtpd: {e}"))?,
        );
        let log = self.path("smtpd.log");
        Self::wait_port(&mut self.smtpd, self.smtp_port, "aiosmtpd", &log)
    }

    /// Stops Dovecot (every IMAP client is disconnected) and starts it again on the same
    /// ports and mail.
    pub fn restart_imap(&mut self) -> Result<(), String> {
        self.stop_imap();
        self.launch_dovecot()
    }

    /// Stops Dovecot; [`MailServer::restart_imap`] brings it back.
    pub fn stop_imap(&mut self) {
        if let Some(mut c) = self.dovecot.take() {
            let group = format!("-{}", c.id());
            stop_child(&mut c, Duration::from_secs(10));
            let _ = Command::new("kill")
                .args(["-TERM", "--", &group])
                .stderr(Stdio::null())
                .status();
        }
        // The master's children can outlive it for a moment; wait for the port to close.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && TcpStream::connect(("127.0.0.1", self.imap_port)).is_ok()
        {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Submits `raw` (CRLF or LF lines) over SMTP from `from` to `to` (no login); panics when
    /// the server refuses.
    #[allow(clippy::expect_used)]
    pub fn submit(&self, from: &str, to: &[&str], raw: &str) {
        let raw = raw.replace("\r\n", "\n").replace('\n', "\r\n");
        let stream =
            TcpStream::connect(("127.0.0.1", self.smtp_port)).expect("connect to the SMTP server");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("set a timeout");
        let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
        let mut writer = stream;
        let mut expect = |code: &str| {
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("an SMTP reply");
                assert!(line.starts_with(code), "SMTP: wanted {code}, got {line:?}");
                if line.as_bytes().get(3) != Some(&b'-') {
                    break;
                }
            }
        };
        expect("220");
        let mut say = |line: &str, code: &str, expect: &mut dyn FnMut(&str)| {
            writer
                .write_all(format!("{line}\r\n").as_bytes())
                .expect("write to the SMTP server");
            expect(code);
        };
        say("EHLO test.local", "250", &mut expect);
        say(&format!("MAIL FROM:<{from}>"), "250", &mut expect);
        for rcpt in to {
            say(&format!("RCPT TO:<{rcpt}>"), "250", &mut expect);
        }
        say("DATA", "354", &mut expect);
        let mut data = String::new();
        for line in raw.trim_end().split("\r\n") {
            if line.starts_with('.') {
                data.push('.');
            }
            data.push_str(line);
            data.push_str("\r\n");
        }
        data.push('.');
        say(&data, "250", &mut expect);
        say("QUIT", "221", &mut expect);
    }

    /// The sequence numbers of `user`'s unseen mail in INBOX (an IMAP `SEARCH UNSEEN`).
    #[allow(clippy::expect_used)]
    pub fn unseen(&self, user: &str, password: &str) -> Vec<u32> {
        let stream =
            TcpStream::connect(("127.0.0.1", self.imap_port)).expect("connect to the IMAP server");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("set a timeout");
        let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
        let mut writer = stream;
        let mut lines = Vec::new();
        let mut read_until = |tag: &str, lines: &mut Vec<String>| loop {
            let mut line = String::new();
            let n = reader.read_line(&mut line).expect("an IMAP line");
            assert!(n > 0, "the IMAP server closed the connection");
            let done = line.starts_with(tag);
            lines.push(line);
            if done {
                break;
            }
        };
        read_until("* OK", &mut lines);
        for (tag, command) in [
            ("a1", format!("LOGIN {user} {password}")),
            ("a2", "SELECT INBOX".to_string()),
            ("a3", "SEARCH UNSEEN".to_string()),
            ("a4", "LOGOUT".to_string()),
        ] {
            writer
                .write_all(format!("{tag} {command}\r\n").as_bytes())
                .expect("write to the IMAP server");
            read_until(&format!("{tag} "), &mut lines);
        }
        lines
            .iter()
            .find_map(|l| l.strip_prefix("* SEARCH"))
            .unwrap_or_else(|| panic!("no SEARCH answer: {lines:?}"))
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect()
    }

    /// Every mail the SMTP server accepted, in order.
    pub fn received(&self) -> Vec<RecordedMail> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.path("outbox"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "eml"))
            .collect();
        names.sort();
        names
            .into_iter()
            .filter_map(|eml| {
                let meta: Value = serde_json::from_str(
                    &std::fs::read_to_string(eml.with_extension("json")).ok()?,
                )
                .ok()?;
                Some(RecordedMail {
                    mail_from: meta["mail_from"].as_str().unwrap_or_default().to_string(),
                    rcpt_tos: meta["rcpt_tos"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect(),
                    login: meta["login"].as_str().map(str::to_string),
                    raw: String::from_utf8_lossy(&std::fs::read(&eml).ok()?).into_owned(),
                })
            })
            .collect()
    }

    /// Waits until a mail matching `pred` has been accepted.
    pub fn wait_received(
        &self,
        timeout: Duration,
        pred: impl Fn(&RecordedMail) -> bool,
    ) -> Option<RecordedMail> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(m) = self.received().into_iter().find(|m| pred(m)) {
                return Some(m);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The logs of both servers (for failure messages).
    pub fn logs(&self) -> String {
        ["dovecot.log", "dovecot.out", "smtpd.log"]
            .iter()
            .map(|n| {
                format!(
                    "--- {n}\n{}",
                    std::fs::read_to_string(self.path(n)).unwrap_or_default()
                )
            })
            .collect()
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.smtpd.take() {
            stop_child(&mut c, Duration::from_secs(5));
        }
        self.stop_imap();
    }
}

impl Drop for MailServer {
    fn drop(&mut self) {
        self.stop();
    }
}
