//! An open store of any kind as one dynamic type ([`Opened`]), behind the
//! pipeline's port ([`Store`]): what every store does for a run beside the
//! port ([`Held`]) is one trait, so no operation matches on the kind.

use super::{Access, FilterAt, Link, Where};
use crate::file::MemFilter;
use crate::filter::forget::ForgetList;
use crate::format::Header;
use crate::hash::{DEFAULT_SEED, Hash128};
use crate::keys::KeySpec;
use crate::pipeline::{Commits, Forgets, Journals, Store};
/// What the fingerprint sets of a Redis filter hold (`stats`).
pub(crate) use crate::redis::Census;
use anyhow::Result;

/// What an open store does for a run beside the pipeline's port: its
/// header, its bits read whole, and how the run ends on it. A new store
/// implements it (and [`Store`]) in its own file of this room.
pub(crate) trait Held: Store {
    /// The header (counters as they stand).
    fn header(&self) -> &Header;

    /// Every layer's bits, read whole (`stats`, `copy`, `merge`); a remote
    /// store fetches them first, calling `progress` with the bytes fetched.
    ///
    /// # Errors
    /// A store that cannot be read whole, or a server that cannot be reached.
    fn bits(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>>;

    /// Whether the bits live elsewhere and must be fetched to be read whole
    /// ([`Held::bits`]), which takes as long as counting them.
    fn fetches_bits(&self) -> bool {
        false
    }

    /// Checks the bits against the checksums the store keeps, before they
    /// are written elsewhere whole (`copy`, `merge`): fresh checksums there
    /// would hide damage `seen verify` finds here. A store that keeps none
    /// has nothing to check.
    ///
    /// # Errors
    /// Damaged bits, or checksums that cannot be read.
    fn check_whole(&self) -> Result<()> {
        Ok(())
    }

    /// The run's output was closed by its reader (`| head`): a store that
    /// recorded lines before printing them owes the next run those that may
    /// not have been read.
    fn output_lost(&mut self) {}

    /// Whether the run writes to a filter other processes may write too
    /// (where keys must match what the filter records).
    fn shared_writer(&self) -> bool {
        false
    }

    /// The keys an existing filter records, with its name in messages.
    fn recorded_keys(&self) -> Option<(KeySpec, String)> {
        None
    }

    /// For a store whose header has no layers to estimate from (the
    /// fingerprint sets of a Redis filter): the false positives expected
    /// among `new` lines judged new in this run, and the rate now, for the
    /// run's summary.
    fn run_rates(&self, new: u64) -> Option<(f64, f64)> {
        let _ = new;
        None
    }

    /// What a filter without bits holds, counted (the fingerprint sets of
    /// a Redis filter), telling `progress` the sets counted; `None` for a
    /// filter of bits ([`Held::bits`]).
    ///
    /// # Errors
    /// A server that cannot be reached.
    fn census(&mut self, progress: &mut dyn FnMut(u64)) -> Option<Result<Census>> {
        let _ = progress;
        None
    }

    /// The keys the filter forgot (`seen forget`), for `copy` and `merge`;
    /// `None` for a store that keeps no forget list.
    fn forget_list(&self) -> Option<&ForgetList> {
        None
    }

    /// A Redis filter of fingerprint sets, for `merge`; `None` for any
    /// other store.
    fn sets(&mut self) -> Option<&mut crate::redis::SetsFilter> {
        None
    }

    /// Why `seen forget` cannot forget keys here (for a store whose
    /// [`Store::forgets`] is `None`).
    fn cannot_forget(&self) -> String {
        "this filter cannot forget keys".into()
    }

    /// A Redis filter in generations, for `stats`; `None` for any other
    /// store.
    fn gens(&mut self) -> Option<&mut crate::redis::GensFilter> {
        None
    }

    /// Ends the run on the store (see [`Opened::finish`]).
    ///
    /// # Errors
    /// When the commit, or putting a new filter in place, fails.
    fn finish(self: Box<Self>, ok: bool) -> Result<Option<Header>>;
}

/// An open store of any kind.
pub(crate) struct Opened(Box<dyn Held>);

impl Opened {
    /// Wraps an open store.
    pub(crate) fn new(store: impl Held + 'static) -> Opened {
        Opened(Box::new(store))
    }

    /// Opens or creates the store `place` names; a new filter records the
    /// `keys` asked for (raw when none).
    ///
    /// # Errors
    /// When it cannot be sized, created, opened or locked.
    pub(crate) fn open(place: &Where, keys: Option<KeySpec>) -> Result<Opened> {
        let keys = keys.unwrap_or(KeySpec::RAW);
        match place {
            Where::Memory(layers) => Ok(Opened::new(match &layers.first {
                Some(first) => MemFilter::with_first(&layers.spec, first, DEFAULT_SEED)?,
                None => MemFilter::with_spec(&layers.spec, DEFAULT_SEED)?,
            })),
            Where::At { at, access, link } => at.place().open(access, *link, keys),
        }
    }

    /// Opens the filter at `at` to read it (see [`FilterAt::open_read`]).
    pub(super) fn read(at: &FilterAt, link: Link) -> Result<Opened> {
        at.place().open(&Access::Read, link, KeySpec::RAW)
    }

    /// See [`Held::sets`].
    pub(crate) fn sets(&mut self) -> Option<&mut crate::redis::SetsFilter> {
        self.0.sets()
    }

    /// See [`Held::cannot_forget`].
    pub(crate) fn cannot_forget(&self) -> String {
        self.0.cannot_forget()
    }

    /// See [`Held::gens`].
    pub(crate) fn gens(&mut self) -> Option<&mut crate::redis::GensFilter> {
        self.0.gens()
    }

    /// The keys the filter forgot (empty for a store that keeps none).
    pub(crate) fn forget_list(&self) -> ForgetList {
        self.0.forget_list().cloned().unwrap_or_default()
    }

    /// Whether the store's bits must be fetched to be read whole.
    pub(crate) fn fetches_bits(&self) -> bool {
        self.0.fetches_bits()
    }

    /// See [`Held::check_whole`].
    ///
    /// # Errors
    /// As [`Held::check_whole`].
    pub(crate) fn check_whole(&self) -> Result<()> {
        self.0.check_whole()
    }

    /// Every layer's bits, read whole (see [`Held::bits`]).
    ///
    /// # Errors
    /// As [`Held::bits`].
    pub(crate) fn bits(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        self.0.bits(progress)
    }

    /// See [`Held::run_rates`].
    pub(crate) fn run_rates(&self, new: u64) -> Option<(f64, f64)> {
        self.0.run_rates(new)
    }

    /// See [`Held::census`].
    pub(crate) fn census(&mut self, progress: &mut dyn FnMut(u64)) -> Option<Result<Census>> {
        self.0.census(progress)
    }

    /// See [`Held::output_lost`].
    pub(crate) fn output_lost(&mut self) {
        self.0.output_lost();
    }

    /// See [`Held::shared_writer`].
    pub(crate) fn shared_writer(&self) -> bool {
        self.0.shared_writer()
    }

    /// The header (counters as they stand).
    pub(crate) fn header(&self) -> &Header {
        self.0.header()
    }

    /// The keys an existing filter records, with its name.
    pub(crate) fn recorded_keys(&self) -> Option<(KeySpec, String)> {
        self.0.recorded_keys()
    }

    /// Ends the run on the store: a written filter is committed (what was
    /// recorded stays, whatever happened), a new one appears at its
    /// location when the run went well (`ok`) and is removed otherwise.
    /// Returns the header as the run left it, when it went well.
    ///
    /// # Errors
    /// When the commit, or putting the new filter in place, fails.
    pub(crate) fn finish(self, ok: bool) -> Result<Option<Header>> {
        self.0.finish(ok)
    }
}

/// The filter in memory of `dedup` without `-f` (and the bits of a new
/// remote filter before they are stored).
impl Held for MemFilter {
    fn header(&self) -> &Header {
        MemFilter::header(self)
    }

    fn bits(&mut self, _: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        Ok((0..MemFilter::header(self).layers.len())
            .map(|i| self.layer_bits(i))
            .collect())
    }

    fn finish(self: Box<Self>, ok: bool) -> Result<Option<Header>> {
        Ok(ok.then(|| MemFilter::header(&self).clone()))
    }
}

/// Every call goes to the store behind (one dynamic call per batch), its
/// capabilities included.
impl Store for Opened {
    fn seed(&self) -> u64 {
        self.0.seed()
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        self.0.contains_batch(hashes, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        self.0.insert_batch(hashes, out)
    }

    fn record_batch(&mut self, hashes: &[Hash128]) -> Result<u64> {
        self.0.record_batch(hashes)
    }

    fn commits(&mut self) -> Option<&mut dyn Commits> {
        self.0.commits()
    }

    fn journals(&mut self) -> Option<&mut dyn Journals> {
        self.0.journals()
    }

    fn whole_chunks(&self) -> bool {
        self.0.whole_chunks()
    }

    fn forgets(&mut self) -> Option<&mut dyn Forgets> {
        self.0.forgets()
    }
}
