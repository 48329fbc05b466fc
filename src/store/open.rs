//! The stores a run can use, opened or created from a [`Where`], behind the
//! pipeline's port ([`Store`]) as one type.

use super::{Access, FilterAt, Link, NewFile, Where};
use crate::file::format::Header;
use crate::file::{MemFilter, NewFilter, ReadFilter, Target, WriteFilter, check_target};
use crate::hash::{DEFAULT_SEED, Hash128};
use crate::keys::KeySpec;
use crate::pipeline::{Commits, Journals, Store};
use crate::redis::{Location, RedisFilter};
use anyhow::{Result, bail};
use std::path::Path;

/// An open store of any kind.
pub(crate) enum Opened {
    /// In memory (`dedup` without `-f`).
    Memory(MemFilter),
    /// A new filter file, not yet at its path; `replace` as in [`Access::New`].
    New(NewFilter, bool),
    /// An existing filter file, written to.
    Update(WriteFilter),
    /// An existing filter file, read only.
    Read(ReadFilter),
    /// A filter in Redis.
    Redis(RedisFilter),
    /// A new filter in memory, stored in Redis at the end of a run that
    /// went well.
    RedisNew(MemFilter, Location, bool, Link),
}

impl Opened {
    /// Opens or creates the store `place` names; a new filter records the
    /// `keys` asked for (raw when none).
    ///
    /// # Errors
    /// When it cannot be sized, created, opened or locked.
    pub fn open(place: &Where, keys: Option<KeySpec>) -> Result<Opened> {
        let keys = keys.unwrap_or(KeySpec::RAW);
        let (at, access, link) = match place {
            Where::Memory(layers) => {
                return Ok(Opened::Memory(match &layers.first {
                    Some(first) => MemFilter::with_first(&layers.spec, first, DEFAULT_SEED)?,
                    None => MemFilter::with_spec(&layers.spec, DEFAULT_SEED)?,
                }));
            }
            Where::At { at, access, link } => (at, access, *link),
        };
        Ok(match (at, access) {
            (FilterAt::File(path), Access::Read) => Opened::Read(ReadFilter::open(path)?),
            (
                FilterAt::File(path),
                Access::Write {
                    create,
                    expect_keys,
                    ..
                },
            ) => {
                if let Some(new) = create {
                    create_missing(path, new, keys)?;
                }
                Opened::Update(WriteFilter::open(path, *expect_keys)?)
            }
            (
                FilterAt::File(path),
                Access::New {
                    spec,
                    seed,
                    replace,
                    expect_keys,
                },
            ) => {
                let mut f = NewFilter::create(path, spec, *seed, keys)?;
                f.expect_keys(*expect_keys);
                Opened::New(f, *replace)
            }
            (FilterAt::Redis(loc), Access::Read) => {
                Opened::Redis(RedisFilter::open(loc, link, false)?)
            }
            (
                FilterAt::Redis(loc),
                Access::Write {
                    create, journal, ..
                },
            ) => Opened::Redis(open_redis(loc, link, create.as_ref(), *journal, keys)?),
            (
                FilterAt::Redis(loc),
                Access::New {
                    spec,
                    seed,
                    replace,
                    ..
                },
            ) => {
                if !replace {
                    // Say it now, not after the lines are read.
                    RedisFilter::refuse_existing(loc, link)?;
                }
                let first = crate::redis::first_layer(spec)?;
                let mut f = MemFilter::with_first(spec, &first, *seed)?;
                f.set_keys(keys);
                Opened::RedisNew(f, loc.clone(), *replace, link)
            }
        })
    }

    /// Whether the store's bits live elsewhere and must be fetched to be
    /// read whole ([`Opened::bits`]), which takes as long as counting them.
    pub fn fetches_bits(&self) -> bool {
        matches!(self, Opened::Redis(_))
    }

    /// Every layer's bits, read whole (`stats`, `copy`, `merge`); a remote
    /// store fetches them first, calling `progress` with the bytes fetched.
    ///
    /// # Errors
    /// A server that cannot be reached.
    pub fn bits(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        Ok(match self {
            Opened::Redis(f) => f.read_all(progress)?,
            Opened::Read(f) => (0..f.header().layers.len())
                .map(|i| f.layer_bits(i))
                .collect(),
            Opened::Memory(f) | Opened::RedisNew(f, ..) => (0..f.header().layers.len())
                .map(|i| f.layer_bits(i))
                .collect(),
            Opened::New(f, _) => (0..f.header().layers.len())
                .map(|i| f.layer_bits(i))
                .collect(),
            Opened::Update(_) => bail!("a filter open for writing is not read whole"),
        })
    }

    /// The run's output was closed by its reader (`| head`): a store that
    /// recorded lines before printing them owes the next run those that may
    /// not have been read.
    pub fn output_lost(&mut self) {
        if let Opened::Redis(f) = self {
            f.output_lost();
        }
    }

    /// Whether the run writes to a filter other processes may write too
    /// (where keys must match what the filter records).
    pub fn shared_writer(&self) -> bool {
        matches!(self, Opened::Redis(f) if f.writes())
    }

    /// The header (counters as they stand).
    pub fn header(&self) -> &Header {
        match self {
            Opened::Memory(f) => f.header(),
            Opened::New(f, _) => f.header(),
            Opened::Update(f) => f.header(),
            Opened::Read(f) => f.header(),
            Opened::Redis(f) => f.header(),
            Opened::RedisNew(f, ..) => f.header(),
        }
    }

    /// The keys an existing filter file records, with its path.
    pub fn recorded_keys(&self) -> Option<(KeySpec, String)> {
        match self {
            Opened::Update(f) => Some((f.header().keys, f.path().display().to_string())),
            Opened::Read(f) => Some((f.header().keys, f.path().display().to_string())),
            Opened::Redis(f) => Some((f.header().keys, f.location().to_string())),
            Opened::Memory(_) | Opened::New(..) | Opened::RedisNew(..) => None,
        }
    }

    /// Ends the run on the store: a written filter file is committed (what
    /// was recorded stays, whatever happened), a new one appears at its path
    /// when the run went well (`ok`) and is removed otherwise. Returns the
    /// header as the run left it, when it went well.
    ///
    /// # Errors
    /// When the commit, or the new file's sync and rename, fails.
    pub fn finish(self, ok: bool) -> Result<Option<Header>> {
        match self {
            Opened::Update(mut f) => {
                f.commit()?;
                Ok(ok.then(|| f.header().clone()))
            }
            Opened::New(f, replace) if ok => {
                let header = f.header().clone();
                f.finish(replace)?;
                Ok(Some(header))
            }
            // Dropped unfinished: its temporary file is removed.
            Opened::New(..) => Ok(None),
            Opened::Memory(f) => Ok(ok.then(|| f.header().clone())),
            Opened::Read(f) => Ok(ok.then(|| f.header().clone())),
            Opened::Redis(mut f) => {
                // A failure in the run's last batch is reported here.
                let broken = f.take_broken();
                f.end_journal(ok && broken.is_none());
                // What was recorded stays recorded, whatever happened.
                let committed = f.commit();
                if let Some(e) = broken {
                    return Err(e);
                }
                committed?;
                Ok(ok.then(|| f.header().clone()))
            }
            Opened::RedisNew(f, loc, replace, link) if ok => {
                let bits: Vec<&[u8]> = (0..f.header().layers.len())
                    .map(|i| f.layer_bits(i))
                    .collect();
                RedisFilter::upload(&loc, link, f.header(), &bits, replace)?;
                Ok(Some(f.header().clone()))
            }
            Opened::RedisNew(..) => Ok(None),
        }
    }
}

/// Opens (or makes, as `create` says) the Redis filter at `loc`, for
/// writing, with its journal when `journal` gives the records' terminator.
///
/// # Errors
/// A server that cannot be reached, no filter there (and none to make), or
/// a journal that cannot be kept.
fn open_redis(
    loc: &Location,
    link: Link,
    create: Option<&NewFile>,
    journal: Option<u8>,
    keys: KeySpec,
) -> Result<RedisFilter> {
    let mut f = match create {
        Some(new) => {
            let first = crate::redis::first_layer(&new.spec)?;
            let header = crate::file::new_header(&new.spec, &first, new.seed, keys);
            let (f, made) = RedisFilter::open_or_create(loc, link, &header)?;
            if made && new.announce {
                eprintln!(
                    "seen: created {} for {} distinct lines at false-positive rate {:e} \
                     (it does not grow: pass -n to size it for the lines you expect over all runs)",
                    loc,
                    indicatif::HumanCount(new.spec.capacity),
                    new.spec.target_fpp,
                );
            }
            f
        }
        None => RedisFilter::open(loc, link, true)?,
    };
    if let Some(term) = journal {
        let out = std::io::stdout();
        let (n, dir) = f.journal(term, &mut out.lock())?;
        if n > 0 {
            eprintln!(
                "seen: printed {} line{} that an earlier run on this machine had recorded in {} \
                 and not written (it was killed, or its output closed early; journal {})",
                indicatif::HumanCount(n),
                if n == 1 { "" } else { "s" },
                loc,
                dir.display()
            );
        }
    }
    Ok(f)
}

/// Creates the missing filter file `path` (atomically; if another process
/// creates it first, theirs is used).
///
/// # Errors
/// When `path` is something else than a filter, or cannot be created.
fn create_missing(path: &Path, new: &NewFile, keys: KeySpec) -> Result<()> {
    match check_target(path, false)? {
        Target::Free => {}
        // Created by another process since we looked: theirs is used.
        Target::Filter => return Ok(()),
        Target::OtherFile => bail!(
            "{} is not a seen filter: give the path of a filter, or a new path",
            path.display()
        ),
    }
    // Nothing is inserted here, so no page of it comes into the page cache
    // (the checksums of untouched segments are those of zero bytes): the
    // writer that opens it next picks the page size for this run.
    let f = NewFilter::create(path, &new.spec, new.seed, keys)?;
    match f.finish(false) {
        Ok(()) => {}
        // Another process created it first: theirs is used.
        Err(_) if path.exists() => return Ok(()),
        Err(e) => return Err(e),
    }
    if new.announce {
        eprintln!(
            "seen: created {} for {} distinct lines at false-positive rate {:e}{} \
             (pass -n to size it for the lines you expect over all runs)",
            path.display(),
            indicatif::HumanCount(new.spec.capacity),
            new.spec.target_fpp,
            if new.spec.growth.is_some() {
                ", growing past them"
            } else {
                ""
            }
        );
    }
    Ok(())
}

impl Opened {
    /// The store behind the port.
    fn store(&self) -> &dyn Store {
        match self {
            Opened::Memory(f) => f,
            Opened::New(f, _) => f,
            Opened::Update(f) => f,
            Opened::Read(f) => f,
            Opened::Redis(f) => f,
            Opened::RedisNew(f, ..) => f,
        }
    }

    /// The store behind the port, to write.
    fn store_mut(&mut self) -> &mut dyn Store {
        match self {
            Opened::Memory(f) => f,
            Opened::New(f, _) => f,
            Opened::Update(f) => f,
            Opened::Read(f) => f,
            Opened::Redis(f) => f,
            Opened::RedisNew(f, ..) => f,
        }
    }
}

/// Every call goes to the store behind (one dynamic call per batch).
impl Store for Opened {
    fn seed(&self) -> u64 {
        self.store().seed()
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        self.store_mut().contains_batch(hashes, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        self.store_mut().insert_batch(hashes, out)
    }

    fn record_batch(&mut self, hashes: &[Hash128]) -> Result<u64> {
        self.store_mut().record_batch(hashes)
    }

    fn commits(&mut self) -> Option<&mut dyn Commits> {
        self.store_mut().commits()
    }

    fn journals(&mut self) -> Option<&mut dyn Journals> {
        self.store_mut().journals()
    }
}
