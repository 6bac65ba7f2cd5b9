//! A private OpenSSH server for the SSH backend's tests: Debian's `/usr/sbin/sshd` in the
//! foreground on a free loopback port, with a throwaway ed25519 host key, a throwaway user key
//! for the client (the only authorized key), a `known_hosts` file holding the host key, and the
//! remote user's `HOME` set to a directory of the test (`SetEnv`), so nothing of the real
//! `~/.ssh` or home is read or written. Restartable (stop + start cuts every connection, the
//! port and keys stay); stopped on drop.
//!
//! `start` fails with a reason (the tests then skip) where sshd is not installed or cannot run
//! (it needs root here for the privilege separation directory and the login).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// A running sshd and its files.
pub struct Sshd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    port: u16,
}

fn keygen(path: &Path, comment: &str) -> Result<(), String> {
    let o = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ssh-keygen: {e} (apt-get install openssh-client)"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ssh-keygen failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// The name of the user running the tests (the one sshd lets in).
pub fn current_user() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

impl Sshd {
    /// Generates the keys and the config, and starts sshd.
    pub fn start() -> Result<Sshd, String> {
        if !Path::new(SSHD).is_file() {
            return Err(
                "sshd is not installed (scripts/setup-peers installs openssh-server as root)"
                    .into(),
            );
        }
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        if !root {
            return Err("sshd needs root here (privilege separation, login)".into());
        }
        std::fs::create_dir_all("/run/sshd").map_err(|e| format!("/run/sshd: {e}"))?;
        let dir = tempfile::Builder::new()
            .prefix("hermes-sshd-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let d = dir.path();
        keygen(&d.join("host_key"), "hermes-test-host")?;
        keygen(&d.join("user_key"), "hermes-test-user")?;
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys"))
            .map_err(|e| e.to_string())?;
        std::fs::create_dir_all(d.join("remote_home")).map_err(|e| e.to_string())?;
        let port = free_port()?;
        let host_pub =
            std::fs::read_to_string(d.join("host_key.pub")).map_err(|e| e.to_string())?;
        let mut fields = host_pub.split_whitespace();
        let (Some(kind), Some(key)) = (fields.next(), fields.next()) else {
            return Err("unexpected host key file".into());
        };
        std::fs::write(
            d.join("known_hosts"),
            format!("[127.0.0.1]:{port} {kind} {key}\n"),
        )
        .map_err(|e| e.to_string())?;
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n\
                 AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 PermitRootLogin prohibit-password\nPidFile {d}/sshd.pid\n\
                 SetEnv HOME={d}/remote_home\nLogLevel ERROR\nMaxSessions 50\nMaxStartups 50\n",
                d = d.display()
            ),
        )
        .map_err(|e| e.to_string())?;
        let mut sshd = Sshd {
            child: None,
            dir,
            port,
        };
        sshd.spawn()?;
        Ok(sshd)
    }

    fn spawn(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("sshd.log"))
            .map_err(|e| e.to_string())?;
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(self.dir.path().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start sshd: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut()
                && c.try_wait().ok().flatten().is_some()
            {
                return Err(format!("sshd exited: {}", self.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("sshd did not listen: {}", self.log_tail()))
    }

    /// Stops sshd and every session process it started (the connections drop).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // The per-connection sshd processes outlive the listener; they are children of
            // it and carry this config path on their command line.
            let _ = Command::new("pkill")
                .args(["-TERM", "-P", &child.id().to_string()])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline
            && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops and starts sshd on the same port with the same keys.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        self.spawn()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The client's private key.
    pub fn user_key(&self) -> PathBuf {
        self.dir.path().join("user_key")
    }

    /// A known_hosts file with the server's host key.
    pub fn known_hosts(&self) -> PathBuf {
        self.dir.path().join("known_hosts")
    }

    /// The remote user's HOME.
    pub fn remote_home(&self) -> PathBuf {
        self.dir.path().join("remote_home")
    }

    /// The files of this server (keys, config, log, the remote home).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}
