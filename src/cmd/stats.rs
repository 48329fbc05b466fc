//! `seen stats`: a filter's parameters, fill and estimated false-positive rate.

use crate::cli::StatsArgs;
use crate::file::ReadFilter;
use crate::file::format::{Header, VERSION_MAJOR};
use crate::filter::sizing::{classic_bits, classic_k};
use crate::filter::{self, BLOCK_BITS};
use anyhow::{Context, Result};
use indicatif::{HumanBytes, HumanCount};
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;

/// Statistics of one layer (the JSON `layers[]` objects; see docs/STATS.md).
#[derive(Debug, Serialize)]
pub struct LayerStats {
    /// Always "blocked-512".
    pub layout: &'static str,
    /// Bits set per block per key.
    pub k: u32,
    /// Blocks each key touches.
    pub blocks_per_key: u32,
    /// Size of the bit array in bits.
    pub bits: u64,
    /// Size of the bit array in bytes.
    pub bytes: u64,
    /// Distinct keys the layer was sized for.
    pub capacity: u64,
    /// False-positive rate the layer was sized for.
    pub target_fpp: f64,
    /// Keys recorded as new.
    pub inserts: u64,
    /// `inserts / capacity`.
    pub capacity_used: f64,
    /// Bits set (popcount).
    pub bits_set: u64,
    /// `bits_set / bits`.
    pub fill_ratio: f64,
    /// Distinct keys estimated from the per-block fill.
    pub estimated_items: f64,
    /// False-positive rate now, from the actual per-block occupancy.
    pub estimated_fpp: f64,
    /// False-positive rate the formula gives at capacity.
    pub fpp_at_capacity: f64,
    /// Bits per key at capacity.
    pub bits_per_key: f64,
    /// Bits per key a classic (unblocked) filter needs for the same capacity and target.
    pub classic_bits_per_key: f64,
    /// Hash count of that classic filter.
    pub classic_k: u32,
}

/// The JSON object printed by `seen stats --json` (docs/STATS.md).
#[derive(Debug, Serialize)]
pub struct Stats {
    /// Path as given.
    pub file: String,
    /// "MAJOR.MINOR".
    pub format_version: String,
    /// Hash definition name.
    pub hash: &'static str,
    /// Hash seed.
    pub seed: u64,
    /// File size in bytes.
    pub file_bytes: u64,
    /// Sum over layers.
    pub bits: u64,
    /// Sum over layers.
    pub bytes: u64,
    /// What the filter was sized for.
    pub capacity: u64,
    /// What the filter was sized for.
    pub target_fpp: f64,
    /// Sum over layers.
    pub inserts: u64,
    /// `inserts / capacity`.
    pub capacity_used: f64,
    /// Sum over layers.
    pub bits_set: u64,
    /// `bits_set / bits`.
    pub fill_ratio: f64,
    /// Sum over layers.
    pub estimated_items: f64,
    /// Probability that an absent key is reported present by any layer.
    pub estimated_fpp: f64,
    /// False-positive rate at capacity.
    pub fpp_at_capacity: f64,
    /// False when the dirty flag is set (a writer did not finish).
    pub clean: bool,
    /// Unix seconds.
    pub created: u64,
    /// Unix seconds.
    pub updated: u64,
    /// One entry per layer, oldest first.
    pub layers: Vec<LayerStats>,
    /// Human-readable warnings (also printed to stderr).
    pub warnings: Vec<String>,
}

/// Computes the statistics of an open filter (reads every bit once).
pub fn compute(f: &ReadFilter) -> Stats {
    let h: &Header = f.header();
    let mut layers = Vec::new();
    for (i, l) in h.layers.iter().enumerate() {
        let occ = filter::occupancy(f.layer_bits(i), &l.layout);
        layers.push(LayerStats {
            layout: "blocked-512",
            k: l.layout.k,
            blocks_per_key: l.layout.blocks_per_key,
            bits: l.layout.bits(),
            bytes: l.layout.bytes(),
            capacity: l.capacity,
            target_fpp: l.target_fpp,
            inserts: l.inserts,
            capacity_used: l.inserts as f64 / l.capacity.max(1) as f64,
            bits_set: occ.bits_set,
            fill_ratio: occ.bits_set as f64 / l.layout.bits() as f64,
            estimated_items: occ.estimated_items,
            estimated_fpp: occ.current_fpp,
            fpp_at_capacity: super::fpp_now(&l.layout, l.capacity),
            bits_per_key: l.layout.bits() as f64 / l.capacity.max(1) as f64,
            classic_bits_per_key: classic_bits(l.capacity.max(1), l.target_fpp) as f64
                / l.capacity.max(1) as f64,
            classic_k: classic_k(classic_bits(l.capacity.max(1), l.target_fpp), l.capacity),
        });
    }
    let bits: u64 = layers.iter().map(|l| l.bits).sum();
    let bits_set: u64 = layers.iter().map(|l| l.bits_set).sum();
    let inserts = h.inserts();
    let none = |f: fn(&LayerStats) -> f64| 1.0 - layers.iter().map(|l| 1.0 - f(l)).product::<f64>();
    let mut warnings = Vec::new();
    let used = inserts as f64 / h.capacity.max(1) as f64;
    if used > 1.5 {
        warnings.push(format!(
            "{:.0}% of capacity: past 150% the false-positive rate is unacceptable; rebuild with a larger -n",
            used * 100.0
        ));
    } else if used > 1.0 {
        warnings.push(format!(
            "{:.0}% of capacity: the false-positive rate is above its target; rebuild with a larger -n",
            used * 100.0
        ));
    }
    if h.is_dirty() {
        warnings.push("not closed cleanly: the insert counter may be low".to_string());
    }
    Stats {
        file: f.path().display().to_string(),
        format_version: format!("{VERSION_MAJOR}.{}", h.version_minor),
        hash: "xxh3-128",
        seed: h.seed,
        file_bytes: h.file_len(),
        bits,
        bytes: bits / 8,
        capacity: h.capacity,
        target_fpp: h.target_fpp,
        inserts,
        capacity_used: used,
        bits_set,
        fill_ratio: bits_set as f64 / bits as f64,
        estimated_items: layers.iter().map(|l| l.estimated_items).sum(),
        estimated_fpp: none(|l| l.estimated_fpp),
        fpp_at_capacity: none(|l| l.fpp_at_capacity),
        clean: !h.is_dirty(),
        created: h.created,
        updated: h.updated,
        layers,
        warnings,
    }
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
    let row = |out: &mut dyn Write, k: &str, v: String| writeln!(out, "{k:<16} {v}");
    row(out, "file", s.file.clone())?;
    row(
        out,
        "format",
        format!(
            "seen filter v{}, {} seed {:#x}",
            s.format_version, s.hash, s.seed
        ),
    )?;
    for (i, l) in s.layers.iter().enumerate() {
        let name = if s.layers.len() == 1 {
            "layout".to_string()
        } else {
            format!("layer {i}")
        };
        row(
            out,
            &name,
            format!(
                "blocked, {BLOCK_BITS}-bit blocks, {} block{}/key, k = {} bits per block",
                l.blocks_per_key,
                if l.blocks_per_key == 1 { "" } else { "s" },
                l.k
            ),
        )?;
    }
    row(
        out,
        "size",
        format!("{} ({} bits)", HumanBytes(s.bytes), HumanCount(s.bits)),
    )?;
    for l in &s.layers {
        row(
            out,
            "bits per key",
            format!(
                "{:.2} (a classic filter needs {:.2} with k = {})",
                l.bits_per_key, l.classic_bits_per_key, l.classic_k
            ),
        )?;
    }
    row(
        out,
        "capacity",
        format!(
            "{} at target fpp {:.1e}",
            HumanCount(s.capacity),
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
    row(
        out,
        "est. items",
        HumanCount(s.estimated_items.round() as u64).to_string(),
    )?;
    row(out, "est. fpp now", format!("{:.3e}", s.estimated_fpp))?;
    row(out, "fpp at capacity", format!("{:.3e}", s.fpp_at_capacity))?;
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

/// Runs `seen stats`.
///
/// # Errors
/// An unusable filter or a failed write.
pub fn run(a: StatsArgs) -> Result<ExitCode> {
    let f = ReadFilter::open(&a.filter)?;
    let s = compute(&f);
    let mut out = crate::output::stdout();
    if a.json {
        serde_json::to_writer(&mut out, &s).context("cannot write output")?;
        writeln!(out).context("cannot write output")?;
    } else {
        table(&s, &mut out).context("cannot write output")?;
    }
    out.flush().context("cannot write output")?;
    for w in &s.warnings {
        eprintln!("seen: warning: {}: {w}", s.file);
    }
    Ok(ExitCode::SUCCESS)
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
