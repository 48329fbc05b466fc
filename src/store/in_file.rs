//! The filter file as a place ([`Place`] for a path): opened to read, to
//! write or made new; checked, copied, merged and verified in place.

use super::open::{Held, Opened};
use super::{Access, Identity, Link, Made, NewFile, Place, Verified};
use crate::file::{NewFilter, ReadFilter, Target, WriteFilter, check_target};
use crate::filter::forget::ForgetList;
use crate::format::Header;
use crate::format::{SEGMENT_BYTES, segment_checksum};
use crate::keys::KeySpec;
use crate::pipeline::Store;
use crate::progress::Progress;
use crate::progress::Show;
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};

impl Place for PathBuf {
    fn identity(&self) -> Identity {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(self) {
            Ok(m) => Identity::File(m.dev(), m.ino()),
            Err(_) => Identity::Absent,
        }
    }

    fn path(&self) -> Option<&Path> {
        Some(self)
    }

    fn exists(&self) -> Option<bool> {
        Some(Path::exists(self))
    }

    fn check_new(&self, replace: bool, _: Link, hint: &str) -> Result<()> {
        if self.is_dir() && !self.is_symlink() {
            bail!(
                "{} is a directory: give the filter file to write",
                self.display()
            );
        }
        match check_target(self, replace)? {
            Target::Free => Ok(()),
            Target::Filter if replace => Ok(()),
            Target::Filter => bail!(
                "{} already exists: pass --force to replace it{hint}",
                self.display()
            ),
            Target::OtherFile => bail!(
                "{} is not a seen filter: give a new path, or the path of a filter with --force",
                self.display()
            ),
        }
    }

    fn target(&self, replace: bool) -> Result<Option<Target>> {
        check_target(self, replace).map(Some)
    }

    fn open(&self, access: &Access, _: Link, keys: KeySpec) -> Result<Opened> {
        Ok(match access {
            Access::Read => Opened::new(ReadFilter::open(self)?),
            Access::Write {
                create,
                expect_keys,
                ..
            } => {
                if let Some(new) = create {
                    create_missing(self, new, keys)?;
                }
                Opened::new(WriteFilter::open(self, *expect_keys)?)
            }
            Access::New {
                spec,
                seed,
                replace,
                expect_keys,
                ..
            } => {
                let mut f = NewFilter::create(self, spec, *seed, keys)?;
                f.expect_keys(*expect_keys);
                Opened::new(NewAt(f, *replace))
            }
        })
    }

    fn write_whole(
        &self,
        _: Link,
        header: &Header,
        bits: &[&[u8]],
        forget: &ForgetList,
        replace: bool,
    ) -> Result<()> {
        NewFilter::copy_of(self, header, bits, forget)?.finish(replace)
    }

    fn union_in_place(
        &self,
        header: &Header,
        sources: &[Vec<&[u8]>],
        forget: &ForgetList,
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<Option<Made>> {
        Ok(Some(Made::File(NewFilter::union_of(
            self, header, sources, forget, done,
        )?)))
    }

    fn set_clock(&self, t: u64) -> Result<Option<crate::file::ClockBack>> {
        WriteFilter::open(self, Some(0))?.set_clock(t)
    }

    fn verify(
        &self,
        repair: bool,
        _: Link,
        progress: Show,
        out: &mut dyn Write,
    ) -> Result<Verified> {
        verify_file(self, repair, progress, out)
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
    if let Some(fl) = h.forget
        && f.forget_mismatch()?
    {
        damaged += 1;
        writeln!(
                out,
                "{name}: forget list, bytes {}..{} of the file ({} entries): does not match its checksum{}",
                fl.offset,
                fl.offset + fl.used_bytes(),
                fl.count,
                if h.is_dirty() { " (stale or damaged: the file is dirty)" } else { "" }
            )
            .context("cannot write output")?;
    }
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
            + &h.forget
                .map(|fl| format!("; its forget list of {} keys too", fl.count))
                .unwrap_or_default()
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

impl Held for ReadFilter {
    fn header(&self) -> &Header {
        ReadFilter::header(self)
    }

    fn bits(&mut self, _: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        Ok((0..ReadFilter::header(self).layers.len())
            .map(|i| self.layer_bits(i))
            .collect())
    }

    fn forget_list(&self) -> Option<&ForgetList> {
        Some(ReadFilter::forget_list(self))
    }

    fn check_whole(&self) -> Result<()> {
        self.check_intact()
    }

    fn recorded_keys(&self) -> Option<(KeySpec, String)> {
        Some((
            ReadFilter::header(self).keys,
            self.path().display().to_string(),
        ))
    }

    fn finish(self: Box<Self>, ok: bool) -> Result<Option<Header>> {
        Ok(ok.then(|| ReadFilter::header(&self).clone()))
    }
}

impl Held for WriteFilter {
    fn header(&self) -> &Header {
        WriteFilter::header(self)
    }

    fn bits(&mut self, _: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        bail!("a filter open for writing is not read whole")
    }

    fn recorded_keys(&self) -> Option<(KeySpec, String)> {
        Some((
            WriteFilter::header(self).keys,
            self.path().display().to_string(),
        ))
    }

    /// What was recorded stays, whatever happened.
    fn finish(mut self: Box<Self>, ok: bool) -> Result<Option<Header>> {
        self.commit()?;
        Ok(ok.then(|| WriteFilter::header(&self).clone()))
    }
}

/// A new filter file, not yet at its path; `.1`: one there is replaced.
struct NewAt(NewFilter, bool);

impl Held for NewAt {
    fn header(&self) -> &Header {
        self.0.header()
    }

    fn bits(&mut self, _: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        Ok((0..self.0.header().layers.len())
            .map(|i| self.0.layer_bits(i))
            .collect())
    }

    /// At its path when the run went well; else dropped unfinished (its
    /// temporary file is removed).
    fn finish(self: Box<Self>, ok: bool) -> Result<Option<Header>> {
        if !ok {
            return Ok(None);
        }
        let header = self.0.header().clone();
        self.0.finish(self.1)?;
        Ok(Some(header))
    }
}

/// The port goes to the new file.
impl Store for NewAt {
    fn seed(&self) -> u64 {
        self.0.seed()
    }

    fn contains_batch(
        &mut self,
        hashes: &[crate::hash::Hash128],
        out: &mut Vec<bool>,
    ) -> Result<()> {
        self.0.contains_batch(hashes, out)
    }

    fn insert_batch(
        &mut self,
        hashes: &[crate::hash::Hash128],
        out: &mut Vec<bool>,
    ) -> Result<u64> {
        self.0.insert_batch(hashes, out)
    }

    fn record_batch(&mut self, hashes: &[crate::hash::Hash128]) -> Result<u64> {
        self.0.record_batch(hashes)
    }
}
