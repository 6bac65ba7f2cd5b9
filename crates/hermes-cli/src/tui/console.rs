//! [`Console`]: the one writer of the interactive chat's output, shared by the streaming
//! renderer, the prompts and the spinner. The spinner (a face, a verb, the elapsed time, the
//! skin's wings) lives on the line below the last committed line; printing clears it first and
//! draws it again after, so text and spinner never interleave. The spinner's thread sleeps on
//! a condition variable while no spinner is shown, so an idle prompt costs no CPU.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::style::{ColorMode, width};
use super::theme::Theme;

/// Redraw interval of the spinner.
const FRAME: Duration = Duration::from_millis(100);
/// Frames a face is shown before the next one.
const FACE_FRAMES: usize = 12;
const DOTS: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Where output goes: stdout, or a buffer in tests.
pub trait Sink: Send {
    fn write_text(&mut self, text: &str);
}

/// Held by the line editor while it reads (the terminal is in raw mode then): output waits
/// for it, so nothing is written into a line being edited or with raw-mode line endings.
pub fn terminal_lock() -> MutexGuard<'static, ()> {
    static TERMINAL: Mutex<()> = Mutex::new(());
    TERMINAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process's stdout.
pub struct Stdout;

impl Sink for Stdout {
    fn write_text(&mut self, text: &str) {
        let _terminal = terminal_lock();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

/// What the spinner is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    /// The model has not answered yet.
    Waiting,
    /// The model is reasoning (and reasoning is hidden).
    Thinking,
    /// A tool runs: its emoji, name and key argument.
    Tool(String),
    /// Anything else, said as is ("compressing", ...).
    Other(String),
}

struct SpinnerState {
    activity: Activity,
    started: Instant,
    frame: usize,
    /// Chosen when the spinner starts, so it does not change every frame.
    verb: String,
    seed: usize,
}

struct Inner {
    sink: Box<dyn Sink>,
    mode: ColorMode,
    spinner: Option<SpinnerState>,
    /// Columns of the spinner line on screen (0: none drawn).
    drawn: usize,
    /// Faces, verbs and wings come from the theme's skin.
    theme: Theme,
    /// Whether the spinner may animate at all (stdout is a terminal).
    animate: bool,
    shutdown: bool,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    inner: Mutex<Inner>,
    wake: Condvar,
}

/// The shared output of the interactive chat.
pub struct Console {
    shared: Arc<Shared>,
}

impl Console {
    pub fn new(sink: Box<dyn Sink>, theme: Theme, animate: bool) -> Console {
        Console {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    sink,
                    mode: theme.mode,
                    spinner: None,
                    drawn: 0,
                    theme,
                    animate,
                    shutdown: false,
                    thread: None,
                }),
                wake: Condvar::new(),
            }),
        }
    }

    fn lock(&self) -> Option<MutexGuard<'_, Inner>> {
        self.shared.inner.lock().ok()
    }

    /// Writes text (which should end with a newline) above the spinner.
    pub fn print(&self, text: &str) {
        let Some(mut inner) = self.lock() else {
            return;
        };
        inner.clear_spinner();
        inner.sink.write_text(text);
        inner.draw_spinner();
    }

    /// Shows the spinner for `activity` (or changes what it says).
    pub fn spin(&self, activity: Activity) {
        let Some(mut inner) = self.lock() else {
            return;
        };
        if !inner.animate {
            return;
        }
        match &mut inner.spinner {
            Some(s) if s.activity == activity => return,
            Some(s) => s.activity = activity,
            None => {
                let seed = pseudo_random();
                let verbs = &inner.theme.skin.thinking_verbs;
                let verb = verbs
                    .get(seed % verbs.len().max(1))
                    .cloned()
                    .unwrap_or_else(|| "thinking".into());
                inner.spinner = Some(SpinnerState {
                    activity,
                    started: Instant::now(),
                    frame: 0,
                    verb,
                    seed,
                });
            }
        }
        inner.draw_spinner();
        if inner.thread.is_none() {
            let shared = Arc::clone(&self.shared);
            inner.thread = std::thread::Builder::new()
                .name("hermes-spinner".into())
                .spawn(move || spin_loop(&shared))
                .ok();
        }
        drop(inner);
        self.shared.wake.notify_all();
    }

    /// Hides the spinner; returns what it was showing.
    pub fn stop_spinner(&self) -> Option<Activity> {
        let mut inner = self.lock()?;
        inner.clear_spinner();
        inner.spinner.take().map(|s| s.activity)
    }

    /// Whether a spinner is showing.
    #[cfg(test)]
    pub fn spinning(&self) -> bool {
        self.lock().is_some_and(|i| i.spinner.is_some())
    }

    /// Uses another skin (the spinner's faces and verbs follow).
    pub fn set_theme(&self, theme: Theme) {
        if let Some(mut inner) = self.lock() {
            inner.mode = theme.mode;
            inner.theme = theme;
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let thread = self.lock().and_then(|mut inner| {
            inner.shutdown = true;
            inner.clear_spinner();
            inner.thread.take()
        });
        self.shared.wake.notify_all();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}

/// The spinner thread: draws a frame every [`FRAME`] while a spinner is shown, sleeps
/// otherwise.
fn spin_loop(shared: &Shared) {
    let Ok(mut inner) = shared.inner.lock() else {
        return;
    };
    loop {
        while inner.spinner.is_none() && !inner.shutdown {
            inner = match shared.wake.wait(inner) {
                Ok(g) => g,
                Err(_) => return,
            };
        }
        if inner.shutdown {
            return;
        }
        inner = match shared.wake.wait_timeout(inner, FRAME) {
            Ok((g, _)) => g,
            Err(_) => return,
        };
        if let Some(s) = &mut inner.spinner {
            s.frame += 1;
        }
        inner.draw_spinner();
    }
}

impl Inner {
    fn clear_spinner(&mut self) {
        if self.drawn == 0 {
            return;
        }
        let clear = if self.mode.enabled() {
            "\r\x1b[2K".to_string()
        } else {
            format!("\r{}\r", " ".repeat(self.drawn))
        };
        self.sink.write_text(&clear);
        self.drawn = 0;
    }

    fn draw_spinner(&mut self) {
        let Some(text) = self.spinner.as_ref().map(|s| frame_text(&self.theme, s)) else {
            return;
        };
        let columns = terminal_width().saturating_sub(1);
        let text = super::style::truncate(&text, columns);
        self.clear_spinner();
        let painted = self.theme.paint_str(&text, self.theme.accent().dim());
        self.sink.write_text(&painted);
        self.drawn = width(&text).max(1);
    }
}

/// One frame: `⟪ ⠋ (｡◕‿◕｡) pondering… 1.2s ⟫`.
fn frame_text(theme: &Theme, s: &SpinnerState) -> String {
    let skin = &theme.skin;
    let pick = |list: &[String]| -> String {
        list.get((s.seed + s.frame / FACE_FRAMES) % list.len().max(1))
            .cloned()
            .unwrap_or_default()
    };
    let dots = DOTS[s.frame % DOTS.len()];
    let what = match &s.activity {
        Activity::Waiting => format!("{} {}…", pick(&skin.waiting_faces), s.verb),
        Activity::Thinking => format!("{} thinking…", pick(&skin.thinking_faces)),
        Activity::Tool(label) => format!("{label}…"),
        Activity::Other(label) => format!("{} {label}…", pick(&skin.waiting_faces)),
    };
    let elapsed = s.started.elapsed().as_secs_f64();
    let body = format!("{dots} {what} {elapsed:.1}s");
    match skin
        .wings
        .get((s.frame / FACE_FRAMES) % skin.wings.len().max(1))
    {
        Some((l, r)) => format!("{l} {body} {r}"),
        None => body,
    }
}

/// The terminal's width in columns (80 when unknown), asked each time so resizes count.
pub fn terminal_width() -> usize {
    crossterm::terminal::size()
        .ok()
        .map(|(w, _)| usize::from(w))
        .filter(|w| *w >= 20)
        .unwrap_or(80)
}

/// A seed for picking verbs and faces; varies between turns, needs no randomness crate.
fn pseudo_random() -> usize {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    usize::try_from(nanos / 1000).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<String>>);

    impl Sink for Buffer {
        fn write_text(&mut self, text: &str) {
            self.0.lock().unwrap().push_str(text);
        }
    }

    #[test]
    fn printing_clears_the_spinner_and_draws_it_again() {
        let buf = Buffer::default();
        let console = Console::new(Box::new(buf.clone()), Theme::plain(), true);
        console.spin(Activity::Tool("💻 terminal: ls".into()));
        console.print("line\n");
        assert_eq!(
            console.stop_spinner(),
            Some(Activity::Tool("💻 terminal: ls".into()))
        );
        let out = buf.0.lock().unwrap().clone();
        let line_at = out.find("line\n").unwrap();
        assert!(out[..line_at].contains("💻 terminal: ls…"), "{out:?}");
        assert!(
            out[..line_at].ends_with('\r'),
            "cleared before the text: {out:?}"
        );
        assert!(
            out[line_at..].contains("terminal: ls…"),
            "drawn again: {out:?}"
        );
        assert!(!out.contains('\x1b'), "no escapes without colour: {out:?}");
    }

    #[test]
    fn no_spinner_when_output_is_not_a_terminal() {
        let buf = Buffer::default();
        let console = Console::new(Box::new(buf.clone()), Theme::plain(), false);
        console.spin(Activity::Waiting);
        assert!(!console.spinning());
        console.print("x\n");
        assert_eq!(buf.0.lock().unwrap().as_str(), "x\n");
    }
}
