//! File operations through an environment's shell, for backends whose files are not this
//! machine's (the Python Hermes's `ShellFileOperations`): a read is a bounded `head -c`, a
//! write goes through stdin into a temporary file next to the target and is renamed over it
//! (parents created first), a directory is listed with `ls`, a search is `grep`/`find` with
//! bounded output. Paths are passed as single-quoted shell words, so quotes, spaces and
//! newlines in them are data, never syntax. The script builders are pure functions (tested
//! on their quoting); [`ShellFs`] runs them.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{ExecutionEnvironment, ShellRequest, sh_quote};
use crate::ToolError;

/// The most bytes of a file a read fetches (the read tool pages lines within it).
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;
/// The most bytes of a search's or listing's output kept.
pub const MAX_LIST_BYTES: u64 = 2 * 1024 * 1024;
/// Directory entries listed.
pub const MAX_DIR_ENTRIES: usize = 500;
/// Bytes of stderr kept for an error message.
const MAX_STDERR: u64 = 8 * 1024;
/// The longest a file operation may take.
const FS_TIMEOUT: Duration = Duration::from_secs(120);

/// What the path is, as the first line of a read's output says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Missing,
    /// Neither a regular file nor a directory (a FIFO, a device).
    Special,
    Directory(Vec<String>),
    /// The file's size and its first bytes (at most [`MAX_READ_BYTES`]).
    File {
        size: u64,
        bytes: Vec<u8>,
    },
}

/// The script that reads `path`: a first line `N`, `X`, `D` or `F SIZE`, then the content.
pub fn read_script(path: &str) -> String {
    format!(
        "set -- {p}; if [ -d \"$1\" ]; then echo D; ls -1Ap -- \"$1\" | head -n {entries}; \
         elif [ -f \"$1\" ]; then s=$(wc -c < \"$1\") || exit 1; echo \"F $s\"; head -c {max} -- \"$1\"; \
         elif [ -e \"$1\" ]; then echo X; else echo N; fi",
        p = sh_quote(path),
        entries = MAX_DIR_ENTRIES + 1,
        max = MAX_READ_BYTES,
    )
}

/// The script that says what `path` is (the read script's first line, no content).
pub fn kind_script(path: &str) -> String {
    format!(
        "set -- {p}; if [ -d \"$1\" ]; then echo D; elif [ -f \"$1\" ]; then echo 'F 0'; \
         elif [ -e \"$1\" ]; then echo X; else echo N; fi",
        p = sh_quote(path)
    )
}

/// The script that writes stdin to `path` atomically (a temporary file in the same directory,
/// renamed over the target), creating missing parents.
pub fn write_script(path: &str) -> String {
    format!(
        "set -- {p}; d=$(dirname -- \"$1\") && mkdir -p -- \"$d\" && t=\"$d/.hermes-write.$$\" && \
         cat > \"$t\" && mv -f -- \"$t\" \"$1\" || {{ rm -f -- \"$t\" 2>/dev/null; exit 1; }}",
        p = sh_quote(path)
    )
}

/// The script that deletes the file `path`.
pub fn remove_script(path: &str) -> String {
    format!("rm -f -- {}", sh_quote(path))
}

/// How a content search prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrepMode {
    Lines,
    Files,
    Count,
}

/// A content search below `root` for the extended regex `pattern`, in regular files whose name
/// matches `glob` (hidden files and directories skipped), `head`-bounded to `max_lines`.
pub fn grep_script(
    root: &str,
    pattern: &str,
    glob: Option<&str>,
    mode: GrepMode,
    context: usize,
    max_lines: usize,
) -> String {
    let flags = match mode {
        GrepMode::Lines if context > 0 => format!("-nH -C {context}"),
        GrepMode::Lines => "-nH".to_string(),
        GrepMode::Files => "-l".to_string(),
        GrepMode::Count => "-cH".to_string(),
    };
    format!(
        "{{ if [ -f {root} ]; then printf '%s\\0' {root}; else \
         find {root} -mindepth 1 -name '.?*' -prune -o -type f -name {glob} -print0 2>/dev/null; fi; }} | \
         xargs -0 -r grep -E {flags} -e {pattern} -- 2>/dev/null{zero} | head -n {max_lines}",
        zero = if mode == GrepMode::Count {
            " | grep -v ':0$'"
        } else {
            ""
        },
        root = sh_quote(root),
        glob = sh_quote(glob.unwrap_or("*")),
        pattern = sh_quote(pattern),
    )
}

/// Files below `root` whose name matches `glob` (in `find` order), `head`-bounded.
pub fn find_script(root: &str, glob: &str, max_lines: usize) -> String {
    format!(
        "find {root} -mindepth 1 -name '.?*' -prune -o -type f -name {glob} -print 2>/dev/null | \
         head -n {max_lines}",
        root = sh_quote(root),
        glob = sh_quote(glob),
    )
}

/// What a script printed and how it ended.
#[derive(Debug)]
pub struct Captured {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// File operations in one environment.
#[derive(Debug, Clone)]
pub struct ShellFs {
    env: Arc<dyn ExecutionEnvironment>,
}

impl ShellFs {
    pub fn new(env: Arc<dyn ExecutionEnvironment>) -> ShellFs {
        ShellFs { env }
    }

    /// Runs `script` in the environment's working directory, feeding `stdin`, keeping at most
    /// `max_out` bytes of stdout.
    pub async fn run(
        &self,
        script: &str,
        stdin: Option<&[u8]>,
        max_out: u64,
    ) -> Result<Captured, ToolError> {
        let cwd = self.env.cwd();
        let prepared = self
            .env
            .shell(ShellRequest {
                script,
                workdir: &cwd,
                env: &crate::secrets::ChildEnv::default(),
                extra_env: &[],
                sandbox: None,
                feeds_stdin: stdin.is_some(),
            })
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let mut command = prepared.command;
        command
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| ToolError::new(format!("cannot run a file operation: {e}")))?;
        let input = child.stdin.take();
        let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(ToolError::new("cannot read a file operation's output"));
        };
        let work = async {
            let feed = async {
                if let (Some(mut pipe), Some(data)) = (input, stdin) {
                    pipe.write_all(data).await?;
                    pipe.shutdown().await?;
                }
                Ok::<_, std::io::Error>(())
            };
            let mut stdout = Vec::new();
            let mut stderr = Vec::new();
            let mut out = out.take(max_out);
            let mut err = err.take(MAX_STDERR);
            let (f, o, e) = tokio::join!(
                feed,
                out.read_to_end(&mut stdout),
                err.read_to_end(&mut stderr)
            );
            f.and(o).and(e)?;
            // Past the cap the script gets EPIPE instead of blocking on a full pipe.
            drop((out, err));
            let status = child.wait().await?;
            Ok::<_, std::io::Error>((status, stdout, stderr))
        };
        let (status, stdout, stderr) = tokio::time::timeout(FS_TIMEOUT, work)
            .await
            .map_err(|_| ToolError::new("the file operation timed out"))?
            .map_err(|e| ToolError::new(format!("the file operation failed: {e}")))?;
        Ok(Captured {
            code: status.code(),
            stdout,
            stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
        })
    }

    /// Reads `path` (a file's first [`MAX_READ_BYTES`], or a directory's entries).
    pub async fn read(&self, path: &str) -> Result<Read, ToolError> {
        let out = self
            .run(&read_script(path), None, MAX_READ_BYTES + 64)
            .await?;
        if out.code != Some(0) {
            return Err(ToolError::new(format!(
                "cannot read {path}: {}",
                if out.stderr.is_empty() {
                    "failed"
                } else {
                    &out.stderr
                }
            )));
        }
        parse_read(out.stdout)
            .ok_or_else(|| ToolError::new(format!("cannot read {path}: unexpected reply")))
    }

    /// What `path` is, without its content.
    pub async fn read_kind(&self, path: &str) -> Result<Read, ToolError> {
        let out = self.run(&kind_script(path), None, 4096).await?;
        parse_read(out.stdout)
            .ok_or_else(|| ToolError::new(format!("cannot stat {path}: {}", out.stderr)))
    }

    /// Writes `content` to `path`, creating parents.
    pub async fn write(&self, path: &str, content: &[u8]) -> Result<(), ToolError> {
        let out = self.run(&write_script(path), Some(content), 4096).await?;
        if out.code == Some(0) {
            Ok(())
        } else {
            Err(ToolError::new(format!(
                "cannot write {path}: {}",
                if out.stderr.is_empty() {
                    "failed"
                } else {
                    &out.stderr
                }
            )))
        }
    }

    /// Deletes the file `path` (gone already is fine).
    pub async fn remove(&self, path: &str) -> Result<(), ToolError> {
        let out = self.run(&remove_script(path), None, 4096).await?;
        if out.code == Some(0) {
            Ok(())
        } else {
            Err(ToolError::new(format!(
                "cannot delete {path}: {}",
                if out.stderr.is_empty() {
                    "failed"
                } else {
                    &out.stderr
                }
            )))
        }
    }

    /// Text lines a listing or search script printed (bounded).
    pub async fn lines(&self, script: &str) -> Result<Vec<String>, ToolError> {
        let out = self.run(script, None, MAX_LIST_BYTES).await?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect())
    }
}

/// Splits a read script's reply.
pub fn parse_read(stdout: Vec<u8>) -> Option<Read> {
    let nl = stdout.iter().position(|b| *b == b'\n')?;
    let head = String::from_utf8_lossy(&stdout[..nl]).to_string();
    let rest = stdout[nl + 1..].to_vec();
    match head.as_str() {
        "N" => Some(Read::Missing),
        "X" => Some(Read::Special),
        "D" => Some(Read::Directory(
            String::from_utf8_lossy(&rest)
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
        )),
        h => {
            let size = h.strip_prefix("F ")?.trim().parse().ok()?;
            Some(Read::File { size, bytes: rest })
        }
    }
}
