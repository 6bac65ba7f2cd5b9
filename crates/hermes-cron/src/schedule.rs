//! Schedules, as the Python Hermes parses and stores them. What a user types:
//! `30m` / `2h` / `1d` (once, after that delay), `every 30m` / `every 2h` (repeatedly), a
//! 5-field cron expression (`0 9 * * *`, local time), or an ISO timestamp (once, at that time).
//! What `jobs.json` holds: `{"kind": "once", "run_at": ISO}`, `{"kind": "interval",
//! "minutes": N}` or `{"kind": "cron", "expr": "..."}`, each with a `display`. The next run
//! is computed like Python's `compute_next_run`: intervals and cron expressions from the last
//! run (else from now), a one-shot only while it has not run and is at most two minutes late.

use chrono::{DateTime, Duration, FixedOffset};
use serde_json::{Map, Value, json};

use crate::CronError;
use crate::clock::{self, Parsed, Zone};

/// A one-shot may start this late and still run (Python's `ONESHOT_GRACE_SECONDS`).
pub const ONESHOT_GRACE_SECONDS: i64 = 120;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// Once, at `run_at` (an ISO timestamp as stored).
    Once { run_at: String },
    /// Every `minutes` minutes.
    Interval { minutes: u64 },
    /// A 5-field cron expression in local time.
    Cron { expr: String },
}

/// A schedule with the text shown for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedSchedule {
    pub schedule: Schedule,
    pub display: String,
}

/// `30m`, `2h`, `1d` (and `min`, `hours`, `days`, ...) as minutes.
pub fn parse_duration(text: &str) -> Option<u64> {
    let s = text.trim().to_lowercase();
    let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() {
        return None;
    }
    let unit = s[digits.len()..].trim_start();
    let per = match unit {
        "m" | "min" | "mins" | "minute" | "minutes" => 1,
        "h" | "hr" | "hrs" | "hour" | "hours" => 60,
        "d" | "day" | "days" => 1440,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(per)
}

/// Parses what a user typed, at `now` (in the cron zone), the way Python's `parse_schedule`
/// does.
pub fn parse(
    text: &str,
    now: &DateTime<FixedOffset>,
    zone: Zone,
) -> Result<ParsedSchedule, CronError> {
    let original = text.trim();
    let invalid = || {
        CronError::Schedule(format!(
            "invalid schedule `{original}`: use a delay (`30m`, `2h`, `1d`: once), an interval (`every 2h`), a 5-field cron expression (`0 9 * * *`) or a time (`2026-02-03T14:00`)"
        ))
    };
    let lower = original.to_lowercase();
    if let Some(rest) = lower.strip_prefix("every ") {
        let minutes = parse_duration(rest)
            .filter(|m| *m > 0)
            .ok_or_else(invalid)?;
        return Ok(ParsedSchedule {
            schedule: Schedule::Interval { minutes },
            display: format!("every {minutes}m"),
        });
    }
    let fields: Vec<&str> = original.split_whitespace().collect();
    let cron_like = |f: &&str| f.chars().all(|c| c.is_ascii_digit() || "*-,/".contains(c));
    if fields.len() >= 5 && fields[..5].iter().all(cron_like) {
        if fields.len() != 5 {
            return Err(CronError::Schedule(format!(
                "invalid cron expression `{original}`: use the 5 fields minute hour day-of-month month day-of-week"
            )));
        }
        let expr = fields.join(" ");
        compile_cron(&expr)?;
        return Ok(ParsedSchedule {
            display: expr.clone(),
            schedule: Schedule::Cron { expr },
        });
    }
    let looks_dated = original.len() >= 10
        && original.as_bytes()[..10].iter().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if original.contains('T') || looks_dated {
        let at = match clock::parse_iso(original) {
            Some(Parsed::Aware(t)) => t,
            Some(Parsed::Naive(n)) => zone.localize(n).ok_or_else(invalid)?,
            None => {
                return Err(CronError::Schedule(format!(
                    "invalid time `{original}`: write it as 2026-02-03T14:00 (local time) or with an offset (2026-02-03T14:00+01:00)"
                )));
            }
        };
        return Ok(ParsedSchedule {
            display: format!("once at {}", at.format("%Y-%m-%d %H:%M")),
            schedule: Schedule::Once {
                run_at: clock::format_iso(&at),
            },
        });
    }
    if let Some(minutes) = parse_duration(original) {
        let at = *now + Duration::minutes(i64::try_from(minutes).map_err(|_| invalid())?);
        return Ok(ParsedSchedule {
            display: format!("once in {original}"),
            schedule: Schedule::Once {
                run_at: clock::format_iso(&at),
            },
        });
    }
    Err(invalid())
}

/// A 5-field expression compiled; the parser's complaint otherwise.
pub fn compile_cron(expr: &str) -> Result<croner::Cron, CronError> {
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Disallowed)
        .build()
        .parse(expr)
        .map_err(|e| CronError::Schedule(format!("invalid cron expression `{expr}`: {e}")))
}

impl Schedule {
    /// The stored `schedule` object (Python's shape), with its display text.
    pub fn to_value(&self, display: &str) -> Value {
        match self {
            Schedule::Once { run_at } => {
                json!({"kind": "once", "run_at": run_at, "display": display})
            }
            Schedule::Interval { minutes } => {
                json!({"kind": "interval", "minutes": minutes, "display": display})
            }
            Schedule::Cron { expr } => json!({"kind": "cron", "expr": expr, "display": display}),
        }
    }

    /// Reads a stored `schedule` object; `None` for shapes that cannot run.
    pub fn from_value(value: &Value) -> Option<Schedule> {
        let obj: &Map<String, Value> = value.as_object()?;
        match obj.get("kind")?.as_str()? {
            "once" => Some(Schedule::Once {
                run_at: obj.get("run_at")?.as_str()?.to_string(),
            }),
            "interval" => {
                let minutes = match obj.get("minutes")? {
                    Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64))?,
                    _ => return None,
                };
                (minutes > 0).then_some(Schedule::Interval { minutes })
            }
            "cron" => Some(Schedule::Cron {
                expr: obj.get("expr")?.as_str()?.to_string(),
            }),
            _ => None,
        }
    }

    pub fn is_recurring(&self) -> bool {
        !matches!(self, Schedule::Once { .. })
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Schedule::Once { .. } => "once",
            Schedule::Interval { .. } => "interval",
            Schedule::Cron { .. } => "cron",
        }
    }

    /// The next run after a run at `last_run` (or, without one, counting from `now`); `None`
    /// when there is none (a one-shot that ran or is too late; an invalid expression).
    pub fn next_run(
        &self,
        last_run: Option<&DateTime<FixedOffset>>,
        now: &DateTime<FixedOffset>,
        zone: Zone,
    ) -> Option<DateTime<FixedOffset>> {
        match self {
            Schedule::Once { run_at } => {
                if last_run.is_some() {
                    return None;
                }
                let at = clock::parse_instant(run_at)?;
                (at >= *now - Duration::seconds(ONESHOT_GRACE_SECONDS)).then(|| zone.at(&at))
            }
            Schedule::Interval { minutes } => {
                let base = last_run.unwrap_or(now);
                Some(zone.at(&(*base + Duration::minutes(i64::try_from(*minutes).ok()?))))
            }
            Schedule::Cron { expr } => {
                let cron = compile_cron(expr).ok()?;
                zone.next_cron(&cron, last_run.unwrap_or(now))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn berlin() -> Zone {
        Zone::resolve(Some("Europe/Berlin"), None).0
    }

    fn t(s: &str) -> DateTime<FixedOffset> {
        clock::parse_instant(s).unwrap()
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30m"), Some(30));
        assert_eq!(parse_duration("2h"), Some(120));
        assert_eq!(parse_duration(" 1 day "), Some(1440));
        assert_eq!(parse_duration("3 hours"), Some(180));
        assert_eq!(parse_duration("2w"), None);
        assert_eq!(parse_duration("m"), None);
        assert_eq!(parse_duration("-5m"), None);
    }

    #[test]
    fn parses_every_kind_like_python() {
        let now = t("2026-02-03T10:15:30.5+01:00");
        let p = |s: &str| parse(s, &now, berlin()).unwrap();
        assert_eq!(
            p("every 2h"),
            ParsedSchedule {
                schedule: Schedule::Interval { minutes: 120 },
                display: "every 120m".into()
            }
        );
        assert_eq!(p("Every 30m").schedule, Schedule::Interval { minutes: 30 });
        assert_eq!(
            p("0 9 * * 1-5"),
            ParsedSchedule {
                schedule: Schedule::Cron {
                    expr: "0 9 * * 1-5".into()
                },
                display: "0 9 * * 1-5".into()
            }
        );
        assert_eq!(
            p("30m"),
            ParsedSchedule {
                schedule: Schedule::Once {
                    run_at: "2026-02-03T10:45:30.500000+01:00".into()
                },
                display: "once in 30m".into()
            }
        );
        // A time without an offset is in the configured zone.
        assert_eq!(
            p("2026-07-01T14:00"),
            ParsedSchedule {
                schedule: Schedule::Once {
                    run_at: "2026-07-01T14:00:00+02:00".into()
                },
                display: "once at 2026-07-01 14:00".into()
            }
        );
        assert_eq!(
            p("2026-07-01T14:00:00Z").schedule,
            Schedule::Once {
                run_at: "2026-07-01T14:00:00+00:00".into()
            }
        );
    }

    #[test]
    fn refuses_what_python_refuses() {
        let now = t("2026-02-03T10:15:30+01:00");
        for bad in [
            "soon",
            "every",
            "every day",
            "every 0m",
            "61 9 * * *",
            "0 9 * * * *",
            "2026-13-01T10:00",
            "",
        ] {
            let e = parse(bad, &now, berlin()).unwrap_err();
            assert!(matches!(e, CronError::Schedule(_)), "{bad}: {e}");
        }
    }

    #[test]
    fn stored_shape_round_trips() {
        for (s, d) in [
            (
                Schedule::Once {
                    run_at: "2026-02-03T10:45:00+01:00".into(),
                },
                "once in 30m",
            ),
            (Schedule::Interval { minutes: 120 }, "every 120m"),
            (
                Schedule::Cron {
                    expr: "0 9 * * *".into(),
                },
                "0 9 * * *",
            ),
        ] {
            assert_eq!(Schedule::from_value(&s.to_value(d)), Some(s));
        }
        assert_eq!(Schedule::from_value(&json!({"kind": "weekly"})), None);
        assert_eq!(
            Schedule::from_value(&json!({"kind": "interval", "minutes": 0})),
            None
        );
        assert_eq!(Schedule::from_value(&json!(null)), None);
    }

    #[test]
    fn next_runs() {
        let zone = berlin();
        let now = t("2026-02-03T10:15:00+01:00");
        let interval = Schedule::Interval { minutes: 30 };
        assert_eq!(
            clock::format_iso(&interval.next_run(None, &now, zone).unwrap()),
            "2026-02-03T10:45:00+01:00"
        );
        let last = t("2026-02-03T09:00:00Z");
        assert_eq!(
            clock::format_iso(&interval.next_run(Some(&last), &now, zone).unwrap()),
            "2026-02-03T10:30:00+01:00"
        );
        let cron = Schedule::Cron {
            expr: "0 9 * * *".into(),
        };
        assert_eq!(
            clock::format_iso(&cron.next_run(None, &now, zone).unwrap()),
            "2026-02-04T09:00:00+01:00"
        );
        // One-shots: due until two minutes late, never again after a run.
        let once = Schedule::Once {
            run_at: "2026-02-03T10:14:00+01:00".into(),
        };
        assert!(once.next_run(None, &now, zone).is_some());
        assert_eq!(once.next_run(Some(&now), &now, zone), None);
        let late = Schedule::Once {
            run_at: "2026-02-03T10:12:59+01:00".into(),
        };
        assert_eq!(late.next_run(None, &now, zone), None);
    }

    #[test]
    fn cron_keeps_local_wall_time_across_dst() {
        let zone = berlin();
        let cron = Schedule::Cron {
            expr: "0 9 * * *".into(),
        };
        // The night Berlin moves from +01:00 to +02:00.
        let before = t("2026-03-28T09:00:00+01:00");
        let next = cron.next_run(Some(&before), &before, zone).unwrap();
        assert_eq!(clock::format_iso(&next), "2026-03-29T09:00:00+02:00");
        assert_eq!((next - before).num_hours(), 23);
        // And back.
        let before = t("2026-10-24T09:00:00+02:00");
        let next = cron.next_run(Some(&before), &before, zone).unwrap();
        assert_eq!(clock::format_iso(&next), "2026-10-25T09:00:00+01:00");
        assert_eq!((next - before).num_hours(), 25);
        // A time inside the skipped hour runs once, after the jump.
        let at_230 = Schedule::Cron {
            expr: "30 2 * * *".into(),
        };
        let before = t("2026-03-28T03:00:00+01:00");
        let next = at_230.next_run(Some(&before), &before, zone).unwrap();
        assert!(
            next > before && next.to_utc() <= t("2026-03-29T01:30:00Z").to_utc(),
            "{next}"
        );
    }
}
