//! The statistics of a Redis filter in the fingerprint-set layout: made
//! from a count of its sets ([`Census`]) rather than from bits, into the
//! same [`Stats`] object (its `sets` member says how full the sets are),
//! and the text section that replaces the layer table.

use super::compute::{ForgetStats, SetsStats, Stats};
use crate::store::Census;
use indicatif::{HumanBytes, HumanCount};
use std::io::Write;

/// The statistics of the filter `c` counts, named `name`.
pub(super) fn compute(c: &Census, name: String) -> Stats {
    let m = &c.meta;
    let fp_bytes = u64::from(m.fp_bits / 8);
    let n = c.fingerprints as f64;
    let estimated_fpp = m.fpp_with(n);
    // Lines until the rate passes its target, or until the sets, filled at
    // random, begin to pass their compact limit (at about 3/4 of it on
    // average, the fullest of many sets reaches it).
    let by_rate = m.target_fpp * m.sets as f64 * 2f64.powi(m.fp_bits as i32) - n;
    let by_room = 0.75 * (m.sets * m.limit) as f64 - n;
    let headroom = by_rate.min(by_room).max(0.0);
    let mut warnings = Vec::new();
    if c.past > 0 {
        warnings.push(format!(
            "{} of {} sets are past set-max-intset-entries ({}): kept as hash tables, they take \
             about 15 times the memory; make a larger filter (`seen build -n …`) and move to it, \
             or raise set-max-intset-entries",
            HumanCount(c.past),
            HumanCount(m.sets),
            m.limit
        ));
    } else if c.near > 0 {
        warnings.push(format!(
            "{} sets are within 10 % of set-max-intset-entries ({}): past it, a set takes about \
             15 times the memory; make a larger filter (`seen build -n …`) before long",
            HumanCount(c.near),
            m.limit
        ));
    }
    if c.wrong > 0 {
        warnings.push(format!(
            "{} keys of the filter are not sets: another program wrote there (`seen verify` \
             names them); the lines they held read as new",
            HumanCount(c.wrong)
        ));
    }
    if let Some((lines, held)) = c.lost_lines() {
        warnings.push(format!(
            "at least {} recorded lines lost their fingerprints (the sets hold {}, fewer than \
             the {} lines recorded: sets deleted, evicted under maxmemory, or lost in a failover \
             or a restart), and read as new; `seen verify` checks every set",
            HumanCount(lines - held),
            HumanCount(held),
            HumanCount(lines)
        ));
    }
    if estimated_fpp > m.target_fpp {
        warnings.push(format!(
            "estimated false-positive rate {estimated_fpp:.2e} is above its target {:e}: it \
             holds more lines than it was sized for; make a larger one and move to it",
            m.target_fpp
        ));
    }
    let bits = c.fingerprints * u64::from(m.fp_bits);
    let cap = m.capacity.max(1);
    Stats {
        file: name,
        format_version: "redis-sets 1".to_string(),
        hash: "xxh3-128",
        seed: m.seed,
        keys: m.keys.to_string(),
        key_flags: m.keys.flags(),
        file_bytes: c.fingerprints * fp_bytes,
        bits,
        bytes: bits / 8,
        capacity: m.capacity,
        target_fpp: m.target_fpp,
        growth: None,
        window: None,
        inserts: c.inserts,
        capacity_used: c.inserts as f64 / cap as f64,
        bits_set: 0,
        fill_ratio: n / (m.sets as f64 * m.limit.max(1) as f64),
        estimated_items: n,
        estimated_uncounted: 0,
        estimated_fpp,
        fpp_at_capacity: m.fpp_with(m.capacity as f64),
        headroom: Some(headroom),
        probe: None,
        clean: c.wrong == 0,
        created: m.created,
        updated: c.updated,
        layers: Vec::new(),
        forget: c.listed.map(|l| ForgetStats {
            entries: l,
            bytes: l * crate::filter::forget::ENTRY_BYTES as u64,
            share_of_inserts: l as f64 / c.inserts.max(1) as f64,
        }),
        sets: Some(SetsStats {
            sets: m.sets,
            first_set: c.first_set.clone(),
            fingerprint_bits: m.fp_bits,
            intset_limit: m.limit,
            fingerprints: c.fingerprints,
            planned_per_set: m.planned_load(),
            mean_per_set: n / m.sets as f64,
            max_per_set: c.max_load,
            near_limit: c.near,
            past_limit: c.past,
            empty: c.empty,
            not_sets: c.wrong,
            headroom,
        }),
        generations: None,
        warnings,
    }
}

/// The text report of a fingerprint-set filter.
pub(super) fn table(s: &Stats, sets: &SetsStats, out: &mut impl Write) -> std::io::Result<()> {
    let row = crate::report::field;
    let count = |x: f64| HumanCount(x.round() as u64).to_string();
    row(out, "file", s.file.clone())?;
    row(
        out,
        "format",
        format!(
            "Redis fingerprint sets, {} seed {:#x}: {}-bit fingerprints in {} sets ({} …)",
            s.hash,
            s.seed,
            sets.fingerprint_bits,
            HumanCount(sets.sets),
            sets.first_set
        ),
    )?;
    row(out, "keys", s.keys_shown())?;
    row(
        out,
        "growth",
        "fixed (sized by -n, never grows)".to_string(),
    )?;
    row(
        out,
        "size",
        format!(
            "{} of fingerprints (about {:.1} bytes per line in Redis with the sets' overhead)",
            HumanBytes(s.file_bytes),
            f64::from(sets.fingerprint_bits / 8) * 1.2
        ),
    )?;
    row(
        out,
        "capacity",
        format!(
            "{} lines at false-positive rate {:e}",
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
        "fill",
        format!(
            "{:.1}% of the sets' compact room ({} per set at most, set-max-intset-entries)",
            100.0 * s.fill_ratio,
            sets.intset_limit
        ),
    )?;
    row(out, "est. items", count(s.estimated_items))?;
    if let Some(f) = &s.forget {
        row(
            out,
            "forgotten",
            format!(
                "{} {} answered absent ({:.2}% of inserts), {} of hashes in the sets' forget \
                 lists",
                HumanCount(f.entries),
                if f.entries == 1 { "key" } else { "keys" },
                100.0 * f.share_of_inserts,
                HumanBytes(f.bytes)
            ),
        )?;
    }
    row(
        out,
        "est. fpp",
        format!(
            "{:.3e} now, {:.3e} at capacity",
            s.estimated_fpp, s.fpp_at_capacity
        ),
    )?;
    row(
        out,
        "headroom",
        format!(
            "{} more lines before the target rate or the sets' compact limit",
            count(sets.headroom)
        ),
    )?;
    row(
        out,
        "per set",
        format!(
            "{:.1} on average ({:.1} at capacity), {} in the fullest; {} near the limit, {} past \
             it, {} empty",
            sets.mean_per_set,
            sets.planned_per_set,
            HumanCount(sets.max_per_set),
            HumanCount(sets.near_limit),
            HumanCount(sets.past_limit),
            HumanCount(sets.empty)
        ),
    )?;
    if sets.not_sets > 0 {
        row(
            out,
            "damage",
            format!("{} keys are not sets", HumanCount(sets.not_sets)),
        )?;
    }
    Ok(())
}
