//! Token and cost totals over time, for the dashboard's usage page: per UTC day, per model and
//! overall, summed from the sessions' own counters (the Python Hermes's `/api/analytics/usage`
//! queries, same field names). Sessions count on the day they started.

use hermes_sql::{Dialect, params};
use serde::Serialize;

use crate::{Store, StoreError};

/// One day's sums (`day` is `YYYY-MM-DD`, UTC).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DayUsage {
    pub day: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub reasoning_tokens: i64,
    pub estimated_cost: f64,
    pub sessions: i64,
    pub api_calls: i64,
}

/// One model's sums, most tokens first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelUsage {
    pub model: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub estimated_cost: f64,
    pub sessions: i64,
    pub api_calls: i64,
}

/// The whole period's sums.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageTotals {
    pub total_input: i64,
    pub total_output: i64,
    pub total_cache_read: i64,
    pub total_reasoning: i64,
    pub total_estimated_cost: f64,
    pub total_sessions: i64,
    pub total_api_calls: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageReport {
    pub daily: Vec<DayUsage>,
    pub by_model: Vec<ModelUsage>,
    pub totals: UsageTotals,
}

impl Store {
    /// Usage of the sessions started after `since` (Unix seconds).
    pub fn usage_since(&self, since: f64) -> Result<UsageReport, StoreError> {
        // Sums are cast so both servers give 64-bit integers (PostgreSQL sums bigints into
        // numeric); the day is the UTC date of the start.
        let day = match self.dialect() {
            Dialect::Sqlite => "date(started_at, 'unixepoch')",
            Dialect::Postgres => {
                "to_char(to_timestamp(started_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
            }
        };
        let sum = |col: &str| format!("CAST(COALESCE(SUM({col}), 0) AS BIGINT)");
        let daily = self.read_rows(
            &format!(
                "SELECT {day} AS day, {}, {}, {}, {}, COALESCE(SUM(estimated_cost_usd), 0), \
                 COUNT(*), {} FROM sessions WHERE started_at > ?1 GROUP BY day ORDER BY day",
                sum("input_tokens"),
                sum("output_tokens"),
                sum("cache_read_tokens"),
                sum("reasoning_tokens"),
                sum("api_call_count"),
            ),
            &params![since],
            |r| {
                Ok(DayUsage {
                    day: r.get(0)?,
                    input_tokens: r.get(1)?,
                    output_tokens: r.get(2)?,
                    cache_read_tokens: r.get(3)?,
                    reasoning_tokens: r.get(4)?,
                    estimated_cost: r.get(5)?,
                    sessions: r.get(6)?,
                    api_calls: r.get(7)?,
                })
            },
        )?;
        let by_model = self.read_rows(
            &format!(
                "SELECT model, {}, {}, COALESCE(SUM(estimated_cost_usd), 0), COUNT(*), {} \
                 FROM sessions WHERE started_at > ?1 AND model IS NOT NULL AND model != '' \
                 GROUP BY model ORDER BY SUM(input_tokens) + SUM(output_tokens) DESC",
                sum("input_tokens"),
                sum("output_tokens"),
                sum("api_call_count"),
            ),
            &params![since],
            |r| {
                Ok(ModelUsage {
                    model: r.get(0)?,
                    input_tokens: r.get(1)?,
                    output_tokens: r.get(2)?,
                    estimated_cost: r.get(3)?,
                    sessions: r.get(4)?,
                    api_calls: r.get(5)?,
                })
            },
        )?;
        let totals = self
            .read_row(
                &format!(
                    "SELECT {}, {}, {}, {}, COALESCE(SUM(estimated_cost_usd), 0), COUNT(*), {} \
                     FROM sessions WHERE started_at > ?1",
                    sum("input_tokens"),
                    sum("output_tokens"),
                    sum("cache_read_tokens"),
                    sum("reasoning_tokens"),
                    sum("api_call_count"),
                ),
                &params![since],
                |r| {
                    Ok(UsageTotals {
                        total_input: r.get(0)?,
                        total_output: r.get(1)?,
                        total_cache_read: r.get(2)?,
                        total_reasoning: r.get(3)?,
                        total_estimated_cost: r.get(4)?,
                        total_sessions: r.get(5)?,
                        total_api_calls: r.get(6)?,
                    })
                },
            )?
            .unwrap_or_default();
        Ok(UsageReport {
            daily,
            by_model,
            totals,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::NewSession;

    #[test]
    fn sums_per_day_model_and_period() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path().join("s.db")).unwrap();
        for (id, model) in [("a", "m1"), ("b", "m1"), ("c", "m2")] {
            store
                .create_session(&NewSession {
                    id: id.into(),
                    source: "cli".into(),
                    model: Some(model.into()),
                    provider: None,
                    cwd: None,
                    parent_session_id: None,
                    system_prompt: None,
                })
                .unwrap();
        }
        let report = store.usage_since(0.0).unwrap();
        assert_eq!(report.daily.len(), 1);
        assert_eq!(report.daily[0].sessions, 3);
        assert_eq!(report.by_model.len(), 2);
        assert_eq!(report.totals.total_sessions, 3);
        let none = store.usage_since(f64::MAX).unwrap();
        assert!(none.daily.is_empty());
        assert_eq!(none.totals, UsageTotals::default());
    }
}
