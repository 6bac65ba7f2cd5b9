//! Chats subscribed to a task (`kanban_notify_subs`, Python's table): the gateway tells them
//! when the task completes, blocks or is given up on, reading the events after each
//! subscription's cursor; a subscription ends with the task (done or archived).

use hermes_sql::params;

use crate::board::{Board, ensure_task};
use crate::error::Result;
use crate::model::{Event, NotifySub};
use crate::time::now;

/// The events a subscriber hears about.
pub const NOTIFY_KINDS: &[&str] = &[
    "completed",
    "blocked",
    "gave_up",
    "block_loop_detected",
    "timed_out",
    "archived",
];

impl Board {
    /// Subscribes a chat to a task (again: no change). Past events are not replayed.
    pub fn subscribe(
        &self,
        task: &str,
        platform: &str,
        chat_id: &str,
        thread_id: Option<&str>,
        user_id: Option<&str>,
    ) -> Result<()> {
        self.write(|c| {
            ensure_task(c, task)?;
            let last: i64 = c
                .query_value(
                    "SELECT COALESCE(MAX(id), 0) FROM task_events WHERE task_id = ?",
                    &params![task],
                )?
                .unwrap_or(0);
            c.execute(
                "INSERT OR IGNORE INTO kanban_notify_subs (task_id, platform, chat_id, thread_id, \
                 user_id, created_at, last_event_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                &params![
                    task,
                    platform,
                    chat_id,
                    thread_id.unwrap_or(""),
                    user_id,
                    now(),
                    last
                ],
            )?;
            Ok(())
        })
    }

    pub fn unsubscribe(
        &self,
        task: &str,
        platform: &str,
        chat_id: &str,
        thread_id: Option<&str>,
    ) -> Result<bool> {
        self.write(|c| {
            Ok(c.execute(
                "DELETE FROM kanban_notify_subs WHERE task_id = ? AND platform = ? AND chat_id = ? \
                 AND thread_id = ?",
                &params![task, platform, chat_id, thread_id.unwrap_or("")],
            )? > 0)
        })
    }

    pub fn subscriptions(&self, task: Option<&str>) -> Result<Vec<NotifySub>> {
        let rows = self.db.query(
            "SELECT task_id, platform, chat_id, thread_id, user_id, last_event_id \
             FROM kanban_notify_subs WHERE (task_id = ?1 OR ?1 IS NULL) ORDER BY created_at",
            &params![task],
        )?;
        crate::board::rows_to(rows, |r| {
            Ok(NotifySub {
                task_id: r.get(0)?,
                platform: r.get(1)?,
                chat_id: r.get(2)?,
                thread_id: r.get(3)?,
                user_id: r.get(4)?,
                last_event_id: r.get(5)?,
            })
        })
    }

    /// Takes the events a subscription has not heard yet (at most 20), moving its cursor past
    /// them in the same transaction, so two gateways never both deliver one. A subscription
    /// whose task ended is removed once its last event is taken.
    pub fn take_notifications(&self, sub: &NotifySub) -> Result<Vec<Event>> {
        let kinds = NOTIFY_KINDS
            .iter()
            .map(|k| format!("'{k}'"))
            .collect::<Vec<_>>()
            .join(",");
        self.write(|c| {
            let events: Vec<Event> = crate::board::rows_to(
                c.query(
                    &format!(
                        "SELECT * FROM task_events WHERE task_id = ? AND id > ? AND kind IN ({kinds}) \
                         ORDER BY id LIMIT 20"
                    ),
                    &params![sub.task_id, sub.last_event_id],
                )?,
                Event::from_row,
            )?;
            let Some(last) = events.last().map(|e| e.id) else {
                return Ok(events);
            };
            let n = c.execute(
                "UPDATE kanban_notify_subs SET last_event_id = ? WHERE task_id = ? AND platform = ? \
                 AND chat_id = ? AND thread_id = ? AND last_event_id = ?",
                &params![last, sub.task_id, sub.platform, sub.chat_id, sub.thread_id, sub.last_event_id],
            )?;
            if n != 1 {
                // Another gateway took them first.
                return Ok(Vec::new());
            }
            if events.iter().any(|e| matches!(e.kind.as_str(), "completed" | "archived")) {
                c.execute(
                    "DELETE FROM kanban_notify_subs WHERE task_id = ? AND platform = ? AND chat_id = ? \
                     AND thread_id = ?",
                    &params![sub.task_id, sub.platform, sub.chat_id, sub.thread_id],
                )?;
            }
            Ok(events)
        })
    }
}

/// One line for the chat about an event of `task_title`.
pub fn describe(task_id: &str, task_title: &str, event: &Event) -> String {
    let field = |k: &str| {
        event
            .payload
            .as_ref()
            .and_then(|p| p.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    match event.kind.as_str() {
        "completed" => match field("summary") {
            Some(s) => format!("✅ Task {task_id} done: {task_title}\n{s}"),
            None => format!("✅ Task {task_id} done: {task_title}"),
        },
        "blocked" | "block_loop_detected" => format!(
            "⏸ Task {task_id} is blocked: {task_title}\n{}\nAnswer with `/kanban unblock {task_id} <answer>`.",
            field("reason").unwrap_or_else(|| "(no reason given)".into())
        ),
        "gave_up" => format!(
            "⚠️ Task {task_id} was given up after repeated failures: {task_title}\n{}",
            field("error").unwrap_or_default()
        ),
        "timed_out" => format!("⏱ Task {task_id} ran past its time limit: {task_title}"),
        "archived" => format!("🗄 Task {task_id} was archived: {task_title}"),
        other => format!("Task {task_id} ({task_title}): {other}"),
    }
}
