//! Memory mappings of a filter's layers and the file growth under them:
//! mapping a layer read-only or read-write, anonymous memory for a layer, the
//! 2 MiB page hint, and extending the file (with its blocks reserved) for a
//! new layer.
//!
//! The `unsafe` of `file` is here, in [`map_read`] and [`map_write`] (the
//! crate's other `unsafe` is listed in `lib.rs`).

use crate::format::{Header, LayerEntry};
use anyhow::{Context, Result};
use memmap2::{Mmap, MmapMut, MmapOptions};
use std::fs::File;
use std::path::Path;

/// Anonymous memory for one layer (pages cost nothing until touched): an
/// in-memory filter's layers, and a file's layers while held in memory.
pub(super) fn anon(l: &LayerEntry) -> Result<MmapMut> {
    let map = MmapMut::map_anon(l.layout.bytes() as usize)
        .with_context(|| format!("cannot allocate {} bytes for the filter", l.layout.bytes()))?;
    huge_pages(|a| map.advise(a));
    Ok(map)
}

/// Maps one layer of a file read-only.
pub(super) fn map_read(file: &File, path: &Path, l: &LayerEntry) -> Result<Mmap> {
    // SAFETY: the mapping is only read as plain bytes (`&[u8]`), never cast to
    // structs. Other `seen` processes only change the file under an exclusive lock
    // while we hold a shared one; bits are only ever set, so a concurrent writer
    // that ignores locks cannot make us misbehave beyond reading fresher bits. A
    // process truncating the file under us would raise SIGBUS: see docs/FORMAT.md.
    unsafe {
        MmapOptions::new()
            .offset(l.offset)
            .len(l.layout.bytes() as usize)
            .map(file)
    }
    .inspect(|m| huge_pages(|a| m.advise(a)))
    .with_context(|| format!("cannot memory-map {}", path.display()))
}

/// Maps one layer of a file read-write (shared, so stores reach the file).
pub(super) fn map_write(file: &File, path: &Path, l: &LayerEntry) -> Result<MmapMut> {
    // SAFETY: as in `map_read`; in addition we hold an exclusive lock (or the file
    // is a temporary nobody else knows about), so no other `seen` writes it.
    unsafe {
        MmapOptions::new()
            .offset(l.offset)
            .len(l.layout.bytes() as usize)
            .map_mut(file)
    }
    .with_context(|| format!("cannot memory-map {} for writing", path.display()))
}

/// Asks for 2 MiB pages on a layer's mapping (through `advise`), unless the
/// `SEEN_NO_HUGEPAGE` environment variable is set. With 4 KiB pages, random
/// probes over a filter larger than the TLB's reach (a few MiB) take a page
/// walk nearly every time. Only a hint: anonymous memory gets transparent huge
/// pages where they are enabled for `madvise`, and a file mapping gets 2 MiB
/// page-cache folios, mapped whole, where the file system supports large
/// folios (ext4 since Linux 6.16, XFS); elsewhere nothing changes. The price
/// for a file is granularity: a first touch on a cold page cache reads up to
/// 4 MiB instead of 128 KiB, and the kernel writes a changed folio back whole,
/// so the layer a run writes is only hinted when the run is dense (see
/// `Layers::expect_keys` in `layers.rs`); layers only
/// read always are.
pub(super) fn huge_pages(advise: impl FnOnce(memmap2::Advice) -> std::io::Result<()>) {
    if huge_pages_wanted() {
        let _ = advise(memmap2::Advice::HugePage);
    }
}

/// Whether [`huge_pages`] asks at all: not when `SEEN_NO_HUGEPAGE` is set.
pub(super) fn huge_pages_wanted() -> bool {
    crate::tuning::get().huge_pages
}

/// Extends `file` to hold the newest layer of `header`, reserves its blocks and
/// maps it. Whatever lay past the old end (left by a run that crashed while
/// growing) is cut off first, so the new layer starts all zero.
pub(super) fn extend(file: &File, path: &Path, header: &Header) -> Result<MmapMut> {
    grow(file, path, header)?;
    let l = header.layers.last().expect("a filter has a layer");
    map_write(file, path, l).inspect_err(|_| {
        let _ = file.set_len(l.offset);
    })
}

/// [`extend`] without the mapping: the file grows to hold the newest layer
/// of `header`, all zero, its blocks reserved.
pub(super) fn grow(file: &File, path: &Path, header: &Header) -> Result<()> {
    let l = header.layers.last().expect("a filter has a layer");
    let grown = file
        .set_len(l.offset)
        .and_then(|()| file.set_len(l.end()))
        .and_then(|()| reserve(file, l.offset, l.end() - l.offset));
    if grown.is_err() {
        // Back to the length the header describes, so the file stays valid.
        let _ = file.set_len(l.offset);
    }
    grown.with_context(|| {
        format!(
            "no room for {} more bytes in {} (disk full or file size limit): \
             free some space, or move the filter",
            l.layout.bytes(),
            path.display()
        )
    })
}

/// Allocates the blocks of a file range now: a sparse file on a full disk would
/// fail later, on first write through the mapping, as SIGBUS instead of an error.
pub(super) fn reserve(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), offset, len) {
        Ok(()) => Ok(()),
        // Filesystems without fallocate: keep the sparse file.
        Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The value after `field` (e.g. `"Rss:"`) in `/proc/self/smaps` for the
/// mapping holding `p`; `None` when it is not found. For tests.
#[cfg(test)]
pub(super) fn smaps_field(p: *const u8, field: &str) -> Option<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let addr = p as usize;
    let mut inside = false;
    for line in smaps.lines() {
        let range = line.split_whitespace().next().and_then(|r| {
            let (a, b) = r.split_once('-')?;
            Some((
                usize::from_str_radix(a, 16).ok()?,
                usize::from_str_radix(b, 16).ok()?,
            ))
        });
        if let Some((a, b)) = range {
            inside = (a..b).contains(&addr);
        } else if inside && let Some(value) = line.strip_prefix(field) {
            return Some(value.trim().to_string());
        }
    }
    None
}
