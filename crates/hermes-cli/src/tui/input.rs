//! [`Input`]: where the chat's lines come from, for messages and for answers to prompts alike,
//! so the terminal has exactly one reader. On a terminal it is the line editor's thread
//! ([`super::editor`]); otherwise stdin is read line by line on a thread, a line ending in `\`
//! continuing on the next.

use std::io::BufRead;
use std::sync::Arc;

use tokio::sync::{Mutex, mpsc};

use super::editor::EditorHandle;

/// What reading produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Line(String),
    /// Ctrl-C at an empty prompt (the editor clears a non-empty one itself).
    Interrupt,
    /// Ctrl-D or end of input.
    End,
}

#[derive(Clone)]
pub struct Input(Arc<Source>);

enum Source {
    Lines(Mutex<mpsc::Receiver<String>>),
    Editor(EditorHandle),
}

impl Input {
    /// Lines from a channel (piped stdin, tests).
    pub fn lines(rx: mpsc::Receiver<String>) -> Input {
        Input(Arc::new(Source::Lines(Mutex::new(rx))))
    }

    /// Lines of stdin, read on a thread so the async side can wait for Ctrl-C meanwhile.
    pub fn stdin() -> Input {
        let (tx, rx) = mpsc::channel(4);
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let Ok(line) = line else { break };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        Input::lines(rx)
    }

    /// The line editor.
    pub fn editor(handle: EditorHandle) -> Input {
        Input(Arc::new(Source::Editor(handle)))
    }

    pub fn editor_handle(&self) -> Option<&EditorHandle> {
        match self.0.as_ref() {
            Source::Editor(h) => Some(h),
            Source::Lines(_) => None,
        }
    }

    /// The next message; in the editor `prefill` is put in the buffer to edit first.
    pub async fn message(&self, prefill: Option<String>) -> Read {
        match self.0.as_ref() {
            Source::Editor(editor) => editor.message(prefill).await,
            Source::Lines(rx) => {
                let mut rx = rx.lock().await;
                let mut message = String::new();
                loop {
                    let Some(line) = rx.recv().await else {
                        return Read::End;
                    };
                    match line.strip_suffix('\\') {
                        Some(start) => {
                            message.push_str(start);
                            message.push('\n');
                        }
                        None => {
                            message.push_str(&line);
                            return Read::Line(message);
                        }
                    }
                }
            }
        }
    }

    /// Stops waiting for an answer the asker no longer wants (the editor leaves its line).
    pub fn abandon_answer(&self) {
        if let Source::Editor(editor) = self.0.as_ref() {
            editor.abandon_answer();
        }
    }

    /// One answer line; `prompt` is shown by the editor (pipes print their prompt with the
    /// question).
    pub async fn answer(&self, prompt: &str) -> Read {
        match self.0.as_ref() {
            Source::Editor(editor) => editor.answer(prompt).await,
            Source::Lines(rx) => match rx.lock().await.recv().await {
                Some(line) => Read::Line(line),
                None => Read::End,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn piped_lines_join_backslash_continuations() {
        let (tx, rx) = mpsc::channel(8);
        let input = Input::lines(rx);
        for l in ["one \\", "two", "answer"] {
            tx.send(l.to_string()).await.unwrap();
        }
        drop(tx);
        assert_eq!(input.message(None).await, Read::Line("one \ntwo".into()));
        assert_eq!(input.answer("? ").await, Read::Line("answer".into()));
        assert_eq!(input.message(None).await, Read::End);
    }
}
