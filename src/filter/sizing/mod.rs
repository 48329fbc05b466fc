//! Sizing: from a capacity `n` and a target false-positive probability `p` to a
//! [`Layout`], using the exact false-positive formula of the layout actually used.
//!
//! For a blocked filter (Putze, Sanders, Singler 2007) with `B`-bit blocks, `k` bits
//! per block and `λ` keys per block on average,
//!
//! ```text
//! FPP = Σ_i Poisson(i; λ) · (1 − (1 − 1/B)^(k·i))^k
//! ```
//!
//! When a key is spread over `x > 1` distinct blocks of one 4 KiB page (64 blocks),
//! block loads inside a page move together, so the formula is taken per page: with
//! `λp` keys per page on average and `j` keys in a given page, each block of the
//! page is one of the `x` blocks of `Binomial(j, x/64)` of them, and
//!
//! ```text
//! FPP = Σ_j Poisson(j; λp) · [ Σ_i Binomial(i; j, x/64) · (1 − (1 − 1/B)^(k·i))^k ]^x
//! ```
//!
//! (the page-level variation costs up to a few percent of space at low `p`; the
//! independent-blocks formula would under-size the filter).
//!
//! With *sectored* bit positions (bit positions v2) a block is eight 64-bit
//! words and each key sets `k/8` bits in every word, so a block's bit is still
//! clear after `i` keys with probability `(1 − 1/64)^(k/8 · i)` instead of
//! `(1 − 1/512)^(k·i)`: the same formulas with that factor (the two differ by
//! under 1 % per key; a lookup tests `k` bits either way).
//! The classic (unblocked) textbook formulas are here too, for `plan --classic`,
//! `stats` and the docs.

pub mod policy;

use super::{BLOCK_BITS, BLOCKS_PER_PAGE, Layout, MAX_K, Scheme};

/// Smallest target false-positive probability accepted (defined with the
/// flag parsers, which check it first).
pub use crate::units::MIN_FPP;
/// Largest filter (bit array bytes) a plan may produce: 1 PiB.
pub const MAX_BYTES: u64 = 1 << 50;
/// A layout spreading keys over more blocks is only chosen when it saves more than
/// this fraction of space: each extra block is one more memory access per key.
pub const SPREAD_SAVING: f64 = 0.08;

/// A sized filter: the layout plus what it was sized for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// The geometry to allocate.
    pub layout: Layout,
    /// Number of distinct keys the filter is sized for.
    pub capacity: u64,
    /// The false-positive probability asked for at capacity.
    pub target_fpp: f64,
    /// The false-positive probability the formula gives at capacity (≤ target).
    pub expected_fpp: f64,
}

impl Plan {
    /// Bits of filter per key at capacity.
    pub fn bits_per_key(&self) -> f64 {
        self.layout.bits() as f64 / self.capacity.max(1) as f64
    }
}

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq)]
pub enum SizingError {
    /// `p` is not a probability in `[MIN_FPP, 1)`.
    BadFpp(f64),
    /// Layer `layer` (0-based) of a growing filter with target `target` would
    /// get a rate `layer_fpp` below [`MIN_FPP`].
    LayerTooTight {
        /// The filter's compound target.
        target: f64,
        /// The layer's index.
        layer: u32,
        /// The rate that layer would get.
        layer_fpp: f64,
        /// The smallest target that leaves room for eight layers.
        roomy: f64,
    },
    /// The filter would exceed [`MAX_BYTES`].
    TooLarge {
        /// Requested capacity.
        capacity: u64,
        /// Bytes it would need.
        bytes: f64,
    },
    /// A window shorter than a second per slice.
    WindowTooShort(Window),
}

impl std::fmt::Display for SizingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SizingError::BadFpp(p) => write!(
                f,
                "false-positive rate {p:e} is not between {MIN_FPP:e} and 1 (exclusive): \
                 pass e.g. -p 1e-6 or -p 0.1%"
            ),
            SizingError::LayerTooTight {
                target,
                layer,
                layer_fpp,
                roomy,
            } => write!(
                f,
                "a growing filter shares its target rate -p {target:e} among its layers, and \
                 layer {} would get {layer_fpp:.1e}, below the smallest rate a layer can have \
                 ({MIN_FPP:e}): raise -p to {} or more (room for 8 layers), or pass --fixed \
                 for one layer at -p",
                layer + 1,
                round_up_1(*roomy),
            ),
            SizingError::TooLarge { capacity, bytes } => write!(
                f,
                "a filter for {capacity} items would need {:.3e} bytes, more than the \
                 {} bytes limit: lower -n or raise -p",
                bytes, MAX_BYTES
            ),
            SizingError::WindowTooShort(w) => write!(
                f,
                "a window of {}s cannot have {} slices: a slice lasts at least a second; \
                 lengthen --window or lower --slices",
                w.secs, w.slices
            ),
        }
    }
}

impl std::error::Error for SizingError {}

/// `v` (positive) rounded up to one significant digit, for a message: the
/// smallest `De-N` at or above it (4.2e-15 gives "5e-15").
fn round_up_1(v: f64) -> String {
    let e = v.log10().floor();
    let mut m = (v / 10f64.powf(e) * (1.0 - 1e-12)).ceil();
    let mut e = e as i32;
    if m >= 10.0 {
        m = 1.0;
        e += 1;
    }
    format!("{m}e{e}")
}

/// Textbook optimal bit count of a classic Bloom filter: `m = ⌈-n·ln p / (ln 2)²⌉`.
pub fn classic_bits(n: u64, p: f64) -> u64 {
    (-(n as f64) * p.ln() / (std::f64::consts::LN_2 * std::f64::consts::LN_2)).ceil() as u64
}

/// Textbook optimal hash count: `k = round((m/n)·ln 2)`, at least 1.
pub fn classic_k(m: u64, n: u64) -> u32 {
    ((m as f64 / n.max(1) as f64) * std::f64::consts::LN_2)
        .round()
        .max(1.0) as u32
}

/// Textbook false-positive probability of a classic filter after `n` inserts:
/// `(1 − e^{−kn/m})^k`.
pub fn classic_fpp(m: u64, n: u64, k: u32) -> f64 {
    (1.0 - (-(k as f64) * n as f64 / m as f64).exp()).powi(k as i32)
}

/// Ln of i! for i in 0..len.
fn ln_factorials(len: usize) -> Vec<f64> {
    // A sizing asks for tables of about the same length dozens of times (each
    // evaluation of the formula): the logarithms are taken once per thread and
    // the table only extended, each entry the same sum as when built afresh.
    thread_local! {
        static TABLE: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    TABLE.with_borrow_mut(|v| {
        if v.is_empty() {
            v.push(0.0);
        }
        let mut acc = v[v.len() - 1];
        for i in v.len()..len {
            acc += (i as f64).ln();
            v.push(acc);
        }
        v[..len.max(1)].to_vec()
    })
}

/// Range of `i` holding all but a negligible tail of a distribution with this mean
/// and standard deviation.
fn span(mean: f64, sd: f64, width: f64, max: usize) -> (usize, usize) {
    let lo = (mean - width * sd - width).floor().max(0.0) as usize;
    let hi = ((mean + width * sd + width).ceil() as usize).min(max);
    (lo, hi)
}

/// Poisson(λ) probabilities over `lo..=hi`, via ln-factorials then a recurrence.
fn poisson(lambda: f64, lo: usize, hi: usize, lf: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(hi - lo + 1);
    let mut p = (-lambda + lo as f64 * lambda.ln() - lf[lo]).exp();
    for i in lo..=hi {
        out.push(p);
        p *= lambda / (i + 1) as f64;
    }
    out
}

/// Probability that one key's bits in a block leave a given bit of it clear:
/// `(1 − 1/B)^k` (scattered) or `(1 − 1/64)^(k/8)` (sectored).
pub fn keep_per_key(k: u32, scheme: Scheme) -> f64 {
    match scheme {
        Scheme::Scattered => (1.0 - 1.0 / BLOCK_BITS as f64).powi(k as i32),
        Scheme::Sectored => (1.0 - 1.0 / 64.0f64).powi((k / 8) as i32),
    }
}

/// Probability that `k` positions of a block holding `i` key-blocks are all
/// set: `(1 − keep^i)^k`, for i in 0..len.
fn q_table(k: u32, scheme: Scheme, len: usize) -> Vec<f64> {
    let keep_k = keep_per_key(k, scheme);
    let mut unset = 1.0f64;
    (0..len)
        .map(|_| {
            let q = (1.0 - unset).powi(k as i32);
            unset *= keep_k;
            q
        })
        .collect()
}

/// Exact false-positive probability of the blocked filter with `n` keys in
/// `nblocks` blocks (may be fractional while searching), `k` bits per block, `x`
/// blocks per key and bit positions placed by `scheme`. See the module docs for
/// the formula.
pub fn blocked_fpp(n: f64, nblocks: f64, k: u32, x: u32, scheme: Scheme) -> f64 {
    if n <= 0.0 {
        return 0.0;
    }
    // Far past saturation the sums below would need tables as large as the load
    // (a crafted file can claim 2^64 keys); every block is then all but full and
    // the mean load gives the answer to within 1e-4.
    let per_block = n * x as f64 / nblocks;
    if per_block > 4096.0 || !per_block.is_finite() {
        let keep = keep_per_key(k, scheme).powf(per_block);
        return (1.0 - keep).powi((k * x) as i32);
    }
    if x == 1 {
        let lambda = n / nblocks;
        let (lo, hi) = span(lambda, lambda.sqrt(), 10.0, usize::MAX);
        let lf = ln_factorials(hi + 2);
        let q = q_table(k, scheme, hi + 1);
        return poisson(lambda, lo, hi, &lf)
            .iter()
            .zip(lo..)
            .map(|(w, i)| w * q[i])
            .sum();
    }
    let page = PageSums::new(n, nblocks, k, x, scheme);
    // The terms of one j form a chain (each multiplies the one before), four
    // cycles a step; those of different j do not. `LANES` values of j at a
    // time, interleaved, keep the CPU's multipliers busy (the sizing of
    // `dedup`'s default filter took 5 ms one j at a time). Each j's terms and
    // the order they are added in are unchanged, so the result is too, to the
    // bit (tested against the one-at-a-time sum).
    let mut total = 0.0;
    let mut groups = page.weights.chunks_exact(LANES);
    let mut j = page.jlo;
    for group in groups.by_ref() {
        let inner = page.inner::<LANES>(j);
        for (w, inner) in group.iter().zip(inner) {
            total += w * inner.powi(x as i32);
        }
        j += LANES;
    }
    for w in groups.remainder() {
        total += w * page.inner::<1>(j)[0].powi(x as i32);
        j += 1;
    }
    total
}

/// How many page loads [`blocked_fpp`] sums at once.
const LANES: usize = 4;

/// The tables of [`blocked_fpp`]'s sum over page loads `j` (keys in a page,
/// `Poisson(λp)`), whose block loads `i` are `Binomial(j, s)`.
struct PageSums {
    /// The first page load summed.
    jlo: usize,
    /// `Poisson(j; λp)` for each page load summed, from `jlo`.
    weights: Vec<f64>,
    /// `ln m!` for every load `m` of the span.
    lf: Vec<f64>,
    /// A block's false-positive probability at each load.
    q: Vec<f64>,
    /// `1 / m` (`1` for `m = 0`).
    inv: Vec<f64>,
    /// A block's share of a page's keys, `x / 64`.
    s: f64,
    ln_s: f64,
    ln_t: f64,
    /// `s / (1 - s)`.
    ratio: f64,
}

impl PageSums {
    /// The tables for `n` keys in `nblocks` blocks, `x` blocks of `k` bits per key.
    fn new(n: f64, nblocks: f64, k: u32, x: u32, scheme: Scheme) -> PageSums {
        let per_page = BLOCKS_PER_PAGE as f64;
        let lambda_page = n * per_page / nblocks;
        // Tails past 6 sd weigh < 1e-8 of the total here (each block's own
        // FPP is ≥ p^(1/x)); the one-block case keeps 10 sd because its FPP
        // is p itself.
        let (jlo, jhi) = span(lambda_page, lambda_page.sqrt(), 6.0, usize::MAX);
        let lf = ln_factorials(jhi + 2);
        let s = x as f64 / per_page;
        // A block's load i never goes past the top of its span for the largest
        // j (about 100 for 2 blocks per key), far below j itself.
        let imax = span(
            jhi as f64 * s,
            (jhi as f64 * s * (1.0 - s)).sqrt(),
            6.0,
            jhi,
        )
        .1;
        PageSums {
            jlo,
            weights: poisson(lambda_page, jlo, jhi, &lf),
            q: q_table(k, scheme, imax + 1),
            inv: (0..=imax + 1).map(|m| 1.0 / m.max(1) as f64).collect(),
            lf,
            s,
            ln_s: s.ln(),
            ln_t: (1.0 - s).ln(),
            ratio: s / (1.0 - s),
        }
    }

    /// The span of block loads summed for page load `j` (within 6 sd), and
    /// the probability of its first.
    #[inline(always)]
    fn first_term(&self, j: usize) -> (usize, usize, f64) {
        let mean = j as f64 * self.s;
        let (ilo, ihi) = span(mean, (mean * (1.0 - self.s)).sqrt(), 6.0, j);
        debug_assert!(ihi < self.q.len());
        let pmf = (self.lf[j] - self.lf[ilo] - self.lf[j - ilo]
            + ilo as f64 * self.ln_s
            + (j - ilo) as f64 * self.ln_t)
            .exp();
        (ilo, ihi, pmf)
    }

    /// `Σ_i Binomial(i; j, s) · q[i]` over the block loads within 6 sd, for
    /// the `N` page loads `j0 .. j0 + N`, computed side by side.
    #[inline(always)]
    fn inner<const N: usize>(&self, j0: usize) -> [f64; N] {
        let (mut at, mut last, mut pmf) = ([0usize; N], [0usize; N], [0f64; N]);
        for l in 0..N {
            (at[l], last[l], pmf[l]) = self.first_term(j0 + l);
        }
        let mut inner = [0f64; N];
        // One step of lane `l`: the term at its current load, then the next
        // load's probability by the binomial recurrence, which multiplies by
        // (j - i) / (i + 1) · s / (1 - s) (multiplications only, with
        // 1 / (i + 1) from a table: a division a step made a sizing ~20 ms).
        let step = |l: usize, at: &mut [usize; N], pmf: &mut [f64; N], inner: &mut [f64; N]| {
            let i = at[l];
            inner[l] += pmf[l] * self.q[i];
            // Through i64: the same value, converted in one instruction
            // (usize to f64 takes several on x86_64).
            pmf[l] *= (j0 + l - i) as i64 as f64 * self.inv[i + 1] * self.ratio;
            at[l] += 1;
        };
        let common = (0..N).map(|l| last[l] + 1 - at[l]).min().unwrap_or(0);
        for _ in 0..common {
            for l in 0..N {
                step(l, &mut at, &mut pmf, &mut inner);
            }
        }
        for l in 0..N {
            while at[l] <= last[l] {
                step(l, &mut at, &mut pmf, &mut inner);
            }
        }
        inner
    }
}

/// Best `k` for the given geometry, and its FPP, searching from `hint`. FPP is
/// unimodal in `k`: walk downhill from the hint (in steps of 8 for sectored
/// positions, whose `k` is a multiple of 8).
fn best_k(n: f64, nblocks: f64, x: u32, scheme: Scheme, hint: u32) -> (u32, f64) {
    let f = |k: u32| blocked_fpp(n, nblocks, k, x, scheme);
    let unit = match scheme {
        Scheme::Scattered => 1,
        Scheme::Sectored => 8,
    };
    let mut k = (hint / unit * unit).clamp(unit, MAX_K);
    let mut fk = f(k);
    for step in [unit as i64, -(unit as i64)] {
        loop {
            let next = k as i64 + step;
            if next < unit as i64 || next > MAX_K as i64 {
                break;
            }
            let fnext = f(next as u32);
            if fnext >= fk {
                break;
            }
            (k, fk) = (next as u32, fnext);
        }
    }
    (k, fk)
}

/// Sizes a filter for `n` keys at `p` with exactly `x` blocks per key and bit
/// positions placed by `scheme`.
///
/// # Errors
/// [`SizingError`] when `p` is out of range or the filter would be too large.
pub fn plan_with_spread(n: u64, p: f64, x: u32, scheme: Scheme) -> Result<Plan, SizingError> {
    if !(p.is_finite() && (MIN_FPP..1.0).contains(&p)) {
        return Err(SizingError::BadFpp(p));
    }
    let n = n.max(1);
    let nf = n as f64;
    // Small inputs: one page is the smallest filter there is; if it meets the
    // target, no search is needed (keeps `seen dedup` of a few lines instant).
    // `Some(plan)` when `nblocks` blocks, with their best k, meet the target.
    let meets = |nblocks: u64, hint: u32| {
        let (k, f) = best_k(nf, nblocks as f64, x, scheme, hint);
        (f <= p).then_some(Plan {
            layout: Layout {
                nblocks,
                k,
                blocks_per_key: x,
                scheme,
            },
            capacity: n,
            target_fpp: p,
            expected_fpp: f,
        })
    };
    // A blocked filter never beats the classic one, so the one-page check is
    // only worth making when a classic filter would fit in a page: with many
    // keys in one page the formula's sums are long (48 ms for 100,000 keys).
    if classic_bits(n, p) <= BLOCKS_PER_PAGE * BLOCK_BITS as u64
        && let Some(plan) = meets(BLOCKS_PER_PAGE, 8)
    {
        return Ok(plan);
    }
    // FPP depends on bits per key only (plus rounding): search on it, on a large
    // reference n so that rounding to whole pages does not distort the search.
    let reference = 1e9;
    let hint = std::cell::Cell::new(1u32);
    let fpp_at = |b: f64| {
        let (k, f) = best_k(
            reference,
            reference * b / BLOCK_BITS as f64,
            x,
            scheme,
            hint.get(),
        );
        hint.set(k);
        f
    };
    // A blocked filter never beats the classic one: start just under its size.
    let textbook = -p.ln() / (std::f64::consts::LN_2 * std::f64::consts::LN_2);
    // g(b) = ln FPP(b) - ln p falls with b, nearly linearly: find its root by
    // regula falsi with the Illinois rule (a bracket that shrinks to 0.1 % in
    // about 5 evaluations, where bisection took 10).
    let g = |b: f64| fpp_at(b).ln() - p.ln();
    let mut lo = 0.9 * textbook;
    let mut g_lo = g(lo);
    let mut hi = 2.0 * textbook + 4.0;
    let mut g_hi = g(hi);
    while g_hi > 0.0 {
        (lo, g_lo) = (hi, g_hi);
        hi *= 2.0;
        if hi > 4096.0 {
            return Err(SizingError::BadFpp(p));
        }
        g_hi = g(hi);
    }
    if g_lo <= 0.0 {
        // Cannot happen (a blocked filter never beats the classic one), but
        // then the bracket is simply [lo, lo].
        hi = lo;
    }
    // Which end moved last: the other end's value is halved when the same end
    // moves twice (the Illinois rule), so that both ends close in.
    let mut last = 0i8;
    let mut steps = 0;
    while hi / lo > 1.0 + 1e-3 {
        let mut mid = hi - g_hi * (hi - lo) / (g_hi - g_lo);
        // Keep strictly inside the bracket; halve it instead when the
        // interpolation is not finite, or after 20 steps (so that no shape of
        // g can make the search crawl: halving takes at most ~12 more).
        let margin = (hi - lo) * 1e-4;
        steps += 1;
        if steps > 20 || !(mid.is_finite() && mid > lo + margin && mid < hi - margin) {
            mid = (lo * hi).sqrt();
        }
        let g_mid = g(mid);
        if g_mid <= 0.0 {
            (hi, g_hi) = (mid, g_mid);
            if last == 1 {
                g_lo /= 2.0;
            }
            last = 1;
        } else {
            (lo, g_lo) = (mid, g_mid);
            if last == -1 {
                g_hi /= 2.0;
            }
            last = -1;
        }
    }
    let bytes = nf * hi / 8.0;
    if bytes > MAX_BYTES as f64 {
        return Err(SizingError::TooLarge { capacity: n, bytes });
    }
    let mut nblocks = ((nf * hi / BLOCK_BITS as f64).ceil() as u64)
        .div_ceil(BLOCKS_PER_PAGE)
        .max(1)
        * BLOCKS_PER_PAGE;
    loop {
        if let Some(plan) = meets(nblocks, hint.get()) {
            return Ok(plan);
        }
        nblocks += BLOCKS_PER_PAGE;
    }
}

/// Sizes a filter for `n` keys at `p`. First the scattered plan (see
/// `scattered_plans`); then the sectored plan with the fewest blocks per key,
/// but no more than that one, that costs at most [`SECTORED_PREMIUM`] more space
/// and stays within 10 % of the textbook classic size is taken instead.
/// Sectored positions make the test-and-set cheaper; where the best `k` is far
/// from a multiple of 8 per block (high `p`, where it is well under 8) they
/// would cost more space, and scattered ones are kept. With the
/// `SEEN_SCATTERED_ONLY` switch ([`crate::tuning::Tuning::scattered_only`]),
/// scattered layers only, as `seen` before format 1.4 made: for tests of old
/// files and benchmarks of one scheme against the other.
///
/// # Errors
/// [`SizingError`] when `p` is out of range or the filter would be too large.
pub fn plan(n: u64, p: f64) -> Result<Plan, SizingError> {
    let (scattered, candidates) = scattered_plans(n, p)?;
    if crate::tuning::get().scattered_only {
        return Ok(scattered);
    }
    // Never past 10 % over the textbook size, unless scattered is already.
    let textbook = classic_bits(n.max(1), p) as f64 / BLOCK_BITS as f64;
    let size = scattered.layout.nblocks as f64;
    let limit = (size * (1.0 + SECTORED_PREMIUM)).min((textbook * 1.10).max(size));
    for x in 1..=scattered.layout.blocks_per_key {
        // Sectored positions never need less space than scattered ones with
        // as many blocks (their k is a multiple of 8, and a key's own bits
        // collide less often inside a 64-bit word than inside 512 bits, so
        // each key sets slightly more bits): skip the search (a few
        // milliseconds each) when the scattered plan is already too big.
        if candidates
            .iter()
            .any(|c| c.layout.blocks_per_key == x && c.layout.nblocks as f64 > limit)
        {
            continue;
        }
        // A sectored plan that cannot be made (too large, near MAX_BYTES,
        // where the scattered one just fits) is simply not chosen.
        if let Ok(sectored) = plan_with_spread(n, p, x, Scheme::Sectored)
            && sectored.layout.nblocks as f64 <= limit
        {
            return Ok(sectored);
        }
    }
    Ok(scattered)
}

/// Sizes a filter for `n` keys at `p` that sets as few bits per key as it
/// can while taking at most `room` times the space of [`plan`]'s: for a store
/// where each bit set costs more than the space it takes (a Redis server,
/// whose `BITFIELD` pays per bit). Scattered positions, 1 or 2 blocks per key.
///
/// # Errors
/// As [`plan`].
pub fn plan_few_bits(n: u64, p: f64, room: f64) -> Result<Plan, SizingError> {
    let best = plan(n, p)?;
    let budget = best.layout.nblocks as f64 * room.max(1.0);
    let nf = n.max(1) as f64;
    let mut chosen = best;
    for bits in 1..best.layout.k * best.layout.blocks_per_key {
        let mut found: Option<Plan> = None;
        for x in [1u32, 2] {
            if bits % x != 0 || bits / x > MAX_K {
                continue;
            }
            let k = bits / x;
            let fits = |pages: u64| {
                blocked_fpp(
                    nf,
                    (pages * BLOCKS_PER_PAGE) as f64,
                    k,
                    x,
                    Scheme::Scattered,
                ) <= p
            };
            let mut hi = (budget / BLOCKS_PER_PAGE as f64).ceil() as u64;
            if hi == 0 || !fits(hi) {
                continue;
            }
            let mut lo = 0;
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if fits(mid) { hi = mid } else { lo = mid }
            }
            let nblocks = hi * BLOCKS_PER_PAGE;
            if found.is_none_or(|f| nblocks < f.layout.nblocks) {
                found = Some(Plan {
                    layout: Layout {
                        nblocks,
                        k,
                        blocks_per_key: x,
                        scheme: Scheme::Scattered,
                    },
                    capacity: n,
                    target_fpp: p,
                    expected_fpp: blocked_fpp(nf, nblocks as f64, k, x, Scheme::Scattered),
                });
            }
        }
        if let Some(f) = found {
            chosen = f;
            break;
        }
    }
    Ok(chosen)
}

/// Sectored bit positions are chosen when they cost at most this fraction more
/// space than scattered ones (`cargo bench --bench filter` measures the
/// difference in speed; docs/PERFORMANCE.md quotes it).
pub const SECTORED_PREMIUM: f64 = 0.04;

/// Sizes a filter for `n` keys at `p` with scattered bit positions, choosing
/// the blocks per key: the smallest spread whose size is within
/// [`SPREAD_SAVING`] of the smallest filter and within 9 % of the textbook
/// classic size. Returns that plan and the plans of every spread it chose from.
///
/// # Errors
/// [`SizingError`] when `p` is out of range or the filter would be too large.
fn scattered_plans(n: u64, p: f64) -> Result<(Plan, Vec<Plan>), SizingError> {
    // Down to 1e-2 one block per key is within 3 % of the classic size.
    let spreads: &[u32] = if p >= 1e-2 { &[1] } else { &[1, 2, 4] };
    let plans = spreads
        .iter()
        .map(|&x| plan_with_spread(n, p, x, Scheme::Scattered))
        .collect::<Result<Vec<_>, _>>()?;
    let smallest = plans.iter().map(|p| p.layout.nblocks).min().unwrap_or(0) as f64;
    let textbook = classic_bits(n.max(1), p) as f64 / BLOCK_BITS as f64;
    let limit = (smallest * (1.0 + SPREAD_SAVING)).min((textbook * 1.09).max(smallest));
    let chosen = *plans
        .iter()
        .find(|p| p.layout.nblocks as f64 <= limit)
        .expect("the smallest plan always qualifies");
    Ok((chosen, plans))
}

/// How a filter grows when its newest layer is full (Almeida, Baquero, Preguiça,
/// Hutchison 2007, "Scalable Bloom Filters"): layer `i` holds `c0 · factor^i`
/// keys at false-positive rate `P · (1 − ratio) · ratio^i`, so the compound rate
/// over any number of layers stays below `P · (1 − ratio) / (1 − ratio) = P`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Growth {
    /// Capacity multiplier from one layer to the next, `2..=MAX_GROWTH`.
    pub factor: u32,
    /// Tightening ratio of the false-positive rate from one layer to the next, in (0, 1).
    pub ratio: f64,
}

/// Default capacity multiplier between layers.
pub const DEFAULT_GROWTH: u32 = 2;
/// Largest capacity multiplier accepted.
pub const MAX_GROWTH: u32 = 16;
/// Tightening ratio of new filters. 0.8 rather than the paper's 0.5 here: the
/// layers that hold most keys are the newest, and with 0.5 each layer costs 1.44
/// more bits per key than the one before (at 8 layers, 1e-2: 2.1x the bits of a
/// fixed filter instead of 1.6x, by the textbook formula), while 0.8 costs 0.46
/// more per layer, for a first layer 3.35 bits per key larger instead of 1.44.
pub const DEFAULT_RATIO: f64 = 0.8;

impl Growth {
    /// The default growth with factor `factor`.
    pub fn new(factor: u32) -> Growth {
        Growth {
            factor,
            ratio: DEFAULT_RATIO,
        }
    }

    /// Capacity of layer `i` of a filter starting at `c0` (saturating).
    pub fn capacity(&self, c0: u64, i: u32) -> u64 {
        (self.factor as u64)
            .checked_pow(i)
            .and_then(|f| f.checked_mul(c0.max(1)))
            .unwrap_or(u64::MAX)
    }

    /// Target false-positive rate of layer `i` for a compound target `p`.
    pub fn layer_fpp(&self, p: f64, i: u32) -> f64 {
        p * (1.0 - self.ratio) * self.ratio.powi(i as i32)
    }

    /// Sizes layer `i` of a growing filter that starts at capacity `c0` and keeps
    /// its compound false-positive rate under `p`.
    ///
    /// # Errors
    /// When the layer's rate falls below [`MIN_FPP`] or it would be too large.
    pub fn layer_plan(&self, c0: u64, p: f64, i: u32) -> Result<Plan, SizingError> {
        if !(p.is_finite() && (MIN_FPP..1.0).contains(&p)) {
            return Err(SizingError::BadFpp(p));
        }
        let layer_fpp = self.layer_fpp(p, i);
        // A share that is MIN_FPP but for rounding (-p 5e-15 at ratio 0.8) is MIN_FPP.
        if layer_fpp < MIN_FPP * (1.0 - 1e-9) {
            return Err(SizingError::LayerTooTight {
                target: p,
                layer: i,
                layer_fpp,
                roomy: MIN_FPP / self.layer_fpp(1.0, 7),
            });
        }
        plan(self.capacity(c0, i), layer_fpp.max(MIN_FPP))
    }
}

/// A filter that forgets: a line recorded at time `t` is seen until at least
/// `t + secs` and new again from `t + secs · (1 + 1/slices)` on. Time is cut
/// into slices of `secs / slices` (slice `j` is `[j·secs/slices,
/// (j+1)·secs/slices)` in Unix seconds); a line goes to the slice of the time
/// it is recorded, and a lookup at time `now` tests the `slices + 1` newest
/// slices (`slice(now) − slices … slice(now)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The window W, in seconds.
    pub secs: u64,
    /// Slices per window, `1..=MAX_SLICES`.
    pub slices: u32,
}

/// Slices per window when `--slices` is not given: the fuzz past the window
/// is at most an eighth of it.
pub const DEFAULT_SLICES: u32 = 8;
/// Most slices per window: the live slices (one more) and their growth must
/// fit the 62 layers of a file.
pub const MAX_SLICES: u32 = 32;

impl Window {
    /// Slices a lookup tests: the window's, and the one being filled.
    pub fn live(&self) -> u32 {
        self.slices + 1
    }

    /// A slice's share of `capacity` lines per window (rounded up, at
    /// least 1).
    pub fn slice_capacity(&self, capacity: u64) -> u64 {
        capacity.div_ceil(u64::from(self.slices)).max(1)
    }

    /// The slice that holds time `t` (Unix seconds).
    pub fn slice_at(&self, t: u64) -> u64 {
        (u128::from(t) * u128::from(self.slices) / u128::from(self.secs)) as u64
    }

    /// When slice `j` starts (Unix seconds, rounded up: the first whole
    /// second inside it).
    pub fn slice_start(&self, j: u64) -> u64 {
        let num = u128::from(j) * u128::from(self.secs);
        num.div_ceil(u128::from(self.slices))
            .try_into()
            .unwrap_or(u64::MAX)
    }

    /// The oldest slice a lookup at time `now` still tests.
    pub fn oldest_live(&self, now: u64) -> u64 {
        self.slice_at(now).saturating_sub(u64::from(self.slices))
    }
}

/// What a new filter is made for: its (first) capacity, the false-positive rate
/// it must stay under, whether it grows, and whether it forgets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    /// Capacity of a fixed filter, or of the first layer of a growing one;
    /// with a window, distinct lines per window.
    pub capacity: u64,
    /// Target false-positive rate (compound over all layers when growing;
    /// over all live slices with a window).
    pub target_fpp: f64,
    /// `None` for a fixed filter (with a window: fixed slices).
    pub growth: Option<Growth>,
    /// `Some` for a filter that forgets after a time window.
    pub window: Option<Window>,
}

impl Spec {
    /// Sizes layer `i` (only 0 exists for a fixed filter); with a window,
    /// layer `i` of a slice ([`Spec::slice`]).
    ///
    /// # Errors
    /// As [`plan`].
    pub fn layer(&self, i: u32) -> Result<Plan, SizingError> {
        if let Some(w) = self.window {
            if w.secs < u64::from(w.slices) {
                return Err(SizingError::WindowTooShort(w));
            }
            return self.slice().layer(i);
        }
        match self.growth {
            None => plan(self.capacity, self.target_fpp),
            Some(g) => g.layer_plan(self.capacity, self.target_fpp, i),
        }
    }

    /// What one slice of a window is made for: an equal share of the lines
    /// per window (`capacity / slices`, rounded up), and an equal share of
    /// the rate (`target / (slices + 1)`), so the rate over the live slices
    /// stays under the target. A filter without a window is its own slice.
    pub fn slice(&self) -> Spec {
        match self.window {
            None => *self,
            Some(w) => Spec {
                capacity: w.slice_capacity(self.capacity),
                target_fpp: self.target_fpp / f64::from(w.live()),
                growth: self.growth,
                window: None,
            },
        }
    }
}

/// False-positive rate of a layer holding `n` keys.
pub fn layer_fpp(layout: &Layout, n: u64) -> f64 {
    blocked_fpp(
        n as f64,
        layout.nblocks as f64,
        layout.k,
        layout.blocks_per_key,
        layout.scheme,
    )
}

/// How many times its target a filter's false-positive rate may pass before
/// `build`, `dedup` and `stats` call its results no longer reliable. They warn
/// once when the rate passes the target, and once more when it passes this
/// multiple of it: a tenfold rate is where a false positive stops being an
/// exception the target budgeted for and becomes part of every result.
pub const UNRELIABLE: f64 = 10.0;

/// How far a filter whose false-positive rate is `rate` is past its `target`:
/// 0 at or under it, 1 above it, 2 above [`UNRELIABLE`] times it.
pub fn alarm(rate: f64, target: f64) -> u8 {
    if rate > UNRELIABLE * target {
        2
    } else {
        u8::from(rate > target)
    }
}

/// Keys a layer holds when its false-positive rate reaches `rate`: the largest
/// count whose rate is at most `rate` (bisection; the rate only rises with the
/// count). 0 when even one key passes it (or `rate` is negative), `u64::MAX`
/// when no count does.
pub fn keys_at_rate(layout: &Layout, rate: f64) -> u64 {
    if rate.is_nan() || rate < 0.0 {
        return 0;
    }
    if rate >= 1.0 {
        return u64::MAX;
    }
    let mut lo = 0u64;
    let mut hi = 64u64;
    while layer_fpp(layout, hi) <= rate {
        lo = hi;
        match hi.checked_mul(2) {
            Some(h) => hi = h,
            None => return u64::MAX,
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if layer_fpp(layout, mid) <= rate {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The rate the newest layer may reach before the compound rate of it and of
/// older layers whose rates are `older` passes `target`: `target` itself when
/// there is no older layer, 0 or less when the older ones already pass it.
pub fn newest_budget(older: impl IntoIterator<Item = f64>, target: f64) -> f64 {
    // (1 − budget) · Π (1 − p) = 1 − target, in logs (see `any_of`).
    let log_keep: f64 = older.into_iter().map(|p| (-p).ln_1p()).sum();
    if log_keep == 0.0 {
        return target;
    }
    -((-target).ln_1p() - log_keep).exp_m1()
}

/// Compound false-positive rate of layers holding `counts[i]` keys each: the
/// chance that some layer reports an absent key present.
pub fn compound_fpp(layers: &[(Layout, u64)]) -> f64 {
    any_of(layers.iter().map(|(l, n)| layer_fpp(l, *n)))
}

/// The chance that at least one of independent events of these `rates`
/// happens, `1 − Π (1 − p)`, computed as `−expm1(Σ ln1p(−p))` so that tiny
/// rates are not lost to cancellation (`1 − (1 − 1e-34)` is 0 in `f64`).
pub fn any_of(rates: impl IntoIterator<Item = f64>) -> f64 {
    -rates
        .into_iter()
        .map(|p| (-p).ln_1p())
        .sum::<f64>()
        .exp_m1()
}

/// Expected number of new keys wrongly taken for present ones (false positives)
/// while layer `i` went from `before` to `after` keys, for each `(layout,
/// before, after)` oldest first. While a layer fills, every older layer is
/// complete, so the rate at the moment a key arrives is
/// `1 − Π_older (1 − f_o) · (1 − f_i(count))`; this integrates it over the
/// inserts (trapezoids, 64 per layer; the rate is smooth and increasing).
pub fn expected_false_positives(layers: &[(Layout, u64, u64)]) -> f64 {
    let mut total = 0.0;
    // ln Π_older (1 − f_o), kept as a sum of logs (see `any_of`).
    let mut older_log_keep = 0.0;
    for (layout, before, after) in layers {
        if after > before {
            let steps = 64u64.min(after - before);
            let width = (after - before) as f64 / steps as f64;
            let at = |j: u64| {
                let n = *before as f64 + j as f64 * width;
                let f = layer_fpp(layout, n.round() as u64);
                -(older_log_keep + (-f).ln_1p()).exp_m1()
            };
            let inner: f64 = (1..steps).map(at).sum();
            total += width * (inner + (at(0) + at(steps)) / 2.0);
        }
        older_log_keep += (-layer_fpp(layout, *after)).ln_1p();
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The warnings' thresholds: `keys_at_rate` is the exact count where a
    /// layer's rate passes a rate, `newest_budget` the rate that keeps the
    /// compound one at the target, `alarm` the levels.
    #[test]
    fn warning_thresholds() {
        let layout = plan(1000, 1e-2).unwrap().layout;
        for rate in [1e-6, 1e-2, 0.1] {
            let n = keys_at_rate(&layout, rate);
            assert!(layer_fpp(&layout, n) <= rate, "{rate}: {n}");
            assert!(layer_fpp(&layout, n + 1) > rate, "{rate}: {n}");
        }
        assert!(keys_at_rate(&layout, 1e-2) >= 1000);
        assert_eq!(keys_at_rate(&layout, -1.0), 0);
        assert_eq!(keys_at_rate(&layout, 1.0), u64::MAX);
        assert_eq!(newest_budget([], 1e-2), 1e-2);
        let b = newest_budget([4e-3, 1e-3], 1e-2);
        assert!((any_of([4e-3, 1e-3, b]) - 1e-2).abs() < 1e-15, "{b}");
        assert!(newest_budget([2e-2], 1e-2) < 0.0);
        assert_eq!(alarm(1e-2, 1e-2), 0);
        assert_eq!(alarm(1.1e-2, 1e-2), 1);
        assert_eq!(alarm(0.1, 1e-2), 1);
        assert_eq!(alarm(0.11, 1e-2), 2);
    }

    /// Issue 21, numbers: rates far below 1e-16 survive being combined
    /// (`1 − (1 − 1.14e-34)` was 0), and ordinary ones come out as before.
    #[test]
    fn combined_rates_keep_tiny_values() {
        assert_eq!(any_of([1.14e-34]), 1.14e-34);
        let two = any_of([1e-30, 3e-30]);
        assert!((two - 4e-30).abs() < 1e-44, "{two}");
        let usual = any_of([1e-3, 2e-3]);
        let textbook = 1.0 - (1.0 - 1e-3) * (1.0 - 2e-3);
        assert!((usual - textbook).abs() < 1e-15, "{usual} vs {textbook}");
        assert_eq!(any_of([]), 0.0);
        assert_eq!(any_of([1.0, 0.5]), 1.0);
    }

    /// A growing filter whose first layer's share of -p falls below MIN_FPP
    /// names that, and the -p that would do, instead of an unexplained
    /// 0.000…02 (issue 19).
    #[test]
    fn too_tight_a_layer_names_the_rate_that_would_do() {
        let spec = Spec {
            capacity: 1000,
            target_fpp: 1e-15,
            growth: Some(Growth::new(2)),
            window: None,
        };
        let e = spec.layer(0).unwrap_err();
        assert!(
            matches!(e, SizingError::LayerTooTight { layer: 0, .. }),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(msg.contains("layer 1 would get 2.0e-16"), "{msg}");
        assert!(msg.contains("raise -p to 3e-14"), "{msg}");
        assert!(!msg.contains("0.0000"), "{msg}");
        // 3e-14 leaves room for 8 layers; 5e-15 only for the first.
        let ok = Spec {
            target_fpp: 3e-14,
            ..spec
        };
        assert!((0..8).all(|i| ok.layer(i).is_ok()));
        let tight = Spec {
            target_fpp: 5e-15,
            ..spec
        };
        assert!(tight.layer(0).is_ok() && tight.layer(1).is_err());
        assert_eq!(round_up_1(4.2e-15), "5e-15");
        assert_eq!(round_up_1(9.5e-3), "1e-2");
        assert_eq!(round_up_1(3e-7), "3e-7");
    }

    /// [`blocked_fpp`]'s sum over page loads as it was before the loads were
    /// interleaved: one j at a time, each j's terms in order (the tables and
    /// each j's first term are [`PageSums`]'s, shared with the code tested).
    fn page_sum_one_at_a_time(n: f64, nblocks: f64, k: u32, x: u32, scheme: Scheme) -> f64 {
        let page = PageSums::new(n, nblocks, k, x, scheme);
        let mut total = 0.0;
        for (wj, trials) in page.weights.iter().zip(page.jlo..) {
            let (ilo, ihi, mut pmf) = page.first_term(trials);
            let mut inner = 0.0;
            for (i, qi) in page.q.iter().enumerate().take(ihi + 1).skip(ilo) {
                inner += pmf * qi;
                pmf *= (trials - i) as f64 * page.inv[i + 1] * page.ratio;
            }
            total += wj * inner.powi(x as i32);
        }
        total
    }

    /// Interleaving the page loads changes no bit of the result: loads per
    /// page from under one to thousands (spans of every length, groups of
    /// four and the leftover), both schemes, 2 to 4 blocks per key.
    #[test]
    fn interleaved_page_sums_equal_the_one_at_a_time_sum() {
        let mut cases = 0;
        for x in [2u32, 3, 4] {
            for scheme in [Scheme::Scattered, Scheme::Sectored] {
                let ks: &[u32] = match scheme {
                    Scheme::Scattered => &[1, 3, 7, 16],
                    Scheme::Sectored => &[8, 16, 32],
                };
                for &k in ks {
                    for per_page in [0.3, 1.0, 7.5, 64.0, 300.0, 1040.0, 1041.7, 4000.0] {
                        for nblocks in [64.0, 6400.0, 1.3e6] {
                            let n = per_page * nblocks / BLOCKS_PER_PAGE as f64;
                            let got = blocked_fpp(n, nblocks, k, x, scheme);
                            let want = page_sum_one_at_a_time(n, nblocks, k, x, scheme);
                            assert_eq!(
                                got.to_bits(),
                                want.to_bits(),
                                "n {n} nblocks {nblocks} k {k} x {x} {scheme:?}: {got} vs {want}"
                            );
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 3 * 7 * 8 * 3);
    }

    /// Space of a grown filter: with every layer full, all layers together take
    /// at most 2.5x the bits of a fixed filter sized exactly for the keys they
    /// hold (the issue's target), for growth 2 and 4, up to 12 layers.
    #[test]
    fn grown_filter_space_against_fixed() {
        for factor in [2, 4] {
            for p in [1e-2, 1e-4, 1e-6, 1e-9] {
                let g = Growth::new(factor);
                let c0 = 100_000;
                let (mut cap, mut bits) = (0u64, 0u64);
                for i in 0..12 {
                    let l = g.layer_plan(c0, p, i).unwrap();
                    assert!(l.expected_fpp <= g.layer_fpp(p, i));
                    cap += l.capacity;
                    bits += l.layout.bits();
                    let fixed = plan(cap, p).unwrap().layout.bits();
                    let ratio = bits as f64 / fixed as f64;
                    assert!(
                        ratio <= 2.5,
                        "growth {factor} p {p} layers {}: {ratio:.2}",
                        i + 1
                    );
                }
                // The compound target holds: the layers' rates sum below p.
                let sum: f64 = (0..62).map(|i| g.layer_fpp(p, i)).sum();
                assert!(sum < p);
            }
        }
    }

    #[test]
    fn expected_false_positives_integrates_the_rate() {
        let l = plan(10_000, 0.01).unwrap().layout;
        assert_eq!(expected_false_positives(&[(l, 5, 5)]), 0.0);
        // Rising rate: the integral lies between the ends' rates times the count.
        let e = expected_false_positives(&[(l, 0, 10_000)]);
        assert!(e > 0.0 && e < 10_000.0 * layer_fpp(&l, 10_000), "{e}");
        // A full older layer adds its rate to every insert into the next one.
        let l2 = plan(20_000, 0.01).unwrap().layout;
        let both = expected_false_positives(&[(l, 10_000, 10_000), (l2, 0, 20_000)]);
        let alone = expected_false_positives(&[(l2, 0, 20_000)]);
        let older = layer_fpp(&l, 10_000);
        assert!(
            both > alone + 0.9 * older * 20_000.0,
            "{both} {alone} {older}"
        );
    }

    #[test]
    fn classic_reference_values() {
        // Seed tables: 1M @ 1 % -> 9,585,059 bits, k = 7; 100M @ 1 % -> 958,505,838 bits.
        assert_eq!(classic_bits(1_000_000, 0.01), 9_585_059);
        assert_eq!(classic_k(9_585_059, 1_000_000), 7);
        assert_eq!(classic_bits(100_000_000, 0.01), 958_505_838);
        assert_eq!(classic_k(958_505_838, 100_000_000), 7);
        let mib = 958_505_838f64 / 8.0 / 1024.0 / 1024.0;
        assert!((mib - 114.26).abs() < 0.01, "{mib}");
        // 10M @ 0.1 % -> 1.44e8 bits, k = 10.
        let m = classic_bits(10_000_000, 0.001);
        assert!((m as f64 / 1.44e8 - 1.0).abs() < 0.005, "{m}");
        assert_eq!(classic_k(m, 10_000_000), 10);
        let f = classic_fpp(9_585_059, 1_000_000, 7);
        assert!((f / 0.01 - 1.0).abs() < 0.02, "{f}");
    }

    /// DESIGN.md's table (bits per key for independent blocks) is reproduced by the
    /// one-block formula, which has no page effect.
    #[test]
    fn one_block_matches_design_table() {
        for (p, want) in [(1e-2, 9.90), (1e-3, 15.5), (1e-6, 38.5), (1e-9, 79.1)] {
            let plan = plan_with_spread(100_000_000, p, 1, Scheme::Scattered).unwrap();
            let got = plan.bits_per_key();
            assert!((got / want - 1.0).abs() < 0.01, "p={p}: {got} vs {want}");
            assert!(plan.expected_fpp <= p);
        }
    }

    #[test]
    fn page_effect_costs_a_little_space() {
        // Spreading over blocks of one page needs slightly more than the
        // independent-blocks figures of DESIGN.md (31.0 and 44.9 bits/key), never less.
        let two = plan_with_spread(100_000_000, 1e-6, 2, Scheme::Scattered)
            .unwrap()
            .bits_per_key();
        assert!((31.0..31.0 * 1.06).contains(&two), "{two}");
        let four = plan_with_spread(100_000_000, 1e-9, 4, Scheme::Scattered)
            .unwrap()
            .bits_per_key();
        assert!((44.9..44.9 * 1.08).contains(&four), "{four}");
    }

    /// Where [`plan`] takes sectored positions, as docs/FORMAT.md states it
    /// (10M keys): from about 1.7e-2 down, but for the bands where `k` per
    /// block is far from a multiple of 8. And a filter grown from 30k at the
    /// default rate is sectored in every layer, so that its older layers make
    /// one group (`kernels::older`): its three smallest were scattered at a
    /// 3 % premium. A chosen sectored plan never costs more than the premium.
    #[test]
    fn sectored_where_the_docs_say() {
        let scheme = |n: u64, p: f64| plan(n, p).unwrap().layout.scheme;
        for p in [2.5e-2, 8e-4, 6e-4, 3e-4, 8e-7, 6e-7, 5e-7] {
            assert_eq!(scheme(10_000_000, p), Scheme::Scattered, "p={p}");
        }
        for p in [
            1.5e-2, 1e-2, 1e-3, 9e-4, 2.5e-4, 1e-4, 1e-6, 9e-7, 4e-7, 3e-8, 1e-9,
        ] {
            assert_eq!(scheme(10_000_000, p), Scheme::Sectored, "p={p}");
        }
        for i in 0..8 {
            let layer = Growth::new(DEFAULT_GROWTH)
                .layer_plan(30_000, 1e-6, i)
                .unwrap();
            assert_eq!(layer.layout.scheme, Scheme::Sectored, "layer {i}");
        }
        let mut p = 0.1f64;
        while p >= 0.99e-9 {
            let (scattered, _) = scattered_plans(10_000_000, p).unwrap();
            let chosen = plan(10_000_000, p).unwrap();
            let premium = chosen.layout.nblocks as f64 / scattered.layout.nblocks as f64 - 1.0;
            assert!(premium <= SECTORED_PREMIUM + 1e-12, "p={p}: {premium}");
            p /= 10f64.powf(0.125);
        }
    }

    #[test]
    fn chosen_plans_are_within_ten_percent_of_textbook() {
        let mut p = 0.1f64;
        while p >= 0.99e-9 {
            let n = 10_000_000;
            let plan = plan(n, p).unwrap();
            let textbook = -p.ln() / (std::f64::consts::LN_2 * std::f64::consts::LN_2);
            let ratio = plan.bits_per_key() / textbook;
            println!(
                "p={p:.0e} x={} k={} bits/key={:.2} ratio={ratio:.3}",
                plan.layout.blocks_per_key,
                plan.layout.k,
                plan.bits_per_key()
            );
            assert!(ratio <= 1.10, "p={p}: ratio {ratio}");
            assert!(plan.expected_fpp <= p, "p={p}: {}", plan.expected_fpp);
            plan.layout.validate().unwrap();
            p /= 10f64.powf(0.125);
        }
    }

    #[test]
    fn tiny_and_odd_inputs() {
        let plan = plan(0, 0.5).unwrap();
        assert_eq!(plan.layout.nblocks, 64);
        assert_eq!(plan.capacity, 1);
        for bad in [0.0, 1.0, -1.0, f64::NAN, f64::INFINITY, 1e-16] {
            assert!(
                matches!(super::plan(10, bad), Err(SizingError::BadFpp(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            super::plan(u64::MAX, 1e-6),
            Err(SizingError::TooLarge { .. })
        ));
    }

    #[test]
    fn formula_survives_absurd_loads() {
        for n in [1e7, 1e12, 1.8e19, f64::MAX] {
            for x in [1, 2, 4] {
                let f = blocked_fpp(n, 64.0, 7, x, Scheme::Scattered);
                assert!((0.999..=1.0).contains(&f), "n={n} x={x}: {f}");
            }
        }
    }

    /// The blocked formula (shortened load table, reciprocals) against a
    /// straightforward evaluation of the same sum: a table as long as the page
    /// loads, and a division per step.
    #[test]
    fn formula_matches_a_plain_evaluation() {
        fn plain(n: f64, nblocks: f64, k: u32, x: u32, scheme: Scheme) -> f64 {
            let per_page = BLOCKS_PER_PAGE as f64;
            let lambda_page = n * per_page / nblocks;
            let (jlo, jhi) = span(lambda_page, lambda_page.sqrt(), 6.0, usize::MAX);
            let lf = ln_factorials(jhi + 2);
            let q = q_table(k, scheme, jhi + 1);
            let s = x as f64 / per_page;
            let mut total = 0.0;
            for (wj, j) in poisson(lambda_page, jlo, jhi, &lf).iter().zip(jlo..) {
                let mean = j as f64 * s;
                let (ilo, ihi) = span(mean, (mean * (1.0 - s)).sqrt(), 6.0, j);
                let mut pmf = (lf[j] - lf[ilo] - lf[j - ilo]
                    + ilo as f64 * s.ln()
                    + (j - ilo) as f64 * (1.0 - s).ln())
                .exp();
                let mut inner = 0.0;
                for (i, qi) in q.iter().enumerate().take(ihi + 1).skip(ilo) {
                    inner += pmf * qi;
                    pmf *= (j - i) as f64 / (i + 1) as f64 * s / (1.0 - s);
                }
                total += wj * inner.powi(x as i32);
            }
            total
        }
        for (bits_per_key, k, x, scheme) in [
            (31.5, 8, 2, Scheme::Sectored),
            (34.0, 8, 3, Scheme::Sectored),
            (45.9, 8, 4, Scheme::Sectored),
            (31.1, 9, 2, Scheme::Scattered),
            (33.0, 5, 4, Scheme::Scattered),
            (12.0, 3, 2, Scheme::Scattered),
            (200.0, 16, 2, Scheme::Sectored),
        ] {
            let n = 1e7;
            let nblocks = n * bits_per_key / BLOCK_BITS as f64;
            let got = blocked_fpp(n, nblocks, k, x, scheme);
            let want = plain(n, nblocks, k, x, scheme);
            assert!(
                ((got - want) / want).abs() < 1e-10,
                "{bits_per_key} bits/key k={k} x={x} {scheme:?}: {got} vs {want}"
            );
        }
    }

    /// The search ends close to the smallest filter: a plan meets its target,
    /// and one 0.2 % smaller (rounded down to whole pages, best k) does not.
    #[test]
    fn plans_are_nearly_the_smallest_that_meet_the_target() {
        for (n, p, x, scheme) in [
            (10_000_000, 1e-6, 2, Scheme::Sectored),
            (10_000_000, 2e-7, 3, Scheme::Sectored),
            (1_000_000, 1e-3, 1, Scheme::Sectored),
            (100_000_000, 1e-9, 4, Scheme::Scattered),
            (10_000_000, 1e-4, 2, Scheme::Scattered),
        ] {
            let plan = plan_with_spread(n, p, x, scheme).unwrap();
            assert!(plan.expected_fpp <= p);
            let smaller =
                (plan.layout.nblocks as f64 * 0.998) as u64 / BLOCKS_PER_PAGE * BLOCKS_PER_PAGE;
            assert!(smaller < plan.layout.nblocks, "n={n} p={p}");
            let (_, f) = best_k(n as f64, smaller as f64, x, scheme, plan.layout.k);
            assert!(
                f > p,
                "n={n} p={p} x={x}: {smaller} blocks meet it too ({f})"
            );
        }
    }

    #[test]
    fn formula_sums_to_one_when_saturated() {
        // With every key in a handful of blocks, every query is a false positive.
        assert!((blocked_fpp(1e6, 64.0, 3, 1, Scheme::Scattered) - 1.0).abs() < 1e-9);
        let two = blocked_fpp(1e6, 64.0, 3, 2, Scheme::Scattered);
        assert!((two - 1.0).abs() < 1e-6, "{two}");
    }
}
