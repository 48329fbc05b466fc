//! The statistics of a Redis filter of fingerprint sets in generations
//! (one that grows, or has a time window): made from a count of its live
//! generations' sets, into the same [`Stats`] object (its `generations`
//! member has one entry per live generation), and the text report.

use super::compute::{GenStats, GrowthStats, SliceStats, Stats, WindowStats};
use crate::redis::GensFilter;
use crate::redis::gens::GensMeta;
use anyhow::Result;
use indicatif::{HumanBytes, HumanCount};
use std::io::Write;

/// The statistics of `f`, named `name`.
///
/// # Errors
/// A server that cannot be reached.
pub(super) fn compute(f: &mut GensFilter, name: String) -> Result<Stats> {
    let census = f.census(&mut |_| {})?;
    let m = f.meta().clone();
    let now = f.time();
    let groups = m.groups;
    let gens: Vec<GenStats> = census
        .iter()
        .map(|c| {
            let g = &c.generation;
            let sets = g.per_group * groups;
            GenStats {
                index: g.index,
                slice: m.window.map(|_| g.slice),
                rank: g.rank,
                capacity: g.capacity,
                target_fpp: g.rate,
                fingerprint_bits: g.fp_bits,
                sets,
                inserts: c.lines,
                fingerprints: c.fingerprints,
                max_per_set: c.max_load,
                past_limit: c.past,
                estimated_fpp: (c.fingerprints as f64 / sets as f64 / 2f64.powi(g.fp_bits as i32))
                    .min(1.0),
            }
        })
        .collect();
    let fingerprints: u64 = gens.iter().map(|g| g.fingerprints).sum();
    let inserts: u64 = gens.iter().map(|g| g.inserts).sum();
    let sets: u64 = gens.iter().map(|g| g.sets).sum();
    let bits: u64 = gens
        .iter()
        .map(|g| g.fingerprints * u64::from(g.fingerprint_bits))
        .sum();
    let estimated_fpp = gens.iter().map(|g| g.estimated_fpp).sum::<f64>().min(1.0);
    let fpp_at_capacity = gens.iter().map(|g| g.target_fpp).sum::<f64>().min(1.0);
    let capacity = match m.window {
        Some(_) => m.capacity,
        None => gens.iter().map(|g| g.capacity).sum(),
    };
    let room = f.room();
    let wrong: usize = census.iter().map(|c| c.wrong.len()).sum();
    let warnings = warnings(&m, &gens, wrong, estimated_fpp);
    let window = window(&m, &gens, now, f.clock());
    let h = f.header().clone();
    Ok(Stats {
        file: name,
        format_version: "redis-gens 1".to_string(),
        hash: "xxh3-128",
        seed: m.seed,
        keys: m.keys.to_string(),
        key_flags: m.keys.flags(),
        file_bytes: bits / 8,
        bits,
        bytes: bits / 8,
        capacity,
        target_fpp: m.target_fpp,
        growth: m.growth.map(|g| GrowthStats {
            factor: g.factor,
            ratio: g.ratio,
            can_grow: room.is_some(),
            next_layer_in: room.unwrap_or(0),
        }),
        window,
        inserts,
        capacity_used: inserts as f64 / capacity.max(1) as f64,
        bits_set: 0,
        fill_ratio: fingerprints as f64 / (sets.max(1) * m.limit.max(1)) as f64,
        estimated_items: fingerprints as f64,
        estimated_uncounted: 0,
        estimated_fpp,
        fpp_at_capacity,
        headroom: None,
        probe: None,
        clean: wrong == 0,
        created: m.created,
        updated: h.updated,
        layers: Vec::new(),
        forget: None,
        sets: None,
        generations: Some(gens),
        warnings,
    })
}

/// What `stats` warns of: keys that are not sets, sets past the intset
/// limit, generations that lost lines, a rate above the target.
fn warnings(m: &GensMeta, gens: &[GenStats], wrong: usize, estimated_fpp: f64) -> Vec<String> {
    let mut warnings = Vec::new();
    if wrong > 0 {
        warnings.push(format!(
            "{wrong} keys where its sets go are not sets: another program wrote there (`seen \
             verify` names them); the lines they held read as new"
        ));
    }
    let past: u64 = gens.iter().map(|g| g.past_limit).sum();
    if past > 0 {
        warnings.push(format!(
            "{} sets are past set-max-intset-entries ({}): kept as hash tables, they take about \
             15 times the memory",
            HumanCount(past),
            m.limit
        ));
    }
    for g in gens {
        if g.fingerprints < g.inserts {
            warnings.push(format!(
                "generation {} holds {} fingerprints, fewer than the {} lines recorded in it: \
                 sets were deleted, evicted or lost in a failover, and the lines they held \
                 read as new",
                g.index,
                HumanCount(g.fingerprints),
                HumanCount(g.inserts)
            ));
        }
    }
    if estimated_fpp > m.target_fpp {
        warnings.push(format!(
            "estimated false-positive rate {estimated_fpp:.2e} is above its target {:e}",
            m.target_fpp
        ));
    }
    warnings
}

/// The window's figures at time `now`: a slice per live one.
fn window(m: &GensMeta, gens: &[GenStats], now: u64, clock: u64) -> Option<WindowStats> {
    m.window.map(|w| {
        let secs = w.secs as f64 / f64::from(w.slices);
        let live = gens
            .iter()
            .filter_map(|g| g.slice)
            .collect::<std::collections::BTreeSet<u64>>()
            .into_iter()
            .map(|slice| {
                let of: Vec<usize> = gens
                    .iter()
                    .enumerate()
                    .filter(|(_, g)| g.slice == Some(slice))
                    .map(|(i, _)| i)
                    .collect();
                let start = w.slice_start(slice);
                let end = w.slice_start(slice + 1);
                SliceStats {
                    start,
                    end,
                    forgotten_at: m.slice_end(slice).unwrap_or(end),
                    inserts: of.iter().map(|&i| gens[i].inserts).sum(),
                    bits_set: 0,
                    fill_ratio: 0.0,
                    estimated_items: of.iter().map(|&i| gens[i].fingerprints as f64).sum(),
                    estimated_fpp: of.iter().map(|&i| gens[i].estimated_fpp).sum(),
                    layers: of,
                }
            })
            .collect();
        WindowStats {
            seconds: w.secs,
            slices: w.slices,
            slice_seconds: secs,
            now,
            clock,
            live,
        }
    })
}

/// The text report of a filter in generations.
pub(super) fn table(s: &Stats, gens: &[GenStats], out: &mut impl Write) -> std::io::Result<()> {
    let row = crate::report::field;
    row(out, "file", s.file.clone())?;
    row(
        out,
        "format",
        format!(
            "Redis fingerprint sets in generations, {} seed {:#x}: {} live",
            s.hash,
            s.seed,
            gens.len()
        ),
    )?;
    row(out, "keys", s.keys_shown())?;
    row(
        out,
        "growth",
        match &s.growth {
            Some(g) if g.can_grow => format!(
                "x{} when full (rate x{} each); the next generation in {} lines",
                g.factor,
                g.ratio,
                HumanCount(g.next_layer_in)
            ),
            Some(g) => format!("x{} when full; no more generations", g.factor),
            None => "fixed (no generation past a slice's share of the lines)".to_string(),
        },
    )?;
    if let Some(w) = &s.window {
        row(
            out,
            "window",
            format!(
                "{} in {} slices of {}: a line is seen for {} after it was recorded, and new \
                 again a slice later at most; now {} (clock {})",
                crate::clock::span(w.seconds),
                w.slices,
                crate::clock::span(w.slice_seconds.round() as u64),
                crate::clock::span(w.seconds),
                crate::clock::format(w.now),
                crate::clock::format(w.clock)
            ),
        )?;
    }
    row(
        out,
        "size",
        format!("{} of fingerprints", HumanBytes(s.bytes)),
    )?;
    row(
        out,
        "capacity",
        format!(
            "{} lines{} at false-positive rate {:e}",
            HumanCount(s.capacity),
            if s.window.is_some() {
                " per window"
            } else {
                " (live generations)"
            },
            s.target_fpp
        ),
    )?;
    row(out, "inserts", HumanCount(s.inserts).to_string())?;
    row(
        out,
        "est. items",
        HumanCount(s.estimated_items.round() as u64).to_string(),
    )?;
    row(
        out,
        "est. fpp",
        format!(
            "{:.3e} now, {:.3e} with every live generation at capacity",
            s.estimated_fpp, s.fpp_at_capacity
        ),
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:>5} {:>12} {:>5} {:>14} {:>14} {:>14} {:>9} {:>10}",
        "gen", "slice", "rank", "capacity", "inserts", "fingerprints", "sets", "est. fpp"
    )?;
    for g in gens {
        writeln!(
            out,
            "{:>5} {:>12} {:>5} {:>14} {:>14} {:>14} {:>9} {:>10.3e}",
            g.index,
            g.slice.map_or("-".to_string(), |s| s.to_string()),
            g.rank,
            HumanCount(g.capacity).to_string(),
            HumanCount(g.inserts).to_string(),
            HumanCount(g.fingerprints).to_string(),
            HumanCount(g.sets).to_string(),
            g.estimated_fpp
        )?;
    }
    Ok(())
}
