//! `seen verify`: check a filter's header and every data segment against its
//! checksum, naming what is damaged; with `--repair`, first settle a file a
//! killed writer left dirty.

use crate::cli::VerifyArgs;
use crate::file::format::{SEGMENT_BYTES, segment_checksum};
use crate::file::{ReadFilter, WriteFilter};
use crate::progress::Progress;
use anyhow::{Context, Result};
use std::io::Write;
use std::process::ExitCode;

/// Exit status of a dirty file whose checksums do not all match: a writer was
/// killed between changing bits and writing their checksums, so they may be
/// stale rather than the data damaged.
pub const STALE: u8 = 3;

/// Runs `seen verify`: exit 0 when everything checks, 1 when a segment of a
/// clean file is damaged (each one named on stdout), [`STALE`] when a dirty
/// file's checksums do not all match, 2 when the file cannot be used at all
/// (the header check fails on open). With `--repair`, a dirty file is first
/// settled by a writer that recounts it and rewrites every checksum.
///
/// # Errors
/// An unusable filter (bad header, truncated, ...) or a failed write.
pub fn run(a: VerifyArgs) -> Result<ExitCode> {
    if let Some(loc) = super::redis_location(&a.filter)? {
        return verify_redis(&loc, &a);
    }
    if a.repair && ReadFilter::open(&a.filter)?.header().is_dirty() {
        // Opening a dirty file for writing recounts its counters and marks
        // every checksum stale; the commit rewrites them all and clears the
        // flag (unless another writer settled it first: then nothing is stale).
        let mut w = WriteFilter::open(&a.filter, Some(0))?;
        w.commit()?;
        eprintln!(
            "seen: {}: repaired: a killed writer had left it dirty; counters recounted and \
             every checksum recomputed from its bits",
            a.filter.display()
        );
    }
    let f = ReadFilter::open(&a.filter)?;
    let h = f.header();
    let total = h.bit_bytes();
    let progress = Progress::start(a.progress.into(), Some(total), "", false);
    let mut out = crate::output::stdout();
    let name = a.filter.display();
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
    drop(progress);
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
    if damaged > 0 {
        if h.is_dirty() {
            eprintln!(
                "seen: {name} is dirty (a writer was killed): checksums of the segments it \
                 was changing may be stale rather than the data damaged; `seen verify \
                 --repair {name}` (or the next writer) recomputes them"
            );
            return Ok(ExitCode::from(STALE));
        }
        eprintln!(
            "seen: {name}: {damaged} of {checked} segments damaged: rebuild the filter from \
             its source lines (its bits can no longer be trusted)"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `seen verify` of a filter in Redis: its meta key decodes (checked on
/// open), and every shard is there with the length the meta says (Redis
/// keeps no checksums of its own: a shard lost to a failover, an eviction
/// or a `DEL` is what can go wrong). Exit 1 when a shard is missing or has
/// another length.
///
/// # Errors
/// A server that cannot be reached, or a meta key that is not a filter's.
fn verify_redis(loc: &crate::redis::Location, a: &VerifyArgs) -> Result<ExitCode> {
    if a.repair {
        anyhow::bail!(
            "--repair is for filter files a killed writer left dirty; a filter in Redis has \
             nothing to repair that way (a lost shard means rebuilding it)"
        );
    }
    let mut f = crate::redis::RedisFilter::open(loc, a.lock.redis(), false)?;
    let bad = f.missing_shards()?;
    let shards = f.shard_count();
    let mut out = crate::output::stdout();
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
    if !bad.is_empty() {
        eprintln!(
            "seen: {loc}: {} of {shards} shards missing or of the wrong length: its answers \
             can no longer be trusted (lines recorded there read as new); rebuild it, or copy \
             a snapshot back with `seen copy --force`",
            bad.len()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
