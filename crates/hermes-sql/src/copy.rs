//! Copying a table between two connections (`hermes store migrate`): the columns both sides
//! have, page by page (bounded memory), each page one write transaction on the target, rows
//! whose key the target already holds left alone, so a second copy adds nothing.

use crate::{Db, Result, Value, params};

/// Rows read and written per transaction.
const PAGE: i64 = 500;

/// What copying one table did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCopy {
    pub table: String,
    /// Rows in the source.
    pub source_rows: i64,
    /// Rows the target did not have and now has.
    pub copied: i64,
    /// Rows in the target afterwards.
    pub target_rows: i64,
}

/// Copies `table` from `from` to `to` in `order` (the table's key columns, so pages are
/// stable); columns only one side has are left out (PostgreSQL's `seq` stand-in for `rowid`
/// is generated afresh).
pub fn copy_table(from: &Db, to: &Db, table: &str, order: &str) -> Result<TableCopy> {
    let target_columns = to.columns(table)?;
    let columns: Vec<String> = from
        .columns(table)?
        .into_iter()
        .filter(|c| c != "seq" && target_columns.contains(c))
        .collect();
    let list = columns.join(", ");
    let marks = vec!["?"; columns.len()].join(", ");
    let insert = format!("INSERT OR IGNORE INTO {table} ({list}) VALUES ({marks})");
    let select = format!("SELECT {list} FROM {table} ORDER BY {order} LIMIT ? OFFSET ?");
    let mut copied = 0;
    let mut offset = 0;
    loop {
        let rows = from.query(&select, &params![PAGE, offset])?;
        if rows.is_empty() {
            break;
        }
        copied += to.write(|d| -> Result<i64> {
            let mut n = 0;
            for r in &rows {
                let values: Vec<Value> = r.values().to_vec();
                n += d.execute(&insert, &values)? as i64;
            }
            Ok(n)
        })?;
        offset += rows.len() as i64;
    }
    Ok(TableCopy {
        table: table.to_string(),
        source_rows: count(from, table)?,
        copied,
        target_rows: count(to, table)?,
    })
}

/// `SELECT COUNT(*)` of a table.
pub fn count(db: &Db, table: &str) -> Result<i64> {
    Ok(db
        .query_value::<i64>(&format!("SELECT COUNT(*) FROM {table}"), &[])?
        .unwrap_or(0))
}
