//! `seen stats`: a filter's parameters, fill and estimated false-positive
//! rate, and with `--probe` the rate measured on lines known to be absent.

use crate::cli::{RecordArgs, StatsArgs};
use crate::file::ReadFilter;
use crate::filter::sizing::{self, classic_bits, classic_k, keys_at_rate, layer_fpp};
use crate::filter::{self, BLOCK_BITS};
use crate::format::{Header, MAX_LAYERS};
use crate::input::{Source, sources};
use crate::job::plan::reading;
use crate::job::{Job, Output};
use crate::pipeline::{Chunk, Mode, Taken};
use crate::progress::{Progress, Show};
use crate::store::{Opened, Where};
use anyhow::{Context, Result, bail};
use indicatif::{HumanBytes, HumanCount};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Statistics of one layer (the JSON `layers[]` objects; see docs/STATS.md).
#[derive(Debug, Serialize)]
pub struct LayerStats {
    /// Always "blocked-512".
    pub layout: &'static str,
    /// Bits set per block per key.
    pub k: u32,
    /// Where a key's bits go in a block: "scattered" (bit positions v1) or
    /// "sectored" (v2, format 1.4).
    pub positions: &'static str,
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
    /// Keys this layer can take (beyond `estimated_items`) before its own rate
    /// passes its target.
    pub headroom: f64,
    /// Bits per key at capacity.
    pub bits_per_key: f64,
    /// Bits per key a classic (unblocked) filter needs for the same capacity and target.
    pub classic_bits_per_key: f64,
    /// Hash count of that classic filter.
    pub classic_k: u32,
    /// With a time window: when the slice this layer holds starts (Unix
    /// seconds); `null` without a window.
    pub slice_start: Option<u64>,
    /// Whether lookups test this layer now (false: its slice is past the
    /// window, and the layer waits to be reused).
    pub live: bool,
}

/// One live slice of a time window (JSON `window.slices[]`), oldest first.
#[derive(Debug, Serialize)]
pub struct SliceStats {
    /// When it starts (Unix seconds; the first whole second inside it).
    pub start: u64,
    /// When the next one starts.
    pub end: u64,
    /// From when its lines are new again (Unix seconds): `end + window`.
    pub forgotten_at: u64,
    /// Its layers (indexes into `layers`); empty when nothing was recorded
    /// in it.
    pub layers: Vec<usize>,
    /// Lines recorded as new in it.
    pub inserts: u64,
    /// Bits set over its layers.
    pub bits_set: u64,
    /// `bits_set` over its layers' bits (0 without a layer).
    pub fill_ratio: f64,
    /// Distinct lines estimated from its bits.
    pub estimated_items: f64,
    /// Its false-positive rate now (compound over its layers).
    pub estimated_fpp: f64,
}

/// The time window of a filter that forgets (JSON `window`).
#[derive(Debug, Serialize)]
pub struct WindowStats {
    /// The window W, in seconds.
    pub seconds: u64,
    /// Slices per window (S).
    pub slices: u32,
    /// W / S.
    pub slice_seconds: f64,
    /// The time the figures are for (Unix seconds): `--now` or the system
    /// clock, or `clock` when that is later.
    pub now: u64,
    /// The latest time a writer recorded lines at.
    pub clock: u64,
    /// The S + 1 slices lookups test now, oldest first; the last one takes
    /// new lines.
    pub live: Vec<SliceStats>,
}

/// How a filter grows (JSON `growth`).
#[derive(Debug, Serialize)]
pub struct GrowthStats {
    /// Capacity multiplier from one layer to the next.
    pub factor: u32,
    /// False-positive tightening ratio from one layer to the next.
    pub ratio: f64,
    /// Whether another layer can still be added (a file has room for 62).
    pub can_grow: bool,
    /// Keys the newest layer takes before the next layer is added.
    pub next_layer_in: u64,
}

/// The false-positive rate measured with `--probe` (JSON `probe`).
#[derive(Debug, Serialize)]
pub struct ProbeStats {
    /// The probe file as given (`-`: standard input).
    pub file: String,
    /// Lines looked up (each line, repeats included, as `query -c` counts).
    pub lookups: u64,
    /// Lines the filter reported present: false positives, if none of them
    /// was ever inserted.
    pub present: u64,
    /// `present / lookups`.
    pub measured_fpp: f64,
    /// Lower end of the 95 % Wilson score interval of the rate.
    pub ci_low: f64,
    /// Upper end of that interval.
    pub ci_high: f64,
}

impl ProbeStats {
    /// The probe's name in a message.
    fn shown(&self) -> &str {
        shown(&self.file)
    }

    /// The measured rate of `present` of `lookups` probes, with its interval.
    fn new(file: String, lookups: u64, present: u64) -> ProbeStats {
        let (ci_low, ci_high) = wilson95(present, lookups);
        ProbeStats {
            file,
            lookups,
            present,
            measured_fpp: present as f64 / lookups as f64,
            ci_low,
            ci_high,
        }
    }
}

/// A probe file's name in a message (`-`: standard input).
fn shown(file: &str) -> &str {
    if file == "-" { "standard input" } else { file }
}

/// The quantile of the standard normal distribution for a two-sided 95 %
/// interval (`Φ⁻¹(0.975)`).
const Z95: f64 = 1.959_963_984_540_054;

/// The 95 % Wilson score interval of a proportion, `x` successes in `n`
/// trials (`n > 0`): `(x + z²/2 ± z·√(x(n−x)/n + z²/4)) / (n + z²)`. Unlike
/// the normal approximation `p ± z·√(p(1−p)/n)`, it stays inside [0, 1] and
/// is not empty at `x = 0` (the common case of a good filter and a small
/// probe): 0 of 20,000 gives [0, 1.9e-4], not [0, 0].
fn wilson95(x: u64, n: u64) -> (f64, f64) {
    debug_assert!(n > 0 && x <= n);
    let (x, n) = (x as f64, n as f64);
    let z2 = Z95 * Z95;
    let centre = (x + z2 / 2.0) / (n + z2);
    let half = Z95 / (n + z2) * (x * (n - x) / n + z2 / 4.0).sqrt();
    // The ends are exactly 0 at x = 0 and 1 at x = n; rounding must not
    // move them past.
    let low = if x == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let high = if x == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (low, high)
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
    /// How records become keys, in words (`whole record`, `field 2 (','-separated), trimmed`).
    pub keys: String,
    /// The same as the flags that give it (`--raw-keys` for whole records).
    pub key_flags: String,
    /// File size in bytes.
    pub file_bytes: u64,
    /// Sum over layers.
    pub bits: u64,
    /// Sum over layers.
    pub bytes: u64,
    /// Sum of the layers' capacities.
    pub capacity: u64,
    /// False-positive rate the filter must stay under (compound over layers).
    pub target_fpp: f64,
    /// `null` for a fixed filter.
    pub growth: Option<GrowthStats>,
    /// `null` for a filter that never forgets. With a window, the totals
    /// below (capacity: lines per window) count only the live layers.
    pub window: Option<WindowStats>,
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
    /// Distinct keys the bits say were added beyond `inserts`: new keys taken
    /// for present ones (false positives) as they arrived, which the counters
    /// leave out. 0 unless the estimated rate is above the target and they are
    /// at least 1 % of `inserts` (below that the estimate is noise).
    pub estimated_uncounted: u64,
    /// Probability that an absent key is reported present by any layer.
    pub estimated_fpp: f64,
    /// Compound false-positive rate with every layer at its capacity.
    pub fpp_at_capacity: f64,
    /// Keys the filter takes before its false-positive rate passes the target;
    /// `null` (unbounded) when it can still grow.
    pub headroom: Option<f64>,
    /// The rate measured with `--probe`; `null` without it.
    pub probe: Option<ProbeStats>,
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

/// Distinct keys the bits say were added beyond the counters (see
/// [`Stats::estimated_uncounted`]): a counter counts only keys judged new, so
/// once the rate is high, many new keys are false positives and go uncounted
/// (their bits were all set already: the bits record them, the counter does
/// not). Only when `over` (the rate is above the target; under it, at most
/// that share of new keys can have been missed) and the difference is at least
/// 1 % of the inserts; else 0.
fn uncounted(layers: &[&LayerStats], over: bool) -> u64 {
    let inserts: u64 = layers
        .iter()
        .map(|l| l.inserts)
        .fold(0, u64::saturating_add);
    let more: f64 = layers
        .iter()
        .map(|l| (l.estimated_items - l.inserts as f64).max(0.0))
        .sum();
    if over && more >= 1.0 && more >= 0.01 * inserts as f64 {
        more.round() as u64
    } else {
        0
    }
}

/// Computes the statistics of an open filter (reads every bit once).
pub fn compute(f: &ReadFilter) -> Stats {
    let bits: Vec<&[u8]> = (0..f.header().layers.len())
        .map(|i| f.layer_bits(i))
        .collect();
    compute_from(f.header(), &bits, f.path().display().to_string())
}

/// Computes the statistics of the filter `h` describes, whose layers hold
/// `bits`, named `name`.
pub fn compute_from(h: &Header, bits: &[&[u8]], name: String) -> Stats {
    let now = crate::clock::now();
    let live = h.live(now);
    let mut layers = Vec::new();
    for (i, l) in h.layers.iter().enumerate() {
        let occ =
            filter::occupancy_with(bits[i], &l.layout, &mut |b| crate::progress::advance(b, 0));
        let cap = l.capacity.max(1);
        layers.push(LayerStats {
            layout: "blocked-512",
            k: l.layout.k,
            positions: l.layout.scheme.name(),
            blocks_per_key: l.layout.blocks_per_key,
            bits: l.layout.bits(),
            bytes: l.layout.bytes(),
            capacity: l.capacity,
            target_fpp: l.target_fpp,
            inserts: l.inserts,
            capacity_used: l.inserts as f64 / cap as f64,
            bits_set: occ.bits_set,
            fill_ratio: occ.bits_set as f64 / l.layout.bits() as f64,
            estimated_items: occ.estimated_items,
            estimated_fpp: occ.current_fpp,
            fpp_at_capacity: layer_fpp(&l.layout, l.capacity),
            headroom: (keys_at_rate(&l.layout, l.target_fpp) as f64 - occ.estimated_items).max(0.0),
            bits_per_key: l.layout.bits() as f64 / cap as f64,
            classic_bits_per_key: classic_bits(cap, l.target_fpp) as f64 / cap as f64,
            classic_k: classic_k(classic_bits(cap, l.target_fpp), cap),
            slice_start: h.window.map(|w| w.window.slice_start(l.slice)),
            live: live >> i & 1 == 1,
        });
    }
    let window = h.window.map(|w| window_stats(h, &layers, now, w));
    // Totals over the layers lookups test (all of them without a window).
    let counted: Vec<&LayerStats> = layers.iter().filter(|l| l.live).collect();
    let bits: u64 = counted.iter().map(|l| l.bits).sum();
    let bits_set: u64 = counted.iter().map(|l| l.bits_set).sum();
    let capacity = match h.window {
        Some(_) => h.capacity,
        None => counted
            .iter()
            .map(|l| l.capacity)
            .fold(0u64, u64::saturating_add),
    };
    let inserts = counted
        .iter()
        .map(|l| l.inserts)
        .fold(0u64, u64::saturating_add);
    let any = |f: fn(&LayerStats) -> f64| sizing::any_of(counted.iter().map(|l| f(l)));
    // The layer that takes new lines: the newest, or the current slice's
    // (none yet when nothing was recorded in it).
    let newest = match &window {
        None => Some(layers.len() - 1),
        // As the writer picks it: the slice's layer of most capacity.
        Some(w) => w
            .live
            .last()
            .and_then(|s| s.layers.iter().copied().max_by_key(|&i| layers[i].capacity)),
    };
    let can_grow = h.growth.is_some() && h.layers.len() < MAX_LAYERS;
    let slice_capacity = h.window.map(|w| w.window.slice_capacity(h.capacity));
    let growth = h.growth.map(|g| GrowthStats {
        factor: g.factor,
        ratio: g.ratio,
        can_grow,
        next_layer_in: newest.map_or(slice_capacity.unwrap_or(0), |n| {
            layers[n].capacity.saturating_sub(layers[n].inserts)
        }),
    });
    let estimated_fpp = any(|l| l.estimated_fpp);
    // A filter that cannot grow takes keys into its newest layer until the
    // compound rate reaches the target (the other live layers are complete).
    let headroom = (!can_grow).then(|| {
        let older = (0..layers.len())
            .filter(|&i| layers[i].live && Some(i) != newest)
            .map(|i| layers[i].estimated_fpp);
        let budget = sizing::newest_budget(older, h.target_fpp);
        let (layout, items) = match newest {
            Some(n) => (h.layers[n].layout, layers[n].estimated_items),
            // A slice not started yet gets a first layer like the others'.
            None => (h.layers[layers.len() - 1].layout, 0.0),
        };
        (keys_at_rate(&layout, budget) as f64 - items).max(0.0)
    });
    let mut warnings = Vec::new();
    let used = inserts as f64 / capacity.max(1) as f64;
    // The same rule as `build` and `dedup -f` while they insert (there from
    // the insert counts, here from the bits).
    let rebuild = if h.growth.is_some() {
        "rebuild it larger"
    } else {
        "rebuild it larger (or growing)"
    };
    let target = h.target_fpp;
    match sizing::alarm(estimated_fpp, target) {
        0 => {}
        1 => warnings.push(format!(
            "estimated false-positive rate {estimated_fpp:.2e} is above its target {target:e}: \
             {rebuild}"
        )),
        _ => warnings.push(format!(
            "estimated false-positive rate {estimated_fpp:.2e} is more than {} times its \
             target {target:e}: results are no longer reliable; {rebuild}",
            sizing::UNRELIABLE
        )),
    }
    let estimated_uncounted = uncounted(&counted, estimated_fpp > target);
    if h.is_dirty() {
        warnings.push("not closed cleanly: the insert counter may be low".to_string());
    }
    Stats {
        file: name,
        format_version: h.format_version(),
        hash: "xxh3-128",
        seed: h.seed,
        keys: h.keys.to_string(),
        key_flags: h.keys.flags(),
        file_bytes: h.file_len(),
        bits,
        bytes: bits / 8,
        capacity,
        target_fpp: h.target_fpp,
        growth,
        window,
        inserts,
        capacity_used: used,
        bits_set,
        // A window whose slices all expired has no live bits.
        fill_ratio: fill(bits_set, bits),
        estimated_items: counted.iter().map(|l| l.estimated_items).sum(),
        estimated_uncounted,
        estimated_fpp,
        fpp_at_capacity: any(|l| l.fpp_at_capacity),
        headroom,
        probe: None,
        clean: !h.is_dirty(),
        created: h.created,
        updated: h.updated,
        layers,
        warnings,
    }
}

/// `set / bits`, and 0 for no bits (no live layer).
fn fill(set: u64, bits: u64) -> f64 {
    if bits == 0 {
        0.0
    } else {
        set as f64 / bits as f64
    }
}

/// The live slices of a filter with window `w`, at time `now`.
fn window_stats(
    h: &Header,
    layers: &[LayerStats],
    now: u64,
    w: crate::format::WindowState,
) -> WindowStats {
    let at = w.time(now);
    let win = w.window;
    let cur = win.slice_at(at);
    let live = (win.oldest_live(at)..=cur)
        .map(|j| {
            let mine: Vec<usize> = (0..h.layers.len())
                .filter(|&i| h.layers[i].slice == j && layers[i].live)
                .collect();
            let bits: u64 = mine.iter().map(|&i| layers[i].bits).sum();
            let bits_set: u64 = mine.iter().map(|&i| layers[i].bits_set).sum();
            let end = win.slice_start(j.saturating_add(1));
            SliceStats {
                start: win.slice_start(j),
                end,
                forgotten_at: end.saturating_add(win.secs),
                inserts: mine
                    .iter()
                    .map(|&i| layers[i].inserts)
                    .fold(0, u64::saturating_add),
                bits_set,
                fill_ratio: fill(bits_set, bits),
                estimated_items: mine.iter().fold(0.0, |a, &i| a + layers[i].estimated_items),
                estimated_fpp: sizing::any_of(mine.iter().map(|&i| layers[i].estimated_fpp)),
                layers: mine,
            }
        })
        .collect();
    WindowStats {
        seconds: win.secs,
        slices: win.slices,
        slice_seconds: win.secs as f64 / f64::from(win.slices),
        now: at,
        clock: w.clock,
        live,
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
    let keys = if s.key_flags == "--raw-keys" {
        s.keys.clone()
    } else {
        format!("{} ({})", s.keys, s.key_flags)
    };
    row(out, "keys", keys)?;
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

/// Reads the filter `a` names whole and computes its statistics; returns
/// them with the store, open, for `--probe`'s lookups (a remote filter's
/// bits are fetched once, not twice).
///
/// # Errors
/// An unusable filter, or a server that cannot be reached.
fn open(a: &StatsArgs) -> Result<(Stats, (Where, Opened))> {
    let link = a.lock.link();
    let mut f = a.filter.open_read(link)?;
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
        s.probe = Some(measure(sources, file, store, a.progress.into())?);
        probe_warning(&mut s);
    }
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
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Looks up the lines of the probe `sources` (named `file`) in the filter
/// `store` (opened from its `Where`) as `seen query --file FILE FILTER` does:
/// the same records (newline-terminated, default threads and mapping), the
/// filter's recorded key options, the same pipeline. Returns the measured
/// rate.
///
/// # Errors
/// An unreadable probe, a store error, or a probe without a line.
fn measure(
    sources: Vec<Source>,
    file: &Path,
    (at, store): (Where, Opened),
    progress: Show,
) -> Result<ProbeStats> {
    let mut opts = super::options(RecordArgs {
        null: false,
        threads: None,
        no_mmap: false,
    });
    // Only the verdicts are counted, as by `query -c`.
    opts.stream_long = true;
    let job = Job {
        sources,
        opts,
        // The filter's own key options, as a query without key flags.
        keys: None,
        lines_are_keys: false,
        store: at,
        mode: Mode::Lookup,
        progress,
        prints_lines: false,
        summary: None,
    };
    let mut count = Present::default();
    crate::job::execute_on(job, store, &mut count)?;
    let name = file.display().to_string();
    if count.lookups == 0 {
        bail!(
            "the probe ({}) has no lines: give --probe a file of lines known never to have \
             been inserted into the filter, one per line (the more lines, the narrower the \
             interval of the measured rate)",
            shown(&name)
        );
    }
    Ok(ProbeStats::new(name, count.lookups, count.present))
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

/// Counts the probe's lookups and the keys found present.
#[derive(Default)]
struct Present {
    lookups: u64,
    present: u64,
}

impl Output for Present {
    fn chunk(&mut self, c: &Chunk) -> Result<Taken> {
        let (n, hits) = c.count(true);
        self.lookups += n;
        self.present += hits;
        Ok(Taken::All)
    }
}

#[cfg(test)]
mod tests {
    use super::wilson95;

    /// `got` equals `want` to the 6 significant digits worked by hand.
    fn close(got: (f64, f64), want: (f64, f64)) {
        let near = |g: f64, w: f64| (g - w).abs() <= 5e-6 * w.abs();
        assert!(
            near(got.0, want.0) && near(got.1, want.1),
            "got {got:?}, want {want:?}"
        );
    }

    /// Values worked by hand from `(x + z²/2 ± z·√(x(n−x)/n + z²/4)) / (n + z²)`
    /// with z = 1.959964 (z² = 3.841459), e.g. 5 of 10: centre
    /// (5 + 1.920729) / 13.841459 = 0.5, half 1.959964 / 13.841459 ×
    /// √(2.5 + 0.960365) = 0.263407: the textbook [0.2366, 0.7634].
    #[test]
    fn stats_wilson_interval_matches_hand_computed_values() {
        close(wilson95(5, 10), (0.236_593, 0.763_407));
        // x = 0: [0, z²/(n + z²)] = [0, 3.841459 / 13.841459], exactly 0.
        close(wilson95(0, 10), (0.0, 0.277_533));
        assert_eq!(wilson95(0, 10).0, 0.0);
        // x = n: [n/(n + z²), 1] = [10 / 13.841459, 1], exactly 1.
        close(wilson95(10, 10), (0.722_467, 1.0));
        assert_eq!(wilson95(10, 10).1, 1.0);
        // 1 of 1: [1/(1 + z²), 1] = [0.206549, 1]; 0 of 1: [0, 0.793451].
        close(wilson95(1, 1), (0.206_549, 1.0));
        close(wilson95(0, 1), (0.0, 0.793_451));
        // A filter's case, 421 of 200,000 (p = 0.002105): centre
        // 422.920729 / 200003.841459 = 0.00211456, half 1.959964 /
        // 200003.841459 × √(420.113795 + 0.960365) = 0.00020109.
        close(wilson95(421, 200_000), (0.001_913_47, 0.002_315_65));
        // 0 of 20,000: [0, 3.841459 / 20003.841459] = [0, 1.92036e-4].
        close(wilson95(0, 20_000), (0.0, 1.920_36e-4));
    }

    /// The interval holds the point estimate and narrows as n grows.
    #[test]
    fn stats_wilson_interval_holds_the_estimate_and_narrows() {
        for (x, n) in [(1, 3), (7, 100), (50, 50), (123, 20_000), (0, 5)] {
            let (lo, hi) = wilson95(x, n);
            let p = x as f64 / n as f64;
            assert!(
                0.0 <= lo && lo <= p && p <= hi && hi <= 1.0,
                "{x}/{n}: {lo} {hi}"
            );
        }
        let width = |x, n| {
            let (lo, hi) = wilson95(x, n);
            hi - lo
        };
        assert!(width(1_000, 100_000) < width(100, 10_000));
        assert!(width(100, 10_000) < width(10, 1_000));
    }

    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(super::utc(1_798_675_199), "2026-12-30 23:59:59 UTC");
    }
}
