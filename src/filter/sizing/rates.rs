//! The rates of layers that hold keys: one layer's, the compound rate of
//! several, the counts where a rate passes a target, and the false
//! positives expected while layers filled.

use super::blocked_fpp;
use crate::filter::Layout;

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
/// `r = 1 − Π_older (1 − f_o) · (1 − f_i(count))`, and between two keys
/// judged new `r / (1 − r)` new keys are taken for present ones on average;
/// this integrates that over the inserts (trapezoids, 64 per layer; the rate
/// is smooth and increasing).
pub fn expected_false_positives(layers: &[(Layout, u64, u64)]) -> f64 {
    // A rate of 1 would take every new line for seen: none would be judged
    // new, so a span with new lines never has it; capped for rounding.
    const MAX_RATE: f64 = 1.0 - 1e-9;
    let mut total = 0.0;
    // ln Π_older (1 − f_o), kept as a sum of logs (see `any_of`).
    let mut older_log_keep = 0.0;
    for (layout, before, after) in layers {
        if after > before {
            let steps = 64u64.min(after - before);
            let width = (after - before) as f64 / steps as f64;
            // Between two lines judged new, a filter whose rate is `r` takes
            // `r / (1 − r)` new lines for seen ones on average (each new
            // line is judged new with probability 1 − r): 1 at r = 0.5, 44
            // at 0.978, not `r`.
            let at = |j: u64| {
                let n = *before as f64 + j as f64 * width;
                let f = layer_fpp(layout, n.round() as u64);
                let r = -(older_log_keep + (-f).ln_1p()).exp_m1();
                let r = r.min(MAX_RATE);
                r / (1.0 - r)
            };
            let inner: f64 = (1..steps).map(at).sum();
            total += width * (inner + (at(0) + at(steps)) / 2.0);
        }
        older_log_keep += (-layer_fpp(layout, *after)).ln_1p();
    }
    total
}
