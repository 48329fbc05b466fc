//! `seen verify`'s checks, one per store: a file's header and every data
//! segment against its checksum (after settling a file a killed writer left
//! dirty, with `--repair`); a Redis filter's meta key and every shard's
//! presence and length.

use super::{FilterAt, Link};
use crate::file::{ReadFilter, WriteFilter};
use crate::format::{SEGMENT_BYTES, segment_checksum};
use crate::progress::{Progress, Show};
use crate::redis::{Location, RedisFilter};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    /// Everything checks.
    Ok,
    /// A part is damaged or missing (each one named on the output).
    Damaged,
    /// A dirty file's checksums do not all match: a writer was killed
    /// between changing bits and writing their checksums, so they may be
    /// stale rather than the data damaged.
    Stale,
}

/// Checks the filter at `at`, naming each damaged part on `out` (and what
/// to do on stderr); with `repair`, a file a killed writer left dirty is
/// settled first.
///
/// # Errors
/// A filter that cannot be used at all (its header fails on open), a
/// server that cannot be reached, `repair` of a store that has nothing to
/// repair that way, or a failed write.
pub(crate) fn verify(
    at: &FilterAt,
    repair: bool,
    link: Link,
    progress: Show,
    out: &mut dyn Write,
) -> Result<Verified> {
    match at {
        FilterAt::File(p) => verify_file(p, repair, progress, out),
        FilterAt::Redis(loc) => verify_redis(loc, repair, link, out),
    }
}

/// A filter file: settled first with `repair` when dirty, then every
/// segment against its checksum.
fn verify_file(path: &Path, repair: bool, progress: Show, out: &mut dyn Write) -> Result<Verified> {
    if repair && ReadFilter::open(path)?.header().is_dirty() {
        // Opening a dirty file for writing recounts its counters and marks
        // every checksum stale; the commit rewrites them all and clears the
        // flag (unless another writer settled it first: then nothing is stale).
        let mut w = WriteFilter::open(path, Some(0))?;
        w.commit()?;
        eprintln!(
            "seen: {}: repaired: a killed writer had left it dirty; counters recounted and \
             every checksum recomputed from its bits",
            path.display()
        );
    }
    let f = ReadFilter::open(path)?;
    let h = f.header();
    let total = h.bit_bytes();
    let bar = Progress::start(progress, Some(total), "", false);
    let name = path.display();
    let (mut checked, mut damaged, mut unchecked) = (0u64, 0u64, 0usize);
    for (i, l) in h.layers.iter().enumerate() {
        let sums = f.checksums(i)?;
        if sums.is_empty() {
            unchecked += 1;
            continue;
        }
        let bits = f.layer_bits(i);
        for (s, stored) in sums.iter().enumerate() {
            let range = l.segment(s as u64);
            checked += 1;
            crate::progress::advance(range.len() as u64, 0);
            if segment_checksum(&bits[range.clone()]) != *stored {
                damaged += 1;
                writeln!(
                    out,
                    "{name}: layer {i}, bytes {}..{} of the file (segment {s}): data does not match its checksum{}",
                    l.offset + range.start as u64,
                    l.offset + range.end as u64,
                    if h.is_dirty() { " (stale or damaged: the file is dirty)" } else { "" }
                )
                .context("cannot write output")?;
            }
        }
    }
    drop(bar);
    let layers = h.layers.len();
    if damaged == 0 {
        writeln!(
            out,
            "{name}: ok (header and {checked} data segment{} of up to {} MiB in {layers} layer{}{})",
            if checked == 1 { "" } else { "s" },
            SEGMENT_BYTES >> 20,
            if layers == 1 { "" } else { "s" },
            if unchecked > 0 {
                format!("; {unchecked} layer(s) from before format 1.2 have no checksums")
            } else {
                String::new()
            }
        )
        .context("cannot write output")?;
    }
    out.flush().context("cannot write output")?;
    if damaged == 0 {
        return Ok(Verified::Ok);
    }
    if h.is_dirty() {
        eprintln!(
            "seen: {name} is dirty (a writer was killed): checksums of the segments it \
             was changing may be stale rather than the data damaged; `seen verify \
             --repair {name}` (or the next writer) recomputes them"
        );
        return Ok(Verified::Stale);
    }
    eprintln!(
        "seen: {name}: {damaged} of {checked} segments damaged: rebuild the filter from \
         its source lines (its bits can no longer be trusted)"
    );
    Ok(Verified::Damaged)
}

/// A filter in Redis: its meta key decodes (checked on open), and every
/// shard is there with the length the meta says (Redis keeps no checksums
/// of its own: a shard lost to a failover, an eviction or a `DEL` is what
/// can go wrong).
fn verify_redis(loc: &Location, repair: bool, link: Link, out: &mut dyn Write) -> Result<Verified> {
    if repair {
        anyhow::bail!(
            "--repair is for filter files a killed writer left dirty; a filter in Redis has \
             nothing to repair that way (a lost shard means rebuilding it)"
        );
    }
    let mut f = RedisFilter::open(loc, link, false)?;
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
