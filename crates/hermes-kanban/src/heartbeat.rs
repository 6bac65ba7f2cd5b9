//! A worker's claim kept alive while its process lives: a thread extends the claim every
//! third of the claim's time-to-live (at least every 5 s, at most every 5 min), so a worker
//! in a long model call or command is not reclaimed, and a worker that dies stops extending
//! it at once. The thread stops when the guard is dropped or the claim is no longer ours.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::board::Board;
use crate::lifecycle::claim_ttl;
use crate::paths::{BoardPaths, ProcessEnv};
use crate::tools::WorkerScope;

/// Stops the heartbeat thread when dropped.
pub struct HeartbeatGuard {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for HeartbeatGuard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the heartbeat when this process is a dispatcher-started worker (`None` otherwise).
pub fn start_worker_heartbeat(root: &Path) -> Option<HeartbeatGuard> {
    let scope = WorkerScope::from_env()?;
    let claimer = scope.claim_lock.clone()?;
    let paths = BoardPaths::resolve(root, None, &ProcessEnv).ok()?;
    let every = Duration::from_secs((claim_ttl() / 3).clamp(5, 300) as u64);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("kanban-heartbeat".into())
        .spawn(move || {
            let mut next = Instant::now() + every;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                if Instant::now() < next {
                    continue;
                }
                next = Instant::now() + every;
                let alive = Board::open(paths.clone())
                    .and_then(|b| b.heartbeat(&scope.task, &claimer, None));
                match alive {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => tracing::warn!("kanban heartbeat for {}: {e}", scope.task),
                }
            }
        })
        .ok()?;
    Some(HeartbeatGuard {
        stop,
        thread: Some(thread),
    })
}
