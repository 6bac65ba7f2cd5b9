//! The Docker backend (Podman through `terminal.docker_binary`): one container per session,
//! created on the first command with `docker run -d` (hardened: all capabilities dropped but
//! the few file-ownership ones, no-new-privileges, a PID limit, CPU and memory limits, no
//! network unless `docker_network`, tmpfs for /tmp, the workspace at /workspace), only the
//! configured variables inside (`docker_env`, `docker_forward_env`: never the host's
//! credentials), and `sleep infinity` as its main process. Commands run with
//! `docker exec -i CONTAINER sh -c WRAPPER`: the wrapper records its process id (a process
//! started by `docker exec` leads its own process group) under a per-command token, so a
//! timeout or kill signals the whole group inside the container, not just the local client.
//! The container is removed at session end, or kept and reused by later sessions of the same
//! home when `container_persistent` is on.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::{
    Backend, DockerSettings, EnvError, ExecutionEnvironment, Prepared, RemoteSignal, ShellRequest,
    Stopper, sh_quote,
};

/// Where commands start in the container.
pub const WORKSPACE: &str = "/workspace";
/// The label every container of ours carries; its value is the session (or persistent) key.
pub const SESSION_LABEL: &str = "hermes.session";
/// Where the wrapper records process ids inside the container.
pub(crate) const PID_DIR: &str = "/tmp/.hermes-exec";
/// Bytes of a CLI call's stdout/stderr kept.
const CLI_OUTPUT_CAP: u64 = 64 * 1024;
/// Limit of ordinary CLI calls (inspect, exec kill, rm).
const CLI_TIMEOUT: Duration = Duration::from_secs(30);
/// Limit of `docker run` and `docker pull`.
const START_TIMEOUT: Duration = Duration::from_secs(300);
const PIDS_LIMIT: &str = "256";

/// Non-persistent containers alive in this process, removed on an abrupt exit.
static LIVE: LazyLock<Mutex<Vec<(String, String)>>> = LazyLock::new(|| Mutex::new(Vec::new()));

fn track(binary: &str, id: &str, live: bool) {
    if let Ok(mut all) = LIVE.lock() {
        all.retain(|(_, i)| i != id);
        if live {
            all.push((binary.to_string(), id.to_string()));
        }
    }
}

/// Removes every non-persistent container of this process (`docker rm -f`), blocking. For
/// exits that skip the session's shutdown.
pub fn remove_all_now() {
    let all = LIVE
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default();
    for (binary, id) in all {
        let _ = std::process::Command::new(&binary)
            .args(["rm", "-f", &id])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The container CLI.
#[derive(Debug, Clone)]
pub struct DockerCli {
    pub binary: String,
}

/// What a CLI call printed.
#[derive(Debug)]
pub struct CliOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl DockerCli {
    /// A command of the CLI. It inherits this process's environment (PATH, DOCKER_HOST, the
    /// CLI's config): none of it reaches the container, which gets only `docker run -e`.
    pub fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.binary);
        command.stdin(Stdio::null()).kill_on_drop(true);
        command
    }

    /// Runs the CLI with `args`, output bounded, within `timeout`.
    pub async fn run(&self, args: &[&str], timeout: Duration) -> Result<CliOutput, EnvError> {
        let mut command = self.command();
        command.args(args);
        self.run_command(command, args, timeout).await
    }

    /// Runs a prepared `command` of the CLI (`args`: for messages), output bounded, within
    /// `timeout`.
    pub async fn run_command(
        &self,
        mut command: tokio::process::Command,
        args: &[&str],
        timeout: Duration,
    ) -> Result<CliOutput, EnvError> {
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| self.spawn_error(e))?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(EnvError::Io(
                "cannot read the container CLI's output".into(),
            ));
        };
        let work = async {
            let mut out = Vec::new();
            let mut err = Vec::new();
            let mut stdout = stdout.take(CLI_OUTPUT_CAP);
            let mut stderr = stderr.take(CLI_OUTPUT_CAP);
            let (a, b) = tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err));
            a.and(b)?;
            // Past the cap the CLI gets EPIPE instead of blocking on a full pipe.
            drop((stdout, stderr));
            let status = child.wait().await?;
            Ok::<_, std::io::Error>((status, out, err))
        };
        match tokio::time::timeout(timeout, work).await {
            Err(_) => Err(EnvError::Io(format!(
                "`{} {}` did not finish within {}s",
                self.binary,
                args.first().unwrap_or(&""),
                timeout.as_secs()
            ))),
            Ok(Err(e)) => Err(EnvError::Io(format!("running {}: {e}", self.binary))),
            Ok(Ok((status, out, err))) => Ok(CliOutput {
                success: status.success(),
                stdout: String::from_utf8_lossy(&out).trim().to_string(),
                stderr: String::from_utf8_lossy(&err).trim().to_string(),
            }),
        }
    }

    fn spawn_error(&self, e: std::io::Error) -> EnvError {
        EnvError::CliMissing {
            binary: self.binary.clone(),
            reason: e.to_string(),
        }
    }

    /// `docker version`: the daemon answers. Returns the server version.
    pub async fn ping(&self) -> Result<String, EnvError> {
        let out = self
            .run(&["version", "--format", "{{.Server.Version}}"], CLI_TIMEOUT)
            .await?;
        if out.success && !out.stdout.is_empty() {
            return Ok(out.stdout);
        }
        let host = std::env::var("DOCKER_HOST")
            .ok()
            .filter(|h| !h.is_empty())
            .map(|h| format!(" at DOCKER_HOST={h}"))
            .unwrap_or_default();
        Err(EnvError::DaemonUnreachable {
            host,
            detail: last_line(&out.stderr),
        })
    }

    /// The image is in the daemon's store.
    pub async fn has_image(&self, image: &str) -> Result<bool, EnvError> {
        Ok(self
            .run(
                &["image", "inspect", "--format", "{{.Id}}", image],
                CLI_TIMEOUT,
            )
            .await?
            .success)
    }
}

fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output");
    crate::output::shorten_line(line.trim(), 300)
}

/// A running container.
#[derive(Debug, Clone)]
struct Running {
    id: String,
    /// `bash` when the image has it, else `sh`.
    shell: &'static str,
    signal: Arc<ContainerSignal>,
}

/// Signals process groups inside one container.
#[derive(Debug)]
struct ContainerSignal {
    cli: DockerCli,
    id: String,
}

impl ContainerSignal {
    fn args(&self, token: &str, signal: &str) -> Vec<String> {
        let script = kill_script();
        vec![
            "exec".into(),
            self.id.clone(),
            "sh".into(),
            "-c".into(),
            script,
            "hermes-kill".into(),
            token.into(),
            signal.into(),
        ]
    }
}

#[async_trait::async_trait]
impl RemoteSignal for ContainerSignal {
    fn signal_blocking(&self, token: &str, signal: &str) {
        let _ = std::process::Command::new(&self.cli.binary)
            .args(self.args(token, signal))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    async fn signal(&self, token: &str, signal: &str) {
        let args = self.args(token, signal);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = self.cli.run(&args, CLI_TIMEOUT).await;
    }
}

/// The Docker environment of one session.
#[derive(Debug)]
pub struct DockerEnvironment {
    settings: DockerSettings,
    cli: DockerCli,
    /// The host directory mounted at /workspace with `docker_mount_cwd_to_workspace`.
    host_cwd: PathBuf,
    /// The label value and name stem: the session's, or the home's when persistent.
    key: String,
    /// `docker run -e` pairs (docker_env, then docker_forward_env from the host).
    env: Vec<(String, String)>,
    running: tokio::sync::Mutex<Option<Running>>,
    next_token: AtomicU64,
}

impl DockerEnvironment {
    /// `home_root` names the persistent container (one per Hermes home/profile);
    /// `session_key` names a session's own. `host_var` reads the host's variables for
    /// `docker_forward_env`.
    pub fn new(
        settings: DockerSettings,
        host_cwd: PathBuf,
        home_root: &std::path::Path,
        session_key: &str,
        host_var: impl Fn(&str) -> Option<String>,
    ) -> DockerEnvironment {
        let key = if settings.persistent {
            format!(
                "home-{:016x}",
                fnv1a(home_root.display().to_string().as_bytes())
            )
        } else {
            let clean: String = session_key
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .take(40)
                .collect();
            let salt = fnv1a(format!("{session_key}{:?}", std::time::SystemTime::now()).as_bytes());
            format!("{clean}-{:08x}", salt as u32)
                .trim_start_matches('-')
                .to_string()
        };
        let mut env: Vec<(String, String)> = settings
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for name in &settings.forward_env {
            if let Some(value) = host_var(name) {
                env.retain(|(k, _)| k != name);
                env.push((name.clone(), value));
            }
        }
        DockerEnvironment {
            cli: DockerCli {
                binary: settings.binary.clone(),
            },
            settings,
            host_cwd,
            key,
            env,
            running: tokio::sync::Mutex::new(None),
            next_token: AtomicU64::new(1),
        }
    }

    /// The container's name.
    pub fn container_name(&self) -> String {
        format!("hermes-{}", self.key)
    }

    /// The `hermes.session` label value of the container.
    pub fn label_value(&self) -> &str {
        &self.key
    }

    /// `docker run` arguments after `run -d` (name, labels, hardening, limits, mounts, env,
    /// extra args, image, main process).
    pub fn run_args(&self) -> Vec<String> {
        let s = &self.settings;
        let mut a: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
        push(&["--init", "--name", &self.container_name()]);
        push(&["--label", &format!("{SESSION_LABEL}={}", self.key)]);
        push(&["--label", "hermes-agent=1"]);
        push(&["--cap-drop", "ALL"]);
        for cap in ["DAC_OVERRIDE", "CHOWN", "FOWNER"] {
            push(&["--cap-add", cap]);
        }
        if !s.run_as_host_user {
            // Images whose start-up drops from root to a user need these; with
            // no-new-privileges nothing can climb back.
            push(&["--cap-add", "SETUID", "--cap-add", "SETGID"]);
        } else {
            #[allow(unsafe_code)]
            // SAFETY: getuid/getgid cannot fail and touch no memory.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            push(&["--user", &format!("{uid}:{gid}")]);
        }
        push(&["--security-opt", "no-new-privileges"]);
        push(&["--tmpfs", "/tmp:rw,nosuid,size=512m"]);
        push(&["--pids-limit", PIDS_LIMIT]);
        if s.cpu > 0.0 {
            push(&["--cpus", &s.cpu.to_string()]);
        }
        if s.memory > 0 {
            push(&["--memory", &format!("{}m", s.memory)]);
        }
        if !s.network {
            push(&["--network", "none"]);
        }
        let workspace_mounted = s
            .volumes
            .iter()
            .any(|v| v.split(':').nth(1) == Some(WORKSPACE));
        if s.mount_cwd_to_workspace && !workspace_mounted && self.host_cwd.is_dir() {
            push(&["-v", &format!("{}:{WORKSPACE}", self.host_cwd.display())]);
        } else if !workspace_mounted && !s.persistent {
            push(&["--tmpfs", &format!("{WORKSPACE}:rw,exec,size=10g")]);
        }
        for v in &s.volumes {
            push(&["-v", v]);
        }
        for (k, v) in &self.env {
            push(&["-e", &format!("{k}={v}")]);
        }
        push(&["-w", "/"]);
        a.extend(s.extra_args.iter().cloned());
        a.push(s.image.clone());
        a.extend(["sleep".to_string(), "infinity".to_string()]);
        a
    }

    /// The running container, started (or, persistent, found and restarted) on first use.
    async fn ensure(&self) -> Result<Running, EnvError> {
        let mut slot = self.running.lock().await;
        if let Some(running) = slot.as_ref() {
            return Ok(running.clone());
        }
        self.cli.ping().await?;
        let name = self.container_name();
        let mut id = None;
        if self.settings.persistent {
            let out = self
                .cli
                .run(
                    &["inspect", "--format", "{{.Id}} {{.State.Running}}", &name],
                    CLI_TIMEOUT,
                )
                .await?;
            if out.success
                && let Some((found, running)) = out.stdout.split_once(' ')
            {
                if running != "true" {
                    let start = self.cli.run(&["start", found], CLI_TIMEOUT).await?;
                    if !start.success {
                        return Err(EnvError::Start(format!(
                            "the kept container {name} does not start: {}; remove it with `docker rm -f {name}`",
                            last_line(&start.stderr)
                        )));
                    }
                }
                id = Some(found.to_string());
            }
        }
        let id = match id {
            Some(id) => id,
            None => self.create().await?,
        };
        let signal = Arc::new(ContainerSignal {
            cli: self.cli.clone(),
            id: id.clone(),
        });
        // Creates the workspace (a persistent container keeps it in its own layer) and finds
        // the shell commands run under.
        let probe = self
            .cli
            .run(
                &[
                    "exec",
                    &id,
                    "sh",
                    "-c",
                    &format!("mkdir -p {WORKSPACE} {PID_DIR}; command -v bash || true"),
                ],
                CLI_TIMEOUT,
            )
            .await?;
        if !probe.success {
            return Err(EnvError::Start(format!(
                "the container {name} cannot run sh: {}",
                last_line(&probe.stderr)
            )));
        }
        let shell = if probe.stdout.trim().is_empty() {
            "sh"
        } else {
            "bash"
        };
        let running = Running { id, shell, signal };
        *slot = Some(running.clone());
        Ok(running)
    }

    async fn create(&self) -> Result<String, EnvError> {
        let image = &self.settings.image;
        if !self.cli.has_image(image).await? {
            let pull = self.cli.run(&["pull", image], START_TIMEOUT).await?;
            if !pull.success {
                return Err(EnvError::ImageMissing {
                    image: image.clone(),
                    detail: last_line(&pull.stderr),
                });
            }
        }
        let mut args = vec!["run".to_string(), "-d".to_string()];
        args.extend(self.run_args());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.cli.run(&args, START_TIMEOUT).await?;
        if !out.success {
            // A container object may exist though it never started.
            let _ = self
                .cli
                .run(&["rm", "-f", &self.container_name()], CLI_TIMEOUT)
                .await;
            return Err(EnvError::Start(last_line(&out.stderr)));
        }
        let id = out.stdout.lines().last().unwrap_or("").trim().to_string();
        if id.is_empty() {
            return Err(EnvError::Start("docker run printed no container id".into()));
        }
        if !self.settings.persistent {
            track(&self.cli.binary, &id, true);
        }
        Ok(id)
    }
}

#[async_trait::async_trait]
impl ExecutionEnvironment for DockerEnvironment {
    fn backend(&self) -> Backend {
        Backend::Docker
    }

    fn cwd(&self) -> String {
        WORKSPACE.to_string()
    }

    async fn shell(&self, request: ShellRequest<'_>) -> Result<Prepared, EnvError> {
        let running = self.ensure().await?;
        let token = format!(
            "{}-{}",
            std::process::id(),
            self.next_token.fetch_add(1, Ordering::Relaxed)
        );
        let mut command = self.cli.command();
        command.arg("exec").arg("-i");
        for (k, v) in request.extra_env {
            command.arg("-e").arg(format!("{k}={v}"));
        }
        command
            .arg(&running.id)
            .arg("sh")
            .arg("-c")
            .arg(wrapper(running.shell))
            .arg("hermes")
            .arg(&token)
            .arg(request.workdir)
            .arg(request.script);
        Ok(Prepared {
            command,
            stopper: Stopper::Remote {
                target: running.signal.clone(),
                token,
            },
        })
    }

    async fn shutdown(&self) {
        let running = self.running.lock().await.take();
        let Some(running) = running else { return };
        if self.settings.persistent {
            return;
        }
        let _ = self.cli.run(&["rm", "-f", &running.id], CLI_TIMEOUT).await;
        track(&self.cli.binary, &running.id, false);
    }
}

impl Drop for DockerEnvironment {
    fn drop(&mut self) {
        // A session dropped without its shutdown (a panic, an aborted task).
        if self.settings.persistent {
            return;
        }
        if let Some(running) = self.running.get_mut().take() {
            let _ = std::process::Command::new(&self.cli.binary)
                .args(["rm", "-f", &running.id])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .and_then(|mut c| c.wait());
            track(&self.cli.binary, &running.id, false);
        }
    }
}

/// The script `docker exec` runs: records its pid (the exec'd process leads its own group)
/// under `$1`, enters `$2`, runs `$3` under the image's shell, and forgets the pid.
pub(crate) fn wrapper(shell: &str) -> String {
    format!(
        "echo $$ > {PID_DIR}/\"$1\".pid 2>/dev/null; \
         cd -- \"$2\" || exit 1; \
         {shell} -c \"$3\"; r=$?; rm -f {PID_DIR}/\"$1\".pid; exit $r"
    )
}

/// The script that sends signal `$2` to what [`wrapper`] recorded under token `$1` (and
/// forgets it after KILL): its process group when it leads one (`docker exec`), and in any
/// case the process and all its descendants, listed from `/proc` before any is signalled
/// (a service that starts commands inside its own process group, as Daytona's daemon may,
/// must not have that group killed, and a shell whose child died would run on).
pub(crate) fn kill_script() -> String {
    format!(
        "f={PID_DIR}/\"$1\".pid; p=$(cat \"$f\" 2>/dev/null) || exit 0; \
         t() {{ echo \"$1\"; for c in $(cat /proc/\"$1\"/task/*/children 2>/dev/null); do t \"$c\"; done; }}; \
         all=$(t \"$p\"); \
         g=$(cut -d')' -f2 /proc/\"$p\"/stat 2>/dev/null | cut -d' ' -f4); \
         [ \"$g\" = \"$p\" ] && kill -s \"$2\" -- \"-$p\" 2>/dev/null; \
         kill -s \"$2\" $all 2>/dev/null; \
         [ \"$2\" = KILL ] && rm -f \"$f\"; exit 0"
    )
}

/// A one-line shell command running `script` through [`wrapper`] under `token` in `workdir`
/// (for services that take a command line, not an argument vector).
pub(crate) fn wrapped_line(shell: &str, token: &str, workdir: &str, script: &str) -> String {
    format!(
        "sh -c {} hermes {} {} {}",
        sh_quote(&wrapper(shell)),
        sh_quote(token),
        sh_quote(workdir),
        sh_quote(script)
    )
}

/// The command line that signals the group of `token` (see [`kill_script`]).
pub(crate) fn kill_line(token: &str, signal: &str) -> String {
    format!(
        "sh -c {} hermes-kill {} {}",
        sh_quote(&kill_script()),
        sh_quote(token),
        sh_quote(signal)
    )
}

/// 64-bit FNV-1a: a stable name for a home's persistent container.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Quoted for messages.
pub fn shown(args: &[String]) -> String {
    args.iter()
        .map(|a| sh_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}
