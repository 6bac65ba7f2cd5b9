//! `hermes gateway install|uninstall|start|restart` (and `stop` when installed): the gateway
//! as a user service, a systemd user unit on Linux and a launchd agent on macOS, named as the
//! Python Hermes names them (`hermes-gateway` / `ai.hermes.gateway` for `~/.hermes`, with
//! `-<profile>` for a profile and `-<hash>` for any other home), so one machine can run a
//! gateway per profile. The service runs this binary with `HERMES_HOME` set, restarts it when
//! it fails (not when its configuration is wrong: exit 2) and gives it 90 s to finish its
//! turns on stop. `systemctl` / `launchctl` are found on `PATH`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use hermes_config::HermesHome;
use sha2::{Digest, Sha256};

use crate::error::CliError;

/// The service manager of this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Systemd,
    Launchd,
}

impl Manager {
    pub fn native() -> Manager {
        if cfg!(target_os = "macos") {
            Manager::Launchd
        } else {
            Manager::Systemd
        }
    }

    fn program(self) -> &'static str {
        match self {
            Manager::Systemd => "systemctl",
            Manager::Launchd => "launchctl",
        }
    }
}

/// What `start`, `stop` and `restart` ask of the service manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Start,
    Stop,
    Restart,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Start => "start",
            Action::Stop => "stop",
            Action::Restart => "restart",
        }
    }
}

/// The service of one home.
pub struct Service {
    pub manager: Manager,
    pub name: String,
    /// The unit file or the launchd plist.
    pub definition_path: PathBuf,
    home: PathBuf,
    /// `gui/<uid>`, launchd's domain of the logged-in user.
    launchd_domain: String,
}

impl Service {
    /// The service of `home` under this machine's manager.
    pub fn of(home: &HermesHome) -> Result<Service, CliError> {
        Service::with_manager(home, Manager::native())
    }

    /// The service of `home` under `manager`: a unit under `$HOME/.config/systemd/user/`, or
    /// a plist under `$HOME/Library/LaunchAgents/`.
    pub fn with_manager(home: &HermesHome, manager: Manager) -> Result<Service, CliError> {
        let user_home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| CliError::config("HOME is not set: no place for a user service"))?;
        let suffix = name_suffix(home, &user_home);
        let (name, definition_path) = match manager {
            Manager::Systemd => {
                let name = format!("hermes-gateway{suffix}");
                let path = user_home
                    .join(".config/systemd/user")
                    .join(format!("{name}.service"));
                (name, path)
            }
            Manager::Launchd => {
                let name = format!("ai.hermes.gateway{suffix}");
                let path = user_home
                    .join("Library/LaunchAgents")
                    .join(format!("{name}.plist"));
                (name, path)
            }
        };
        // launchd's user domain is named by the user's id: the owner of their home (no
        // unsafe call to getuid for it).
        let uid = {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(&user_home).map(|m| m.uid()).unwrap_or(0)
        };
        Ok(Service {
            manager,
            name,
            definition_path,
            home: home.root().to_path_buf(),
            launchd_domain: format!("gui/{uid}"),
        })
    }

    pub fn installed(&self) -> bool {
        self.definition_path.is_file()
    }

    /// The unit file or plist, running `exe`.
    pub fn definition(&self, exe: &Path) -> String {
        match self.manager {
            Manager::Systemd => self.unit(exe),
            Manager::Launchd => self.plist(exe),
        }
    }

    fn unit(&self, exe: &Path) -> String {
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

    /// A launchd agent: started at login, restarted when it exits with a failure (launchd has
    /// no "not on exit 2": a configuration error is retried every 10 s, which the log shows),
    /// output to `$HERMES_HOME/logs/gateway.log`, 90 s to stop.
    fn plist(&self, exe: &Path) -> String {
        let path = std::env::var("PATH")
            .unwrap_or_else(|_| "/usr/local/bin:/opt/homebrew/bin:/usr/bin:/bin".into());
        let log = self.home.join("logs").join("gateway.log");
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
    <key>Label</key>
    <string>{label}</string>
    <key>ProgramArguments</key>
    <array>
        <string>{exe}</string>
        <string>gateway</string>
        <string>run</string>
    </array>
    <key>WorkingDirectory</key>
    <string>{home}</string>
    <key>EnvironmentVariables</key>
    <dict>
        <key>HERMES_HOME</key>
        <string>{home}</string>
        <key>PATH</key>
        <string>{path}</string>
    </dict>
    <key>RunAtLoad</key>
    <true/>
    <key>KeepAlive</key>
    <dict>
        <key>SuccessfulExit</key>
        <false/>
    </dict>
    <key>ThrottleInterval</key>
    <integer>10</integer>
    <key>ExitTimeOut</key>
    <integer>90</integer>
    <key>StandardOutPath</key>
    <string>{log}</string>
    <key>StandardErrorPath</key>
    <string>{log}</string>
</dict>
</plist>
"#,
            label = xml(&self.name),
            exe = xml(&exe.to_string_lossy()),
            home = xml(&self.home.to_string_lossy()),
            path = xml(&path),
            log = xml(&log.to_string_lossy()),
        )
    }

    /// `gui/<uid>/<label>`: launchd's name of the loaded service.
    fn launchd_target(&self) -> String {
        format!("{}/{}", self.launchd_domain, self.name)
    }

    /// The manager commands that load and start a freshly written definition.
    fn install_steps(&self) -> Vec<Step> {
        match self.manager {
            Manager::Systemd => vec![
                Step::must(["daemon-reload"]),
                Step::must(["enable", "--now", &self.name]),
            ],
            Manager::Launchd => vec![
                // A previous definition still loaded would make bootstrap fail.
                Step::may(["bootout", &self.launchd_target()]),
                Step::must([
                    "bootstrap",
                    &self.launchd_domain,
                    &self.definition_path.to_string_lossy(),
                ]),
            ],
        }
    }

    /// The commands that stop and unload the service before its definition is removed.
    fn uninstall_steps(&self) -> Vec<Step> {
        match self.manager {
            Manager::Systemd => vec![Step::may(["disable", "--now", &self.name])],
            Manager::Launchd => vec![Step::may(["bootout", &self.launchd_target()])],
        }
    }

    /// After the definition is gone.
    fn after_uninstall_steps(&self) -> Vec<Step> {
        match self.manager {
            Manager::Systemd => vec![Step::may(["daemon-reload"])],
            Manager::Launchd => Vec::new(),
        }
    }

    fn control_steps(&self, action: Action) -> Vec<Step> {
        let target = self.launchd_target();
        let plist = self.definition_path.to_string_lossy().into_owned();
        match (self.manager, action) {
            (Manager::Systemd, action) => vec![Step::must([action.as_str(), &self.name])],
            // `stop` unloads the agent (KeepAlive would restart a killed one); `start` loads
            // it again if needed and starts it.
            (Manager::Launchd, Action::Start) => vec![
                Step::may(["bootstrap", &self.launchd_domain, &plist]),
                Step::must(["kickstart", &target]),
            ],
            (Manager::Launchd, Action::Stop) => vec![Step::must(["bootout", &target])],
            (Manager::Launchd, Action::Restart) => vec![
                Step::may(["bootstrap", &self.launchd_domain, &plist]),
                Step::must(["kickstart", "-k", &target]),
            ],
        }
    }

    /// Where its log goes, for the messages.
    fn log_hint(&self) -> String {
        match self.manager {
            Manager::Systemd => format!("journalctl --user -u {}", self.name),
            Manager::Launchd => self.home.join("logs/gateway.log").display().to_string(),
        }
    }
}

/// One call of the service manager; a `may` step's failure is not an error (unloading what
/// is not loaded).
struct Step {
    args: Vec<String>,
    must: bool,
}

impl Step {
    fn must<const N: usize>(args: [&str; N]) -> Step {
        Step {
            args: args.iter().map(|a| a.to_string()).collect(),
            must: true,
        }
    }

    fn may<const N: usize>(args: [&str; N]) -> Step {
        Step {
            must: false,
            ..Step::must(args)
        }
    }
}

/// Runs `steps` with `program` (`systemctl` gets `--user` first); the error says what failed.
fn run_steps(manager: Manager, program: &Path, steps: &[Step]) -> Result<(), CliError> {
    for step in steps {
        let mut cmd = Command::new(program);
        if manager == Manager::Systemd {
            cmd.arg("--user");
        }
        let shown = format!("{} {}", manager.program(), step.args.join(" "));
        let status = cmd.args(&step.args).status().map_err(|e| {
            CliError::runtime(format!(
                "cannot run {} ({e}): this machine has no {} user session; run `hermes gateway run` under your own supervisor",
                manager.program(),
                match manager {
                    Manager::Systemd => "systemd",
                    Manager::Launchd => "launchd",
                }
            ))
        })?;
        if !status.success() {
            if step.must {
                return Err(CliError::runtime(format!("`{shown}` failed ({status})")));
            }
            tracing::debug!("`{shown}` failed ({status}); not needed");
        }
    }
    Ok(())
}

fn run(service: &Service, steps: &[Step]) -> Result<(), CliError> {
    run_steps(service.manager, Path::new(service.manager.program()), steps)
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

/// Text in a plist `<string>`.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// ``, `-<profile>` or `-<first 8 hex of sha256 of the home>`.
fn name_suffix(home: &HermesHome, user_home: &Path) -> String {
    let root = home.root();
    if root == user_home.join(".hermes") {
        return String::new();
    }
    if let Some(profile) = home.profile_name() {
        let ok = profile
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if ok && !profile.is_empty() && profile.len() <= 64 {
            return format!("-{profile}");
        }
    }
    let digest = Sha256::digest(root.to_string_lossy().as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("-{hex}")
}

/// `install`: writes the definition and loads and starts the service.
pub fn install(home: &HermesHome) -> Result<ExitCode, CliError> {
    let service = Service::of(home)?;
    let exe = std::env::current_exe()
        .map_err(|e| CliError::runtime(format!("cannot find this program's path: {e}")))?;
    let mut dirs = vec![service.definition_path.parent().map(Path::to_path_buf)];
    if service.manager == Manager::Launchd {
        dirs.push(Some(service.home.join("logs")));
    }
    for dir in dirs.into_iter().flatten() {
        std::fs::create_dir_all(&dir)
            .map_err(|e| CliError::runtime(format!("cannot create {}: {e}", dir.display())))?;
    }
    hermes_config::atomic_write(
        &service.definition_path,
        service.definition(&exe).as_bytes(),
    )
    .map_err(|e| CliError::runtime(e.to_string()))?;
    println!("Wrote {}", service.definition_path.display());
    run(&service, &service.install_steps())?;
    println!(
        "Installed and started {}: `hermes gateway status` shows it; logs: {}",
        service.name,
        service.log_hint()
    );
    Ok(ExitCode::SUCCESS)
}

/// `uninstall`: stops and unloads the service and removes its definition.
pub fn uninstall(home: &HermesHome) -> Result<ExitCode, CliError> {
    let service = Service::of(home)?;
    if !service.installed() {
        println!("{} is not installed.", service.name);
        return Ok(ExitCode::SUCCESS);
    }
    // A service the manager no longer knows still has its file removed.
    run(&service, &service.uninstall_steps())?;
    std::fs::remove_file(&service.definition_path).map_err(|e| {
        CliError::runtime(format!(
            "cannot remove {}: {e}",
            service.definition_path.display()
        ))
    })?;
    run(&service, &service.after_uninstall_steps())?;
    println!("Removed {}.", service.name);
    Ok(ExitCode::SUCCESS)
}

/// `start` / `restart` / `stop` of the installed service.
pub fn control(home: &HermesHome, action: Action) -> Result<ExitCode, CliError> {
    let service = Service::of(home)?;
    if !service.installed() {
        return Err(CliError::config(
            "the gateway service is not installed: `hermes gateway install` sets it up, or `hermes gateway run` runs it in the foreground",
        ));
    }
    run(&service, &service.control_steps(action))?;
    println!("{}: {}", action.as_str(), service.name);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launchd_service(root: &Path) -> Service {
        Service {
            manager: Manager::Launchd,
            name: "ai.hermes.gateway-coder".into(),
            definition_path: root.join("Library/LaunchAgents/ai.hermes.gateway-coder.plist"),
            home: root.join(".hermes/profiles/coder & co"),
            launchd_domain: "gui/501".into(),
        }
    }

    #[test]
    fn the_launchd_plist_runs_the_gateway_with_its_home_and_escapes_text() {
        let root = Path::new("/Users/ann");
        let plist = launchd_service(root).definition(Path::new("/opt/hermes/bin/hermes"));
        assert!(plist.contains("<key>Label</key>\n    <string>ai.hermes.gateway-coder</string>"));
        assert!(plist.contains(
            "<string>/opt/hermes/bin/hermes</string>\n        <string>gateway</string>\n        <string>run</string>"
        ));
        assert!(plist.contains("<key>HERMES_HOME</key>\n        <string>/Users/ann/.hermes/profiles/coder &amp; co</string>"));
        assert!(plist.contains(
            "<string>/Users/ann/.hermes/profiles/coder &amp; co/logs/gateway.log</string>"
        ));
        assert!(plist.contains("<key>SuccessfulExit</key>\n        <false/>"));
        assert!(!plist.contains("coder & co"), "unescaped text: {plist}");
    }

    /// A stand-in manager that appends its arguments to `calls.log` and fails on `fail_on`.
    fn fake(dir: &Path, fail_on: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let program = dir.join("launchctl");
        std::fs::write(
            &program,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\n[ \"$1\" = '{fail_on}' ] && exit 3\nexit 0\n",
                dir.join("calls.log").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        program
    }

    #[test]
    fn launchd_steps_load_start_and_unload_the_agent() {
        let dir = tempfile::tempdir().unwrap();
        let service = launchd_service(Path::new("/Users/ann"));
        // A first install: nothing to boot out (that call fails and does not matter).
        let program = fake(dir.path(), "bootout");
        run_steps(Manager::Launchd, &program, &service.install_steps()).unwrap();
        for action in [Action::Restart, Action::Start] {
            run_steps(Manager::Launchd, &program, &service.control_steps(action)).unwrap();
        }
        // Stopping must unload it: a failure there is reported.
        let err = run_steps(
            Manager::Launchd,
            &program,
            &service.control_steps(Action::Stop),
        )
        .unwrap_err();
        assert!(
            err.message
                .contains("`launchctl bootout gui/501/ai.hermes.gateway-coder` failed"),
            "{}",
            err.message
        );
        let calls = std::fs::read_to_string(dir.path().join("calls.log")).unwrap();
        let plist = "/Users/ann/Library/LaunchAgents/ai.hermes.gateway-coder.plist";
        assert_eq!(
            calls,
            format!(
                "bootout gui/501/ai.hermes.gateway-coder\n\
                 bootstrap gui/501 {plist}\n\
                 bootstrap gui/501 {plist}\n\
                 kickstart -k gui/501/ai.hermes.gateway-coder\n\
                 bootstrap gui/501 {plist}\n\
                 kickstart gui/501/ai.hermes.gateway-coder\n\
                 bootout gui/501/ai.hermes.gateway-coder\n"
            )
        );
    }
}
