//! A throwaway PostgreSQL server for tests: Debian's binaries (`/usr/lib/postgresql/<n>/bin`),
//! a fresh cluster in a temporary directory (trust authentication, no fsync) on a free
//! loopback port, its unix socket kept in that directory, stopped with a fast shutdown when
//! dropped. `initdb` and `postgres` refuse to run as root, so as root they run as the
//! `postgres` user the package creates. `start` returns `Err(reason)` when the binaries are
//! missing, so a test can print why it skips.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running throwaway cluster.
pub struct Postgres {
    child: Option<Child>,
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
}

/// The newest installed server's `bin` directory.
pub fn postgres_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

fn is_root() -> bool {
    // The effective uid (second field), as the kernel reports it.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

impl Postgres {
    /// Starts a cluster and waits until it accepts connections.
    pub fn start() -> Result<Postgres, String> {
        let bin = postgres_bin()
            .ok_or("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres)")?;
        let dir = tempfile::Builder::new()
            .prefix("hermes-pg-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let as_root = is_root();
        if as_root {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .map_err(|e| e.to_string())?
                .success();
            if !ok {
                return Err("cannot hand the cluster directory to the `postgres` user".into());
            }
        }
        let data = dir.path().join("data");
        let out = as_pg(as_root, &bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8"])
            .args(["--locale=C.UTF-8", "--no-sync"])
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let port = free_port()?;
        let log =
            std::fs::File::create(dir.path().join("postgres.log")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let child = as_pg(as_root, &bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(dir.path())
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            .args(["-c", "max_connections=200"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        let mut pg = Postgres {
            child: Some(child),
            dir,
            bin,
            port,
        };
        pg.wait_ready()?;
        Ok(pg)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                return Err(format!("postgres exited ({status}): {}", self.log()));
            }
            let ok = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("postgres did not start: {}", self.log()))
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }

    /// Creates a database and returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""))?;
        Ok(self.url(name))
    }

    /// `postgres://postgres@127.0.0.1:<port>/<db>`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Runs SQL with `psql` (unaligned, tuples only) and returns its output.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .args(["-d", db, "-v", "ON_ERROR_STOP=1", "-Atc", sql])
            .output()
            .map_err(|e| format!("psql: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
        } else {
            Err(format!("psql: {}", String::from_utf8_lossy(&out.stderr)))
        }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SIGINT is the fast shutdown (SIGTERM would wait for clients to leave).
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn as_pg(as_root: bool, program: &Path) -> Command {
    if as_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=postgres", "--regid=postgres", "--clear-groups"])
            .arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}
