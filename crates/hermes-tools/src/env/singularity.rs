//! The Singularity/Apptainer backend, as the Python Hermes runs it: `apptainer` (else
//! `singularity`) from PATH, checked with `version`; a `docker://` image built once into a
//! cached SIF under the scratch directory (the `docker://` reference used as is when the build
//! fails); one instance per session started with `instance start --containall --no-home`,
//! a writable tmpfs (or, with `container_persistent`, an overlay directory kept per home under
//! the scratch directory), `--memory`/`--cpus` from the container keys; commands run with
//! `exec --cleanenv instance://NAME sh -c WRAPPER` (Docker's wrapper: the command's process
//! group is recorded so a timeout signals it inside the instance), and `instance stop` at
//! session end. Unlike the Python Hermes, the CLI runs with a minimal environment and
//! `--cleanenv`, so the host's variables (credentials included) never reach the container.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::daytona::Resources;
use super::docker::{CliOutput, DockerCli, PID_DIR, fnv1a, kill_script, wrapper};
use super::{
    Backend, EnvError, ExecutionEnvironment, Prepared, RemoteSignal, ShellRequest,
    SingularitySettings, Stopper,
};

const CLI_TIMEOUT: Duration = Duration::from_secs(30);
const START_TIMEOUT: Duration = Duration::from_secs(120);
const BUILD_TIMEOUT: Duration = Duration::from_secs(600);
/// Host variables the CLI itself needs; nothing else of the host's environment is passed.
const CLI_VARS: &[&str] = &["PATH", "HOME", "USER", "LANG", "TMPDIR", "XDG_RUNTIME_DIR"];

/// The `apptainer` or `singularity` executable on PATH (`path`: the PATH to search).
pub fn find_executable(path: Option<&str>) -> Option<PathBuf> {
    let path = path
        .map(str::to_string)
        .or_else(|| std::env::var("PATH").ok())?;
    for name in ["apptainer", "singularity"] {
        for dir in path.split(':').filter(|d| !d.is_empty()) {
            let candidate = Path::new(dir).join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// A CLI command with only [`CLI_VARS`] and the CLI's own (`APPTAINER_*`, `SINGULARITY_*`)
/// variables of this process.
fn cli_command(binary: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(binary);
    command.env_clear();
    for (k, v) in std::env::vars_os() {
        let name = k.to_string_lossy();
        if CLI_VARS.contains(&name.as_ref())
            || name.starts_with("APPTAINER_")
            || name.starts_with("SINGULARITY_")
        {
            command.env(&k, &v);
        }
    }
    command.stdin(Stdio::null());
    command
}

/// `version`: the CLI answers. Returns its version line.
pub async fn check(binary: &Path) -> Result<String, EnvError> {
    let out = run(binary, &["version"], CLI_TIMEOUT).await?;
    if out.success {
        Ok(out.stdout.lines().next().unwrap_or("").to_string())
    } else {
        Err(EnvError::SingularityMissing(format!(
            "`{} version` failed: {}",
            binary.display(),
            out.stderr
        )))
    }
}

async fn run(binary: &Path, args: &[&str], timeout: Duration) -> Result<CliOutput, EnvError> {
    // The Docker CLI runner bounds output and time; only the environment differs.
    let cli = DockerCli {
        binary: binary.display().to_string(),
    };
    let mut command = cli_command(binary);
    command.args(args);
    cli.run_command(command, args, timeout)
        .await
        .map_err(|e| match e {
            EnvError::CliMissing { reason, .. } => EnvError::SingularityMissing(reason),
            other => other,
        })
}

#[derive(Debug, Clone)]
struct Running {
    instance: String,
    shell: &'static str,
    home: String,
}

/// The Singularity environment of one session.
#[derive(Debug)]
pub struct SingularityEnvironment {
    settings: SingularitySettings,
    resources: Resources,
    /// Where SIF images and overlays go (`TERMINAL_SCRATCH_DIR`, `/scratch/$USER/hermes-agent`,
    /// else the home's `sandboxes/singularity`).
    scratch: PathBuf,
    key: String,
    binary: Option<PathBuf>,
    running: tokio::sync::Mutex<Option<Running>>,
    home: std::sync::Mutex<String>,
    next_token: AtomicU64,
}

impl SingularityEnvironment {
    pub fn new(
        settings: SingularitySettings,
        resources: Resources,
        home_root: &Path,
        session_key: &str,
        binary: Option<PathBuf>,
    ) -> SingularityEnvironment {
        let scratch = settings.scratch_dir.clone().unwrap_or_else(|| {
            let shared = Path::new("/scratch");
            let user = std::env::var("USER").unwrap_or_else(|_| "hermes".into());
            if shared.is_dir() && is_writable(shared) {
                shared.join(user).join("hermes-agent")
            } else {
                home_root.join("sandboxes").join("singularity")
            }
        });
        let key = if resources.persistent {
            format!(
                "home-{:016x}",
                fnv1a(home_root.display().to_string().as_bytes())
            )
        } else {
            format!(
                "{:012x}",
                fnv1a(
                    format!(
                        "{session_key}{:?}{}",
                        std::time::SystemTime::now(),
                        std::process::id()
                    )
                    .as_bytes()
                ) & 0xffff_ffff_ffff
            )
        };
        SingularityEnvironment {
            settings,
            resources,
            scratch,
            key,
            binary,
            running: tokio::sync::Mutex::new(None),
            home: std::sync::Mutex::new("/root".into()),
            next_token: AtomicU64::new(1),
        }
    }

    fn binary(&self) -> Result<&Path, EnvError> {
        self.binary
            .as_deref()
            .ok_or_else(|| EnvError::SingularityMissing("not found on PATH".into()))
    }

    /// The instance's name: unique per session (instances are per user, and a persistent
    /// overlay can be mounted by one instance at a time).
    pub fn instance_name(&self) -> String {
        format!(
            "hermes_{:012x}",
            fnv1a(
                format!(
                    "{}{}{:?}",
                    self.key,
                    std::process::id(),
                    std::time::SystemTime::now()
                )
                .as_bytes()
            ) & 0xffff_ffff_ffff
        )
    }

    /// The image to start: a `.sif` as is, a `docker://` reference built once into a cached
    /// SIF (the reference itself when the build fails).
    async fn image(&self, binary: &Path) -> String {
        let image = &self.settings.image;
        let Some(reference) = image.strip_prefix("docker://") else {
            return image.clone();
        };
        let cache = self.scratch.join(".apptainer");
        let sif = cache.join(format!("{}.sif", reference.replace(['/', ':'], "-")));
        if sif.is_file() {
            return sif.display().to_string();
        }
        if std::fs::create_dir_all(cache.join("tmp")).is_err() {
            return image.clone();
        }
        let sif_arg = sif.display().to_string();
        let mut command = cli_command(binary);
        command
            .args(["build", &sif_arg, image])
            .env("APPTAINER_TMPDIR", cache.join("tmp"))
            .env("APPTAINER_CACHEDIR", &cache);
        let cli = DockerCli {
            binary: binary.display().to_string(),
        };
        match cli.run_command(command, &["build"], BUILD_TIMEOUT).await {
            Ok(out) if out.success && sif.is_file() => sif_arg,
            _ => {
                let _ = std::fs::remove_file(&sif);
                image.clone()
            }
        }
    }

    /// The `instance start` arguments after `instance start`.
    pub fn start_args(&self, image: &str, instance: &str) -> Vec<String> {
        let mut a: Vec<String> = vec!["--containall".into(), "--no-home".into()];
        if self.resources.persistent {
            a.push("--overlay".into());
            a.push(self.overlay_dir().display().to_string());
        } else {
            a.push("--writable-tmpfs".into());
        }
        if self.resources.memory > 0 {
            a.push("--memory".into());
            a.push(format!("{}M", self.resources.memory));
        }
        if self.resources.cpu > 0.0 {
            a.push("--cpus".into());
            a.push(self.resources.cpu.to_string());
        }
        a.push(image.to_string());
        a.push(instance.to_string());
        a
    }

    fn overlay_dir(&self) -> PathBuf {
        self.scratch
            .join("hermes-overlays")
            .join(format!("overlay-{}", self.key))
    }

    async fn ensure(&self) -> Result<Running, EnvError> {
        let mut slot = self.running.lock().await;
        if let Some(running) = slot.as_ref() {
            return Ok(running.clone());
        }
        let binary = self.binary()?;
        check(binary).await?;
        if self.resources.persistent {
            std::fs::create_dir_all(self.overlay_dir()).map_err(|e| {
                EnvError::Start(format!(
                    "cannot create the overlay {}: {e}",
                    self.overlay_dir().display()
                ))
            })?;
        }
        let image = self.image(binary).await;
        let instance = self.instance_name();
        let mut args = vec!["instance".to_string(), "start".to_string()];
        args.extend(self.start_args(&image, &instance));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(binary, &args, START_TIMEOUT).await?;
        if !out.success {
            return Err(EnvError::Start(format!(
                "{} instance start failed: {}",
                binary.display(),
                out.stderr
            )));
        }
        let uri = format!("instance://{instance}");
        let probe = run(
            binary,
            &[
                "exec",
                "--cleanenv",
                &uri,
                "sh",
                "-c",
                &format!("mkdir -p {PID_DIR}; command -v bash || true; cd ~ 2>/dev/null || cd /; echo \"HOME=$(pwd)\""),
            ],
            CLI_TIMEOUT,
        )
        .await?;
        if !probe.success {
            let _ = run(binary, &["instance", "stop", &instance], CLI_TIMEOUT).await;
            return Err(EnvError::Start(format!(
                "the instance {instance} cannot run sh: {}",
                probe.stderr
            )));
        }
        let shell = if probe.stdout.lines().any(|l| l.trim().ends_with("/bash")) {
            "bash"
        } else {
            "sh"
        };
        let home = probe
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("HOME="))
            .filter(|h| h.starts_with('/'))
            .unwrap_or("/")
            .to_string();
        if let Ok(mut h) = self.home.lock() {
            *h = home.clone();
        }
        let running = Running {
            instance,
            shell,
            home,
        };
        *slot = Some(running.clone());
        Ok(running)
    }
}

fn is_writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".hermes-probe-{}", std::process::id()));
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(probe);
    ok
}

/// Signals process groups inside one instance.
#[derive(Debug)]
struct InstanceSignal {
    binary: PathBuf,
    instance: String,
}

impl InstanceSignal {
    fn args(&self, token: &str, signal: &str) -> Vec<String> {
        vec![
            "exec".into(),
            "--cleanenv".into(),
            format!("instance://{}", self.instance),
            "sh".into(),
            "-c".into(),
            kill_script(),
            "hermes-kill".into(),
            token.into(),
            signal.into(),
        ]
    }
}

#[async_trait::async_trait]
impl RemoteSignal for InstanceSignal {
    fn signal_blocking(&self, token: &str, signal: &str) {
        let _ = std::process::Command::new(&self.binary)
            .args(self.args(token, signal))
            .env_clear()
            .envs(std::env::vars_os().filter(|(k, _)| k == "PATH"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    async fn signal(&self, token: &str, signal: &str) {
        let args = self.args(token, signal);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = run(&self.binary, &args, CLI_TIMEOUT).await;
    }
}

#[async_trait::async_trait]
impl ExecutionEnvironment for SingularityEnvironment {
    fn backend(&self) -> Backend {
        Backend::Singularity
    }

    fn cwd(&self) -> String {
        self.home()
    }

    fn home(&self) -> String {
        self.home
            .lock()
            .map(|h| h.clone())
            .unwrap_or_else(|_| "/".into())
    }

    async fn connect(&self) -> Result<(), EnvError> {
        self.ensure().await.map(|_| ())
    }

    async fn shell(&self, request: ShellRequest<'_>) -> Result<Prepared, EnvError> {
        let running = self.ensure().await?;
        let binary = self.binary()?.to_path_buf();
        let token = format!(
            "{}-{}",
            std::process::id(),
            self.next_token.fetch_add(1, Ordering::Relaxed)
        );
        let mut command = cli_command(&binary);
        command.arg("exec").arg("--cleanenv");
        for (k, v) in request.extra_env {
            command.arg("--env").arg(format!("{k}={v}"));
        }
        let workdir = if request.workdir.is_empty() {
            running.home.as_str()
        } else {
            request.workdir
        };
        command
            .arg(format!("instance://{}", running.instance))
            .arg("sh")
            .arg("-c")
            .arg(wrapper(running.shell))
            .arg("hermes")
            .arg(&token)
            .arg(workdir)
            .arg(request.script);
        Ok(Prepared {
            command,
            stopper: Stopper::Remote {
                target: Arc::new(InstanceSignal {
                    binary,
                    instance: running.instance.clone(),
                }),
                token,
            },
        })
    }

    async fn shutdown(&self) {
        let running = self.running.lock().await.take();
        let (Some(running), Some(binary)) = (running, self.binary.as_deref()) else {
            return;
        };
        let _ = run(
            binary,
            &["instance", "stop", &running.instance],
            CLI_TIMEOUT,
        )
        .await;
    }
}

impl Drop for SingularityEnvironment {
    fn drop(&mut self) {
        // A session dropped without its shutdown: the instance would outlive it.
        if let (Some(running), Some(binary)) = (self.running.get_mut().take(), &self.binary) {
            let _ = std::process::Command::new(binary)
                .args(["instance", "stop", &running.instance])
                .env_clear()
                .envs(std::env::vars_os().filter(|(k, _)| k == "PATH"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}
