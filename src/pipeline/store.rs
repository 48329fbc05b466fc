//! The port the pipeline owns: what it needs of whatever holds the bits.
//!
//! A small core every store implements ([`Store`]: the seed, a lookup, a
//! test-and-set, a record), and optional capabilities a store offers by
//! returning itself from a hook, in the manner of ripgrep's `Sink`:
//! [`Store::commits`] (the commit protocol of `dedup -f`: spans, staging) and
//! [`Store::journals`] (a journal of the lines judged new until written).

use super::Chunk;
use crate::hash::Hash128;
use std::time::Duration;

/// What the commit span before did, for [`Commits::stages`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LastSpan {
    /// Keys it judged new.
    pub new_keys: u64,
    /// Lines (records) it judged.
    pub lines: u64,
    /// Seconds from its start to its commit.
    pub secs: f64,
    /// Of those, the seconds it waited for input: a span that waited for
    /// less than half of its time was kept busy by its input, which could
    /// have gone faster.
    pub waited: f64,
    /// Spans stretch with their commit's cost (no `--commit-every` was
    /// given): a span lasts at least [`STRETCH`] times as long as the
    /// commit before it took.
    pub stretches: bool,
}

/// How many times the last commit's duration a commit span lasts at least,
/// when spans stretch ([`LastSpan::stretches`]): commits then take at most
/// about a seventeenth of a run's time, however large the filter they
/// write back.
pub const STRETCH: u32 = 16;

/// The port this pipeline owns and consumes (as ripgrep's searcher owns its
/// `Sink`): what it needs from whatever holds the bits — an anonymous mapping,
/// a mapped file, a remote store. Hashes in, verdicts out, in order. The
/// commit protocol of [`Mode::Deferred`](super::Mode::Deferred) and the
/// journal are optional capabilities ([`Store::commits`],
/// [`Store::journals`]). A store implements it; the pipeline knows nothing
/// else of it. Every call is per batch, never per key.
pub trait Store {
    /// Seed to hash records with for this filter.
    fn seed(&self) -> u64;
    /// `out[i]` = whether key `i` is (probably) present. Changes nothing.
    ///
    /// # Errors
    /// A store that cannot be read (a remote one that cannot be reached).
    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> anyhow::Result<()>;
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

    /// The commit protocol of `dedup -f`, if the store takes part in it (a
    /// shared, persistent filter: a lock per span, staging). `None`: the
    /// pipeline runs the protocol without the store's help (spans begin and
    /// end with nothing to do, and nothing is staged).
    fn commits(&mut self) -> Option<&mut dyn Commits> {
        None
    }

    /// The journal of a store whose test-and-set records at once, on
    /// another machine, in [`Mode::Insert`](super::Mode::Insert): it then
    /// hears of every chunk before its judgement ([`Journals::judging`])
    /// and after its output ([`Journals::written`]). `None`: no journal.
    fn journals(&mut self) -> Option<&mut dyn Journals> {
        None
    }

    /// Whether [`Store::insert_batch`] takes a whole chunk's keys at once
    /// rather than a piece's (a store whose cost is per call, not per key,
    /// batches more).
    fn whole_chunks(&self) -> bool {
        false
    }

    /// Deletion (`seen forget`), if the store keeps a forget list. `None`:
    /// it cannot forget.
    fn forgets(&mut self) -> Option<&mut dyn Forgets> {
        None
    }
}

/// Forgetting keys, exactly: a key is present when a layer holds it and it
/// is not on the store's forget list ([`crate::filter::forget`]).
pub trait Forgets {
    /// Forgets the keys that are present, in one commit that writers see
    /// whole, before or after one of theirs: `out[i]` = whether key `i` was
    /// present (and is now forgotten). Returns how many keys were added to
    /// the list.
    ///
    /// # Errors
    /// A store that cannot be locked or written; the batch is then not
    /// forgotten (or, after a crash, forgotten whole).
    fn forget_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> anyhow::Result<u64>;

    /// Keys on the forget list now.
    fn forgotten(&self) -> u64;
}

/// The commit protocol of [`Mode::Deferred`](super::Mode::Deferred) (judge,
/// write, record), span by span: [`Commits::begin_span`],
/// [`Store::record_batch`], [`Commits::end_span`]; and, for a store that can
/// judge a span's keys in its own memory, staging ([`Commits::stages`]).
pub trait Commits {
    /// Starts a commit span: a shared, persistent filter takes its lock and
    /// picks up what other processes committed.
    ///
    /// # Errors
    /// When the lock cannot be taken or the file has become unusable.
    fn begin_span(&mut self) -> anyhow::Result<()>;

    /// Ends a commit span: counters written, lock released; a store that
    /// staged the span's keys ([`Commits::stage_batch`]) records them now.
    ///
    /// # Errors
    /// When the header cannot be written.
    fn end_span(&mut self) -> anyhow::Result<()>;

    /// Whether the commit span just begun judges its keys in the store's
    /// own memory ([`Commits::stage_batch`]), recorded all at once by
    /// [`Commits::end_span`], rather than by a lookup, the pipeline's set of
    /// keys judged new, and [`Store::record_batch`] once their chunk is
    /// written. Asked after every [`Commits::begin_span`], when nothing is
    /// unrecorded, with what the previous span did (`None` for the
    /// first): the store may change how it holds its bits then.
    ///
    /// # Errors
    /// When the store cannot change how it holds its bits.
    fn stages(&mut self, last_span: Option<LastSpan>) -> anyhow::Result<bool> {
        let _ = last_span;
        Ok(false)
    }

    /// How long the commit of the span just begun is foreseen to take,
    /// before any commit was timed: the first span of a run stretches
    /// with it, as later ones do with the last commit's time
    /// ([`LastSpan::stretches`]). Zero (no foresight) unless the store
    /// knows; asked after [`Commits::stages`].
    fn foreseen_commit(&self) -> Duration {
        Duration::ZERO
    }

    /// A test-and-set as [`Store::insert_batch`] whose keys are not recorded
    /// before [`Commits::end_span`], and not at all if [`Commits::unstage`]
    /// comes first. Only called in a span for which [`Commits::stages`]
    /// said yes.
    ///
    /// # Errors
    /// As [`Store::insert_batch`], and always for a store that does not stage.
    fn stage_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> anyhow::Result<u64> {
        let _ = (hashes, out);
        anyhow::bail!("this store cannot stage keys")
    }

    /// Drops every key staged in this span (some of their lines were not
    /// written): the store is as the span found it.
    ///
    /// # Errors
    /// When the store's recorded bits cannot be read back.
    fn unstage(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The journal of a store whose test-and-set records at once, on another
/// machine (Redis): the lines it judged new are kept until they are written,
/// so that a killed run loses none.
pub trait Journals {
    /// A chunk is about to be judged (its records are in `chunk`); the
    /// store writes them down first.
    ///
    /// # Errors
    /// When the journal cannot be written.
    fn judging(&mut self, chunk: &Chunk) -> anyhow::Result<()>;

    /// The chunk judged earliest that was not reported written yet has been
    /// written: all its new records, or only the first `new` of them
    /// (`Some(new)`: the sink stopped there).
    ///
    /// # Errors
    /// When the journal cannot be written.
    fn written(&mut self, new: Option<usize>) -> anyhow::Result<()>;
}
