//! Time as the Python Hermes keeps it for cron: "now" in the configured zone
//! (`HERMES_TIMEZONE`, else config.yaml's `timezone`, else the system's local zone), and
//! timestamps written like Python's `datetime.isoformat()` (`2026-03-01T09:00:00+01:00`, with
//! microseconds only when there are some) and read like `datetime.fromisoformat()` (with or
//! without offset, `T` or space, seconds and fractions optional). A timestamp without an offset
//! is a legacy value and means the system's local wall time, as in Python.

use chrono::{
    DateTime, FixedOffset, Local, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike,
};

/// The zone cron schedules are computed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// The system's local zone (`TZ`, `/etc/localtime`).
    Local,
    /// An IANA zone named by `HERMES_TIMEZONE` or `timezone` in config.yaml.
    Named(chrono_tz::Tz),
}

impl Zone {
    /// The zone for a home: the first non-empty of `HERMES_TIMEZONE` and config.yaml's
    /// `timezone`; an unknown name falls back to the local zone with a warning (as Python does).
    pub fn resolve(env_value: Option<&str>, config_value: Option<&str>) -> (Zone, Option<String>) {
        let name = [env_value, config_value]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|s| !s.is_empty());
        let Some(name) = name else {
            return (Zone::Local, None);
        };
        match name.parse::<chrono_tz::Tz>() {
            Ok(tz) => (Zone::Named(tz), None),
            Err(_) => (
                Zone::Local,
                Some(format!(
                    "unknown timezone `{name}` (HERMES_TIMEZONE or `timezone` in config.yaml); cron uses the system's local time"
                )),
            ),
        }
    }

    /// The current time in this zone, to the microsecond (Python's precision).
    pub fn now(&self) -> DateTime<FixedOffset> {
        self.at(&chrono::Utc::now().fixed_offset())
    }

    /// `instant` seen in this zone, to the microsecond.
    pub fn at(&self, instant: &DateTime<FixedOffset>) -> DateTime<FixedOffset> {
        let micros = instant.nanosecond() / 1_000 * 1_000;
        let instant = instant.with_nanosecond(micros).unwrap_or(*instant);
        match self {
            Zone::Local => instant.with_timezone(&Local).fixed_offset(),
            Zone::Named(tz) => instant.with_timezone(tz).fixed_offset(),
        }
    }

    /// A wall-clock time in this zone; in a DST gap the time an hour later, in an overlap the
    /// earlier of the two.
    pub fn localize(&self, naive: NaiveDateTime) -> Option<DateTime<FixedOffset>> {
        match self {
            Zone::Local => pick(Local.from_local_datetime(&naive), &Local, naive),
            Zone::Named(tz) => pick(tz.from_local_datetime(&naive), tz, naive),
        }
    }

    /// The first time strictly after `after` that matches the 5-field cron expression, in this
    /// zone's wall-clock time (so `0 9 * * *` stays at 09:00 across DST changes).
    pub fn next_cron(
        &self,
        cron: &croner::Cron,
        after: &DateTime<FixedOffset>,
    ) -> Option<DateTime<FixedOffset>> {
        match self {
            Zone::Local => cron
                .find_next_occurrence(&after.with_timezone(&Local), false)
                .ok()
                .map(|t| t.fixed_offset()),
            Zone::Named(tz) => cron
                .find_next_occurrence(&after.with_timezone(tz), false)
                .ok()
                .map(|t| t.fixed_offset()),
        }
    }
}

fn pick<Tz: TimeZone>(
    result: LocalResult<DateTime<Tz>>,
    tz: &Tz,
    naive: NaiveDateTime,
) -> Option<DateTime<FixedOffset>> {
    match result {
        LocalResult::Single(t) => Some(t.fixed_offset()),
        LocalResult::Ambiguous(a, _) => Some(a.fixed_offset()),
        LocalResult::None => {
            // A skipped wall time: the same instant the offset before the gap names.
            let before = tz
                .from_local_datetime(&(naive - chrono::Duration::hours(3)))
                .earliest()?;
            let offset = before.offset().fix();
            let instant = offset.from_local_datetime(&naive).single()?;
            Some(instant.with_timezone(tz).fixed_offset())
        }
    }
}

/// Python's `datetime.isoformat()`: seconds always, microseconds when not zero, `+HH:MM`.
pub fn format_iso(t: &DateTime<FixedOffset>) -> String {
    if t.nanosecond() / 1_000 == 0 {
        t.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
    } else {
        t.format("%Y-%m-%dT%H:%M:%S%.6f%:z").to_string()
    }
}

/// What `datetime.fromisoformat()` gives: an aware time, or a naive one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    Aware(DateTime<FixedOffset>),
    Naive(NaiveDateTime),
}

/// Reads a timestamp the way Python's `datetime.fromisoformat()` (3.11) does for the shapes
/// Hermes writes and users type: `2026-02-03`, `2026-02-03T14:00`, `2026-02-03 14:00:05.25`,
/// each with an optional `Z` or `±HH:MM` / `±HHMM` offset.
pub fn parse_iso(text: &str) -> Option<Parsed> {
    let s = text.trim();
    let (body, offset) = split_offset(s)?;
    let naive = parse_naive(body)?;
    Some(match offset {
        Some(off) => Parsed::Aware(off.from_local_datetime(&naive).single()?),
        None => Parsed::Naive(naive),
    })
}

/// A stored timestamp as an instant: naive values are the system's local wall time (Python's
/// `_ensure_aware`).
pub fn parse_instant(text: &str) -> Option<DateTime<FixedOffset>> {
    match parse_iso(text)? {
        Parsed::Aware(t) => Some(t),
        Parsed::Naive(n) => Zone::Local.localize(n),
    }
}

fn split_offset(s: &str) -> Option<(&str, Option<FixedOffset>)> {
    if let Some(body) = s.strip_suffix('Z').or_else(|| s.strip_suffix('z')) {
        return Some((body, FixedOffset::east_opt(0)));
    }
    // An offset can only follow a time, which follows the 10-character date.
    let tail_start = 10.min(s.len());
    let Some(pos) = s
        .get(tail_start..)?
        .rfind(['+', '-'])
        .map(|p| p + tail_start)
    else {
        return Some((s, None));
    };
    let (body, off) = s.split_at(pos);
    let sign = if off.starts_with('-') { -1 } else { 1 };
    let digits: String = off[1..].chars().filter(|c| *c != ':').collect();
    if !digits.chars().all(|c| c.is_ascii_digit()) || !(digits.len() == 4 || digits.len() == 6) {
        return None;
    }
    let h: i32 = digits[0..2].parse().ok()?;
    let m: i32 = digits[2..4].parse().ok()?;
    let sec: i32 = if digits.len() == 6 {
        digits[4..6].parse().ok()?
    } else {
        0
    };
    Some((
        body,
        FixedOffset::east_opt(sign * (h * 3600 + m * 60 + sec)),
    ))
}

fn parse_naive(body: &str) -> Option<NaiveDateTime> {
    if body.len() == 10 {
        return NaiveDate::parse_from_str(body, "%Y-%m-%d")
            .ok()?
            .and_hms_opt(0, 0, 0);
    }
    let sep = body.as_bytes().get(10).copied()?;
    if sep != b'T' && sep != b' ' {
        return None;
    }
    let normalised = format!("{}T{}", &body[..10], &body[11..]);
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(&normalised, fmt) {
            return Some(t);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_what_python_writes_and_users_type() {
        let aware = |s: &str| match parse_iso(s).unwrap() {
            Parsed::Aware(t) => format_iso(&t),
            Parsed::Naive(n) => panic!("naive {n}"),
        };
        assert_eq!(
            aware("2026-02-03T14:00:00+05:30"),
            "2026-02-03T14:00:00+05:30"
        );
        assert_eq!(
            aware("2026-02-03T14:00:00.123456-08:00"),
            "2026-02-03T14:00:00.123456-08:00"
        );
        assert_eq!(aware("2026-02-03T14:00Z"), "2026-02-03T14:00:00+00:00");
        assert_eq!(
            aware("2026-02-03 14:00:05+0100"),
            "2026-02-03T14:00:05+01:00"
        );
        assert_eq!(
            parse_iso("2026-02-03T14:00"),
            Some(Parsed::Naive(
                NaiveDate::from_ymd_opt(2026, 2, 3)
                    .unwrap()
                    .and_hms_opt(14, 0, 0)
                    .unwrap()
            ))
        );
        assert!(matches!(parse_iso("2026-02-03"), Some(Parsed::Naive(_))));
        for bad in [
            "",
            "tomorrow",
            "2026-02-30T10:00",
            "2026-02-03T25:00",
            "2026-02-03X10:00",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_named_zone_localises_across_dst() {
        let (zone, warning) = Zone::resolve(Some(""), Some("Europe/Berlin"));
        assert_eq!(warning, None);
        let at = |s: &str| {
            zone.localize(NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M").unwrap())
                .map(|t| format_iso(&t))
        };
        assert_eq!(at("2026-01-10T09:00").unwrap(), "2026-01-10T09:00:00+01:00");
        assert_eq!(at("2026-07-10T09:00").unwrap(), "2026-07-10T09:00:00+02:00");
        // 02:30 does not exist on 2026-03-29: the clock jumps from 02:00 to 03:00.
        assert_eq!(at("2026-03-29T02:30").unwrap(), "2026-03-29T03:30:00+02:00");
        // 02:30 happens twice on 2026-10-25: the first one.
        assert_eq!(at("2026-10-25T02:30").unwrap(), "2026-10-25T02:30:00+02:00");
    }

    #[test]
    fn an_unknown_zone_falls_back_to_local_with_a_warning() {
        let (zone, warning) = Zone::resolve(Some("Mars/Olympus"), Some("Europe/Berlin"));
        assert_eq!(zone, Zone::Local);
        assert!(warning.unwrap().contains("Mars/Olympus"));
        assert_eq!(Zone::resolve(None, None), (Zone::Local, None));
    }

    #[test]
    fn now_has_microsecond_precision() {
        let now = Zone::Local.now();
        assert_eq!(now.nanosecond() % 1_000, 0);
    }
}
