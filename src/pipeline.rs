//! From records to verdicts: hash each chunk of records, run the filter's batch
//! test-and-set in input order, and hand every record with its verdict to the
//! caller in input order. Input chunks → hashes → ordered test-and-set → verdicts.
//!
//! The commit point of a persistent filter stays with the caller, outside.

use crate::filter::BatchFilter;
use crate::hash::{Hash128, hash};
use crate::input::{ChunkReader, Source, for_each_record};
use anyhow::{Context, Result};
use std::io::Write;

/// What a run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Records read.
    pub read: u64,
    /// Records judged new (inserted for the first time).
    pub new: u64,
    /// Records written to the output.
    pub written: u64,
}

/// Which records `dedup` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The first occurrence of each record.
    First,
    /// Every occurrence after the first.
    Repeated,
}

/// Hashes every record of a chunk (without its terminator).
fn hash_chunk(chunk: &[u8], term: u8, seed: u64, hashes: &mut Vec<Hash128>) {
    hashes.clear();
    for_each_record(chunk, term, |r| hashes.push(hash(&r[..r.len() - 1], seed)));
}

/// Runs every record of every source through `f` with its verdict from `judge`
/// (which sees the chunk's hashes and fills one verdict per record).
fn run<F>(
    sources: &[Source],
    term: u8,
    seed: u64,
    mut judge: impl FnMut(&[Hash128], &mut Vec<bool>),
    mut each: F,
    mut flush: impl FnMut() -> Result<()>,
) -> Result<()>
where
    F: FnMut(&[u8], bool) -> Result<bool>,
{
    let mut hashes = Vec::new();
    let mut verdicts = Vec::new();
    for source in sources {
        let mut reader = ChunkReader::open(source, term)?;
        while let Some(chunk) = reader.next_chunk()? {
            hash_chunk(chunk, term, seed, &mut hashes);
            judge(&hashes, &mut verdicts);
            let mut i = 0;
            let mut more = true;
            let mut result = Ok(());
            for_each_record(chunk, term, |r| {
                if more && result.is_ok() {
                    match each(r, verdicts[i]) {
                        Ok(go_on) => more = go_on,
                        Err(e) => result = Err(e),
                    }
                }
                i += 1;
            });
            result?;
            if !more {
                return Ok(());
            }
            if reader.is_stream() {
                flush()?;
            }
        }
    }
    Ok(())
}

/// Streams records, printing each one's first occurrence (or, with
/// [`Keep::Repeated`], each later occurrence) in input order, and recording them
/// in `filter`.
///
/// # Errors
/// Input or output errors (a closed stdout surfaces as `BrokenPipe`).
pub fn dedup<B: BatchFilter, W: Write>(
    sources: &[Source],
    term: u8,
    filter: &mut B,
    keep: Keep,
    out: &mut W,
) -> Result<Counts> {
    let seed = filter.seed();
    let (mut read, mut new, mut written) = (0, 0, 0);
    let out = std::cell::RefCell::new(out);
    let result = run(
        sources,
        term,
        seed,
        |h, v| new += filter.insert_batch(h, v),
        |r, seen| {
            read += 1;
            if seen == (keep == Keep::Repeated) {
                out.borrow_mut()
                    .write_all(r)
                    .context("cannot write output")?;
                written += 1;
            }
            Ok(true)
        },
        || out.borrow_mut().flush().context("cannot write output"),
    );
    result?;
    out.borrow_mut().flush().context("cannot write output")?;
    Ok(Counts { read, new, written })
}

/// Inserts every record into `filter` (for `build`).
///
/// # Errors
/// Input errors.
pub fn insert_all<B: BatchFilter>(sources: &[Source], term: u8, filter: &mut B) -> Result<Counts> {
    let seed = filter.seed();
    let (mut read, mut new) = (0, 0);
    run(
        sources,
        term,
        seed,
        |h, v| {
            read += h.len() as u64;
            new += filter.insert_batch(h, v);
        },
        |_, _| Ok(true),
        || Ok(()),
    )?;
    Ok(Counts {
        read,
        new,
        written: 0,
    })
}

/// Looks every record up in `filter`, calling `each(record, present)` in input
/// order until it returns `false`.
///
/// # Errors
/// Input errors and whatever `each` returns.
pub fn query<B: BatchFilter>(
    sources: &[Source],
    term: u8,
    filter: &B,
    each: impl FnMut(&[u8], bool) -> Result<bool>,
    flush: impl FnMut() -> Result<()>,
) -> Result<()> {
    run(
        sources,
        term,
        filter.seed(),
        |h, v| filter.contains_batch(h, v),
        each,
        flush,
    )
}
