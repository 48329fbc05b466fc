//! A filter file's forget list on disk (format 3.0): read and checked,
//! and written back with its region placed or grown (see
//! [`crate::filter::forget`] for the list and why every step of a write
//! leaves a usable list).
//!
//! The region holds `room` entries, a whole number of pages: 16 bytes a
//! key plus at most a page. It grows in place while it is the file's last
//! region; once a layer was added after it, a larger one goes to the end
//! of the file and the old one's blocks are given back (a hole) once the
//! header names the new one. A list that shrank to half its room or less
//! gives back the pages past what it needs at the end of a run
//! ([`trim_list`]; the room stays, in holes, to grow back into).

use super::layers::{Layers, contains_in};
use crate::filter::forget::{ENTRY_BYTES, ForgetList, entry_at};
use crate::format::{ALIGN, ForgetEntry, Header, forget_room, forget_summer};
use crate::hash::Hash128;
use anyhow::{Context, Result, bail};
use memmap2::{Mmap, MmapOptions};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// Bytes of a list read or written at a time.
const PART: usize = 1 << 20;

/// The list `header` names in `file` (empty when it has none), as a
/// reader takes it: its checksum is not computed (as for the layers' bits,
/// a lookup trusts the file; `seen verify` checks it: [`list_mismatch`]).
///
/// # Errors
/// Entries that cannot be read.
pub(crate) fn read_list(file: &File, path: &Path, header: &Header) -> Result<ForgetList> {
    Ok(read_summed(file, path, header, false)?.0)
}

/// Whether the entries of the list `header` names do not match the
/// checksum it records (stale in a dirty file, whose writer stopped between
/// entries and header; damage in a clean one).
///
/// # Errors
/// Entries that cannot be read.
pub(crate) fn list_mismatch(file: &File, path: &Path, header: &Header) -> Result<bool> {
    let Some(f) = header.forget else {
        return Ok(false);
    };
    let mut sum = forget_summer();
    read_parts(file, path, &f, |bytes| sum.update(bytes))?;
    Ok(sum.digest() != f.sum)
}

/// The list, and with `check` whether it does not match its checksum.
/// Its entries are read in place, the region mapped (no copy: fresh memory
/// costs the kernel's zeroing of it); a region that cannot be mapped is
/// read a part at a time into memory.
fn read_summed(
    file: &File,
    path: &Path,
    header: &Header,
    check: bool,
) -> Result<(ForgetList, bool)> {
    let Some(f) = header.forget else {
        return Ok((ForgetList::new(), false));
    };
    if let Some(image) = map_list(file, &f) {
        let count = image.len() / ENTRY_BYTES;
        let mismatch = check && {
            let mut sum = forget_summer();
            sum.update(&image[..]);
            sum.digest() != f.sum
        };
        return Ok((ForgetList::of_image(Arc::new(image), count), mismatch));
    }
    // A count past this machine's memory fails in `read_parts`.
    let mut entries = Vec::with_capacity(usize::try_from(f.count).unwrap_or(0));
    crate::memory::huge_pages_for(&entries);
    let mut sum = forget_summer();
    read_parts(file, path, &f, |bytes| {
        if check {
            sum.update(bytes);
        }
        entries.extend(bytes.chunks_exact(ENTRY_BYTES).map(entry_at));
    })?;
    let mismatch = check && sum.digest() != f.sum;
    Ok((ForgetList::of_stored(entries), mismatch))
}

/// The list for a writer: a clean file's list must match its checksum (a
/// writer rewrites it with a fresh one, which would hide damage `seen
/// verify` reports); a dirty file's is taken as it is, `stale` then.
///
/// # Errors
/// Entries that cannot be read, or damaged.
pub(crate) fn read_list_to_write(
    file: &File,
    path: &Path,
    header: &Header,
) -> Result<(ForgetList, bool)> {
    let (list, mismatch) = read_summed(file, path, header, true)?;
    if let Some(f) = header.forget.filter(|_| mismatch && !header.is_dirty()) {
        bail!("{}", damaged(path, &f));
    }
    Ok((list, mismatch))
}

/// The listed entries of region `f`, mapped read-only and loaded (`None`:
/// none listed, the file too short for them, or no map to be had; they are
/// then read a part at a time, which says what is wrong).
fn map_list(file: &File, f: &ForgetEntry) -> Option<Mmap> {
    let used = usize::try_from(f.used_bytes()).ok().filter(|&u| u > 0)?;
    let len = file.metadata().ok()?.len();
    if f.offset.checked_add(used as u64)? > len {
        return None;
    }
    // SAFETY: the bytes are only read as plain bytes (`&[u8]`). A reader
    // holds a shared lock, so no `seen` changes them while it reads. A
    // writer reads them only within its spans, under its exclusive lock;
    // another process may rewrite or move the list between spans, which
    // changes the header's entry, and the writer then reads the list again
    // before its next lookup ([`read_list_to_write`], from `adopt`). The
    // writer's own rewrites copy the entries out first when they would
    // change them ([`ForgetList::settle`]). The region lies inside the
    // file (checked above); a region a list moved from is given back as a
    // hole, never cut off, and reads as zeros.
    unsafe {
        MmapOptions::new()
            .offset(f.offset)
            .len(used)
            .populate()
            .map(file)
    }
    .ok()
}

/// The listed entries' bytes of region `f`, handed to `each` a part at a
/// time (no copy of the whole region is held).
///
/// # Errors
/// When they cannot be read.
fn read_parts(
    file: &File,
    path: &Path,
    f: &ForgetEntry,
    mut each: impl FnMut(&[u8]),
) -> Result<()> {
    let used =
        usize::try_from(f.used_bytes()).context("a forget list past this machine's memory")?;
    let mut part = vec![0u8; PART.min(used)];
    let mut at = 0;
    while at < used {
        let bytes = &mut part[..PART.min(used - at)];
        file.read_exact_at(bytes, f.offset + at as u64)
            .with_context(|| format!("cannot read the forget list of {}", path.display()))?;
        each(bytes);
        at += bytes.len();
    }
    Ok(())
}

/// What `seen verify` and writers say of a forget list whose entries do
/// not match their checksum.
pub(crate) fn damaged(path: &Path, f: &ForgetEntry) -> String {
    format!(
        "{}: its forget list ({} entries at byte {}) does not match its checksum: the file \
         is damaged (`seen verify` reports it); restore it from a backup, or rebuild it and \
         forget the same keys again",
        path.display(),
        f.count,
        f.offset
    )
}

/// Writes `list` to `file` and names it in `header` (which the caller
/// writes next): in the region the header names when it has room, else in
/// that region grown in place (the file's last), else in a new region at
/// the end of the file. Returns the region left behind, if any, which the
/// caller gives back ([`free_list`]) once the header naming the new one is
/// written: until then, the header on disk names the old one, which must
/// still hold the list it had (a writer stopped before the header leaves
/// the file with it). A list that shrank in place keeps its region's
/// pages until [`trim_list`].
///
/// # Errors
/// When the file cannot be extended or written.
pub(crate) fn write_list(
    file: &File,
    path: &Path,
    header: &mut Header,
    list: &mut ForgetList,
) -> Result<Option<ForgetEntry>> {
    let count = list.len() as u64;
    let room = forget_room(count);
    let end = header.file_len();
    let (offset, room, old) = match header.forget {
        // After a failed write that reordered the list: not over the image
        // the header names, which a cut write must leave whole.
        Some(f) if list.reordered() => (end.next_multiple_of(ALIGN), room, Some(f)),
        Some(f) if count <= f.room => (f.offset, f.room, None),
        Some(f) if f.end() == end => (f.offset, room, None),
        Some(f) => (end.next_multiple_of(ALIGN), room, Some(f)),
        None => (end.next_multiple_of(ALIGN), room, None),
    };
    // Entries read in place from the region must not change under the
    // list: copied out when this write moves or rewrites them.
    list.settle(header.forget.is_none_or(|f| f.offset != offset));
    let new_end = offset + room * ENTRY_BYTES as u64;
    if new_end > end {
        // Past the end the header names: a dirty file may end so (the next
        // writer cuts it off if this one stops before its header).
        file.set_len(new_end)
            .with_context(|| format!("cannot extend {}", path.display()))?;
    }
    let mut sum = forget_summer();
    let mut at = offset;
    list.encode_parts(PART, |bytes| {
        file.write_all_at(bytes, at)
            .with_context(|| format!("cannot write the forget list of {}", path.display()))?;
        sum.update(bytes);
        at += bytes.len() as u64;
        Ok::<(), anyhow::Error>(())
    })?;
    header.forget = Some(ForgetEntry {
        offset,
        room,
        count,
        sum: sum.digest(),
    });
    Ok(old)
}

/// Gives back the pages of the list's region past the ones its entries
/// take, when those are half its room or less (its keys were recorded
/// again): an emptied list keeps a page on disk, not the 16 bytes of every
/// key it once held. The region keeps its room, in holes, to grow back
/// into. Call it once the header naming the list is on disk (synced): until
/// then the header there may name more entries. Best effort, as
/// [`free_list`].
pub(crate) fn trim_list(file: &File, header: &Header) {
    let Some(f) = header.forget else {
        return;
    };
    let (kept, whole) = (f.page_bytes(), f.bytes());
    if kept * 2 <= whole {
        free_list(
            file,
            Some(ForgetEntry {
                offset: f.offset + kept,
                room: (whole - kept) / ENTRY_BYTES as u64,
                count: 0,
                sum: 0,
            }),
        );
    }
}

/// Gives the blocks of a forget list's old region back to the file system
/// (best effort: a file system that cannot punch holes keeps them), once
/// the header written names the new region ([`write_list`]).
pub(crate) fn free_list(file: &File, old: Option<ForgetEntry>) {
    if let Some(old) = old {
        let _ = rustix::fs::fallocate(
            file,
            rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
            old.offset,
            old.bytes(),
        );
    }
}

/// The forget list's part in what every file store's layers do: keys
/// recorded again leave it, and a window's entries go with their slices.
impl Layers {
    /// Of keys judged new and now recorded (without verdicts), those that
    /// need bits: not the ones judged listed in this span, when there is
    /// no window. A layer holds their bits already (layers never expire
    /// then), so recording them again only takes them off the list
    /// ([`Layers::unforget`]), as a test-and-set finds them present: they
    /// take no room in the newest layer, nor make it grow. `None`: all.
    pub(super) fn unlisted(&self, hashes: &[Hash128]) -> Option<Vec<Hash128>> {
        if self.forget_asked.is_empty() || self.header.window.is_some() {
            return None;
        }
        let kept = |h: &&Hash128| !self.forget_asked.contains_key(*h);
        Some(hashes.iter().filter(kept).copied().collect())
    }

    /// Takes the keys recorded now off the forget list (`seen`: their
    /// verdicts, which a listed key's turn to new): a forgotten key that is
    /// recorded again is present again. Returns how many verdicts turned.
    pub(super) fn unforget(&mut self, hashes: &[Hash128], seen: Option<&mut Vec<bool>>) -> u64 {
        if self.forget.is_empty() {
            return 0;
        }
        let mut turned = 0;
        if seen.is_none() && self.header.window.is_none() {
            // Recorded without verdicts (`dedup -f`, in the span that
            // judged them): listed only if that judgement found them so.
            if !self.forget_asked.is_empty() {
                for &h in hashes {
                    let Some(spot) = self.forget_asked.remove(&h) else {
                        continue;
                    };
                    if self.forget.remove_at(h, spot) {
                        self.forget_removed.push(h);
                    }
                }
            }
            self.forget_changed |= !self.forget_removed.is_empty();
            return 0;
        }
        // Keys recorded without a verdict may each be listed (with a window,
        // a key judged absent because its slices expired may still be
        // listed); with verdicts, without a window, only keys judged present
        // can be (a listed key's bits are never cleared).
        let any = seen.is_none() || self.header.window.is_some();
        let mut seen = seen;
        let asked = |i: usize| any || seen.as_deref().is_some_and(|s| s[i]);
        for i in self.forget.remove_among(hashes, asked) {
            self.forget_removed.push(hashes[i]);
            // Judged present, it turns new (judged new, its slice expired).
            if let Some(s) = seen.as_deref_mut().filter(|s| s[i]) {
                s[i] = false;
                turned += 1;
            }
        }
        self.forget_changed |= !self.forget_removed.is_empty();
        turned
    }

    /// Takes off the forget list the keys no live layer holds any more
    /// (their slices expired): they are absent without it, so a window's
    /// list keeps an entry only as long as the slices that held its key.
    /// Called when a slice starts.
    pub(super) fn prune_forget(&mut self) {
        if self.forget.is_empty() {
            return;
        }
        let keys = self.forget.entries();
        let mut held = Vec::new();
        contains_in(&self.header, &self.maps, &keys, &mut held);
        for (&h, held) in keys.iter().zip(held) {
            if !held {
                self.forget.remove(h);
                self.forget_changed = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::MemFilter;
    use crate::filter::sizing::plan;

    /// A filter file of one layer and no list, in a temporary directory
    /// (kept while the first value lives).
    fn new_file() -> (tempfile::TempDir, std::path::PathBuf, File, Header) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.seen");
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let filter = MemFilter::new(&plan(1000, 1e-6).unwrap(), 1).unwrap();
        let header = filter.header().clone().laid_out();
        file.set_len(header.file_len()).unwrap();
        (dir, path, file, header)
    }

    /// Adds a layer after everything `header` names (so a list before it
    /// cannot grow in place), the file extended to it.
    fn layer_after(file: &File, header: &mut Header) -> crate::format::LayerEntry {
        let mut layer = *header.layers.last().unwrap();
        layer.offset = header.file_len().next_multiple_of(ALIGN);
        layer.checksums = layer.offset + layer.layout.bytes();
        header.layers.push(layer);
        file.set_len(header.file_len()).unwrap();
        layer
    }

    fn list_of(n: u64) -> ForgetList {
        let mut l = ForgetList::new();
        for i in 0..n {
            l.insert(Hash128 {
                lo: i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                hi: i,
            });
        }
        l
    }

    /// A list that outgrows its region while a layer lies after it moves
    /// to the end of the file. Until the header naming the new region is
    /// written, the header on disk names the old one: it must still hold
    /// the list it had (a writer stopped in between leaves the file so).
    /// It is given back only after.
    #[test]
    fn a_moved_list_keeps_its_old_region_until_the_header_names_the_new_one() {
        let (_dir, path, file, mut header) = new_file();
        let mut before = list_of(10);
        assert_eq!(
            write_list(&file, &path, &mut header, &mut before).unwrap(),
            None
        );
        let old = header.forget.unwrap();
        // A layer after the list: it cannot grow in place.
        let layer = layer_after(&file, &mut header);
        let mut after = list_of(old.room + 1);
        let left = write_list(&file, &path, &mut header, &mut after).unwrap();
        assert_eq!(left, Some(old));
        assert!(header.forget.unwrap().offset >= layer.end());
        let on_disk = Header {
            forget: Some(old),
            ..header.clone()
        };
        let (got, mismatch) = read_summed(&file, &path, &on_disk, true).unwrap();
        assert!(!mismatch, "the old region changed before the header moved");
        assert_eq!(got.entries(), before.entries());
        free_list(&file, left);
        let (got, mismatch) = read_summed(&file, &path, &header, true).unwrap();
        assert!(!mismatch);
        assert_eq!(got.entries(), after.entries());
    }

    /// A list whose keys were recorded again (it shrank to half its
    /// region or less) gives the region's pages past what it needs back
    /// when trimmed, keeps the region's room, and grows back into it in
    /// place: an emptied list keeps a page on disk.
    #[test]
    fn a_shrunk_list_gives_its_pages_back_and_grows_back_in_place() {
        use std::os::unix::fs::MetadataExt;
        let (_dir, path, file, mut header) = new_file();
        let blocks = || file.metadata().unwrap().blocks() * 512;
        let before = blocks();
        let mut full = list_of(20_000);
        write_list(&file, &path, &mut header, &mut full).unwrap();
        let region = header.forget.unwrap();
        assert!(blocks() >= before + region.bytes());
        // Not half: kept whole.
        let mut most = list_of(15_000);
        assert_eq!(
            write_list(&file, &path, &mut header, &mut most).unwrap(),
            None
        );
        trim_list(&file, &header);
        assert!(blocks() >= before + region.bytes());
        let mut none = ForgetList::new();
        assert_eq!(
            write_list(&file, &path, &mut header, &mut none).unwrap(),
            None
        );
        assert_eq!(header.forget.unwrap().offset, region.offset);
        assert_eq!(header.forget.unwrap().room, region.room);
        trim_list(&file, &header);
        assert!(
            blocks() <= before + ALIGN,
            "{} bytes on disk for an empty list, {before} before it",
            blocks()
        );
        let (got, mismatch) = read_summed(&file, &path, &header, true).unwrap();
        assert!(!mismatch && got.is_empty());
        let mut again = list_of(12_000);
        assert_eq!(
            write_list(&file, &path, &mut header, &mut again).unwrap(),
            None
        );
        assert_eq!(header.forget.unwrap().offset, region.offset);
        let (got, mismatch) = read_summed(&file, &path, &header, true).unwrap();
        assert!(!mismatch);
        assert_eq!(got.entries(), again.entries());
    }

    /// A list read in place (its region mapped) stays the list it is
    /// while its own writes rewrite that region (keys taken off move the
    /// others up) or move it (the old region then given back as a hole):
    /// it holds exactly the keys it should after each write, and what is
    /// on disk is that list.
    #[test]
    fn a_list_read_in_place_survives_its_own_rewrites_and_moves() {
        let (_dir, path, file, mut header) = new_file();
        let mut first = list_of(600);
        write_list(&file, &path, &mut header, &mut first).unwrap();
        let keys = first.entries();
        let (mut list, mismatch) = read_summed(&file, &path, &header, true).unwrap();
        assert!(!mismatch);
        assert!(list.entries() == keys, "read in place");
        // Every third key taken off, written in place: the entries after
        // each move up over bytes the list was reading.
        let mut kept: Vec<Hash128> = Vec::new();
        for (i, h) in keys.iter().enumerate() {
            if i % 3 == 0 {
                assert!(list.remove(*h));
            } else {
                kept.push(*h);
            }
        }
        let at = header.forget.unwrap().offset;
        write_list(&file, &path, &mut header, &mut list).unwrap();
        list.stored();
        assert_eq!(header.forget.unwrap().offset, at, "rewritten in place");
        assert!(list.entries() == kept, "the list after its rewrite");
        for h in &keys {
            assert_eq!(list.contains(*h), kept.contains(h), "{h:?}");
        }
        let (disk, mismatch) = read_summed(&file, &path, &header, true).unwrap();
        assert!(!mismatch);
        assert!(disk.entries() == kept, "the rewritten list on disk");
        // Read in place again, then moved: a layer after it, and more keys
        // than its room.
        let (mut list, _) = read_summed(&file, &path, &header, true).unwrap();
        layer_after(&file, &mut header);
        let room = header.forget.unwrap().room;
        let more: Vec<Hash128> = (0..room).map(|i| Hash128 { lo: !i, hi: i << 1 }).collect();
        list.insert_among(&more, |_| true);
        let left = write_list(&file, &path, &mut header, &mut list).unwrap();
        list.stored();
        assert!(left.is_some(), "moved");
        free_list(&file, left);
        kept.extend(&more);
        assert!(list.entries() == kept, "the list after its move");
        for h in &more {
            assert!(list.contains(*h));
        }
        let (disk, mismatch) = read_summed(&file, &path, &header, true).unwrap();
        assert!(!mismatch);
        assert!(disk.entries() == kept, "the moved list on disk");
    }

    /// A write that fails after the list settled (its removed entries
    /// dropped) leaves the span to be unstaged, which puts the keys it
    /// took off back last: the next write goes to a new region, so the
    /// one the header names keeps what the failed write left (a cut
    /// write of the list in its old order, which loses no key), and a
    /// crash during it loses none either.
    #[test]
    fn the_write_after_a_failed_one_goes_to_a_new_region() {
        let (_dir, path, file, mut header) = new_file();
        write_list(&file, &path, &mut header, &mut list_of(300)).unwrap();
        let (mut list, _) = read_summed(&file, &path, &header, true).unwrap();
        let keys = list.entries();
        let taken = [keys[5], keys[6], keys[200]];
        for h in taken {
            assert!(list.remove(h));
        }
        // As `write_list` does, then the write fails: nothing stored.
        list.settle(false);
        assert!(list.reordered());
        for h in taken {
            assert!(list.insert(h));
        }
        let old = header.forget.unwrap();
        let left = write_list(&file, &path, &mut header, &mut list).unwrap();
        list.stored();
        assert_eq!(left, Some(old), "moved");
        assert!(!list.reordered());
        let (disk, _) = read_summed(&file, &path, &header, true).unwrap();
        let mut got = disk.entries();
        let mut want = keys.clone();
        got.sort_by_key(|h| (h.lo, h.hi));
        want.sort_by_key(|h| (h.lo, h.hi));
        assert!(got == want, "every key listed");
        // A write without a failure before it stays in place.
        assert!(list.remove(keys[0]));
        let at = header.forget.unwrap().offset;
        assert_eq!(
            write_list(&file, &path, &mut header, &mut list).unwrap(),
            None
        );
        assert_eq!(header.forget.unwrap().offset, at);
    }
}
