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

/// Distinct keys a layer has been offered when `counted` of them were judged
/// new by it (and inserted): a key offered while the layer's rate is `f`
/// is counted with probability `1 − f`, so the count after `n` keys is
/// `c(n) = ∫₀ⁿ (1 − f(x)) dx`, and this inverts it. A key taken for a present
/// one sets no bit that was not set, so the layer's bits, and its rate, are
/// those of the keys offered, not of the keys counted: an over-full layer's
/// rate is `f(keys_offered(c))`, higher than `f(c)` (a `--fixed -n 10k
/// -p 1e-2` filter that counted 26,000 holds bits of about 53,000). Counts
/// no filter of this layout can reach are held at the count where its rate
/// is `1 − 10⁻⁶`.
pub fn keys_offered(layout: &Layout, counted: u64) -> f64 {
    Offered::new(layout).at(counted as f64)
}

/// Keys a layer counts (judges new) by the time its false-positive rate
/// reaches `rate`: [`keys_at_rate`] keys offered, less those it took for
/// present on the way (`c(n) = ∫₀ⁿ (1 − f)`, see [`keys_offered`]); the same
/// edge cases.
pub fn counted_at_rate(layout: &Layout, rate: f64) -> u64 {
    let n = keys_at_rate(layout, rate);
    if n == 0 || n == u64::MAX {
        return n;
    }
    Offered::new(layout).count_at(n as f64).floor() as u64
}

/// The keys offered to a layer at counts that only rise ([`keys_offered`]),
/// walking `c(n)` once: trapezoids on a grid of the layout's own (so that
/// two counts share it), even steps of a 4096th of its bits, then steps of
/// a 64th of the count, where the rate rises slowly in log scale.
struct Offered<'a> {
    layout: &'a Layout,
    h0: f64,
    /// The walk so far: keys offered, keys counted, the rate there.
    x: f64,
    c: f64,
    fx: f64,
}

impl<'a> Offered<'a> {
    /// Highest rate walked to: counts no layer reaches stop there.
    const MAX_RATE: f64 = 1.0 - 1e-6;

    fn new(layout: &'a Layout) -> Self {
        let mut o = Offered {
            layout,
            h0: (layout.bits() as f64 / 4096.0).max(1.0),
            x: 0.0,
            c: 0.0,
            fx: 0.0,
        };
        o.fx = o.f(0.0);
        o
    }

    fn f(&self, x: f64) -> f64 {
        layer_fpp(self.layout, x.round() as u64).min(Self::MAX_RATE)
    }

    /// The next step of the walk: its width, the rate at its end, and the
    /// keys counted over it (a trapezoid).
    fn step(&self) -> (f64, f64, f64) {
        let h = self.h0.max(self.x / 64.0);
        let fy = self.f(self.x + h);
        (h, fy, h * (1.0 - (self.fx + fy) / 2.0))
    }

    /// Takes step `s` ([`Offered::step`]).
    fn take(&mut self, (h, fy, dc): (f64, f64, f64)) {
        self.x += h;
        self.c += dc;
        self.fx = fy;
    }

    /// The rate at `x1`, within the next step, and the keys counted when
    /// `x1` were offered (the trapezoid from the walk's point to it).
    fn part(&self, x1: f64) -> (f64, f64) {
        let f1 = self.f(x1);
        (f1, self.c + (x1 - self.x) * (1.0 - (self.fx + f1) / 2.0))
    }

    /// The keys offered when `target` were counted (at least the last
    /// target asked).
    fn at(&mut self, target: f64) -> f64 {
        for _ in 0..4096 {
            if self.fx >= Self::MAX_RATE {
                break;
            }
            let s @ (h, _, dc) = self.step();
            if self.c + dc >= target {
                // Within the step: a linear guess, then one Newton step on
                // the trapezoid from `x` to it.
                let x1 = self.x + h * (target - self.c) / dc;
                let (f1, c1) = self.part(x1);
                return x1 + (target - c1) / (1.0 - f1);
            }
            self.take(s);
        }
        self.x.max(target)
    }

    /// The keys counted when `n` were offered (the inverse of
    /// [`Offered::at`]; `n` at least the walk's point).
    fn count_at(&mut self, n: f64) -> f64 {
        while self.fx < Self::MAX_RATE {
            let s @ (h, ..) = self.step();
            if self.x + h >= n {
                break;
            }
            self.take(s);
        }
        self.part(n.max(self.x)).1
    }
}

/// False-positive rate of a layer that counted `counted` keys judged new:
/// the rate at the keys it was offered ([`keys_offered`]).
pub fn counted_fpp(layout: &Layout, counted: u64) -> f64 {
    layer_fpp(layout, keys_offered(layout, counted).round() as u64)
}

/// Expected number of new keys wrongly taken for present ones (false
/// positives) while layer `i` went from `before` to `after` keys counted
/// (judged new), for each `(layout, before, after)` oldest first. While a
/// layer fills, every older layer is complete, so the rate at the moment a
/// key arrives is `r = 1 − Π_older (1 − f_o) · (1 − f_i)`, each `f` at the
/// keys its layer was offered ([`keys_offered`]), and between two keys
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
            let mut offered = Offered::new(layout);
            // Between two lines judged new, a filter whose rate is `r` takes
            // `r / (1 − r)` new lines for seen ones on average (each new
            // line is judged new with probability 1 − r): 1 at r = 0.5, 44
            // at 0.978, not `r`.
            let mut at = |j: u64| {
                let n = offered.at(*before as f64 + j as f64 * width);
                let f = layer_fpp(layout, n.round() as u64);
                let r = -(older_log_keep + (-f).ln_1p()).exp_m1();
                let r = r.min(MAX_RATE);
                r / (1.0 - r)
            };
            let first = at(0);
            let inner: f64 = (1..steps).map(&mut at).sum();
            total += width * (inner + (first + at(steps)) / 2.0);
        }
        older_log_keep += (-counted_fpp(layout, *after)).ln_1p();
    }
    total
}
