//! Opening a Redis filter in whichever layout its meta key records, and
//! making a new one in the layout asked for ([`Layout`]).

use super::client::{Client, Link};
use super::filter::RedisFilter;
use super::gens::GensMeta;
use super::gens::store::GensFilter;
use super::location::Location;
use super::meta::{Found, leftovers, leftovers_advice, read_any};
use super::set_keys::{DEFAULT_INTSET_LIMIT, SetsMeta, intset_limit};
use super::sets::SetsFilter;
use crate::filter::sizing::Spec;
use crate::keys::KeySpec;
use anyhow::{Result, anyhow, bail};

/// How a new Redis filter keeps its lines (`--redis-layout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// 32-bit fingerprints in small sets: one command per line, nothing
    /// read whole, about 4.7 bytes per line.
    #[default]
    Sets,
    /// Bloom layers in shards (seen 0.2): copies to and from a file byte
    /// for byte, but each run reads every shard it touches whole.
    Bloom,
}

/// An open Redis filter, in either layout.
pub(crate) enum Opened {
    /// Bloom layers in shards.
    Bloom(RedisFilter),
    /// Fingerprint sets.
    Sets(SetsFilter),
    /// Fingerprint sets in generations (growth, windows).
    Gens(GensFilter),
}

/// The filter `found` at the client's location.
fn assemble(client: Client, found: Found, write: bool) -> Result<Opened> {
    Ok(match found {
        Found::Bloom(meta) => Opened::Bloom(RedisFilter::assemble(client, meta, write)?),
        Found::Sets(meta, header, inserts, listed) => {
            let mut f = SetsFilter::assemble(client, meta, header, write);
            f.set_inserts(inserts);
            f.set_lists_read(listed);
            Opened::Sets(f)
        }
        Found::Gens(meta, bytes) => Opened::Gens(GensFilter::assemble(client, meta, bytes, write)?),
    })
}

/// Opens the filter at `loc`; `write`: this run records lines.
///
/// # Errors
/// No filter there, a server that cannot be reached, or a meta key that is
/// not a filter's.
pub(crate) fn open(loc: &Location, link: Link, write: bool) -> Result<Opened> {
    let mut client = Client::connect(loc, link)?;
    match read_any(&mut client, loc)? {
        Some(found) => assemble(client, found, write),
        None => {
            let left = leftovers(&mut client, loc)?;
            if !left.is_empty() {
                bail!("{}", leftovers_advice(loc, &left));
            }
            bail!(
                "{loc}: no such filter (no key {}): make it with `seen build -o {loc} FILE` \
                 or `seen dedup -f {loc}`",
                loc.meta_key()
            )
        }
    }
}

/// When there is no filter at `loc` but data of one is (its meta key was
/// lost): what is wrong and what to do; `None` when there is a filter, or
/// nothing at all.
///
/// # Errors
/// A server that cannot be reached.
pub(crate) fn lost_meta(loc: &Location, link: Link) -> Result<Option<String>> {
    let mut client = Client::connect(loc, link)?;
    if read_any(&mut client, loc)?.is_some() {
        return Ok(None);
    }
    let left = leftovers(&mut client, loc)?;
    Ok((!left.is_empty()).then(|| leftovers_advice(loc, &left)))
}

/// Refuses a filter that grows or has a time window for `build -o` (said
/// before any server is asked).
fn refuse_generations(loc: &Location, spec: &Spec) -> Result<()> {
    if spec.window.is_some() || spec.growth.is_some() {
        bail!(
            "{loc}: `build -o` makes a Redis filter of a fixed size only; a filter that grows \
             or has a --window is made by its first writer (`seen dedup -f {loc} --window …` \
             or `--growth …`), then `build --add -o {loc}` adds to it"
        );
    }
    Ok(())
}

/// The server's `set-max-intset-entries` (on the node of the meta key),
/// with a note when it does not say and a warning when it is small.
fn server_limit(client: &mut Client) -> u64 {
    let loc = client.location().clone();
    let limit = intset_limit(client, &loc).unwrap_or_else(|| {
        eprintln!(
            "seen: note: {loc} does not say its set-max-intset-entries (CONFIG GET is not \
             allowed): sized for Redis's default, {DEFAULT_INTSET_LIMIT}"
        );
        DEFAULT_INTSET_LIMIT
    });
    if limit < 64 {
        eprintln!(
            "seen: warning: {loc} keeps sets compact up to {limit} entries only \
             (set-max-intset-entries): the filter takes many small sets; raise it to 512 for \
             about 4.7 bytes per line"
        );
    }
    limit
}

/// Sizes a fingerprint-set filter for `spec` on the server `client` talks
/// to (its `set-max-intset-entries`).
fn plan_sets(client: &mut Client, spec: &Spec, seed: u64, keys: KeySpec) -> Result<SetsMeta> {
    let limit = server_limit(client);
    SetsMeta::plan(spec.capacity, spec.target_fpp, limit, seed, keys)
}

/// Opens the filter at `loc`, making it first in `layout` from `spec`,
/// `seed` and `keys` when there is none (if another writer makes it first,
/// theirs is used, in its layout). Returns it and whether this run made it.
///
/// # Errors
/// As [`open`]; a spec the layout cannot hold.
pub(crate) fn open_or_create(
    loc: &Location,
    link: Link,
    layout: Layout,
    spec: &Spec,
    seed: u64,
    keys: KeySpec,
) -> Result<(Opened, bool)> {
    if layout == Layout::Bloom {
        let first = super::filter::first_layer(spec)?;
        let header = crate::file::new_header(spec, &first, seed, keys);
        let (f, made) = RedisFilter::open_or_create(loc, link, &header)?;
        return Ok((Opened::Bloom(f), made));
    }
    let mut client = Client::connect(loc, link)?;
    if let Some(found) = read_any(&mut client, loc)? {
        return Ok((assemble(client, found, true)?, false));
    }
    // A new filter's sets would have a tag of their own and adopt nothing,
    // but the old filter's lines would all be new again, silently, and its
    // data would stay: that is for the user to decide (remove it, or copy
    // a snapshot back), as for the Bloom layout.
    let left = leftovers(&mut client, loc)?;
    if !left.is_empty() {
        if let Some(found) = read_any(&mut client, loc)? {
            return Ok((assemble(client, found, true)?, false));
        }
        bail!("{}", leftovers_advice(loc, &left));
    }
    let made = if spec.window.is_some() || spec.growth.is_some() {
        let limit = server_limit(&mut client);
        let meta = GensMeta::plan(
            spec.capacity,
            spec.target_fpp,
            limit,
            seed,
            keys,
            spec.growth,
            spec.window,
        )?;
        GensFilter::create(&mut client, &meta)?
    } else {
        let meta = plan_sets(&mut client, spec, seed, keys)?;
        SetsFilter::create(&mut client, &meta)?.1
    };
    let found = read_any(&mut client, loc)?
        .ok_or_else(|| anyhow!("{loc}: the filter vanished as it was made"))?;
    Ok((assemble(client, found, true)?, made))
}

/// A new fingerprint-set filter for `build -o`, filled by the run and put
/// in place (its meta key written) only when the run goes well; `replace`:
/// one there is replaced then.
///
/// # Errors
/// A filter there (without `replace`), a server that cannot be reached, or
/// a spec the layout cannot hold.
pub(crate) fn new_sets(
    loc: &Location,
    link: Link,
    spec: &Spec,
    seed: u64,
    keys: KeySpec,
    replace: bool,
) -> Result<SetsFilter> {
    refuse_generations(loc, spec)?;
    let mut client = Client::connect(loc, link)?;
    if !replace && read_any(&mut client, loc)?.is_some() {
        bail!(
            "{loc} already exists: pass --force to replace it, or add to it with \
             `seen build --add -o {loc}`"
        );
    }
    let meta = plan_sets(&mut client, spec, seed, keys)?;
    Ok(SetsFilter::new_pending(client, meta, replace))
}
