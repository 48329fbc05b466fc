//! Where a filter lives, behind one door: a location parsed once
//! ([`FilterAt`]), what a run wants of it ([`Where`]), the store it opens as
//! one dynamic type ([`Opened`], behind the pipeline's port), and the whole-
//! filter operations of `stats`, `verify`, `copy` and `merge` (read every
//! bit, write a filter whole, check where a new one may go). What a store
//! can do ([`Ability`]) is asked here too, and answered with the message a
//! user sees. No command tells a file from a server: each kind of location
//! is a [`Place`] (`in_file.rs`, `in_redis.rs`), and a new store is a new
//! file here plus its variant of [`FilterAt`] (see docs/ARCHITECTURE.md).

mod at;
mod in_file;
mod in_redis;
mod in_redis_gens;
mod open;

pub(crate) use at::Identity;
pub(crate) use at::{FilterAt, FilterAtParser};
pub(crate) use open::{Census, Opened};

use crate::file::NewFilter;
pub(crate) use crate::file::Target;
use crate::filter::forget::ForgetList;
use crate::filter::sizing::Spec;
use crate::filter::sizing::policy::Layers;
use crate::format::Header;
use crate::keys::KeySpec;
use crate::progress::Show;
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::Path;

/// How a new Redis filter keeps its lines (`--redis-layout`).
pub(crate) use crate::redis::Layout as RedisLayout;
/// How long a run waits for a remote store, and for its replicas
/// (`--redis-timeout`, `--redis-wait`).
pub(crate) use crate::redis::Link;

/// Which store a run uses, and how.
#[derive(Debug)]
pub(crate) enum Where {
    /// A filter in memory, gone after the run (`dedup` without `-f`).
    Memory(Layers),
    /// The filter at a location, as [`Access`] says.
    At {
        at: FilterAt,
        access: Access,
        /// How long to wait for a remote store.
        link: Link,
    },
}

/// What a run does with the filter at a location.
#[derive(Debug)]
pub(crate) enum Access {
    /// Looks lines up (`query`, `stats --probe`).
    Read,
    /// Records lines in it (`build --add`, `dedup -f`); with `create`, made
    /// first when missing (another process may make it first: theirs is
    /// used).
    Write {
        create: Option<NewFile>,
        /// Keys the run may insert (picks the page size of a file's maps).
        expect_keys: Option<u64>,
        /// Keep a journal of the lines judged new, the records ending with
        /// this byte (`dedup`), where the store records before the lines are
        /// written: what a killed run judged new and did not write is
        /// printed by the next run on this machine.
        journal: Option<u8>,
    },
    /// A new filter that appears there, complete, only when the run
    /// succeeds (`build -o`); `replace`: one already there is replaced.
    New {
        spec: Spec,
        seed: u64,
        replace: bool,
        /// Keys the run may insert (picks the page size of a file's maps).
        expect_keys: Option<u64>,
        /// Its layout, when it is made in Redis.
        layout: RedisLayout,
    },
}

/// How to make a missing filter that `dedup -f` names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewFile {
    /// Its spec.
    pub spec: Spec,
    /// Its seed.
    pub seed: u64,
    /// Say on stderr what was made (`-n` was not given, `-q` was not).
    pub announce: bool,
    /// Its layout, when it is made in Redis.
    pub layout: RedisLayout,
}

/// Something a run may ask of a store that not every store can do.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ability {
    /// Add layers when full (a growing filter).
    Grow,
    /// Grow when the flags ask for it (`--growth`), though a new filter
    /// there does not grow by default (a Redis filter).
    GrowWhenAsked,
    /// Stop recording after `-m N` printed lines: the lines past the Nth
    /// are not recorded.
    StopAfter(u64),
}

/// What a store does at its kind of location: the answers that differ from
/// one store to another, each behind one method. Defaults are a store
/// that can do everything and has no path.
pub(crate) trait Place {
    /// Why the store cannot do `what` (the message a user sees), or `None`.
    fn refuses(&self, what: Ability) -> Option<String> {
        let _ = what;
        None
    }

    /// Whether the store records a line as it judges it (an atomic
    /// test-and-set on another machine), before the line is written: it
    /// keeps a journal of what it judged new instead of the commit protocol
    /// that records a line only once it is written (a file's).
    fn records_before_printing(&self) -> bool {
        false
    }

    /// What the location points at now.
    fn identity(&self) -> Identity;

    /// The file, when the filter is one.
    fn path(&self) -> Option<&Path> {
        None
    }

    /// Whether a filter is there; `None`: cannot be told without opening it.
    fn exists(&self) -> Option<bool> {
        None
    }

    /// See [`FilterAt::check_new`].
    ///
    /// # Errors
    /// As there.
    fn check_new(&self, replace: bool, link: Link, hint: &str) -> Result<()>;

    /// What is at a path where `build -o` would make a filter (`None`: not a
    /// path).
    ///
    /// # Errors
    /// A path that cannot be inspected.
    fn target(&self, replace: bool) -> Result<Option<Target>> {
        let _ = replace;
        Ok(None)
    }

    /// Refuses a filter (by its header) that the store cannot hold.
    ///
    /// # Errors
    /// What it cannot hold, and what to do.
    fn refuse_header(&self, header: &Header) -> Result<()> {
        let _ = header;
        Ok(())
    }

    /// See [`FilterAt::refuse_replacing_an_input`].
    ///
    /// # Errors
    /// The refusal.
    fn refuse_replacing_an_input(&self) -> Result<()> {
        Ok(())
    }

    /// Opens (or makes) the filter here as `access` says; a new filter
    /// records `keys`.
    ///
    /// # Errors
    /// When it cannot be sized, created, opened or locked.
    fn open(&self, access: &Access, link: Link, keys: KeySpec) -> Result<Opened>;

    /// See [`FilterAt::write_whole`].
    ///
    /// # Errors
    /// As there.
    fn write_whole(
        &self,
        link: Link,
        header: &Header,
        bits: &[&[u8]],
        forget: &ForgetList,
        replace: bool,
    ) -> Result<()>;

    /// The union of `sources` ([`FilterAt::union_of`]) made where it will stay (a file beside its
    /// path), or `None` to make it in memory and [`Place::write_whole`] it.
    ///
    /// # Errors
    /// A place that cannot be made.
    fn union_in_place(
        &self,
        header: &Header,
        sources: &[Vec<&[u8]>],
        forget: &ForgetList,
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<Option<Made>> {
        let _ = (header, sources, forget, done);
        Ok(None)
    }

    /// The union of filters of fingerprint sets (all alike), made here;
    /// only Redis keeps that layout.
    ///
    /// # Errors
    /// A place that cannot keep it, or as [`crate::redis::SetsFilter::union_into`].
    fn union_of_sets(
        &self,
        link: Link,
        inputs: &mut [&mut crate::redis::SetsFilter],
        replace: bool,
    ) -> Result<crate::redis::SetsUnion> {
        let _ = (link, inputs, replace);
        bail!(
            "a union of Redis filters of fingerprint sets is kept in Redis only (a file holds \
             Bloom bits, and a fingerprint does not say which bits its key sets): give -o a \
             redis:// location"
        )
    }

    /// See [`FilterAt::set_clock`]; a place without time windows (Redis,
    /// for now) has no clock to set.
    ///
    /// # Errors
    /// As there.
    fn set_clock(&self, t: u64) -> Result<Option<crate::file::ClockBack>> {
        let _ = t;
        bail!("a filter in Redis has no time window (--window), so no clock to set")
    }

    /// See [`FilterAt::verify`].
    ///
    /// # Errors
    /// As there.
    fn verify(
        &self,
        repair: bool,
        link: Link,
        progress: Show,
        out: &mut dyn Write,
    ) -> Result<Verified>;
}

impl FilterAt {
    /// Why the store there cannot do `what` (the message a user sees), or
    /// `None` when it can.
    pub(crate) fn refuses(&self, what: Ability) -> Option<String> {
        self.place().refuses(what)
    }

    /// Whether the store there can do `what`.
    pub(crate) fn can(&self, what: Ability) -> bool {
        self.refuses(what).is_none()
    }

    /// See [`Place::records_before_printing`].
    pub(crate) fn records_before_printing(&self) -> bool {
        self.place().records_before_printing()
    }

    /// Refuses to replace the filter here by one made from it (`merge` into
    /// one of its inputs, without `--force`) when that deletes it first: a
    /// failure midway would lose it. A file is replaced by a rename.
    ///
    /// # Errors
    /// The refusal, and what to do.
    pub(crate) fn refuse_replacing_an_input(&self) -> Result<()> {
        self.place().refuse_replacing_an_input()
    }

    /// Refuses, before anything is read, to make a new filter here
    /// (`copy`, `merge`): for a file, a directory, a file that is not a
    /// filter, or (unless `replace`) a filter; `hint` ends the message for a
    /// filter file there. In Redis, a filter already there unless `replace`.
    ///
    /// # Errors
    /// Each refusal, naming the location and what to do; a server that
    /// cannot be reached.
    pub(crate) fn check_new(&self, replace: bool, link: Link, hint: &str) -> Result<()> {
        self.place().check_new(replace, link, hint)
    }

    /// What is at a path where `build -o` would make a filter: `None` for
    /// a store that is not a path (it refuses on open what it cannot take).
    ///
    /// # Errors
    /// A path that cannot be inspected, or a link.
    pub(crate) fn target(&self, replace: bool) -> Result<Option<Target>> {
        self.place().target(replace)
    }

    /// Refuses a filter (by its header) that the store here cannot hold.
    ///
    /// # Errors
    /// What it cannot hold, and what to do.
    pub(crate) fn refuse_header(&self, header: &Header) -> Result<()> {
        self.place().refuse_header(header)
    }

    /// Opens the filter here to read it whole (`stats`, `copy`, `merge`),
    /// or to look lines up in it ([`Opened`] is a store).
    ///
    /// # Errors
    /// No usable filter there, or a server that cannot be reached.
    pub(crate) fn open_read(&self, link: Link) -> Result<Opened> {
        Opened::read(self, link)
    }

    /// Writes a filter whole here (`copy`, `merge`): a file made as a
    /// temporary file renamed into place, or a Redis filter's shards then
    /// its meta key; its forget list `forget` too (the header names its
    /// region); `replace`: one already there is replaced.
    ///
    /// # Errors
    /// A filter there (without `replace`), a store that cannot keep the
    /// list, or a failed write.
    pub(crate) fn write_whole(
        &self,
        link: Link,
        header: &Header,
        bits: &[&[u8]],
        forget: &ForgetList,
        replace: bool,
    ) -> Result<()> {
        self.place()
            .write_whole(link, header, bits, forget, replace)
    }

    /// The union of `inputs`, filters of fingerprint sets (all alike), made
    /// here (`merge`); `replace`: a filter here is replaced.
    ///
    /// # Errors
    /// A location that cannot keep it, a filter here (without `replace`),
    /// or a server that fails.
    pub(crate) fn union_of_sets(
        &self,
        link: Link,
        inputs: &mut [&mut crate::redis::SetsFilter],
        replace: bool,
    ) -> Result<crate::redis::SetsUnion> {
        self.place()
            .union_of_sets(link, inputs, replace)
            .with_context(|| format!("cannot merge into {self}"))
    }

    /// Sets the time of a filter with a window back to `t`, under the
    /// writers' lock (`verify --set-clock`); `None`: it is not after `t`.
    ///
    /// # Errors
    /// A filter without a window, or a failed write.
    pub(crate) fn set_clock(&self, t: u64) -> Result<Option<crate::file::ClockBack>> {
        crate::file::quiet_clock();
        self.place().set_clock(t)
    }

    /// Checks the filter here, naming each damaged part on `out` (and what
    /// to do on stderr); with `repair`, a file a killed writer left dirty is
    /// settled first.
    ///
    /// # Errors
    /// A filter that cannot be used at all (its header fails on open), a
    /// server that cannot be reached, `repair` of a store that has nothing
    /// to repair that way, or a failed write.
    pub(crate) fn verify(
        &self,
        repair: bool,
        link: Link,
        progress: Show,
        out: &mut dyn Write,
    ) -> Result<Verified> {
        self.place().verify(repair, link, progress, out)
    }
}

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verified {
    /// Everything checks.
    Ok,
    /// A part is damaged or missing (each one named on the output).
    Damaged,
    /// A dirty file's checksums do not all match: a writer was killed
    /// between changing bits and writing their checksums, so they may be
    /// stale rather than the data damaged.
    Stale,
}

/// A filter made whole from others (`merge`), not yet at its location: a
/// temporary file beside it, or bits in memory for a server.
pub(crate) enum Made {
    /// A new filter file, renamed into place by [`Made::finish`].
    File(NewFilter),
    /// Bits to store at the location when the run went well.
    Bits(FilterAt, Header, Vec<Vec<u8>>, ForgetList),
}

impl FilterAt {
    /// The filter `header` describes, layer `i` the OR of `sources[i]`
    /// (layers of its shape), made for this location; `done` is told the
    /// bytes merged.
    ///
    /// # Errors
    /// A file that cannot be made.
    pub(crate) fn union_of(
        &self,
        header: &Header,
        sources: &[Vec<&[u8]>],
        forget: &ForgetList,
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<Made> {
        if let Some(made) = self.place().union_in_place(header, sources, forget, done)? {
            return Ok(made);
        }
        let mut bits = Vec::with_capacity(header.layers.len());
        for (i, l) in header.layers.iter().enumerate() {
            let kind = l.filter_kind();
            let mut out = vec![0u8; usize::try_from(kind.as_kind().bytes())?];
            kind.as_kind().union(&mut out, &sources[i], done)?;
            bits.push(out);
        }
        Ok(Made::Bits(
            self.clone(),
            header.clone(),
            bits,
            forget.clone(),
        ))
    }
}

impl Made {
    /// Every layer's bits.
    pub(crate) fn bits(&self) -> Vec<&[u8]> {
        match self {
            Made::File(f) => (0..f.header().layers.len())
                .map(|i| f.layer_bits(i))
                .collect(),
            Made::Bits(_, _, b, _) => b.iter().map(Vec::as_slice).collect(),
        }
    }

    /// Puts the filter at its location; `replace`: one there is replaced,
    /// but a file only if its header is still `unchanged` (when given).
    ///
    /// # Errors
    /// A filter there (without `replace`), or a failed write.
    pub(crate) fn finish(
        self,
        link: Link,
        replace: bool,
        unchanged: Option<&Header>,
    ) -> Result<()> {
        match self {
            Made::File(f) => f.finish_over(replace, unchanged),
            Made::Bits(at, header, bits, forget) => {
                let bits: Vec<&[u8]> = bits.iter().map(Vec::as_slice).collect();
                at.write_whole(link, &header, &bits, &forget, replace)
            }
        }
    }
}
