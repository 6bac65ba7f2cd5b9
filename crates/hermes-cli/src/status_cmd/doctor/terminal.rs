//! The `terminal` check of `hermes doctor`: the backend commands and file tools will use
//! (`terminal.backend`), and for Docker whether the daemon answers and the image is there, so
//! a missing daemon or image shows here rather than on the agent's first command; for SSH
//! whether `ssh -o BatchMode=yes` gets in within 10 s (host reachable, key accepted, host key
//! known), else the reason and the fix; for Daytona whether the API accepts the key, for
//! Modal whether the gateway token is there, for Singularity whether `apptainer` (or
//! `singularity`) is on PATH and answers `version`.

use std::time::Duration;

use hermes_tools::env::docker::DockerCli;
use hermes_tools::env::ssh::{SshClient, check};
use hermes_tools::env::{Backend, EnvironmentSettings, ModalMode, SshSettings};

use super::Check;
use crate::status_cmd::Loaded;

pub(super) async fn terminal_check(loaded: &Loaded) -> Check {
    let settings =
        match EnvironmentSettings::from_config_with(&loaded.config, |name| loaded.env.var(name)) {
            Ok(s) => s,
            Err(e) => {
                return Check::fail(
                    "terminal",
                    e.to_string(),
                    format!("terminal.backend is one of {}", Backend::CHOICES),
                );
            }
        };
    match settings.backend {
        Backend::Local => Check::ok("terminal", "backend local: commands run on this machine"),
        Backend::Docker => docker_check(&settings.docker.binary, &settings.docker.image).await,
        Backend::Ssh => ssh_check(settings.ssh, loaded).await,
        Backend::Daytona => daytona_check(&settings).await,
        Backend::Modal => modal_check(&settings, loaded),
        Backend::Singularity => singularity_check(loaded).await,
    }
}

async fn daytona_check(settings: &EnvironmentSettings) -> Check {
    let s = &settings.daytona;
    if s.api_key.is_none() {
        return Check::fail(
            "terminal",
            "backend daytona: DAYTONA_API_KEY is not set",
            "create an API key at https://app.daytona.io/dashboard/keys and add DAYTONA_API_KEY=... to ~/.hermes/.env",
        );
    }
    match hermes_tools::env::daytona::check(s).await {
        Ok(n) => Check::ok(
            "terminal",
            format!(
                "backend daytona: {} accepts the API key ({n} sandbox(es) listed); image {}",
                s.api_url,
                s.snapshot.as_deref().unwrap_or(&s.image)
            ),
        ),
        Err(e) => Check::fail(
            "terminal",
            format!("backend daytona: {e}"),
            "check DAYTONA_API_KEY (and DAYTONA_API_URL for a self-hosted Daytona)",
        ),
    }
}

fn modal_check(settings: &EnvironmentSettings, loaded: &Loaded) -> Check {
    let s = &settings.modal;
    if s.mode == ModalMode::Direct {
        return Check::fail(
            "terminal",
            "backend modal: modal_mode direct needs Modal's gRPC SDK, which this build does not speak",
            "set terminal.modal_mode: managed (Modal through the Nous tool gateway)",
        );
    }
    let token = s
        .token
        .clone()
        .or_else(|| hermes_tools::env::modal::token_from_auth_store(loaded.home.root()));
    match token {
        Some(_) => Check::ok(
            "terminal",
            format!(
                "backend modal: through the tool gateway {} (token present; checked on the first command)",
                s.gateway_url
            ),
        ),
        None => Check::fail(
            "terminal",
            "backend modal: no Nous tool gateway token",
            "set TOOL_GATEWAY_USER_TOKEN in ~/.hermes/.env (a Nous Portal subscription with tool gateway access)",
        ),
    }
}

async fn singularity_check(loaded: &Loaded) -> Check {
    use hermes_tools::env::singularity::{check, find_executable};
    let Some(binary) = find_executable(loaded.env.var("PATH").as_deref()) else {
        return Check::fail(
            "terminal",
            "backend singularity: neither apptainer nor singularity is on PATH",
            "install Apptainer (https://apptainer.org/docs/admin/main/installation.html), or terminal.backend: local",
        );
    };
    match check(&binary).await {
        Ok(version) => Check::ok(
            "terminal",
            format!("backend singularity: {} ({version})", binary.display()),
        ),
        Err(e) => Check::fail(
            "terminal",
            format!("backend singularity: {e}"),
            "reinstall Apptainer or fix its configuration",
        ),
    }
}

async fn docker_check(binary: &str, image: &str) -> Check {
    let cli = DockerCli {
        binary: binary.to_string(),
    };
    let version = match cli.ping().await {
        Ok(v) => v,
        Err(e) => {
            return Check::fail(
                "terminal",
                format!("backend docker: {e}"),
                "install Docker and start its daemon (or set DOCKER_HOST), or terminal.backend: local",
            );
        }
    };
    match cli.has_image(image).await {
        Ok(true) => Check::ok(
            "terminal",
            format!("backend docker: daemon {version}, image {image} present"),
        ),
        Ok(false) => Check::warn(
            "terminal",
            format!(
                "backend docker: daemon {version}, but the image {image} is not on this machine (the first command will try to pull it)"
            ),
            format!("docker pull {image}, or set terminal.docker_image to a local image"),
        ),
        Err(e) => Check::fail(
            "terminal",
            format!("backend docker: {e}"),
            "check the Docker daemon",
        ),
    }
}

/// Connects as a session would (its own master socket, closed afterwards), within 10 s.
async fn ssh_check(settings: SshSettings, loaded: &Loaded) -> Check {
    let shown = format!("{}:{}", settings.destination(), settings.port);
    let dir = tempfile::Builder::new()
        .prefix("hermes-doctor-ssh")
        .tempdir()
        .ok();
    let control = dir.as_ref().map_or_else(
        || loaded.home.root().join("cache").join("ssh"),
        |d| d.path().to_path_buf(),
    );
    let client = SshClient::new(settings, &control, "doctor", std::env::var("HOME").ok());
    let result = tokio::time::timeout(Duration::from_secs(10), check(&client)).await;
    client.close();
    match result {
        Ok(Ok(home)) => Check::ok(
            "terminal",
            format!(
                "backend ssh: {shown} accepts the key, host key known ({}); remote home {home}",
                client.known_hosts().display()
            ),
        ),
        Ok(Err(e)) => Check::fail(
            "terminal",
            format!("backend ssh: {e}"),
            "fix the ssh access above (terminal.ssh_host, ssh_user, ssh_port, ssh_key, ssh_known_hosts), or terminal.backend: local",
        ),
        Err(_) => Check::fail(
            "terminal",
            format!("backend ssh: {shown} did not answer within 10 s"),
            "check that the host is up and its sshd listens on that port (terminal.ssh_host, ssh_port)",
        ),
    }
}
