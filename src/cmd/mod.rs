//! One module per subcommand: each wires inputs, the filter and the output.

pub mod build;
pub mod dedup;
pub mod query;
pub mod stats;

use crate::cli::RecordArgs;
use crate::filter::sizing::{self, Plan};
use crate::input::{Source, count_records};
use crate::pipeline::Options;
use anyhow::{Context, Result};

/// Pipeline options from `-z` and `-j`.
pub fn options(r: RecordArgs) -> Options {
    Options::new(if r.null { 0 } else { b'\n' }, r.threads.map(usize::from))
}

/// Counts the input records when they can be counted (regular files only).
pub fn counted(sources: &[Source], term: u8) -> Result<Option<u64>> {
    count_records(sources, term).context("cannot count the input lines to size the filter")
}

/// Sizes a filter, turning sizing errors into messages that name the flags.
pub fn plan(n: u64, p: f64) -> Result<Plan> {
    sizing::plan(n, p).context("cannot size the filter (-n/--capacity, -p/--fpp)")
}

/// Expected false-positive rate of a single-layer filter holding `inserts` keys.
pub fn fpp_now(layout: &crate::filter::Layout, inserts: u64) -> f64 {
    sizing::blocked_fpp(
        inserts as f64,
        layout.nblocks as f64,
        layout.k,
        layout.blocks_per_key,
    )
}

/// Warns on stderr when a filter holds more keys than it was sized for.
pub fn warn_over_capacity(
    what: &str,
    inserts: u64,
    capacity: u64,
    layout: &crate::filter::Layout,
    target: f64,
) {
    if inserts <= capacity {
        return;
    }
    let pct = 100.0 * inserts as f64 / capacity.max(1) as f64;
    let advice = if pct > 150.0 {
        "results are no longer reliable: rebuild it with a larger -n"
    } else {
        "rebuild it with a larger -n before it degrades further"
    };
    eprintln!(
        "seen: warning: {what} holds {inserts} distinct lines, {pct:.0}% of the {capacity} it was \
         sized for; its false-positive rate is now about {:.1e} (target {target:.0e}): {advice}",
        fpp_now(layout, inserts)
    );
}
