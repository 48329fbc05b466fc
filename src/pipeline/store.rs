//! The port the pipeline owns: what it needs of whatever holds the bits.

use super::Chunk;
use crate::hash::Hash128;

/// What the window before did, for [`Store::stages`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LastWindow {
    /// Keys it judged new.
    pub new_keys: u64,
    /// Lines (records) it judged.
    pub lines: u64,
    /// Seconds from its start to its commit.
    pub secs: f64,
    /// Of those, the seconds it waited for input: a window that waited for
    /// less than half of its time was kept busy by its input, which could
    /// have gone faster.
    pub waited: f64,
    /// Windows stretch with their commit's cost (no `--commit-every` was
    /// given): a window lasts at least [`STRETCH`] times as long as the
    /// commit before it took.
    pub stretches: bool,
}

/// How many times the last commit's duration a window lasts at least, when
/// windows stretch ([`LastWindow::stretches`]): commits then take at most
/// about a seventeenth of a run's time, however large the filter they
/// write back.
pub const STRETCH: u32 = 16;

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

    /// Starts a commit window (see `pipeline::Mode::Deferred`): a shared,
    /// persistent filter takes its lock and picks up what other processes
    /// committed. Nothing for other filters.
    ///
    /// # Errors
    /// When the lock cannot be taken or the file has become unusable.
    fn begin_window(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Whether the store keeps a journal of the lines it judges new in
    /// [`Mode::Insert`](super::Mode::Insert) until they are written (a store
    /// whose test-and-set records at once, on another machine): then it
    /// hears of every chunk before its judgement ([`Store::judging`]) and
    /// after its output ([`Store::written`]).
    fn journals(&self) -> bool {
        false
    }

    /// A chunk is about to be judged (its records are in `chunk`); a
    /// journalling store writes them down first.
    ///
    /// # Errors
    /// When the journal cannot be written.
    fn judging(&mut self, chunk: &Chunk) -> anyhow::Result<()> {
        let _ = chunk;
        Ok(())
    }

    /// The chunk judged earliest that was not reported written yet has been
    /// written: all its new records, or only the first `new` of them
    /// (`Some(new)`: the sink stopped there).
    ///
    /// # Errors
    /// When the journal cannot be written.
    fn written(&mut self, new: Option<usize>) -> anyhow::Result<()> {
        let _ = new;
        Ok(())
    }

    /// Ends a commit window: counters written, lock released; a store that
    /// staged the window's keys ([`Store::stage_batch`]) records them now.
    ///
    /// # Errors
    /// When the header cannot be written.
    fn end_window(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Whether the commit window just begun judges its keys in the store's
    /// own memory ([`Store::stage_batch`]), recorded all at once by
    /// [`Store::end_window`], rather than by a lookup, the pipeline's set of
    /// keys judged new, and [`Store::record_batch`] once their chunk is
    /// written. Asked after every [`Store::begin_window`], when nothing is
    /// unrecorded, with what the previous window did (`None` for the
    /// first): the store may change how it holds its bits then.
    ///
    /// # Errors
    /// When the store cannot change how it holds its bits.
    fn stages(&mut self, last_window: Option<LastWindow>) -> anyhow::Result<bool> {
        let _ = last_window;
        Ok(false)
    }

    /// How long the commit of the window just begun is foreseen to take,
    /// before any commit was timed: the first window of a run stretches
    /// with it, as later ones do with the last commit's time
    /// ([`LastWindow::stretches`]). Zero (no foresight) unless the store
    /// knows; asked after [`Store::stages`].
    fn foreseen_commit(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// A test-and-set as [`Store::insert_batch`] whose keys are not recorded
    /// before [`Store::end_window`], and not at all if [`Store::unstage`]
    /// comes first. Only called in a window for which [`Store::stages`]
    /// said yes.
    ///
    /// # Errors
    /// As [`Store::insert_batch`], and always for a store that does not stage.
    fn stage_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> anyhow::Result<u64> {
        let _ = (hashes, out);
        anyhow::bail!("this store cannot stage keys")
    }

    /// Drops every key staged in this window (some of their lines were not
    /// written): the store is as the window found it.
    ///
    /// # Errors
    /// When the store's recorded bits cannot be read back.
    fn unstage(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}
