//! [`WriteFilter`]: a filter file opened for writing under an exclusive
//! lock (`dedup -f`, `build --add`, `verify --repair`): opening it and
//! adopting what other processes committed, the dirty flag set and cleared,
//! the commit windows that release the lock between batches, growth at the
//! end of the file, and the commit.

use super::checksum::Stale;
use super::format::{FLAG_DIRTY, Header, LayerEntry};
use super::header::{now, open_checked, read_header, warn_dirty, write_header};
use super::layers::{Layers, Room, hint_layer};
use super::lock::lock;
use super::map::{extend, map_write};
use super::path::{dir_and_name, sweep_leftovers};
use crate::filter;
use crate::hash::Hash128;
use crate::pipeline::Store;
use anyhow::{Context, Result, bail};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A filter file opened for writing under an exclusive lock. The dirty flag is
/// set while the lock is held and cleared when counters are written back
/// (`WriteFilter::commit`, or the end of each commit window).
pub struct WriteFilter {
    path: PathBuf,
    file: File,
    /// `pub(super)` for the tests of `layers`.
    pub(super) layers: Layers,
    /// Whether this process holds the exclusive lock now.
    locked: bool,
}

impl WriteFilter {
    /// Opens, locks (exclusive) and validates a filter file, then marks it dirty.
    /// A file found dirty gets its counters recounted from the bits.
    /// `expected` is how many keys this run may insert (see
    /// [`NewFilter::expect_keys`](super::NewFilter::expect_keys)); it is known
    /// before the layers are mapped, so that a dirty file's recount brings
    /// them in with the right page size.
    ///
    /// # Errors
    /// When the file cannot be opened, locked or written, or is not a valid filter.
    pub(crate) fn open(path: &Path, expected: Option<u64>) -> Result<WriteFilter> {
        // Before the lock: other writers need not wait for a directory scan.
        if let Ok((dir, name)) = dir_and_name(path) {
            sweep_leftovers(dir, name);
        }
        let (file, header) = open_checked(path, true)?;
        let mut w = WriteFilter {
            path: path.to_path_buf(),
            file,
            layers: Layers {
                header: header.clone(),
                maps: vec![],
                name: path.display().to_string(),
                warned: 0,
                alarms: None,
                stale: Some(Stale::default()),
                expected,
            },
            locked: true,
        };
        w.adopt(header)?;
        w.mark_dirty()?;
        Ok(w)
    }

    /// Takes `header` (just read from the file, under the lock) as the current
    /// state: cuts off what an interrupted growth left, maps layers added since,
    /// and recounts counters if a writer died with the file dirty.
    fn adopt(&mut self, mut header: Header) -> Result<()> {
        let path = &self.path;
        if self.file.metadata()?.len() > header.file_len() {
            // Left by a run that crashed while adding a layer (decode accepts it
            // only in a dirty file).
            self.file
                .set_len(header.file_len())
                .with_context(|| format!("cannot truncate {}", path.display()))?;
        }
        let mapped = self.layers.maps.len();
        // The layers already mapped must be where and what they were (only
        // their counters move).
        let moved = |(mine, theirs): (&LayerEntry, &LayerEntry)| {
            LayerEntry {
                inserts: theirs.inserts,
                // A layer of an expired slice is reused for a new one.
                slice: theirs.slice,
                ..*mine
            } != *theirs
        };
        if header.layers.len() < mapped
            || self.layers.header.layers[..mapped]
                .iter()
                .zip(&header.layers)
                .any(moved)
        {
            bail!(
                "{} was rewritten by something other than seen during this run; \
                 its new contents were not used",
                path.display()
            );
        }
        for l in &header.layers[mapped..] {
            let map = map_write(&self.file, path, l)?;
            hint_layer(&header, self.layers.expected, self.layers.maps.len(), &map);
            self.layers.maps.push(map);
        }
        let stale = self.layers.stale.get_or_insert_default();
        stale.cover(&header.layers, false);
        if header.is_dirty() {
            for (l, bits) in header.layers.iter_mut().zip(&self.layers.maps) {
                let est = filter::occupancy_with(bits, &l.layout, &mut |b| {
                    crate::progress::advance(b, 0)
                })
                .estimated_items
                .round() as u64;
                l.inserts = l.inserts.max(est);
            }
            // A writer stopped between changing bits and writing their checksums.
            stale.all();
        }
        // Another process started a new slice in a layer: its warnings
        // are its own.
        if self
            .layers
            .header
            .layers
            .iter()
            .zip(&header.layers)
            .any(|(mine, theirs)| mine.slice != theirs.slice)
        {
            self.layers.warned = 0;
            self.layers.alarms = None;
        }
        self.layers.header = header;
        Ok(())
    }

    /// Sets the dirty flag in the file. Not synced: the flag is for the next
    /// process (a killed run leaves the page cache intact); syncing here would
    /// also write back every bit changed since the last window.
    fn mark_dirty(&mut self) -> Result<()> {
        self.layers.header.flags |= FLAG_DIRTY;
        write_header(&self.file, &self.path, &self.layers.header)
    }

    /// Takes the lock again after a window released it, and picks up what other
    /// processes committed meanwhile.
    fn relock(&mut self) -> Result<()> {
        if self.locked {
            return Ok(());
        }
        // SIGINT/SIGTERM end the wait: nothing is pending between windows.
        lock(&self.file, &self.path, true)?;
        self.locked = true;
        let ours = self.file.metadata()?;
        match std::fs::metadata(&self.path) {
            Ok(now) if now.ino() == ours.ino() && now.dev() == ours.dev() => {}
            _ => bail!(
                "{} was replaced or removed by another process during this run; \
                 the lines judged since were recorded in the old file: rerun them",
                self.path.display()
            ),
        }
        let header = read_header(&self.file, &self.path)?;
        warn_dirty(&header, &self.path);
        self.adopt(header)
    }

    /// Writes the stale checksums, then the header with the dirty flag cleared
    /// and the time updated.
    fn write_clean(&mut self) -> Result<()> {
        let l = &mut self.layers;
        if let Some(stale) = &mut l.stale {
            stale.write(&self.file, &self.path, &l.header, &l.maps)?;
        }
        let h = &mut self.layers.header;
        h.flags &= !FLAG_DIRTY;
        h.updated = now();
        write_header(&self.file, &self.path, h)
    }

    /// Path it was opened from.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The header as it will be committed.
    pub(crate) fn header(&self) -> &Header {
        &self.layers.header
    }

    /// [`Layers::add`], growing at the end of the file.
    fn add(&mut self, hashes: &[Hash128], out: Option<&mut Vec<bool>>) -> Result<u64> {
        let mut room = FileRoom {
            file: &self.file,
            path: &self.path,
            sync: true,
        };
        self.layers.add(hashes, out, &mut room)
    }

    /// Writes every changed bit to disk, then a clean header with updated counters.
    ///
    /// # Errors
    /// When the data or header cannot be written back (disk full, I/O error).
    pub(crate) fn commit(&mut self) -> Result<()> {
        self.relock()?;
        for m in &self.layers.maps {
            m.flush()
                .with_context(|| format!("cannot write {} back to disk", self.path.display()))?;
        }
        self.write_clean()?;
        self.file
            .sync_data()
            .with_context(|| format!("cannot sync {}", self.path.display()))
    }
}

/// The end of a filter file, where its layers grow, and its header.
pub(super) struct FileRoom<'a> {
    pub(super) file: &'a File,
    pub(super) path: &'a Path,
    /// Sync the header that names a reused layer before lines go in (a file
    /// other processes read; a new file is not at its path yet).
    pub(super) sync: bool,
}

impl Room for FileRoom<'_> {
    fn extend(&mut self, header: &Header) -> Result<memmap2::MmapMut> {
        let map = extend(self.file, self.path, header)?;
        // The file names its new layer from now on (still dirty).
        write_header(self.file, self.path, header)?;
        Ok(map)
    }

    fn reused(&mut self, header: &Header, map: &memmap2::MmapMut) -> Result<()> {
        if self.sync {
            map.flush()
                .with_context(|| format!("cannot write {} back to disk", self.path.display()))?;
        }
        write_header(self.file, self.path, header)?;
        if self.sync {
            self.file
                .sync_data()
                .with_context(|| format!("cannot sync {}", self.path.display()))?;
        }
        Ok(())
    }
}

impl Store for WriteFilter {
    fn seed(&self) -> u64 {
        self.layers.header.seed
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        self.layers.contains(hashes, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        self.add(hashes, Some(out))
    }

    fn record_batch(&mut self, hashes: &[Hash128]) -> Result<u64> {
        self.add(hashes, None)
    }

    fn begin_window(&mut self) -> Result<()> {
        if !self.locked {
            self.relock()?;
            self.mark_dirty()?;
        }
        Ok(())
    }

    fn end_window(&mut self) -> Result<()> {
        self.write_clean()?;
        self.file
            .unlock()
            .with_context(|| format!("cannot unlock {}", self.path.display()))?;
        self.locked = false;
        Ok(())
    }
}
