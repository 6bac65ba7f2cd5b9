//! Driving the binary in a real terminal: tmux (a terminal emulator with a pseudo-terminal) runs
//! it, keys are typed with `send-keys` and the screen is read with `capture-pane`. tmux is
//! installed by scripts/setup.

use std::process::Command;
use std::time::{Duration, Instant};

use hermes_testkit::TestHome;

use super::bin;

/// Expectations wait this long: builds are slow and machines busy, but nothing here should
/// take more than a second when things work.
const PATIENCE: Duration = Duration::from_secs(45);

/// A tmux server of our own (its own socket), killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `hermes ARGS` in a `columns` x `rows` window with the test home's environment.
    /// When hermes exits the shell prints `[exit CODE]` and keeps the pane open.
    pub fn start(
        home: &TestHome,
        args: &[&str],
        env: &[(&str, &str)],
        columns: u16,
        rows: u16,
    ) -> Tmux {
        let status = Command::new("tmux").arg("-V").output();
        assert!(
            status.is_ok_and(|o| o.status.success()),
            "tmux is needed for this test: run scripts/setup (or apt-get install tmux)"
        );
        let socket = format!(
            "hermes-test-{}-{}",
            std::process::id(),
            home.root().file_name().unwrap().to_string_lossy()
        );
        let mut vars = vec![
            (
                "PATH".to_string(),
                "/usr/local/bin:/usr/bin:/bin".to_string(),
            ),
            ("LANG".to_string(), "C.UTF-8".to_string()),
            ("TERM".to_string(), "xterm-256color".to_string()),
            ("HOME".to_string(), home.fake_home().display().to_string()),
            (
                "HERMES_HOME".to_string(),
                home.hermes_home().display().to_string(),
            ),
        ];
        vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let mut line = String::from("cd ");
        line.push_str(&quote(&home.workdir().display().to_string()));
        line.push_str(" && env -i");
        for (k, v) in &vars {
            line.push_str(&format!(" {k}={}", quote(v)));
        }
        line.push(' ');
        line.push_str(&quote(&bin().display().to_string()));
        for a in args {
            line.push(' ');
            line.push_str(&quote(a));
        }
        line.push_str("; echo \"[exit $?]\"; sleep 600");
        let tmux = Tmux { socket };
        tmux.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            &columns.to_string(),
            "-y",
            &rows.to_string(),
            &line,
        ]);
        // A long history, so the whole conversation can be read back.
        tmux.run(&["set-option", "-g", "history-limit", "5000"]);
        tmux
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types text literally.
    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "main", "-l", text]);
    }

    /// Presses keys (`Enter`, `C-c`, `C-d`, `Tab`).
    pub fn press(&self, key: &str) {
        self.run(&["send-keys", "-t", "main", key]);
    }

    /// The screen and its scrollback, as text.
    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-t", "main", "-S", "-"])
    }

    /// The same with colours and attributes as escape sequences.
    pub fn styled_screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-e", "-t", "main", "-S", "-"])
    }

    /// Waits until `needle` is on screen `count` times; returns the screen.
    pub fn wait_for_count(&self, needle: &str, count: usize) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen();
            if screen.matches(needle).count() >= count {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?} (x{count}); the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_for_count(needle, 1)
    }

    /// Waits until some line of the screen satisfies `check`; returns that line.
    pub fn wait_for_line(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen();
            if let Some(line) = screen.lines().find(|l| check(l)) {
                return line.to_string();
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
