//! The stores behind the pipeline's port (`pipeline::Store`): a filter file on
//! disk (open and validate, memory-map, grow, create through a temporary file
//! renamed into place, commit counters) and, in [`memory`], the in-memory
//! filter. Beside it: [`format`] (the header), `lock` (flock), `path` (what a
//! filter path may be, temporary files of killed runs), `checksum` (which
//! segments' checksums to rewrite).
//!
//! Its `unsafe` is memory-mapping a filter file, in [`map_read`] and
//! [`map_write`] (the crate's other `unsafe` is listed in `lib.rs`).

mod checksum;
pub mod format;
mod lock;
mod memory;
mod path;

use checksum::Stale;
use lock::{lock, open_locked};
pub use memory::MemFilter;
use path::{TEMP_RAND_LEN, dir_and_name, has_magic, sweep_leftovers, temp_prefix};
pub use path::{Target, check_target};

use crate::filter::sizing::{self, Plan, Spec};
use crate::filter::{self, LayerBits};
use crate::hash::{HASH_XXH3_128_V1, Hash128};
use crate::keys::KeySpec;
use crate::pipeline::Store;
use anyhow::{Context, Result, bail};
use format::{FLAG_DIRTY, HEADER_LEN, Header, LayerEntry, VERSION_MINOR};
use memmap2::{Mmap, MmapMut, MmapOptions};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Seconds since the Unix epoch.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Maps one layer of a file read-only.
fn map_read(file: &File, path: &Path, l: &LayerEntry) -> Result<Mmap> {
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
fn map_write(file: &File, path: &Path, l: &LayerEntry) -> Result<MmapMut> {
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
/// [`Layers::expect_keys`]); layers only read always are.
fn huge_pages(advise: impl FnOnce(memmap2::Advice) -> std::io::Result<()>) {
    if huge_pages_wanted() {
        let _ = advise(memmap2::Advice::HugePage);
    }
}

/// Whether [`huge_pages`] asks at all: not when `SEEN_NO_HUGEPAGE` is set.
fn huge_pages_wanted() -> bool {
    crate::tuning::get().huge_pages
}

/// [`Layers::hint`] for layer `i` of `header`.
fn hint_layer(header: &Header, expected: Option<u64>, i: usize, m: &MmapMut) {
    let newest = i + 1 >= header.layers.len();
    let pages = header
        .layers
        .get(i)
        .map_or(0, |l| l.layout.nblocks / filter::BLOCKS_PER_PAGE);
    if !newest || expected.is_some_and(|n| n >= pages) {
        huge_pages(|a| m.advise(a));
    }
}

/// Reads and validates the header of an open file.
fn read_header(file: &File, path: &Path) -> Result<Header> {
    let len = file.metadata()?.len();
    let mut buf = vec![0u8; HEADER_LEN.min(len as usize)];
    file.read_exact_at(&mut buf, 0)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Header::decode(&buf, len).with_context(|| format!("{} is not a usable filter", path.display()))
}

/// Opens and locks a filter file and validates its header, warning when a
/// writer did not finish with it.
fn open_checked(path: &Path, write: bool) -> Result<(File, Header)> {
    let file = open_locked(path, write)?;
    let header = read_header(&file, path)?;
    warn_dirty(&header, path);
    Ok((file, header))
}

fn warn_dirty(header: &Header, path: &Path) {
    if header.is_dirty() {
        crate::say!(
            "seen: warning: {} was not closed cleanly (a run was killed or crashed); \
             its bits are valid but its insert counters may be low (a writer recounts \
             them from the bits)",
            path.display()
        );
    }
}

/// The layer table entry that follows the last layer of `header`, sized by
/// `plan`, with its checksum table right after its bits.
fn next_entry(header: &Header, plan: &Plan) -> LayerEntry {
    let offset = header.file_len().next_multiple_of(format::ALIGN);
    LayerEntry {
        offset,
        layout: plan.layout,
        capacity: plan.capacity,
        target_fpp: plan.target_fpp,
        inserts: 0,
        checksums: offset + plan.layout.bytes(),
    }
}

/// A new header for `spec`, whose first layer is `first`.
fn new_header(spec: &Spec, first: &Plan, seed: u64, keys: KeySpec) -> Header {
    let t = now();
    let mut h = Header {
        version_minor: VERSION_MINOR,
        flags: 0,
        hash_algorithm: HASH_XXH3_128_V1,
        seed,
        keys,
        capacity: spec.capacity,
        target_fpp: spec.target_fpp,
        created: t,
        updated: t,
        growth: spec.growth,
        layers: vec![],
    };
    h.layers.push(next_entry(&h, first));
    h
}

/// Read-only views of every layer.
fn views<'a, M: AsRef<[u8]>>(header: &Header, maps: &'a [M]) -> Vec<LayerBits<'a>> {
    header
        .layers
        .iter()
        .zip(maps)
        .map(|(l, m)| LayerBits {
            bits: m.as_ref(),
            layout: l.layout,
        })
        .collect()
}

/// Looks keys up in every layer.
fn contains_in<M: AsRef<[u8]>>(
    header: &Header,
    maps: &[M],
    hashes: &[Hash128],
    out: &mut Vec<bool>,
) {
    out.clear();
    filter::contains_batch(&views(header, maps), hashes, out);
}

/// The bit arrays of a writable filter (one mapping per layer) and the header
/// that describes them. Inserts go to the newest layer; when a growing filter's
/// newest layer reaches its capacity, a new layer is added (its storage comes
/// from the owner: anonymous memory or the end of the file).
struct Layers {
    header: Header,
    maps: Vec<MmapMut>,
    /// How the owner is named in warnings.
    name: String,
    /// Capacity warnings given so far: 1 past 100 %, 2 past 150 %.
    warned: u8,
    /// Segments whose checksums must be written: changed since they last
    /// were, or in a layer just made (all zero); `None` for an in-memory
    /// filter, which has no checksums to keep.
    stale: Option<Stale>,
    /// Keys this run may still insert, when known ([`Layers::expect_keys`]).
    expected: Option<u64>,
}

impl Layers {
    /// Says how many keys this run may insert (`None`: unknown; repeated
    /// lines count too), and asks for 2 MiB pages ([`huge_pages`]) on the
    /// layers where it pays ([`Layers::hint`]).
    fn expect_keys(&mut self, keys: Option<u64>) {
        self.expected = keys;
        for (i, m) in self.maps.iter().enumerate() {
            self.hint(i, m);
        }
    }

    /// Asks for 2 MiB pages on the map `m` of layer `i` of a file when it pays:
    /// for a layer below the newest (only read from now on), always; for the
    /// newest, which is written, when the run is dense: when it may still
    /// insert at least one key per 4 KiB page of it, so that most pages would
    /// be written back anyway (about 63 % at the threshold). A sparse or
    /// unknown run keeps 4 KiB pages, so that adding 1,000 keys to a 400 MiB
    /// filter writes back a few MiB, not all of it.
    fn hint(&self, i: usize, m: &MmapMut) {
        hint_layer(&self.header, self.expected, i, m);
    }

    /// Whether a new layer can still be added.
    fn can_grow(&self) -> bool {
        self.header.growth.is_some() && self.header.layers.len() < format::MAX_LAYERS
    }

    /// Inserts keys in order, growing when the newest layer is full: keys are
    /// fed in runs no longer than the room left in the newest layer, so a layer
    /// never holds more than its capacity, and where a layer ends does not
    /// depend on how the input was cut into batches. With `out`, keys are tested
    /// and their verdicts given (see [`Store::insert_batch`]); without, they
    /// are known to be new ([`Store::record_batch`]): their bits are set
    /// without a test and each counts.
    fn add(
        &mut self,
        hashes: &[Hash128],
        mut out: Option<&mut Vec<bool>>,
        grow: &mut dyn FnMut(&Header) -> Result<MmapMut>,
    ) -> Result<u64> {
        if let Some(out) = out.as_deref_mut() {
            out.clear();
        }
        let mut done = 0;
        let mut new = 0;
        while done < hashes.len() {
            let last = *self.header.layers.last().expect("a filter has a layer");
            // Runs end where the layer is full (growing) or where a capacity
            // warning is due (fixed), so both happen at an exact count.
            let limit = if self.can_grow() {
                if last.inserts >= last.capacity {
                    self.add_layer(grow)?;
                    continue;
                }
                last.capacity
            } else {
                let over = last.capacity.saturating_add(1);
                let far = last
                    .capacity
                    .saturating_add(last.capacity / 2)
                    .saturating_add(1);
                if last.inserts < over {
                    over
                } else if last.inserts < far {
                    far
                } else {
                    u64::MAX
                }
            };
            // `limit > inserts` except for a crafted counter at u64::MAX.
            let room = match limit.checked_sub(last.inserts) {
                Some(r) if r > 0 && limit != u64::MAX => usize::try_from(r).unwrap_or(usize::MAX),
                _ => usize::MAX,
            };
            let batch = &hashes[done..done + room.min(hashes.len() - done)];
            let (newest, older) = self.maps.split_last_mut().expect("a filter has a layer");
            let top = self.header.layers.len() - 1;
            let n = match out.as_deref_mut() {
                Some(out) => {
                    let older = views(&self.header, older);
                    let from = out.len();
                    let n = filter::insert_batch(&older, newest, &last.layout, batch, out);
                    if let Some(stale) = &mut self.stale {
                        for (h, seen) in batch.iter().zip(&out[from..]) {
                            if !seen {
                                stale.mark(top, &last, *h);
                            }
                        }
                    }
                    n
                }
                None => {
                    filter::set_batch(newest, &last.layout, batch);
                    if let Some(stale) = &mut self.stale {
                        for h in batch {
                            stale.mark(top, &last, *h);
                        }
                    }
                    batch.len() as u64
                }
            };
            let last = self.header.layers.last_mut().expect("a filter has a layer");
            last.inserts = last.inserts.saturating_add(n);
            new += n;
            done += batch.len();
            self.expected = self.expected.map(|e| e.saturating_sub(batch.len() as u64));
            if !self.can_grow() {
                self.warn_full();
            }
        }
        Ok(new)
    }

    /// Adds a layer sized by the growth rule.
    fn add_layer(&mut self, grow: &mut dyn FnMut(&Header) -> Result<MmapMut>) -> Result<()> {
        let i = self.header.layers.len();
        let spec = Spec {
            capacity: self.header.layers[0].capacity,
            target_fpp: self.header.target_fpp,
            growth: self.header.growth,
        };
        let plan = spec.layer(i as u32).with_context(|| {
            format!(
                "cannot add layer {} to {} (it holds {} distinct lines)",
                i + 1,
                self.name,
                self.header.inserts()
            )
        })?;
        self.header.layers.push(next_entry(&self.header, &plan));
        match grow(&self.header) {
            Ok(map) => {
                self.hint(i, &map);
                self.maps.push(map);
                if let Some(stale) = &mut self.stale {
                    stale.cover(&self.header.layers, true);
                }
                Ok(())
            }
            Err(e) => {
                self.header.layers.pop();
                Err(e.context(format!("cannot add layer {} to {}", i + 1, self.name)))
            }
        }
    }

    /// Warns (once per level) when a filter that cannot grow passes 100 % and
    /// 150 % of its capacity.
    fn warn_full(&mut self) {
        let l = self.header.layers.last().expect("a filter has a layer");
        let level = if l.inserts as f64 > 1.5 * l.capacity as f64 {
            2
        } else {
            u8::from(l.inserts > l.capacity)
        };
        if level <= self.warned {
            return;
        }
        self.warned = level;
        let fpp = sizing::layer_fpp(&l.layout, l.inserts);
        let why = if self.header.growth.is_some() {
            "it has all the layers a filter can have"
        } else {
            "it is a fixed filter"
        };
        let advice = if level == 2 {
            "results are no longer reliable: rebuild it larger"
        } else {
            "rebuild it larger (or growing) before it degrades further"
        };
        crate::say!(
            "seen: warning: {} now holds more than {}% of the {} distinct lines it was sized \
             for and {why}: its false-positive rate is about {fpp:.1e} (target {:.0e}); {advice}",
            self.name,
            if level == 2 { 150 } else { 100 },
            l.capacity,
            l.target_fpp,
        );
    }
}

/// A filter file opened for reading under a shared lock.
pub struct ReadFilter {
    path: PathBuf,
    file: File,
    maps: Vec<Mmap>,
    header: Header,
}

impl ReadFilter {
    /// Opens, locks (shared) and validates a filter file.
    ///
    /// # Errors
    /// When the file cannot be opened or is not a valid filter (message names it).
    pub fn open(path: &Path) -> Result<ReadFilter> {
        let (file, header) = open_checked(path, false)?;
        let maps = header
            .layers
            .iter()
            .map(|l| map_read(&file, path, l))
            .collect::<Result<_>>()?;
        Ok(ReadFilter {
            path: path.to_path_buf(),
            file,
            maps,
            header,
        })
    }

    /// The validated header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bit array of layer `i`.
    pub fn layer_bits(&self, i: usize) -> &[u8] {
        &self.maps[i]
    }

    /// The stored checksums of layer `i`'s segments (empty when it has none).
    ///
    /// # Errors
    /// When the table cannot be read.
    pub fn checksums(&self, i: usize) -> Result<Vec<u64>> {
        let l = &self.header.layers[i];
        if l.checksums == 0 {
            return Ok(vec![]);
        }
        let mut buf = vec![0u8; l.segments() as usize * 8];
        self.file
            .read_exact_at(&mut buf, l.checksums)
            .with_context(|| format!("cannot read the checksums of {}", self.path.display()))?;
        Ok(buf
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }
}

impl Store for ReadFilter {
    fn seed(&self) -> u64 {
        self.header.seed
    }

    fn contains_batch(&self, hashes: &[Hash128], out: &mut Vec<bool>) {
        contains_in(&self.header, &self.maps, hashes, out);
    }

    fn insert_batch(&mut self, _: &[Hash128], _: &mut Vec<bool>) -> Result<u64> {
        bail!("{} is open read-only", self.path.display())
    }
}

/// Writes `header` at the start of `file` (the header is never mapped).
fn write_header(file: &File, path: &Path, header: &Header) -> Result<()> {
    file.write_all_at(&header.encode(), 0)
        .with_context(|| format!("cannot write the header of {}", path.display()))
}

/// Extends `file` to hold the newest layer of `header`, reserves its blocks and
/// maps it. Whatever lay past the old end (left by a run that crashed while
/// growing) is cut off first, so the new layer starts all zero.
fn extend(file: &File, path: &Path, header: &Header) -> Result<MmapMut> {
    let l = header.layers.last().expect("a filter has a layer");
    let grown = file
        .set_len(l.offset)
        .and_then(|()| file.set_len(l.end()))
        .and_then(|()| reserve(file, l.offset, l.end() - l.offset))
        .map_err(anyhow::Error::from)
        .and_then(|()| map_write(file, path, l));
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
fn reserve(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), offset, len) {
        Ok(()) => Ok(()),
        // Filesystems without fallocate: keep the sparse file.
        Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A filter file opened for writing under an exclusive lock. The dirty flag is
/// set while the lock is held and cleared when counters are written back
/// ([`WriteFilter::commit`], or the end of each commit window).
pub struct WriteFilter {
    path: PathBuf,
    file: File,
    layers: Layers,
    /// Whether this process holds the exclusive lock now.
    locked: bool,
}

impl WriteFilter {
    /// Opens, locks (exclusive) and validates a filter file, then marks it dirty.
    /// A file found dirty gets its counters recounted from the bits.
    /// `expected` is how many keys this run may insert (see
    /// [`NewFilter::expect_keys`]); it is known before the layers are mapped,
    /// so that a dirty file's recount brings them in with the right page size.
    ///
    /// # Errors
    /// When the file cannot be opened, locked or written, or is not a valid filter.
    pub fn open(path: &Path, expected: Option<u64>) -> Result<WriteFilter> {
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
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header as it will be committed.
    pub fn header(&self) -> &Header {
        &self.layers.header
    }

    /// [`Layers::add`], growing at the end of the file.
    fn add(&mut self, hashes: &[Hash128], out: Option<&mut Vec<bool>>) -> Result<u64> {
        let (file, path) = (&self.file, &self.path);
        self.layers.add(hashes, out, &mut |h| {
            let map = extend(file, path, h)?;
            // The file names its new layer from now on (still dirty).
            write_header(file, path, h)?;
            Ok(map)
        })
    }

    /// Writes every changed bit to disk, then a clean header with updated counters.
    ///
    /// # Errors
    /// When the data or header cannot be written back (disk full, I/O error).
    pub fn commit(&mut self) -> Result<()> {
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

impl Store for WriteFilter {
    fn seed(&self) -> u64 {
        self.layers.header.seed
    }

    fn contains_batch(&self, hashes: &[Hash128], out: &mut Vec<bool>) {
        contains_in(&self.layers.header, &self.layers.maps, hashes, out);
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

/// A new filter being filled in a temporary file next to its final path; it
/// appears at that path, complete, only in [`NewFilter::finish`]. Dropped
/// unfinished, the temporary file is removed and nothing changes.
pub struct NewFilter {
    target: PathBuf,
    tmp: tempfile::NamedTempFile,
    layers: Layers,
}

impl NewFilter {
    /// Creates the temporary file for a filter made for `spec`, hashing keys
    /// made by `keys` (recorded in the header).
    ///
    /// # Errors
    /// When the directory cannot be written, the disk has no room, or `spec`
    /// cannot be sized.
    pub fn create(target: &Path, spec: &Spec, seed: u64, keys: KeySpec) -> Result<NewFilter> {
        let first = spec
            .layer(0)
            .context("cannot size the filter (-n/--capacity, -p/--fpp)")?;
        // Never through a symbolic link: `check_target` refuses them, and a
        // link made since is replaced (rename), not followed.
        let (dir, name) = dir_and_name(target)?;
        if !dir.is_dir() {
            bail!(
                "cannot create {}: directory {} does not exist (create it first)",
                target.display(),
                dir.display()
            );
        }
        // A replaced file keeps its permission bits (never setuid, setgid or
        // sticky); a new one gets 0666 less the umask, as any file a shell
        // would create (tempfile's default is 0600).
        let old_mode = std::fs::symlink_metadata(target)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.permissions().mode() & 0o777);
        let mode = old_mode.unwrap_or(0o666);
        // Before ours exists: a sweep never meets this run's own file.
        sweep_leftovers(dir, name);
        let tmp = loop {
            let tmp = tempfile::Builder::new()
                .prefix(&temp_prefix(name))
                .rand_bytes(TEMP_RAND_LEN)
                .suffix(".tmp")
                .permissions(std::fs::Permissions::from_mode(mode))
                .tempfile_in(dir)
                .map_err(|e| {
                    // tempfile's message names the random temporary path: name the
                    // directory and the target instead.
                    anyhow::anyhow!(
                        "cannot create {}: cannot write in directory {}: {}",
                        target.display(),
                        dir.display(),
                        std::io::Error::from(e.kind())
                    )
                })?;
            // Held until the file is renamed into place (or the process
            // ends, however it ends): `sweep_leftovers` in other runs takes a
            // file it can lock for abandoned. One that got the lock first (in
            // the moment between create and lock) removed it: make another.
            tmp.as_file()
                .lock()
                .with_context(|| format!("cannot lock a temporary file in {}", dir.display()))?;
            if tmp.as_file().metadata()?.nlink() > 0 {
                break tmp;
            }
        };
        if let Some(mode) = old_mode {
            // Exactly the replaced file's bits, whatever the umask.
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .with_context(|| format!("cannot set the mode of a file in {}", dir.display()))?;
        }
        let header = new_header(spec, &first, seed, keys);
        tmp.as_file().set_len(header.file_len()).with_context(|| {
            format!(
                "cannot size a {}-byte filter in {}",
                header.file_len(),
                dir.display()
            )
        })?;
        reserve(tmp.as_file(), 0, header.file_len()).with_context(|| {
            format!(
                "no room for a {}-byte filter in {}: free some space, choose \
                 another directory, or lower -n / raise -p",
                header.file_len(),
                dir.display()
            )
        })?;
        let map = map_write(tmp.as_file(), tmp.path(), &header.layers[0])?;
        Ok(NewFilter {
            target: target.to_path_buf(),
            tmp,
            layers: Layers {
                stale: {
                    let mut s = Stale::default();
                    s.cover(&header.layers, true);
                    Some(s)
                },
                header,
                maps: vec![map],
                name: target.display().to_string(),
                warned: 0,
                expected: None,
            },
        })
    }

    /// The header as it will be written.
    pub fn header(&self) -> &Header {
        &self.layers.header
    }

    /// Says how many keys this run may insert (`None`: unknown; repeated
    /// lines count too), which decides whether the layer written asks for
    /// 2 MiB pages (only for a dense run: see README, Limits). Call it before
    /// the layer's pages are touched: pages already cached keep their size.
    pub fn expect_keys(&mut self, keys: Option<u64>) {
        self.layers.expect_keys(keys);
    }

    /// Writes the header, syncs the file, renames it over the target (refusing to
    /// replace an existing file unless `replace`) and syncs the directory.
    ///
    /// # Errors
    /// When the data cannot be synced or the rename fails; the target is then
    /// unchanged and the temporary file removed.
    pub fn finish(mut self, replace: bool) -> Result<()> {
        let l = &mut self.layers;
        if let Some(stale) = &mut l.stale {
            stale.write(self.tmp.as_file(), self.tmp.path(), &l.header, &l.maps)?;
        }
        let h = &mut self.layers.header;
        h.updated = now();
        write_header(self.tmp.as_file(), self.tmp.path(), h)?;
        for m in &self.layers.maps {
            m.flush()
                .with_context(|| format!("cannot write {}", self.tmp.path().display()))?;
        }
        self.tmp
            .as_file()
            .sync_all()
            .with_context(|| format!("cannot sync {}", self.tmp.path().display()))?;
        drop(self.layers);
        let target = self.target;
        // Hold an exclusive lock on the file being replaced, so no writer that
        // has it open loses its changes to the rename.
        // Checked again: the path may have changed since `build` began.
        let _old = if replace && check_target(&target, true)? == Target::Filter {
            let old = open_locked(&target, true)?;
            // What is locked is what `check_target` saw: a filter (or empty).
            if old.metadata()?.len() > 0 && !has_magic(&old) {
                bail!(
                    "{} changed into something that is not a seen filter during this run: \
                     it was left as it is",
                    target.display()
                );
            }
            Some(old)
        } else {
            None
        };
        let persisted = if replace {
            self.tmp.persist(&target).map_err(|e| e.error)
        } else {
            self.tmp.persist_noclobber(&target).map_err(|e| e.error)
        };
        match persisted {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                bail!(
                    "{} already exists: pass --force to replace it or --add to insert into it",
                    target.display()
                )
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot move the new filter to {}", target.display())
                });
            }
        }
        let (dir, _) = dir_and_name(&target)?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Store for NewFilter {
    fn seed(&self) -> u64 {
        self.layers.header.seed
    }

    fn contains_batch(&self, hashes: &[Hash128], out: &mut Vec<bool>) {
        contains_in(&self.layers.header, &self.layers.maps, hashes, out);
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        let (file, path) = (self.tmp.as_file(), self.tmp.path());
        self.layers
            .add(hashes, Some(out), &mut |h| extend(file, path, h))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Whether the mapping holding `p` was advised `MADV_HUGEPAGE` (`hg` among
    /// its `VmFlags` in `/proc/self/smaps`); `None` when it is not found.
    fn advised_huge(p: *const u8) -> Option<bool> {
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
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.split_whitespace().any(|f| f == "hg"));
            }
        }
        None
    }

    /// Every stored checksum of `path` is the checksum of its segment's bits.
    fn assert_checksums_match(path: &Path) {
        let r = ReadFilter::open(path).unwrap();
        for (i, l) in r.header().layers.iter().enumerate() {
            let sums = r.checksums(i).unwrap();
            assert_eq!(sums.len() as u64, l.segments());
            for (s, sum) in sums.iter().enumerate() {
                let bits = &r.layer_bits(i)[l.segment(s as u64)];
                assert_eq!(
                    *sum,
                    format::segment_checksum(bits),
                    "layer {i} segment {s}"
                );
            }
        }
    }

    /// Segments no key touched in a layer made by this process get the
    /// checksum of zero bytes without their bits being read: it must be the
    /// one the bits give, for whole segments and a shorter last one, in a
    /// first layer and in one added by growth, after `finish` and after a
    /// reopened writer's commit.
    #[test]
    fn untouched_segments_get_the_checksum_of_their_zero_bits() {
        let spec = Spec {
            capacity: 700_000,
            target_fpp: 1e-6,
            growth: Some(sizing::Growth::new(2)),
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.seen");
        let mut new = NewFilter::create(&path, &spec, 7, KeySpec::RAW).unwrap();
        let l = new.header().layers[0];
        assert!(l.segments() >= 3, "several segments: {}", l.segments());
        assert!(
            !l.layout.bytes().is_multiple_of(format::SEGMENT_BYTES),
            "a short last segment"
        );
        // Two keys: most segments stay untouched.
        let keys: Vec<Hash128> = (0..2u32)
            .map(|i| crate::hash::hash(&i.to_le_bytes(), 7))
            .collect();
        new.insert_batch(&keys, &mut Vec::new()).unwrap();
        new.finish(false).unwrap();
        assert_checksums_match(&path);
        // A writer fills the first layer and grows: the new layer's
        // untouched segments too.
        let mut w = WriteFilter::open(&path, None).unwrap();
        let keys: Vec<Hash128> = (0..700_010u32)
            .map(|i| crate::hash::hash(&(i + 10).to_le_bytes(), 7))
            .collect();
        w.insert_batch(&keys, &mut Vec::new()).unwrap();
        assert_eq!(w.header().layers.len(), 2);
        w.commit().unwrap();
        drop(w);
        assert_checksums_match(&path);
    }

    /// Layers only read, and in-memory ones, always ask for huge pages; the
    /// layer of a file that a run writes asks only when the run is dense (it
    /// may still insert at least one key per 4 KiB page of it), a layer it
    /// adds included, so that a sparse run does not write back whole 2 MiB
    /// folios.
    #[test]
    fn layer_maps_ask_for_huge_pages_when_it_pays() {
        if !Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists()
            || !huge_pages_wanted()
        {
            eprintln!("skipped: no transparent huge pages here, or SEEN_NO_HUGEPAGE is set");
            return;
        }
        let plan = sizing::plan(200_000, 1e-6).unwrap();
        let mem = MemFilter::new(&plan, 7).unwrap();
        assert_eq!(advised_huge(mem.layers.maps[0].as_ptr()), Some(true));
        let spec = Spec {
            capacity: 20_000,
            target_fpp: 1e-6,
            growth: Some(sizing::Growth::new(2)),
        };
        let pages = spec.layer(0).unwrap().layout.nblocks / filter::BLOCKS_PER_PAGE;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.seen");
        let mut new = NewFilter::create(&path, &spec, 7, KeySpec::RAW).unwrap();
        assert_eq!(advised_huge(new.layers.maps[0].as_ptr()), Some(false));
        new.expect_keys(None);
        assert_eq!(advised_huge(new.layers.maps[0].as_ptr()), Some(false));
        new.expect_keys(Some(pages - 1));
        assert_eq!(advised_huge(new.layers.maps[0].as_ptr()), Some(false));
        new.expect_keys(Some(pages));
        assert_eq!(advised_huge(new.layers.maps[0].as_ptr()), Some(true));
        // Fill the first layer: the one added for the rest asks too, while
        // enough keys are still expected for it.
        let keys: Vec<Hash128> = (0..30_000u32)
            .map(|i| crate::hash::hash(&i.to_le_bytes(), 7))
            .collect();
        let mut out = Vec::new();
        new.expect_keys(Some(30_000 + 2 * pages));
        new.insert_batch(&keys, &mut out).unwrap();
        assert_eq!(new.layers.maps.len(), 2);
        assert_eq!(advised_huge(new.layers.maps[1].as_ptr()), Some(true));
        new.finish(false).unwrap();
        // Reopened for a sparse run: the newest layer keeps 4 KiB pages, the
        // one below (only read now) asks; for a dense run both ask.
        let mut w = WriteFilter::open(&path, Some(10)).unwrap();
        assert_eq!(advised_huge(w.layers.maps[0].as_ptr()), Some(true));
        assert_eq!(advised_huge(w.layers.maps[1].as_ptr()), Some(false));
        w.commit().unwrap();
        drop(w);
        let w = WriteFilter::open(&path, Some(u64::MAX)).unwrap();
        for m in &w.layers.maps {
            assert_eq!(advised_huge(m.as_ptr()), Some(true));
        }
        drop(w);
        let r = ReadFilter::open(&path).unwrap();
        for m in &r.maps {
            assert_eq!(advised_huge(m.as_ptr()), Some(true));
        }
    }
}
