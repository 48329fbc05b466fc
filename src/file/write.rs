//! [`WriteFilter`]: a filter file opened for writing under an exclusive
//! lock (`dedup -f`, `build --add`, `verify --repair`): opening it and
//! adopting what other processes committed, the dirty flag set and cleared,
//! the commit spans that release the lock between batches, growth at the
//! end of the file, and the commit.

use super::checksum::{Stale, stored_checksum, stored_segment};
use super::forget::{free_list, read_list_to_write, trim_list, write_list};
use super::header::{open_checked, read_header, warn_dirty, write_header};
use super::layers::{Layers, Room, hint_layer};
use super::lock::lock;
use super::map::{extend, grow, map_write};
use super::path::{dir_and_name, sweep_leftovers};
use crate::filter::forget::Spot;
use crate::format::{FLAG_DIRTY, Header, LayerEntry};
use crate::hash::Hash128;
use crate::pipeline::{Commits, Forgets, LastSpan, STRETCH, Store};
use anyhow::{Context, Result, bail};
use memmap2::MmapMut;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A filter file opened for writing under an exclusive lock. The dirty flag is
/// set while the lock is held and cleared when counters are written back
/// (`WriteFilter::commit`, or the end of each commit span).
pub struct WriteFilter {
    path: PathBuf,
    file: File,
    /// `pub(super)` for the tests of `layers`.
    pub(super) layers: Layers,
    /// Whether this process holds the exclusive lock now.
    locked: bool,
    /// The layers are held in anonymous memory, copies of the file's, and
    /// written back at each span's end ([`WriteFilter::stages`]); else
    /// they are the file's, mapped.
    held: bool,
    /// Keys were staged in this span and are not recorded yet.
    staged: bool,
    /// The layers as this span found them (to unstage it).
    span_layers: Vec<LayerEntry>,
    /// The thread starting the last span's write-back to disk.
    writeback: Option<std::thread::JoinHandle<()>>,
}

/// A dense span is judged in memory ([`WriteFilter::stages`]) when the
/// filter's layers take at most this many bytes per key judged new in the
/// span before: about what a key costs to look up in a file mapping,
/// hold in the pending set and record again, in bytes written back.
const HOLD_BYTES_PER_KEY: u64 = 256;

/// Keys assumed for the first span of a run whose expected keys are known.
const FIRST_SPAN_KEYS: u64 = 1 << 20;

/// About how many bytes of the filter a held span's commit writes back
/// and sums per second (on the benchmark machine, 2.4 GB/s: 43 MiB in
/// 18 ms), to foresee how long a held span lasts when spans stretch.
const HELD_COMMIT_BYTES_PER_SEC: f64 = 2e9;

/// Seconds a held span's commit is foreseen to take for a filter of
/// `bytes` (all of it written back and summed, as a dense span does).
fn held_commit_secs(bytes: u64) -> f64 {
    bytes as f64 / HELD_COMMIT_BYTES_PER_SEC
}

/// Lines a second a held span judges at least (measured: 3.8M a second
/// into 7 layers of 5.4 GiB, 8M into one of 40 MiB), for a span that its
/// input kept busy, whose own rate says how fast the file mapping was, not
/// how fast the input can come.
const HELD_LINES_PER_SEC: f64 = 2e6;

/// The keys a held span would judge new at the last span's rate, when
/// spans stretch ([`LastSpan::stretches`]): it lasts at least
/// [`STRETCH`] times its commit, which writes back and sums up to `bytes`.
/// So a large filter is held when new lines come fast (about half a million
/// a second or more), not when they trickle in. When the last span was
/// kept busy by its input, lines could come as fast as a held span
/// judges them ([`HELD_LINES_PER_SEC`]), with as many of them new. 0 when
/// spans do not stretch.
fn held_span_keys(last: LastSpan, bytes: u64) -> u64 {
    if !last.stretches || last.secs <= 0.0 {
        return 0;
    }
    let mut rate = last.new_keys as f64 / last.secs;
    if last.waited < last.secs / 2.0 && last.lines > 0 {
        rate = rate.max(last.new_keys as f64 / last.lines as f64 * HELD_LINES_PER_SEC);
    }
    let lasts = f64::from(STRETCH) * held_commit_secs(bytes);
    (rate * lasts) as u64
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
                populating: Default::default(),
                forget: Default::default(),
                forget_changed: false,
                forget_removed: Vec::new(),
                forget_asked: Default::default(),
            },
            locked: true,
            held: false,
            staged: false,
            span_layers: Vec::new(),
            writeback: None,
        };
        // So that `adopt` reads the forget list the file has.
        w.layers.header.forget = None;
        w.adopt(header)?;
        w.mark_dirty()?;
        Ok(w)
    }

    /// Takes `header` (just read from the file, under the lock) as the current
    /// state: cuts off what an interrupted growth left, maps layers added since,
    /// and recounts counters if a writer died with the file dirty.
    fn adopt(&mut self, mut header: Header) -> Result<()> {
        let path = &self.path;
        refuse_past_size_limit(path, header.file_len())?;
        if self.file.metadata()?.len() > header.file_len() {
            // Left by a run that crashed while adding a layer (decode accepts it
            // only in a dirty file).
            self.file
                .set_len(header.file_len())
                .with_context(|| format!("cannot truncate {}", path.display()))?;
        }
        let mapped = self.layers.maps.len();
        // Held copies are stale once another process has committed.
        let changed = {
            let mine = &self.layers.header;
            header.is_dirty()
                || header.updated != mine.updated
                || header.layers.len() != mine.layers.len()
                || header
                    .layers
                    .iter()
                    .zip(&mine.layers)
                    .any(|(a, b)| a.inserts != b.inserts || a.slice != b.slice)
        };
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
        if self.held && changed {
            for (l, map) in header.layers.iter().zip(&mut self.layers.maps) {
                read_layer(&self.file, path, l, map)?;
            }
        }
        for l in &header.layers[mapped..] {
            let map = if self.held {
                let mut map = super::map::anon(l)?;
                read_layer(&self.file, path, l, &mut map)?;
                map
            } else {
                let map = map_write(&self.file, path, l)?;
                hint_layer(&header, self.layers.expected, self.layers.maps.len(), &map);
                map
            };
            self.layers.maps.push(map);
        }
        let stale = self.layers.stale.get_or_insert_default();
        stale.cover(&header.layers, false);
        if self.held && !header.is_dirty() {
            // Layers another process added, read whole: checked now, as
            // `hold` checks the others.
            for i in mapped..header.layers.len() {
                let Some(stale) = &mut self.layers.stale else {
                    break;
                };
                let (file, l) = (&self.file, &header.layers[i]);
                let stored = |s| stored_checksum(file, path, l, s);
                stale.check_layer(&self.layers.name, i, l, &self.layers.maps[i], &stored)?;
            }
        }
        let stale = self.layers.stale.get_or_insert_default();
        if header.is_dirty() {
            for (l, bits) in header.layers.iter_mut().zip(&self.layers.maps) {
                let est = l
                    .filter_kind()
                    .as_kind()
                    .occupancy_with(bits, &mut |b| crate::progress::advance(b, 0))
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
        // The forget list another process changed (or this one has not
        // read yet); a dirty file's is taken as it is, its checksum written
        // again at the commit.
        if header.forget != self.layers.header.forget || header.is_dirty() {
            let (list, stale) = read_list_to_write(&self.file, path, &header)?;
            self.layers.forget = list;
            self.layers.forget_removed.clear();
            self.layers.forget_asked.clear();
            self.layers.forget_changed = stale;
        }
        self.layers.header = header;
        Ok(())
    }

    /// Sets the dirty flag in the file. Not synced: the flag is for the next
    /// process (a killed run leaves the page cache intact); syncing here would
    /// also write back every bit changed since the last span.
    fn mark_dirty(&mut self) -> Result<()> {
        self.layers.header.flags |= FLAG_DIRTY;
        write_header(&self.file, &self.path, &self.layers.header)
    }

    /// Takes the lock again after a span released it, and picks up what other
    /// processes committed meanwhile.
    fn relock(&mut self) -> Result<()> {
        if self.locked {
            return Ok(());
        }
        // SIGINT/SIGTERM end the wait: nothing is pending between spans.
        lock(&self.file, &self.path, true)?;
        match self.adopt_locked() {
            Ok(()) => {
                self.locked = true;
                Ok(())
            }
            Err(e) => {
                // Not adopted: what this process holds is not the file's
                // state, so nothing of it may be written under this lock
                // (a later commit takes it again and adopts first).
                let _ = self.file.unlock();
                Err(e)
            }
        }
    }

    /// Picks up what other processes committed, the lock just taken.
    ///
    /// # Errors
    /// The file replaced or removed, or its header or list unreadable.
    fn adopt_locked(&mut self) -> Result<()> {
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
            if self.held {
                mark_changed(stale, &self.span_layers, &l.header);
            }
            stale.write(&self.file, &self.path, &l.header, &l.maps, self.held)?;
        }
        let mut left = None;
        if l.forget_changed {
            left = write_list(&self.file, &self.path, &mut l.header, &mut l.forget)?;
            l.forget.stored();
            l.forget_changed = false;
        }
        l.forget_removed.clear();
        // Every key judged in the span was recorded in it.
        l.forget_asked.clear();
        self.span_layers.clone_from(&l.header.layers);
        self.staged = false;
        let h = &mut self.layers.header;
        h.flags &= !FLAG_DIRTY;
        h.updated = crate::clock::system_secs();
        write_header(&self.file, &self.path, h)?;
        if left.is_some() {
            // The header naming the new region reaches the disk before the
            // old one is given back (a power loss in between would leave a
            // header naming a hole). A list moves seldom.
            self.file
                .sync_data()
                .with_context(|| format!("cannot sync {}", self.path.display()))?;
            free_list(&self.file, left);
        }
        if self.held {
            start_writeback(&self.file, &mut self.writeback);
        }
        Ok(())
    }

    /// Path it was opened from.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The header as it will be committed.
    pub(crate) fn header(&self) -> &Header {
        &self.layers.header
    }

    /// Sets the filter's time back to `t` ([`Layers::set_clock`]) and
    /// commits; `None`: its time is not after `t`.
    ///
    /// # Errors
    /// As there, or a failed commit.
    pub(crate) fn set_clock(&mut self, t: u64) -> Result<Option<super::ClockBack>> {
        let mut room = FileRoom {
            file: &self.file,
            path: &self.path,
            sync: true,
            held: self.held,
        };
        let back = self.layers.set_clock(t, &mut room);
        // Refused or not, the file is settled (a refusal changed nothing).
        self.commit()?;
        back
    }

    /// [`Layers::add`], growing at the end of the file.
    fn add(&mut self, hashes: &[Hash128], out: Option<&mut Vec<bool>>) -> Result<u64> {
        let mut room = FileRoom {
            file: &self.file,
            path: &self.path,
            sync: true,
            held: self.held,
        };
        self.layers.add(hashes, out, &mut room)
    }

    /// Holds the layers in anonymous memory, read from the file (nothing is
    /// unrecorded: called between spans). Returns `false`, leaving the
    /// file's mappings, when the memory cannot be had.
    fn hold(&mut self) -> Result<bool> {
        // The file's mappings go first, so that the copies do not come on
        // top of the pages they brought in: memory stays the filter's size.
        self.layers.stop_populating();
        self.layers.maps.clear();
        let layers = self.layers.header.layers.clone();
        let mut copies = Vec::with_capacity(layers.len());
        let mut holey = Vec::new();
        for l in &layers {
            // Either way out, the file is mapped again, as before.
            let Ok(mut map) = super::map::anon(l) else {
                drop(copies);
                self.unhold()?;
                return Ok(false);
            };
            // Each unchecked segment is checked as it comes in: the span's
            // end rewrites the checksums of whole layers.
            let i = copies.len();
            let read = read_layer(&self.file, &self.path, l, &mut map).and_then(|read| {
                self.check_layer(i, l, &map)?;
                Ok(read)
            });
            match read {
                Ok(read) => {
                    if read < map.len() as u64 {
                        holey.push(i);
                    }
                }
                Err(e) => {
                    drop(copies);
                    self.unhold()?;
                    return Err(e);
                }
            }
            copies.push(map);
        }
        self.layers.maps = copies;
        // A layer's holes (a new file's) were not read, so their pages are
        // untouched: faulted in on the side, as a new layer's memory is.
        // The pages of what was read are in already.
        for i in holey {
            self.layers.populate(i);
        }
        self.held = true;
        Ok(true)
    }

    /// Checks the unchecked segments of layer `i` (`l`), read whole into
    /// `bits` (see [`Stale::check_layer`]).
    fn check_layer(&mut self, i: usize, l: &LayerEntry, bits: &[u8]) -> Result<()> {
        let Some(stale) = &mut self.layers.stale else {
            return Ok(());
        };
        let (file, path) = (&self.file, self.path.as_path());
        let stored = |s| stored_checksum(file, path, l, s);
        stale.check_layer(&self.layers.name, i, l, bits, &stored)
    }

    /// Maps the file's layers again instead of holding copies (the copies
    /// were written back: called between spans).
    fn unhold(&mut self) -> Result<()> {
        let mut maps = Vec::with_capacity(self.layers.maps.len());
        for (i, l) in self.layers.header.layers.iter().enumerate() {
            let map = map_write(&self.file, &self.path, l)?;
            hint_layer(&self.layers.header, self.layers.expected, i, &map);
            maps.push(map);
        }
        self.layers.stop_populating();
        self.layers.maps = maps;
        self.held = false;
        Ok(())
    }

    /// Writes every changed bit to disk, then a clean header with updated counters.
    ///
    /// # Errors
    /// When the data or header cannot be written back (disk full, I/O error).
    pub(crate) fn commit(&mut self) -> Result<()> {
        self.relock()?;
        if self.staged {
            // A span the pipeline could not close: what it staged was not
            // all written out, so none of it is recorded.
            self.unstage()?;
        }
        for m in self.layers.maps.iter().filter(|_| !self.held) {
            m.flush()
                .with_context(|| format!("cannot write {} back to disk", self.path.display()))?;
        }
        self.write_clean()?;
        self.file
            .sync_data()
            .with_context(|| format!("cannot sync {}", self.path.display()))?;
        // The header on disk names the list as it is now.
        trim_list(&self.file, &self.layers.header);
        Ok(())
    }
}

/// Refuses a filter of `len` bytes that the file-size limit (`ulimit -f`)
/// would not let this process write to its end: its checksums are there,
/// and a commit that could not write them would leave the file dirty
/// (as a killed run does). Checked before anything is written.
///
/// # Errors
/// A file longer than the limit.
fn refuse_past_size_limit(path: &Path, len: u64) -> Result<()> {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Fsize).current;
    if let Some(limit) = limit.filter(|&l| len > l) {
        bail!(
            "{} is {len} bytes, more than the file-size limit (`ulimit -f`: {limit} bytes) \
             lets this process write; nothing was read or written: raise the limit \
             (`ulimit -f unlimited`), or run where it does not apply",
            path.display()
        );
    }
    Ok(())
}

/// Starts writing the file's changed pages to disk, on a thread of its own
/// (the call blocks while the device's queue is full: 0.7 s for a 2.4 GiB
/// layer), so that the sync at the end of the run finds little left to
/// write (a held filter writes its changed layers back at every span's
/// end). Only a hint: skipped while the last one runs, or if the file
/// cannot be shared with a thread.
fn start_writeback(file: &File, last: &mut Option<std::thread::JoinHandle<()>>) {
    use std::os::fd::AsRawFd;
    if last.as_ref().is_some_and(|t| !t.is_finished()) {
        return;
    }
    let Ok(file) = file.try_clone() else {
        return;
    };
    *last = std::thread::Builder::new()
        .name("seen-writeback".into())
        .spawn(move || {
            // SAFETY: a plain system call on a descriptor the thread owns;
            // it reads no memory.
            unsafe {
                libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
            }
        })
        .ok();
}

/// Marks stale every segment of the layers that took keys since the span
/// began (`was`: the layers then), in place of a mark per key: a span is
/// held only when dense, with thousands of keys per 1 MiB segment.
fn mark_changed(stale: &mut Stale, was: &[LayerEntry], now: &Header) {
    for (i, l) in now.layers.iter().enumerate() {
        if was
            .get(i)
            .is_none_or(|w| w.inserts != l.inserts || w.slice != l.slice)
        {
            stale.layer(i);
        }
    }
}

/// Reads layer `l` of `file` into `map` (a copy held in memory), but for
/// the holes the file system reports (a new layer's blocks are reserved, not
/// written): those are zero in the copy, and the pages stay untouched.
/// Returns the bytes read (less than the layer's when it has holes).
fn read_layer(file: &File, path: &Path, l: &LayerEntry, map: &mut MmapMut) -> Result<u64> {
    use rustix::fs::{SeekFrom, seek};
    let end = l.offset + map.len() as u64;
    let mut at = l.offset;
    let mut bytes = 0;
    let read = |at: u64, to: u64, map: &mut MmapMut| {
        let range = (at - l.offset) as usize..(to - l.offset) as usize;
        file.read_exact_at(&mut map[range], at)
    };
    while at < end {
        // Where the next data starts, and where it ends; a file system that
        // cannot say has it all data.
        let data = match seek(file, SeekFrom::Data(at)) {
            Ok(d) => d,
            Err(rustix::io::Errno::NXIO) => break,
            Err(_) => at,
        };
        if data >= end {
            break;
        }
        let hole = match seek(file, SeekFrom::Hole(data)) {
            Ok(h) if h > data => h.min(end),
            _ => end,
        };
        read(data, hole, map).with_context(|| format!("cannot read {}", path.display()))?;
        bytes += hole - data;
        at = hole;
    }
    Ok(bytes)
}

/// The end of a filter file, where its layers grow, and its header.
pub(super) struct FileRoom<'a> {
    pub(super) file: &'a File,
    pub(super) path: &'a Path,
    /// Sync the header that names a reused layer before lines go in (a file
    /// other processes read; a new file is not at its path yet).
    pub(super) sync: bool,
    /// The layers are copies held in anonymous memory
    /// ([`WriteFilter::stages`]): a new one is too, and a reused one is
    /// written to the file.
    pub(super) held: bool,
}

impl Room for FileRoom<'_> {
    fn marks_layers(&self) -> bool {
        self.held
    }

    fn anonymous(&self) -> bool {
        self.held
    }

    fn extend(&mut self, header: &Header) -> Result<MmapMut> {
        let map = if self.held {
            grow(self.file, self.path, header)?;
            super::map::anon(header.layers.last().expect("a filter has a layer"))?
        } else {
            extend(self.file, self.path, header)?
        };
        // The file names its new layer from now on (still dirty).
        write_header(self.file, self.path, header)?;
        Ok(map)
    }

    fn stored_segment(&self, l: &LayerEntry, s: usize, bits: &mut Vec<u8>) -> Result<u64> {
        stored_segment(self.file, self.path, l, s, bits)
    }

    fn reused(&mut self, header: &Header, layer: usize, map: &MmapMut) -> Result<()> {
        if self.held {
            self.file
                .write_all_at(map, header.layers[layer].offset)
                .with_context(|| format!("cannot write {}", self.path.display()))?;
        } else if self.sync {
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

    fn commits(&mut self) -> Option<&mut dyn Commits> {
        Some(self)
    }

    fn forgets(&mut self) -> Option<&mut dyn Forgets> {
        Some(self)
    }
}

/// A file forgets in commit spans of its own: the lock taken, the keys
/// looked up as writers do (the list included), those present listed, and
/// the list and header written before the lock goes, so that a writer's
/// span sees a batch whole or not at all.
impl Forgets for WriteFilter {
    fn forget_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        self.begin_span()?;
        self.layers.contains(hashes, out)?;
        let added = self.layers.forget.insert_among(hashes, |i| out[i]) as u64;
        self.layers.forget_changed |= added > 0;
        self.end_span()?;
        Ok(added)
    }

    fn forgotten(&self) -> u64 {
        self.layers.forget.len() as u64
    }
}

/// A file shared across runs and processes: a lock per commit span, and
/// spans foreseen dense staged in anonymous memory.
impl Commits for WriteFilter {
    fn begin_span(&mut self) -> Result<()> {
        if !self.locked {
            self.relock()?;
            self.mark_dirty()?;
        }
        Ok(())
    }

    /// A span is held in memory when the layers take at most
    /// [`HOLD_BYTES_PER_KEY`] bytes per key it is expected to judge new:
    /// as many as the last span did, or, when spans stretch, as many as
    /// it would at the last span's rate in the time a held span lasts
    /// ([`held_span_keys`]); for the first, the keys the run expects, up to
    /// [`FIRST_SPAN_KEYS`]. A span after one that judged nothing new is
    /// held if that one was (an all-duplicate stream costs no write-back).
    /// Held: one test-and-set in anonymous memory (2 MiB pages) per key,
    /// then the changed 1 MiB segments written back at the span's end,
    /// instead of a lookup, the pipeline's pending set and a second pass to
    /// record. Sparse spans keep the file mapped (a few keys in a large
    /// filter would otherwise read and write all of it).
    fn stages(&mut self, last_span: Option<LastSpan>) -> Result<bool> {
        let bytes = self.layers.header.bit_bytes();
        let dense_for = |keys: u64| bytes <= keys.saturating_mul(HOLD_BYTES_PER_KEY);
        let dense = match last_span {
            None => dense_for(self.layers.expected.unwrap_or(0).min(FIRST_SPAN_KEYS)),
            // A span that judged nothing new leaves the choice as it was:
            // it wrote nothing back, and recorded nothing.
            Some(w) if w.new_keys == 0 => self.held,
            Some(w) => dense_for(w.new_keys.max(held_span_keys(w, bytes))),
        };
        let dense = crate::tuning::get().hold.unwrap_or(dense);
        if dense && !self.held {
            self.hold()?;
        } else if !dense && self.held {
            self.unhold()?;
        }
        self.span_layers.clone_from(&self.layers.header.layers);
        Ok(self.held)
    }

    /// A held span writes back and sums every layer its keys touched:
    /// at [`HELD_COMMIT_BYTES_PER_SEC`], the whole filter's bytes for a
    /// dense span. Without it, the first span of a run ended at
    /// `--commit-every`'s default bounds and wrote back a filter of 43 MiB
    /// for a million lines (4 commits instead of 1 for the 10M-line corpus).
    fn foreseen_commit(&self) -> std::time::Duration {
        if !self.held {
            return std::time::Duration::ZERO;
        }
        std::time::Duration::from_secs_f64(held_commit_secs(self.layers.header.bit_bytes()))
    }

    fn stage_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        self.staged = true;
        self.add(hashes, Some(out))
    }

    /// Also drops the layers the span added (the file is cut back to the
    /// layers it had), so that the keys recorded next go where they would
    /// have gone had the span never been staged.
    fn unstage(&mut self) -> Result<()> {
        let l = &mut self.layers;
        let kept = self.span_layers.len();
        if l.header.layers.len() > kept {
            l.header.layers.truncate(kept);
            l.stop_populating();
            l.maps.truncate(kept);
            if let Some(stale) = &mut l.stale {
                stale.truncate(kept);
            }
            write_header(&self.file, &self.path, &l.header)?;
            self.file
                .set_len(l.header.file_len())
                .with_context(|| format!("cannot truncate {}", self.path.display()))?;
        }
        if let Some(stale) = &mut l.stale {
            mark_changed(stale, &self.span_layers, &l.header);
            stale.read_back(&self.file, &self.path, &l.header, &mut l.maps)?;
        }
        // Keys the span took off the forget list were not recorded.
        for h in std::mem::take(&mut l.forget_removed) {
            l.forget_asked.insert(h, Spot::UNKNOWN);
            l.forget.insert(h);
        }
        for (layer, was) in l.header.layers.iter_mut().zip(&self.span_layers) {
            // A layer started anew for a time slice in this span is all
            // zero (in the file too).
            layer.inserts = if was.slice == layer.slice {
                was.inserts
            } else {
                0
            };
        }
        self.staged = false;
        Ok(())
    }

    fn end_span(&mut self) -> Result<()> {
        self.write_clean()?;
        self.file
            .unlock()
            .with_context(|| format!("cannot unlock {}", self.path.display()))?;
        self.locked = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held span is foreseen to judge new keys at the last span's rate
    /// for [`STRETCH`] times its commit: a large filter is held for a fast
    /// stream, not for a trickle.
    #[test]
    fn held_spans_are_foreseen_from_the_last_rate() {
        // Waiting for input 90 % of the time, or 10 %.
        let w = |new_keys, lines, secs, busy, stretches| LastSpan {
            new_keys,
            lines,
            secs,
            waited: if busy { 0.1 * secs } else { 0.9 * secs },
            stretches,
        };
        let gib = 1 << 30;
        let dense = |keys: u64| 2 * gib <= keys * HOLD_BYTES_PER_KEY;
        // 2 GiB: a commit of about 1.07 s, a span of about 17 s.
        let fast = held_span_keys(w(2_000_000, 3_000_000, 1.0, false, true), 2 * gib);
        assert!((34_000_000..35_000_000).contains(&fast), "{fast}");
        assert!(dense(fast));
        let trickle = held_span_keys(w(1000, 1000, 1.0, false, true), 2 * gib);
        assert!(!dense(trickle));
        // A slow mapping kept busy: 300,000 new lines a second, but the
        // input could come faster.
        let mapped = w(300_000, 400_000, 1.0, false, true);
        assert!(!dense(held_span_keys(mapped, 2 * gib)));
        let busy = w(300_000, 400_000, 1.0, true, true);
        assert!(dense(held_span_keys(busy, 2 * gib)));
        // Busy, but nearly all duplicates: few new lines however fast.
        let dups = w(30, 400_000, 1.0, true, true);
        assert!(!dense(held_span_keys(dups, 2 * gib)));
        let fixed = w(2_000_000, 3_000_000, 1.0, false, false);
        assert_eq!(held_span_keys(fixed, 2 * gib), 0);
        assert_eq!(held_span_keys(w(5, 5, 0.0, true, true), 2 * gib), 0);
    }

    /// A writer that takes the lock back between spans and then cannot
    /// read what the file holds (another process damaged or replaced it)
    /// lets the lock go: a later commit takes it again and reads first,
    /// instead of writing this writer's stale header over the file.
    #[test]
    fn a_writer_that_cannot_read_the_file_after_relocking_unlocks_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.seen");
        super::super::NewFilter::fixed_for_test(&path, 1000);
        let mut w = WriteFilter::open(&path, None).unwrap();
        w.begin_span().unwrap();
        let key = Hash128 { lo: 1, hi: 2 };
        w.add(&[key], None).unwrap();
        w.end_span().unwrap();
        // Between two spans, another process leaves the header unreadable.
        let damaged = [0u8; 8];
        w.file.write_all_at(&damaged, 0).unwrap();
        let e = w.begin_span().unwrap_err();
        assert!(!w.locked, "{e:#}");
        // Another open file takes the lock at once: it was released.
        let other = File::open(&path).unwrap();
        other
            .try_lock()
            .expect("the failed writer left the file unlocked");
        other.unlock().unwrap();
        // A commit takes the lock again and fails the same way, writing
        // nothing of this writer's state over the file.
        w.commit().unwrap_err();
        let mut start = [1u8; 8];
        w.file.read_exact_at(&mut start, 0).unwrap();
        assert_eq!(start, damaged);
    }

    /// Holding a file starts helpers only for the layers it did not read
    /// whole (holes: a new file's reserved blocks, where the file system
    /// reports them); a layer read whole has its pages in already.
    #[test]
    fn holding_populates_only_layers_with_holes() {
        let dir = tempfile::tempdir().unwrap();
        for written in [false, true] {
            let path = dir.path().join(format!("{written}.seen"));
            super::super::NewFilter::fixed_for_test(&path, 20_000_000);
            let mut w = WriteFilter::open(&path, None).unwrap();
            let l = w.layers.header.layers[0];
            let len = l.layout.bytes();
            assert!(len >= super::super::populate::MIN_BYTES as u64);
            if written {
                // The same zeros, now data on any file system.
                w.file
                    .write_all_at(&vec![0; len as usize], l.offset)
                    .unwrap();
            }
            let mut probe = super::super::map::anon(&l).unwrap();
            let read = read_layer(&w.file, &path, &l, &mut probe).unwrap();
            drop(probe);
            assert!(w.hold().unwrap());
            let waiting = w.layers.populating.waiting.clone();
            assert_eq!(waiting.contains(&0), read < len, "read {read} of {len}");
            if written {
                assert_eq!(read, len);
                assert!(waiting.is_empty());
            }
        }
    }
}
