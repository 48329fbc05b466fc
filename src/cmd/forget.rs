//! `seen forget`: deletion, exactly. The keys given that the filter holds
//! go on its forget list ([`crate::filter::forget`]): absent to `query`,
//! new to `dedup -f` (which records them again), and no other key changes
//! its answer.

use crate::cli::ForgetArgs;
use crate::hash::{Hash128, hash};
use crate::input::{Source, sources};
use crate::job::{refuse_filters_as_lines, settle_keys};
use crate::keys::Keyer;
use crate::pipeline::Store;
use crate::store::{Access, Opened, Where};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

/// Keys forgotten per commit: a writer sees a batch whole or not at all,
/// and a killed `forget` leaves the batches before it committed.
const BATCH: usize = 1 << 20;

/// What a run did, for `--summary`.
#[derive(Debug, Default, Serialize)]
struct Summary {
    /// Items read.
    items: u64,
    /// Items that were present and are now forgotten (repeats counted once
    /// per item read).
    forgotten: u64,
    /// Items that were not present (never recorded, or forgotten already).
    absent: u64,
    /// Keys on the forget list at the end.
    list_entries: u64,
    /// Bytes the list's entries take in the file.
    list_bytes: u64,
}

/// Runs `seen forget`.
///
/// # Errors
/// An unusable filter, unreadable input or a failed write.
pub fn run(a: ForgetArgs) -> Result<ExitCode> {
    let term = if a.records.null { 0 } else { b'\n' };
    let place = Where::At {
        at: a.filter.clone(),
        access: Access::Write {
            create: None,
            expect_keys: None,
            journal: None,
        },
        link: a.lock.link(),
    };
    if let Some(n) = a.keys.field
        && !a.items.is_empty()
    {
        bail!(
            "-k {n} selects a field of records read with --file or from standard input; \
             items on the command line are keys already (the filter's trim, URL and case \
             rules still apply): drop -k, or pass the records with --file"
        );
    }
    let srcs = sources(&a.files);
    if a.items.is_empty() {
        refuse_filters_as_lines(&srcs)?;
    }
    let mut filter = Opened::open(&place, None)?;
    if filter.forgets().is_none() {
        bail!("{}: {}", a.filter, filter.cannot_forget());
    }
    let keys_only = !a.items.is_empty() || a.as_keys;
    let keys = settle_keys(a.keys.spec(), filter.recorded_keys(), keys_only);
    let seed = filter.seed();
    let mut k = Keyer::new(keys);
    let mut s = Summary::default();
    let batch = crate::tuning::get().forget_batch.unwrap_or(BATCH);
    let mut hashes: Vec<Hash128> = Vec::with_capacity(batch.min(1 << 16));
    let mut out = Vec::new();
    let mut flush = |hashes: &mut Vec<Hash128>, s: &mut Summary, filter: &mut Opened| {
        if hashes.is_empty() {
            return Ok::<(), anyhow::Error>(());
        }
        let f = filter.forgets().expect("checked above");
        f.forget_batch(hashes, &mut out)?;
        let present = out.iter().filter(|&&p| p).count() as u64;
        s.items += hashes.len() as u64;
        s.forgotten += present;
        s.absent += hashes.len() as u64 - present;
        hashes.clear();
        Ok(())
    };
    if a.items.is_empty() {
        let mut rec = Vec::new();
        for src in &srcs {
            let reader: Box<dyn Read> = match src {
                Source::Stdin => Box::new(std::io::stdin().lock()),
                Source::File(p) => Box::new(
                    std::fs::File::open(p)
                        .with_context(|| format!("cannot open {}", p.display()))?,
                ),
            };
            let mut r = BufReader::with_capacity(1 << 20, reader);
            loop {
                rec.clear();
                let n = r
                    .read_until(term, &mut rec)
                    .with_context(|| format!("cannot read {}", src.name()))?;
                if n == 0 {
                    break;
                }
                if rec.last() == Some(&term) {
                    rec.pop();
                }
                hashes.push(hash(k.key(&rec), seed));
                if hashes.len() == batch {
                    flush(&mut hashes, &mut s, &mut filter)?;
                }
            }
        }
    } else {
        for item in &a.items {
            hashes.push(hash(k.key(item.as_bytes()), seed));
        }
    }
    flush(&mut hashes, &mut s, &mut filter)?;
    let f = filter.forgets().expect("checked above");
    s.list_entries = f.forgotten();
    s.list_bytes = s.list_entries * crate::filter::forget::ENTRY_BYTES as u64;
    filter.finish(true)?;
    if a.summary {
        if a.json {
            let v = serde_json::to_string(&s).context("cannot encode the summary")?;
            eprintln!("{v}");
        } else {
            eprintln!(
                "seen: {} item{} read: {} forgotten, {} not present; the forget list holds {} \
                 key{} ({})",
                indicatif::HumanCount(s.items),
                if s.items == 1 { "" } else { "s" },
                indicatif::HumanCount(s.forgotten),
                indicatif::HumanCount(s.absent),
                indicatif::HumanCount(s.list_entries),
                if s.list_entries == 1 { "" } else { "s" },
                indicatif::HumanBytes(s.list_bytes),
            );
        }
    }
    Ok(if s.forgotten > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
