//! One module per subcommand: each wires inputs, the filter and the output.

pub mod build;
pub mod dedup;
pub mod plan;
pub mod query;
pub mod stats;
pub mod verify;

use crate::cli::{DEFAULT_FPP, RecordArgs, SizeArgs};
use crate::file::format::Header;
use crate::filter::sizing::{self, DEFAULT_GROWTH, Growth, Spec};
use crate::input::{Source, count_records};
use crate::pipeline::Options;
use anyhow::{Context, Result};
use indicatif::HumanCount;
use std::io::Write;

/// Pipeline options from `-z` and `-j`.
pub fn options(r: RecordArgs) -> Options {
    Options::new(if r.null { 0 } else { b'\n' }, r.threads.map(usize::from))
}

/// Counts the input records when they can be counted (regular files only).
pub fn counted(sources: &[Source], term: u8) -> Result<Option<u64>> {
    count_records(sources, term).context("cannot count the input lines to size the filter")
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

/// What a run did, for `--summary` (printed on stderr).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Records read.
    pub read: u64,
    /// Records judged new (recorded in the filter).
    pub new: u64,
    /// Records written to standard output (`None` for `build`).
    pub written: Option<u64>,
    /// Expected number of new records wrongly judged seen (false positives).
    pub expected_false_positives: f64,
    /// Layers in the filter after the run.
    pub layers: usize,
    /// Compound false-positive rate of the filter after the run.
    pub fpp_now: f64,
}

impl Summary {
    /// The summary of a run that took a filter from layer counts `before` to `after`.
    pub fn new(read: u64, new: u64, written: Option<u64>, before: &[u64], after: &Header) -> Self {
        let spans: Vec<_> = after
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| (l.layout, before.get(i).copied().unwrap_or(0), l.inserts))
            .collect();
        let now: Vec<_> = after.layers.iter().map(|l| (l.layout, l.inserts)).collect();
        Summary {
            read,
            new,
            written,
            expected_false_positives: sizing::expected_false_positives(&spans),
            layers: after.layers.len(),
            fpp_now: sizing::compound_fpp(&now),
        }
    }

    /// Prints the summary on stderr.
    pub fn print(&self) {
        let rows = [
            ("lines read", HumanCount(self.read).to_string()),
            ("new", HumanCount(self.new).to_string()),
            (
                "duplicates",
                HumanCount(self.read.saturating_sub(self.new)).to_string(),
            ),
        ];
        let mut err = std::io::stderr().lock();
        for (k, v) in rows {
            let _ = writeln!(err, "seen: {k:<16} {v:>14}");
        }
        if let Some(w) = self.written {
            let w = HumanCount(w).to_string();
            let _ = writeln!(err, "seen: {:<16} {w:>14}", "lines written");
        }
        let _ = writeln!(
            err,
            "seen: {:<16} {:>14.2}  (expected: new lines taken for seen ones)",
            "false positives", self.expected_false_positives
        );
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
