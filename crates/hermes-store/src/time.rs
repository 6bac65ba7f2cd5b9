//! Timestamps as the store keeps them (seconds since the Unix epoch, fractional, like the Python
//! Hermes) and as people read them: UTC dates, relative ages, and the session id format
//! `YYYYMMDD_HHMMSS_xxxxxx`.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in seconds since the epoch.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A fresh session id: the UTC start time plus six random hex digits, so ids sort by time and
/// two sessions started in the same second still differ.
pub fn new_session_id() -> String {
    let (date, clock) = civil(now());
    format!(
        "{}_{}_{:06x}",
        date.replace('-', ""),
        clock.replace(':', ""),
        fastrand::u32(..0x0100_0000)
    )
}

/// `2025-11-30 14:05 UTC`.
pub fn format_utc(ts: f64) -> String {
    let (date, clock) = civil(ts);
    format!("{date} {} UTC", &clock[..5])
}

/// `2025-11-30T14:05:09Z`.
pub fn format_iso(ts: f64) -> String {
    let (date, clock) = civil(ts);
    format!("{date}T{clock}Z")
}

/// How long ago `ts` was, coarsely: `just now`, `5m ago`, `3h ago`, `2d ago`, or the date.
pub fn relative_age(ts: f64, now: f64) -> String {
    let secs = (now - ts).max(0.0) as u64;
    match secs {
        0..60 => "just now".into(),
        60..3_600 => format!("{}m ago", secs / 60),
        3_600..86_400 => format!("{}h ago", secs / 3_600),
        86_400..2_592_000 => format!("{}d ago", secs / 86_400),
        _ => civil(ts).0,
    }
}

/// (`YYYY-MM-DD`, `HH:MM:SS`) in UTC.
fn civil(ts: f64) -> (String, String) {
    let secs = ts.max(0.0) as i64;
    let (y, m, d) = hermes_protocol::time::civil_from_days(secs.div_euclid(86_400));
    let day = secs.rem_euclid(86_400);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        format!("{:02}:{:02}:{:02}", day / 3_600, day % 3_600 / 60, day % 60),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_format_in_utc() {
        // 2024-02-29 13:45:07 UTC
        let ts = 1_709_214_307.25;
        assert_eq!(format_utc(ts), "2024-02-29 13:45 UTC");
        assert_eq!(format_iso(ts), "2024-02-29T13:45:07Z");
    }

    #[test]
    fn ages_are_coarse() {
        let now = 1_709_214_307.0;
        assert_eq!(relative_age(now - 5.0, now), "just now");
        assert_eq!(relative_age(now - 300.0, now), "5m ago");
        assert_eq!(relative_age(now - 7_200.0, now), "2h ago");
        assert_eq!(relative_age(now - 3.0 * 86_400.0, now), "3d ago");
        assert_eq!(relative_age(now - 60.0 * 86_400.0, now), "2023-12-31");
    }

    #[test]
    fn session_ids_have_the_hermes_shape() {
        let id = new_session_id();
        let parts: Vec<&str> = id.split('_').collect();
        assert_eq!(parts.len(), 3, "{id}");
        assert_eq!(parts[0].len(), 8);
        assert_eq!(parts[1].len(), 6);
        assert_eq!(parts[2].len(), 6);
        assert!(
            id.chars().all(|c| c.is_ascii_hexdigit() || c == '_'),
            "{id}"
        );
    }
}
