//! `seen query`: grep-style membership tests against a filter.

use super::{keys, options};
use crate::cli::QueryArgs;
use crate::file::ReadFilter;

use crate::hash::hash;
use crate::input::{Source, sources, total_bytes};
use crate::keys::Keyer;
use crate::output::stdout;
use crate::pipeline::{Chunk, Mode, Store, run as pipeline};
use crate::progress::Progress;
use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

/// Runs `seen query`.
///
/// # Errors
/// An unusable filter, unreadable input or a failed write.
pub fn run(a: QueryArgs) -> Result<ExitCode> {
    let mut opts = options(a.records);
    let term = opts.term;
    let filter = ReadFilter::open(&a.filter)?;
    opts.keys = keys(&a.keys, Some((filter.header().keys, &a.filter)));
    // Counting or the status alone need no item bytes: long lines stream by.
    opts.stream_long = (a.count || a.quiet) && !a.json;
    let mut out = stdout();
    let (mut total, mut selected) = (0u64, 0u64);
    // Stop at the first selected item when only the exit status is wanted.
    let stop_early = a.quiet && !a.all;
    let print = !a.quiet && !a.count && !a.json;
    let mut keyer = (a.json && !opts.keys.is_raw()).then(|| Keyer::new(opts.keys));
    let mut json = Vec::new();
    let mut each = |item: &[u8], present: bool, out: &mut dyn Write| -> Result<bool> {
        total += 1;
        if a.json {
            let record = item.strip_suffix(&[term]).unwrap_or(item);
            json.clear();
            Verdict::new(record, keyer.as_mut(), present).write(&mut json)?;
            out.write_all(&json).context("cannot write output")?;
        }
        if present != a.invert {
            selected += 1;
            if print {
                out.write_all(item).context("cannot write output")?;
            }
            return Ok(!stop_early);
        }
        Ok(true)
    };
    if !a.items.is_empty() {
        let seed = filter.seed();
        let mut k = Keyer::new(opts.keys);
        let hashes: Vec<_> = a
            .items
            .iter()
            .map(|i| hash(k.key(i.as_bytes()), seed))
            .collect();
        let mut present = Vec::new();
        filter.contains_batch(&hashes, &mut present);
        let mut rec = Vec::new();
        for (item, p) in a.items.iter().zip(present) {
            rec.clear();
            rec.extend_from_slice(item.as_bytes());
            rec.push(term);
            if !each(&rec, p, &mut out)? {
                break;
            }
        }
    } else {
        let srcs: Vec<Source> = if a.files.is_empty() {
            vec![Source::Stdin]
        } else {
            sources(&a.files)
        };
        let mut filter = filter;
        let show = crate::progress::Show {
            forced: a.progress,
            quiet: a.quiet,
        };
        let _progress = Progress::start(show, total_bytes(&srcs), "lines", true);
        // Records and selected ones counted a chunk at a time.
        let mut bulk = (0u64, 0u64);
        pipeline(&srcs, opts, &mut filter, Mode::Lookup, |c: &Chunk| {
            if !print && !a.json && !stop_early {
                // Counts, or the status after every line (-q -a): no record is
                // looked at.
                let (n, hits) = c.count(!a.invert);
                bulk.0 += n;
                bulk.1 += hits;
                return Ok(true);
            }
            let mut go_on = true;
            let mut result = Ok(());
            c.for_each(|r, p| {
                if go_on && result.is_ok() {
                    match each(r, p, &mut out) {
                        Ok(more) => go_on = more,
                        Err(e) => result = Err(e),
                    }
                }
            });
            result?;
            if !go_on {
                // `-q` found a match: the answer is known. Stop now, as grep
                // does: the run returns without waiting for a producer that
                // may never close.
                return Ok(false);
            }
            if c.wants_flush() {
                out.flush().context("cannot write output")?;
            }
            Ok(true)
        })?;
        total += bulk.0;
        selected += bulk.1;
    }
    if a.count && !a.quiet {
        writeln!(out, "{selected}").context("cannot write output")?;
    }
    out.flush().context("cannot write output")?;
    let ok = if a.all {
        total > 0 && selected == total
    } else {
        selected > 0
    };
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One line of `query --json` (docs/JSON.md).
#[derive(Serialize)]
struct Verdict {
    /// The item (lossy UTF-8: invalid bytes become U+FFFD).
    item: String,
    /// The item's bytes in hex, only when it is not valid UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    item_hex: Option<String>,
    /// The key that was looked up, only with key options.
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    /// Whether the filter (probably) holds the key.
    present: bool,
}

impl Verdict {
    fn new(record: &[u8], keyer: Option<&mut Keyer>, present: bool) -> Verdict {
        let item = String::from_utf8_lossy(record);
        let item_hex = matches!(item, std::borrow::Cow::Owned(_)).then(|| hex(record));
        Verdict {
            item: item.into_owned(),
            item_hex,
            key: keyer.map(|k| String::from_utf8_lossy(k.key(record)).into_owned()),
            present,
        }
    }

    fn write(&self, out: &mut Vec<u8>) -> Result<()> {
        serde_json::to_writer(&mut *out, self)?;
        out.push(b'\n');
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
