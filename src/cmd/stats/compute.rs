//! The statistics of a filter, computed from its header and its layers'
//! bits: per layer, per live slice of a window, and in total, with the
//! warnings they call for.

use super::probe::ProbeStats;
use crate::file::ReadFilter;
use crate::filter::sizing::{self, classic_bits, classic_k, keys_at_rate};
use crate::format::{Header, LayerEntry, WindowState};
use serde::Serialize;

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

/// One live generation of a Redis filter in generations (JSON
/// `generations`).
#[derive(Debug, Serialize)]
pub struct GenStats {
    /// Its number (0 for the first).
    pub index: u64,
    /// The slice it holds lines of; `null` without a window.
    pub slice: Option<u64>,
    /// Its rank among its slice's generations (0: the first).
    pub rank: u32,
    /// Lines it was sized for.
    pub capacity: u64,
    /// False-positive rate of a lookup in it at capacity.
    pub target_fpp: f64,
    /// Bits of a fingerprint.
    pub fingerprint_bits: u32,
    /// Redis sets it has.
    pub sets: u64,
    /// Lines recorded in it (the counters).
    pub inserts: u64,
    /// Fingerprints its sets hold (`SCARD`).
    pub fingerprints: u64,
    /// The fullest set's.
    pub max_per_set: u64,
    /// Sets past `set-max-intset-entries`.
    pub past_limit: u64,
    /// Its false-positive rate now.
    pub estimated_fpp: f64,
}

/// How full the sets of a fingerprint-set filter are (JSON `sets`).
#[derive(Debug, Serialize)]
pub struct SetsStats {
    /// Redis sets the filter has.
    pub sets: u64,
    /// The name of the first (the rest differ in the number).
    pub first_set: String,
    /// Bits of a fingerprint (32, or 64 for rates 32 bits cannot give).
    pub fingerprint_bits: u32,
    /// The server's `set-max-intset-entries` when the filter was made: a
    /// set holding more is kept as a hash table (about 15 times the memory).
    pub intset_limit: u64,
    /// Fingerprints over all sets (distinct lines held, bar collisions).
    pub fingerprints: u64,
    /// Fingerprints a set holds at capacity, on average.
    pub planned_per_set: f64,
    /// Fingerprints a set holds now, on average.
    pub mean_per_set: f64,
    /// The fullest set's.
    pub max_per_set: u64,
    /// Sets at 90 % of the limit or more, not past it.
    pub near_limit: u64,
    /// Sets past the limit.
    pub past_limit: u64,
    /// Sets with nothing in them.
    pub empty: u64,
    /// Keys that are not sets (damage).
    pub not_sets: u64,
    /// Lines the filter takes before its rate passes its target or its
    /// sets begin to pass their compact limit, whichever comes first.
    pub headroom: f64,
}

/// A filter's forget list (`seen forget`), in `stats`.
#[derive(Debug, Serialize)]
pub struct ForgetStats {
    /// Keys on the list: present in the layers, answered absent.
    pub entries: u64,
    /// Bytes the list's region takes in the file (16 a key, whole pages).
    pub bytes: u64,
    /// `entries / inserts`.
    pub share_of_inserts: f64,
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
    /// One entry per layer, oldest first (none for a Redis filter of
    /// fingerprint sets).
    pub layers: Vec<LayerStats>,
    /// The forget list; `null` for a filter that never forgot a key.
    pub forget: Option<ForgetStats>,
    /// How full the sets of a Redis filter of fingerprint sets are; absent
    /// for a filter of Bloom layers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sets: Option<SetsStats>,
    /// The live generations of a Redis filter of fingerprint sets that
    /// grows or has a window, oldest first; absent for any other filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generations: Option<Vec<GenStats>>,
    /// Human-readable warnings (also printed to stderr).
    pub warnings: Vec<String>,
}

impl Stats {
    /// The `keys` row of the text report: in words, with the flags that
    /// give them unless the filter hashes whole records.
    pub(super) fn keys_shown(&self) -> String {
        if self.key_flags == "--raw-keys" {
            self.keys.clone()
        } else {
            format!("{} ({})", self.keys, self.key_flags)
        }
    }
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
    let layers: Vec<LayerStats> = h
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| layer_stats(h, l, bits[i], live >> i & 1 == 1))
        .collect();
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
    let newest = newest_layer(&layers, window.as_ref());
    let can_grow = h.growth.is_some() && h.layers.len() < h.layer_room();
    let growth = growth_stats(h, &layers, newest, can_grow);
    let estimated_fpp = any(|l| l.estimated_fpp);
    let headroom = (!can_grow).then(|| headroom_for(h, &layers, newest));
    let warnings = warnings_for(h, estimated_fpp);
    let estimated_uncounted = uncounted(&counted, estimated_fpp > h.target_fpp);
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
        capacity_used: inserts as f64 / capacity.max(1) as f64,
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
        forget: h.forget.map(|f| ForgetStats {
            entries: f.count,
            // A list that shrank gave the rest of its region back.
            bytes: f.page_bytes(),
            share_of_inserts: f.count as f64 / inserts.max(1) as f64,
        }),
        sets: None,
        generations: None,
        warnings,
    }
}

/// The statistics of layer `l` of the filter `h` describes, whose bits are
/// `bits`; `live` when lookups test it now. Counts the bits once (and
/// advances the progress bar by them).
fn layer_stats(h: &Header, l: &LayerEntry, bits: &[u8], live: bool) -> LayerStats {
    let kind = l.filter_kind();
    let kind = kind.as_kind();
    let occ = kind.occupancy_with(bits, &mut |b| crate::progress::advance(b, 0));
    let cap = l.capacity.max(1);
    LayerStats {
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
        fpp_at_capacity: kind.expected_fpp(l.capacity),
        headroom: (keys_at_rate(&l.layout, l.target_fpp) as f64 - occ.estimated_items).max(0.0),
        bits_per_key: l.layout.bits() as f64 / cap as f64,
        classic_bits_per_key: classic_bits(cap, l.target_fpp) as f64 / cap as f64,
        classic_k: classic_k(classic_bits(cap, l.target_fpp), cap),
        slice_start: h.window.map(|w| w.window.slice_start(l.slice)),
        live,
    }
}

/// The layer that takes new lines: the newest, or the current slice's
/// (none yet when nothing was recorded in it).
fn newest_layer(layers: &[LayerStats], window: Option<&WindowStats>) -> Option<usize> {
    match window {
        None => Some(layers.len() - 1),
        // As the writer picks it: the slice's layer of most capacity.
        Some(w) => w
            .live
            .last()
            .and_then(|s| s.layers.iter().copied().max_by_key(|&i| layers[i].capacity)),
    }
}

/// How the filter `h` describes grows (`None`: it does not); `newest` takes
/// new lines, and another layer can be added when `can_grow`.
fn growth_stats(
    h: &Header,
    layers: &[LayerStats],
    newest: Option<usize>,
    can_grow: bool,
) -> Option<GrowthStats> {
    let slice_capacity = h.window.map(|w| w.window.slice_capacity(h.capacity));
    h.growth.map(|g| GrowthStats {
        factor: g.factor,
        ratio: g.ratio,
        can_grow,
        next_layer_in: newest.map_or(slice_capacity.unwrap_or(0), |n| {
            layers[n].capacity.saturating_sub(layers[n].inserts)
        }),
    })
}

/// The keys a filter that cannot grow still takes: into its `newest` layer,
/// until the compound rate reaches the target (the other live layers are
/// complete).
fn headroom_for(h: &Header, layers: &[LayerStats], newest: Option<usize>) -> f64 {
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
}

/// The warnings about the filter `h` describes, whose false-positive rate
/// is estimated at `estimated_fpp`: a rate above the target, a dirty flag.
fn warnings_for(h: &Header, estimated_fpp: f64) -> Vec<String> {
    let mut warnings = Vec::new();
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
    if h.is_dirty() {
        warnings.push("not closed cleanly: the insert counter may be low".to_string());
    }
    warnings
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
fn window_stats(h: &Header, layers: &[LayerStats], now: u64, w: WindowState) -> WindowStats {
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
