//! The commit protocol of [`Mode::Deferred`](super::Mode::Deferred) (`dedup -f`):
//! judge a chunk against the store and the keys judged new but not yet
//! recorded, let the writer hand it to the kernel, then record its new keys,
//! span by span. A line is never recorded before it is printed.
//!
//! A store that stages ([`Commits::stages`](super::Commits::stages)) judges a span's keys by a
//! test-and-set in its own memory instead, and records them all at the
//! span's end, once every chunk judged in it was written; when one was not
//! (the sink stopped or failed), the span is unstaged, and the keys
//! written are recorded if the sink may stop inside a span
//! ([`Commit::stops`]: `dedup -m`); otherwise none is (the sink failed: its
//! lines come again in the next run, as after a kill), and the span keeps
//! no keys.

use super::{Ack, Chunk, Commit, LastSpan, STRETCH, Store};
use crate::hash::Hash128;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// The exact set of keys judged new and not yet recorded, as a map from key to
/// the number of the chunk that judged it new: an entry counts only while that
/// chunk is not recorded, so recording removes nothing key by key (stale
/// entries are pruned in bulk, see [`Deferred::tidy`]). A recorded key is never
/// looked up here anyway: the filter holds it, and a Bloom filter has no false
/// negatives.
///
/// Keys are `(lo, hi)` rather than `u128`, whose 16-byte alignment would pad
/// every entry to 32 bytes instead of 24.
type Pending = HashMap<(u64, u64), u64, crate::hash::BuildKeyHasher>;

/// Pending entries at which stale ones are first pruned.
const PRUNE_AT: usize = 1 << 17;

/// Keys judged new a span may hold before it ends, whatever `--commit-every`
/// says: when the output is a file, every new key of a span waits in memory
/// until the span's commit (24 bytes in the pending map, at most 2 buckets
/// per entry, plus 16 in `acked`), so this keeps the span's memory under
/// about 40 MiB (plus one chunk's keys) instead of growing with the input.
pub const MAX_PENDING_KEYS: usize = 1 << 19;

/// Keys written a staged span whose sink may stop inside it
/// ([`Commit::stops`]) may keep before it ends: they are kept (16 bytes
/// each) only in case the span must be unstaged, so 16 MiB.
const MAX_STAGED_KEYS: usize = 1 << 20;

fn pending_key(h: Hash128) -> (u64, u64) {
    (h.lo, h.hi)
}

/// The inserter's state in [`Mode::Deferred`].
pub(super) struct Deferred {
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
    /// Judged new and written out, in input order: recorded at the span's
    /// end (when staging: kept only if the sink may stop, and recorded only
    /// if the span is unstaged).
    acked: Vec<Hash128>,
    /// A key judged new was written in this span (as the writer's
    /// acknowledgements tell; a staged span's keys do not come back
    /// unless kept, see `span_new`): the outputs are synced before it is
    /// recorded.
    unsynced: bool,
    /// This span's keys are staged in the store ([`Commits::stages`](super::Commits::stages)).
    staging: bool,
    /// A chunk of this span was written only in part (the sink stopped).
    partial: bool,
    /// Keys judged new in this span.
    span_new: u64,
    /// What the span before did (`None` before the first).
    last_span: Option<LastSpan>,
    /// How long the last commit took.
    last_commit: Duration,
    /// Spans ended, and those staged.
    pub(super) spans: u64,
    pub(super) staged_spans: u64,
    pub(super) span_open: bool,
    pub(super) span_lines: u64,
    /// How long this span has waited for input.
    pub(super) span_waited: Duration,
    span_start: Instant,
}

impl Deferred {
    pub(super) fn new(commit: Commit) -> Deferred {
        Deferred {
            commit,
            pending: Pending::default(),
            prune_at: PRUNE_AT,
            judged: 0,
            written: 0,
            recorded: 0,
            acked: Vec::new(),
            unsynced: false,
            staging: false,
            partial: false,
            span_new: 0,
            last_span: None,
            last_commit: Duration::ZERO,
            spans: 0,
            staged_spans: 0,
            span_open: false,
            span_lines: 0,
            span_waited: Duration::ZERO,
            span_start: Instant::now(),
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
    pub(super) fn judge<B: Store>(&mut self, filter: &mut B, chunk: &mut Chunk) -> Result<u64> {
        chunk.new_keys.clear();
        if self.staging {
            return self.stage(filter, chunk);
        }
        // Room for the keys the filter does not hold, before any is judged.
        let mut absent = 0;
        for p in &mut chunk.pieces[..chunk.used] {
            filter.contains_batch(&p.hashes, &mut p.verdicts)?;
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
        self.span_new += new;
        Ok(new)
    }

    /// [`Deferred::judge`] in a staged span: the store's test-and-set.
    /// The chunk's new keys come back from the writer only if the sink may
    /// stop ([`Commit::stops`]): no other span records them itself.
    fn stage<B: Store>(&mut self, filter: &mut B, chunk: &mut Chunk) -> Result<u64> {
        let keep = self.commit.stops;
        if keep {
            let records = chunk.records() as usize;
            crate::memory::reserve(&mut chunk.new_keys, records, "a chunk's new keys")?;
        }
        // Counted first: a chunk that fails half staged is not written, so
        // the span is unstaged.
        self.judged += 1;
        let Some(store) = filter.commits() else {
            anyhow::bail!("this store cannot stage keys");
        };
        let mut new = 0;
        for p in &mut chunk.pieces[..chunk.used] {
            new += store.stage_batch(&p.hashes, &mut p.verdicts)?;
            if keep {
                let keys = p.hashes.iter().zip(&p.verdicts);
                chunk
                    .new_keys
                    .extend(keys.filter(|(_, seen)| !**seen).map(|(h, _)| *h));
            }
        }
        self.span_new += new;
        Ok(new)
    }

    /// Opens a span if none is open: the filter's lock, then a fresh count,
    /// and whether the store stages this span's keys.
    pub(super) fn begin<B: Store>(&mut self, filter: &mut B) -> Result<()> {
        if !self.span_open {
            let mut store = filter.commits();
            if let Some(c) = &mut store {
                c.begin_span()?;
            }
            self.span_open = true;
            self.span_lines = 0;
            self.span_waited = Duration::ZERO;
            self.staging = match &mut store {
                Some(c) => c.stages(self.last_span)?,
                None => false,
            };
            if self.last_span.is_none() {
                // No commit timed yet: the store's foresight stands in.
                self.last_commit = store.map_or(Duration::ZERO, |c| c.foreseen_commit());
            }
            // After the store changed how it holds its bits: the span's
            // bounds and rate count judging time only.
            self.span_start = Instant::now();
        }
        Ok(())
    }

    /// Whether the span has run its course after a chunk, or while the
    /// input pauses (`pause`). Memory bounds end it at once; a pause and
    /// `--commit-every`'s default bounds only once it has lasted [`STRETCH`]
    /// times the last commit (the inserter asks again while the pause lasts).
    pub(super) fn due(&self, pause: bool) -> bool {
        if !self.span_open {
            return false;
        }
        if self.pending.len() >= MAX_PENDING_KEYS
            || (self.staging && self.acked.len() >= MAX_STAGED_KEYS)
        {
            return true;
        }
        let elapsed = self.span_start.elapsed();
        let stretched = !self.commit.stretch || elapsed >= STRETCH * self.last_commit;
        let bound = self.span_lines >= self.commit.lines || elapsed >= self.commit.every;
        (pause || bound) && stretched
    }

    /// Takes the writer's acknowledgements waiting now, or with `wait` every
    /// chunk still in flight (unless the writer stopped, its error coming at
    /// its join). Returns whether no chunk is left in flight.
    pub(super) fn drain<B: Store>(
        &mut self,
        filter: &mut B,
        acks: &Receiver<Ack>,
        wait: bool,
    ) -> Result<bool> {
        loop {
            let keys = if wait && self.in_flight() > 0 {
                acks.recv().ok()
            } else {
                acks.try_recv().ok()
            };
            match keys {
                Some((keys, stopped_at)) => {
                    self.partial |= stopped_at.is_some();
                    self.written(filter, keys)?;
                }
                None => return Ok(self.in_flight() == 0),
            }
        }
    }

    /// Takes the keys of a chunk the writer has handed to the kernel. Unless
    /// the output must be synced first, they are recorded at once (so the
    /// pending set stays a few chunks small).
    fn written<B: Store>(&mut self, filter: &mut B, keys: Vec<Hash128>) -> Result<()> {
        self.unsynced |= !keys.is_empty();
        if self.staging && !self.commit.stops {
            // Recorded whole at the span's end, or not at all.
            self.written += 1;
            return Ok(());
        }
        if !self.commit.sync.is_empty() || self.staging {
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
    /// and ends the span. A staged span is recorded whole by the store
    /// when every chunk judged in it was written whole; otherwise it is
    /// unstaged and the keys written are recorded (those it kept: none
    /// unless the sink may stop).
    pub(super) fn commit<B: Store>(&mut self, filter: &mut B) -> Result<()> {
        let start = Instant::now();
        if self.unsynced || (self.staging && self.span_new > 0) {
            for (file, name) in &self.commit.sync {
                rustix::fs::fdatasync(file)
                    .map_err(std::io::Error::from)
                    .with_context(|| format!("cannot sync {name} before recording its lines"))?;
            }
        }
        if self.staging && (self.written < self.judged || self.partial) {
            if let Some(c) = filter.commits() {
                c.unstage()?;
            }
            filter.record_batch(&self.acked)?;
        } else if !self.staging && !self.acked.is_empty() {
            filter.record_batch(&self.acked)?;
        }
        self.acked.clear();
        self.unsynced = false;
        self.recorded = self.written;
        self.tidy();
        self.spans += 1;
        self.staged_spans += u64::from(self.staging);
        self.span_open = false;
        self.staging = false;
        self.partial = false;
        self.last_span = Some(LastSpan {
            new_keys: std::mem::take(&mut self.span_new),
            lines: self.span_lines,
            secs: (start - self.span_start).as_secs_f64(),
            waited: self.span_waited.as_secs_f64(),
            stretches: self.commit.stretch,
        });
        let ended = filter.commits().map_or(Ok(()), |c| c.end_span());
        self.last_commit = start.elapsed();
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::super::chunk::Piece;
    use super::super::{Chunk, Commits};
    use super::*;
    use crate::file::MemFilter;
    use crate::filter::sizing::plan;
    use crate::hash::hash;

    /// A chunk of one piece holding the hashes of `keys`.
    fn chunk_of(keys: &[u32]) -> Chunk {
        let mut c = Chunk::default();
        c.pieces.push(Piece::default());
        c.pieces[0].hashes = keys.iter().map(|k| hash(&k.to_le_bytes(), 1)).collect();
        c.used = 1;
        c
    }

    /// A span ends at its bounds, or, when spans stretch (the default
    /// bounds), only once it has also lasted [`STRETCH`] times the last
    /// commit; a pause and the memory bounds end it at once.
    #[test]
    fn spans_stretch_with_their_commits_cost() {
        let commit = |stretch, stops| Commit {
            lines: 10,
            every: Duration::MAX,
            stretch,
            stops,
            sync: Vec::new(),
        };
        let mut d = Deferred::new(commit(true, false));
        assert!(!d.due(true), "no span open");
        d.span_open = true;
        assert!(!d.due(false), "no bound reached");
        assert!(d.due(true), "a pause ends it");
        d.span_lines = 10;
        assert!(d.due(false), "no commit yet: the bound ends it");
        d.last_commit = Duration::from_secs(3600);
        assert!(!d.due(false), "a long commit stretches the span");
        assert!(!d.due(true), "past a pause too");
        d.commit = commit(false, false);
        assert!(d.due(false), "--commit-every: its bounds hold");
        assert!(d.due(true), "and a pause ends it");
        // Keys kept by a staged span the sink may stop: a memory bound.
        d.commit = commit(true, true);
        d.span_lines = 0;
        d.staging = true;
        d.acked = vec![Hash128 { lo: 0, hi: 0 }; MAX_STAGED_KEYS];
        assert!(d.due(false));
    }

    /// The first span of a run, before any commit was timed, stretches
    /// with the commit the store foresees; a later one with the last
    /// commit's time, whatever the store foresees then.
    #[test]
    fn a_first_span_stretches_with_the_foreseen_commit() {
        struct Foresees(MemFilter, Duration);
        impl Store for Foresees {
            fn seed(&self) -> u64 {
                self.0.seed()
            }
            fn contains_batch(&mut self, h: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
                self.0.contains_batch(h, out)
            }
            fn insert_batch(&mut self, h: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
                self.0.insert_batch(h, out)
            }
            fn commits(&mut self) -> Option<&mut dyn Commits> {
                Some(self)
            }
        }
        impl Commits for Foresees {
            fn begin_span(&mut self) -> Result<()> {
                Ok(())
            }
            fn end_span(&mut self) -> Result<()> {
                Ok(())
            }
            fn foreseen_commit(&self) -> Duration {
                self.1
            }
        }
        let commit = || Commit {
            lines: 10,
            every: Duration::MAX,
            stretch: true,
            stops: false,
            sync: Vec::new(),
        };
        let mem = || MemFilter::new(&plan(1000, 1e-9).unwrap(), 1).unwrap();
        for (foreseen, due) in [(Duration::ZERO, true), (Duration::from_secs(3600), false)] {
            let mut f = Foresees(mem(), foreseen);
            let mut d = Deferred::new(commit());
            d.begin(&mut f).unwrap();
            d.span_lines = 10;
            assert_eq!(d.due(false), due, "first span, {foreseen:?} foreseen");
            // The commit is timed (a moment): the next span stretches
            // with that, not with what the store foresees.
            d.commit(&mut f).unwrap();
            d.begin(&mut f).unwrap();
            assert!(
                d.last_commit < Duration::from_secs(60),
                "{foreseen:?} foreseen"
            );
        }
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
            stretch: false,
            stops: false,
            sync: Vec::new(),
        });
        d.prune_at = 4;
        d.span_open = true;
        let judge = |d: &mut Deferred, f: &mut MemFilter, keys: &[u32]| {
            let mut c = chunk_of(keys);
            let new = d.judge(f, &mut c).unwrap();
            assert_eq!(new, c.new_keys.len() as u64);
            (c.pieces[0].verdicts.clone(), c.new_keys)
        };
        let (v, a) = judge(&mut d, &mut f, &[1, 2, 3, 4, 5, 3]);
        assert_eq!(v, [false, false, false, false, false, true]);
        let (v, b) = judge(&mut d, &mut f, &[3, 6, 7]);
        assert_eq!(v, [true, false, false]);
        // Chunk 1 recorded: its 5 entries are stale and pruned, 6 and 7 stay.
        d.written(&mut f, a).unwrap();
        assert_eq!(d.pending.len(), 2);
        let (v, c) = judge(&mut d, &mut f, &[1, 6, 8, 8]);
        assert_eq!(v, [true, true, false, true]);
        d.written(&mut f, b).unwrap();
        let (v, e) = judge(&mut d, &mut f, &[7, 8, 9]);
        assert_eq!(v, [true, true, false]);
        d.written(&mut f, c).unwrap();
        d.written(&mut f, e).unwrap();
        assert!(d.pending.is_empty(), "every judged chunk is recorded");
        assert_eq!(f.inserts(), 9);
    }
}
