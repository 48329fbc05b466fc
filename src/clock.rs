//! The clock that time windows read: the system clock, or the time `--now`
//! set for the whole run (tests, replays of old logs, cron scripts), and the
//! two ways a time is written (RFC 3339, `@` Unix seconds).
//!
//! Set once, in `main`, before any filter is opened; every store reads it
//! through [`now`], so a run never mixes the two clocks. A header's
//! `created` and `updated` times read [`system_secs`], the one other reading.

use std::sync::OnceLock;

/// 9999-12-31T23:59:59Z, the last time `--now` takes.
const LAST: u64 = 253_402_300_799;

/// The time `--now` gave, when it did.
static FIXED: OnceLock<u64> = OnceLock::new();

/// Makes [`now`] answer `t` (Unix seconds) for the rest of the process. Only
/// the first call counts.
pub fn set_fixed(t: u64) {
    let _ = FIXED.set(t);
}

/// Whether the time is the one `--now` set (it does not advance).
pub fn is_fixed() -> bool {
    FIXED.get().is_some()
}

/// Seconds since the Unix epoch: `--now` when given, else the system clock
/// (0 before 1970).
pub fn now() -> u64 {
    FIXED.get().copied().unwrap_or_else(system_secs)
}

/// Seconds since the Unix epoch by the system clock, whatever `--now` says
/// (0 before 1970): when a header was created and last changed, which record
/// when a run happened, not the time its lines are taken to be at.
pub fn system_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Parses `--now`: an RFC 3339 time (`2026-12-01T09:00:00Z`,
/// `2026-12-01T10:00:00+01:00`; a fraction of a second is dropped) or `@`
/// and Unix seconds (`@1796115600`).
///
/// # Errors
/// A message with both forms, for anything else or a time before 1970.
pub fn parse_now(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let forms = "use an RFC 3339 time such as 2026-12-01T09:00:00Z (or with an offset, \
                 +01:00), or @ and Unix seconds such as @1796115600";
    if let Some(secs) = t.strip_prefix('@') {
        let secs = secs
            .parse::<u64>()
            .map_err(|_| format!("`{s}` is not a time: after @ come Unix seconds; {forms}"))?;
        // A filter's clock never goes back: a time far ahead would stop it
        // forgetting for good.
        if secs > LAST {
            return Err(format!(
                "`{s}` is after the year 9999: after @ come seconds (not milliseconds) \
                 since 1970"
            ));
        }
        return Ok(secs);
    }
    // The pieces, not a `jiff::Timestamp`: its range stops a day short of
    // the end of 9999 (room for offsets), and takes offsets up to 25:59.
    let pieces = jiff::fmt::temporal::Pieces::parse(t)
        .map_err(|e| format!("`{s}` is not a time ({e}); {forms}"))?;
    let (Some(time), Some(offset)) = (pieces.time(), pieces.offset()) else {
        return Err(format!(
            "`{s}` is not a time: it needs a time of day and an offset (Z for UTC); {forms}"
        ));
    };
    let offset = i64::from(offset.to_numeric_offset().seconds());
    if offset.abs() >= 24 * 3600 {
        return Err(format!(
            "`{s}` has an offset of 24 hours or more, which no place has \
             (RFC 3339 offsets run from -23:59 to +23:59); {forms}"
        ));
    }
    let epoch = jiff::civil::DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
    let local = pieces.date().to_datetime(time).duration_since(epoch);
    let secs = local.as_secs() - offset;
    if secs > LAST as i64 {
        return Err(format!(
            "`{s}` is after the year 9999, which a filter cannot record; {forms}"
        ));
    }
    u64::try_from(secs)
        .map_err(|_| format!("`{s}` is before 1970, which a filter cannot record; {forms}"))
}

/// Parses `verify --set-clock`: `now` (the system clock), or a time as
/// [`parse_now`] takes it.
///
/// # Errors
/// As [`parse_now`].
pub fn parse_set_clock(s: &str) -> Result<u64, String> {
    if s.trim() == "now" {
        Ok(system_secs())
    } else {
        parse_now(s)
    }
}

/// A length of time in words, to the largest whole unit: `3 days`,
/// `36 years`, `1 hour`.
pub fn span(secs: u64) -> String {
    let (n, unit) = [
        (365 * 86_400, "year"),
        (86_400, "day"),
        (3_600, "hour"),
        (60, "minute"),
    ]
    .into_iter()
    .find(|&(u, _)| secs >= u)
    .map_or((secs, "second"), |(u, name)| (secs / u, name));
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// `t` (Unix seconds) as an RFC 3339 time in UTC, e.g. `2026-12-01T09:00:00Z`.
pub fn format(t: u64) -> String {
    i64::try_from(t)
        .ok()
        .and_then(|t| jiff::Timestamp::from_second(t).ok())
        .map_or_else(|| format!("@{t}"), |ts| ts.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_in_both_forms_and_print_back() {
        assert_eq!(parse_now("2026-12-01T09:00:00Z"), Ok(1_796_115_600));
        assert_eq!(parse_now("2026-12-01T10:00:00+01:00"), Ok(1_796_115_600));
        assert_eq!(parse_now("2026-12-01T09:00:00.75Z"), Ok(1_796_115_600));
        assert_eq!(parse_now("@1796115600"), Ok(1_796_115_600));
        assert_eq!(parse_now(" @0 "), Ok(0));
        assert_eq!(format(1_796_115_600), "2026-12-01T09:00:00Z");
        assert_eq!(format(0), "1970-01-01T00:00:00Z");
        for bad in [
            "",
            "@",
            "@-5",
            "@1.5",
            "yesterday",
            "2026-12-01",
            "1969-12-31T23:59:59Z",
        ] {
            let e = parse_now(bad).unwrap_err();
            assert!(e.contains("RFC 3339") && e.contains('@'), "{bad}: {e}");
        }
        assert!(
            parse_now("1969-12-31T23:59:59Z")
                .unwrap_err()
                .contains("1970")
        );
        assert!(
            parse_now("@1796083200000")
                .unwrap_err()
                .contains("milliseconds")
        );
        assert_eq!(parse_now("@253402300799"), Ok(253_402_300_799));
        assert_eq!(parse_now("9999-12-31T23:59:59Z"), Ok(LAST));
        assert_eq!(parse_now("9999-12-31T23:59:59.999Z"), Ok(LAST));
        assert_eq!(parse_now("10000-01-01T00:59:59+01:00").ok(), None);
        assert_eq!(parse_now("2026-12-01T09:00:00-00:00"), Ok(1_796_115_600));
        assert_eq!(parse_now("2026-12-02T08:59:00+23:59"), Ok(1_796_115_600));
        assert!(
            parse_now("2026-12-01T09:00:00+24:00")
                .unwrap_err()
                .contains("24 hours")
        );
    }
}
