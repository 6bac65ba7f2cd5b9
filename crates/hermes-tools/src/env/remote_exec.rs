//! `hermes __remote-exec`: the local child of a command the Daytona or Modal backend runs.
//! Those services run commands over HTTP, not through a CLI, so the environment prepares this
//! binary as the command's client: it runs the one command over the API, writes its output to
//! stdout and exits with its status (255 with a message on stderr when the API fails). The
//! terminal, process and file tools then treat it like `docker exec` or `ssh`.
//!
//! ```text
//! hermes __remote-exec daytona --base TOOLBOX_URL --cwd DIR [--stdin] -- COMMAND
//! hermes __remote-exec modal --base GATEWAY --sandbox ID --exec-id ID --cwd DIR [--stdin] -- COMMAND
//! hermes __remote-exec modal-cancel --base GATEWAY --sandbox ID --exec-id ID
//! ```
//!
//! The API token comes in [`TOKEN_VAR`] (the child's environment is cleared to it), never on
//! the command line. `--stdin`: the caller writes the command's input and closes stdin; Daytona
//! gets it as a file uploaded through its toolbox (`/files/upload`) and redirected into the
//! command, Modal as the exec's `stdinData`.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::http_api::{Api, with_query};
use super::{EnvError, sh_quote};

/// The hidden first argument that selects the client.
pub const REMOTE_EXEC_ARG: &str = "__remote-exec";
/// The variable carrying the API token to the client.
pub const TOKEN_VAR: &str = "HERMES_REMOTE_EXEC_TOKEN";
/// The most input a command is given (a file write's content).
const MAX_STDIN: u64 = 32 * 1024 * 1024;
/// Daytona's per-command limit (seconds): the real deadline is the tool's, which stops the
/// command through the environment's signal; this only bounds a command nobody stops.
pub const DAYTONA_EXEC_TIMEOUT: u64 = 24 * 3600;
/// The `timeoutMs` of a Modal exec (the sandbox's own lifetime, as the Python Hermes sets it).
pub const MODAL_EXEC_TIMEOUT_MS: u64 = 3_600_000;
/// Between two polls of a running Modal exec (the Python Hermes's interval).
const MODAL_POLL: Duration = Duration::from_millis(250);
/// Limit of one control call (start, poll, cancel, upload).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// What the client is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Daytona {
        toolbox: String,
        cwd: String,
        stdin: bool,
        command: String,
    },
    Modal {
        gateway: String,
        sandbox: String,
        exec_id: String,
        cwd: String,
        stdin: bool,
        command: String,
    },
    ModalCancel {
        gateway: String,
        sandbox: String,
        exec_id: String,
    },
}

impl Request {
    /// The client's arguments after the binary.
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![REMOTE_EXEC_ARG.to_string()];
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
        match self {
            Request::Daytona {
                toolbox,
                cwd,
                stdin,
                command,
            } => {
                push(&["daytona", "--base", toolbox, "--cwd", cwd]);
                if *stdin {
                    push(&["--stdin"]);
                }
                push(&["--", command]);
            }
            Request::Modal {
                gateway,
                sandbox,
                exec_id,
                cwd,
                stdin,
                command,
            } => {
                push(&["modal", "--base", gateway, "--sandbox", sandbox]);
                push(&["--exec-id", exec_id, "--cwd", cwd]);
                if *stdin {
                    push(&["--stdin"]);
                }
                push(&["--", command]);
            }
            Request::ModalCancel {
                gateway,
                sandbox,
                exec_id,
            } => push(&[
                "modal-cancel",
                "--base",
                gateway,
                "--sandbox",
                sandbox,
                "--exec-id",
                exec_id,
            ]),
        }
        a
    }

    /// A local command running the client (`launcher`: this binary), its environment only
    /// the token.
    pub fn command(&self, launcher: &Path, token: &str) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(launcher);
        command
            .args(self.args())
            .env_clear()
            .env(TOKEN_VAR, token)
            .stdin(Stdio::null());
        command
    }

    /// The same, blocking, stdio discarded (signals from synchronous contexts).
    pub fn run_blocking(&self, launcher: &Path, token: &str) {
        let _ = std::process::Command::new(launcher)
            .args(self.args())
            .env_clear()
            .env(TOKEN_VAR, token)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[derive(Debug, thiserror::Error)]
enum UsageError {
    #[error(
        "usage: hermes {REMOTE_EXEC_ARG} daytona|modal|modal-cancel --base URL ... -- COMMAND ({0})"
    )]
    Usage(String),
}

fn parse(args: &[OsString]) -> Result<Request, UsageError> {
    let usage = |m: &str| UsageError::Usage(m.to_string());
    let mut it = args.iter().map(|a| a.to_string_lossy().into_owned());
    let kind = it.next().ok_or_else(|| usage("no kind"))?;
    let (mut base, mut cwd, mut sandbox, mut exec_id) = (None, None, None, None);
    let mut stdin = false;
    let mut command = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .ok_or_else(|| usage(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--base" => base = Some(value("--base")?),
            "--cwd" => cwd = Some(value("--cwd")?),
            "--sandbox" => sandbox = Some(value("--sandbox")?),
            "--exec-id" => exec_id = Some(value("--exec-id")?),
            "--stdin" => stdin = true,
            "--" => {
                command = Some(it.next().ok_or_else(|| usage("no command after --"))?);
                break;
            }
            other => return Err(usage(&format!("unknown argument {other}"))),
        }
    }
    let need = |v: Option<String>, name: &str| v.ok_or_else(|| usage(&format!("{name} missing")));
    Ok(match kind.as_str() {
        "daytona" => Request::Daytona {
            toolbox: need(base, "--base")?,
            cwd: need(cwd, "--cwd")?,
            stdin,
            command: need(command, "COMMAND")?,
        },
        "modal" => Request::Modal {
            gateway: need(base, "--base")?,
            sandbox: need(sandbox, "--sandbox")?,
            exec_id: need(exec_id, "--exec-id")?,
            cwd: need(cwd, "--cwd")?,
            stdin,
            command: need(command, "COMMAND")?,
        },
        "modal-cancel" => Request::ModalCancel {
            gateway: need(base, "--base")?,
            sandbox: need(sandbox, "--sandbox")?,
            exec_id: need(exec_id, "--exec-id")?,
        },
        other => return Err(usage(&format!("unknown kind {other}"))),
    })
}

/// The client's entry point (`args`: after `__remote-exec`).
pub fn main(args: &[OsString]) -> ExitCode {
    let request = match parse(args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::from(2);
        }
    };
    let token = std::env::var(TOKEN_VAR).unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("hermes: cannot start the HTTP client: {e}");
            return ExitCode::from(255);
        }
    };
    match runtime.block_on(run(request, &token)) {
        Ok((code, output)) => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(&output).and_then(|()| stdout.flush());
            if code < 0 {
                // Daytona's exitCode -1: the command hit the service's own time limit.
                eprintln!("the command was stopped by the service's time limit");
                return ExitCode::from(124);
            }
            ExitCode::from(code.min(255) as u8)
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(255)
        }
    }
}

async fn run(request: Request, token: &str) -> Result<(i32, Vec<u8>), EnvError> {
    match request {
        Request::Daytona {
            toolbox,
            cwd,
            stdin,
            command,
        } => {
            let api = Api::new("the Daytona API", token)?;
            let command = if stdin {
                let input = read_stdin()?;
                let path = format!("/tmp/.hermes-stdin-{}", super::http_api::uuid4());
                daytona_upload(&api, &toolbox, &path, input).await?;
                // The wrapper line is a whole command: run it with the input redirected in,
                // then drop the input file.
                let p = sh_quote(&path);
                format!(
                    "sh -c {}",
                    sh_quote(&format!("{command} < {p}; r=$?; rm -f {p}; exit $r"))
                )
            } else {
                command
            };
            let (code, output) =
                daytona_execute(&api, &toolbox, &command, &cwd, DAYTONA_EXEC_TIMEOUT).await?;
            Ok((code, output.into_bytes()))
        }
        Request::Modal {
            gateway,
            sandbox,
            exec_id,
            cwd,
            stdin,
            command,
        } => {
            let api = Api::new("the Modal tool gateway", token)?;
            let stdin_data = if stdin {
                Some(String::from_utf8(read_stdin()?).map_err(|_| {
                    EnvError::Io("the Modal gateway takes text input only (not UTF-8)".into())
                })?)
            } else {
                None
            };
            let (code, output) = modal_run(
                &api, &gateway, &sandbox, &exec_id, &command, &cwd, stdin_data,
            )
            .await?;
            Ok((code, output.into_bytes()))
        }
        Request::ModalCancel {
            gateway,
            sandbox,
            exec_id,
        } => {
            let api = Api::new("the Modal tool gateway", token)?;
            modal_cancel(&api, &gateway, &sandbox, &exec_id).await;
            Ok((0, Vec::new()))
        }
    }
}

fn read_stdin() -> Result<Vec<u8>, EnvError> {
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_STDIN + 1)
        .read_to_end(&mut input)
        .map_err(|e| EnvError::Io(format!("cannot read the command's input: {e}")))?;
    if input.len() as u64 > MAX_STDIN {
        return Err(EnvError::Io(format!(
            "the command's input is larger than {MAX_STDIN} bytes"
        )));
    }
    Ok(input)
}

/// Daytona's toolbox `POST /process/execute`: `{command, cwd, timeout}` → `{exitCode, result}`
/// (stdout and stderr combined).
pub async fn daytona_execute(
    api: &Api,
    toolbox: &str,
    command: &str,
    cwd: &str,
    timeout_secs: u64,
) -> Result<(i32, String), EnvError> {
    let body = json!({"command": command, "cwd": cwd, "timeout": timeout_secs});
    let reply = api
        .call(
            Method::POST,
            &format!("{toolbox}/process/execute"),
            Some(&body),
            &[],
            Duration::from_secs(timeout_secs).saturating_add(CALL_TIMEOUT),
        )
        .await?;
    let v = api.expect_json(reply)?;
    let code = v["exitCode"].as_i64().unwrap_or(-1);
    Ok((
        i32::try_from(code).unwrap_or(-1),
        v["result"].as_str().unwrap_or_default().to_string(),
    ))
}

/// Daytona's toolbox `POST /files/upload?path=PATH`, the file as the form's `file`.
pub async fn daytona_upload(
    api: &Api,
    toolbox: &str,
    path: &str,
    bytes: Vec<u8>,
) -> Result<(), EnvError> {
    let url = with_query(&format!("{toolbox}/files/upload"), &[("path", path)])?;
    let name = path.rsplit('/').next().unwrap_or("input");
    let reply = api.upload(&url, "file", name, bytes, CALL_TIMEOUT).await?;
    if reply.ok() {
        Ok(())
    } else {
        Err(api.refused(&reply))
    }
}

/// A Modal exec through the gateway: `POST /v1/sandboxes/{id}/execs`, then
/// `GET .../execs/{execId}` until it is `completed`, `failed`, `cancelled` or `timeout`.
pub async fn modal_run(
    api: &Api,
    gateway: &str,
    sandbox: &str,
    exec_id: &str,
    command: &str,
    cwd: &str,
    stdin_data: Option<String>,
) -> Result<(i32, String), EnvError> {
    let mut payload = json!({
        "execId": exec_id,
        "command": command,
        "cwd": cwd,
        "timeoutMs": MODAL_EXEC_TIMEOUT_MS,
    });
    if let Some(data) = stdin_data {
        payload["stdinData"] = Value::String(data);
    }
    let base = format!("{gateway}/v1/sandboxes/{sandbox}/execs");
    let reply = api
        .call(Method::POST, &base, Some(&payload), &[], CALL_TIMEOUT)
        .await?;
    let body = api.expect_json(reply)?;
    if let Some(done) = finished(&body) {
        return Ok(done);
    }
    if body["execId"].as_str() != Some(exec_id) {
        return Err(EnvError::Io(
            "the Modal gateway's exec start did not return the expected exec id".into(),
        ));
    }
    loop {
        tokio::time::sleep(MODAL_POLL).await;
        let reply = api
            .call(
                Method::GET,
                &format!("{base}/{exec_id}"),
                None,
                &[],
                CALL_TIMEOUT,
            )
            .await?;
        if reply.status == 404 {
            return Err(EnvError::Api {
                service: api.service,
                status: 404,
                message: "the exec is not found (the sandbox ended)".into(),
            });
        }
        let body = api.expect_json(reply)?;
        if let Some(done) = finished(&body) {
            return Ok(done);
        }
    }
}

/// The exit code and output of a finished exec body.
fn finished(body: &Value) -> Option<(i32, String)> {
    let status = body["status"].as_str()?;
    let default = match status {
        "completed" => 0,
        "timeout" => 124,
        "cancelled" => 130,
        "failed" => 1,
        _ => return None,
    };
    let code = body["returncode"]
        .as_i64()
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(default);
    Some((
        code,
        body["output"].as_str().unwrap_or_default().to_string(),
    ))
}

/// `POST /v1/sandboxes/{id}/execs/{execId}/cancel`, best effort.
pub async fn modal_cancel(api: &Api, gateway: &str, sandbox: &str, exec_id: &str) {
    let _ = api
        .call(
            Method::POST,
            &format!("{gateway}/v1/sandboxes/{sandbox}/execs/{exec_id}/cancel"),
            None,
            &[],
            Duration::from_secs(10),
        )
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_round_trip() {
        for request in [
            Request::Daytona {
                toolbox: "http://t/x".into(),
                cwd: "/home/daytona".into(),
                stdin: true,
                command: "sh -c 'echo -- hi'".into(),
            },
            Request::Modal {
                gateway: "http://g".into(),
                sandbox: "sb-1".into(),
                exec_id: "e".into(),
                cwd: "/root".into(),
                stdin: false,
                command: "--x".into(),
            },
            Request::ModalCancel {
                gateway: "http://g".into(),
                sandbox: "sb-1".into(),
                exec_id: "e".into(),
            },
        ] {
            let args: Vec<OsString> = request.args()[1..].iter().map(OsString::from).collect();
            assert_eq!(parse(&args).unwrap(), request);
        }
        assert!(parse(&[OsString::from("nope")]).is_err());
    }

    #[test]
    fn finished_statuses() {
        assert_eq!(
            finished(&json!({"status": "completed", "output": "x", "returncode": 3})),
            Some((3, "x".into()))
        );
        assert_eq!(
            finished(&json!({"status": "timeout"})),
            Some((124, "".into()))
        );
        assert_eq!(finished(&json!({"status": "running"})), None);
    }
}
