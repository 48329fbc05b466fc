//! `seen stats`: a filter's parameters, fill and estimated false-positive
//! rate, and with `--probe` the rate measured on lines known to be absent.
//!
//! `compute.rs` makes the figures from a header and the layers' bits,
//! `render.rs` prints them, `probe.rs` measures the rate; here the filter is
//! read and the run's health decides its exit code.

mod compute;
mod gens;
mod probe;
mod render;
mod sets;

pub use compute::{
    GenStats, GrowthStats, LayerStats, SetsStats, SliceStats, Stats, WindowStats, compute,
    compute_from,
};
pub use probe::ProbeStats;

use crate::cli::StatsArgs;
use crate::input::sources;
use crate::job::plan::reading;
use crate::progress::Progress;
use crate::store::{Opened, Where};
use anyhow::Result;
use indicatif::HumanCount;
use std::process::ExitCode;

/// Reads the filter `a` names whole and computes its statistics; returns
/// them with the store, open, for `--probe`'s lookups (a remote filter's
/// bits are fetched once, not twice).
///
/// # Errors
/// An unusable filter, or a server that cannot be reached.
fn open(a: &StatsArgs) -> Result<(Stats, (Where, Opened))> {
    let link = a.lock.link();
    let mut f = a.filter.open_read(link)?;
    if let Some(g) = f.gens() {
        let s = gens::compute(g, a.filter.to_string())?;
        return Ok((s, (reading(a.filter.clone(), link), f)));
    }
    if let Some(census) = f.census(&mut |_| {}) {
        let s = sets::compute(&census?, a.filter.to_string());
        return Ok((s, (reading(a.filter.clone(), link), f)));
    }
    let header = f.header().clone();
    // A fetched filter is read, then counted: each half of the bar.
    let total = header.bit_bytes() * if f.fetches_bits() { 2 } else { 1 };
    let progress = Progress::start(a.progress.into(), Some(total), "", false);
    let bits = f.bits(&mut |b| crate::progress::advance(b, 0))?;
    let s = compute_from(&header, &bits, a.filter.to_string());
    drop(bits);
    drop(progress);
    Ok((s, (reading(a.filter.clone(), link), f)))
}

/// Runs `seen stats`.
///
/// # Errors
/// An unusable filter or a failed write.
pub fn run(a: StatsArgs) -> Result<ExitCode> {
    let probe = a.probe.as_deref().map(|p| sources(&[p.to_path_buf()]));
    if let Some(sources) = &probe {
        // Before the filter is read (a big one takes a while).
        crate::job::refuse_filters_as_lines(sources)?;
    }
    let (mut s, store) = open(&a)?;
    if let (Some(sources), Some(file)) = (probe, &a.probe) {
        s.probe = Some(probe::measure(sources, file, store, a.progress.into())?);
        probe_warning(&mut s);
    }
    render::print(&s, a.json)?;
    Ok(if healthy(&a, &s) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Whether the filter passes `--max-fpp` and `--max-fill`; says why not on
/// standard error.
fn healthy(a: &StatsArgs, s: &Stats) -> bool {
    let mut healthy = true;
    match (a.max_fpp, &s.probe) {
        // With --probe, the measured rate decides (the estimate is a formula).
        (Some(max), Some(p)) if p.measured_fpp > max => {
            eprintln!(
                "seen: {}: measured false-positive rate {:.3e} ({} of {} lines of {} present; \
                 95% CI {:.2e} to {:.2e}) is above --max-fpp {max:e}",
                s.file,
                p.measured_fpp,
                HumanCount(p.present),
                HumanCount(p.lookups),
                p.shown(),
                p.ci_low,
                p.ci_high
            );
            healthy = false;
        }
        (Some(max), None) if s.estimated_fpp > max => {
            eprintln!(
                "seen: {}: estimated false-positive rate {:.3e} is above --max-fpp {max:e}",
                s.file, s.estimated_fpp
            );
            healthy = false;
        }
        _ => {}
    }
    if let Some(max) = a.max_fill
        && s.fill_ratio > max
    {
        eprintln!(
            "seen: {}: fill ratio {:.4} is above --max-fill {max}",
            s.file, s.fill_ratio
        );
        healthy = false;
    }
    healthy
}

/// Warns when the measured rate is above the filter's target beyond chance
/// (the whole 95 % interval is): a measurement outweighs the estimate.
fn probe_warning(s: &mut Stats) {
    let Some(p) = &s.probe else { return };
    if p.ci_low > s.target_fpp {
        s.warnings.push(format!(
            "measured false-positive rate {:.2e} (95% CI {:.2e} to {:.2e}) is above its \
             target {:e}: rebuild it larger (unless some lines of {} were inserted: they \
             count as false positives)",
            p.measured_fpp,
            p.ci_low,
            p.ci_high,
            s.target_fpp,
            p.shown()
        ));
    }
}
