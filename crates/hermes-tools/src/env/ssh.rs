//! The SSH backend: commands and file tools act on a remote host through the system OpenSSH
//! client, as the Python Hermes does. One authenticated connection per session is kept as a
//! ControlMaster socket in a private (0700) directory under the Hermes home's cache, with
//! `ControlPersist`, so each command is a cheap multiplexed `ssh` run; a master lost with a
//! dropped connection is re-established by the next command. Host keys are checked strictly
//! against the user's `known_hosts` (or `terminal.ssh_known_hosts`): an unknown or changed key
//! refuses the connection with the fix named. `BatchMode` keeps ssh from ever prompting; the
//! key is `terminal.ssh_key` (with `IdentitiesOnly`) or the agent's.
//!
//! Foreground commands run as `sh -c WRAPPER` on the remote side, which records the remote
//! process group under a per-command token so a timeout or kill signals it there (a killed
//! local client alone would leave it running). Background jobs run detached under `setsid`
//! with their output in a remote log ([`DetachedJobs`]), so they survive a dropped connection;
//! the process tool follows the log again after a reconnection. File tools go through the
//! remote shell ([`super::shell_fs`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::docker::CliOutput;
use super::ssh_scripts as scripts;
use super::{
    Backend, DetachedJobs, DetachedStatus, EnvError, ExecutionEnvironment, Prepared, RemoteSignal,
    ShellRequest, SshSettings, Stopper,
};

/// How long the master outlives its last command (seconds).
const CONTROL_PERSIST: &str = "300";
/// Limit of the connection and of small control commands (kill, status).
const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of a control command's output kept.
const OUTPUT_CAP: u64 = 64 * 1024;
/// Unix socket paths are limited to 108 bytes; ssh adds a 17-byte suffix while binding.
const MAX_SOCKET_PATH: usize = 88;

/// What the connection learned about the remote side.
#[derive(Debug, Clone)]
struct Remote {
    home: String,
    /// `bash` when the host has it, else `sh`.
    shell: &'static str,
}

/// The ssh invocation of one session, shared by its commands, signals and jobs.
#[derive(Debug)]
pub struct SshClient {
    settings: SshSettings,
    binary: String,
    known_hosts: PathBuf,
    socket: PathBuf,
    remote: Mutex<Option<Remote>>,
    /// Serialises (re)connections.
    connecting: tokio::sync::Mutex<()>,
    next_token: AtomicU64,
}

impl SshClient {
    /// `control_dir` holds the session's master socket (created 0700); `session_key` names it.
    pub fn new(
        settings: SshSettings,
        control_dir: &Path,
        session_key: &str,
        home_var: Option<String>,
    ) -> SshClient {
        let known_hosts = settings.known_hosts.clone().unwrap_or_else(|| {
            home_var
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".ssh/known_hosts"))
                .unwrap_or_else(|| PathBuf::from("~/.ssh/known_hosts"))
        });
        let name = format!(
            "{:016x}",
            fnv1a(
                format!(
                    "{session_key}|{}|{}|{}|{:?}",
                    settings.destination(),
                    settings.port,
                    std::process::id(),
                    std::time::SystemTime::now()
                )
                .as_bytes()
            )
        );
        let mut dir = control_dir.to_path_buf();
        if dir.join(&name).as_os_str().len() > MAX_SOCKET_PATH {
            #[allow(unsafe_code)]
            // SAFETY: getuid cannot fail and touches no memory.
            let uid = unsafe { libc::getuid() };
            dir = std::env::temp_dir().join(format!("hermes-ssh-{uid}"));
        }
        SshClient {
            binary: "ssh".into(),
            socket: dir.join(name),
            settings,
            known_hosts,
            remote: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            next_token: AtomicU64::new(1),
        }
    }

    pub fn settings(&self) -> &SshSettings {
        &self.settings
    }

    /// The known_hosts file host keys are checked against.
    pub fn known_hosts(&self) -> &Path {
        &self.known_hosts
    }

    /// The options every ssh run gets.
    fn base_args(&self) -> Vec<String> {
        let s = &self.settings;
        let mut a: Vec<String> = Vec::new();
        let mut opt = |o: String| {
            a.push("-o".into());
            a.push(o);
        };
        opt("BatchMode=yes".into());
        opt("StrictHostKeyChecking=yes".into());
        opt(format!("UserKnownHostsFile={}", self.known_hosts.display()));
        opt("ConnectTimeout=10".into());
        opt("ServerAliveInterval=5".into());
        opt("ServerAliveCountMax=3".into());
        opt(format!("ControlPath={}", self.socket.display()));
        if let Some(key) = &s.key {
            opt("IdentitiesOnly=yes".into());
            a.push("-i".into());
            a.push(key.display().to_string());
        }
        a.push("-p".into());
        a.push(s.port.to_string());
        a
    }

    /// A local `ssh` command running `line` remotely over the master (a direct connection
    /// when the master is gone).
    fn command(&self, line: &str) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.binary);
        command
            .args(self.base_args())
            .args(["-o", "ControlMaster=no", "-T", "--"])
            .arg(self.settings.destination())
            .arg(line)
            .stdin(Stdio::null());
        command
    }

    /// A blocking `ssh` of `line` for drop and abrupt exit (stdio null).
    fn blocking(&self, line: &str) -> std::process::Command {
        let mut command = std::process::Command::new(&self.binary);
        command
            .args(self.base_args())
            .args(["-o", "ControlMaster=no", "-T", "--"])
            .arg(self.settings.destination())
            .arg(line)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    /// Runs `line` remotely with bounded output, within `timeout`.
    async fn run(&self, line: &str, timeout: Duration) -> Result<CliOutput, EnvError> {
        let mut command = self.command(line);
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| EnvError::SshMissing(e.to_string()))?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(EnvError::Io("cannot read ssh's output".into()));
        };
        let work = async {
            let mut out = Vec::new();
            let mut err = Vec::new();
            let mut stdout = stdout.take(OUTPUT_CAP);
            let mut stderr = stderr.take(OUTPUT_CAP);
            let (a, b) = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
            a.and(b)?;
            drop((stdout, stderr));
            let status = child.wait().await?;
            Ok::<_, std::io::Error>((status, out, err))
        };
        match tokio::time::timeout(timeout, work).await {
            Err(_) => Err(EnvError::SshUnreachable {
                destination: self.settings.destination(),
                detail: format!("no answer within {}s", timeout.as_secs()),
            }),
            Ok(Err(e)) => Err(EnvError::Io(format!("running ssh: {e}"))),
            Ok(Ok((status, out, err))) => {
                let err = String::from_utf8_lossy(&err).trim().to_string();
                if status.code() == Some(255) {
                    return Err(self.classify(&err));
                }
                Ok(CliOutput {
                    success: status.success(),
                    stdout: String::from_utf8_lossy(&out).trim().to_string(),
                    stderr: err,
                })
            }
        }
    }

    /// The error ssh's own stderr (exit 255) describes.
    pub fn classify(&self, stderr: &str) -> EnvError {
        let host = self.settings.host.clone();
        let port = self.settings.port;
        let known_hosts = self.known_hosts.display().to_string();
        if stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
            return EnvError::HostKeyChanged {
                host,
                port,
                known_hosts,
            };
        }
        if stderr.contains("Host key verification failed") || stderr.contains("host key is known") {
            return EnvError::HostKeyUnknown {
                host,
                port,
                known_hosts,
            };
        }
        let detail = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| crate::output::shorten_line(l.trim(), 300))
            .unwrap_or_else(|| "ssh exited with status 255".into());
        if stderr.contains("Permission denied") || stderr.contains("Too many authentication") {
            return EnvError::SshAuth {
                destination: self.settings.destination(),
                detail,
            };
        }
        EnvError::SshUnreachable {
            destination: format!("{}:{port}", self.settings.destination()),
            detail,
        }
    }

    /// The connection, (re-)established when its master socket is gone.
    async fn ensure(&self) -> Result<Remote, EnvError> {
        let _one = self.connecting.lock().await;
        let known = self.remote.lock().ok().and_then(|r| r.clone());
        if let Some(remote) = known
            && self.socket.exists()
        {
            return Ok(remote);
        }
        let remote = self.establish().await?;
        if let Ok(mut slot) = self.remote.lock() {
            *slot = Some(remote.clone());
        }
        Ok(remote)
    }

    /// Starts the master (ControlMaster=auto with ControlPersist: the first client forks it
    /// into the background, its stdio on /dev/null) and probes the remote side through it.
    async fn establish(&self) -> Result<Remote, EnvError> {
        if let Some(dir) = self.socket.parent() {
            create_private_dir(dir)
                .map_err(|e| EnvError::Io(format!("cannot create {}: {e}", dir.display())))?;
        }
        // A socket left by a dead master would make ssh skip multiplexing.
        let _ = std::fs::remove_file(&self.socket);
        let err_path = self.socket.with_extension("err");
        let err_file = std::fs::File::create(&err_path)
            .map_err(|e| EnvError::Io(format!("cannot create {}: {e}", err_path.display())))?;
        let mut command = tokio::process::Command::new(&self.binary);
        command
            .args(self.base_args())
            .args([
                "-o",
                "ControlMaster=auto",
                "-o",
                &format!("ControlPersist={CONTROL_PERSIST}"),
                "-T",
                "--",
            ])
            .arg(self.settings.destination())
            .arg(scripts::remote_command(&scripts::probe(), &[], &[]))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            // A file, not a pipe: the backgrounded master must not hold our read end open.
            .stderr(Stdio::from(err_file))
            // Its own group, so that killing a tool's process group never takes the master.
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| EnvError::SshMissing(e.to_string()))?;
        let Some(stdout) = child.stdout.take() else {
            return Err(EnvError::Io("cannot read ssh's output".into()));
        };
        let work = async {
            let mut out = Vec::new();
            stdout.take(OUTPUT_CAP).read_to_end(&mut out).await?;
            let status = child.wait().await?;
            Ok::<_, std::io::Error>((status, out))
        };
        let result = tokio::time::timeout(CONTROL_TIMEOUT, work).await;
        let stderr = std::fs::read(&err_path)
            .map(|b| String::from_utf8_lossy(&b[..b.len().min(OUTPUT_CAP as usize)]).to_string())
            .unwrap_or_default();
        let _ = std::fs::remove_file(&err_path);
        let (status, out) = match result {
            Err(_) => {
                return Err(EnvError::SshUnreachable {
                    destination: self.settings.destination(),
                    detail: format!("no answer within {}s", CONTROL_TIMEOUT.as_secs()),
                });
            }
            Ok(Err(e)) => return Err(EnvError::Io(format!("running ssh: {e}"))),
            Ok(Ok(done)) => done,
        };
        if status.code() == Some(255) {
            return Err(self.classify(&stderr));
        }
        let out = String::from_utf8_lossy(&out);
        let mut lines = out.lines();
        match (status.success(), lines.next(), lines.next()) {
            (true, Some(home), Some(shell)) if home.starts_with('/') => Ok(Remote {
                home: home.to_string(),
                shell: if shell.trim() == "bash" { "bash" } else { "sh" },
            }),
            _ => Err(EnvError::SshUnreachable {
                destination: self.settings.destination(),
                detail: format!(
                    "the remote shell did not answer as a POSIX shell (needs sh, a home directory it can write): {}",
                    crate::output::shorten_line(stderr.trim(), 300)
                ),
            }),
        }
    }

    fn token(&self) -> String {
        format!(
            "{}-{}-{}",
            std::process::id(),
            self.socket
                .file_name()
                .map(|n| n.to_string_lossy().chars().take(8).collect::<String>())
                .unwrap_or_default(),
            self.next_token.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Closes the master (a no-op when it is gone), blocking.
    pub fn close(&self) {
        self.close_master();
    }

    fn close_master(&self) {
        if !self.socket.exists() {
            return;
        }
        let _ = std::process::Command::new(&self.binary)
            .args(["-o", &format!("ControlPath={}", self.socket.display())])
            .args(["-O", "exit", "--"])
            .arg(self.settings.destination())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[async_trait::async_trait]
impl RemoteSignal for SshClient {
    fn signal_blocking(&self, token: &str, signal: &str) {
        let _ = self
            .blocking(&scripts::remote_command(
                &scripts::kill(),
                &[token, signal],
                &[],
            ))
            .status();
    }

    async fn signal(&self, token: &str, signal: &str) {
        let _ = self
            .run(
                &scripts::remote_command(&scripts::kill(), &[token, signal], &[]),
                CONTROL_TIMEOUT,
            )
            .await;
    }
}

/// The detached jobs of one session, over its client.
#[derive(Debug)]
struct SshJobs(Arc<SshClient>);

#[async_trait::async_trait]
impl DetachedJobs for SshJobs {
    async fn start(&self, script: &str, workdir: &str) -> Result<(String, Stopper), EnvError> {
        let remote = self.0.ensure().await?;
        let token = self.0.token();
        let out = self
            .0
            .run(
                &scripts::remote_command(
                    &scripts::start_detached(),
                    &[&token, workdir, script, remote.shell],
                    &[],
                ),
                CONTROL_TIMEOUT,
            )
            .await?;
        if !out.success {
            return Err(EnvError::Io(format!(
                "cannot start the background job on {}: {}",
                self.0.settings.host,
                if out.stderr.is_empty() {
                    "failed"
                } else {
                    &out.stderr
                }
            )));
        }
        Ok((
            token.clone(),
            Stopper::Remote {
                target: self.0.clone(),
                token,
            },
        ))
    }

    async fn follow(&self, token: &str, offset: u64) -> Result<tokio::process::Command, EnvError> {
        self.0.ensure().await?;
        Ok(self.0.command(&scripts::remote_command(
            &scripts::follow(),
            &[token, &offset.to_string()],
            &[],
        )))
    }

    async fn status(&self, token: &str) -> Result<DetachedStatus, EnvError> {
        self.0.ensure().await?;
        let out = self
            .0
            .run(
                &scripts::remote_command(&scripts::status(), &[token], &[]),
                CONTROL_TIMEOUT,
            )
            .await?;
        Ok(scripts::parse_status(&out.stdout))
    }

    async fn forget(&self, token: &str) {
        let _ = self
            .0
            .run(
                &scripts::remote_command(&scripts::forget(), &[token], &[]),
                CONTROL_TIMEOUT,
            )
            .await;
    }
}

/// The SSH environment of one session.
#[derive(Debug)]
pub struct SshEnvironment {
    client: Arc<SshClient>,
}

impl SshEnvironment {
    pub fn new(client: SshClient) -> SshEnvironment {
        SshEnvironment {
            client: Arc::new(client),
        }
    }

    pub fn client(&self) -> &SshClient {
        &self.client
    }

    /// The remote home until the first connection says: `/root` for root, else `/home/USER`
    /// (the Python Hermes's guess).
    fn guessed_home(&self) -> String {
        match self.client.settings.user.as_str() {
            "root" => "/root".into(),
            "" => std::env::var("USER")
                .ok()
                .filter(|u| !u.is_empty() && u != "root")
                .map_or_else(|| "/root".into(), |u| format!("/home/{u}")),
            user => format!("/home/{user}"),
        }
    }

    fn known_remote(&self) -> Option<Remote> {
        self.client.remote.lock().ok().and_then(|r| r.clone())
    }
}

#[async_trait::async_trait]
impl ExecutionEnvironment for SshEnvironment {
    fn backend(&self) -> Backend {
        Backend::Ssh
    }

    fn cwd(&self) -> String {
        if let Some(cwd) = &self.client.settings.cwd {
            return cwd.clone();
        }
        self.home()
    }

    fn home(&self) -> String {
        self.known_remote()
            .map_or_else(|| self.guessed_home(), |r| r.home)
    }

    async fn connect(&self) -> Result<(), EnvError> {
        self.client.ensure().await.map(drop)
    }

    async fn shell(&self, request: ShellRequest<'_>) -> Result<Prepared, EnvError> {
        let remote = self.client.ensure().await?;
        let token = self.client.token();
        let line = scripts::remote_command(
            &scripts::foreground(),
            &[&token, request.workdir, request.script, remote.shell],
            request.extra_env,
        );
        Ok(Prepared {
            command: self.client.command(&line),
            stopper: Stopper::Remote {
                target: self.client.clone(),
                token,
            },
        })
    }

    fn detached(&self) -> Option<Arc<dyn DetachedJobs>> {
        Some(Arc::new(SshJobs(self.client.clone())))
    }

    async fn shutdown(&self) {
        let client = self.client.clone();
        let _ = tokio::task::spawn_blocking(move || client.close_master()).await;
    }
}

impl Drop for SshEnvironment {
    fn drop(&mut self) {
        // Detached jobs hold the client too; the last owner closes the master.
        if Arc::strong_count(&self.client) == 1 {
            self.client.close_master();
        }
    }
}

/// Creates `dir` (and parents) and makes it 0700: it holds the session's master socket,
/// which anyone able to open it could run commands through.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// 64-bit FNV-1a: a short, stable socket name.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs `ssh -o BatchMode=yes ... true` (the doctor's check): reachable, key accepted, host
/// key known. Returns the remote home.
pub async fn check(client: &SshClient) -> Result<String, EnvError> {
    let remote = client.ensure().await?;
    Ok(remote.home)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(known: Option<&str>) -> SshClient {
        SshClient::new(
            SshSettings {
                host: "example.org".into(),
                user: "deploy".into(),
                port: 2222,
                key: Some(PathBuf::from("/k/id")),
                cwd: None,
                known_hosts: known.map(PathBuf::from),
            },
            Path::new("/h/cache/ssh"),
            "s1",
            Some("/home/me".into()),
        )
    }

    #[test]
    fn arguments_check_host_keys_strictly_and_use_the_key_only() {
        let c = client(None);
        let a = c.base_args().join(" ");
        assert!(a.contains("BatchMode=yes"), "{a}");
        assert!(a.contains("StrictHostKeyChecking=yes"), "{a}");
        assert!(
            a.contains("UserKnownHostsFile=/home/me/.ssh/known_hosts"),
            "{a}"
        );
        assert!(a.contains("IdentitiesOnly=yes -i /k/id"), "{a}");
        assert!(a.contains("-p 2222"), "{a}");
        assert!(a.contains("ControlPath=/h/cache/ssh/"), "{a}");
        assert_eq!(
            client(Some("/t/kh")).known_hosts(),
            Path::new("/t/kh"),
            "terminal.ssh_known_hosts wins"
        );
    }

    #[test]
    fn ssh_failures_become_errors_with_the_fix() {
        let c = client(Some("/t/kh"));
        let e = c
            .classify("No ED25519 host key is known for [example.org]:2222 and you have requested strict checking.\nHost key verification failed.")
            .to_string();
        assert!(
            e.contains("ssh-keyscan -p 2222 example.org >> /t/kh"),
            "{e}"
        );
        let e = c.classify("@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nHost key verification failed.");
        assert!(matches!(e, EnvError::HostKeyChanged { .. }), "{e}");
        let e = c.classify("deploy@example.org: Permission denied (publickey).");
        assert!(matches!(e, EnvError::SshAuth { .. }), "{e}");
        let e = c.classify("ssh: connect to host example.org port 2222: Connection refused");
        assert!(e.to_string().contains("Connection refused"), "{e}");
    }

    #[test]
    fn statuses_parse() {
        assert_eq!(scripts::parse_status("running\n"), DetachedStatus::Running);
        assert_eq!(
            scripts::parse_status("exit 143"),
            DetachedStatus::Exited(143)
        );
        assert_eq!(scripts::parse_status("lost"), DetachedStatus::Lost);
        assert_eq!(scripts::parse_status("exit x"), DetachedStatus::Lost);
    }

    #[test]
    fn long_control_dirs_fall_back_to_a_short_one() {
        let long = "/x".repeat(60);
        let c = SshClient::new(
            SshSettings {
                host: "h".into(),
                port: 22,
                ..SshSettings::default()
            },
            Path::new(&long),
            "s",
            None,
        );
        assert!(
            c.socket.as_os_str().len() <= MAX_SOCKET_PATH,
            "{:?}",
            c.socket
        );
    }
}
