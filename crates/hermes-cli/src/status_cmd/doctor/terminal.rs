//! The `terminal` check of `hermes doctor`: the backend commands and file tools will use
//! (`terminal.backend`), and for Docker whether the daemon answers and the image is there, so
//! a missing daemon or image shows here rather than on the agent's first command; for SSH
//! whether `ssh -o BatchMode=yes` gets in within 10 s (host reachable, key accepted, host key
//! known), else the reason and the fix.

use std::time::Duration;

use hermes_tools::env::docker::DockerCli;
use hermes_tools::env::ssh::{SshClient, check};
use hermes_tools::env::{Backend, EnvironmentSettings, SshSettings};

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
        other => Check::fail(
            "terminal",
            format!("backend {other} is not in this build yet: sessions will not start"),
            "terminal.backend: local, docker or ssh in config.yaml",
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
