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

use crate::hash::{Hash128, hash};
use crate::input::{Reader, Source, Window};
use crate::keys::{KeySpec, Keyer};
use anyhow::{Context, Result, anyhow};
use rayon::prelude::*;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::BuildHasherDefault;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel, sync_channel};
use std::time::{Duration, Instant};

/// The port this pipeline owns and consumes (as ripgrep's searcher owns its
/// `Sink`): what it needs from whatever holds the bits — an anonymous mapping,
/// a mapped file, later a remote store. Hashes in, verdicts out, in order,
/// plus the commit protocol of [`Mode::Deferred`] (judge, write, record):
/// [`Store::begin_window`], [`Store::record_batch`], [`Store::end_window`].
/// A store implements it; the pipeline knows nothing else of it.
pub trait Store {
    /// Seed to hash records with for this filter.
    fn seed(&self) -> u64;
    /// `out[i]` = whether key `i` is (probably) present. Changes nothing.
    fn contains_batch(&self, hashes: &[Hash128], out: &mut Vec<bool>);
    /// Inserts the keys in order; `out[i]` = whether key `i` was (probably) present
    /// before its own insertion (so a key repeated inside the batch is new only
    /// the first time). Returns how many were new.
    ///
    /// # Errors
    /// When the filter had to grow (add a layer) and could not, e.g. no disk
    /// space; the keys before that point are inserted and `out` covers them.
    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> anyhow::Result<u64>;

    /// Records keys already judged new (by a lookup, with their lines printed
    /// since): like [`Store::insert_batch`], but every key counts as new
    /// and no verdicts are produced. Returns how many were recorded.
    ///
    /// # Errors
    /// As [`Store::insert_batch`].
    fn record_batch(&mut self, hashes: &[Hash128]) -> anyhow::Result<u64> {
        let mut out = Vec::new();
        self.insert_batch(hashes, &mut out)?;
        Ok(hashes.len() as u64)
    }

    /// Starts a commit window (see `pipeline::Mode::Deferred`): a shared,
    /// persistent filter takes its lock and picks up what other processes
    /// committed. Nothing for other filters.
    ///
    /// # Errors
    /// When the lock cannot be taken or the file has become unusable.
    fn begin_window(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Ends a commit window: counters written, lock released.
    ///
    /// # Errors
    /// When the header cannot be written.
    fn end_window(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    /// The run was interrupted by a signal and the process is about to exit:
    /// leave the filter in a valid state (commit counters, or remove an
    /// unfinished temporary file).
    fn interrupted(&mut self) {}
}

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
        let env = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|&n| n > 0)
        };
        let threads = threads
            .or_else(|| env("RAYON_NUM_THREADS"))
            .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
            .unwrap_or(1)
            .clamp(1, MAX_THREADS);
        Options {
            term,
            threads,
            chunk_bytes: env("SEEN_CHUNK_BYTES").unwrap_or(CHUNK_BYTES),
            keys: KeySpec::RAW,
            stream_long: false,
            long_bytes: env("SEEN_LONG_RECORD_BYTES").unwrap_or(LONG_RECORD_BYTES),
            mmap: true,
        }
    }
}

/// A run of records inside a chunk, hashed by one task.
#[derive(Debug, Default)]
pub struct Piece {
    start: usize,
    /// End (exclusive, after the terminator) of each record.
    ends: Vec<usize>,
    hashes: Vec<Hash128>,
    verdicts: Vec<bool>,
    /// Records without the key field, and keys that were not URLs (key options).
    missing_field: u64,
    not_url: u64,
}

impl Piece {
    fn hash(
        &mut self,
        data: &[u8],
        end: usize,
        term: u8,
        seed: u64,
        keys: KeySpec,
    ) -> std::io::Result<()> {
        self.ends.clear();
        self.hashes.clear();
        self.missing_field = 0;
        self.not_url = 0;
        if keys.is_raw() {
            return self.hash_records(data, end, term, |record| hash(record, seed));
        }
        let mut keyer = Keyer::new(keys);
        let hashed = self.hash_records(data, end, term, |record| hash(keyer.key(record), seed));
        self.missing_field = keyer.missing_field;
        self.not_url = keyer.not_url;
        hashed
    }

    /// Appends the end and the hash (`hash_of` the record, terminator left
    /// out) of every record of the piece, each hashed as soon as its end is
    /// found (see `for_each_end`). The two vectors grow fallibly (see
    /// [`crate::memory`]), doubling, when full: one predictable branch per
    /// record (a reservation ahead of the scan measured 3–4 % slower).
    ///
    /// # Errors
    /// When they cannot grow; the records after that point are not hashed.
    #[inline(always)]
    fn hash_records(
        &mut self,
        data: &[u8],
        end: usize,
        term: u8,
        mut hash_of: impl FnMut(&[u8]) -> Hash128,
    ) -> std::io::Result<()> {
        let (ends, hashes) = (&mut self.ends, &mut self.hashes);
        let mut s = self.start;
        let mut failed = None;
        crate::scan::for_each_end(&data[self.start..end], term, self.start, |e| {
            if ends.len() == ends.capacity() || hashes.len() == hashes.capacity() {
                if failed.is_some() {
                    return;
                }
                let more = ends.len().max(1024);
                if let Err(e) = crate::memory::reserve(ends, more, "a chunk's record ends")
                    .and_then(|()| crate::memory::reserve(hashes, more, "a chunk's hashes"))
                {
                    failed = Some(e);
                    return;
                }
            }
            ends.push(e);
            hashes.push(hash_of(&data[s..e - 1]));
            s = e;
        });
        failed.map_or(Ok(()), Err)
    }
}

/// A buffer of whole records with their hashes and verdicts.
#[derive(Debug, Default)]
pub struct Chunk {
    data: Vec<u8>,
    /// The records, when they were mapped instead of read into `data`.
    mapped: Option<Window>,
    len: usize,
    pieces: Vec<Piece>,
    used: usize,
    flush: bool,
    /// Keys judged new in this chunk, to record once it is written (deferred mode).
    new_keys: Vec<Hash128>,
    /// The hash of a long record streamed past by the reader: the chunk then
    /// holds only its terminator.
    prehashed: Option<Hash128>,
}

impl Chunk {
    /// Whether the input paused after this chunk (a drained pipe): sinks should
    /// flush their output so the lines reach the reader downstream now.
    pub fn wants_flush(&self) -> bool {
        self.flush
    }

    /// The records, each ending with the terminator.
    fn bytes(&self) -> &[u8] {
        records(self.mapped.as_ref(), &self.data, self.len)
    }

    /// Byte range and verdict of every record (terminator included), in order.
    /// The verdict is "was present" (before its own insertion, when inserting).
    fn spans(&self) -> impl Iterator<Item = (usize, usize, bool)> + '_ {
        self.pieces[..self.used].iter().flat_map(|p| {
            let starts = std::iter::once(p.start).chain(p.ends.iter().copied());
            starts
                .zip(p.ends.iter().copied())
                .zip(p.verdicts.iter().copied())
                .map(|((s, e), v)| (s, e, v))
        })
    }

    /// Calls `f(record, verdict)` for every record (terminator included), in order.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], bool)) {
        let data = self.bytes();
        for (s, e, v) in self.spans() {
            f(&data[s..e], v);
        }
    }

    /// The records, and those whose verdict is `want`.
    pub fn count(&self, want: bool) -> (u64, u64) {
        self.pieces[..self.used].iter().fold((0, 0), |(n, w), p| {
            let hits = p.verdicts.iter().filter(|&&v| v == want).count();
            (n + p.verdicts.len() as u64, w + hits as u64)
        })
    }

    /// Calls `f` with maximal runs of consecutive records whose verdict equals
    /// `want`, as one byte slice each: few, large writes.
    ///
    /// The verdicts are read 64 at a time as a bit mask, and a run's two ends
    /// are found with `trailing_zeros`, so the cost goes with the number of
    /// runs rather than a branch per record, which mispredicts at every run's
    /// end (`dedup` of lines of which 30 % repeat has a run end every three
    /// records or so).
    pub fn for_each_run<'a>(
        &'a self,
        want: bool,
        mut f: impl FnMut(&'a [u8], u64) -> Result<()>,
    ) -> Result<()> {
        let data = self.bytes();
        // Records lie back to back across pieces, so a run may span pieces.
        // The open run: its first byte, and its records in earlier pieces.
        let mut open: Option<(usize, u64)> = None;
        let mut end = 0;
        for p in &self.pieces[..self.used] {
            let start_of = |i: usize| if i == 0 { p.start } else { p.ends[i - 1] };
            // Index of the open run's first record in this piece.
            let mut first = 0;
            for (b, block) in p.verdicts.chunks(64).enumerate() {
                let base = 64 * b;
                let wanted = mask_of(block, want);
                // Bits past the block's end are neither wanted nor unwanted.
                let valid = u64::MAX >> (64 - block.len());
                let unwanted = !wanted & valid;
                let mut i = 0;
                loop {
                    if open.is_none() {
                        let rest = wanted >> i;
                        if rest == 0 {
                            break;
                        }
                        i += rest.trailing_zeros() as usize;
                        open = Some((start_of(base + i), 0));
                        first = base + i;
                    }
                    let rest = unwanted >> i;
                    if rest == 0 {
                        break;
                    }
                    i += rest.trailing_zeros() as usize;
                    if let Some((s, before)) = open.take() {
                        let at = base + i;
                        f(&data[s..start_of(at)], before + (at - first) as u64)?;
                    }
                }
            }
            if let Some((_, before)) = &mut open {
                *before += (p.verdicts.len() - first) as u64;
            }
            // The end of the piece's last record with a verdict.
            if let Some(&e) = p.verdicts.len().checked_sub(1).and_then(|l| p.ends.get(l)) {
                end = e;
            }
        }
        if let Some((s, n)) = open {
            f(&data[s..end], n)?;
        }
        Ok(())
    }

    /// Splits the records into pieces and hashes them (in parallel on `pool`).
    ///
    /// # Errors
    /// When the pieces' vectors cannot grow (out of memory).
    fn hash(
        &mut self,
        term: u8,
        seed: u64,
        keys: KeySpec,
        pool: Option<&rayon::ThreadPool>,
    ) -> std::io::Result<()> {
        if let Some(h) = self.prehashed {
            if self.pieces.is_empty() {
                self.pieces.push(Piece::default());
            }
            let p = &mut self.pieces[0];
            (p.start, p.missing_field, p.not_url) = (0, 0, 0);
            p.ends.clear();
            p.ends.push(self.len);
            p.hashes.clear();
            p.hashes.push(h);
            self.used = 1;
            return Ok(());
        }
        let len = self.len;
        // Not `self.bytes()`: the pieces are borrowed mutably below.
        let data = records(self.mapped.as_ref(), &self.data, len);
        let want = match pool {
            Some(p) => (len / MIN_PIECE_BYTES).clamp(1, 4 * p.current_num_threads()),
            None => 1,
        };
        if self.pieces.len() < want {
            self.pieces.resize_with(want, Piece::default);
        }
        // Piece boundaries: just after the first terminator at or past each
        // equal share of the bytes.
        let mut starts = Vec::with_capacity(want + 1);
        starts.push(0);
        for i in 1..want {
            let at = (len * i / want).max(*starts.last().unwrap_or(&0));
            match memchr::memchr(term, &data[at..len]) {
                Some(p) if at + p + 1 < len => starts.push(at + p + 1),
                _ => break,
            }
        }
        starts.dedup();
        self.used = starts.len();
        starts.push(len);
        for (i, p) in self.pieces[..self.used].iter_mut().enumerate() {
            p.start = starts[i];
        }
        let ends = &starts[1..];
        match pool {
            Some(pool) if self.used > 1 => pool.install(|| {
                self.pieces[..self.used]
                    .par_iter_mut()
                    .zip(ends.par_iter())
                    .try_for_each(|(p, &end)| p.hash(data, end, term, seed, keys))
            }),
            _ => self.pieces[..self.used]
                .iter_mut()
                .zip(ends)
                .try_for_each(|(p, &end)| p.hash(data, end, term, seed, keys)),
        }
    }
}

/// Bit `i` set for every `i` where `verdicts[i] == want` (at most 64 verdicts).
#[inline(always)]
fn mask_of(verdicts: &[bool], want: bool) -> u64 {
    verdicts
        .iter()
        .enumerate()
        .fold(0, |m, (i, &v)| m | (u64::from(v == want) << i))
}

/// A chunk's records: its mapped window, else the first `len` bytes of its buffer.
fn records<'a>(mapped: Option<&'a Window>, data: &'a [u8], len: usize) -> &'a [u8] {
    match mapped {
        Some(w) => w.bytes(),
        None => &data[..len],
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
}

/// Whether the filter stage inserts or only looks up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
/// *commit window* (`lines` records, `every` elapsed, [`MAX_PENDING_KEYS`]
/// keys waiting, a pause in the input, or the end), the pipeline waits for the
/// writer, syncs standard output when `sync_output` (a regular file), then
/// inserts the waiting keys into the filter and ends the window
/// ([`Store::end_window`]: counters written, lock released). A window
/// holds the filter's lock from its first judgement to its commit, so
/// processes sharing a file take turns per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commit {
    /// Records per window at most.
    pub lines: u64,
    /// Time per window at most.
    pub every: Duration,
    /// Sync standard output before recording (it is a regular file).
    pub sync_output: bool,
}

/// How often the inserter looks for a signal while waiting for input.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Hashes the keys of the pending map: the key's own 128 bits are already
/// uniformly random, so nothing more than a fold is needed.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

/// The exact set of keys judged new and not yet recorded, as a map from key to
/// the number of the chunk that judged it new: an entry counts only while that
/// chunk is not recorded, so recording removes nothing key by key (stale
/// entries are pruned in bulk, see [`Deferred::tidy`]). A recorded key is never
/// looked up here anyway: the filter holds it, and a Bloom filter has no false
/// negatives.
///
/// Keys are `(lo, hi)` rather than `u128`, whose 16-byte alignment would pad
/// every entry to 32 bytes instead of 24.
type Pending = HashMap<(u64, u64), u64, BuildHasherDefault<KeyHasher>>;

/// Pending entries at which stale ones are first pruned.
const PRUNE_AT: usize = 1 << 17;

/// Keys judged new a window may hold before it ends, whatever `--commit-every`
/// says: when the output is a file, every new key of a window waits in memory
/// until the window's commit (24 bytes in the pending map, at most 2 buckets
/// per entry, plus 16 in `acked`), so this keeps the window's memory under
/// about 40 MiB (plus one chunk's keys) instead of growing with the input.
pub const MAX_PENDING_KEYS: usize = 1 << 19;

fn pending_key(h: Hash128) -> (u64, u64) {
    (h.lo, h.hi)
}

/// The inserter's state in [`Mode::Deferred`].
struct Deferred {
    commit: Commit,
    /// Judged new, not yet recorded (includes `acked`), and stale entries.
    pending: Pending,
    /// Pending entries at which [`Deferred::tidy`] prunes stale ones.
    prune_at: usize,
    /// Chunks judged so far (the number of the last one).
    judged: u64,
    /// Chunks acknowledged by the writer so far (a prefix of the judged ones).
    written: u64,
    /// Chunks whose new keys are all recorded (a prefix of the written ones).
    recorded: u64,
    /// Judged new and written out, in input order: recorded at the window's end.
    acked: Vec<Hash128>,
    window_open: bool,
    window_lines: u64,
    window_start: Instant,
}

impl Deferred {
    fn new(commit: Commit) -> Deferred {
        Deferred {
            commit,
            pending: Pending::default(),
            prune_at: PRUNE_AT,
            judged: 0,
            written: 0,
            recorded: 0,
            acked: Vec::new(),
            window_open: false,
            window_lines: 0,
            window_start: Instant::now(),
        }
    }

    /// Chunks judged and not yet acknowledged by the writer.
    fn in_flight(&self) -> u64 {
        self.judged - self.written
    }

    /// Judges a chunk: present in the filter, or judged new earlier and not yet
    /// recorded, means seen; otherwise new (and now pending).
    ///
    /// # Errors
    /// When the pending set cannot grow for the chunk's keys (out of memory);
    /// nothing is judged then.
    fn judge<B: Store>(&mut self, filter: &B, chunk: &mut Chunk) -> Result<u64> {
        chunk.new_keys.clear();
        // Room for the keys the filter does not hold, before any is judged.
        let mut absent = 0;
        for p in &mut chunk.pieces[..chunk.used] {
            filter.contains_batch(&p.hashes, &mut p.verdicts);
            absent += p.verdicts.iter().filter(|&&v| !v).count();
        }
        self.pending.try_reserve(absent).map_err(|_| {
            crate::memory::out_of_memory(
                (self.pending.len() + absent) * 2 * size_of::<((u64, u64), u64)>(),
                "the keys waiting to be recorded",
            )
        })?;
        crate::memory::reserve(&mut chunk.new_keys, absent, "a chunk's new keys")?;
        self.judged += 1;
        let (seq, recorded) = (self.judged, self.recorded);
        let mut new = 0;
        for p in &mut chunk.pieces[..chunk.used] {
            for (h, v) in p.hashes.iter().zip(p.verdicts.iter_mut()) {
                if *v {
                    continue;
                }
                match self.pending.entry(pending_key(*h)) {
                    Entry::Occupied(e) if *e.get() > recorded => *v = true,
                    e => {
                        e.insert_entry(seq);
                        chunk.new_keys.push(*h);
                        new += 1;
                    }
                }
            }
        }
        Ok(new)
    }

    /// Opens a window if none is open: the filter's lock, then a fresh count.
    fn begin<B: Store>(&mut self, filter: &mut B) -> Result<()> {
        if !self.window_open {
            filter.begin_window()?;
            self.window_open = true;
            self.window_lines = 0;
            self.window_start = Instant::now();
        }
        Ok(())
    }

    /// Whether the window has run its course after a chunk (`pause`: the input
    /// paused after it).
    fn due(&self, pause: bool) -> bool {
        pause
            || self.window_lines >= self.commit.lines
            || self.window_start.elapsed() >= self.commit.every
            || self.pending.len() >= MAX_PENDING_KEYS
    }

    /// Takes the writer's acknowledgements waiting now, or with `wait` every
    /// chunk still in flight (unless the writer stopped, its error coming at
    /// its join). Returns whether no chunk is left in flight.
    fn drain<B: Store>(
        &mut self,
        filter: &mut B,
        acks: &Receiver<Vec<Hash128>>,
        wait: bool,
    ) -> Result<bool> {
        loop {
            let keys = if wait && self.in_flight() > 0 {
                acks.recv().ok()
            } else {
                acks.try_recv().ok()
            };
            match keys {
                Some(keys) => self.written(filter, keys)?,
                None => return Ok(self.in_flight() == 0),
            }
        }
    }

    /// Takes the keys of a chunk the writer has handed to the kernel. Unless
    /// the output must be synced first, they are recorded at once (so the
    /// pending set stays a few chunks small).
    fn written<B: Store>(&mut self, filter: &mut B, keys: Vec<Hash128>) -> Result<()> {
        if self.commit.sync_output {
            crate::memory::reserve(
                &mut self.acked,
                keys.len(),
                "the keys waiting to be recorded",
            )?;
            self.written += 1;
            self.acked.extend(keys);
            return Ok(());
        }
        self.written += 1;
        filter.record_batch(&keys)?;
        self.recorded = self.written;
        self.tidy();
        Ok(())
    }

    /// Drops the pending entries of recorded chunks: all of them at once when
    /// every judged chunk is recorded, else (past `prune_at` entries) those
    /// stale, with the next prune once the map has doubled again.
    fn tidy(&mut self) {
        if self.recorded == self.judged {
            self.pending.clear();
        } else if self.pending.len() >= self.prune_at {
            let recorded = self.recorded;
            self.pending.retain(|_, seq| *seq > recorded);
            self.prune_at = PRUNE_AT.max(2 * self.pending.len());
        }
    }

    /// Records what has been written (after syncing the output when asked)
    /// and ends the window.
    fn commit<B: Store>(&mut self, filter: &mut B) -> Result<()> {
        if !self.acked.is_empty() {
            rustix::fs::fdatasync(std::io::stdout())
                .map_err(std::io::Error::from)
                .context("cannot sync standard output before recording its lines")?;
            let acked = std::mem::take(&mut self.acked);
            filter.record_batch(&acked)?;
        }
        self.recorded = self.written;
        self.tidy();
        self.window_open = false;
        filter.end_window()
    }
}

/// Runs the three stages over `sources`. `sink` sees every chunk in input order
/// on the writer thread and returns `false` to stop early (e.g. `query -q`); in
/// [`Mode::Deferred`], when it returns the chunk's output must have been handed
/// to the kernel (flushed).
///
/// SIGINT and SIGTERM, in [`Mode::Insert`] and [`Mode::Deferred`], stop reading;
/// what was judged is written, recorded (deferred) or abandoned
/// ([`Store::interrupted`]), and the process exits with 128 + the signal.
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
    mut sink: S,
) -> Result<Counts>
where
    B: Store,
    S: FnMut(&Chunk) -> Result<bool> + Send,
{
    let seed = filter.seed();
    let mut counts = Counts::default();
    if mode != Mode::Lookup {
        crate::signals::catch();
    }
    let mut deferred = match mode {
        Mode::Deferred(commit) => Some(Deferred::new(commit)),
        _ => None,
    };
    std::thread::scope(|scope| {
        let (to_inserter, from_reader) = sync_channel::<Result<Chunk>>(1);
        let (to_writer, from_inserter) = sync_channel::<Chunk>(1);
        let (recycle, recycled) = channel::<Chunk>();
        let (ack, acks) = channel::<Vec<Hash128>>();
        let acking = deferred.is_some();
        let mut reader = Reader::new(sources, opts.term);
        if opts.mmap {
            reader.map_files();
        }
        if opts.stream_long && opts.keys.is_raw() {
            reader.stream_long_records(opts.long_bytes, seed);
        }
        let reader = std::thread::Builder::new()
            .name("seen-reader".into())
            .spawn_scoped(scope, move || {
                let mut pool = None;
                loop {
                    let mut chunk = recycled.try_recv().unwrap_or_default();
                    let filled = reader.fill(&mut chunk.data, opts.chunk_bytes);
                    let msg = match filled {
                        Ok(Some((len, flush))) => {
                            chunk.len = len;
                            chunk.flush = flush;
                            chunk.prehashed = reader.take_prehashed();
                            chunk.mapped = reader.take_mapped();
                            if opts.threads > 1 && len >= 2 * MIN_PIECE_BYTES && pool.is_none() {
                                pool = rayon::ThreadPoolBuilder::new()
                                    .num_threads(opts.threads)
                                    .thread_name(|i| format!("seen-hash-{i}"))
                                    .build()
                                    .ok();
                            }
                            match chunk.hash(opts.term, seed, opts.keys, pool.as_ref()) {
                                Ok(()) => Ok(chunk),
                                Err(e) => Err(e.into()),
                            }
                        }
                        Ok(None) => return,
                        Err(e) => Err(e),
                    };
                    let last = msg.is_err();
                    if to_inserter.send(msg).is_err() || last {
                        return;
                    }
                }
            })
            .context("cannot start the reader thread")?;
        let writer = std::thread::Builder::new()
            .name("seen-writer".into())
            .spawn_scoped(scope, move || -> Result<()> {
                for mut chunk in from_inserter {
                    if !sink(&chunk)? {
                        return Ok(());
                    }
                    if acking {
                        let _ = ack.send(std::mem::take(&mut chunk.new_keys));
                    }
                    // Unmap a window now: only a few stay mapped at a time.
                    chunk.mapped = None;
                    let _ = recycle.send(chunk);
                }
                Ok(())
            })
            .context("cannot start the writer thread")?;
        let signalled = crate::signals::received;
        let mut input_error = None;
        loop {
            if signalled() != 0 {
                break;
            }
            let msg = match from_reader.recv_timeout(SIGNAL_POLL) {
                Ok(msg) => msg,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut chunk = match msg {
                Ok(chunk) => chunk,
                Err(e) => {
                    input_error = Some(e);
                    break;
                }
            };
            let mut failed = None;
            match (&mut deferred, mode) {
                (Some(d), _) => {
                    match d.begin(filter).and_then(|()| d.drain(filter, &acks, false)) {
                        Ok(_) => {
                            let n: usize = chunk.pieces[..chunk.used]
                                .iter()
                                .map(|p| p.hashes.len())
                                .sum();
                            match d.judge(filter, &mut chunk) {
                                Ok(new) => {
                                    counts.read += n as u64;
                                    d.window_lines += n as u64;
                                    counts.new += new;
                                }
                                Err(e) => failed = Some(e),
                            }
                        }
                        Err(e) => failed = Some(e),
                    }
                }
                (None, Mode::Insert) => {
                    for p in &mut chunk.pieces[..chunk.used] {
                        counts.read += p.hashes.len() as u64;
                        match filter.insert_batch(&p.hashes, &mut p.verdicts) {
                            Ok(n) => counts.new += n,
                            Err(e) => {
                                failed = Some(e);
                                break;
                            }
                        }
                    }
                }
                (None, _) => {
                    for p in &mut chunk.pieces[..chunk.used] {
                        counts.read += p.hashes.len() as u64;
                        filter.contains_batch(&p.hashes, &mut p.verdicts);
                    }
                }
            }
            if let Some(e) = failed {
                // The filter could not grow (or be locked): nothing of this
                // chunk is written.
                input_error = Some(e);
                break;
            }
            let mut items = 0;
            for p in &chunk.pieces[..chunk.used] {
                items += p.hashes.len() as u64;
                counts.missing_field += p.missing_field;
                counts.not_url += p.not_url;
            }
            crate::progress::advance(chunk.len as u64, items);
            let pause = chunk.flush;
            if to_writer.send(chunk).is_err() {
                break;
            }
            if let Some(d) = &mut deferred
                && d.due(pause)
            {
                // Wait for the writer to finish the window's chunks.
                match d.drain(filter, &acks, true) {
                    Ok(true) => {}
                    Ok(false) => break, // the writer stopped
                    Err(e) => {
                        input_error = Some(e);
                        break;
                    }
                }
                if let Err(e) = d.commit(filter) {
                    input_error = Some(e);
                    break;
                }
            }
        }
        // Unblock a reader waiting to hand over a chunk, and let the writer end.
        drop(from_reader);
        drop(to_writer);
        let written = writer
            .join()
            .map_err(|_| anyhow!("the writer thread panicked"))?;
        if let Some(d) = &mut deferred {
            // Everything acknowledged was written out: record it.
            if let Err(e) = d.drain(filter, &acks, false) {
                input_error.get_or_insert(e);
            }
            if d.window_open {
                let recorded = d.commit(filter);
                if input_error.is_none() {
                    input_error = recorded.err();
                }
            }
        }
        let sig = signalled();
        if sig != 0 {
            crate::progress::clear();
            filter.interrupted();
            std::process::exit(128 + sig as i32);
        }
        reader
            .join()
            .map_err(|_| anyhow!("the reader thread panicked"))?;
        written?;
        input_error.map_or(Ok(()), Err)
    })?;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::MemFilter;
    use crate::filter::sizing::plan;

    /// A chunk of one piece holding the hashes of `keys`.
    fn chunk_of(keys: &[u32]) -> Chunk {
        let mut c = Chunk::default();
        c.pieces.push(Piece::default());
        c.pieces[0].hashes = keys.iter().map(|k| hash(&k.to_le_bytes(), 1)).collect();
        c.used = 1;
        c
    }

    /// The pending map of `dedup -f`: a key judged new stays "seen" until its
    /// chunk is recorded (then the filter answers for it), stale entries are
    /// pruned without touching live ones, and the map empties when every
    /// judged chunk is recorded.
    #[test]
    fn pending_keys_live_until_their_chunk_is_recorded() {
        let mut f = MemFilter::new(&plan(1000, 1e-9).unwrap(), 1).unwrap();
        let mut d = Deferred::new(Commit {
            lines: u64::MAX,
            every: Duration::MAX,
            sync_output: false,
        });
        d.prune_at = 4;
        d.window_open = true;
        let judge = |d: &mut Deferred, f: &MemFilter, keys: &[u32]| {
            let mut c = chunk_of(keys);
            let new = d.judge(f, &mut c).unwrap();
            assert_eq!(new, c.new_keys.len() as u64);
            (c.pieces[0].verdicts.clone(), c.new_keys)
        };
        let (v, a) = judge(&mut d, &f, &[1, 2, 3, 4, 5, 3]);
        assert_eq!(v, [false, false, false, false, false, true]);
        let (v, b) = judge(&mut d, &f, &[3, 6, 7]);
        assert_eq!(v, [true, false, false]);
        // Chunk 1 recorded: its 5 entries are stale and pruned, 6 and 7 stay.
        d.written(&mut f, a).unwrap();
        assert_eq!(d.pending.len(), 2);
        let (v, c) = judge(&mut d, &f, &[1, 6, 8, 8]);
        assert_eq!(v, [true, true, false, true]);
        d.written(&mut f, b).unwrap();
        let (v, e) = judge(&mut d, &f, &[7, 8, 9]);
        assert_eq!(v, [true, true, false]);
        d.written(&mut f, c).unwrap();
        d.written(&mut f, e).unwrap();
        assert!(d.pending.is_empty(), "every judged chunk is recorded");
        assert_eq!(f.inserts(), 9);
    }

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
                Ok(true)
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
