//! The environment switches, read once by `main` into one struct
//! ([`Tuning::from_env`], then [`install`]) and consulted through [`get`].
//! None is for everyday use: they exist so tests can reach edges (chunk
//! boundaries, long records, sampling, the portable kernels) and benchmarks can
//! compare choices. A library user (a benchmark, a test) gets the defaults
//! unless it installs its own.
//!
//! | variable | field |
//! |---|---|
//! | `RAYON_NUM_THREADS` | [`Tuning::threads`] |
//! | `SEEN_CHUNK_BYTES` | [`Tuning::chunk_bytes`] |
//! | `SEEN_LONG_RECORD_BYTES` | [`Tuning::long_record_bytes`] |
//! | `SEEN_SAMPLE_MIN_BYTES` | [`Tuning::sample_min_bytes`] |
//! | `SEEN_PROGRESS_DELAY_MS` | [`Tuning::progress_delay`] |
//! | `SEEN_NO_HUGEPAGE` | [`Tuning::huge_pages`] (off when set) |
//! | `SEEN_PORTABLE` | [`Tuning::portable_kernels`] |
//! | `SEEN_SCATTERED_ONLY` | [`Tuning::scattered_only`] |
//! | `SEEN_HOLD` | [`Tuning::hold`] (`always` or `never`) |
//! | `SEEN_NO_POPULATE` | [`Tuning::populate`] (off when set) |
//! | `SEEN_FORGET_BATCH` | [`Tuning::forget_batch`] |

use std::sync::OnceLock;
use std::time::Duration;

/// The switches, each `None`/`false` (the built-in default) unless set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Hashing threads when `-j` is not given (else the CPUs).
    pub threads: Option<usize>,
    /// Bytes of records per chunk (else `pipeline::CHUNK_BYTES`).
    pub chunk_bytes: Option<usize>,
    /// Length past which a record is hashed as it streams by (else
    /// `pipeline::LONG_RECORD_BYTES`).
    pub long_record_bytes: Option<usize>,
    /// Size from which input files are sampled rather than counted (else
    /// `input::SAMPLE_MIN_BYTES`).
    pub sample_min_bytes: Option<u64>,
    /// How long work runs before progress is shown (else `progress::DELAY`).
    pub progress_delay: Option<Duration>,
    /// Ask for transparent huge pages on filter mappings.
    pub huge_pages: bool,
    /// Use the portable kernels even where AVX2 is available.
    pub portable_kernels: bool,
    /// Size filters with scattered bit positions only (no sectored layouts).
    pub scattered_only: bool,
    /// Whether `dedup -f` holds a filter file in memory in every commit
    /// span (`Some(true)`) or in none (`Some(false)`), rather than in the
    /// dense ones.
    pub hold: Option<bool>,
    /// Fault a new layer's memory in on a helper thread (`file::populate`).
    pub populate: bool,
    /// Keys `seen forget` commits at once (else `cmd::forget`'s 1M).
    pub forget_batch: Option<usize>,
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            threads: None,
            chunk_bytes: None,
            long_record_bytes: None,
            sample_min_bytes: None,
            progress_delay: None,
            huge_pages: true,
            portable_kernels: false,
            scattered_only: false,
            hold: None,
            populate: true,
            forget_batch: None,
        }
    }
}

impl Tuning {
    /// The switches as the environment sets them. A number that does not
    /// parse (or, where 0 means nothing, is 0) is ignored.
    pub fn from_env() -> Tuning {
        Tuning::from_lookup(|name| std::env::var(name).ok())
    }

    /// The switches as `var` gives them, by variable name.
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Tuning {
        let positive = |name: &str| {
            var(name)
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|&n| n > 0)
        };
        let set = |name: &str| var(name).is_some();
        Tuning {
            threads: positive("RAYON_NUM_THREADS"),
            chunk_bytes: positive("SEEN_CHUNK_BYTES"),
            long_record_bytes: positive("SEEN_LONG_RECORD_BYTES"),
            sample_min_bytes: var("SEEN_SAMPLE_MIN_BYTES").and_then(|v| v.trim().parse().ok()),
            progress_delay: var("SEEN_PROGRESS_DELAY_MS")
                .and_then(|v| v.parse().ok())
                .map(Duration::from_millis),
            huge_pages: !set("SEEN_NO_HUGEPAGE"),
            portable_kernels: set("SEEN_PORTABLE"),
            scattered_only: set("SEEN_SCATTERED_ONLY"),
            hold: match var("SEEN_HOLD").as_deref().map(str::trim) {
                Some("always") => Some(true),
                Some("never") => Some(false),
                _ => None,
            },
            populate: !set("SEEN_NO_POPULATE"),
            forget_batch: positive("SEEN_FORGET_BATCH"),
        }
    }
}

static INSTALLED: OnceLock<Tuning> = OnceLock::new();

/// Makes `t` the switches of this process (once: a later call changes
/// nothing). `main` calls it first thing.
pub fn install(t: Tuning) {
    let _ = INSTALLED.set(t);
}

/// The switches installed, else the defaults.
pub fn get() -> Tuning {
    INSTALLED.get().copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_come_from_their_variables() {
        let none = Tuning::from_lookup(|_| None);
        assert_eq!(none, Tuning::default());
        let vars = [
            ("RAYON_NUM_THREADS", "3"),
            ("SEEN_CHUNK_BYTES", " 17 "),
            ("SEEN_LONG_RECORD_BYTES", "0"),
            ("SEEN_SAMPLE_MIN_BYTES", "0"),
            ("SEEN_PROGRESS_DELAY_MS", "250"),
            ("SEEN_NO_HUGEPAGE", ""),
            ("SEEN_PORTABLE", "1"),
            ("SEEN_HOLD", "never"),
            ("SEEN_NO_POPULATE", "1"),
            ("SEEN_FORGET_BATCH", "5000"),
        ];
        let t = Tuning::from_lookup(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        });
        assert_eq!(t.threads, Some(3));
        assert_eq!(t.chunk_bytes, Some(17));
        assert_eq!(t.long_record_bytes, None, "0 is ignored");
        assert_eq!(t.sample_min_bytes, Some(0), "0 samples every file");
        assert_eq!(t.progress_delay, Some(Duration::from_millis(250)));
        assert!(!t.huge_pages && t.portable_kernels && !t.scattered_only);
        assert_eq!(t.hold, Some(false));
        assert!(!t.populate);
        assert_eq!(t.forget_batch, Some(5000));
        let hold =
            |v: &str| Tuning::from_lookup(|n| (n == "SEEN_HOLD").then(|| v.to_string())).hold;
        assert_eq!(hold("always"), Some(true));
        assert_eq!(hold("sometimes"), None, "anything else: the default");
    }
}
