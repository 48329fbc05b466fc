//! Parsing the numbers people type: `10M`, `1e6`, `50k`, `1_000_000` for counts,
//! `1e-6`, `0.001`, `0.1%` for probabilities, `0x…` for seeds.

/// Largest capacity accepted (10^15 keys).
pub(crate) const MAX_CAPACITY: u64 = 1_000_000_000_000_000;

/// Parses a count: an integer or decimal number with an optional exponent and an
/// optional suffix `k`, `M`, `G` (or `B`), `T` (powers of 1000) or `Ki`, `Mi`,
/// `Gi`, `Ti` (powers of 1024). Underscores are ignored, and so are commas
/// between groups of three digits (`1,000,000`, as `seen` prints counts).
///
/// # Errors
/// A message saying what was expected, for clap to show next to the flag.
pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    let t: String = s.trim().chars().filter(|&c| c != '_').collect();
    let t = without_thousands_commas(&t).ok_or_else(|| {
        format!("`{s}` is not a count: commas may only group digits by three (1,000,000)")
    })?;
    let lower = t.to_ascii_lowercase();
    let (num, mult) = [
        ("ki", 1024f64),
        ("mi", 1024f64.powi(2)),
        ("gi", 1024f64.powi(3)),
        ("ti", 1024f64.powi(4)),
        ("k", 1e3),
        ("m", 1e6),
        ("g", 1e9),
        ("b", 1e9),
        ("t", 1e12),
    ]
    .iter()
    .find_map(|(suf, m)| lower.strip_suffix(suf).map(|n| (n, *m)))
    .unwrap_or((lower.as_str(), 1.0));
    let bad = || format!("`{s}` is not a count: use e.g. 1000000, 1e6, 50k, 10M or 2G");
    if num.is_empty() || num.starts_with(['+', '-']) || num.contains("inf") || num.contains("nan") {
        return Err(bad());
    }
    let v = num.parse::<f64>().map_err(|_| bad())? * mult;
    if !v.is_finite() {
        return Err(bad());
    }
    if v > MAX_CAPACITY as f64 {
        return Err(format!("`{s}` is too large: at most 1e15 items"));
    }
    let n = v.round() as u64;
    if n == 0 {
        return Err(format!("`{s}` must be at least 1"));
    }
    Ok(n)
}

/// `t` without the commas that group its leading digits by three
/// (`1,000,000` → `1000000`, `2,500k` → `2500k`); `None` when a comma is
/// anywhere else (`1,5` is a decimal comma: ambiguous, refused).
fn without_thousands_commas(t: &str) -> Option<String> {
    if !t.contains(',') {
        return Some(t.to_string());
    }
    let digits = t
        .find(|c: char| !c.is_ascii_digit() && c != ',')
        .unwrap_or(t.len());
    let (grouped, rest) = t.split_at(digits);
    let mut groups = grouped.split(',');
    let first = groups.next()?;
    let ok = (1..=3).contains(&first.len()) && groups.all(|g| g.len() == 3) && !rest.contains(',');
    ok.then(|| format!("{}{rest}", grouped.replace(',', "")))
}

/// [`parse_count`], and 0 (`-m 0`: nothing).
///
/// # Errors
/// As [`parse_count`].
pub(crate) fn parse_count_or_zero(s: &str) -> Result<u64, String> {
    match s.trim() {
        "0" => Ok(0),
        _ => parse_count(s),
    }
}

/// Smallest false-positive probability accepted anywhere (`-p`, a layer's
/// share of it); `filter::sizing` sizes nothing below it.
pub const MIN_FPP: f64 = 1e-15;

/// Parses a false-positive probability: `1e-6`, `0.001` or a percentage `0.1%`.
/// Must lie in `[1e-15, 1)`.
///
/// # Errors
/// A message saying what range is accepted.
pub(crate) fn parse_fpp(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 0.01),
        None => (t, 1.0),
    };
    let bad = || format!("`{s}` is not a probability: use e.g. 1e-6, 0.001 or 0.1%");
    let v = num.parse::<f64>().map_err(|_| bad())? * scale;
    if !v.is_finite() {
        return Err(bad());
    }
    if !(MIN_FPP..1.0).contains(&v) {
        return Err(format!(
            "`{s}` is out of range: a false-positive rate must be at least 1e-15 and below 1 (e.g. 1e-6)"
        ));
    }
    Ok(v)
}

/// Parses a fraction in `[0, 1]`: a plain number or a percentage (`0.5`, `50%`).
///
/// # Errors
/// A message with the accepted forms.
pub(crate) fn parse_fraction(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 0.01),
        None => (t, 1.0),
    };
    let v = num.parse::<f64>().map(|v| v * scale);
    match v {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "`{s}` is not a fraction between 0 and 1: use e.g. 0.5 or 50%"
        )),
    }
}

/// How often `dedup -f` records what it has printed: every so many lines, or
/// every so much time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Every {
    /// At most this many lines per commit span.
    Lines(u64),
    /// At most this long per commit span.
    Time(std::time::Duration),
}

/// The one rule for suffixes: a count takes `k`, `M`, `G`, `T` (any case:
/// `10m` is ten million); a duration takes `ms`, `s`, `min` and `h`. A
/// lowercase `m` where a duration may stand (`--commit-every 1m`: a minute,
/// or a million lines?) is refused, with both readings in the message.
fn ambiguous_m(s: &str, t: &str, or_count: bool) -> Result<(), String> {
    match t.strip_suffix('m') {
        Some(n) if n.trim().parse::<f64>().is_ok() => Err(if or_count {
            format!("`{s}` is ambiguous: write {n}min for minutes, or {n}M for millions of lines")
        } else {
            format!("`{s}` is ambiguous: write {n}min for minutes (or {n}ms for milliseconds)")
        }),
        _ => Ok(()),
    }
}

/// Parses `--commit-every`: a duration (`500ms`, `2s`, `1min`) or a line
/// count (`100000`, `1M`); `1m` is refused as ambiguous ([`ambiguous_m`]).
///
/// # Errors
/// A message with the accepted forms.
pub(crate) fn parse_every(s: &str) -> Result<Every, String> {
    let t = s.trim();
    let bad =
        || format!("`{s}` is not a duration or a line count: use e.g. 2s, 500ms, 1min or 100k");
    if let Some(ms) = millis(s, t, true)? {
        let ms = ms.ok_or_else(bad)?;
        if ms == 0.0 {
            return Err(format!(
                "`{s}` is no time: a commit span must last more than 0"
            ));
        }
        if ms > 86_400_000.0 {
            return Err(format!(
                "`{s}` is too long: a commit span lasts at most a day (24h); \
                 lines are only recorded at its end"
            ));
        }
        return Ok(Every::Time(duration(ms)));
    }
    match parse_count(t) {
        Ok(n) => Ok(Every::Lines(n)),
        // A number, but not a usable count: say why (too large, zero).
        Err(e)
            if t.starts_with(|c: char| c.is_ascii_digit() || c == '.')
                && !e.contains("not a count") =>
        {
            Err(format!("{e} (a count of lines per commit span)"))
        }
        Err(_) => Err(bad()),
    }
}

/// Parses how long to wait for a lock: a number with `ms`, `s`, `min` or
/// `h`; `0` gives up at once when the lock is taken. `5m` is refused, as
/// everywhere a duration stands ([`ambiguous_m`]).
///
/// # Errors
/// A message saying what was expected.
pub(crate) fn parse_wait(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a duration: use e.g. 500ms, 10s, 5min or 1h");
    if t == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    match millis(s, t, false)? {
        Some(Some(ms)) if ms <= 1e12 => Ok(duration(ms)),
        _ => Err(bad()),
    }
}

/// The milliseconds `t` (the trimmed `s`) says, when it ends with a duration
/// suffix (`ms`, `min`, `s`, `h`): `Some(None)` when what comes before the
/// suffix is not a finite, non-negative number; `None` without a suffix.
/// `or_count`: the value could also be a count (for the message).
///
/// # Errors
/// A bare `m` ([`ambiguous_m`]).
fn millis(s: &str, t: &str, or_count: bool) -> Result<Option<Option<f64>>, String> {
    ambiguous_m(s, t, or_count)?;
    let units = [
        ("ms", 1.0),
        ("min", 60_000.0),
        ("s", 1000.0),
        ("h", 3_600_000.0),
    ];
    let Some((n, unit)) = units
        .iter()
        .find_map(|&(suffix, ms)| t.strip_suffix(suffix).map(|n| (n, ms)))
    else {
        return Ok(None);
    };
    let v = n.trim().parse::<f64>().ok();
    Ok(Some(
        v.filter(|v| v.is_finite() && !v.is_sign_negative())
            .map(|v| v * unit),
    ))
}

/// `ms` milliseconds, to the microsecond.
fn duration(ms: f64) -> std::time::Duration {
    std::time::Duration::from_micros((ms * 1000.0).round() as u64)
}

/// Longest time window: 100 years of 365 days.
pub(crate) const MAX_WINDOW_SECS: u64 = 100 * 365 * 86_400;

/// Parses `--window`: a whole number of seconds (`s`), minutes (`min`),
/// hours (`h`), days (`d`) or weeks (`w`), e.g. `6d`, `12h`, `90min`; a
/// day is 86,400 seconds. `5m` is refused as everywhere ([`ambiguous_m`]).
///
/// # Errors
/// A message with the accepted forms, for anything else, 0 or over 100 years.
pub(crate) fn parse_window(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a time window: use e.g. 6d, 7d, 12h, 90min, 2w or 3600s");
    ambiguous_m(s, t, false)?;
    let units = [
        ("min", 60),
        ("s", 1),
        ("h", 3_600),
        ("d", 86_400),
        ("w", 7 * 86_400),
    ];
    let (n, unit) = units
        .iter()
        .find_map(|&(suffix, secs)| t.strip_suffix(suffix).map(|n| (n.trim(), secs)))
        .ok_or_else(bad)?;
    let n: u64 = n.parse().map_err(|_| bad())?;
    match n.checked_mul(unit) {
        Some(0) => Err(format!("`{s}` is no time: a window must last at least 1s")),
        Some(w) if w <= MAX_WINDOW_SECS => Ok(w),
        _ => Err(format!(
            "`{s}` is too long: a window lasts at most 100 years"
        )),
    }
}

/// Parses a seed: decimal or `0x` hexadecimal, 64 bits.
///
/// # Errors
/// A message with the accepted forms.
pub(crate) fn parse_seed(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse::<u64>(),
    };
    r.map_err(|_| format!("`{s}` is not a 64-bit seed: use a decimal or 0x-hex number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 21: `-n 1,000,000`, the form `seen` prints, is a count; a
    /// comma that does not group digits by three is refused, saying why.
    #[test]
    fn commas_group_thousands() {
        assert_eq!(parse_count("1,000,000"), Ok(1_000_000));
        assert_eq!(parse_count("12,345"), Ok(12_345));
        assert_eq!(parse_count("2,500k"), Ok(2_500_000));
        for bad in ["1,5", "1,00", "1000,000", ",100", "1,000.5,0", "1,,000"] {
            let e = parse_count(bad).unwrap_err();
            assert!(e.contains("commas"), "{bad}: {e}");
        }
    }

    #[test]
    fn counts() {
        for (s, v) in [
            ("1", 1),
            ("1000000", 1_000_000),
            ("1_000_000", 1_000_000),
            ("1e6", 1_000_000),
            ("50k", 50_000),
            ("50K", 50_000),
            ("10M", 10_000_000),
            ("1.5M", 1_500_000),
            ("2G", 2_000_000_000),
            ("2B", 2_000_000_000),
            ("1T", 1_000_000_000_000),
            ("1Ki", 1024),
            ("1Mi", 1 << 20),
            (" 7 ", 7),
            ("1e15", MAX_CAPACITY),
        ] {
            assert_eq!(parse_count(s), Ok(v), "{s}");
        }
        for s in [
            "", "k", "abc", "-5", "0", "0.1", "1e30", "nan", "inf", "1e16", "10X", "1..2",
        ] {
            assert!(parse_count(s).is_err(), "{s}");
        }
        assert!(parse_count("0").unwrap_err().contains("at least 1"));
        assert!(parse_count("1e30").unwrap_err().contains("too large"));
    }

    #[test]
    fn probabilities() {
        for (s, v) in [
            ("1e-6", 1e-6),
            ("0.001", 0.001),
            ("0.1%", 0.001),
            ("1%", 0.01),
            ("0.5", 0.5),
        ] {
            assert!((parse_fpp(s).unwrap() - v).abs() < 1e-18, "{s}");
        }
        for s in [
            "0", "1", "-0.1", "nan", "NaN", "inf", "1e-16", "2", "100%", "x", "",
        ] {
            assert!(parse_fpp(s).is_err(), "{s}");
        }
    }

    #[test]
    fn commit_intervals() {
        use std::time::Duration;
        assert_eq!(parse_every("2s"), Ok(Every::Time(Duration::from_secs(2))));
        assert_eq!(
            parse_every("500ms"),
            Ok(Every::Time(Duration::from_millis(500)))
        );
        assert_eq!(
            parse_every("1min"),
            Ok(Every::Time(Duration::from_secs(60)))
        );
        assert_eq!(
            parse_every("1h"),
            Ok(Every::Time(Duration::from_secs(3600)))
        );
        // Issue 21: a minute or a million lines? Refused, naming both.
        let e = parse_every("1m").unwrap_err();
        assert!(e.contains("1min") && e.contains("1M"), "{e}");
        assert_eq!(parse_wait("5min"), Ok(Duration::from_secs(300)));
        assert!(parse_wait("5m").unwrap_err().contains("5min"));
        assert_eq!(parse_count("10m"), Ok(10_000_000), "a count: ten million");
        assert_eq!(
            parse_every("0.5s"),
            Ok(Every::Time(Duration::from_millis(500)))
        );
        assert_eq!(parse_every("100k"), Ok(Every::Lines(100_000)));
        assert_eq!(parse_every("1M"), Ok(Every::Lines(1_000_000)));
        for s in ["0s", "-1s", "xs", "", "0", "2d", "nan s"] {
            assert!(parse_every(s).is_err(), "{s}");
        }
        // Out of range is said as such, not as "not a duration" (issue 19).
        let long = parse_every("1000000000000s").unwrap_err();
        assert!(
            long.contains("too long") && long.contains("a day"),
            "{long}"
        );
        let many = parse_every("99999999999999999999999").unwrap_err();
        assert!(many.contains("too large"), "{many}");
        assert!(parse_every("0s").unwrap_err().contains("more than 0"));
        assert!(parse_every("xs").unwrap_err().contains("not a duration"));
    }

    #[test]
    fn windows() {
        assert_eq!(parse_window("6d"), Ok(6 * 86_400));
        assert_eq!(parse_window("12h"), Ok(43_200));
        assert_eq!(parse_window("90min"), Ok(5_400));
        assert_eq!(parse_window("2w"), Ok(14 * 86_400));
        assert_eq!(parse_window(" 3600s "), Ok(3_600));
        assert!(parse_window("5m").unwrap_err().contains("5min"));
        assert!(parse_window("0d").unwrap_err().contains("at least 1s"));
        assert!(parse_window("900000h").unwrap_err().contains("100 years"));
        for bad in [
            "",
            "6",
            "1.5d",
            "-1d",
            "d",
            "6 days",
            "99999999999999999999d",
        ] {
            assert!(parse_window(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fractions() {
        assert_eq!(parse_fraction("0.5"), Ok(0.5));
        assert_eq!(parse_fraction("50%"), Ok(0.5));
        assert_eq!(parse_fraction("1"), Ok(1.0));
        assert_eq!(parse_fraction("0"), Ok(0.0));
        for s in ["-0.1", "1.01", "101%", "nan", "x", ""] {
            assert!(parse_fraction(s).is_err(), "{s}");
        }
    }

    #[test]
    fn seeds() {
        assert_eq!(parse_seed("42"), Ok(42));
        assert_eq!(parse_seed("0xff"), Ok(255));
        assert_eq!(parse_seed("0xFFFF_FFFF_FFFF_FFFF"), Ok(u64::MAX));
        assert!(parse_seed("-1").is_err());
        assert!(parse_seed("0x1_0000_0000_0000_0000").is_err());
    }
}
