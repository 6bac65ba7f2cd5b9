//! `hermes_chat` of `hermes mcp serve`: each call is one turn of a session built like
//! `hermes -z` (`setup::build`: the home's provider, tools and prompt, approvals
//! unattended), recorded in the store with source `mcp`, continuing the stored session the
//! caller names. The turn runs on a thread of its own with its own runtime (as `-z` does),
//! so the server's event loop is never blocked and nothing of the turn outlives it.

use hermes_mcp::serve::{ChatError, ChatReply, ChatRunner};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;

/// Turns with the flags `hermes mcp serve` was started with.
pub struct OneShotChat {
    pub common: CommonArgs,
}

#[async_trait::async_trait]
impl ChatRunner for OneShotChat {
    async fn chat(&self, message: &str, session_id: Option<&str>) -> Result<ChatReply, ChatError> {
        let args = CommonArgs {
            resume: session_id.map(str::to_string),
            continue_last: false,
            ..self.common.clone()
        };
        let message = message.to_string();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("hermes-mcp-chat".into())
            .spawn(move || {
                let outcome = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| ChatError(format!("cannot start the async runtime: {e}")))
                    .and_then(|rt| rt.block_on(turn(&args, &message)));
                let _ = tx.send(outcome);
            })
            .map_err(|e| ChatError(format!("cannot start the chat thread: {e}")))?;
        rx.await
            .map_err(|_| ChatError("the chat turn ended without an answer".into()))?
    }
}

async fn turn(args: &CommonArgs, message: &str) -> Result<ChatReply, ChatError> {
    let session = crate::setup::build(args, "mcp").map_err(|e| ChatError(e.message))?;
    let recorder = session.persistence.start(&session.agent);
    let history = session.persistence.history();
    let result = session
        .agent
        .run_turn(message, history, &recorder, CancellationToken::new())
        .await;
    recorder.end_turn(&result);
    session.background.shutdown().await;
    if let Some(reason) = result.error {
        return Err(ChatError(reason));
    }
    Ok(ChatReply {
        session_id: session.persistence.session_id().to_string(),
        response: result.final_text,
    })
}
