//! The output of `seen stats`: the JSON object, or the text report (the
//! filter's identity and figures, then tables of slices and layers), and
//! the warnings on standard error.

use super::compute::{Stats, WindowStats};
use crate::filter::BLOCK_BITS;
use anyhow::{Context, Result};
use indicatif::{HumanBytes, HumanCount};
use std::io::Write;

/// Prints `s` to standard output, as JSON or as the text report, then its
/// warnings to standard error.
///
/// # Errors
/// A failed write.
pub(super) fn print(s: &Stats, json: bool) -> Result<()> {
    let mut out = crate::output::stdout();
    if json {
        serde_json::to_writer(&mut out, s).context("cannot write output")?;
        writeln!(out).context("cannot write output")?;
    } else {
        table(s, &mut out).context("cannot write output")?;
    }
    out.flush().context("cannot write output")?;
    for w in &s.warnings {
        eprintln!("seen: warning: {}: {w}", s.file);
    }
    Ok(())
}

/// `YYYY-MM-DD HH:MM:SS UTC` from Unix seconds (civil-from-days, H. Hinnant).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn table(s: &Stats, out: &mut impl Write) -> std::io::Result<()> {
    if let Some(sets) = &s.sets {
        return super::sets::table(s, sets, out);
    }
    if let Some(gens) = &s.generations {
        return super::gens::table(s, gens, out);
    }
    identity(s, out)?;
    numbers(s, out)?;
    if let Some(w) = &s.window {
        writeln!(out)?;
        slice_table(w, out)?;
    }
    writeln!(out)?;
    layer_table(s, out)
}

/// One row per live slice, oldest first.
fn slice_table(w: &WindowStats, out: &mut impl Write) -> std::io::Result<()> {
    let count = |x: f64| HumanCount(x.round() as u64).to_string();
    let header = [
        "slice",
        "from",
        "to",
        "new again",
        "layers",
        "inserts",
        "fill",
        "est. items",
        "fpp now",
    ];
    let mut rows: Vec<[String; 9]> = vec![header.map(String::from)];
    let n = w.live.len();
    for (i, sl) in w.live.iter().enumerate() {
        let name = if i + 1 == n {
            "current".to_string()
        } else {
            format!("-{}", n - 1 - i)
        };
        let layers: Vec<String> = sl.layers.iter().map(usize::to_string).collect();
        rows.push([
            name,
            utc(sl.start),
            utc(sl.end),
            utc(sl.forgotten_at),
            if layers.is_empty() {
                "-".to_string()
            } else {
                layers.join(",")
            },
            HumanCount(sl.inserts).to_string(),
            format!("{:.1}%", 100.0 * sl.fill_ratio),
            count(sl.estimated_items),
            format!("{:.2e}", sl.estimated_fpp),
        ]);
    }
    crate::report::columns(out, &rows)
}

/// What the filter is: file, format, keys, growth rule.
fn identity(s: &Stats, out: &mut impl Write) -> std::io::Result<()> {
    let row = crate::report::field;
    row(out, "file", s.file.clone())?;
    row(
        out,
        "format",
        format!(
            "seen filter v{}, {} seed {:#x}, blocked layout ({BLOCK_BITS}-bit blocks)",
            s.format_version, s.hash, s.seed
        ),
    )?;
    row(out, "keys", s.keys_shown())?;
    row(
        out,
        "growth",
        match &s.growth {
            Some(g) => format!(
                "x{} per layer, fpp ratio {} ({} layer{}{})",
                g.factor,
                g.ratio,
                s.layers.len(),
                if s.layers.len() == 1 { "" } else { "s" },
                if g.can_grow {
                    ""
                } else {
                    ", the most a file can have"
                }
            ),
            None if s.window.is_some() => "fixed (one layer per slice)".to_string(),
            None => "fixed (one layer, never grows)".to_string(),
        },
    )?;
    if let Some(w) = &s.window {
        row(
            out,
            "window",
            crate::report::window_rule(w.seconds, w.slices),
        )?;
        let behind = if w.now == w.clock && crate::clock::now() < w.clock {
            " (the clock given is earlier: time in a filter does not go back)"
        } else {
            ""
        };
        row(
            out,
            "time",
            format!("{}{behind}; last recorded {}", utc(w.now), utc(w.clock)),
        )?;
    }
    Ok(())
}

/// How full it is and what that means: size, capacity, fill, estimates,
/// headroom, state.
fn numbers(s: &Stats, out: &mut impl Write) -> std::io::Result<()> {
    let row = crate::report::field;
    let count = |x: f64| HumanCount(x.round() as u64).to_string();
    row(
        out,
        "size",
        format!("{} ({} bits)", HumanBytes(s.bytes), HumanCount(s.bits)),
    )?;
    row(
        out,
        "capacity",
        format!(
            "{}{} at target fpp {:.1e}",
            HumanCount(s.capacity),
            if s.window.is_some() {
                " per window"
            } else {
                ""
            },
            s.target_fpp
        ),
    )?;
    row(
        out,
        "inserts",
        format!(
            "{} ({:.1}% of capacity)",
            HumanCount(s.inserts),
            100.0 * s.capacity_used
        ),
    )?;
    row(
        out,
        "bits set",
        format!(
            "{} ({:.2}% fill)",
            HumanCount(s.bits_set),
            100.0 * s.fill_ratio
        ),
    )?;
    row(out, "est. items", count(s.estimated_items))?;
    if let Some(f) = &s.forget {
        row(
            out,
            "forgotten",
            format!(
                "{} {} answered absent ({:.2}% of inserts), a list of {}",
                HumanCount(f.entries),
                if f.entries == 1 { "key" } else { "keys" },
                100.0 * f.share_of_inserts,
                HumanBytes(f.bytes)
            ),
        )?;
    }
    if s.estimated_uncounted > 0 {
        let full = s.layers.iter().any(|l| l.fill_ratio >= 0.99);
        row(
            out,
            "note",
            format!(
                "inserts counts only lines judged new: {} {} more were taken for seen ones \
                 (false positives)",
                if full { "at least" } else { "about" },
                HumanCount(s.estimated_uncounted)
            ),
        )?;
    }
    row(
        out,
        "est. fpp now",
        format!("{:.3e} (target {:.1e})", s.estimated_fpp, s.target_fpp),
    )?;
    if let Some(p) = &s.probe {
        row(
            out,
            "measured fpp",
            format!(
                "{} (95% CI {} to {}, {} of {} probes)",
                rate(p.measured_fpp),
                rate(p.ci_low),
                rate(p.ci_high),
                HumanCount(p.present),
                HumanCount(p.lookups)
            ),
        )?;
    }
    row(out, "fpp at capacity", format!("{:.3e}", s.fpp_at_capacity))?;
    row(
        out,
        "headroom",
        match (&s.headroom, &s.growth) {
            (Some(h), _) => format!("{} more items before the target is crossed", count(*h)),
            (None, Some(g)) => format!(
                "unbounded (grows; next layer after {} more items)",
                HumanCount(g.next_layer_in)
            ),
            (None, None) => unreachable!("a fixed filter has a headroom"),
        },
    )?;
    row(
        out,
        "state",
        format!(
            "{}, created {}, updated {}",
            if s.clean { "clean" } else { "DIRTY" },
            utc(s.created),
            utc(s.updated)
        ),
    )?;
    Ok(())
}

/// A rate of the probe row: three significant digits, and a plain `0` (not
/// `0.00e0`) for none.
fn rate(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x:.2e}")
    }
}

/// One row per layer.
fn layer_table(s: &Stats, out: &mut impl Write) -> std::io::Result<()> {
    let count = |x: f64| HumanCount(x.round() as u64).to_string();
    let header = [
        "layer",
        "x",
        "k",
        "positions",
        "size",
        "capacity",
        "inserts",
        "fill",
        "est. items",
        "fpp now",
        "fpp at cap",
    ];
    let mut rows: Vec<[String; 11]> = vec![header.map(String::from)];
    for (i, l) in s.layers.iter().enumerate() {
        rows.push([
            match l.slice_start {
                Some(t) if l.live => format!("{i} ({})", &utc(t)[..16]),
                Some(_) => format!("{i} (expired)"),
                None => i.to_string(),
            },
            l.blocks_per_key.to_string(),
            l.k.to_string(),
            l.positions.to_string(),
            HumanBytes(l.bytes).to_string(),
            HumanCount(l.capacity).to_string(),
            HumanCount(l.inserts).to_string(),
            format!("{:.1}%", 100.0 * l.fill_ratio),
            count(l.estimated_items),
            format!("{:.2e}", l.estimated_fpp),
            format!("{:.2e}", l.fpp_at_capacity),
        ]);
    }
    crate::report::columns(out, &rows)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(super::utc(1_798_675_199), "2026-12-30 23:59:59 UTC");
    }
}
