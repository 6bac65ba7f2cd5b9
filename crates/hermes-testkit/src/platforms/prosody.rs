//! A real XMPP server for end-to-end tests, [`Prosody`] (Debian's `prosody`, installed by
//! `scripts/setup-peers`): a throwaway instance in a temporary directory on a free loopback
//! port, virtual host `localhost` with users registered by `prosodyctl`, a MUC component on
//! `conference.localhost` (rooms unlocked at creation, occupants' real JIDs shown), no TLS
//! (plain c2s, PLAIN and SCRAM allowed on it). Prosody refuses to run as root: as root it runs
//! as the `prosody` user (`setpriv`), with the directory handed to that user. And
//! [`XmppClient`], a tiny blocking client that logs in as a person, joins rooms, sends
//! messages and waits for the bot's answers.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;

/// The virtual host and the MUC service.
pub const DOMAIN: &str = "localhost";
pub const MUC: &str = "conference.localhost";

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A running Prosody.
pub struct Prosody {
    child: Option<Child>,
    dir: tempfile::TempDir,
    root: bool,
    pub port: u16,
}

impl Prosody {
    /// Starts a server with these `(user, password)` accounts on `localhost`; `Err` says why
    /// it cannot run here (not installed, no `prosody` user when root).
    pub fn start(users: &[(&str, &str)]) -> Result<Prosody, String> {
        for program in ["/usr/bin/prosody", "/usr/bin/prosodyctl"] {
            if !Path::new(program).exists() {
                return Err(format!(
                    "{program} is missing (run scripts/setup-peers, or apt-get install prosody lua-unbound)"
                ));
            }
        }
        let root = is_root();
        if root
            && !Command::new("id")
                .arg("prosody")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        {
            return Err("running as root and there is no `prosody` user to run Prosody as".into());
        }
        let mut last = String::new();
        for _ in 0..3 {
            let mut p = Prosody {
                child: None,
                dir: tempfile::tempdir().map_err(|e| e.to_string())?,
                root,
                port: free_port()?,
            };
            match p.prepare(users).and_then(|()| p.launch()) {
                Ok(()) => return Ok(p),
                Err(e) => last = e,
            }
        }
        Err(format!("prosody did not start: {last}"))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn config(&self) -> PathBuf {
        self.path("prosody.cfg.lua")
    }

    fn prepare(&self, users: &[(&str, &str)]) -> Result<(), String> {
        let d = self.dir.path().display().to_string();
        for sub in ["data", "certs"] {
            std::fs::create_dir_all(self.path(sub)).map_err(|e| e.to_string())?;
        }
        let config = format!(
            r#"pidfile = "{d}/prosody.pid"
data_path = "{d}/data"
certificates = "{d}/certs"
log = {{ {{ levels = {{ min = "info" }}, to = "file", filename = "{d}/prosody.log" }} }}
interfaces = {{ "127.0.0.1" }}
local_interfaces = {{ "127.0.0.1" }}
c2s_interfaces = {{ "127.0.0.1" }}
c2s_ports = {{ {port} }}
c2s_direct_tls_ports = {{}}
s2s_ports = {{}}
s2s_direct_tls_ports = {{}}
http_ports = {{}}
https_ports = {{}}
component_ports = {{}}
c2s_require_encryption = false
allow_unencrypted_plain_auth = true
authentication = "internal_plain"
storage = "internal"
modules_enabled = {{ "roster", "saslauth", "disco", "ping" }}
modules_disabled = {{ "s2s", "tls" }}
VirtualHost "{DOMAIN}"
Component "{MUC}" "muc"
  muc_room_locking = false
  muc_room_default_public_jids = true
"#,
            port = self.port
        );
        std::fs::write(self.config(), config).map_err(|e| e.to_string())?;
        if self.root {
            let ok = Command::new("chown")
                .args(["-R", "prosody:prosody"])
                .arg(self.dir.path())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err("cannot hand the directory to the prosody user".into());
            }
        }
        for (user, password) in users {
            self.register(user, password)?;
        }
        Ok(())
    }

    /// Registers an account (also while the server runs: internal storage is plain files).
    pub fn register(&self, user: &str, password: &str) -> Result<(), String> {
        let out = Command::new("/usr/bin/prosodyctl")
            .arg("--config")
            .arg(self.config())
            .args(["register", user, DOMAIN, password])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run prosodyctl: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "prosodyctl register {user}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    fn launch(&mut self) -> Result<(), String> {
        let out = std::fs::File::create(self.path("prosody.out")).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = if self.root {
            // Prosody refuses root; setpriv execs it, so the child's PID is Prosody's.
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=prosody",
                "--regid=prosody",
                "--clear-groups",
                "/usr/bin/prosody",
            ]);
            c
        } else {
            Command::new("/usr/bin/prosody")
        };
        self.child = Some(
            cmd.arg("-F")
                .arg("--config")
                .arg(self.config())
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .spawn()
                .map_err(|e| format!("cannot run prosody: {e}"))?,
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                return Err(format!("prosody exited ({status}): {}", self.logs()));
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("prosody did not listen: {}", self.logs()))
    }

    /// The server's output and log.
    pub fn logs(&self) -> String {
        let read = |n: &str| std::fs::read_to_string(self.path(n)).unwrap_or_default();
        format!("{}{}", read("prosody.out"), read("prosody.log"))
    }

    /// Stops the server (every client is disconnected) and starts it again on the same port
    /// with the same accounts; rooms are gone (they are not persistent).
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        self.launch()
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && c.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Prosody {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A message a test client received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmppMessage {
    pub from: String,
    /// `chat`, `groupchat`, ...
    pub kind: String,
    pub id: Option<String>,
    /// `None` for messages without a body (chat states).
    pub body: Option<String>,
    /// The whole stanza as received.
    pub raw: String,
}

/// A blocking XMPP client for tests: logs in with PLAIN on the plain stream, binds, sends
/// presence; then sends messages and collects every stanza it receives.
pub struct XmppClient {
    stream: TcpStream,
    /// Received and not yet split into stanzas.
    pending: String,
    /// Every message received, in order.
    pub messages: Vec<XmppMessage>,
    /// Every other stanza received (presence, iq), raw.
    pub others: Vec<String>,
    pub jid: String,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    for quote in ['\'', '"'] {
        let key = format!(" {name}={quote}");
        if let Some(i) = tag.find(&key) {
            let rest = &tag[i + key.len()..];
            return rest.find(quote).map(|e| unescape(&rest[..e]));
        }
    }
    None
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;")
}

/// Splits complete top-level elements off the front of `buf` (after the stream header).
fn split_stanzas(buf: &mut String) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let trimmed = buf.trim_start();
        let skip = buf.len() - trimmed.len();
        buf.drain(..skip);
        if buf.starts_with("<?") {
            match buf.find("?>") {
                Some(e) => {
                    buf.drain(..e + 2);
                    continue;
                }
                None => return out,
            }
        }
        if buf.starts_with("<stream:stream") {
            match buf.find('>') {
                Some(e) => {
                    buf.drain(..=e);
                    continue;
                }
                None => return out,
            }
        }
        if buf.starts_with("</stream:stream>") {
            buf.drain(.."</stream:stream>".len());
            continue;
        }
        // Walk tags, counting depth, until the first element closes.
        let bytes = buf.as_bytes();
        let mut depth = 0i32;
        let mut i = 0;
        let mut end = None;
        while i < bytes.len() {
            if bytes[i] != b'<' {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            let mut quote = None;
            while j < bytes.len() {
                match (quote, bytes[j]) {
                    (None, b'\'' | b'"') => quote = Some(bytes[j]),
                    (Some(q), c) if c == q => quote = None,
                    (None, b'>') => break,
                    _ => {}
                }
                j += 1;
            }
            if j >= bytes.len() {
                break;
            }
            if bytes[i + 1] == b'/' {
                depth -= 1;
            } else if bytes[j - 1] != b'/' {
                depth += 1;
            }
            i = j + 1;
            if depth <= 0 {
                end = Some(i);
                break;
            }
        }
        match end {
            Some(e) => out.push(buf.drain(..e).collect()),
            None => return out,
        }
    }
}

impl XmppClient {
    /// Logs `user@localhost` in on `port` with resource `test`.
    pub fn connect(port: u16, user: &str, password: &str) -> Result<XmppClient, String> {
        let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| e.to_string())?;
        let mut c = XmppClient {
            stream,
            pending: String::new(),
            messages: Vec::new(),
            others: Vec::new(),
            jid: String::new(),
        };
        let header = format!(
            "<?xml version='1.0'?><stream:stream to='{DOMAIN}' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"
        );
        let wait = Duration::from_secs(10);
        c.send(&header);
        c.wait_stanza(|s| s.contains("features"), wait)?;
        let auth =
            base64::engine::general_purpose::STANDARD.encode(format!("\0{user}\0{password}"));
        c.send(&format!(
            "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{auth}</auth>"
        ));
        let answer = c.wait_stanza(
            |s| s.starts_with("<success") || s.starts_with("<failure"),
            wait,
        )?;
        if !answer.starts_with("<success") {
            return Err(format!("login of {user} refused: {answer}"));
        }
        c.send(&header);
        c.wait_stanza(|s| s.contains("features"), wait)?;
        c.send("<iq type='set' id='b1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>test</resource></bind></iq>");
        let bound = c.wait_stanza(|s| s.contains("id='b1'") || s.contains("id=\"b1\""), wait)?;
        c.jid = bound
            .split("<jid>")
            .nth(1)
            .and_then(|r| r.split("</jid>").next())
            .ok_or_else(|| format!("no JID in {bound}"))?
            .to_string();
        c.send("<presence/>");
        Ok(c)
    }

    #[allow(clippy::expect_used)]
    pub fn send(&mut self, data: &str) {
        self.stream
            .write_all(data.as_bytes())
            .expect("write to prosody");
    }

    /// Sends a chat message.
    pub fn send_chat(&mut self, to: &str, body: &str) {
        self.send(&format!(
            "<message to='{}' type='chat'><body>{}</body></message>",
            escape(to),
            escape(body)
        ));
    }

    /// Sends a message to a room.
    pub fn send_groupchat(&mut self, room: &str, body: &str) {
        self.send(&format!(
            "<message to='{}' type='groupchat'><body>{}</body></message>",
            escape(room),
            escape(body)
        ));
    }

    /// Joins `room` as `nick` and waits for the room to confirm.
    pub fn join(&mut self, room: &str, nick: &str) -> Result<(), String> {
        self.send(&format!(
            "<presence to='{}/{}'><x xmlns='http://jabber.org/protocol/muc'><history maxstanzas='0'/></x></presence>",
            escape(room),
            escape(nick)
        ));
        let own = format!("from='{room}/{nick}'");
        self.wait_stanza(
            |s| s.starts_with("<presence") && s.contains(&own) && s.contains("code='110'"),
            Duration::from_secs(10),
        )
        .map(|_| ())
    }

    /// Reads what has arrived (at most until `deadline`) into `messages` / `others`; returns
    /// the stanzas read.
    fn pump(&mut self, deadline: Instant) -> Vec<String> {
        let mut buf = [0u8; 16 * 1024];
        let mut got = Vec::new();
        while Instant::now() < deadline {
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.pending.push_str(&String::from_utf8_lossy(&buf[..n]));
                    let stanzas = split_stanzas(&mut self.pending);
                    if !stanzas.is_empty() {
                        got.extend(stanzas);
                        break;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break;
                }
                Err(_) => break,
            }
        }
        for s in &got {
            if s.starts_with("<message") {
                let head = &s[..s.find('>').unwrap_or(s.len())];
                let body = s
                    .split_once("<body>")
                    .and_then(|(_, r)| r.split_once("</body>"))
                    .map(|(b, _)| unescape(b));
                self.messages.push(XmppMessage {
                    from: attr(head, "from").unwrap_or_default(),
                    kind: attr(head, "type").unwrap_or_else(|| "normal".into()),
                    id: attr(head, "id"),
                    body,
                    raw: s.clone(),
                });
            } else {
                self.others.push(s.clone());
            }
        }
        got
    }

    /// Waits for a stanza `pred` accepts; `Err` after `timeout`.
    pub fn wait_stanza(
        &mut self,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(s) = self.pump(deadline).into_iter().find(|s| pred(s)) {
                return Ok(s);
            }
        }
        Err(format!(
            "no such stanza within {timeout:?}; pending {:?}",
            self.pending
        ))
    }

    /// Waits until a stanza `pred` accepts has arrived, counting the ones already received
    /// (a room sends its occupants' presence before confirming a join).
    pub fn wait_seen(
        &mut self,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self
                .others
                .iter()
                .chain(self.messages.iter().map(|m| &m.raw))
                .find(|s| pred(s))
            {
                return Ok(s.clone());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "no such stanza within {timeout:?}; saw {:#?}",
                    self.others
                ));
            }
            self.pump(deadline);
        }
    }

    /// Waits until at least `n` messages with a body from `from` (bare JID or full) have
    /// arrived; returns them all.
    pub fn wait_bodies(&mut self, from: &str, n: usize, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let bodies = self.bodies_from(from);
            if bodies.len() >= n || Instant::now() >= deadline {
                return bodies;
            }
            self.pump(deadline);
        }
    }

    /// Bodies received from `from` (a bare JID matches any of its resources).
    pub fn bodies_from(&self, from: &str) -> Vec<String> {
        self.messages
            .iter()
            .filter(|m| m.from == from || m.from.split('/').next() == Some(from))
            .filter_map(|m| m.body.clone())
            .collect()
    }

    /// Reads for `d`, collecting whatever arrives.
    pub fn idle(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while Instant::now() < deadline {
            self.pump(deadline);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stanzas_are_split_at_their_ends() {
        let mut buf =
            "<?xml version='1.0'?><stream:stream a='b'><a x='>'/><b><c>t</c></b><partial>"
                .to_string();
        assert_eq!(
            split_stanzas(&mut buf),
            vec!["<a x='>'/>", "<b><c>t</c></b>"]
        );
        assert_eq!(buf, "<partial>");
        assert_eq!(
            attr("<m from='a&amp;b' type=\"chat\"", "type").as_deref(),
            Some("chat")
        );
        assert_eq!(attr("<m from='a&amp;b'", "from").as_deref(), Some("a&b"));
    }
}
