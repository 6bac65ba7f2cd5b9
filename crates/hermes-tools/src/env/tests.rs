use std::path::Path;
use std::sync::Arc;

use hermes_config::{Config, Environment};

use super::docker::DockerEnvironment;
use super::local::LocalEnvironment;
use super::shell_fs::{self, GrepMode, Read, ShellFs};
use super::*;

fn config(yaml: &str) -> Result<EnvironmentSettings, hermes_config::ConfigError> {
    EnvironmentSettings::from_config_with(&parsed(yaml), |_| None)
}

fn parsed(yaml: &str) -> Config {
    Config::from_yaml(Path::new("/h/config.yaml"), yaml, &Environment::default()).unwrap()
}

#[test]
fn defaults_are_the_python_hermes_ones() {
    let s = config("").unwrap();
    assert_eq!(s.backend, Backend::Local);
    let d = s.docker;
    assert_eq!(d.image, "nikolaik/python-nodejs:python3.11-nodejs20");
    assert_eq!((d.cpu, d.memory, d.disk), (1.0, 5120, 51200));
    assert!(d.persistent && d.network && !d.mount_cwd_to_workspace && !d.run_as_host_user);
    assert_eq!(d.binary, "docker");
}

#[test]
fn docker_keys_are_read() {
    let s = config(
        "terminal:\n  backend: Docker\n  docker_image: img:1\n  docker_binary: podman\n  docker_env: {A: 1, B: x}\n  docker_forward_env: [TOKEN]\n  container_cpu: 0.5\n  container_memory: 256\n  container_persistent: false\n  docker_volumes: ['/h:/data:ro']\n  docker_network: false\n  docker_extra_args: ['--read-only']\n",
    )
    .unwrap();
    assert_eq!(s.backend, Backend::Docker);
    assert_eq!(s.docker.image, "img:1");
    assert_eq!(s.docker.binary, "podman");
    assert_eq!(s.docker.env.get("A").map(String::as_str), Some("1"));
    assert_eq!(s.docker.forward_env, vec!["TOKEN"]);
    assert_eq!(s.docker.cpu, 0.5);
    assert!(!s.docker.persistent && !s.docker.network);
    assert_eq!(s.docker.extra_args, vec!["--read-only"]);
}

#[test]
fn bad_values_are_config_errors_naming_the_key() {
    let e = config("terminal:\n  backend: kubernetes\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("terminal.backend") && e.contains(Backend::CHOICES),
        "{e}"
    );
    for (yaml, key) in [
        ("terminal:\n  docker_env: {'A B': x}\n", "docker_env"),
        (
            "terminal:\n  docker_forward_env: ['1X']\n",
            "docker_forward_env",
        ),
        ("terminal:\n  docker_volumes: [nocolon]\n", "docker_volumes"),
        ("terminal:\n  container_cpu: -1\n", "container_cpu"),
        ("terminal:\n  docker_image: ' '\n", "docker_image"),
    ] {
        let e = config(yaml).unwrap_err().to_string();
        assert!(e.contains(key), "{yaml}: {e}");
    }
    // ssh needs a host; the keys fall back to TERMINAL_SSH_* (here: none set by the test).
    let e = EnvironmentSettings::from_config_with(&parsed("terminal:\n  backend: ssh\n"), |_| None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("ssh_host"), "{e}");
    for (yaml, key) in [
        ("terminal:\n  ssh_host: '-oProxyCommand=x'\n", "ssh_host"),
        ("terminal:\n  ssh_host: h\n  ssh_port: 70000\n", "ssh_port"),
        ("terminal:\n  ssh_host: h\n  ssh_cwd: rel\n", "ssh_cwd"),
        ("terminal:\n  ssh_host: h\n  ssh_user: '-l x'\n", "ssh_user"),
    ] {
        let e = config(yaml).unwrap_err().to_string();
        assert!(e.contains(key), "{yaml}: {e}");
    }
    let vars = |name: &str| match name {
        "TERMINAL_SSH_HOST" => Some("env-host".to_string()),
        "TERMINAL_SSH_PORT" => Some("2200".to_string()),
        "TERMINAL_SSH_KEY" => Some("~/.ssh/k".to_string()),
        "HOME" => Some("/home/me".to_string()),
        _ => None,
    };
    let s = EnvironmentSettings::from_config_with(
        &parsed("terminal:\n  backend: ssh\n  ssh_user: deploy\n  ssh_cwd: /srv\n"),
        vars,
    )
    .unwrap();
    assert_eq!(s.backend, Backend::Ssh);
    assert_eq!(s.ssh.destination(), "deploy@env-host");
    assert_eq!(s.ssh.port, 2200);
    assert_eq!(
        s.ssh.key.as_deref(),
        Some(std::path::Path::new("/home/me/.ssh/k"))
    );
    assert_eq!(s.ssh.cwd.as_deref(), Some("/srv"));
    for name in ["modal", "daytona", "singularity"] {
        let s = config(&format!("terminal:\n  backend: {name}\n")).unwrap();
        assert_eq!(s.backend.as_str(), name);
    }
}

#[test]
fn cloud_backend_keys_and_variables() {
    let vars = |name: &str| match name {
        "DAYTONA_API_KEY" => Some("dtn_key".to_string()),
        "DAYTONA_API_URL" => Some("http://127.0.0.1:9/api/".to_string()),
        "TERMINAL_MODAL_IMAGE" => Some("python:3.12".to_string()),
        "TOOL_GATEWAY_DOMAIN" => Some("example.org".to_string()),
        "TOOL_GATEWAY_USER_TOKEN" => Some("nous-token".to_string()),
        _ => None,
    };
    let s = EnvironmentSettings::from_config_with(
        &parsed("terminal:\n  backend: daytona\n  daytona_image: ubuntu:24.04\n  daytona_auto_stop: 0\n  modal_mode: managed\n  singularity_image: /images/a.sif\n"),
        vars,
    )
    .unwrap();
    assert_eq!(s.daytona.image, "ubuntu:24.04");
    assert_eq!(s.daytona.auto_stop, 0);
    assert_eq!(s.daytona.api_key.as_deref(), Some("dtn_key"));
    assert_eq!(s.daytona.api_url, "http://127.0.0.1:9/api");
    assert_eq!(s.modal.image, "python:3.12");
    assert_eq!(s.modal.mode, ModalMode::Managed);
    assert_eq!(s.modal.gateway_url, "https://modal-gateway.example.org");
    assert_eq!(s.modal.token.as_deref(), Some("nous-token"));
    assert_eq!(s.singularity.image, "/images/a.sif");
    let d = config("terminal:\n  backend: modal\n").unwrap();
    assert_eq!(d.daytona.api_url, "https://app.daytona.io/api");
    assert_eq!(d.daytona.auto_stop, 15);
    assert_eq!(
        d.modal.gateway_url,
        "https://modal-gateway.nousresearch.com"
    );
    assert_eq!(
        d.singularity.image,
        "docker://nikolaik/python-nodejs:python3.11-nodejs20"
    );
    let e = config("terminal:\n  modal_mode: grpc\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("terminal.modal_mode"), "{e}");
}

#[test]
fn quoting_and_paths() {
    assert_eq!(sh_quote("a b"), "'a b'");
    assert_eq!(sh_quote("it's"), "'it'\\''s'");
    assert_eq!(resolve_posix("/workspace", "a/../b/./c"), "/workspace/b/c");
    assert_eq!(resolve_posix("/workspace", "/etc//x"), "/etc/x");
    assert_eq!(resolve_posix("/workspace", "~/.bashrc"), "/root/.bashrc");
    assert_eq!(resolve_posix("/workspace", "../../.."), "/");
    assert_eq!(resolve_posix("/workspace", ""), "/workspace");
}

#[test]
fn run_args_are_hardened_and_carry_only_the_configured_env() {
    let mut s = DockerSettings {
        image: "img".into(),
        persistent: false,
        network: false,
        ..DockerSettings::default()
    };
    s.env.insert("A".into(), "1".into());
    s.forward_env = vec!["FWD".into(), "UNSET".into()];
    let env = DockerEnvironment::new(s, "/host/cwd".into(), Path::new("/h"), "sess 1", |n| {
        (n == "FWD").then(|| "v".to_string())
    });
    let args = env.run_args().join(" ");
    for want in [
        "--cap-drop ALL",
        "--security-opt no-new-privileges",
        "--pids-limit 256",
        "--cpus 1",
        "--memory 5120m",
        "--network none",
        "--tmpfs /workspace:rw,exec,size=10g",
        "-e A=1",
        "-e FWD=v",
        "--label hermes.session=sess1-",
        "img sleep infinity",
    ] {
        assert!(args.contains(want), "{want} missing: {args}");
    }
    assert!(!args.contains("UNSET"), "{args}");
    assert!(!args.contains("/host/cwd"), "{args}");
}

#[test]
fn a_persistent_container_is_named_per_home_and_mounts_cwd_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let s = DockerSettings {
        mount_cwd_to_workspace: true,
        ..DockerSettings::default()
    };
    let a = DockerEnvironment::new(s.clone(), tmp.path().into(), Path::new("/h1"), "x", |_| {
        None
    });
    let b = DockerEnvironment::new(s.clone(), tmp.path().into(), Path::new("/h1"), "y", |_| {
        None
    });
    let c = DockerEnvironment::new(s, tmp.path().into(), Path::new("/h2"), "x", |_| None);
    assert_eq!(a.container_name(), b.container_name());
    assert_ne!(a.container_name(), c.container_name());
    let args = a.run_args().join(" ");
    assert!(
        args.contains(&format!("-v {}:/workspace", tmp.path().display())),
        "{args}"
    );
    assert!(!args.contains("--network none"), "{args}");
}

/// The shell_fs scripts run for real through the local shell: hostile names stay data.
#[tokio::test]
async fn shell_fs_survives_hostile_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ShellFs::new(Arc::new(LocalEnvironment::new(tmp.path().into())));
    let base = tmp.path().display().to_string();
    for name in [
        "plain.txt",
        "with space.txt",
        "it's \"quoted\".txt",
        "new\nline.txt",
        "$(touch pwned).txt",
        "-dash.txt",
        "back`tick`;rm -rf x.txt",
    ] {
        let path = format!("{base}/sub dir/{name}");
        fs.write(&path, b"a\0b\nline two\n").await.unwrap();
        match fs.read(&path).await.unwrap() {
            Read::File { size, bytes } => {
                assert_eq!(size, 13, "{name:?}");
                assert_eq!(bytes, b"a\0b\nline two\n", "{name:?}");
            }
            other => panic!("{name:?}: {other:?}"),
        }
        assert!(
            std::fs::read(tmp.path().join("sub dir").join(name)).is_ok(),
            "{name:?}"
        );
    }
    assert!(!tmp.path().join("pwned").exists());
    assert!(!tmp.path().join("sub dir/pwned").exists());
    assert_eq!(
        fs.read(&format!("{base}/nope")).await.unwrap(),
        Read::Missing
    );
    match fs.read(&format!("{base}/sub dir")).await.unwrap() {
        Read::Directory(entries) => assert!(entries.contains(&"plain.txt".to_string())),
        other => panic!("{other:?}"),
    }
    let hits = fs
        .lines(&shell_fs::grep_script(
            &base,
            "line t[w]o",
            Some("*.txt"),
            GrepMode::Files,
            0,
            100,
        ))
        .await
        .unwrap();
    assert!(
        hits.iter().any(|h| h.ends_with("with space.txt")),
        "{hits:?}"
    );
    let found = fs
        .lines(&shell_fs::find_script(&base, "it's*", 10))
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
}

#[test]
fn reads_parse_and_garbage_is_refused() {
    assert_eq!(shell_fs::parse_read(b"N\n".to_vec()), Some(Read::Missing));
    assert_eq!(
        shell_fs::parse_read(b"F 3\nabc".to_vec()),
        Some(Read::File {
            size: 3,
            bytes: b"abc".to_vec()
        })
    );
    assert_eq!(shell_fs::parse_read(b"F x\n".to_vec()), None);
    assert_eq!(shell_fs::parse_read(b"garbage".to_vec()), None);
    assert_eq!(shell_fs::parse_read(Vec::new()), None);
}
