//! `hermes acp`: Hermes as an Agent Client Protocol agent on stdin/stdout, so Zed and other
//! ACP editors drive it (the official `agent-client-protocol` crate, protocol v1). stdout
//! carries only protocol JSON; logs go to stderr. Sessions are our stored sessions: a new one
//! is recorded in state.db like any other (source `acp`), and `session/load` continues one by
//! id, replaying its conversation as updates first.
//!
//! What each request does: [`sessions`] (building and running sessions, modes, the model
//! selector, the turn's token usage and how full the context is), [`updates`] (events as
//! `session/update`), [`permission`] (the approval gate as `session/request_permission`),
//! [`tools`] (kinds, titles, locations, diffs), [`editor_fs`] (the editor's file system for
//! `read_file` and `write_file` when it offers one), [`editor_terminal`] (foreground
//! `terminal` commands in the editor's terminal when it offers one, after our approval gate;
//! background commands stay in our process registry).

mod editor_fs;
mod editor_terminal;
mod permission;
mod sessions;
mod tools;
mod updates;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CurrentModeUpdate, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SessionConfigOptionValue, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, ErrorCode, Stdio};
use hermes_runtime::Runtime;

use crate::args::CommonArgs;
use crate::error::CliError;
use sessions::{MODE_ASK, MODE_YOLO, MODEL_OPTION, Sessions, Slot};
use updates::Updates;

/// What every handler shares.
struct Server {
    runtime: Runtime,
    args: CommonArgs,
    sessions: Sessions,
}

impl Server {
    fn slot(&self, id: &str) -> Result<Arc<Slot>, Error> {
        self.sessions.get(id).ok_or_else(|| {
            Error::new(
                ErrorCode::RESOURCE_NOT_FOUND,
                format!("no open session {id} (session/new or session/load first)"),
            )
        })
    }
}

/// A session that could not be built, as the editor sees it.
fn session_error(e: &hermes_runtime::SessionError) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, e.to_string())
}

/// Serves ACP on stdin/stdout until the editor closes the connection.
pub async fn run(args: &CommonArgs) -> Result<ExitCode, CliError> {
    let runtime = crate::session::runtime(args)?;
    let server = Arc::new(Server {
        runtime,
        args: args.clone(),
        sessions: Sessions::default(),
    });
    let served = connection(server.clone()).await;
    server.sessions.close_all().await;
    served.map_err(|e| CliError::runtime(format!("acp: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

async fn connection(server: Arc<Server>) -> Result<(), Error> {
    Agent
        .v1()
        .name("hermes")
        .on_receive_request(
            {
                let server = server.clone();
                async move |request: InitializeRequest,
                            responder: Responder<InitializeResponse>,
                            cx: ConnectionTo<Client>| {
                    use_editor_capabilities(&server, &request, &cx);
                    responder.respond(initialize(&request))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |request: NewSessionRequest,
                            responder: Responder<NewSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let server = server.clone();
                    let conn = cx.clone();
                    cx.spawn(async move {
                        match open(&server, conn, request.cwd, None).await {
                            Ok((id, slot)) => responder.respond(
                                NewSessionResponse::new(id)
                                    .modes(slot.modes())
                                    .config_options(slot.config_options()),
                            ),
                            Err(e) => responder.respond_with_error(e),
                        }
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |request: LoadSessionRequest,
                            responder: Responder<LoadSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let server = server.clone();
                    let conn = cx.clone();
                    cx.spawn(async move {
                        let key = request.session_id.0.to_string();
                        // Open already (the editor reloads a thread): shown again as it is.
                        let opened = match server.sessions.get(&key) {
                            Some(slot) => Ok((key, slot)),
                            None => open(&server, conn.clone(), request.cwd, Some(key)).await,
                        };
                        match opened {
                            Ok((id, slot)) => {
                                let history = slot.session.lock().await.history().to_vec();
                                let out = Updates::new(conn, id, slot.cwd.clone());
                                for update in updates::replay(&history, &slot.cwd) {
                                    out.send(update);
                                }
                                out.send(slot.context_usage().await);
                                responder.respond(
                                    LoadSessionResponse::new()
                                        .modes(slot.modes())
                                        .config_options(slot.config_options()),
                                )
                            }
                            Err(e) => responder.respond_with_error(e),
                        }
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |request: PromptRequest,
                            responder: Responder<PromptResponse>,
                            cx: ConnectionTo<Client>| {
                    let id = request.session_id.0.to_string();
                    let slot = match server.slot(&id) {
                        Ok(s) => s,
                        Err(e) => return responder.respond_with_error(e),
                    };
                    let conn = cx.clone();
                    cx.spawn(async move {
                        let out = Updates::new(conn, id, slot.cwd.clone())
                            .with_terminal(slot.terminal.clone());
                        responder.respond(slot.prompt(&request.prompt, &out).await)
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let server = server.clone();
                async move |cancel: CancelNotification, _cx: ConnectionTo<Client>| {
                    if let Some(slot) = server.sessions.get(&cancel.session_id.0) {
                        slot.interaction.cancel_turn();
                    }
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |request: SetSessionModeRequest,
                            responder: Responder<SetSessionModeResponse>,
                            cx: ConnectionTo<Client>| {
                    let id = request.session_id.0.to_string();
                    let slot = match server.slot(&id) {
                        Ok(s) => s,
                        Err(e) => return responder.respond_with_error(e),
                    };
                    let mode = request.mode_id.0.to_string();
                    if mode != MODE_ASK && mode != MODE_YOLO {
                        return responder.respond_with_error(Error::new(
                            ErrorCode::INVALID_PARAMS,
                            format!("unknown mode {mode:?} (the modes are {MODE_ASK} and {MODE_YOLO})"),
                        ));
                    }
                    slot.interaction.set_yolo(mode == MODE_YOLO);
                    // Before the answer, so the client has it when the request returns.
                    Updates::new(cx, id, slot.cwd.clone())
                        .send(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode)));
                    responder.respond(SetSessionModeResponse::new())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |request: SetSessionConfigOptionRequest,
                            responder: Responder<SetSessionConfigOptionResponse>,
                            cx: ConnectionTo<Client>| {
                    let slot = match server.slot(&request.session_id.0) {
                        Ok(s) => s,
                        Err(e) => return responder.respond_with_error(e),
                    };
                    let value = match (&*request.config_id.0, &request.value) {
                        (MODEL_OPTION, SessionConfigOptionValue::ValueId { value }) => {
                            value.0.to_string()
                        }
                        _ => {
                            return responder.respond_with_error(Error::new(
                                ErrorCode::INVALID_PARAMS,
                                format!(
                                    "unknown option {} (the one option is {MODEL_OPTION}, a model id)",
                                    request.config_id.0
                                ),
                            ));
                        }
                    };
                    // Waits for a running turn to end: the switch applies between turns.
                    cx.spawn(async move {
                        match slot.switch_model(&value).await {
                            Ok(()) => responder
                                .respond(SetSessionConfigOptionResponse::new(slot.config_options())),
                            Err(e) => responder.respond_with_error(session_error(&e)),
                        }
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// What Hermes offers, truthfully: stored sessions can be loaded; prompts may carry images
/// and embedded file contents; no authentication (providers are configured in the home).
fn initialize(request: &InitializeRequest) -> InitializeResponse {
    let version = if request.protocol_version < ProtocolVersion::V1 {
        request.protocol_version
    } else {
        ProtocolVersion::V1
    };
    InitializeResponse::new(version)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true)),
        )
        .agent_info(Implementation::new("hermes", env!("CARGO_PKG_VERSION")).title("Hermes"))
}

/// When the editor offers its file system, `read_file` and `write_file` of every session go
/// through it; when it offers its terminal, foreground `terminal` commands run there (after
/// our approval gate, in the editor's sessions only).
fn use_editor_capabilities(
    server: &Server,
    request: &InitializeRequest,
    cx: &ConnectionTo<Client>,
) {
    let caps = &request.client_capabilities;
    let runtime = &server.runtime;
    if caps.fs.read_text_file {
        runtime.register_tool(Arc::new(editor_fs::EditorReadFile { cx: cx.clone() }));
    }
    if caps.fs.write_text_file {
        runtime.register_tool(Arc::new(editor_fs::EditorWriteFile { cx: cx.clone() }));
    }
    if caps.terminal {
        runtime.register_tool(Arc::new(editor_terminal::EditorTerminal {
            cx: cx.clone(),
            links: server.sessions.terminals(),
        }));
    }
}

/// Builds a session in the editor's working directory.
async fn open(
    server: &Server,
    cx: ConnectionTo<Client>,
    cwd: PathBuf,
    resume: Option<String>,
) -> Result<(String, Arc<Slot>), Error> {
    if !cwd.is_absolute() {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd must be an absolute path, got {}", cwd.display()),
        ));
    }
    let slot = server
        .sessions
        .open(&server.runtime, &server.args, cx, cwd, resume)
        .await
        .map_err(|e| session_error(&e))?;
    let id = slot.session.lock().await.session_id();
    Ok((id, slot))
}
