//! A private Docker daemon for the terminal backend's end-to-end tests ([`DockerDaemon`]):
//! Debian's `dockerd` on a Unix socket under a short temporary directory, in a mode that
//! leaves the host alone (no iptables rules, no bridge, no IP forwarding; `vfs` storage), with
//! a registry-free image imported from the static busybox (`docker import`). Stopped and
//! cleaned up (mounts, the directory, empty cgroups) on drop. `start` returns `Err(reason)`
//! when dockerd cannot run here (not installed, not root), so a test can print why it skips.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The image every daemon has: busybox with every applet linked, `/etc/passwd`, and
/// `/etc/hermes-marker` (a file only the container has).
pub const TEST_IMAGE: &str = "hermes-test-busybox:latest";
/// What `/etc/hermes-marker` holds.
pub const MARKER: &str = "inside-the-hermes-test-container";

pub struct DockerDaemon {
    child: Option<Child>,
    dir: Option<tempfile::TempDir>,
    socket: PathBuf,
}

fn find(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in names {
        for dir in std::env::split_paths(&path).chain(
            ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
                .iter()
                .map(PathBuf::from),
        ) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl DockerDaemon {
    /// Starts dockerd and imports [`TEST_IMAGE`].
    pub fn start() -> Result<DockerDaemon, String> {
        let dockerd = find(&["dockerd"])
            .ok_or("dockerd is not installed (scripts/setup-peers installs docker.io as root)")?;
        find(&["docker"]).ok_or("the docker CLI is not installed")?;
        let busybox = ["/bin/busybox", "/usr/bin/busybox"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or("busybox is not installed (apt-get install busybox-static)")?;
        if !is_root() {
            return Err("dockerd needs root here (no rootless setup)".into());
        }
        // containerd's socket lives under the directory: keep the path short (108 bytes).
        let dir = tempfile::Builder::new()
            .prefix("hd")
            .tempdir_in("/tmp")
            .map_err(|e| e.to_string())?;
        let root = dir.path();
        std::fs::write(root.join("daemon.json"), "{}").map_err(|e| e.to_string())?;
        let socket = root.join("docker.sock");
        let log = std::fs::File::create(root.join("dockerd.log")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(dockerd)
            .arg("--host")
            .arg(format!("unix://{}", socket.display()))
            .arg("--data-root")
            .arg(root.join("root"))
            .arg("--exec-root")
            .arg(root.join("exec"))
            .arg("--pidfile")
            .arg(root.join("docker.pid"))
            .arg("--config-file")
            .arg(root.join("daemon.json"))
            .args([
                "--iptables=false",
                "--ip6tables=false",
                "--ip-forward=false",
                "--ip-masq=false",
                "--bridge=none",
                "--storage-driver=vfs",
            ])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("cannot start dockerd: {e}"))?;
        let mut daemon = DockerDaemon {
            child: Some(child),
            dir: Some(dir),
            socket,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if daemon.docker(&["version"]).status.success() {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("dockerd did not answer: {}", daemon.log_tail()));
            }
            if let Some(c) = daemon.child.as_mut()
                && c.try_wait().ok().flatten().is_some()
            {
                return Err(format!("dockerd exited: {}", daemon.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        daemon.import_image(&busybox)?;
        Ok(daemon)
    }

    fn root(&self) -> &Path {
        self.dir
            .as_ref()
            .map_or(Path::new("/nonexistent"), |d| d.path())
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.root().join("dockerd.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().rev().take(5).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    fn import_image(&self, busybox: &Path) -> Result<(), String> {
        let rootfs = self.root().join("rootfs");
        let bin = rootfs.join("bin");
        std::fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(rootfs.join("etc")).map_err(|e| e.to_string())?;
        std::fs::copy(busybox, bin.join("busybox")).map_err(|e| e.to_string())?;
        let list = Command::new(busybox)
            .arg("--list")
            .output()
            .map_err(|e| e.to_string())?;
        for applet in String::from_utf8_lossy(&list.stdout).lines() {
            let applet = applet.trim();
            if applet.is_empty() || applet == "busybox" || applet.contains('/') {
                continue;
            }
            std::os::unix::fs::symlink("busybox", bin.join(applet)).map_err(|e| e.to_string())?;
        }
        std::fs::write(rootfs.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")
            .map_err(|e| e.to_string())?;
        std::fs::write(rootfs.join("etc/hermes-marker"), format!("{MARKER}\n"))
            .map_err(|e| e.to_string())?;
        let tar = Command::new("tar")
            .arg("-C")
            .arg(&rootfs)
            .args(["-cf", "-", "."])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let out = Command::new("docker")
            .env("DOCKER_HOST", self.host())
            .args(["import", "-", TEST_IMAGE])
            .stdin(tar.stdout.ok_or("tar has no stdout")?)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "docker import failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// `unix://SOCKET`, for `DOCKER_HOST`.
    pub fn host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Runs the docker CLI against this daemon.
    pub fn docker(&self, args: &[&str]) -> Output {
        Command::new("docker")
            .env("DOCKER_HOST", self.host())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run docker: {e}"))
    }

    /// The docker CLI's stdout (trimmed).
    pub fn docker_out(&self, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.docker(args).stdout)
            .trim()
            .to_string()
    }

    /// Names of every container (running or not) carrying the label `key` (`key=value` too).
    pub fn containers_with_label(&self, label: &str) -> Vec<String> {
        self.docker_out(&[
            "ps",
            "-a",
            "--filter",
            &format!("label={label}"),
            "--format",
            "{{.Names}}",
        ])
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
    }
}

impl Drop for DockerDaemon {
    fn drop(&mut self) {
        // Containers first, so nothing of ours keeps running under another daemon's eyes.
        let ids = self.docker_out(&["ps", "-aq"]);
        for id in ids.lines().filter(|l| !l.is_empty()) {
            let _ = self.docker(&["rm", "-f", id]);
        }
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline && child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let root = self.root().to_path_buf();
        if let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") {
            let mut ours: Vec<&str> = mounts
                .lines()
                .filter_map(|l| l.split_whitespace().nth(1))
                .filter(|m| Path::new(m).starts_with(&root))
                .collect();
            ours.sort_by_key(|m| std::cmp::Reverse(m.len()));
            for m in ours {
                let _ = Command::new("umount").arg(m).status();
            }
        }
        drop(self.dir.take());
        // Empty cgroup directories dockerd leaves (a directory in use is not removed).
        if let Ok(entries) = std::fs::read_dir("/sys/fs/cgroup") {
            for e in entries.flatten() {
                let _ = std::fs::remove_dir(e.path().join("docker"));
            }
        }
    }
}
