//! `terminal.backend` and the Docker keys in config.yaml, with the Python Hermes's names and
//! defaults:
//!
//! ```yaml
//! terminal:
//!   backend: docker            # local | docker (ssh, modal, daytona, singularity: not yet)
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
//! ```

use std::collections::BTreeMap;
use std::fmt;

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

/// The backend of a session and its settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvironmentSettings {
    pub backend: Backend,
    pub docker: DockerSettings,
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
    /// Reads the `terminal` section. An unknown backend is a config error naming the choices.
    pub fn from_config(config: &Config) -> Result<EnvironmentSettings, ConfigError> {
        let raw: RawTerminal = config.section("terminal")?;
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: config.path.clone(),
            key: format!("terminal.{key}"),
            message,
        };
        let name = raw.backend.unwrap_or_default();
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

/// A POSIX environment variable name.
pub(crate) fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}
