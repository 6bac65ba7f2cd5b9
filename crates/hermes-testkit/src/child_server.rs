//! A test server run as a child process that prints the port it listens on as its first line
//! (e.g. the MCP mock `hermes-mcp-mock --http`); killed and reaped when dropped.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};

#[derive(Debug)]
pub struct ChildServer {
    child: Child,
    /// The port from the server's first line of output.
    pub port: u16,
}

impl ChildServer {
    /// Starts `program args` with `env` added and waits for its port line.
    #[allow(clippy::expect_used)]
    pub fn start(program: &Path, args: &[&str], env: &[(&str, &str)]) -> ChildServer {
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the test server starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("its port line");
        let port = line.trim().parse().expect("a port number");
        ChildServer { child, port }
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
