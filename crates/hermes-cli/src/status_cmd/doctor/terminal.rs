//! The `terminal` check of `hermes doctor`: the backend commands and file tools will use
//! (`terminal.backend`), and for Docker whether the daemon answers and the image is there, so
//! a missing daemon or image shows here rather than on the agent's first command.

use hermes_tools::env::docker::DockerCli;
use hermes_tools::env::{Backend, EnvironmentSettings};

use super::Check;
use crate::status_cmd::Loaded;

pub(super) async fn terminal_check(loaded: &Loaded) -> Check {
    let settings = match EnvironmentSettings::from_config(&loaded.config) {
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
        other => Check::fail(
            "terminal",
            format!("backend {other} is not in this build yet: sessions will not start"),
            "terminal.backend: local or docker in config.yaml",
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
