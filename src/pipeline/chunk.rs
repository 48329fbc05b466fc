//! The unit of work that flows through the pipeline: a chunk of whole records
//! (read into a buffer, or mapped where they lie in a file), split into
//! pieces that are hashed in parallel, with a verdict per record once the
//! inserter has seen it. Sinks read a chunk through [`Chunk::for_each`],
//! [`Chunk::for_each_run`] and [`Chunk::count`].

use super::MIN_PIECE_BYTES;
use crate::hash::{Hash128, hash};
use crate::input::{Filled, MappedSpan};
use crate::keys::{KeySpec, Keyer};
use anyhow::Result;
use rayon::prelude::*;

/// A run of records inside a chunk, hashed by one task.
#[derive(Debug, Default)]
pub(crate) struct Piece {
    pub(super) start: usize,
    /// End (exclusive, after the terminator) of each record.
    pub(super) ends: Vec<usize>,
    pub(super) hashes: Vec<Hash128>,
    pub(super) verdicts: Vec<bool>,
    /// Records without the key field, and keys that were not URLs (key options).
    pub(super) missing_field: u64,
    pub(super) not_url: u64,
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
    pub(super) data: Vec<u8>,
    /// The records, when they were mapped instead of read into `data`.
    pub(super) mapped: Option<MappedSpan>,
    pub(super) len: usize,
    pub(super) pieces: Vec<Piece>,
    pub(super) used: usize,
    pub(super) flush: bool,
    /// Keys judged new in this chunk, to record once it is written (deferred mode).
    pub(super) new_keys: Vec<Hash128>,
    /// The hash of a long record streamed past by the reader: the chunk then
    /// holds only its terminator.
    pub(super) prehashed: Option<Hash128>,
}

impl Chunk {
    /// Takes what the reader filled: records in the buffer, a mapped span,
    /// or one long record hashed as it streamed past (the buffer then holds
    /// just its terminator).
    pub(super) fn load(&mut self, filled: Filled) {
        (self.flush, self.mapped, self.prehashed) = (false, None, None);
        match filled {
            Filled::Buffered { len, drained } => (self.len, self.flush) = (len, drained),
            Filled::Mapped(w) => {
                self.len = w.bytes().len();
                self.mapped = Some(w);
            }
            Filled::Streamed(h) => (self.len, self.prehashed) = (1, Some(h)),
        }
    }

    /// Records (keys) in the chunk.
    pub(crate) fn records(&self) -> u64 {
        self.pieces[..self.used]
            .iter()
            .map(|p| p.hashes.len() as u64)
            .sum()
    }
    /// Whether the input paused after this chunk (a drained pipe): sinks should
    /// flush their output so the lines reach the reader downstream now.
    pub fn wants_flush(&self) -> bool {
        self.flush
    }

    /// The records, back to back (for a store's journal).
    pub fn records_bytes(&self) -> &[u8] {
        self.bytes()
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

    /// Calls `f(record, hash, verdict)` for every record (terminator
    /// included), in order.
    pub fn for_each_hashed<'a>(&'a self, mut f: impl FnMut(&'a [u8], Hash128, bool)) {
        let data = self.bytes();
        for p in &self.pieces[..self.used] {
            let starts = std::iter::once(p.start).chain(p.ends.iter().copied());
            let keys = p.hashes.iter().zip(&p.verdicts);
            for ((s, e), (h, v)) in starts.zip(p.ends.iter().copied()).zip(keys) {
                f(&data[s..e], *h, *v);
            }
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
    pub(super) fn hash(
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

/// A chunk's records: its mapped span, else the first `len` bytes of its buffer.
fn records<'a>(mapped: Option<&'a MappedSpan>, data: &'a [u8], len: usize) -> &'a [u8] {
    match mapped {
        Some(w) => w.bytes(),
        None => &data[..len],
    }
}
