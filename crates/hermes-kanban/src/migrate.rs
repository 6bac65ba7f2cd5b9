//! A board copied to another store (`hermes store migrate`): every table, key by key, rows the
//! target already has left alone (a second run copies nothing), the generated ids of the
//! target made to follow the copied ones, and the row counts checked afterwards.

use hermes_sql::copy::{TableCopy, copy_table};

use crate::board::Board;
use crate::error::{KanbanError, Result};
use crate::schema::{ID_TABLES, TABLES};

/// The key each table is paged by.
fn order_of(table: &str) -> &'static str {
    match table {
        "tasks" => "id",
        "task_links" => "parent_id, child_id",
        "kanban_notify_subs" => "task_id, platform, chat_id, thread_id",
        _ => "id",
    }
}

/// Copies every table of `from` into `to`; an error when the target ends up with fewer rows
/// than the source of any table.
pub fn copy_board(from: &Board, to: &Board) -> Result<Vec<TableCopy>> {
    let mut report = Vec::new();
    for table in TABLES {
        let copy = copy_table(from.db(), to.db(), table, order_of(table))?;
        if copy.target_rows < copy.source_rows {
            return Err(KanbanError::MigrationShort {
                table: copy.table,
                source_rows: copy.source_rows,
                target_rows: copy.target_rows,
            });
        }
        report.push(copy);
    }
    for table in ID_TABLES {
        to.db().resync_ids(table)?;
    }
    Ok(report)
}
