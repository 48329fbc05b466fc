//! Plans: from a capacity and a target rate to a [`Plan`] (a layout with
//! what it was sized for), for a given spread, the best one, or one that
//! sets few bits per key.

use super::fpp::best_k;
use super::{MAX_BYTES, MIN_FPP, Plan, SPREAD_SAVING, SizingError, blocked_fpp, classic_bits};
use crate::filter::{BLOCK_BITS, BLOCKS_PER_PAGE, Layout, MAX_K, Scheme};

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
pub(super) fn scattered_plans(n: u64, p: f64) -> Result<(Plan, Vec<Plan>), SizingError> {
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
