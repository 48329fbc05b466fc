//! `seen stats --probe`: the false-positive rate measured by looking up
//! lines known to be absent, with its 95 % interval.

use crate::cli::RecordArgs;
use crate::input::Source;
use crate::job::{Job, Output};
use crate::pipeline::{Chunk, Mode, Taken};
use crate::progress::Show;
use crate::store::{Opened, Where};
use anyhow::{Result, bail};
use serde::Serialize;
use std::path::Path;

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
    pub(super) fn shown(&self) -> &str {
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

/// Looks up the lines of the probe `sources` (named `file`) in the filter
/// `store` (opened from its `Where`) as `seen query --file FILE FILTER` does:
/// the same records (newline-terminated, default threads and mapping), the
/// filter's recorded key options, the same pipeline. Returns the measured
/// rate.
///
/// # Errors
/// An unreadable probe, a store error, or a probe without a line.
pub(super) fn measure(
    sources: Vec<Source>,
    file: &Path,
    (at, store): (Where, Opened),
    progress: Show,
) -> Result<ProbeStats> {
    let mut opts = crate::cmd::options(RecordArgs {
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
}
