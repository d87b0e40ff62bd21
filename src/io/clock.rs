//! The wall clock, for the dates written into reports and exported files (UTC, from `jiff`).

/// Today's date (UTC) as "YYYY-MM-DD".
pub fn today_utc() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d").to_string()
}

/// Now (UTC) to the minute: "2025-06-01 14:03 UTC".
pub fn now_utc() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%d %H:%M UTC")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let d = today_utc();
        assert_eq!(d.len(), 10, "{d}");
        assert!(d.starts_with("20"), "{d}");
        let n = now_utc();
        assert_eq!(n.len(), "2025-06-01 14:03 UTC".len(), "{n}");
        assert!(n.starts_with(&d) || n > d, "{n} vs {d}");
    }

    #[test]
    fn formats_a_known_instant() {
        // 2024-02-29 12:34:56 UTC, a leap day.
        let t = jiff::Timestamp::from_second(1_709_210_096).unwrap();
        assert_eq!(
            t.strftime("%Y-%m-%d %H:%M UTC").to_string(),
            "2024-02-29 12:34 UTC"
        );
    }
}
