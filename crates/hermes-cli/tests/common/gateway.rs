//! A running `hermes gateway --port 0` for the binary's tests: started in a test home, its
//! address read from its first line, stopped with SIGTERM (or killed when dropped). Its stdout
//! is read on a thread of its own, so waiting for a line that never comes fails the test after
//! a minute instead of hanging it.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStderr, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a test waits for the gateway's next line.
const LINE_WAIT: Duration = Duration::from_secs(60);

use hermes_testkit::TestHome;

use super::bin;

/// A running `hermes gateway --port 0`.
pub struct Gateway {
    pub child: Child,
    pub addr: String,
    /// The lines of its stdout, read to the end (a gateway whose stdout is closed would fail
    /// its later lines).
    lines: mpsc::Receiver<String>,
    stderr: Option<ChildStderr>,
}

impl Gateway {
    pub fn start(home: &TestHome, extra: &[&str]) -> Gateway {
        let mut child = home
            .command(bin())
            .args(["gateway", "run", "--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                // Read on after the test stops listening: the gateway keeps its stdout.
                let _ = tx.send(line);
            }
        });
        let line = lines
            .recv_timeout(LINE_WAIT)
            .expect("the gateway printed nothing within a minute");
        let addr = line
            .trim()
            .strip_prefix("API server listening on http://")
            .and_then(|r| r.strip_suffix("/v1"))
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Gateway {
            stderr: child.stderr.take(),
            lines,
            child,
            addr,
        }
    }

    /// The next line the gateway prints (waits at most a minute for it).
    pub fn next_line(&mut self) -> String {
        match self.lines.recv_timeout(LINE_WAIT) {
            Ok(line) => line.trim_end().to_string(),
            Err(_) => panic!("the gateway printed no further line within a minute"),
        }
    }

    /// Sends SIGTERM and waits (at most 15 s) for the exit; returns the code and stderr.
    pub fn terminate(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        let ok = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "the gateway did not stop");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        if let Some(mut e) = self.stderr.take() {
            e.read_to_string(&mut err).unwrap();
        }
        (status.code(), err)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
