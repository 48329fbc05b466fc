//! The false-positive formulas: the textbook classic ones, and the exact
//! rate of a blocked layout (the module docs of [`sizing`](super) give the
//! formula), with the best `k` for a geometry.

use crate::filter::{BLOCK_BITS, BLOCKS_PER_PAGE, MAX_K, Scheme};

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
pub(super) fn ln_factorials(len: usize) -> Vec<f64> {
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
pub(super) fn span(mean: f64, sd: f64, width: f64, max: usize) -> (usize, usize) {
    let lo = (mean - width * sd - width).floor().max(0.0) as usize;
    let hi = ((mean + width * sd + width).ceil() as usize).min(max);
    (lo, hi)
}

/// Poisson(λ) probabilities over `lo..=hi`, via ln-factorials then a recurrence.
pub(super) fn poisson(lambda: f64, lo: usize, hi: usize, lf: &[f64]) -> Vec<f64> {
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
pub(super) fn q_table(k: u32, scheme: Scheme, len: usize) -> Vec<f64> {
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
pub(super) struct PageSums {
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
pub(super) fn best_k(n: f64, nblocks: f64, x: u32, scheme: Scheme, hint: u32) -> (u32, f64) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
