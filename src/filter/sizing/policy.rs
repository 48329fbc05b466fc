//! Sizing policy: how the sizing flags and what is known of the input become
//! the spec of a new filter. The mathematics lives in the parent module; this
//! is where a new rule for picking a size goes.

use super::{
    DEFAULT_GROWTH, DEFAULT_SLICES, Growth, Plan, SizingError, Spec, Window, plan, plan_with_spread,
};

/// Default target false-positive rate for new filters.
pub const DEFAULT_FPP: f64 = 1e-6;
/// Capacity of a filter (of its first layer, when it grows) when `-n` is not
/// given and the input cannot be counted.
pub const DEFAULT_CAPACITY: u64 = 10_000_000;

/// How an in-memory filter sized from its input grows (a sampled line count,
/// or a counted one: a file can grow while it is read). Its first layer, sized
/// for the count or the estimate plus 5 % with the layout a counted run would
/// get, has 0.9 of the target rate (about 0.2 more bits per key at 1e-6). Should
/// the estimate be low, each layer past it has 4 times the capacity and a tenth
/// of the rate of the one before, so the compound rate stays under the target
/// (0.9 · Σ 0.1^i = 1) however far off the estimate is. A file holds at most one
/// record per byte against at least one per 4 KiB estimated: 7 layers (5,461
/// times the first capacity) hold 1.3 times that.
pub const SAMPLED_GROWTH: Growth = Growth {
    factor: 4,
    ratio: 0.1,
};
/// Below this target, sampled sizing is not used and the lines are counted:
/// at 1e-7 the 8th layer (one to spare) still has a rate of 9e-15, over the
/// smallest a layer may have ([`MIN_FPP`](super::MIN_FPP)).
pub const SAMPLED_MIN_FPP: f64 = 1e-7;

/// The sizing flags as given (`-n`, `-p`, `--growth`, `--fixed`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Asked {
    /// `-n`: distinct lines to size for.
    pub capacity: Option<u64>,
    /// `-p`: target false-positive rate.
    pub fpp: Option<f64>,
    /// `--growth`: factor of each new layer.
    pub growth: Option<u32>,
    /// `--fixed`: never grow.
    pub fixed: bool,
    /// `--window`: forget lines after this many seconds.
    pub window: Option<u64>,
    /// `--slices`: slices per window.
    pub slices: Option<u32>,
}

impl Asked {
    /// The target rate, asked or default.
    pub fn fpp(&self) -> f64 {
        self.fpp.unwrap_or(DEFAULT_FPP)
    }

    /// The spec of a new filter, for `capacity` lines when `-n` is not given.
    pub fn spec(&self, capacity: u64) -> Spec {
        Spec {
            capacity: self.capacity.unwrap_or(capacity).max(1),
            target_fpp: self.fpp(),
            growth: (!self.fixed).then(|| Growth::new(self.growth.unwrap_or(DEFAULT_GROWTH))),
            window: self.window.map(|secs| Window {
                secs,
                slices: self.slices.unwrap_or(DEFAULT_SLICES),
            }),
        }
    }

    /// Whether an in-memory filter for these flags may be sized from a
    /// sample of the input rather than a count: when it can grow past a low
    /// estimate and keep its target (see [`SAMPLED_GROWTH`]).
    pub fn may_sample(&self) -> bool {
        !self.fixed && self.fpp() >= SAMPLED_MIN_FPP
    }
}

/// What is known of the input's size, to size a filter for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// Every input file was counted: this many records.
    Counted(u64),
    /// At least one file was sampled: about this many records.
    Estimated(u64),
    /// Not measured (`-n` given), or not measurable (standard input, a pipe).
    Unknown,
}

impl Measured {
    /// The records to size for: those counted, or the estimate plus 5 %.
    pub fn lines(self) -> Option<u64> {
        match self {
            Measured::Counted(n) => Some(n),
            Measured::Estimated(n) => Some(n + n / 20),
            Measured::Unknown => None,
        }
    }
}

/// The layers of a new in-memory filter: its spec, and a first layer other
/// than the spec's own when it is sized from the input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layers {
    /// The spec (capacity and rate; growth past the first layer).
    pub spec: Spec,
    /// The first layer, when not `spec.layer(0)`.
    pub first: Option<Plan>,
}

/// The layers of the in-memory filter of `dedup` without `-f`, for `asked`
/// and the input as `measured` (when `-n` was not given).
///
/// Sized from the input (counted or sampled), the first layer has the layout
/// a counted run would get, for 0.9 of the target rate, and the filter grows by
/// [`SAMPLED_GROWTH`] past it. A count is exact only for the file as it was: a
/// file still being written (a log, another process's output) can hold more
/// lines by the time they are read, and a full fixed layer would then call
/// most of them seen. Below [`SAMPLED_MIN_FPP`] those layers' rates would soon
/// pass the smallest a layer may have: the default growth (first layer 0.2 p)
/// is used, and where even that is too tight, one fixed layer at p.
///
/// # Errors
/// When the first layer cannot be sized.
pub fn in_memory(asked: &Asked, measured: Measured) -> Result<Layers, SizingError> {
    let capacity = measured.lines().unwrap_or(DEFAULT_CAPACITY);
    let spec = asked.spec(capacity);
    // A window's capacity is lines per window, which the input's size does
    // not tell.
    let from_input = measured != Measured::Unknown
        && asked.window.is_none()
        && asked.capacity.is_none()
        && asked.growth.is_none()
        && !asked.fixed;
    if from_input && spec.target_fpp >= SAMPLED_MIN_FPP {
        return from_count(spec.capacity, spec.target_fpp);
    }
    if from_input && spec.layer(0).is_err() {
        let fixed = Spec {
            growth: None,
            ..spec
        };
        return Ok(Layers {
            spec: fixed,
            first: None,
        });
    }
    Ok(Layers { spec, first: None })
}

/// The layers for `capacity` lines counted or estimated in the input, at
/// target rate `fpp`: a first layer with the layout a counted run would get,
/// for 0.9 of the rate, growing by [`SAMPLED_GROWTH`] past it.
///
/// # Errors
/// When it cannot be sized.
pub fn from_count(capacity: u64, fpp: f64) -> Result<Layers, SizingError> {
    let spec = Spec {
        capacity,
        target_fpp: fpp,
        growth: Some(SAMPLED_GROWTH),
        window: None,
    };
    let like = plan(capacity, fpp)?;
    let first = plan_with_spread(
        capacity,
        SAMPLED_GROWTH.layer_fpp(fpp, 0),
        like.layout.blocks_per_key,
        like.layout.scheme,
    )?;
    Ok(Layers {
        spec,
        first: Some(first),
    })
}

/// The in-memory filter of the lines `dedup -d` has printed (each repeated
/// line once): its first layer for 1M lines, growing by the default rule, at
/// the run's target rate (a false positive there is a repeated line not
/// printed).
pub fn printed_repeats(fpp: f64) -> Spec {
    Spec {
        capacity: 1_000_000,
        target_fpp: fpp,
        growth: Some(Growth::new(DEFAULT_GROWTH)),
        window: None,
    }
}

/// The capacity of a filter file that `dedup -f` creates when it is missing:
/// the input's lines when they were counted or estimated
/// ([`Measured::lines`]), but at least
/// [`DEFAULT_CAPACITY`] (a filter file remembers across runs: the first run's
/// input is rarely all it will hold).
pub fn for_new_file(counted: Option<u64>) -> u64 {
    counted.unwrap_or(0).max(DEFAULT_CAPACITY)
}

/// How many keys a run may insert into a filter file, which picks the page
/// size of its mappings: the records when they were counted, else one per 16
/// bytes of the input files (a rough estimate, high for lines of URLs; repeats
/// count too), else unknown (standard input, a pipe or not).
pub fn expected_keys(counted: Option<u64>, input_bytes: Option<u64>) -> Option<u64> {
    counted.or_else(|| input_bytes.map(|b| b / 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags' defaults, and what a count or an estimate of the input
    /// makes of an in-memory filter.
    #[test]
    fn in_memory_layers_follow_the_input_unless_flags_say_otherwise() {
        let none = Asked::default();
        assert_eq!(none.spec(5).capacity, 5);
        assert_eq!(none.spec(0).capacity, 1, "never empty");
        assert_eq!(none.spec(5).target_fpp, DEFAULT_FPP);
        let l = in_memory(&none, Measured::Counted(1000)).unwrap();
        assert_eq!(l.spec.growth, Some(SAMPLED_GROWTH));
        assert_eq!(l.spec.capacity, 1000);
        assert!(l.first.is_some());
        let l = in_memory(&none, Measured::Estimated(1000)).unwrap();
        assert_eq!(l.spec.capacity, 1050, "an estimate gets 5 % more");
        let l = in_memory(&none, Measured::Unknown).unwrap();
        assert_eq!(l.spec.capacity, DEFAULT_CAPACITY);
        assert_eq!(l.first, None);
        assert_eq!(l.spec.growth, Some(Growth::new(DEFAULT_GROWTH)));
        let fixed = Asked {
            fixed: true,
            ..none
        };
        let l = in_memory(&fixed, Measured::Counted(1000)).unwrap();
        assert_eq!((l.spec.growth, l.first), (None, None));
        let tight = Asked {
            fpp: Some(1e-9),
            ..none
        };
        assert!(!tight.may_sample());
        let l = in_memory(&tight, Measured::Counted(1000)).unwrap();
        assert_eq!(l.first, None, "below 1e-7: the default growth");
        assert_eq!(l.spec.growth, Some(Growth::new(DEFAULT_GROWTH)));
        let tightest = Asked {
            fpp: Some(1e-15),
            ..none
        };
        let l = in_memory(&tightest, Measured::Counted(1000)).unwrap();
        assert_eq!(l.spec.growth, None, "too tight to grow: one fixed layer");
        assert_eq!(for_new_file(Some(5)), DEFAULT_CAPACITY);
        assert_eq!(
            for_new_file(Some(DEFAULT_CAPACITY + 1)),
            DEFAULT_CAPACITY + 1
        );
        assert_eq!(expected_keys(None, Some(1600)), Some(100));
        assert_eq!(expected_keys(Some(7), Some(1600)), Some(7));
    }
}
