//! What a filter is made for, beyond one layer: how it grows ([`Growth`]),
//! its time window ([`Window`]) and the whole [`Spec`].

use super::{MIN_FPP, Plan, SizingError, plan};

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
