//! The reporting room: the `--summary` of a run ([`Summary`]) and the
//! aligned `key  value` lines and columns of `stats` and `plan`.

use crate::filter::sizing;
use crate::format::Header;
use crate::keys::KeySpec;
use crate::pipeline::Counts;
use indicatif::HumanCount;
use serde::Serialize;
use std::io::Write;

/// A number of seconds in at most two adjacent units, the largest first
/// (the rest dropped): `6d`, `18h`, `6d 18h`, `1min 30s`, `2h 30min`.
pub(crate) fn span(secs: f64) -> String {
    let s = secs.round() as u64;
    let units = [(86_400, "d"), (3_600, "h"), (60, "min"), (1, "s")];
    let mut parts = Vec::new();
    let mut left = s;
    for (u, name) in units {
        if left >= u && parts.len() < 2 {
            parts.push(format!("{}{name}", left / u));
            left %= u;
        } else if !parts.is_empty() {
            // Two units at most, and only adjacent ones.
            break;
        }
    }
    if parts.is_empty() {
        "0s".to_string()
    } else {
        parts.join(" ")
    }
}

/// What a window of `secs` in `slices` slices promises, as `stats` and
/// `plan` say it: "6d in 8 slices of 18h: a line is seen for 6d after it is
/// recorded, and new again 6d 18h after at most".
pub(crate) fn window_rule(secs: u64, slices: u32) -> String {
    let slice = secs as f64 / f64::from(slices);
    format!(
        "{} in {slices} slices of {}: a line is seen for {} after it is recorded, and new \
         again {} after at most",
        span(secs as f64),
        span(slice),
        span(secs as f64),
        span_up(secs as f64 + slice)
    )
}

/// [`span`] rounded up in its smaller unit, for a bound that must not be
/// understated: 13⅓ s is `14s`, 1h 8min 34s is `1h 9min`.
pub(crate) fn span_up(secs: f64) -> String {
    let units = [86_400u64, 3_600, 60, 1];
    let s = secs.ceil() as u64;
    let Some(first) = units.iter().position(|&u| s >= u) else {
        return "0s".to_string();
    };
    let step = units[(first + 1).min(units.len() - 1)];
    span((s.div_ceil(step) * step) as f64)
}

/// One `key  value` line of a human report (`stats`, `plan`).
///
/// # Errors
/// A failed write.
pub(crate) fn field(out: &mut dyn Write, key: &str, value: String) -> std::io::Result<()> {
    writeln!(out, "{key:<16} {value}")
}

/// Prints `rows` (the first one a header) as aligned columns: the first column
/// left-aligned, the others (numbers) right-aligned, two spaces apart.
///
/// # Errors
/// A failed write.
pub(crate) fn columns<const N: usize>(
    out: &mut dyn Write,
    rows: &[[String; N]],
) -> std::io::Result<()> {
    let widths: Vec<usize> = (0..N)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let mut line = format!("{:<w$}", r[0], w = widths[0]);
        for (cell, w) in r.iter().zip(&widths).skip(1) {
            line.push_str(&format!("  {cell:>w$}"));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// What a run did, for `--summary` (printed on stderr; with `--json` as one
/// object, schema in docs/JSON.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Summary {
    /// Records read.
    pub lines_read: u64,
    /// Records judged new (recorded in the filter).
    pub new: u64,
    /// Records judged seen before (duplicates, and false positives).
    pub duplicates: u64,
    /// Records written to standard output (absent for `build`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_written: Option<u64>,
    /// Records written to the `--dups-out` file (absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dups_written: Option<u64>,
    /// Expected number of new records wrongly judged seen (false positives).
    pub expected_false_positives: f64,
    /// How keys were made (`whole record`, `field 2 (','-separated)`, ...).
    pub keys: String,
    /// Records without the `-k` field (their key was empty); absent without `-k`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_field: Option<u64>,
    /// Keys that were not absolute URLs (hashed as they were); absent without `--url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_url: Option<u64>,
    /// Commit spans of a filter file written as lines are printed
    /// (`dedup -f`), and how many of them held the filter in memory; absent
    /// otherwise. Their JSON keys and table rows keep the names they were
    /// published with (`commit_windows`, `held_windows`: docs/JSON.md).
    #[serde(rename = "commit_windows", skip_serializing_if = "Option::is_none")]
    pub commit_spans: Option<u64>,
    #[serde(rename = "held_windows", skip_serializing_if = "Option::is_none")]
    pub held_spans: Option<u64>,
    /// Layers in the filter after the run.
    pub layers: usize,
    /// Compound false-positive rate of the filter after the run.
    pub fpp_now: f64,
}

impl Summary {
    /// The summary of a run with `counts` and `keys` that took a filter from
    /// layer counts `before` to `after`.
    pub(crate) fn new(
        counts: &Counts,
        written: Option<u64>,
        keys: KeySpec,
        before: &[u64],
        after: &Header,
    ) -> Self {
        let spans: Vec<_> = after
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| (l.layout, before.get(i).copied().unwrap_or(0), l.inserts))
            .collect();
        let now = after
            .layers
            .iter()
            .map(|l| l.filter_kind().as_kind().counted_fpp(l.inserts));
        Summary {
            lines_read: counts.read,
            new: counts.new,
            duplicates: counts.read.saturating_sub(counts.new),
            lines_written: written,
            dups_written: None,
            expected_false_positives: sizing::expected_false_positives(&spans),
            keys: keys.to_string(),
            missing_field: keys.field.map(|_| counts.missing_field),
            not_url: keys.url.then_some(counts.not_url),
            commit_spans: (counts.spans > 0).then_some(counts.spans),
            held_spans: (counts.spans > 0).then_some(counts.staged_spans),
            layers: after.layers.len(),
            fpp_now: sizing::any_of(now),
        }
    }

    /// Prints the summary on stderr, as a table or (`json`) one JSON line.
    pub(crate) fn print(&self, json: bool) {
        let mut err = std::io::stderr().lock();
        if json {
            if serde_json::to_writer(&mut err, self).is_ok() {
                let _ = writeln!(err);
            }
            return;
        }
        let mut rows = vec![
            ("lines read", HumanCount(self.lines_read).to_string()),
            ("new", HumanCount(self.new).to_string()),
            ("duplicates", HumanCount(self.duplicates).to_string()),
        ];
        if let Some(w) = self.lines_written {
            rows.push(("lines written", HumanCount(w).to_string()));
        }
        if let Some(w) = self.dups_written {
            rows.push(("to --dups-out", HumanCount(w).to_string()));
        }
        if let Some(m) = self.missing_field {
            rows.push(("no key field", HumanCount(m).to_string()));
        }
        if let Some(n) = self.not_url {
            rows.push(("not URLs", HumanCount(n).to_string()));
        }
        if let Some(n) = self.commit_spans {
            rows.push(("commit windows", HumanCount(n).to_string()));
            let held = self.held_spans.unwrap_or(0);
            rows.push(("held in memory", HumanCount(held).to_string()));
        }
        for (k, v) in rows {
            let _ = writeln!(err, "seen: {k:<16} {v:>14}");
        }
        let _ = writeln!(
            err,
            "seen: {:<16} {:>14.2}  (expected: new lines taken for seen ones)",
            "false positives", self.expected_false_positives
        );
        if self.keys != KeySpec::RAW.to_string() {
            let _ = writeln!(err, "seen: {:<16} {}", "keys", self.keys);
        }
        // A Redis filter of fingerprint sets has no layers.
        let layers = match self.layers {
            0 => String::new(),
            1 => "1 layer, ".to_string(),
            n => format!("{n} layers, "),
        };
        let _ = writeln!(
            err,
            "seen: {:<16} {layers}false-positive rate now {:.1e}",
            "filter", self.fpp_now
        );
    }
}
