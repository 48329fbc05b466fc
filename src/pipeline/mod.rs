//! From records to verdicts, in parallel and in order.
//!
//! Three stages joined by bounded channels, so memory stays at a few chunks
//! whatever the input size:
//!
//! 1. **reader** (one thread): reads chunks of whole records (4 MiB by default)
//!    and hashes them, splitting a large chunk into pieces hashed in parallel on a
//!    rayon pool of `threads` threads;
//! 2. **inserter** (the calling thread, which owns the filter): runs the filter's
//!    batch test-and-set (or lookup) over every piece, strictly in input order;
//! 3. **writer** (one thread): hands each chunk with its verdicts to the caller's
//!    sink (which prints), then returns the buffers to the reader.
//!
//! Only stage 2 touches the filter and it sees keys in input order, so verdicts,
//! and therefore output, are byte-identical for any thread count or chunk size.
//! No atomics on the bits. The commit point of a persistent filter stays with
//! the caller, after [`run`] returns.
//!
//! Rooms: [`Store`] (the port a store implements), [`chunk`] (the unit of
//! work), `stages` (the three stages as types), `deferred` (the commit
//! protocol of `dedup -f`).

mod chunk;
mod deferred;
mod stages;
mod store;

pub use chunk::Chunk;
pub use deferred::MAX_PENDING_KEYS;
pub use store::{Commits, Forgets, Journals, LastSpan, STRETCH, Store};

use crate::hash::Hash128;
use crate::input::Source;
use crate::keys::KeySpec;
use anyhow::Result;
use stages::{Inserter, ReaderStage, Stop, WriterStage};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Default bytes of records per chunk.
pub const CHUNK_BYTES: usize = 4 << 20;
/// Records longer than this are hashed as they stream by when the sink needs
/// no record bytes ([`Options::stream_long`]).
pub const LONG_RECORD_BYTES: usize = 64 << 20;
/// Most hashing threads used, whatever `-j` or `RAYON_NUM_THREADS` say.
pub const MAX_THREADS: usize = 256;
/// Pieces smaller than this are not worth a task of their own.
const MIN_PIECE_BYTES: usize = 64 << 10;

/// How to run a pipeline.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Record terminator.
    pub term: u8,
    /// Threads hashing in parallel (1 = the reader thread hashes alone).
    pub threads: usize,
    /// Target bytes per chunk.
    pub chunk_bytes: usize,
    /// How records become the keys that are hashed.
    pub keys: KeySpec,
    /// The sink needs no record bytes (`build`, `query -c`/`-q`): records
    /// longer than [`Options::long_bytes`] are hashed as they stream by instead
    /// of being held whole (whole-record keys only).
    pub stream_long: bool,
    /// See [`Options::stream_long`].
    pub long_bytes: usize,
    /// Map regular input files instead of reading them ([`Reader::map_files`]).
    pub mmap: bool,
}

impl Options {
    /// Options for `term`, with `threads` from `-j`, else `RAYON_NUM_THREADS`,
    /// else the number of CPUs. The chunk size can be forced with the
    /// `SEEN_CHUNK_BYTES` environment variable (for tests of chunk boundaries).
    pub fn new(term: u8, threads: Option<usize>) -> Options {
        let tuning = crate::tuning::get();
        let threads = threads
            .or(tuning.threads)
            .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
            .unwrap_or(1)
            .clamp(1, MAX_THREADS);
        Options {
            term,
            threads,
            chunk_bytes: tuning.chunk_bytes.unwrap_or(CHUNK_BYTES),
            keys: KeySpec::RAW,
            stream_long: false,
            long_bytes: tuning.long_record_bytes.unwrap_or(LONG_RECORD_BYTES),
            mmap: true,
        }
    }
}

/// What the inserter stage did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Records read.
    pub read: u64,
    /// Records judged new (inserted for the first time).
    pub new: u64,
    /// Records without the key field (`-k`): their key was empty.
    pub missing_field: u64,
    /// Keys that were not absolute URLs (`--url`): hashed as they were.
    pub not_url: u64,
    /// Commit spans ended ([`Mode::Deferred`]).
    pub spans: u64,
    /// Of those, the spans whose keys the store staged in memory
    /// ([`Commits::stages`]).
    pub staged_spans: u64,
}

/// Whether the filter stage inserts or only looks up.
#[derive(Debug)]
pub enum Mode {
    /// Test-and-set every key, in order.
    Insert,
    /// Look every key up; the filter is not changed.
    Lookup,
    /// Judge every key in order as [`Mode::Insert`] does, but record a new key
    /// in the filter only after the sink has written its chunk (for
    /// `dedup -f`: a line is never recorded before it is printed). See [`Commit`].
    Deferred(Commit),
}

/// When a deferred pipeline records what it has printed.
///
/// Keys judged new wait in an exact in-memory set (their 128-bit hashes)
/// until the writer has handed their chunk to the kernel; at the end of each
/// *commit span* (`lines` records, `every` elapsed, [`MAX_PENDING_KEYS`]
/// keys waiting, a pause in the input, or the end), the pipeline waits for the
/// writer, syncs the files in `sync` (the outputs that are regular files), then
/// inserts the waiting keys into the filter and ends the span
/// ([`Commits::end_span`]: counters written, lock released). A span
/// holds the filter's lock from its first judgement to its commit, so
/// processes sharing a file take turns per span.
#[derive(Debug)]
pub struct Commit {
    /// Records per span at most.
    pub lines: u64,
    /// Time per span at most.
    pub every: Duration,
    /// The bounds are the defaults, not asked for: a span stretches past
    /// them until it has lasted [`STRETCH`] times as long as the last commit
    /// took (a commit writes back and sums what changed in the filter,
    /// which grows with it).
    pub stretch: bool,
    /// The sink may stop inside a span (`dedup -m`): a staged span then
    /// keeps every key written, to record exactly those, and ends when they
    /// reach its bound. Otherwise a long staged span stops keeping them,
    /// and if it cannot be recorded whole, nothing of it is.
    pub stops: bool,
    /// The outputs that are regular files (standard output, `dedup
    /// --dups-out`), each with its name for messages: their data is synced
    /// before the lines they hold are recorded. Empty: keys are recorded as
    /// soon as their chunk is written.
    pub sync: Vec<(std::fs::File, String)>,
}

/// What a sink did with a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// All of it: go on.
    All,
    /// Enough (`query -q`'s answer, `dedup -m`'s count): stop the run after
    /// this chunk, of whose records judged new only the first `new` were
    /// written; in [`Mode::Deferred`] only those are recorded.
    Stop {
        /// Records judged new that were written, a prefix of the chunk's.
        new: usize,
    },
}

/// What the writer says of each chunk it has written: the keys judged new
/// that it wrote (deferred mode), and where the sink stopped, if it did.
/// Shared by the writer and inserter stages (`stages.rs`) and the commit
/// protocol (`deferred.rs`).
type Ack = (Vec<Hash128>, Option<usize>);

/// How often the inserter looks for a signal while waiting for input.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs the three stages over `sources`. `sink` sees every chunk in input order
/// on the writer thread and returns [`Taken::Stop`] to stop early (e.g.
/// `query -q`); in
/// [`Mode::Deferred`], when it returns the chunk's output must have been handed
/// to the kernel (flushed).
///
/// SIGINT and SIGTERM, in [`Mode::Insert`] and [`Mode::Deferred`], stop reading;
/// what was judged is written and (deferred) recorded, and the run returns
/// [`Interrupted`](crate::signals::Interrupted): the caller leaves its store
/// as at any other end (commits it, or drops an unfinished new one) and `main`
/// exits with 128 + the signal. A run that stops early does not wait for a
/// read under way (a producer that never writes again).
///
/// # Errors
/// The first input error (after everything read before it has gone through the
/// sink), the sink's error (e.g. a closed stdout), or a filter error; in
/// deferred mode whatever was written before the error is recorded.
pub fn run<B, S>(
    sources: &[Source],
    opts: Options,
    filter: &mut B,
    mode: Mode,
    sink: S,
) -> Result<Counts>
where
    B: Store,
    S: FnMut(&Chunk) -> Result<Taken> + Send,
{
    let seed = filter.seed();
    if !matches!(mode, Mode::Lookup) {
        crate::signals::catch();
    }
    let reader = ReaderStage::spawn(sources, opts, seed)?;
    let stopped = AtomicBool::new(false);
    let (mut inserter, acks) = Inserter::new(filter, mode);
    let (stop, written) = std::thread::scope(|scope| -> Result<_> {
        let writer = WriterStage::spawn(scope, sink, acks, reader.recycler(), &stopped)?;
        let stop = inserter.run(&reader, &writer, &stopped);
        Ok((stop, writer.join()))
    })?;
    // Everything acknowledged was written out: record it.
    let finished = inserter.finish();
    let sig = crate::signals::received();
    if sig != 0 {
        return Err(crate::signals::Interrupted(sig).into());
    }
    let (input_error, ended) = match stop {
        Stop::Ended => (None, true),
        Stop::InputFailed(e) => (Some(e), true),
        Stop::Failed(e) => (Some(e), false),
        Stop::WriterStopped | Stop::Signalled => (None, false),
    };
    reader.finish(ended)?;
    written?;
    match input_error {
        Some(e) => Err(e),
        None => finished.map(|()| inserter.counts),
    }
}

#[cfg(test)]
mod tests {
    use super::chunk::Piece;
    use super::*;
    use crate::file::MemFilter;
    use crate::filter::sizing::plan;

    fn dedup_bytes(data: &[u8], threads: usize, chunk_bytes: usize, mmap: bool) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, data).unwrap();
        let mut f = MemFilter::new(&plan(100_000, 1e-9).unwrap(), 1).unwrap();
        let opts = Options {
            term: b'\n',
            threads,
            chunk_bytes,
            keys: KeySpec::RAW,
            stream_long: false,
            long_bytes: LONG_RECORD_BYTES,
            mmap,
        };
        let mut out = Vec::new();
        run(
            &[Source::File(path)],
            opts,
            &mut f,
            Mode::Insert,
            |c: &Chunk| {
                c.for_each_run(false, |r, _| {
                    out.extend_from_slice(r);
                    Ok(())
                })?;
                Ok(Taken::All)
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn output_does_not_depend_on_threads_or_chunks() {
        let mut data = Vec::new();
        for i in 0..200_000u32 {
            data.extend_from_slice(format!("{}\n", (i * 7919) % 50_000).as_bytes());
        }
        let want = dedup_bytes(&data, 1, 1 << 30, false);
        assert_eq!(want.iter().filter(|&&b| b == b'\n').count(), 50_000);
        for (threads, chunk) in [(1, 1), (2, 7), (3, 4096), (8, 200_000), (2, 1 << 20)] {
            for mmap in [false, true] {
                assert_eq!(
                    dedup_bytes(&data, threads, chunk, mmap),
                    want,
                    "threads {threads} chunk {chunk} mmap {mmap}"
                );
            }
        }
    }

    /// A chunk of one-byte records (`x\n`) cut into pieces of the given
    /// sizes, then one with the rest, with the given verdicts; a cut past
    /// the records gives an empty piece (at the end too).
    fn chunk_with(verdicts: &[bool], cuts: &[usize]) -> Chunk {
        let mut c = Chunk {
            data: b"x\n".repeat(verdicts.len()),
            len: 2 * verdicts.len(),
            ..Chunk::default()
        };
        let mut at = 0;
        for &n in cuts.iter().chain([&usize::MAX]) {
            let n = n.min(verdicts.len() - at);
            c.pieces.push(Piece {
                start: 2 * at,
                ends: (at..at + n).map(|r| 2 * r + 2).collect(),
                verdicts: verdicts[at..at + n].to_vec(),
                ..Piece::default()
            });
            at += n;
        }
        c.used = c.pieces.len();
        c
    }

    /// The runs a record-by-record scan finds: (first record, records).
    fn runs_by_record(verdicts: &[bool], want: bool) -> Vec<(usize, u64)> {
        let mut runs: Vec<(usize, u64)> = Vec::new();
        for (i, &v) in verdicts.iter().enumerate() {
            match runs.last_mut() {
                Some((s, n)) if v == want && *s + *n as usize == i => *n += 1,
                _ if v == want => runs.push((i, 1)),
                _ => {}
            }
        }
        runs
    }

    proptest::proptest! {
        /// Runs found 64 verdicts at a time are exactly the maximal runs of a
        /// record-by-record scan, with their record counts, whatever the
        /// pieces (runs across pieces, empty pieces, pieces not a multiple
        /// of 64 records) and for either verdict.
        #[test]
        fn runs_match_a_record_by_record_scan(
            verdicts in proptest::collection::vec(proptest::prelude::any::<bool>(), 0..400),
            dense in proptest::prelude::any::<bool>(),
            cuts in proptest::collection::vec(0usize..150, 0..5),
            want in proptest::prelude::any::<bool>(),
        ) {
            // Long runs too: mostly-true verdicts when `dense`.
            let verdicts: Vec<bool> = verdicts
                .iter()
                .enumerate()
                .map(|(i, &v)| if dense { v || i % 97 != 0 } else { v })
                .collect();
            let c = chunk_with(&verdicts, &cuts);
            let mut got = Vec::new();
            c.for_each_run(want, |run, n| {
                got.push((run.as_ptr() as usize - c.data.as_ptr() as usize, run.len(), n));
                Ok(())
            })
            .unwrap();
            let want: Vec<_> = runs_by_record(&verdicts, want)
                .into_iter()
                .map(|(s, n)| (2 * s, 2 * n as usize, n))
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn runs_cover_exactly_the_selected_records() {
        let data = b"a\nb\na\nc\nc\nd\n";
        for mmap in [false, true] {
            assert_eq!(dedup_bytes(data, 2, 3, mmap), b"a\nb\nc\nd\n");
        }
    }
}
