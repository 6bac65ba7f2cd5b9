//! Board time: whole seconds since the Unix epoch, as the Python Hermes stores it.

/// Now, in seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// "3m", "2h", "5d" ago, for listings.
pub fn age(ts: i64, now: i64) -> String {
    let d = (now - ts).max(0);
    match d {
        0..60 => format!("{d}s"),
        60..3600 => format!("{}m", d / 60),
        3600..86_400 => format!("{}h", d / 3600),
        _ => format!("{}d", d / 86_400),
    }
}
