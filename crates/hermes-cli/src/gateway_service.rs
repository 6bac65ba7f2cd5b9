//! `hermes gateway install|uninstall|start|restart` (and `stop` when installed): the gateway
//! as a systemd user service on Linux, named as the Python Hermes names it (`hermes-gateway`
//! for `~/.hermes`, `hermes-gateway-<profile>` for a profile, `hermes-gateway-<hash>` for any
//! other home), so one machine can run a gateway per profile. The unit runs this binary with
//! `HERMES_HOME` set, restarts it when it fails (not when its configuration is wrong: exit 2)
//! and gives it 90 s to finish its turns on stop. `systemctl` is found on `PATH`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use hermes_config::HermesHome;
use sha2::{Digest, Sha256};

use crate::error::CliError;

/// The service of one home.
pub struct Service {
    pub name: String,
    pub unit_path: PathBuf,
    home: PathBuf,
}

impl Service {
    /// The service of `home`, its unit under `$HOME/.config/systemd/user/`.
    pub fn of(home: &HermesHome) -> Result<Service, CliError> {
        let user_home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| CliError::config("HOME is not set: no place for a user service"))?;
        let name = service_name(home, &user_home);
        Ok(Service {
            unit_path: user_home
                .join(".config/systemd/user")
                .join(format!("{name}.service")),
            name,
            home: home.root().to_path_buf(),
        })
    }

    pub fn installed(&self) -> bool {
        self.unit_path.is_file()
    }

    /// The unit file's text, running `exe`.
    pub fn unit(&self, exe: &Path) -> String {
        format!(
            "[Unit]\n\
             Description=Hermes Agent gateway ({home})\n\
             After=network-online.target\n\
             Wants=network-online.target\n\
             \n\
             [Service]\n\
             Type=simple\n\
             ExecStart={exe} gateway run\n\
             WorkingDirectory={home}\n\
             Environment=\"HERMES_HOME={home}\"\n\
             Restart=on-failure\n\
             RestartSec=5\n\
             RestartPreventExitStatus=2\n\
             KillMode=mixed\n\
             KillSignal=SIGTERM\n\
             TimeoutStopSec=90\n\
             \n\
             [Install]\n\
             WantedBy=default.target\n",
            exe = quote(exe),
            home = quote(&self.home),
        )
    }
}

/// systemd's quoting for a path in `ExecStart=` and `Environment=`: spaces and quotes escaped.
fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    if text.contains([' ', '"', '\\']) {
        let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
        format!("\"{escaped}\"")
    } else {
        text.into_owned()
    }
}

/// `hermes-gateway`, `hermes-gateway-<profile>` or `hermes-gateway-<first 8 hex of sha256>`.
fn service_name(home: &HermesHome, user_home: &Path) -> String {
    let root = home.root();
    if root == user_home.join(".hermes") {
        return "hermes-gateway".into();
    }
    if let Some(profile) = home.profile_name() {
        let ok = profile
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if ok && !profile.is_empty() && profile.len() <= 64 {
            return format!("hermes-gateway-{profile}");
        }
    }
    let digest = Sha256::digest(root.to_string_lossy().as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("hermes-gateway-{hex}")
}

/// `systemctl --user ARGS`; the error says what failed.
fn systemctl(args: &[&str]) -> Result<(), CliError> {
    let status = Command::new("systemctl")
        .arg("--user")
        .args(args)
        .status()
        .map_err(|e| {
            CliError::runtime(format!(
                "cannot run systemctl ({e}): this machine has no systemd user session; run `hermes gateway run` under your own supervisor"
            ))
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(CliError::runtime(format!(
            "`systemctl --user {}` failed ({status})",
            args.join(" ")
        )))
    }
}

/// `install`: writes the unit, reloads systemd and enables and starts the service.
pub fn install(home: &HermesHome) -> Result<ExitCode, CliError> {
    let service = Service::of(home)?;
    let exe = std::env::current_exe()
        .map_err(|e| CliError::runtime(format!("cannot find this program's path: {e}")))?;
    if let Some(dir) = service.unit_path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::runtime(format!("cannot create {}: {e}", dir.display())))?;
    }
    hermes_config::atomic_write(&service.unit_path, service.unit(&exe).as_bytes())
        .map_err(|e| CliError::runtime(e.to_string()))?;
    println!("Wrote {}", service.unit_path.display());
    systemctl(&["daemon-reload"])?;
    systemctl(&["enable", "--now", &service.name])?;
    println!(
        "Installed and started {}: `hermes gateway status` shows it; logs: journalctl --user -u {}",
        service.name, service.name
    );
    Ok(ExitCode::SUCCESS)
}

/// `uninstall`: stops and disables the service and removes its unit.
pub fn uninstall(home: &HermesHome) -> Result<ExitCode, CliError> {
    let service = Service::of(home)?;
    if !service.installed() {
        println!("{} is not installed.", service.name);
        return Ok(ExitCode::SUCCESS);
    }
    // A service systemd no longer knows still has its file removed.
    if let Err(e) = systemctl(&["disable", "--now", &service.name]) {
        eprintln!("hermes: {}", e.message);
    }
    std::fs::remove_file(&service.unit_path).map_err(|e| {
        CliError::runtime(format!(
            "cannot remove {}: {e}",
            service.unit_path.display()
        ))
    })?;
    let _ = systemctl(&["daemon-reload"]);
    println!("Removed {}.", service.name);
    Ok(ExitCode::SUCCESS)
}

/// `start` / `restart` / `stop` of the installed service.
pub fn control(home: &HermesHome, action: &str) -> Result<ExitCode, CliError> {
    let service = Service::of(home)?;
    if !service.installed() {
        return Err(CliError::config(
            "the gateway service is not installed: `hermes gateway install` sets it up, or `hermes gateway run` runs it in the foreground",
        ));
    }
    systemctl(&[action, &service.name])?;
    println!("{action}: {}", service.name);
    Ok(ExitCode::SUCCESS)
}
