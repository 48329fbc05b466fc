//! One module per subcommand: each wires inputs, the filter and the output.

pub mod build;
pub mod completions;
pub mod dedup;
pub mod plan;
pub mod query;
pub mod stats;
pub mod verify;

use crate::cli::{DEFAULT_FPP, KeyArgs, RecordArgs, SizeArgs};
use crate::file::format::Header;
use crate::filter::sizing::{self, DEFAULT_GROWTH, Growth, Spec};
use crate::input::{Source, count_records};
use crate::keys::KeySpec;
use crate::pipeline::{Counts, Options};
use anyhow::Result;
use indicatif::HumanCount;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// Pipeline options from `-z`, `-j` and `--no-mmap`.
pub fn options(r: RecordArgs) -> Options {
    let mut o = Options::new(if r.null { 0 } else { b'\n' }, r.threads.map(usize::from));
    o.mmap = !r.no_mmap;
    o
}

/// Counts the input records when they can be counted (regular files only).
pub fn counted(sources: &[Source], opts: &Options) -> Result<Option<u64>> {
    // Its errors name the file ("cannot open x: ...", "x is a directory").
    count_records(sources, opts.term, opts.threads, opts.mmap)
}

/// How many keys a run may insert, for `expect_keys` on a filter file (which
/// decides its page size): the records when they were counted, else one per
/// 16 bytes of the input files (a rough estimate, high for lines of URLs;
/// repeats count too), else unknown (standard input, a pipe or not).
pub fn expected_keys(counted: Option<u64>, sources: &[Source]) -> Option<u64> {
    counted.or_else(|| crate::input::total_bytes(sources).map(|b| b / 16))
}

/// The spec of a new filter from the sizing flags; `default_capacity` is asked
/// only when `-n` is not given.
///
/// # Errors
/// Whatever `default_capacity` returns.
pub fn spec(size: &SizeArgs, default_capacity: impl FnOnce() -> Result<u64>) -> Result<Spec> {
    let capacity = match size.capacity {
        Some(n) => n,
        None => default_capacity()?,
    };
    Ok(Spec {
        capacity: capacity.max(1),
        target_fpp: size.fpp.unwrap_or(DEFAULT_FPP),
        growth: (!size.fixed).then(|| Growth::new(size.growth.unwrap_or(DEFAULT_GROWTH))),
    })
}

/// One `key  value` line of a human report (`stats`, `plan`).
///
/// # Errors
/// A failed write.
pub fn field(out: &mut dyn Write, key: &str, value: String) -> std::io::Result<()> {
    writeln!(out, "{key:<16} {value}")
}

/// Prints `rows` (the first one a header) as aligned columns: the first column
/// left-aligned, the others (numbers) right-aligned, two spaces apart.
///
/// # Errors
/// A failed write.
pub fn columns<const N: usize>(out: &mut dyn Write, rows: &[[String; N]]) -> std::io::Result<()> {
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

/// Keys per layer, to compare a filter before and after a run.
pub fn layer_counts(h: &Header) -> Vec<u64> {
    h.layers.iter().map(|l| l.inserts).collect()
}

/// What a run did, for `--summary` (printed on stderr; with `--json` as one
/// object, schema in docs/JSON.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Records read.
    pub lines_read: u64,
    /// Records judged new (recorded in the filter).
    pub new: u64,
    /// Records judged seen before (duplicates, and false positives).
    pub duplicates: u64,
    /// Records written to standard output (absent for `build`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_written: Option<u64>,
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
    /// Layers in the filter after the run.
    pub layers: usize,
    /// Compound false-positive rate of the filter after the run.
    pub fpp_now: f64,
}

impl Summary {
    /// The summary of a run with `counts` and `keys` that took a filter from
    /// layer counts `before` to `after`.
    pub fn new(
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
        let now: Vec<_> = after.layers.iter().map(|l| (l.layout, l.inserts)).collect();
        Summary {
            lines_read: counts.read,
            new: counts.new,
            duplicates: counts.read.saturating_sub(counts.new),
            lines_written: written,
            expected_false_positives: sizing::expected_false_positives(&spans),
            keys: keys.to_string(),
            missing_field: keys.field.map(|_| counts.missing_field),
            not_url: keys.url.then_some(counts.not_url),
            layers: after.layers.len(),
            fpp_now: sizing::compound_fpp(&now),
        }
    }

    /// Prints the summary on stderr, as a table or (`json`) one JSON line.
    pub fn print(&self, json: bool) {
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
        if let Some(m) = self.missing_field {
            rows.push(("no key field", HumanCount(m).to_string()));
        }
        if let Some(n) = self.not_url {
            rows.push(("not URLs", HumanCount(n).to_string()));
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
        let _ = writeln!(
            err,
            "seen: {:<16} {} layer{}, false-positive rate now {:.1e}",
            "filter",
            self.layers,
            if self.layers == 1 { "" } else { "s" },
            self.fpp_now
        );
    }
}

/// The key spec for a run: the one the flags ask for, else the one `recorded`
/// in the filter file `path` (none for a new or in-memory filter). Asking for
/// other keys than a file records is allowed (e.g. to query it differently)
/// but warned about: keys made another way do not match what is in it.
pub fn keys(asked: &KeyArgs, recorded: Option<(KeySpec, &Path)>) -> KeySpec {
    match (asked.spec(), recorded) {
        (None, Some((r, _))) => r,
        (None, None) => KeySpec::RAW,
        (Some(a), Some((r, path))) if a != r => {
            eprintln!(
                "seen: warning: {} was built with keys `{}` ({r}); using `{}` ({a}) as asked: \
                 lines keyed differently will not match what it holds (drop the key flags to use its own)",
                path.display(),
                r.flags(),
                a.flags(),
            );
            a
        }
        (Some(a), _) => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--no-mmap` reaches the pipeline (and the counting pass, which takes
    /// `Options::mmap` too); without it, input files are mapped.
    #[test]
    fn no_mmap_turns_mapping_off() {
        let args = |no_mmap| RecordArgs {
            null: false,
            threads: Some(1),
            no_mmap,
        };
        assert!(options(args(false)).mmap);
        assert!(!options(args(true)).mmap);
    }
}
