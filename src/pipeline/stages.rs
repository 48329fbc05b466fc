//! The three stages of [`run`](super::run), each a type: the reader (a thread
//! of its own), the inserter (the calling thread, which owns the store) and
//! the writer (a scoped thread that hands each chunk to the sink).

use super::deferred::Deferred;
use super::{Ack, Chunk, Counts, MIN_PIECE_BYTES, Mode, Options, SIGNAL_POLL, Store, Taken};
use crate::input::{Reader, Source};
use anyhow::{Context, Result, anyhow};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender, channel, sync_channel};
use std::thread::{JoinHandle, Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// Stage 1: reads chunks of whole records and hashes them, on a thread of its
/// own, splitting a large chunk into pieces hashed on a rayon pool.
///
/// The thread is not scoped: a run that stops early (a signal, `query -q`'s
/// answer, a failed write) returns without waiting for a read that may never
/// end (a producer that stays silent). The thread then ends at its next
/// hand-over, or with the process.
pub(super) struct ReaderStage {
    chunks: Receiver<Result<Chunk>>,
    recycle: Sender<Chunk>,
    thread: JoinHandle<()>,
}

/// What the reader stage had for the inserter.
pub(super) enum Next {
    /// A hashed chunk, or the input error that ends the input.
    Chunk(Result<Chunk>),
    /// Nothing yet (look for a signal, then wait again).
    Wait,
    /// The input has ended.
    End,
}

impl ReaderStage {
    /// Starts reading `sources`, hashing records under `seed`.
    ///
    /// # Errors
    /// When the thread cannot be started.
    pub(super) fn spawn(sources: &[Source], opts: Options, seed: u64) -> Result<ReaderStage> {
        let (to_inserter, chunks) = sync_channel::<Result<Chunk>>(1);
        let (recycle, recycled) = channel::<Chunk>();
        let mut reader = Reader::new(sources, opts.term);
        if opts.mmap {
            reader.map_files();
        }
        if opts.stream_long && opts.keys.is_raw() {
            reader.stream_long_records(opts.long_bytes, seed);
        }
        let thread = std::thread::Builder::new()
            .name("seen-reader".into())
            .spawn(move || {
                let mut pool = None;
                loop {
                    let mut chunk = recycled.try_recv().unwrap_or_default();
                    let msg = match reader.fill(&mut chunk.data, opts.chunk_bytes) {
                        Ok(Some(filled)) => {
                            chunk.load(filled);
                            let big = chunk.len >= 2 * MIN_PIECE_BYTES;
                            if opts.threads > 1 && big && pool.is_none() {
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
        Ok(ReaderStage {
            chunks,
            recycle,
            thread,
        })
    }

    /// The next chunk, waiting at most [`SIGNAL_POLL`] for it.
    pub(super) fn next(&self) -> Next {
        self.next_within(SIGNAL_POLL)
    }

    /// [`ReaderStage::next`], waiting at most `wait`.
    pub(super) fn next_within(&self, wait: Duration) -> Next {
        match self.chunks.recv_timeout(wait) {
            Ok(msg) => Next::Chunk(msg),
            Err(RecvTimeoutError::Timeout) => Next::Wait,
            Err(RecvTimeoutError::Disconnected) => Next::End,
        }
    }

    /// Where the writer returns chunks for reuse.
    pub(super) fn recycler(&self) -> Sender<Chunk> {
        self.recycle.clone()
    }

    /// Stops taking chunks; with `wait` (the reader has ended or is ending:
    /// the input ended, or failed), waits for its thread.
    ///
    /// # Errors
    /// When the reader thread panicked.
    pub(super) fn finish(self, wait: bool) -> Result<()> {
        // Unblock a reader waiting to hand over a chunk.
        drop(self.chunks);
        if wait {
            self.thread
                .join()
                .map_err(|_| anyhow!("the reader thread panicked"))?;
        }
        Ok(())
    }
}

/// Stage 3: hands each chunk, in input order, to the sink on a thread of its
/// own, acknowledges its new keys (deferred mode) and returns it for reuse.
pub(super) struct WriterStage<'scope> {
    chunks: SyncSender<Chunk>,
    thread: ScopedJoinHandle<'scope, Result<()>>,
}

impl<'scope> WriterStage<'scope> {
    /// Starts the writer. `stopped` is set when it ends (the sink asked to
    /// stop, or failed), so the inserter stops waiting for input.
    ///
    /// # Errors
    /// When the thread cannot be started.
    pub(super) fn spawn<'env, S>(
        scope: &'scope Scope<'scope, 'env>,
        mut sink: S,
        acks: Option<Sender<Ack>>,
        recycle: Sender<Chunk>,
        stopped: &'env AtomicBool,
    ) -> Result<WriterStage<'scope>>
    where
        S: FnMut(&Chunk) -> Result<Taken> + Send + 'scope,
    {
        let (chunks, from_inserter) = sync_channel::<Chunk>(1);
        let thread = std::thread::Builder::new()
            .name("seen-writer".into())
            .spawn_scoped(scope, move || -> Result<()> {
                let write = || -> Result<()> {
                    for mut chunk in from_inserter {
                        let taken = sink(&chunk)?;
                        if let Some(ack) = &acks {
                            let mut keys = std::mem::take(&mut chunk.new_keys);
                            let mut stopped_at = None;
                            if let Taken::Stop { new } = taken {
                                keys.truncate(new);
                                stopped_at = Some(new);
                            }
                            let _ = ack.send((keys, stopped_at));
                        }
                        if taken != Taken::All {
                            return Ok(());
                        }
                        // Unmap a mapped span now: only a few stay mapped at a time.
                        chunk.mapped = None;
                        let _ = recycle.send(chunk);
                    }
                    Ok(())
                };
                let written = write();
                stopped.store(true, Ordering::Relaxed);
                written
            })
            .context("cannot start the writer thread")?;
        Ok(WriterStage { chunks, thread })
    }

    /// Hands a chunk over; `false` when the writer has stopped.
    pub(super) fn send(&self, chunk: Chunk) -> bool {
        self.chunks.send(chunk).is_ok()
    }

    /// Lets the writer end and waits for it: its error, if it had one.
    ///
    /// # Errors
    /// The sink's error, or a panic of the writer thread.
    pub(super) fn join(self) -> Result<()> {
        drop(self.chunks);
        self.thread
            .join()
            .map_err(|_| anyhow!("the writer thread panicked"))?
    }
}

/// How long a drained pipe must stay empty before the input counts as
/// paused and a commit span ends there: a producer about as fast as `seen`
/// drains its pipe many times a second without pausing, and a span per
/// drain would cost a commit each (checksums over the layers' changed
/// segments), hundreds a second.
const PAUSE: Duration = Duration::from_millis(20);

/// Why the inserter stopped taking chunks.
pub(super) enum Stop {
    /// The input ended.
    Ended,
    /// The input failed (after everything before the error went through).
    InputFailed(anyhow::Error),
    /// The store failed (could not grow, lock, or commit); nothing of the
    /// chunk at hand is written.
    Failed(anyhow::Error),
    /// The writer stopped (the sink asked to, or failed: its error comes at
    /// its join).
    WriterStopped,
    /// SIGINT or SIGTERM arrived.
    Signalled,
}

/// Stage 2: runs the store's batch test-and-set (or lookup, or the deferred
/// judgement) over every chunk, strictly in input order, on the calling
/// thread, which owns the store.
pub(super) struct Inserter<'f, B> {
    filter: &'f mut B,
    /// [`Mode::Lookup`]: verdicts only, the store is not changed.
    lookup: bool,
    deferred: Option<(Deferred, Receiver<Ack>)>,
    /// A journalling store in [`Mode::Insert`]: where the writer says which
    /// chunks it has written ([`Journals::written`](super::Journals::written)).
    journal: Option<Receiver<Ack>>,
    /// What it did.
    pub(super) counts: Counts,
}

impl<'f, B: Store> Inserter<'f, B> {
    /// The inserter for `mode`, and (deferred mode) where the writer
    /// acknowledges the keys of each chunk it has written.
    pub(super) fn new(filter: &'f mut B, mode: Mode) -> (Self, Option<Sender<Ack>>) {
        let lookup = matches!(mode, Mode::Lookup);
        let (deferred, journal, ack) = match mode {
            Mode::Deferred(commit) => {
                let (ack, acks) = channel();
                (Some((Deferred::new(commit), acks)), None, Some(ack))
            }
            Mode::Insert if filter.journals().is_some() => {
                let (ack, acks) = channel();
                (None, Some(acks), Some(ack))
            }
            _ => (None, None, None),
        };
        let inserter = Inserter {
            filter,
            lookup,
            deferred,
            journal,
            counts: Counts::default(),
        };
        (inserter, ack)
    }

    /// Takes chunks from `reader`, judges them and hands them to `writer`
    /// until the input ends or something stops the run.
    pub(super) fn run(
        &mut self,
        reader: &ReaderStage,
        writer: &WriterStage,
        stopped: &AtomicBool,
    ) -> Stop {
        // The last chunk ended where a pipe was drained: the input may be
        // pausing.
        let mut drained = false;
        // The input has paused and a span is open: it ends once it has
        // lasted long enough (deferred mode), asked again at each poll.
        let mut idle = false;
        loop {
            if crate::signals::received() != 0 {
                return Stop::Signalled;
            }
            if stopped.load(Ordering::Relaxed) {
                return Stop::WriterStopped;
            }
            let waiting = Instant::now();
            let next = if drained {
                reader.next_within(PAUSE)
            } else {
                reader.next()
            };
            if let Some((d, _)) = &mut self.deferred
                && d.span_open
            {
                d.span_waited += waiting.elapsed();
            }
            let mut chunk = match next {
                Next::Chunk(Ok(chunk)) => chunk,
                Next::Chunk(Err(e)) => return Stop::InputFailed(e),
                Next::Wait if drained || idle => {
                    // Nothing for PAUSE after a drained pipe: the input has
                    // paused, and the span ends (a waiting stream holds
                    // no lock), as soon as it has lasted long enough.
                    drained = false;
                    if let Some(stop) = self.commit_or_stop(true) {
                        return stop;
                    }
                    idle = self.deferred.as_ref().is_some_and(|(d, _)| d.span_open);
                    continue;
                }
                Next::Wait => continue,
                Next::End => return Stop::Ended,
            };
            idle = false;
            if let Err(e) = self.judge(&mut chunk) {
                return Stop::Failed(e);
            }
            for p in &chunk.pieces[..chunk.used] {
                self.counts.missing_field += p.missing_field;
                self.counts.not_url += p.not_url;
            }
            crate::progress::advance(chunk.len as u64, chunk.records());
            drained = chunk.flush;
            if !writer.send(chunk) {
                return Stop::WriterStopped;
            }
            if let Some(stop) = self.commit_or_stop(false) {
                return stop;
            }
        }
    }

    /// [`Inserter::commit_if_due`], and why the run stops if it must.
    fn commit_or_stop(&mut self, pause: bool) -> Option<Stop> {
        match self.commit_if_due(pause) {
            Ok(true) => None,
            Ok(false) => Some(Stop::WriterStopped),
            Err(e) => Some(Stop::Failed(e)),
        }
    }

    /// Sets the chunk's verdicts as the mode says.
    ///
    /// # Errors
    /// When the store fails (could not grow, or be locked).
    fn judge(&mut self, chunk: &mut Chunk) -> Result<()> {
        let filter = &mut *self.filter;
        let counts = &mut self.counts;
        match (&mut self.deferred, self.lookup) {
            (Some((d, acks)), _) => {
                d.begin(filter)?;
                d.drain(filter, acks, false)?;
                let n = chunk.records();
                let new = d.judge(filter, chunk)?;
                counts.read += n;
                d.span_lines += n;
                counts.new += new;
            }
            (None, false) => {
                if let Some(acks) = &self.journal
                    && let Some(j) = filter.journals()
                {
                    for (_, stopped_at) in acks.try_iter() {
                        j.written(stopped_at)?;
                    }
                    j.judging(chunk)?;
                }
                if filter.whole_chunks() && chunk.used > 1 {
                    let pieces = &mut chunk.pieces[..chunk.used];
                    let hashes: Vec<_> = pieces.iter().flat_map(|p| p.hashes.clone()).collect();
                    let mut verdicts = Vec::with_capacity(hashes.len());
                    counts.read += hashes.len() as u64;
                    counts.new += filter.insert_batch(&hashes, &mut verdicts)?;
                    let mut at = 0;
                    for p in pieces {
                        p.verdicts.clear();
                        p.verdicts
                            .extend_from_slice(&verdicts[at..at + p.hashes.len()]);
                        at += p.hashes.len();
                    }
                } else {
                    for p in &mut chunk.pieces[..chunk.used] {
                        counts.read += p.hashes.len() as u64;
                        counts.new += filter.insert_batch(&p.hashes, &mut p.verdicts)?;
                    }
                }
            }
            (None, true) => {
                for p in &mut chunk.pieces[..chunk.used] {
                    counts.read += p.hashes.len() as u64;
                    filter.contains_batch(&p.hashes, &mut p.verdicts)?;
                }
            }
        }
        Ok(())
    }

    /// In deferred mode, when the span has run its course (`pause`: the
    /// input paused), waits for the writer to finish the span's chunks and
    /// commits them. Returns `false` when the writer stopped.
    ///
    /// # Errors
    /// When the store cannot record or commit.
    fn commit_if_due(&mut self, pause: bool) -> Result<bool> {
        let Some((d, acks)) = &mut self.deferred else {
            return Ok(true);
        };
        if !d.due(pause) {
            return Ok(true);
        }
        if !d.drain(self.filter, acks, true)? {
            return Ok(false);
        }
        d.commit(self.filter)?;
        Ok(true)
    }

    /// After the writer has ended: records everything it acknowledged and
    /// closes the open span (deferred mode).
    ///
    /// # Errors
    /// The first error of the two (the commit is tried after a failed drain).
    pub(super) fn finish(&mut self) -> Result<()> {
        if let Some(acks) = &self.journal
            && let Some(j) = self.filter.journals()
        {
            // The writer has ended: every acknowledgement is in.
            for (_, stopped_at) in acks.try_iter() {
                j.written(stopped_at)?;
            }
        }
        let Some((d, acks)) = &mut self.deferred else {
            return Ok(());
        };
        let drained = d.drain(self.filter, acks, false).map(|_| ());
        let committed = if d.span_open {
            d.commit(self.filter)
        } else {
            Ok(())
        };
        self.counts.spans = d.spans;
        self.counts.staged_spans = d.staged_spans;
        drained.and(committed)
    }
}
