//! [`StoreWriter`]: one dedicated thread that owns the store connection and commits what every
//! live session of a process hands it, each message the moment it arrives, so the async side
//! never waits on SQLite and a `kill -9` loses nothing that was already queued for more than an
//! instant. [`SessionWriter`] is one session's handle on it: a long-lived process (the gateway)
//! hosts any number of sessions over one thread and one connection, and no session spawns
//! anything.
//!
//! The database is opened on the writer thread, off the critical path: commands sent before it
//! is ready simply wait in the queue. The session row is created with its first message, in the
//! same transaction (a session nobody spoke in leaves no trace). While the first model request
//! goes out nothing else is written: the automatic title (from the user's first message) and
//! the model-call and token counters are added with the next write.
//!
//! Streamed answer text goes into a partial row: the first piece at once, then whenever a line
//! completes or at most every [`STREAM_COMMIT_INTERVAL`], so at most that much of what was on
//! screen can be lost. The complete message replaces the partial row when it arrives.
//!
//! Failures never stop the conversation: the first one is kept for the frontend to report
//! ([`SessionWriter::error`]) and later commands are still attempted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hermes_protocol::{Message, Role, Usage};

use crate::{MessageMeta, NewSession, Store, StoreError, StoreLocation, StoreOptions};

/// The longest streamed text may wait before it is committed.
pub const STREAM_COMMIT_INTERVAL: Duration = Duration::from_millis(100);

/// Which session the writer records into.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionStart {
    /// A new session, created with its first message.
    New(NewSession),
    /// An existing session being resumed: partial rows left by a crash are sealed, the end
    /// mark cleared, and the model in use recorded.
    Resume {
        id: String,
        model: Option<String>,
        provider: Option<String>,
    },
}

enum Command {
    Append(Message, MessageMeta),
    StreamText(String),
    SealPartial,
    Usage(Usage, Option<f64>),
    ApiCall,
    SetTitle(String, Sender<Result<String, StoreError>>),
    Title(Sender<Result<Option<String>, StoreError>>),
    Switch(NewSession, String),
    Flush(Sender<Option<StoreError>>),
    End(String),
    Truncate(usize),
    Deactivate,
    SetModel(String, String),
}

/// What the writer thread is asked: a session's command, or a session coming or going.
enum Envelope {
    Open {
        key: u64,
        start: SessionStart,
        errors: Arc<Mutex<Option<StoreError>>>,
    },
    Session(u64, Command),
    /// Commits what the session has queued and forgets it; acknowledged on `done`.
    Close {
        key: u64,
        done: Sender<()>,
    },
}

/// The writer thread of one database, shared by every session of the process that writes to
/// it. Cloning shares the thread; it ends (after committing everything) when the last handle
/// and the last session are gone.
#[derive(Debug, Clone)]
pub struct StoreWriter {
    hub: Arc<Hub>,
}

#[derive(Debug)]
struct Hub {
    tx: Mutex<Option<Sender<Envelope>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    next_key: AtomicU64,
    /// Why the thread could not start, when it could not.
    start_error: Option<StoreError>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Ok(mut tx) = self.tx.lock() {
            drop(tx.take());
        }
        if let Some(thread) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = thread.join();
        }
    }
}

impl StoreWriter {
    /// Starts the writer thread for the database at `db_path` (a file or a PostgreSQL
    /// schema; opened on that thread).
    pub fn start(db_path: impl Into<StoreLocation>, options: StoreOptions) -> StoreWriter {
        let db_path = db_path.into();
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("hermes-store-writer".into())
            .spawn(move || Writer::new(db_path, options).run(rx));
        let (tx, thread, start_error) = match thread {
            Ok(handle) => (Some(tx), Some(handle), None),
            Err(e) => (
                None,
                None,
                Some(StoreError::WriterStopped(format!("cannot start: {e}"))),
            ),
        };
        StoreWriter {
            hub: Arc::new(Hub {
                tx: Mutex::new(tx),
                thread: Mutex::new(thread),
                next_key: AtomicU64::new(1),
                start_error,
            }),
        }
    }

    /// A session writing through this thread.
    pub fn session(&self, start: SessionStart) -> SessionWriter {
        let key = self.hub.next_key.fetch_add(1, Ordering::Relaxed);
        let first_error = Arc::new(Mutex::new(None));
        let writer = SessionWriter {
            hub: Some(Arc::clone(&self.hub)),
            key,
            first_error: Arc::clone(&first_error),
        };
        if let Some(e) = &self.hub.start_error {
            writer.fail(e.clone());
        }
        writer.post(Envelope::Open {
            key,
            start,
            errors: first_error,
        });
        writer
    }
}

/// One session's handle on a [`StoreWriter`]. Dropping it commits what is queued for the
/// session (and waits until that is done).
#[derive(Debug)]
pub struct SessionWriter {
    hub: Option<Arc<Hub>>,
    key: u64,
    first_error: Arc<Mutex<Option<StoreError>>>,
}

impl SessionWriter {
    /// A session on a writer thread of its own for the database at `db_path` (one-off tools
    /// and tests; a process with many sessions shares one [`StoreWriter`]).
    pub fn spawn(
        db_path: impl Into<StoreLocation>,
        start: SessionStart,
        options: StoreOptions,
    ) -> SessionWriter {
        StoreWriter::start(db_path, options).session(start)
    }

    /// Commits a complete message (the user's, each assistant message, each tool result).
    pub fn append(&self, message: Message, meta: MessageMeta) {
        self.send(Command::Append(message, meta));
    }

    /// Adds streamed answer text to the partial row.
    pub fn stream_text(&self, text: String) {
        self.send(Command::StreamText(text));
    }

    /// Keeps the streamed text as an interrupted answer (its stream will not complete).
    pub fn seal_partial(&self) {
        self.send(Command::SealPartial);
    }

    /// Adds one model call's usage (and cost, when known) to the session's totals.
    pub fn usage(&self, usage: Usage, cost_usd: Option<f64>) {
        self.send(Command::Usage(usage, cost_usd));
    }

    /// Records the model and provider now in use for the session.
    pub fn set_model(&self, model: &str, provider: &str) {
        self.send(Command::SetModel(model.to_string(), provider.to_string()));
    }

    /// Counts one model call.
    pub fn api_call(&self) {
        self.send(Command::ApiCall);
    }

    /// Sets the session's title; waits for the answer (a cleaned title, or why not).
    pub fn set_title(&self, title: &str) -> Result<String, StoreError> {
        let (reply, answer) = mpsc::channel();
        self.send(Command::SetTitle(title.to_string(), reply));
        answer.recv().unwrap_or_else(|_| Err(self.stopped()))
    }

    /// The session's title; waits for the answer.
    pub fn title(&self) -> Result<Option<String>, StoreError> {
        let (reply, answer) = mpsc::channel();
        self.send(Command::Title(reply));
        answer.recv().unwrap_or_else(|_| Err(self.stopped()))
    }

    /// Ends the current session with `reason` and records into a new one from now on.
    pub fn switch_to(&self, next: NewSession, reason: &str) {
        self.send(Command::Switch(next, reason.to_string()));
    }

    /// Keeps the first `keep` messages of the session and deletes the rest (`/undo`,
    /// `/retry`); a streamed answer still open is dropped with them.
    pub fn truncate(&self, keep: usize) {
        self.send(Command::Truncate(keep));
    }

    /// Marks the session's messages so far inactive (an in-place compression follows with the
    /// compressed conversation); a streamed answer still open is sealed first.
    pub fn deactivate_all(&self) {
        self.send(Command::Deactivate);
    }

    /// Marks the session ended with `reason` (when it exists).
    pub fn end(&self, reason: &str) {
        self.send(Command::End(reason.to_string()));
    }

    /// Waits until everything sent so far is committed; the first failure so far, if any.
    pub fn flush(&self) -> Result<(), StoreError> {
        let (reply, answer) = mpsc::channel();
        self.send(Command::Flush(reply));
        let _ = answer.recv();
        match self.error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The first failure, if any: the session is not (completely) saved.
    pub fn error(&self) -> Option<StoreError> {
        self.first_error.lock().ok().and_then(|e| e.clone())
    }

    /// Commits what is queued, stops the thread, and reports the first failure.
    pub fn close(mut self) -> Result<(), StoreError> {
        self.shutdown();
        match self.error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn shutdown(&mut self) {
        let Some(hub) = self.hub.take() else {
            return;
        };
        let (done, finished) = mpsc::channel();
        let posted = post(
            &hub,
            Envelope::Close {
                key: self.key,
                done,
            },
        );
        if posted && finished.recv().is_err() {
            self.fail(StoreError::WriterStopped(
                "the writer thread stopped before the session was saved".into(),
            ));
        }
        // The last handle on the thread joins it (in `Hub::drop`).
        drop(hub);
    }

    fn send(&self, command: Command) {
        self.post(Envelope::Session(self.key, command));
    }

    fn post(&self, envelope: Envelope) {
        let posted = self.hub.as_ref().is_some_and(|hub| post(hub, envelope));
        if !posted {
            self.fail(self.stopped());
        }
    }

    fn stopped(&self) -> StoreError {
        self.error()
            .unwrap_or_else(|| StoreError::WriterStopped("it is no longer running".into()))
    }

    fn fail(&self, error: StoreError) {
        record(&self.first_error, error);
    }
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn post(hub: &Hub, envelope: Envelope) -> bool {
    hub.tx
        .lock()
        .ok()
        .and_then(|tx| tx.as_ref().map(|tx| tx.send(envelope).is_ok()))
        .unwrap_or(false)
}

fn record(slot: &Mutex<Option<StoreError>>, error: StoreError) {
    if let Ok(mut first) = slot.lock()
        && first.is_none()
    {
        *first = Some(error);
    }
}

/// Text streamed into the current partial row.
struct Partial {
    row: Option<i64>,
    text: String,
    /// Bytes of `text` already committed.
    committed: usize,
    last_commit: Instant,
}

/// The writer thread: the connection, and the state of each session writing through it.
struct Writer {
    path: StoreLocation,
    options: StoreOptions,
    store: Option<Store>,
    /// Why the database could not be opened, told to every session.
    open_error: Option<StoreError>,
    sessions: HashMap<u64, Worker>,
}

impl Writer {
    fn new(path: StoreLocation, options: StoreOptions) -> Writer {
        Writer {
            path,
            options,
            store: None,
            open_error: None,
            sessions: HashMap::new(),
        }
    }

    fn run(mut self, rx: Receiver<Envelope>) {
        match self.path.open_with(self.options) {
            Ok(store) => self.store = Some(store),
            Err(e) => self.open_error = Some(e),
        }
        loop {
            let envelope = match self.next_deadline() {
                Some(deadline) => {
                    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                        Ok(e) => e,
                        Err(RecvTimeoutError::Timeout) => {
                            self.commit_due_partials();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                None => match rx.recv() {
                    Ok(e) => e,
                    Err(_) => break,
                },
            };
            self.handle(envelope);
        }
        let keys: Vec<u64> = self.sessions.keys().copied().collect();
        for key in keys {
            self.close(key);
        }
    }

    fn handle(&mut self, envelope: Envelope) {
        match envelope {
            Envelope::Open { key, start, errors } => {
                let mut worker = Worker::new(start, errors);
                if let Some(e) = &self.open_error {
                    worker.fail(e.clone());
                }
                self.with_session(&mut worker, Worker::open);
                self.sessions.insert(key, worker);
            }
            Envelope::Session(key, command) => {
                if let Some(mut worker) = self.sessions.remove(&key) {
                    self.with_session(&mut worker, |w| w.handle(command));
                    self.sessions.insert(key, worker);
                }
            }
            Envelope::Close { key, done } => {
                self.close(key);
                let _ = done.send(());
            }
        }
    }

    /// Commits what `key` has queued and forgets it.
    fn close(&mut self, key: u64) {
        if let Some(mut worker) = self.sessions.remove(&key) {
            self.with_session(&mut worker, |w| {
                w.commit_partial();
                w.settle();
            });
        }
    }

    /// Lends the connection to one session's state while it works.
    fn with_session(&mut self, worker: &mut Worker, f: impl FnOnce(&mut Worker)) {
        worker.store = self.store.take();
        f(worker);
        self.store = worker.store.take();
    }

    /// When some session's streamed text must be committed at the latest.
    fn next_deadline(&self) -> Option<Instant> {
        self.sessions
            .values()
            .filter_map(Worker::partial_deadline)
            .min()
    }

    fn commit_due_partials(&mut self) {
        let now = Instant::now();
        let due: Vec<u64> = self
            .sessions
            .iter()
            .filter(|(_, w)| w.partial_deadline().is_some_and(|d| d <= now))
            .map(|(k, _)| *k)
            .collect();
        for key in due {
            if let Some(mut worker) = self.sessions.remove(&key) {
                self.with_session(&mut worker, Worker::commit_partial);
                self.sessions.insert(key, worker);
            }
        }
    }
}

/// One session's state on the writer thread (the connection is lent to it while it works).
struct Worker {
    store: Option<Store>,
    session_id: String,
    /// The session row to create with the first message (`None` once it exists).
    pending: Option<NewSession>,
    partial: Option<Partial>,
    errors: Arc<Mutex<Option<StoreError>>>,
    resume: Option<(Option<String>, Option<String>)>,
    /// A new session is titled after its first user message.
    title_from_first_message: bool,
    /// That message, until the title is written (with the next write after it, so nothing
    /// but the message itself is committed while the first model request goes out).
    title_source: Option<String>,
    /// Model calls and usage not yet added to the session's totals (likewise deferred).
    calls: Calls,
}

/// Counters waiting for the next write.
#[derive(Default)]
struct Calls {
    api_calls: i64,
    usage: Usage,
    cost_usd: Option<f64>,
}

impl Calls {
    fn is_empty(&self) -> bool {
        self.api_calls == 0 && self.usage.is_empty() && self.cost_usd.is_none()
    }
}

impl Worker {
    fn new(start: SessionStart, errors: Arc<Mutex<Option<StoreError>>>) -> Worker {
        let (session_id, pending, resume) = match start {
            SessionStart::New(new) => (new.id.clone(), Some(new), None),
            SessionStart::Resume {
                id,
                model,
                provider,
            } => (id, None, Some((model, provider))),
        };
        Worker {
            store: None,
            session_id,
            pending,
            partial: None,
            errors,
            title_from_first_message: resume.is_none(),
            title_source: None,
            calls: Calls::default(),
            resume,
        }
    }

    /// A resumed session: partial rows a crash left are sealed, the end mark cleared.
    fn open(&mut self) {
        if self.store.is_none() {
            return;
        }
        if let Some((model, provider)) = self.resume.take() {
            let id = self.session_id.clone();
            self.with_store(|s| {
                s.seal_partials(&id)?;
                s.reopen_session(&id, model.as_deref(), provider.as_deref())
            });
        }
    }

    fn handle(&mut self, command: Command) {
        match command {
            Command::Append(message, meta) => self.append(message, meta),
            Command::StreamText(text) => self.stream(text),
            Command::SealPartial => self.seal(),
            Command::Usage(usage, cost) => {
                self.calls.usage += usage;
                if let Some(c) = cost {
                    self.calls.cost_usd = Some(self.calls.cost_usd.unwrap_or(0.0) + c);
                }
            }
            Command::ApiCall => self.calls.api_calls += 1,
            Command::SetModel(model, provider) => match &mut self.pending {
                Some(new) => {
                    new.model = Some(model);
                    new.provider = Some(provider);
                }
                None => {
                    let id = self.session_id.clone();
                    self.with_store(|s| s.set_model(&id, &model, &provider));
                }
            },
            Command::SetTitle(title, reply) => {
                self.settle();
                let id = self.session_id.clone();
                let result = self
                    .ensure_session()
                    .and_then(|()| self.store()?.set_title(&id, &title));
                let _ = reply.send(result);
            }
            Command::Title(reply) => {
                self.settle();
                let id = self.session_id.clone();
                let result = match &self.pending {
                    Some(_) => Ok(None),
                    None => self
                        .store()
                        .and_then(|s| s.session(&id))
                        .map(|s| s.and_then(|s| s.title)),
                };
                let _ = reply.send(result);
            }
            Command::Switch(next, reason) => {
                self.seal();
                self.settle();
                self.end(&reason);
                self.session_id = next.id.clone();
                self.pending = Some(next);
                self.title_from_first_message = true;
            }
            Command::Flush(reply) => {
                self.commit_partial();
                self.settle();
                let _ = reply.send(None);
            }
            Command::End(reason) => {
                self.seal();
                self.settle();
                self.end(&reason);
            }
            Command::Deactivate => {
                self.seal();
                self.settle();
                let id = self.session_id.clone();
                if self.pending.is_none() {
                    self.with_store(|s| s.deactivate_messages(&id).map(drop));
                }
            }
            Command::Truncate(keep) => {
                self.partial = None;
                let id = self.session_id.clone();
                if self.pending.is_none() {
                    self.with_store(|s| s.truncate_messages(&id, keep).map(drop));
                }
            }
        }
    }

    fn append(&mut self, message: Message, meta: MessageMeta) {
        if message.role == Role::User && self.title_from_first_message {
            self.title_from_first_message = false;
            self.title_source = Some(message.content.clone());
        }
        if message.role != Role::Assistant {
            // A stream still open when something else is said will never complete.
            self.seal();
        }
        let id = self.session_id.clone();
        if let Some(new) = self.pending.take() {
            // The first message creates the session, in the same transaction.
            if let Err(e) = self
                .store()
                .and_then(|s| s.start_session(&new, &message, &meta))
            {
                self.pending = Some(new);
                self.fail(e);
            }
        } else if message.role == Role::Assistant {
            // The complete answer replaces the row its stream was written into.
            match self.partial.take().and_then(|p| p.row) {
                Some(row) => {
                    self.with_store(|s| s.finish_partial(&id, row, &message, &meta).map(drop));
                }
                None => self.with_store(|s| s.append_message(&id, &message, &meta).map(drop)),
            }
        } else {
            self.with_store(|s| s.append_message(&id, &message, &meta).map(drop));
        }
        if message.role != Role::User {
            self.settle();
        }
    }

    /// Writes what was deferred: the automatic title and the model-call counters.
    fn settle(&mut self) {
        if self.pending.is_some() || self.store.is_none() {
            return;
        }
        let id = self.session_id.clone();
        if let Some(text) = self.title_source.take() {
            self.with_store(|s| s.set_auto_title(&id, &text).map(drop));
        }
        if !self.calls.is_empty() {
            let calls = std::mem::take(&mut self.calls);
            self.with_store(|s| s.record_calls(&id, calls.api_calls, &calls.usage, calls.cost_usd));
        }
    }

    fn stream(&mut self, text: String) {
        if self.store.is_none() {
            return;
        }
        let now = Instant::now();
        let partial = self.partial.get_or_insert_with(|| Partial {
            row: None,
            text: String::new(),
            committed: 0,
            last_commit: now,
        });
        let new_line = text.contains('\n');
        partial.text.push_str(&text);
        let due = partial.row.is_none()
            || new_line
            || now.duration_since(partial.last_commit) >= STREAM_COMMIT_INTERVAL;
        if due {
            self.commit_partial();
        }
    }

    /// When the uncommitted streamed text must be committed at the latest.
    fn partial_deadline(&self) -> Option<Instant> {
        self.partial
            .as_ref()
            .filter(|p| p.committed < p.text.len())
            .map(|p| p.last_commit + STREAM_COMMIT_INTERVAL)
    }

    fn commit_partial(&mut self) {
        let Some(mut partial) = self.partial.take() else {
            return;
        };
        if partial.committed == partial.text.len() && partial.row.is_some() {
            self.partial = Some(partial);
            return;
        }
        if let Err(e) = self.ensure_session() {
            self.fail(e);
            self.partial = Some(partial);
            return;
        }
        let id = self.session_id.clone();
        let result = self.store().and_then(|s| match partial.row {
            Some(row) => s.update_partial(row, &partial.text).map(|()| row),
            None => s.start_partial(&id, &partial.text),
        });
        match result {
            Ok(row) => {
                partial.row = Some(row);
                partial.committed = partial.text.len();
            }
            Err(e) => self.fail(e),
        }
        partial.last_commit = Instant::now();
        self.partial = Some(partial);
    }

    /// Makes the streamed text final as an interrupted answer.
    fn seal(&mut self) {
        if self.partial.is_none() {
            return;
        }
        self.commit_partial();
        self.partial = None;
        let id = self.session_id.clone();
        if self.pending.is_none() {
            self.with_store(|s| s.seal_partials(&id).map(drop));
        }
    }

    fn end(&mut self, reason: &str) {
        let id = self.session_id.clone();
        if self.pending.is_none() {
            self.with_store(|s| s.end_session(&id, reason));
        }
    }

    /// Creates the session row if this is its first write.
    fn ensure_session(&mut self) -> Result<(), StoreError> {
        let Some(new) = self.pending.clone() else {
            return Ok(());
        };
        self.store()?.create_session(&new)?;
        self.pending = None;
        Ok(())
    }

    fn store(&mut self) -> Result<&mut Store, StoreError> {
        match self.store.as_mut() {
            Some(s) => Ok(s),
            None => Err(self
                .errors
                .lock()
                .ok()
                .and_then(|e| e.clone())
                .unwrap_or_else(|| StoreError::WriterStopped("the database is not open".into()))),
        }
    }

    fn with_store(&mut self, f: impl FnOnce(&mut Store) -> Result<(), StoreError>) {
        if let Err(e) = self.store().and_then(f) {
            self.fail(e);
        }
    }

    fn fail(&self, error: StoreError) {
        record(&self.errors, error);
    }
}
