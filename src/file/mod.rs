//! The filter file on disk: open and validate, memory-map, lock, create through a
//! temporary file renamed into place, and commit counters.
//!
//! This is the only module with `unsafe` (memory-mapping a file, in [`map_read`]
//! and [`map_write`]). The format itself lives in [`format`].

pub mod format;

use crate::filter::sizing::Plan;
use crate::filter::{self, BatchFilter, Layout};
use crate::hash::{HASH_XXH3_128_V1, Hash128};
use anyhow::{Context, Result, bail};
use format::{FLAG_DIRTY, HEADER_LEN, Header, LayerEntry, VERSION_MINOR};
use memmap2::{Mmap, MmapMut, MmapOptions};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Seconds since the Unix epoch.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Maps a whole file read-only.
fn map_read(file: &File, path: &Path) -> Result<Mmap> {
    // SAFETY: the mapping is only read as plain bytes (`&[u8]`), never cast to
    // structs. Other `seen` processes only change the file under an exclusive lock
    // while we hold a shared one; bits are only ever set, so a concurrent writer
    // that ignores locks cannot make us misbehave beyond reading fresher bits. A
    // process truncating the file under us would raise SIGBUS: see docs/FORMAT.md.
    unsafe { MmapOptions::new().map(file) }
        .with_context(|| format!("cannot memory-map {}", path.display()))
}

/// Maps a whole file read-write (shared, so stores reach the file).
fn map_write(file: &File, path: &Path) -> Result<MmapMut> {
    // SAFETY: as in `map_read`; in addition we hold an exclusive lock (or the file
    // is a temporary nobody else knows about), so no other `seen` writes it.
    unsafe { MmapOptions::new().map_mut(file) }
        .with_context(|| format!("cannot memory-map {} for writing", path.display()))
}

/// Takes a shared or exclusive `flock`, saying on stderr when it has to wait.
fn lock(file: &File, path: &Path, exclusive: bool) -> Result<()> {
    let tried = if exclusive {
        file.try_lock()
    } else {
        file.try_lock_shared()
    };
    match tried {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => {
            eprintln!(
                "seen: waiting for {} lock on {} (another process is using it)",
                if exclusive {
                    "an exclusive"
                } else {
                    "a shared"
                },
                path.display()
            );
            if exclusive {
                file.lock()
            } else {
                file.lock_shared()
            }
            .with_context(|| format!("cannot lock {}", path.display()))
        }
        Err(TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// Opens `path` and locks it, retrying when the path was replaced (by an atomic
/// `build --force`) while we waited, so the lock we hold is on the current file.
fn open_locked(path: &Path, write: bool) -> Result<File> {
    loop {
        let file = OpenOptions::new()
            .read(true)
            .write(write)
            .open(path)
            .with_context(|| format!("cannot open filter {}", path.display()))?;
        let meta = file.metadata()?;
        if meta.is_dir() {
            bail!("{} is a directory, not a filter file", path.display());
        }
        lock(&file, path, write)?;
        match std::fs::metadata(path) {
            Ok(now) if now.ino() == meta.ino() && now.dev() == meta.dev() => return Ok(file),
            _ => continue,
        }
    }
}

/// Reads and validates the header of an open file.
fn read_header(mut file: &File, path: &Path) -> Result<Header> {
    let len = file.metadata()?.len();
    let mut buf = vec![0u8; HEADER_LEN.min(len as usize)];
    file.read_exact(&mut buf)
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

fn check_map_len(len: usize, header: &Header, path: &Path) -> Result<()> {
    if len as u64 != header.file_len() {
        bail!(
            "{} changed size while being opened ({} bytes, expected {}); retry",
            path.display(),
            len,
            header.file_len()
        );
    }
    Ok(())
}

fn warn_dirty(header: &Header, path: &Path) {
    if header.is_dirty() {
        eprintln!(
            "seen: warning: {} was not closed cleanly (a run was killed or crashed); \
             its bits are valid but its insert counter may be low",
            path.display()
        );
    }
}

/// Slice of `bytes` holding layer `l`'s bit array (validated by `Header::decode`).
fn layer_range(l: &LayerEntry) -> std::ops::Range<usize> {
    l.offset as usize..(l.offset + l.layout.bytes()) as usize
}

/// Looks keys up in the (single) layer of a mapped filter file.
fn contains_in_layer(map: &[u8], header: &Header, hashes: &[Hash128], out: &mut Vec<bool>) {
    let l = &header.layers[0];
    filter::contains_batch(&map[layer_range(l)], &l.layout, hashes, out);
}

/// Inserts keys into the (single) layer of a mapped filter file and counts them.
fn insert_in_layer(
    map: &mut [u8],
    header: &mut Header,
    hashes: &[Hash128],
    out: &mut Vec<bool>,
) -> u64 {
    let l = &mut header.layers[0];
    let new = filter::insert_batch(&mut map[layer_range(l)], &l.layout, hashes, out);
    l.inserts = l.inserts.saturating_add(new);
    new
}

/// A filter file opened for reading under a shared lock.
pub struct ReadFilter {
    path: PathBuf,
    _file: File,
    map: Mmap,
    header: Header,
}

impl ReadFilter {
    /// Opens, locks (shared) and validates a filter file.
    ///
    /// # Errors
    /// When the file cannot be opened or is not a valid filter (message names it).
    pub fn open(path: &Path) -> Result<ReadFilter> {
        let (file, header) = open_checked(path, false)?;
        let map = map_read(&file, path)?;
        check_map_len(map.len(), &header, path)?;
        Ok(ReadFilter {
            path: path.to_path_buf(),
            _file: file,
            map,
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
        &self.map[layer_range(&self.header.layers[i])]
    }
}

impl BatchFilter for ReadFilter {
    fn seed(&self) -> u64 {
        self.header.seed
    }

    fn contains_batch(&self, hashes: &[Hash128], out: &mut Vec<bool>) {
        contains_in_layer(&self.map, &self.header, hashes, out);
    }

    fn insert_batch(&mut self, _: &[Hash128], _: &mut Vec<bool>) -> u64 {
        unreachable!("ReadFilter is never handed to an inserting pipeline")
    }
}

/// A filter file opened for writing under an exclusive lock. The dirty flag is
/// set on open and cleared by [`WriteFilter::commit`].
pub struct WriteFilter {
    path: PathBuf,
    _file: File,
    map: MmapMut,
    header: Header,
}

impl WriteFilter {
    /// Opens, locks (exclusive) and validates a filter file, then marks it dirty.
    ///
    /// # Errors
    /// When the file cannot be opened, locked or written, or is not a valid filter.
    pub fn open(path: &Path) -> Result<WriteFilter> {
        let (file, header) = open_checked(path, true)?;
        let map = map_write(&file, path)?;
        check_map_len(map.len(), &header, path)?;
        let mut w = WriteFilter {
            path: path.to_path_buf(),
            _file: file,
            map,
            header,
        };
        w.header.flags |= FLAG_DIRTY;
        w.write_header()?;
        Ok(w)
    }

    fn write_header(&mut self) -> Result<()> {
        self.map[..HEADER_LEN].copy_from_slice(&self.header.encode());
        self.map
            .flush_range(0, HEADER_LEN)
            .with_context(|| format!("cannot write the header of {}", self.path.display()))
    }

    /// The header as it will be committed.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Writes every changed bit to disk, then a clean header with updated counters.
    ///
    /// # Errors
    /// When the data or header cannot be written back (disk full, I/O error).
    pub fn commit(&mut self) -> Result<()> {
        self.map
            .flush()
            .with_context(|| format!("cannot write {} back to disk", self.path.display()))?;
        self.header.flags &= !FLAG_DIRTY;
        self.header.updated = now();
        self.write_header()
    }
}

impl BatchFilter for WriteFilter {
    fn seed(&self) -> u64 {
        self.header.seed
    }

    fn contains_batch(&self, hashes: &[Hash128], out: &mut Vec<bool>) {
        contains_in_layer(&self.map, &self.header, hashes, out);
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> u64 {
        insert_in_layer(&mut self.map, &mut self.header, hashes, out)
    }
}

/// Follows symbolic links (even dangling ones) to the path they finally name;
/// gives up after 40 hops and returns what it has.
fn resolve_links(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(next) if next.is_absolute() => p = next,
            Ok(next) => p = p.parent().unwrap_or(Path::new("")).join(next),
            Err(_) => break,
        }
    }
    p
}

/// A new filter being filled in a temporary file next to its final path; it
/// appears at that path, complete, only in [`NewFilter::finish`]. Dropped
/// unfinished, the temporary file is removed and nothing changes.
pub struct NewFilter {
    target: PathBuf,
    tmp: tempfile::NamedTempFile,
    map: MmapMut,
    header: Header,
}

impl NewFilter {
    /// Creates the temporary file for a filter sized by `plan`.
    ///
    /// # Errors
    /// When the directory cannot be written or the disk has no room.
    pub fn create(target: &Path, plan: &Plan, seed: u64) -> Result<NewFilter> {
        // Write through symbolic links, as `sort -o` does: the file a link names
        // is the one replaced, and the link stays.
        let resolved = resolve_links(target);
        let target = resolved.as_path();
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .with_context(|| format!("{} does not name a file", target.display()))?;
        // A replaced file keeps its mode; a new one gets 0666 less the umask, as
        // any file a shell would create (tempfile's default is 0600).
        let mode = std::fs::metadata(target).map_or(0o666, |m| m.permissions().mode() & 0o7777);
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(mode))
            .tempfile_in(dir)
            .with_context(|| {
                format!(
                    "cannot create a temporary file in {} for {}",
                    dir.display(),
                    target.display()
                )
            })?;
        let t = now();
        let header = Header {
            version_minor: VERSION_MINOR,
            flags: 0,
            hash_algorithm: HASH_XXH3_128_V1,
            seed,
            capacity: plan.capacity,
            target_fpp: plan.target_fpp,
            created: t,
            updated: t,
            layers: vec![LayerEntry {
                offset: HEADER_LEN as u64,
                layout: plan.layout,
                capacity: plan.capacity,
                target_fpp: plan.target_fpp,
                inserts: 0,
            }],
        };
        tmp.as_file().set_len(header.file_len()).with_context(|| {
            format!(
                "cannot size a {}-byte filter in {}",
                header.file_len(),
                dir.display()
            )
        })?;
        // Reserve the blocks now: a sparse file on a full disk would fail later,
        // on first write through the mapping, as SIGBUS instead of an error.
        match rustix::fs::fallocate(
            tmp.as_file(),
            rustix::fs::FallocateFlags::empty(),
            0,
            header.file_len(),
        ) {
            Ok(()) => {}
            // Filesystems without fallocate: keep the sparse file.
            Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => {}
            Err(e) => {
                return Err(std::io::Error::from(e)).with_context(|| {
                    format!(
                        "no room for a {}-byte filter in {}: free some space, choose \
                         another directory, or lower -n / raise -p",
                        header.file_len(),
                        dir.display()
                    )
                });
            }
        }
        let map = map_write(tmp.as_file(), tmp.path())?;
        Ok(NewFilter {
            target: target.to_path_buf(),
            tmp,
            map,
            header,
        })
    }

    /// Writes the header, syncs the file, renames it over the target (refusing to
    /// replace an existing file unless `replace`) and syncs the directory.
    ///
    /// # Errors
    /// When the data cannot be synced or the rename fails; the target is then
    /// unchanged and the temporary file removed.
    pub fn finish(mut self, replace: bool) -> Result<()> {
        self.header.updated = now();
        self.map[..HEADER_LEN].copy_from_slice(&self.header.encode());
        self.map
            .flush()
            .with_context(|| format!("cannot write {}", self.tmp.path().display()))?;
        self.tmp
            .as_file()
            .sync_all()
            .with_context(|| format!("cannot sync {}", self.tmp.path().display()))?;
        drop(self.map);
        let target = self.target;
        // Hold an exclusive lock on the file being replaced, so no writer that
        // has it open loses its changes to the rename.
        let _old = if replace && target.exists() {
            Some(open_locked(&target, true)?)
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
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl BatchFilter for NewFilter {
    fn seed(&self) -> u64 {
        self.header.seed
    }

    fn contains_batch(&self, hashes: &[Hash128], out: &mut Vec<bool>) {
        contains_in_layer(&self.map, &self.header, hashes, out);
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> u64 {
        insert_in_layer(&mut self.map, &mut self.header, hashes, out)
    }
}

/// An in-memory filter (anonymous mapping: pages cost nothing until touched).
pub struct MemFilter {
    layout: Layout,
    seed: u64,
    map: MmapMut,
    inserts: u64,
}

impl MemFilter {
    /// Allocates a zeroed filter for `plan`.
    ///
    /// # Errors
    /// When the memory cannot be reserved.
    pub fn new(plan: &Plan, seed: u64) -> Result<MemFilter> {
        let map = MmapMut::map_anon(plan.layout.bytes() as usize).with_context(|| {
            format!(
                "cannot allocate {} bytes for the filter",
                plan.layout.bytes()
            )
        })?;
        if std::env::var_os("SEEN_NO_HUGEPAGE").is_none() {
            // Random probes over a large filter miss the TLB on every access with
            // 4 KiB pages; 2 MiB pages remove most page walks. Only a hint.
            let _ = map.advise(memmap2::Advice::HugePage);
        }
        Ok(MemFilter {
            layout: plan.layout,
            seed,
            map,
            inserts: 0,
        })
    }

    /// Touches every page now (writes a zero to each), so later probes pay no
    /// page faults; used by benchmarks to separate the two costs.
    pub fn prefault(&mut self) {
        for page in self.map.chunks_mut(4096) {
            page[0] = 0;
        }
    }

    /// Keys recorded as new so far.
    pub fn inserts(&self) -> u64 {
        self.inserts
    }
}

impl BatchFilter for MemFilter {
    fn seed(&self) -> u64 {
        self.seed
    }

    fn contains_batch(&self, hashes: &[Hash128], out: &mut Vec<bool>) {
        filter::contains_batch(&self.map, &self.layout, hashes, out);
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> u64 {
        let new = filter::insert_batch(&mut self.map, &self.layout, hashes, out);
        self.inserts = self.inserts.saturating_add(new);
        new
    }
}
