//! `execute_code` in a remote environment (docker, ssh, Daytona, Modal, Singularity): the
//! script runs where the terminal runs, so its files and commands are that environment's. A
//! process there cannot reach this machine's Unix socket, so the tool channel is files, as in
//! the Python Hermes: the script and the generated module go into a private directory made
//! there (`mktemp -d`), each tool call is a `req_N` file the agent collects by polling and runs
//! here (the same [`Rpc`] checks and [`hermes_tools::Registry::execute`] path as locally),
//! and the answer goes back as `res_N`. The poll backs off from 50 ms to 400 ms while the
//! script makes no calls. The directory is removed afterwards.

use std::time::Duration;

use hermes_tools::env::shell_fs::ShellFs;
use hermes_tools::env::{ShellRequest, sh_quote};
use hermes_tools::{ToolContext, ToolError};

use super::child::{self, Finished};
use super::rpc::Rpc;

/// Request files collected per poll, and the largest one accepted.
const REQUESTS_PER_POLL: usize = 4;
const MAX_REQUEST_BYTES: u64 = 4 * 1024 * 1024;
const POLL_FIRST: Duration = Duration::from_millis(50);
const POLL_IDLE: Duration = Duration::from_millis(400);

/// The run directory in the environment, removed when dropped (best effort, in the
/// background: a drop cannot wait).
pub(super) struct RemoteDir {
    fs: ShellFs,
    pub path: String,
}

impl RemoteDir {
    /// Makes a private directory (0700, `mktemp -d`) with an `rpc` directory inside.
    pub async fn create(fs: ShellFs) -> Result<RemoteDir, ToolError> {
        let out = fs
            .run(
                "d=$(mktemp -d \"${TMPDIR:-/tmp}/hermes-code-XXXXXX\") && mkdir \"$d/rpc\" && printf '%s' \"$d\"",
                None,
                4096,
            )
            .await?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.code != Some(0) || !path.starts_with('/') {
            return Err(ToolError::new(format!(
                "cannot make a directory for the script in the environment: {}",
                if out.stderr.is_empty() {
                    "mktemp failed"
                } else {
                    &out.stderr
                }
            )));
        }
        Ok(RemoteDir { fs, path })
    }

    pub fn rpc(&self) -> String {
        format!("{}/rpc", self.path)
    }

    pub async fn remove(self) {
        let _ = self
            .fs
            .run(&format!("rm -rf -- {}", sh_quote(&self.path)), None, 4096)
            .await;
    }
}

/// Starts `python3 script.py` in the environment's `workdir` with the module's directory on
/// `PYTHONPATH` and the channel in `extra_env`, then supervises it like a local script.
pub(super) async fn run_script(
    ctx: &ToolContext,
    dir: &RemoteDir,
    workdir: &str,
    extra_env: &[(String, String)],
    timeout: Duration,
    rpc: &Rpc<'_>,
) -> Result<Finished, ToolError> {
    let script = format!(
        "export PYTHONPATH={dir}${{PYTHONPATH:+:$PYTHONPATH}} PYTHONDONTWRITEBYTECODE=1 PYTHONIOENCODING=utf-8 PYTHONUTF8=1\n\
         if command -v python3 >/dev/null 2>&1; then py=python3; elif command -v python >/dev/null 2>&1; then py=python; \
         else echo 'execute_code needs python3 in the environment (terminal.backend: {backend})' >&2; exit 127; fi\n\
         exec \"$py\" {script}",
        dir = sh_quote(&dir.path),
        backend = ctx.environment.backend(),
        script = sh_quote(&format!("{}/script.py", dir.path)),
    );
    let prepared = ctx
        .environment
        .shell(ShellRequest {
            script: &script,
            workdir,
            env: &hermes_tools::secrets::ChildEnv::default(),
            extra_env,
            sandbox: None,
            feeds_stdin: false,
        })
        .await
        .map_err(|e| ToolError::new(e.to_string()))?;
    let mut command = prepared.command;
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::new(format!("cannot start the script: {e}")))?;
    let fs = ShellFs::new(ctx.environment.clone());
    child::supervise(
        child,
        &prepared.stopper,
        timeout,
        ctx,
        serve_files(&fs, &dir.rpc(), rpc),
    )
    .await
    .map_err(|e| ToolError::new(format!("the script failed to run: {e}")))
}

/// Collects request files and writes the answers, until dropped.
async fn serve_files(fs: &ShellFs, rpc_dir: &str, rpc: &Rpc<'_>) {
    let collect = collect_script(rpc_dir);
    let mut wait = POLL_FIRST;
    loop {
        tokio::time::sleep(wait).await;
        let Ok(out) = fs
            .run(
                &collect,
                None,
                REQUESTS_PER_POLL as u64 * (MAX_REQUEST_BYTES + 64),
            )
            .await
        else {
            wait = POLL_IDLE;
            continue;
        };
        let requests = parse_requests(&out.stdout);
        if requests.is_empty() {
            wait = (wait * 2).min(POLL_IDLE);
            continue;
        }
        wait = POLL_FIRST;
        for (name, body) in requests {
            let reply = match body {
                Some(body) => rpc.answer(&body).await,
                None => serde_json::json!({
                    "error": format!("request larger than {MAX_REQUEST_BYTES} bytes")
                })
                .to_string(),
            };
            let answer = format!("{rpc_dir}/res_{name}");
            // A failed write leaves the script waiting until its timeout; nothing better
            // can be done from here.
            let _ = fs.write(&answer, reply.as_bytes()).await;
        }
    }
}

/// Prints `NAME SIZE` then the bytes of each complete request (at most a few per poll), and
/// removes it; an oversized one is announced as `NAME -` and removed unread.
fn collect_script(rpc_dir: &str) -> String {
    format!(
        "cd {dir} 2>/dev/null || exit 0\nn=0\nfor f in req_[0-9]*; do\n  case \"$f\" in *.tmp) continue;; esac\n  [ -f \"$f\" ] || continue\n  s=$(wc -c < \"$f\" | tr -d ' ')\n  if [ \"$s\" -gt {max} ]; then printf '%s -\\n' \"${{f#req_}}\"; else printf '%s %s\\n' \"${{f#req_}}\" \"$s\"; cat \"$f\"; fi\n  rm -f \"$f\"\n  n=$((n+1)); [ $n -ge {per} ] && break\ndone",
        dir = sh_quote(rpc_dir),
        max = MAX_REQUEST_BYTES,
        per = REQUESTS_PER_POLL,
    )
}

/// `(sequence, body)` of each request the collect script printed; `None` for an oversized one.
fn parse_requests(mut out: &[u8]) -> Vec<(String, Option<Vec<u8>>)> {
    let mut requests = Vec::new();
    while let Some(nl) = out.iter().position(|&b| b == b'\n') {
        let header = String::from_utf8_lossy(&out[..nl]).to_string();
        out = &out[nl + 1..];
        let Some((name, size)) = header.split_once(' ') else {
            break;
        };
        // Names are the module's own zero-padded numbers; anything else is not answered.
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        if size == "-" {
            requests.push((name.to_string(), None));
            continue;
        }
        let Ok(size) = size.parse::<usize>() else {
            break;
        };
        if out.len() < size {
            break;
        }
        requests.push((name.to_string(), Some(out[..size].to_vec())));
        out = &out[size..];
    }
    requests
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collect_output_is_split_into_requests() {
        let out = b"000001 13\n{\"tool\":\"x\"}\n000002 -\n000003 2\n{}";
        let got = parse_requests(out);
        assert_eq!(
            got,
            vec![
                ("000001".to_string(), Some(b"{\"tool\":\"x\"}\n".to_vec())),
                ("000002".to_string(), None),
                ("000003".to_string(), Some(b"{}".to_vec())),
            ]
        );
        assert!(parse_requests(b"../evil 3\nabc").is_empty());
        assert!(parse_requests(b"000004 99\nshort").is_empty());
    }
}
