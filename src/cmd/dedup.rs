//! `seen dedup`: print each line the first time it is seen, in input order.

use super::{Summary, counted, expected_keys, keys, layer_counts, options, spec};
use crate::cli::{DEFAULT_CAPACITY, DEFAULT_FPP, DedupArgs};
use crate::file::{MemFilter, NewFilter, Target, WriteFilter, check_target};
use crate::filter::sizing::{self, Growth, Spec};
use crate::hash::DEFAULT_SEED;
use crate::input::{Records, estimate_records, sources, total_bytes};
use crate::output::stdout;
use crate::pipeline::{Chunk, Commit, Counts, Mode, Options, Store, run as pipeline};
use crate::progress::Progress;
use crate::units::Every;
use anyhow::{Context, Result, bail};
use std::io::{self, IoSlice, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// Lines per commit window of `dedup -f` by default.
pub const DEFAULT_COMMIT_LINES: u64 = 1_000_000;
/// Time per commit window of `dedup -f` by default.
pub const DEFAULT_COMMIT_TIME: Duration = Duration::from_secs(1);

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
/// smallest a layer may have ([`MIN_FPP`](crate::filter::sizing::MIN_FPP)).
pub const SAMPLED_MIN_FPP: f64 = 1e-7;

/// Whether standard output is a regular file (its data must be synced before the
/// lines it holds are recorded).
fn stdout_is_file() -> bool {
    rustix::fs::fstat(std::io::stdout())
        .map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file())
        .unwrap_or(false)
}

/// Runs `seen dedup`.
///
/// # Errors
/// Bad arguments, unreadable inputs, a filter that cannot be opened or written,
/// or a failed write to standard output.
pub fn run(a: DedupArgs) -> Result<ExitCode> {
    let mut opts = options(a.records);
    let sources = sources(&a.files);
    let mut out = stdout();
    let Some(path) = &a.filter else {
        opts.keys = keys(&a.keys, None);
        // Large files are sampled rather than counted when the filter can grow
        // past a low estimate and keep its target (see `SAMPLED_GROWTH`).
        let fpp = a.size.fpp.unwrap_or(DEFAULT_FPP);
        let sample = !a.size.fixed && fpp >= SAMPLED_MIN_FPP;
        let mut records = None;
        let spec = spec(&a.size, || {
            records = if sample {
                estimate_records(&sources, opts.term, opts.threads, opts.mmap)?
            } else {
                counted(&sources, &opts)?.map(Records::Counted)
            };
            Ok(match records {
                Some(Records::Counted(n)) => n,
                Some(Records::Estimated(n)) => n + n / 20,
                None => DEFAULT_CAPACITY,
            })
        })?;
        // Sized from the input (counted or sampled): the first layer has the
        // layout a counted run would get, for 0.9 of the target rate, and the
        // filter grows by `SAMPLED_GROWTH` past it. A count is exact only for
        // the file as it was: a file still being written (a log, another
        // process's output) can hold more lines by the time they are read,
        // and a full fixed layer would then call most of them seen.
        // Below `SAMPLED_MIN_FPP` those layers' rates would soon pass the
        // smallest a layer may have: the default growth (first layer 0.2 p)
        // is used, and where even that is too tight, one fixed layer at p.
        let from_input = records.is_some() && a.size.growth.is_none() && !a.size.fixed;
        let mut f = if from_input && spec.target_fpp >= SAMPLED_MIN_FPP {
            sized_from_input(spec.capacity, spec.target_fpp)?
        } else if from_input && spec.layer(0).is_err() {
            let fixed = Spec {
                growth: None,
                ..spec
            };
            MemFilter::with_spec(&fixed, DEFAULT_SEED)?
        } else {
            MemFilter::with_spec(&spec, DEFAULT_SEED)?
        };
        let progress = Progress::start(a.progress.into(), total_bytes(&sources), "lines", true);
        let result = dedup(&sources, opts, &mut f, a.repeated, Mode::Insert, &mut out);
        drop(progress);
        let (counts, written) = result?;
        if a.summary {
            Summary::new(&counts, Some(written), opts.keys, &[], f.header()).print(a.json);
        }
        return Ok(ExitCode::SUCCESS);
    };
    if !path.exists() {
        create(path, &a, &sources, &opts)?;
    } else if a.size.any() {
        eprintln!(
            "seen: warning: {} already exists: sizing flags are ignored (they only size a new filter)",
            path.display()
        );
    }
    let mut f = WriteFilter::open(path, expected_keys(None, &sources))?;
    opts.keys = keys(&a.keys, Some((f.header().keys, path)));
    let before = layer_counts(f.header());
    let (lines, every) = match a.commit_every {
        Some(Every::Lines(n)) => (n, Duration::MAX),
        Some(Every::Time(t)) => (u64::MAX, t),
        None => (DEFAULT_COMMIT_LINES, DEFAULT_COMMIT_TIME),
    };
    let commit = Commit {
        lines,
        every,
        sync_output: stdout_is_file(),
    };
    // With --repeated, the lines printed are the ones already seen: the new
    // ones are never printed, so nothing waits for the output.
    let mode = if a.repeated {
        Mode::Insert
    } else {
        Mode::Deferred(commit)
    };
    let progress = Progress::start(a.progress.into(), total_bytes(&sources), "lines", true);
    let result = dedup(&sources, opts, &mut f, a.repeated, mode, &mut out);
    drop(progress);
    f.commit()?;
    let (counts, written) = result?;
    if a.summary {
        Summary::new(&counts, Some(written), opts.keys, &before, f.header()).print(a.json);
    }
    Ok(ExitCode::SUCCESS)
}

/// The in-memory filter for `capacity` lines counted or estimated in the
/// input, at target rate `fpp`: a first layer with the layout a counted run
/// would get, for 0.9 of the rate, growing by [`SAMPLED_GROWTH`] past it.
///
/// # Errors
/// When it cannot be sized or its memory cannot be had.
fn sized_from_input(capacity: u64, fpp: f64) -> Result<MemFilter> {
    let spec = Spec {
        capacity,
        target_fpp: fpp,
        growth: Some(SAMPLED_GROWTH),
    };
    let like = sizing::plan(capacity, fpp)?;
    let first = sizing::plan_with_spread(
        capacity,
        SAMPLED_GROWTH.layer_fpp(fpp, 0),
        like.layout.blocks_per_key,
        like.layout.scheme,
    )?;
    MemFilter::with_first(&spec, &first, DEFAULT_SEED)
}

/// Streams the sources through `filter`, printing each record's first
/// occurrence (or, with `repeated`, every later one) in input order. Returns
/// the pipeline's counts and the records written.
///
/// # Errors
/// Input errors, or a failed write to `out` (a closed stdout is `BrokenPipe`).
pub fn dedup<B: Store, W: Write + Send>(
    sources: &[crate::input::Source],
    opts: Options,
    filter: &mut B,
    repeated: bool,
    mode: Mode,
    out: &mut W,
) -> Result<(Counts, u64)> {
    let mut written = 0u64;
    let counts = pipeline(sources, opts, filter, mode, |c: &Chunk| {
        // The runs of printed records go out as they lie in the chunk, many per
        // vectored write, with no copy through a user-space buffer; when they
        // are short (lines alternating new and seen), one iovec per line costs
        // the kernel more than copying them into the buffer does.
        let (mut runs, mut bytes) = (Vec::new(), 0);
        c.for_each_run(repeated, |run, n| {
            written += n;
            bytes += run.len();
            runs.push(IoSlice::new(run));
            Ok(())
        })?;
        if bytes >= runs.len() * MIN_AVERAGE_RUN {
            write_all_vectored(out, &mut runs)
        } else {
            runs.iter().try_for_each(|r| out.write_all(r))
        }
        .context("cannot write output")?;
        // Every chunk goes to the kernel before the next: a deferred pipeline
        // records it only then, and a signal ends the run after it.
        out.flush().context("cannot write output")?;
        Ok(true)
    })?;
    out.flush().context("cannot write output")?;
    Ok((counts, written))
}

/// Average bytes per run of printed records below which a chunk's output is
/// copied into the buffer rather than handed to the kernel as one iovec per run
/// (measured: lines alternating new and seen, 80 bytes each, doubled the
/// system time with vectored writes).
const MIN_AVERAGE_RUN: usize = 128;

/// Writes every byte of `bufs` (`Write::write_all_vectored` is not stable),
/// at most [`IOV_MAX`] slices per call.
fn write_all_vectored<W: Write>(out: &mut W, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    /// The smallest `IOV_MAX` POSIX allows and Linux's value.
    const IOV_MAX: usize = 1024;
    while !bufs.is_empty() {
        match out.write_vectored(&bufs[..bufs.len().min(IOV_MAX)]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Creates a missing persistent filter (atomically; if another process creates
/// it first, theirs is used).
fn create(
    path: &Path,
    a: &DedupArgs,
    sources: &[crate::input::Source],
    opts: &Options,
) -> Result<()> {
    match check_target(path, false)? {
        Target::Free => {}
        // Created by another process since we looked: theirs is used.
        Target::Filter => return Ok(()),
        Target::OtherFile => bail!(
            "{} is not a seen filter: give the path of a filter, or a new path",
            path.display()
        ),
    }
    let spec = spec(&a.size, || {
        let n = counted(sources, opts)?.unwrap_or(0).max(DEFAULT_CAPACITY);
        Ok(n)
    })?;
    // Nothing is inserted here, so no page of it comes into the page cache
    // (the checksums of untouched segments are those of zero bytes): the
    // writer that opens it next picks the page size for this run.
    let f = NewFilter::create(path, &spec, DEFAULT_SEED, keys(&a.keys, None))?;
    match f.finish(false) {
        Ok(()) => {}
        // Another process created it first: theirs is used.
        Err(_) if path.exists() => return Ok(()),
        Err(e) => return Err(e),
    }
    if a.size.capacity.is_none() && !a.progress.quiet {
        eprintln!(
            "seen: created {} for {} distinct lines at false-positive rate {:e}{} \
             (pass -n to size it for the lines you expect over all runs)",
            path.display(),
            spec.capacity,
            spec.target_fpp,
            if spec.growth.is_some() {
                ", growing past them"
            } else {
                ""
            }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 19, hole 1: a file counted at 1,400 lines that holds 2,000,000
    /// distinct ones by the time it is read (it was still being written).
    /// The filter sized from the count must grow and keep every line but
    /// about `p` of them; a fixed layer of 1,400 (what `dedup FILE` made
    /// before) calls most of them seen.
    #[test]
    fn a_filter_sized_from_a_count_grows_past_it() {
        let mut f = sized_from_input(1_400, 1e-6).unwrap();
        let (mut dropped, mut out) = (0u64, Vec::new());
        let keys: Vec<_> = (0..2_000_000u32)
            .map(|i| crate::hash::hash(format!("https://g.example/{i}").as_bytes(), DEFAULT_SEED))
            .collect();
        for batch in keys.chunks(4096) {
            f.insert_batch(batch, &mut out).unwrap();
            dropped += out.iter().filter(|&&seen| seen).count() as u64;
        }
        let h = f.header();
        assert!(h.layers.len() > 1, "it grew: {} layers", h.layers.len());
        let now: Vec<_> = h.layers.iter().map(|l| (l.layout, l.inserts)).collect();
        assert!(sizing::compound_fpp(&now) <= 1e-6, "{now:?}");
        // Expected about 2 (2M lines at 1e-6); 20 is far past any fluke.
        assert!(
            dropped <= 20,
            "{dropped} of 2,000,000 new lines called seen"
        );
        assert_eq!(f.inserts() + dropped, 2_000_000);
    }

    /// A writer that takes at most `max` bytes per call, and is interrupted on
    /// every third call.
    struct Stingy {
        out: Vec<u8>,
        max: usize,
        calls: usize,
    }

    impl Write for Stingy {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.max - n);
                self.out.extend_from_slice(&b[..take]);
                n += take;
                if n == self.max {
                    break;
                }
            }
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn vectored_writes_resume_after_short_and_interrupted_writes() {
        let pieces: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| format!("line {i}\n").repeat(i as usize % 5).into_bytes())
            .collect();
        let want: Vec<u8> = pieces.concat();
        for max in [1, 7, 100, 1 << 20] {
            let mut w = Stingy {
                out: Vec::new(),
                max,
                calls: 0,
            };
            let mut bufs: Vec<IoSlice> = pieces.iter().map(|p| IoSlice::new(p)).collect();
            write_all_vectored(&mut w, &mut bufs).unwrap();
            assert!(w.out == want, "max {max}");
        }
        let mut full = Stingy {
            out: Vec::new(),
            max: 0,
            calls: 0,
        };
        let e = write_all_vectored(&mut full, &mut [IoSlice::new(b"x")]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WriteZero);
    }
}
