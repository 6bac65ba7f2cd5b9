//! `terminal.backend` and the Docker keys in config.yaml, with the Python Hermes's names and
//! defaults:
//!
//! ```yaml
//! terminal:
//!   backend: docker            # local | docker | ssh | daytona | modal | singularity
//!   docker_image: nikolaik/python-nodejs:python3.11-nodejs20
//!   docker_binary: docker      # or podman (a name in PATH or a path)
//!   docker_forward_env: []     # host variables copied into the container by name
//!   docker_env: {}             # variables set in the container
//!   container_cpu: 1           # --cpus (0: no limit)
//!   container_memory: 5120     # MB, --memory (0: no limit)
//!   container_disk: 51200      # MB; parsed, not enforced (needs overlay2 on XFS with pquota)
//!   container_persistent: true # one container per home, kept between sessions
//!   docker_volumes: []         # "host:container[:opts]", as docker -v
//!   docker_mount_cwd_to_workspace: false
//!   docker_network: true       # false: --network none
//!   docker_extra_args: []      # appended to docker run verbatim
//!   docker_run_as_host_user: false
//!   ssh_host: build.example.org  # the SSH backend (TERMINAL_SSH_HOST when unset)
//!   ssh_user: deploy             # TERMINAL_SSH_USER
//!   ssh_port: 22                 # TERMINAL_SSH_PORT
//!   ssh_key: ~/.ssh/id_ed25519   # TERMINAL_SSH_KEY; unset: the ssh agent / default keys
//!   ssh_cwd: /srv/work           # TERMINAL_SSH_CWD; unset: the remote user's home
//!   ssh_known_hosts: ~/.ssh/known_hosts  # TERMINAL_SSH_KNOWN_HOSTS
//!   daytona_image: nikolaik/python-nodejs:python3.11-nodejs20  # TERMINAL_DAYTONA_IMAGE
//!   daytona_snapshot: ""         # a Daytona snapshot to start from instead of the image
//!   daytona_auto_stop: 15        # minutes idle before Daytona stops the sandbox (0: never)
//!   modal_image: nikolaik/python-nodejs:python3.11-nodejs20    # TERMINAL_MODAL_IMAGE
//!   modal_mode: auto             # TERMINAL_MODAL_MODE: auto | managed | direct
//!   singularity_image: docker://nikolaik/python-nodejs:python3.11-nodejs20  # TERMINAL_SINGULARITY_IMAGE
//! ```
//!
//! `container_cpu`, `container_memory`, `container_disk` and `container_persistent` apply to
//! the Daytona, Modal and Singularity backends too, as in the Python Hermes. Their
//! credentials are variables only: `DAYTONA_API_KEY` (`DAYTONA_API_URL`, `DAYTONA_TARGET`),
//! `TOOL_GATEWAY_USER_TOKEN` (`MODAL_GATEWAY_URL`, `TOOL_GATEWAY_DOMAIN`,
//! `TOOL_GATEWAY_SCHEME`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use hermes_config::{Config, ConfigError};
use serde::Deserialize;

/// Where the agent's commands and file tools act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Local,
    Docker,
    Ssh,
    Modal,
    Daytona,
    Singularity,
}

impl Backend {
    pub const CHOICES: &'static str = "local, docker, ssh, modal, daytona, singularity";

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Local => "local",
            Backend::Docker => "docker",
            Backend::Ssh => "ssh",
            Backend::Modal => "modal",
            Backend::Daytona => "daytona",
            Backend::Singularity => "singularity",
        }
    }

    fn parse(name: &str) -> Option<Backend> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "" | "local" => Backend::Local,
            "docker" => Backend::Docker,
            "ssh" => Backend::Ssh,
            "modal" => Backend::Modal,
            "daytona" => Backend::Daytona,
            "singularity" | "apptainer" => Backend::Singularity,
            _ => return None,
        })
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Docker backend's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct DockerSettings {
    pub image: String,
    /// The CLI run for every container operation (`docker`, `podman`, or a path).
    pub binary: String,
    pub forward_env: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cpu: f64,
    /// MB.
    pub memory: u64,
    /// MB.
    pub disk: u64,
    pub persistent: bool,
    pub volumes: Vec<String>,
    pub mount_cwd_to_workspace: bool,
    pub network: bool,
    pub extra_args: Vec<String>,
    pub run_as_host_user: bool,
}

impl Default for DockerSettings {
    fn default() -> Self {
        DockerSettings {
            image: "nikolaik/python-nodejs:python3.11-nodejs20".into(),
            binary: "docker".into(),
            forward_env: Vec::new(),
            env: BTreeMap::new(),
            cpu: 1.0,
            memory: 5120,
            disk: 51200,
            persistent: true,
            volumes: Vec::new(),
            mount_cwd_to_workspace: false,
            network: true,
            extra_args: Vec::new(),
            run_as_host_user: false,
        }
    }
}

/// The SSH backend's settings (Python's `ssh_host`, `ssh_user`, `ssh_port`, `ssh_key`, plus
/// `ssh_cwd` and `ssh_known_hosts`: `terminal.cwd` is this machine's directory here).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SshSettings {
    pub host: String,
    /// Empty: ssh's own default (the local user name, or `~/.ssh/config`).
    pub user: String,
    pub port: u16,
    /// The private key; None: the agent and ssh's default keys.
    pub key: Option<PathBuf>,
    /// The remote working directory; None: the remote user's home.
    pub cwd: Option<String>,
    /// The known_hosts file host keys are checked against; None: `$HOME/.ssh/known_hosts`.
    pub known_hosts: Option<PathBuf>,
}

impl SshSettings {
    /// `user@host` (or `host`), as ssh takes it.
    pub fn destination(&self) -> String {
        if self.user.is_empty() {
            self.host.clone()
        } else {
            format!("{}@{}", self.user, self.host)
        }
    }
}

/// The image every container backend defaults to (the Python Hermes's).
pub const DEFAULT_IMAGE: &str = "nikolaik/python-nodejs:python3.11-nodejs20";
/// Daytona's public API.
pub const DAYTONA_DEFAULT_API_URL: &str = "https://app.daytona.io/api";
/// Daytona's own default auto-stop interval, minutes.
pub const DAYTONA_DEFAULT_AUTO_STOP: u32 = 15;

/// The Daytona backend's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaytonaSettings {
    pub image: String,
    /// Start from this Daytona snapshot instead of building `image`.
    pub snapshot: Option<String>,
    /// Minutes without activity before Daytona stops the sandbox (0: never).
    pub auto_stop: u32,
    /// `DAYTONA_API_KEY`; None: the backend cannot start (said at session start).
    pub api_key: Option<String>,
    /// `DAYTONA_API_URL`, without a trailing slash.
    pub api_url: String,
    /// `DAYTONA_TARGET` (the region), when set.
    pub target: Option<String>,
}

/// How the Modal backend reaches Modal (`modal_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModalMode {
    Auto,
    Managed,
    Direct,
}

impl ModalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ModalMode::Auto => "auto",
            ModalMode::Managed => "managed",
            ModalMode::Direct => "direct",
        }
    }
}

/// The Modal backend's settings: Modal through the Nous tool gateway's HTTP API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModalSettings {
    pub image: String,
    pub mode: ModalMode,
    /// The gateway's origin (`MODAL_GATEWAY_URL`, else built from `TOOL_GATEWAY_SCHEME` and
    /// `TOOL_GATEWAY_DOMAIN`), without a trailing slash.
    pub gateway_url: String,
    /// `TOOL_GATEWAY_USER_TOKEN`; None: looked up in the home's auth store at session start.
    pub token: Option<String>,
}

/// The Singularity/Apptainer backend's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingularitySettings {
    /// A `.sif` path, a `docker://` reference (built into a cached SIF once), or anything
    /// else the CLI takes.
    pub image: String,
    /// `TERMINAL_SCRATCH_DIR`: where SIF images and persistent overlays are kept.
    pub scratch_dir: Option<PathBuf>,
}

/// The backend of a session and its settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvironmentSettings {
    pub backend: Backend,
    pub docker: DockerSettings,
    pub ssh: SshSettings,
    pub daytona: DaytonaSettings,
    pub modal: ModalSettings,
    pub singularity: SingularitySettings,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawTerminal {
    backend: Option<String>,
    docker_image: Option<String>,
    docker_binary: Option<String>,
    docker_forward_env: Option<Vec<String>>,
    docker_env: Option<BTreeMap<String, Scalar>>,
    container_cpu: Option<f64>,
    container_memory: Option<u64>,
    container_disk: Option<u64>,
    container_persistent: Option<bool>,
    docker_volumes: Option<Vec<String>>,
    docker_mount_cwd_to_workspace: Option<bool>,
    docker_network: Option<bool>,
    docker_extra_args: Option<Vec<String>>,
    docker_run_as_host_user: Option<bool>,
    ssh_host: Option<Scalar>,
    ssh_user: Option<Scalar>,
    ssh_port: Option<Scalar>,
    ssh_key: Option<String>,
    ssh_cwd: Option<String>,
    ssh_known_hosts: Option<String>,
    daytona_image: Option<String>,
    daytona_snapshot: Option<String>,
    daytona_auto_stop: Option<u32>,
    modal_image: Option<String>,
    modal_mode: Option<String>,
    singularity_image: Option<String>,
}

/// A `docker_env` value: YAML gives numbers and booleans where the user meant text.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Scalar {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    fn into_text(self) -> String {
        match self {
            Scalar::Text(s) => s,
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Bool(b) => b.to_string(),
        }
    }
}

impl EnvironmentSettings {
    /// Reads the `terminal` section (the `TERMINAL_SSH_*` variables of this process where a
    /// key is unset). An unknown backend is a config error naming the choices.
    pub fn from_config(config: &Config) -> Result<EnvironmentSettings, ConfigError> {
        EnvironmentSettings::from_config_with(config, |name| std::env::var(name).ok())
    }

    /// [`EnvironmentSettings::from_config`] with the variables from `var` (the home's `.env`
    /// over the process's).
    pub fn from_config_with(
        config: &Config,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<EnvironmentSettings, ConfigError> {
        let mut raw: RawTerminal = config.section("terminal")?;
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: config.path.clone(),
            key: format!("terminal.{key}"),
            message,
        };
        let name = raw.backend.take().unwrap_or_default();
        let backend = Backend::parse(&name).ok_or_else(|| {
            invalid(
                "backend",
                format!(
                    "unknown terminal backend `{}` (expected one of {})",
                    name.trim(),
                    Backend::CHOICES
                ),
            )
        })?;
        let ssh = ssh_settings(&mut raw, &var, backend == Backend::Ssh)
            .map_err(|(key, message)| invalid(key, message))?;
        let (daytona, modal, singularity) =
            cloud_settings(&mut raw, &var).map_err(|(key, message)| invalid(key, message))?;
        let d = DockerSettings::default();
        let image = raw.docker_image.map(|s| s.trim().to_string());
        if image.as_deref() == Some("") {
            return Err(invalid("docker_image", "must not be empty".into()));
        }
        let cpu = raw.container_cpu.unwrap_or(d.cpu);
        if !cpu.is_finite() || cpu < 0.0 {
            return Err(invalid(
                "container_cpu",
                format!("must be a number of CPUs >= 0, not {cpu}"),
            ));
        }
        let mut env = BTreeMap::new();
        for (k, v) in raw.docker_env.unwrap_or_default() {
            if !valid_env_name(&k) {
                return Err(invalid(
                    "docker_env",
                    format!("`{k}` is not a valid environment variable name"),
                ));
            }
            env.insert(k, v.into_text());
        }
        let forward_env: Vec<String> = raw
            .docker_forward_env
            .unwrap_or_default()
            .into_iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        if let Some(bad) = forward_env.iter().find(|n| !valid_env_name(n)) {
            return Err(invalid(
                "docker_forward_env",
                format!("`{bad}` is not a valid environment variable name"),
            ));
        }
        let volumes: Vec<String> = raw
            .docker_volumes
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        if let Some(bad) = volumes.iter().find(|v| !v.contains(':')) {
            return Err(invalid(
                "docker_volumes",
                format!("`{bad}` needs the form host_path:container_path"),
            ));
        }
        Ok(EnvironmentSettings {
            backend,
            ssh,
            daytona,
            modal,
            singularity,
            docker: DockerSettings {
                image: image.unwrap_or(d.image),
                binary: raw
                    .docker_binary
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .unwrap_or(d.binary),
                forward_env,
                env,
                cpu,
                memory: raw.container_memory.unwrap_or(d.memory),
                disk: raw.container_disk.unwrap_or(d.disk),
                persistent: raw.container_persistent.unwrap_or(d.persistent),
                volumes,
                mount_cwd_to_workspace: raw
                    .docker_mount_cwd_to_workspace
                    .unwrap_or(d.mount_cwd_to_workspace),
                network: raw.docker_network.unwrap_or(d.network),
                extra_args: raw.docker_extra_args.unwrap_or_default(),
                run_as_host_user: raw.docker_run_as_host_user.unwrap_or(d.run_as_host_user),
            },
        })
    }
}

/// The `ssh_*` keys (each falling back to its `TERMINAL_SSH_*` variable). `required`: the
/// backend is ssh, so a host is needed. Errors name the key.
fn ssh_settings(
    raw: &mut RawTerminal,
    var: &impl Fn(&str) -> Option<String>,
    required: bool,
) -> Result<SshSettings, (&'static str, String)> {
    let pick = |value: Option<String>, name: &str| -> Option<String> {
        value
            .or_else(|| var(name))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let host = pick(
        raw.ssh_host.take().map(Scalar::into_text),
        "TERMINAL_SSH_HOST",
    );
    let user = pick(
        raw.ssh_user.take().map(Scalar::into_text),
        "TERMINAL_SSH_USER",
    );
    let port = pick(
        raw.ssh_port.take().map(Scalar::into_text),
        "TERMINAL_SSH_PORT",
    );
    let key = pick(raw.ssh_key.take(), "TERMINAL_SSH_KEY");
    let cwd = pick(raw.ssh_cwd.take(), "TERMINAL_SSH_CWD");
    let known_hosts = pick(raw.ssh_known_hosts.take(), "TERMINAL_SSH_KNOWN_HOSTS");
    let host = host.unwrap_or_default();
    if required && host.is_empty() {
        return Err((
            "ssh_host",
            "terminal.backend is ssh but no host is set (terminal.ssh_host or TERMINAL_SSH_HOST)"
                .into(),
        ));
    }
    // Anything that would reach ssh's argument list as an option is refused.
    if host.starts_with('-') || host.chars().any(|c| c.is_whitespace() || c == '@') {
        return Err(("ssh_host", format!("`{host}` is not a host name")));
    }
    let user = user.unwrap_or_default();
    if user.starts_with('-') || user.chars().any(|c| c.is_whitespace() || c == '@') {
        return Err(("ssh_user", format!("`{user}` is not a user name")));
    }
    let port = match port {
        None => 22,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(("ssh_port", format!("`{p}` is not a port (1-65535)"))),
        },
    };
    if let Some(cwd) = &cwd
        && !cwd.starts_with('/')
    {
        return Err((
            "ssh_cwd",
            format!("`{cwd}` must be an absolute path on the remote host"),
        ));
    }
    Ok(SshSettings {
        host,
        user,
        port,
        key: key.map(|k| expand_home(&k, var)),
        cwd,
        known_hosts: known_hosts.map(|k| expand_home(&k, var)),
    })
}

/// The Daytona, Modal and Singularity keys (each image falling back to its `TERMINAL_*`
/// variable, then to the default image), and their credentials from the variables.
fn cloud_settings(
    raw: &mut RawTerminal,
    var: &impl Fn(&str) -> Option<String>,
) -> Result<(DaytonaSettings, ModalSettings, SingularitySettings), (&'static str, String)> {
    let pick = |value: Option<String>, name: &str| -> Option<String> {
        value
            .filter(|s| !s.trim().is_empty())
            .or_else(|| var(name))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let daytona = DaytonaSettings {
        image: pick(raw.daytona_image.take(), "TERMINAL_DAYTONA_IMAGE")
            .unwrap_or_else(|| DEFAULT_IMAGE.into()),
        snapshot: pick(raw.daytona_snapshot.take(), "TERMINAL_DAYTONA_SNAPSHOT"),
        auto_stop: raw.daytona_auto_stop.unwrap_or(DAYTONA_DEFAULT_AUTO_STOP),
        api_key: pick(None, "DAYTONA_API_KEY"),
        api_url: pick(None, "DAYTONA_API_URL")
            .unwrap_or_else(|| DAYTONA_DEFAULT_API_URL.into())
            .trim_end_matches('/')
            .to_string(),
        target: pick(None, "DAYTONA_TARGET"),
    };
    let mode = match pick(raw.modal_mode.take(), "TERMINAL_MODAL_MODE")
        .unwrap_or_default()
        .to_ascii_lowercase()
        .as_str()
    {
        "" | "auto" => ModalMode::Auto,
        "managed" => ModalMode::Managed,
        "direct" => ModalMode::Direct,
        other => {
            return Err((
                "modal_mode",
                format!("unknown Modal mode `{other}` (expected auto, managed or direct)"),
            ));
        }
    };
    let gateway_url = match pick(None, "MODAL_GATEWAY_URL") {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => {
            let scheme = pick(None, "TOOL_GATEWAY_SCHEME")
                .unwrap_or_else(|| "https".into())
                .to_ascii_lowercase();
            if scheme != "http" && scheme != "https" {
                return Err((
                    "modal_mode",
                    "TOOL_GATEWAY_SCHEME must be 'http' or 'https'".into(),
                ));
            }
            let domain = pick(None, "TOOL_GATEWAY_DOMAIN")
                .map(|d| d.trim_matches('/').to_string())
                .unwrap_or_else(|| "nousresearch.com".into());
            format!("{scheme}://modal-gateway.{domain}")
        }
    };
    let modal = ModalSettings {
        image: pick(raw.modal_image.take(), "TERMINAL_MODAL_IMAGE")
            .unwrap_or_else(|| DEFAULT_IMAGE.into()),
        mode,
        gateway_url,
        token: pick(None, "TOOL_GATEWAY_USER_TOKEN"),
    };
    let singularity = SingularitySettings {
        image: pick(raw.singularity_image.take(), "TERMINAL_SINGULARITY_IMAGE")
            .unwrap_or_else(|| format!("docker://{DEFAULT_IMAGE}")),
        scratch_dir: pick(None, "TERMINAL_SCRATCH_DIR").map(|d| expand_home(&d, var)),
    };
    Ok((daytona, modal, singularity))
}

/// `~/x` against `$HOME` (this machine's paths).
fn expand_home(path: &str, var: &impl Fn(&str) -> Option<String>) -> PathBuf {
    match (path.strip_prefix("~/"), var("HOME")) {
        (Some(rest), Some(home)) if !home.is_empty() => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// A POSIX environment variable name.
pub(crate) fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}
