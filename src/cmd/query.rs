//! `seen query`: grep-style membership tests against a filter.

use super::options;
use crate::cli::QueryArgs;
use crate::hash::hash;
use crate::input::{Source, sources};
use crate::job::plan::reading;
use crate::job::{Job, Output, execute, settle_keys};
use crate::keys::{KeySpec, Keyer};
use crate::output::stdout;
use crate::pipeline::{Chunk, Mode, Store, Taken};
use crate::progress::Show;
use crate::store::Opened;
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
    // Counting or the status alone need no item bytes: long lines stream by.
    opts.stream_long = (a.count || a.quiet) && !a.json;
    let mut v = Verdicts {
        out: stdout(),
        term: opts.term,
        invert: a.invert,
        json: a.json,
        // Stop at the first selected item when only the exit status is wanted.
        stop_early: a.quiet && !a.all,
        print: !a.quiet && !a.count && !a.json,
        keyer: None,
        line: Vec::new(),
        total: 0,
        selected: 0,
    };
    if a.items.is_empty() {
        let job = Job {
            sources: if a.files.is_empty() {
                vec![Source::Stdin]
            } else {
                sources(&a.files)
            },
            opts,
            keys: a.keys.spec(),
            lines_are_keys: a.as_keys,
            store: reading(a.filter.clone(), a.lock.link()),
            mode: Mode::Lookup,
            progress: Show {
                forced: a.progress,
                quiet: a.quiet,
            },
            // Only the items themselves (or --json verdicts) go out line by
            // line; -c prints one number at the end, so a terminal shows a bar
            // meanwhile, as for build. (-q shows none: it is quiet.)
            prints_lines: v.print || v.json,
            summary: None,
        };
        execute(job, &mut v)?;
    } else {
        if let Some(n) = a.keys.field {
            anyhow::bail!(
                "-k {n} selects a field of records read with --file or from standard input; \
                 items on the command line are keys already (the filter's trim, URL and \
                 case rules still apply): drop -k, or pass the records with --file"
            );
        }
        note_items_that_are_files(&a.items);
        let mut filter = Opened::open(&reading(a.filter.clone(), a.lock.link()), None)?;
        // An item is a key: what the user asks about, never a record whose
        // field would be selected.
        let keys = settle_keys(a.keys.spec(), filter.recorded_keys(), true);
        v.begin(keys);
        let seed = filter.seed();
        let mut k = Keyer::new(keys);
        let hashes: Vec<_> = a
            .items
            .iter()
            .map(|i| hash(k.key(i.as_bytes()), seed))
            .collect();
        let mut present = Vec::new();
        filter.contains_batch(&hashes, &mut present)?;
        let mut rec = Vec::new();
        for (item, p) in a.items.iter().zip(present) {
            rec.clear();
            rec.extend_from_slice(item.as_bytes());
            rec.push(v.term);
            if !v.each(&rec, p)? {
                break;
            }
        }
    }
    if a.count && !a.quiet {
        writeln!(v.out, "{}", v.selected).context("cannot write output")?;
    }
    v.out.flush().context("cannot write output")?;
    let ok = if a.all {
        v.total > 0 && v.selected == v.total
    } else {
        v.selected > 0
    };
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Says when an item names an existing file: `seen query F urls.txt` looks
/// up the string "urls.txt", which is rarely what was meant. The answer stays
/// the one for the string.
fn note_items_that_are_files(items: &[std::ffi::OsString]) {
    for item in items {
        let path = std::path::Path::new(item);
        if path.is_file() {
            let shown = path.display();
            eprintln!(
                "seen: note: `{shown}` was looked up as an item, and it is also a file: \
                 to look up the lines of the file, pass --file {shown} (or < {shown})"
            );
        }
    }
}

/// The verdicts of a query, as it prints and counts them.
struct Verdicts<W> {
    out: W,
    term: u8,
    invert: bool,
    json: bool,
    stop_early: bool,
    /// Print the selected items themselves.
    print: bool,
    /// Makes the `key` of `--json` lines, with key options.
    keyer: Option<Keyer>,
    /// One `--json` line.
    line: Vec<u8>,
    /// Items looked at, and selected ones.
    total: u64,
    selected: u64,
}

impl<W: Write> Verdicts<W> {
    /// Takes one item (terminator included) and its verdict; `false` when
    /// the answer is known (`-q`'s first match).
    ///
    /// # Errors
    /// A failed write.
    fn each(&mut self, item: &[u8], present: bool) -> Result<bool> {
        self.total += 1;
        if self.json {
            let record = item.strip_suffix(&[self.term]).unwrap_or(item);
            self.line.clear();
            Verdict::new(record, self.keyer.as_mut(), present).write(&mut self.line)?;
            self.out
                .write_all(&self.line)
                .context("cannot write output")?;
        }
        if present != self.invert {
            self.selected += 1;
            if self.print {
                self.out.write_all(item).context("cannot write output")?;
            }
            return Ok(!self.stop_early);
        }
        Ok(true)
    }
}

impl<W: Write + Send> Output for Verdicts<W> {
    fn begin(&mut self, keys: KeySpec) {
        self.keyer = (self.json && !keys.is_raw()).then(|| Keyer::new(keys));
    }

    fn chunk(&mut self, c: &Chunk) -> Result<Taken> {
        if !self.print && !self.json && !self.stop_early {
            // Counts, or the status after every line (-q -a): no record is
            // looked at.
            let (n, hits) = c.count(!self.invert);
            self.total += n;
            self.selected += hits;
            return Ok(Taken::All);
        }
        let mut go_on = true;
        let mut result = Ok(());
        c.for_each(|r, p| {
            if go_on && result.is_ok() {
                match self.each(r, p) {
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
            return Ok(Taken::Stop { new: 0 });
        }
        if c.wants_flush() {
            self.out.flush().context("cannot write output")?;
        }
        Ok(Taken::All)
    }
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
