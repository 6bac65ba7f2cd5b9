//! The kanban board inside the gateway (Python's `kanban.dispatch_in_gateway`, on by
//! default): every `kanban.dispatch_interval_seconds` a dispatcher pass on the current board
//! (only once a board exists: a home that never used kanban gets no `kanban.db`), then the
//! notifications of subscribed chats: a task's completion, block or give-up is sent to the
//! chat that asked for it (auto-subscribed by `kanban_create` from a chat). Passes run on the
//! blocking pool: SQLite and process spawning never stall the chats.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_kanban::{Board, BoardPaths, Dispatcher, KanbanSettings, ProcessEnv};
use tokio_util::sync::CancellationToken;

use super::delivery::Directory;

/// Passes until `shutdown`. `exe` is the `hermes` binary workers run.
pub async fn run(
    root: PathBuf,
    settings: KanbanSettings,
    exe: PathBuf,
    directory: Directory,
    shutdown: CancellationToken,
) {
    let every = Duration::from_secs_f64(settings.dispatch_interval_seconds.clamp(1.0, 86_400.0));
    let dispatch = settings.dispatch_in_gateway;
    let dispatcher: Arc<Mutex<Option<Dispatcher>>> = Arc::new(Mutex::new(None));
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let Ok(paths) = BoardPaths::resolve(&root, None, &ProcessEnv) else {
            continue;
        };
        if !paths.db.exists() {
            continue;
        }
        if dispatch {
            let slot = dispatcher.clone();
            let (paths, settings, exe) = (paths.clone(), settings.clone(), exe.clone());
            let pass = tokio::task::spawn_blocking(move || {
                let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
                // A board switched since the last pass gets its own dispatcher.
                if guard.as_ref().is_none_or(|d| d.paths() != &paths) {
                    *guard = Some(Dispatcher::new(paths, settings, exe));
                }
                guard.as_mut().map(|d| d.tick(false))
            })
            .await;
            match pass {
                Ok(Some(Ok(report))) if !report.is_idle() => tracing::info!(
                    "kanban: started {}, crashed {}, reclaimed {}, promoted {}",
                    report.spawned.len(),
                    report.crashed.len(),
                    report.reclaimed.len(),
                    report.promoted
                ),
                Ok(Some(Err(e))) => tracing::warn!("kanban dispatcher: {e}"),
                _ => {}
            }
        }
        notify(paths, &directory).await;
    }
}

/// Sends each subscribed chat the events it has not heard yet.
async fn notify(paths: BoardPaths, directory: &Directory) {
    let pending = tokio::task::spawn_blocking(
        move || -> Result<Vec<(String, String)>, hermes_kanban::KanbanError> {
            let board = Board::open(paths)?;
            let mut out = Vec::new();
            for sub in board.subscriptions(None)? {
                let events = board.take_notifications(&sub)?;
                if events.is_empty() {
                    continue;
                }
                let title = board
                    .find(&sub.task_id)?
                    .map(|t| t.title)
                    .unwrap_or_default();
                let target = if sub.thread_id.is_empty() {
                    format!("{}:{}", sub.platform, sub.chat_id)
                } else {
                    format!("{}:{}:{}", sub.platform, sub.chat_id, sub.thread_id)
                };
                for e in &events {
                    out.push((
                        target.clone(),
                        hermes_kanban::notify::describe(&sub.task_id, &title, e),
                    ));
                }
            }
            Ok(out)
        },
    )
    .await;
    let messages = match pending {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => {
            tracing::warn!("kanban notifications: {e}");
            return;
        }
        Err(_) => return,
    };
    for (target, text) in messages {
        if let Err(e) = directory.send(&target, &text).await {
            tracing::warn!("kanban notification to {target}: {e}");
        }
    }
}
