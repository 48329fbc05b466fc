//! A filter in Redis or Valkey as a place ([`Place`] for a [`Location`]):
//! what it cannot do (grow, `-m`, time windows) said with the message a
//! user sees, and the remote filter as an open store.

use super::open::{Census, Held, Opened};
use super::{Ability, Access, Identity, Link, NewFile, Place, RedisLayout, Verified};
use crate::file::MemFilter;
use crate::filter::forget::ForgetList;
use crate::format::Header;
use crate::hash::Hash128;
use crate::keys::KeySpec;
use crate::pipeline::Store;
use crate::progress::Show;
use crate::redis::{self, Location, RedisFilter, SetsFilter};
use anyhow::{Context, Result, bail};
use std::io::Write;

impl Place for Location {
    fn refuses(&self, what: Ability) -> Option<String> {
        Some(match what {
            Ability::Grow => {
                "a filter in Redis grows only when made with --growth (or --window)".into()
            }
            Ability::GrowWhenAsked => return None,
            Ability::StopAfter(m) => format!(
                "-m {m} does not work with a Redis filter yet: its lines are recorded before \
                 they are printed, so the lines recorded past the {m}th would be owed to the \
                 next run (use a filter file for -m)"
            ),
        })
    }

    fn records_before_printing(&self) -> bool {
        true
    }

    fn identity(&self) -> Identity {
        let mut plain = self.clone();
        plain.password = None;
        plain.user = None;
        Identity::Named(plain.to_string())
    }

    fn check_new(&self, replace: bool, link: Link, _: &str) -> Result<()> {
        if replace {
            return Ok(());
        }
        RedisFilter::refuse_existing(self, link)
    }

    fn refuse_header(&self, header: &Header) -> Result<()> {
        RedisFilter::refuse_header(self, header)
    }

    fn refuse_replacing_an_input(&self) -> Result<()> {
        bail!(
            "{self} is one of the inputs: a filter in Redis is replaced by deleting it first, \
             so a failure midway would lose it; merge into a new name (then move the fleet \
             to it), or pass --force to take that risk"
        )
    }

    fn open(&self, access: &Access, link: Link, keys: KeySpec) -> Result<Opened> {
        Ok(match access {
            Access::Read => held(redis::open(self, link, false)?),
            Access::Write {
                create, journal, ..
            } => held(open_redis(self, link, create.as_ref(), *journal, keys)?),
            Access::New {
                spec,
                seed,
                replace,
                layout: RedisLayout::Sets,
                ..
            } => Opened::new(redis::new_sets(self, link, spec, *seed, keys, *replace)?),
            Access::New {
                spec,
                seed,
                replace,
                ..
            } => {
                if !replace {
                    // Say it now, not after the lines are read.
                    RedisFilter::refuse_existing(self, link)?;
                }
                let first = crate::redis::first_layer(spec)?;
                let mut f = MemFilter::with_first(spec, &first, *seed)?;
                f.set_keys(keys);
                f.set_name(self.to_string());
                Opened::new(RedisNew {
                    filter: f,
                    at: self.clone(),
                    replace: *replace,
                    link,
                })
            }
        })
    }

    fn write_whole(
        &self,
        link: Link,
        header: &Header,
        bits: &[&[u8]],
        forget: &ForgetList,
        replace: bool,
    ) -> Result<()> {
        if !forget.is_empty() {
            bail!(
                "{self}: a filter copied to Redis takes the Bloom layout, which keeps no \
                 forget list, and this filter has forgotten {} keys (`seen forget`): copied \
                 without it, they would be present again; nothing was written (a Redis filter \
                 of fingerprint sets, the default of `dedup -f`, can forget keys)",
                forget.len()
            );
        }
        // An empty list's region is not a Redis filter's business.
        let header = Header {
            forget: None,
            ..header.clone()
        };
        RedisFilter::upload(self, link, &header, bits, replace)
    }

    fn union_of_sets(
        &self,
        link: Link,
        inputs: &mut [&mut SetsFilter],
        replace: bool,
    ) -> Result<crate::redis::SetsUnion> {
        SetsFilter::union_into(self, link, inputs, replace)
    }

    fn verify(&self, repair: bool, link: Link, _: Show, out: &mut dyn Write) -> Result<Verified> {
        verify_redis(self, repair, link, out)
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
) -> Result<redis::Opened> {
    let mut f = match create {
        Some(new) => {
            let (f, made) =
                redis::open_or_create(loc, link, new.layout, &new.spec, new.seed, keys)?;
            if made && new.announce {
                let how = match (new.spec.window, new.spec.growth) {
                    (Some(_), _) => "per window",
                    (None, Some(_)) => {
                        "in its first generation (it grows: a larger one when that is full)"
                    }
                    (None, None) => {
                        "(it does not grow: pass -n to size it for the lines you expect over all \
                         runs, or --growth 2 for one that grows)"
                    }
                };
                eprintln!(
                    "seen: created {} for {} distinct lines {how} at false-positive rate {:e}",
                    loc,
                    indicatif::HumanCount(new.spec.capacity),
                    new.spec.target_fpp,
                );
            }
            f
        }
        None => redis::open(loc, link, true)?,
    };
    if let Some(term) = journal {
        let out = std::io::stdout();
        let (n, dir) = match &mut f {
            redis::Opened::Bloom(f) => f.journal(term, keys, &mut out.lock())?,
            redis::Opened::Sets(f) => f.journal(term, keys, &mut out.lock())?,
            redis::Opened::Gens(f) => f.journal(term, keys, &mut out.lock())?,
        };
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
        for o in redis::orphans(&loc.name, &dir, &loc.to_string()) {
            eprintln!("seen: {}", orphan_note(loc, &o));
        }
    }
    Ok(f)
}

/// An open Redis filter of either layout as the store's one dynamic type.
fn held(f: redis::Opened) -> Opened {
    match f {
        redis::Opened::Bloom(f) => Opened::new(f),
        redis::Opened::Sets(f) => Opened::new(f),
        redis::Opened::Gens(f) => Opened::new(f),
    }
}

/// A filter in Redis: its meta key decodes (checked on open), and every
/// shard is there with the length the meta says (Redis keeps no checksums
/// of its own: a shard lost to a failover, an eviction or a `DEL` is what
/// can go wrong).
/// What an orphaned journal is, and what to do about it.
fn orphan_note(loc: &Location, o: &redis::Orphan) -> String {
    let what = format!(
        "{} journal file{} ({}) in {}",
        o.files,
        if o.files == 1 { "" } else { "s" },
        indicatif::HumanBytes(o.bytes),
        o.dir.display()
    );
    if o.same_location {
        format!(
            "{what} belong to an earlier filter at {loc} that was deleted or made again: they \
             can never be replayed (the lines they hold were recorded there, not here); \
             `seen verify --repair {loc}` removes them"
        )
    } else {
        format!(
            "{what} belong to a filter named {} that an older seen wrote, perhaps on another \
             server: if no filter of that name elsewhere is written from this machine, remove \
             them with `rm -r {}`",
            loc.name,
            o.dir.display()
        )
    }
}

/// Reports (to `out`) the orphaned journals on this machine of earlier
/// filters at `loc`, whose own journals are in `dir`; with `repair`,
/// removes those known to be of this location.
fn verify_journals(
    loc: &Location,
    dir: &std::path::Path,
    repair: bool,
    out: &mut dyn Write,
) -> Result<()> {
    for o in redis::orphans(&loc.name, dir, &loc.to_string()) {
        if repair && o.same_location {
            let line = if redis::remove_orphan(&o) {
                format!(
                    "removed {} (journals of an earlier filter at {loc})",
                    o.dir.display()
                )
            } else {
                format!("kept {}: a live run holds it", o.dir.display())
            };
            writeln!(out, "{loc}: {line}").context("cannot write output")?;
        } else {
            writeln!(out, "{loc}: {}", orphan_note(loc, &o)).context("cannot write output")?;
        }
    }
    Ok(())
}

fn verify_redis(loc: &Location, repair: bool, link: Link, out: &mut dyn Write) -> Result<Verified> {
    if let Some(what) = redis::lost_meta(loc, link)? {
        writeln!(out, "{loc}: damaged: data of a filter without its meta key")
            .and_then(|()| out.flush())
            .context("cannot write output")?;
        eprintln!("seen: {what}");
        return Ok(Verified::Damaged);
    }
    // --repair: nothing in Redis is repaired that way (a lost shard means
    // rebuilding); the orphaned journals on this machine go.
    let opened = redis::open(loc, link, false)?;
    let dir = match &opened {
        redis::Opened::Bloom(f) => f.journal_dir(),
        redis::Opened::Sets(f) => f.journal_dir(),
        redis::Opened::Gens(f) => f.journal_dir(),
    };
    if let Ok(dir) = dir {
        verify_journals(loc, &dir, repair, out)?;
    }
    let mut f = match opened {
        redis::Opened::Bloom(f) => f,
        redis::Opened::Sets(f) => return verify_sets(f, out),
        redis::Opened::Gens(f) => return super::in_redis_gens::verify(f, out),
    };
    let bad = f.missing_shards()?;
    let shards = f.shard_count();
    for (key, what) in &bad {
        writeln!(out, "{loc}: shard {key} {what}").context("cannot write output")?;
    }
    if bad.is_empty() {
        writeln!(
            out,
            "{loc}: ok (meta key and {shards} shards, each of the right length)"
        )
        .context("cannot write output")?;
    }
    out.flush().context("cannot write output")?;
    if bad.is_empty() {
        return Ok(Verified::Ok);
    }
    eprintln!(
        "seen: {loc}: {} of {shards} shards missing or of the wrong length: its answers \
         can no longer be trusted (lines recorded there read as new); rebuild it, or copy \
         a snapshot back with `seen copy --force`",
        bad.len()
    );
    Ok(Verified::Damaged)
}

/// A filter of fingerprint sets: its meta key decodes (checked on open),
/// every set is an intset or absent (see [`SetsFilter::check_sets`]), and
/// the sets still hold a fingerprint for every line recorded (see
/// [`missing_lines`]).
fn verify_sets(mut f: SetsFilter, out: &mut dyn Write) -> Result<Verified> {
    let loc = f.location().clone();
    let sets = f.meta().sets;
    let bad = f.check_sets()?;
    let missing = missing_lines(&mut f)?;
    let damaged = bad.iter().filter(|b| b.2).count();
    for (key, what, _) in bad.iter().take(20) {
        writeln!(out, "{loc}: set {key} {what}").context("cannot write output")?;
    }
    if bad.len() > 20 {
        writeln!(out, "{loc}: … and {} more sets", bad.len() - 20)
            .context("cannot write output")?;
    }
    if let Some((lines, held)) = missing {
        writeln!(
            out,
            "{loc}: its sets hold {} fingerprints, fewer than the {} lines recorded",
            indicatif::HumanCount(held),
            indicatif::HumanCount(lines)
        )
        .context("cannot write output")?;
    }
    if bad.is_empty() && missing.is_none() {
        writeln!(
            out,
            "{loc}: ok (meta key and {} sets, each compact or empty)",
            indicatif::HumanCount(sets)
        )
        .context("cannot write output")?;
    }
    out.flush().context("cannot write output")?;
    if damaged > 0 {
        eprintln!(
            "seen: {loc}: {damaged} of {sets} sets are not sets: another program wrote over \
             them, and the lines they held read as new; rebuild the filter"
        );
    }
    if let Some((lines, held)) = missing {
        eprintln!(
            "seen: {loc}: at least {} recorded lines lost their fingerprints (sets deleted, \
             evicted under maxmemory, or lost in a failover or a restart), and read as new: \
             rebuild the filter from its lines, or copy a snapshot back; keep the server \
             from evicting (maxmemory-policy noeviction)",
            indicatif::HumanCount(lines - held)
        );
    }
    let loose = bad.len() - damaged;
    if loose > 0 {
        eprintln!(
            "seen: {loc}: {loose} of {sets} sets lost their compact form (they still answer \
             right): the filter holds more lines than it was sized for, or the server's \
             set-max-intset-entries was lowered; make a larger filter (`seen build -n …`) and \
             move to it, or raise set-max-intset-entries to {} or more",
            f.meta().limit.max(512)
        );
    }
    Ok(if bad.is_empty() && missing.is_none() {
        Verified::Ok
    } else {
        Verified::Damaged
    })
}

/// Whether a filter of fingerprint sets lost data under its meta key: each
/// line a writer counted as new either added its fingerprint to a set
/// (`SADD` 1) or was taken off a forget list (`SREM` 1), and nothing else
/// removes a fingerprint, so the sets hold at least the lines counted less
/// those taken off lists. The lines counted are read before the sets, and
/// those taken off lists after; all only grow, so writers running
/// meanwhile cannot make a shortfall ([`Census::lost_lines`]). Returns
/// (lines counted less those, fingerprints held) when they hold fewer.
fn missing_lines(f: &mut SetsFilter) -> Result<Option<(u64, u64)>> {
    Ok(f.census(&mut |_| {})?.lost_lines())
}

/// A filter of fingerprint sets has no bits: `stats` counts its sets,
/// `copy` and `merge` say why they cannot take it.
impl Held for SetsFilter {
    fn header(&self) -> &Header {
        SetsFilter::header(self)
    }

    fn bits(&mut self, _: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        bail!(
            "{} is in the fingerprint-set layout (a Redis set per few hundred lines), which \
             has no Bloom bits to copy or merge: seen cannot move it to a file yet; make the \
             filter with --redis-layout bloom to copy it file <-> Redis byte for byte",
            self.location()
        )
    }

    fn census(&mut self, progress: &mut dyn FnMut(u64)) -> Option<Result<Census>> {
        Some(SetsFilter::census(self, progress))
    }

    fn sets(&mut self) -> Option<&mut SetsFilter> {
        Some(self)
    }

    fn run_rates(&self, new: u64) -> Option<(f64, f64)> {
        Some(SetsFilter::run_rates(self, new))
    }

    fn output_lost(&mut self) {
        crate::redis::Journaled::output_lost(self);
    }

    fn shared_writer(&self) -> bool {
        self.writes()
    }

    fn recorded_keys(&self) -> Option<(KeySpec, String)> {
        Some((SetsFilter::header(self).keys, self.location().to_string()))
    }

    fn finish(mut self: Box<Self>, ok: bool) -> Result<Option<Header>> {
        SetsFilter::finish(&mut self, ok)
    }
}

impl Held for RedisFilter {
    fn header(&self) -> &Header {
        RedisFilter::header(self)
    }

    fn cannot_forget(&self) -> String {
        "a Redis filter in the Bloom layout (`--redis-layout bloom`) cannot forget keys (filter \
         files and Redis filters of fingerprint sets can); to drop keys from it, copy it to a \
         file (`seen copy`), forget them there, and copy it back with --force"
            .into()
    }

    fn bits(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        self.read_all(progress)
    }

    fn fetches_bits(&self) -> bool {
        true
    }

    fn output_lost(&mut self) {
        crate::redis::Journaled::output_lost(self);
    }

    fn shared_writer(&self) -> bool {
        self.writes()
    }

    fn recorded_keys(&self) -> Option<(KeySpec, String)> {
        Some((RedisFilter::header(self).keys, self.location().to_string()))
    }

    fn finish(mut self: Box<Self>, ok: bool) -> Result<Option<Header>> {
        // A failure in the run's last batch is reported here.
        let broken = self.take_broken();
        self.end_journal(ok && broken.is_none());
        // What was recorded stays recorded, whatever happened.
        let committed = self.commit();
        if let Some(e) = broken {
            return Err(e);
        }
        committed?;
        Ok(ok.then(|| RedisFilter::header(&self).clone()))
    }
}

/// A new filter in memory, stored in Redis at the end of a run that went
/// well (`build -o redis://…`).
struct RedisNew {
    filter: MemFilter,
    at: Location,
    replace: bool,
    link: Link,
}

impl Held for RedisNew {
    fn header(&self) -> &Header {
        self.filter.header()
    }

    fn bits(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        Held::bits(&mut self.filter, progress)
    }

    fn finish(self: Box<Self>, ok: bool) -> Result<Option<Header>> {
        if !ok {
            return Ok(None);
        }
        let bits: Vec<&[u8]> = (0..self.filter.header().layers.len())
            .map(|i| self.filter.layer_bits(i))
            .collect();
        RedisFilter::upload(
            &self.at,
            self.link,
            self.filter.header(),
            &bits,
            self.replace,
        )?;
        Ok(Some(self.filter.header().clone()))
    }
}

/// The port goes to the filter in memory.
impl Store for RedisNew {
    fn seed(&self) -> u64 {
        self.filter.seed()
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        self.filter.contains_batch(hashes, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        self.filter.insert_batch(hashes, out)
    }

    fn record_batch(&mut self, hashes: &[Hash128]) -> Result<u64> {
        self.filter.record_batch(hashes)
    }
}
