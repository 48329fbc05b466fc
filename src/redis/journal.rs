//! The local journal of a run that records in Redis: the lines a test-and-set
//! may judge new, written down (and synced) before it is sent, so that a run
//! killed between the server's answer and its own output loses nothing: the
//! next run on this machine prints what the killed one had judged new and not
//! written ([`Journal::replay`]).
//!
//! A journal is a directory per filter; each run writes files of its own
//! there (`log-RUN-N`), holding an exclusive `flock` on them while it lives.
//! Records: a kind byte, the chunk number and the payload length (u64
//! little-endian each), then the payload. Each chunk is one append, synced
//! before its test-and-set is sent, of three records:
//! - `C`: the chunk's records, back to back;
//! - a verdict slot, one byte per record: [`PRESENT`], [`NEW`], or
//!   [`UNKNOWN`] (the reply was lost: the server may or may not have
//!   recorded the line; the run did not print it);
//! - a written slot: how many of the chunk's new records were written (u64;
//!   `u64::MAX` for all).
//!
//! Slots are reserved with kind `?` (skipped by a reader) and filled in place
//! (`pwrite`: payload first, then the kind byte, `V` or `W`), so nothing is
//! appended after a chunk's lines are judged: a full disk stops a run before
//! a test-and-set, never after a chunk was printed. Taking a chunk back (its
//! output may not have been read) turns its `W` back into `?`.
//!
//! Replay: a chunk without `W` prints its records judged new (after the
//! first that were written); a record whose verdict is unknown (an `UNKNOWN`
//! byte, or no verdicts at all: the run was killed between sending and
//! writing them down) is asked of the filter, and printed when the filter
//! holds it (the server recorded it and nobody printed it). Files `run-…` of
//! seen 0.3 and earlier (an append per record) are replayed by the same rule.

use anyhow::{Context, Result};
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Environment variable naming the directory of journals.
pub(crate) const DIR_ENV: &str = "SEEN_JOURNAL_DIR";
/// Bytes after which a run starts a new journal file (the old one goes once
/// all its chunks are written): small, so that a run needs little room.
const SEGMENT_BYTES: u64 = 1 << 20;
/// "All of its new records were written."
const ALL: u64 = u64::MAX;
/// Output that may still sit unread in a pipe or socket buffer when the
/// reader goes away (`| head`): the chunks written last, this many bytes of
/// them, are printed again by the next run ([`Journal::retract_recent`]).
/// Kept only when standard output is a pipe or a socket.
const UNREAD_BYTES: u64 = 8 << 20;

/// Whether standard output can hold output its reader never reads (a pipe
/// or a socket), so that the chunks written last are kept.
fn output_may_go_unread() -> bool {
    let out = std::io::stdout();
    let Ok(m) = rustix::fs::fstat(&out) else {
        return true;
    };
    let t = rustix::fs::FileType::from_raw_mode(m.st_mode);
    matches!(t, rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket)
}
/// Verdicts: the filter held the record (or it was never sent).
pub(crate) const PRESENT: u8 = 0;
/// The test-and-set recorded it: it is to be printed.
pub(crate) const NEW: u8 = 1;
/// The test-and-set's reply was lost: asked of the filter at replay.
pub(crate) const UNKNOWN: u8 = 2;
/// The kind of a slot not filled yet.
const OPEN: u8 = b'?';
/// Bytes of a record's head.
const HEAD: usize = 17;

/// The base directory of journals on this machine.
fn base_dir(name: &str) -> Result<PathBuf> {
    Ok(match std::env::var_os(DIR_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => match (std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME")) {
            (Some(x), _) if !x.is_empty() => PathBuf::from(x).join("seen/journals"),
            (_, Some(h)) if !h.is_empty() => PathBuf::from(h).join(".local/state/seen/journals"),
            _ => anyhow::bail!(
                "no directory for the journal of Redis filter {name}: set {DIR_ENV} (or HOME) \
                 to a directory on this machine"
            ),
        },
    })
}

/// The directory of journals, on this machine, of the filter named `name`
/// whose meta value is `meta` (the same filter however its location is
/// written; another filter made under the same name gets another one).
pub(super) fn dir_for(name: &str, meta: &[u8]) -> Result<PathBuf> {
    let id = xxhash_rust::xxh3::xxh3_64(meta);
    Ok(base_dir(name)?.join(format!("{name}-{id:016x}")))
}

/// The file in a journal directory that names the filter's location (as
/// `Display` writes it, without a password), so that the journals of a
/// filter made again there can be told from another server's filter of the
/// same name.
const LOCATION_FILE: &str = "filter";

/// The location a journal directory's runs wrote in, if it says.
pub(crate) fn location_of(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(LOCATION_FILE)).ok()
}

/// Writes `location` into `dir`, unless it is there.
pub(crate) fn mark_location(dir: &Path, location: &str) {
    let path = dir.join(LOCATION_FILE);
    if path.exists() {
        return;
    }
    let tmp = dir.join(format!(".{LOCATION_FILE}.{}", std::process::id()));
    if std::fs::write(&tmp, location).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
    let _ = std::fs::remove_file(&tmp);
}

/// A journal directory of a filter that is gone (see [`orphans`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Orphan {
    pub(crate) dir: PathBuf,
    /// Journal files in it, and their bytes.
    pub(crate) files: u64,
    pub(crate) bytes: u64,
    /// It names the same location (else it was made by a seen that did not
    /// record locations: it may be another server's filter of that name).
    pub(crate) same_location: bool,
}

/// Journal directories on this machine (beside `current`) of filters named
/// `name` at `location` that are not the one whose journals are in
/// `current`: the filter there was deleted or made again, and these can
/// never be replayed. Directories that record another location (another
/// server's filter of the same name) are not orphans; those that record
/// none (older seen) are, marked so. Empty ones of either kind are
/// removed on the way.
pub(crate) fn orphans(name: &str, current: &Path, location: &str) -> Vec<Orphan> {
    let Some(base) = current.parent() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        let Some(file) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let is_named = file
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|id| id.len() == 16 && id.bytes().all(|c| c.is_ascii_hexdigit()));
        if !is_named || p == current || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let recorded = location_of(&p);
        if recorded.as_deref().is_some_and(|l| l != location) {
            continue;
        }
        let (mut files, mut bytes) = (0, 0);
        if let Ok(inner) = std::fs::read_dir(&p) {
            for f in inner.filter_map(Result::ok) {
                if f.file_name() != LOCATION_FILE {
                    files += 1;
                    bytes += f.metadata().map_or(0, |m| m.len());
                }
            }
        }
        if files == 0 {
            remove_if_empty(&p);
            continue;
        }
        found.push(Orphan {
            dir: p,
            files,
            bytes,
            same_location: recorded.is_some(),
        });
    }
    found.sort_by(|a, b| a.dir.cmp(&b.dir));
    found
}

/// Removes an orphaned journal directory, unless a live run holds one of
/// its files (a writer that opened the old filter before it was made
/// again, still running). Returns whether it went.
pub(crate) fn remove_orphan(o: &Orphan) -> bool {
    let Ok(entries) = std::fs::read_dir(&o.dir) else {
        return true;
    };
    for e in entries.filter_map(Result::ok) {
        if let Ok(f) = File::open(e.path())
            && rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockShared).is_err()
        {
            return false;
        }
    }
    std::fs::remove_dir_all(&o.dir).is_ok()
}

/// Says which records the filter holds (see [`Journal::replay`]).
pub(crate) type Asker<'a> = dyn FnMut(&[&[u8]]) -> Result<Vec<bool>> + 'a;

/// What [`Journal::replay`] asks: whether `filter` holds records, keyed by
/// `keys` as the run keys them.
pub(super) fn asker<S: crate::pipeline::Store>(
    filter: &mut S,
    keys: crate::keys::KeySpec,
) -> impl FnMut(&[&[u8]]) -> Result<Vec<bool>> + '_ {
    move |records: &[&[u8]]| {
        let seed = filter.seed();
        let mut keyer = crate::keys::Keyer::new(keys);
        let hashes: Vec<_> = records
            .iter()
            .map(|r| crate::hash::hash(keyer.key(r), seed))
            .collect();
        let mut held = Vec::new();
        filter.contains_batch(&hashes, &mut held)?;
        Ok(held)
    }
}

/// Removes a journal directory if nothing but its location is left in it
/// (another run may just have made a file there: then it stays, its
/// location written again).
pub(crate) fn remove_if_empty(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let only_location = entries
        .filter_map(Result::ok)
        .all(|e| e.file_name() == LOCATION_FILE);
    if !only_location {
        return;
    }
    let location = location_of(dir);
    let _ = std::fs::remove_file(dir.join(LOCATION_FILE));
    if std::fs::remove_dir(dir).is_err()
        && let Some(l) = location
    {
        mark_location(dir, &l);
    }
}

/// A Redis layout that keeps a run's journal: what it holds of it, and the
/// failure that stops its run at the next chunk. Each is then the
/// pipeline's [`Journals`](crate::pipeline::Journals): a chunk is written
/// down before it is judged, and marked once its new lines are written.
pub(crate) trait Journaled {
    /// The run's journal (none for a run that keeps none), and the failure
    /// that stopped its test-and-sets.
    fn journal_parts(&mut self) -> (Option<&mut Journal>, &mut Option<anyhow::Error>);

    /// Readies `out` for a batch of `len` lines; when the run is broken
    /// (a test-and-set failed), what the batch returns instead: the failure
    /// when it keeps no journal, else no line new, its verdicts written
    /// down (nothing more is sent or judged new; the run stops at its next
    /// chunk).
    fn broken_batch(&mut self, out: &mut Vec<bool>, len: usize) -> Option<Result<u64>> {
        out.clear();
        out.resize(len, false);
        let (journal, broken) = self.journal_parts();
        broken.as_ref()?;
        match journal {
            None => broken.take().map(Err),
            Some(j) => {
                out.fill(true);
                j.verdicts(out.iter().map(|_| PRESENT));
                Some(Ok(0))
            }
        }
    }

    /// Itself as the pipeline's journals, while it keeps one.
    fn as_journals(&mut self) -> Option<&mut dyn crate::pipeline::Journals>
    where
        Self: Sized,
    {
        if self.journal_parts().0.is_some() {
            Some(self)
        } else {
            None
        }
    }

    /// The run's output was closed by its reader: see
    /// [`Journal::retract_recent`].
    fn output_lost(&mut self) {
        if let (Some(j), _) = self.journal_parts() {
            j.retract_recent();
        }
    }
}

impl<T: Journaled> crate::pipeline::Journals for T {
    fn judging(&mut self, chunk: &crate::pipeline::Chunk) -> Result<()> {
        let (journal, broken) = self.journal_parts();
        if let Some(e) = broken.take() {
            return Err(e);
        }
        match journal {
            Some(j) => j.chunk(chunk.records_bytes(), chunk.records()),
            None => Ok(()),
        }
    }

    fn written(&mut self, new: Option<usize>) -> Result<()> {
        match self.journal_parts().0 {
            Some(j) => j.written(new),
            None => Ok(()),
        }
    }
}

/// How old a file made under its temporary name (`.new-log-…`) must be to
/// be taken for one a run left when it died before it named it (a live run
/// names its file right after it made and locked it).
const UNNAMED_SECS: u64 = 60;

/// Removes the files of `dir` that runs made under a temporary name and
/// died before naming (empty, or a second name of a file named since),
/// older than [`UNNAMED_SECS`] and locked by no one, so that the directory
/// can go once its journals have.
fn remove_unnamed(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(UNNAMED_SECS);
    for e in entries.filter_map(Result::ok) {
        if !e.file_name().to_string_lossy().starts_with(".new-log-") {
            continue;
        }
        let p = e.path();
        let Ok(f) = File::open(&p) else { continue };
        let stale = f
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < old);
        if stale
            && rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
        {
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// Where a chunk's slots are in its file.
#[derive(Clone, Copy)]
struct Slots {
    /// Offset of the verdict slot, and the records it has room for.
    verdicts_at: u64,
    records: u64,
    /// Offset of the written slot.
    written_at: u64,
}

/// One file of a run's journal.
struct Segment {
    path: PathBuf,
    file: File,
    /// Chunks `first..first + slots.len()` are here.
    first: u64,
    slots: Vec<Slots>,
    bytes: u64,
}

impl Segment {
    fn end(&self) -> u64 {
        self.first + self.slots.len() as u64
    }

    /// Fills a slot in place: payload, then the kind that makes it count.
    fn fill(&self, at: u64, kind: u8, payload: &[u8]) -> Result<()> {
        self.file
            .write_all_at(payload, at + HEAD as u64)
            .and_then(|()| self.file.write_all_at(&[kind], at))
            .with_context(|| format!("cannot write the journal {}", self.path.display()))
    }
}

/// The journal a run writes.
pub(crate) struct Journal {
    dir: PathBuf,
    /// The filter's location, written beside the journal.
    location: String,
    segments: VecDeque<Segment>,
    /// Chunks journalled so far, and reported written.
    chunks: u64,
    acked: u64,
    /// Verdicts of the newest chunk, not yet written down, and whether
    /// they are still to be.
    verdicts: Vec<u8>,
    unflushed: bool,
    files_made: u64,
    /// This run's files are `log-{run}-{n}`: the start time and the process.
    run: String,
    /// A chunk was written only in part (the sink stopped).
    partial: bool,
    /// Bytes of the chunks journalled and not yet written, oldest first.
    pending: VecDeque<u64>,
    /// The chunks written last (number, bytes), as many as cover
    /// `unread` bytes.
    recent: VecDeque<(u64, u64)>,
    /// [`UNREAD_BYTES`], or 0 when the output cannot go unread.
    unread: u64,
}

/// Appends a record's head and payload to `buf`.
fn put(buf: &mut Vec<u8>, kind: u8, seq: u64, payload_len: usize) {
    buf.push(kind);
    buf.extend_from_slice(&seq.to_le_bytes());
    buf.extend_from_slice(&(payload_len as u64).to_le_bytes());
}

impl Journal {
    /// Starts this run's journal in `dir`, for the filter at `location`.
    ///
    /// # Errors
    /// When the directory cannot be made.
    pub(crate) fn start(dir: &Path, location: &str) -> Result<Journal> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot make the journal directory {}", dir.display()))?;
        Ok(Journal {
            dir: dir.to_path_buf(),
            location: location.to_string(),
            segments: VecDeque::new(),
            chunks: 0,
            acked: 0,
            verdicts: Vec::new(),
            unflushed: false,
            files_made: 0,
            run: format!(
                "{:020}-{}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
                std::process::id()
            ),
            partial: false,
            pending: VecDeque::new(),
            recent: VecDeque::new(),
            unread: if output_may_go_unread() {
                UNREAD_BYTES
            } else {
                0
            },
        })
    }

    fn newest(&mut self) -> Result<&mut Segment> {
        let full = self
            .segments
            .back()
            .is_none_or(|s| s.bytes >= SEGMENT_BYTES);
        if full {
            self.files_made += 1;
            // Names sort in the order runs started, then in the order of
            // their files; never one that exists (another machine's run on a
            // shared directory).
            let name = format!("log-{}-{:06}", self.run, self.files_made);
            let path = self.dir.join(&name);
            // Made under another name and locked before it takes its own:
            // a run replaying the directory meanwhile would otherwise lock
            // the new, empty file first, take it for a dead run's, and
            // remove it (this run's journal then written to no file).
            let fresh = self.dir.join(format!(".new-{name}"));
            let create = || OpenOptions::new().create_new(true).write(true).open(&fresh);
            let file = match create() {
                // Removed as empty by a run that ended meanwhile.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir_all(&self.dir).and_then(|()| create())
                }
                other => other,
            }
            .with_context(|| format!("cannot create the journal {}", fresh.display()))?;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                .with_context(|| format!("cannot lock the journal {}", fresh.display()))?;
            // A link, not a rename: it never replaces a file of that name.
            let named = std::fs::hard_link(&fresh, &path);
            let _ = std::fs::remove_file(&fresh);
            named.with_context(|| format!("cannot create the journal {}", path.display()))?;
            mark_location(&self.dir, &self.location);
            self.segments.push_back(Segment {
                path,
                file,
                first: self.chunks,
                slots: Vec::new(),
                bytes: 0,
            });
        }
        Ok(self.segments.back_mut().expect("a segment"))
    }

    fn segment_of(&self, seq: u64) -> Option<&Segment> {
        self.segments
            .iter()
            .find(|s| (s.first..s.end()).contains(&seq))
    }

    fn slots(&self, seq: u64) -> Option<(&Segment, Slots)> {
        let s = self.segment_of(seq)?;
        Some((s, s.slots[(seq - s.first) as usize]))
    }

    /// Writes down the verdicts of the newest chunk, if not yet done: as
    /// many as it has records, those never given (the run stopped before
    /// judging them: nothing was sent) [`PRESENT`].
    fn flush_verdicts(&mut self) -> Result<()> {
        if !self.unflushed {
            return Ok(());
        }
        self.unflushed = false;
        let seq = self.chunks - 1;
        let mut v = std::mem::take(&mut self.verdicts);
        let (s, slots) = self.slots(seq).expect("the chunk's slots");
        v.resize(slots.records as usize, PRESENT);
        s.fill(slots.verdicts_at, b'V', &v)
    }

    /// Writes down a chunk's `records` (`count` of them), synced, before
    /// they are judged.
    ///
    /// # Errors
    /// When the journal cannot be written or synced (then nothing of the
    /// chunk is in it).
    pub(crate) fn chunk(&mut self, records: &[u8], count: u64) -> Result<()> {
        self.flush_verdicts()?;
        let seq = self.chunks;
        let mut buf = Vec::with_capacity(3 * HEAD + records.len() + count as usize + 8);
        put(&mut buf, b'C', seq, records.len());
        buf.extend_from_slice(records);
        let verdicts_at = buf.len() as u64;
        put(&mut buf, OPEN, seq, count as usize);
        buf.resize(buf.len() + count as usize, 0);
        let written_at = buf.len() as u64;
        put(&mut buf, OPEN, seq, 8);
        buf.extend_from_slice(&[0; 8]);
        let s = self.newest()?;
        let at = s.bytes;
        if let Err(e) = s
            .file
            .write_all_at(&buf, at)
            .and_then(|()| s.file.sync_data())
        {
            // Nothing of it counts (a reader stops at a record cut short;
            // a later one must not follow it).
            let _ = s.file.set_len(at);
            let path = s.path.clone();
            if s.slots.is_empty() {
                let _ = std::fs::remove_file(&path);
                self.segments.pop_back();
            }
            return Err(e).with_context(|| {
                format!(
                    "cannot write the journal {} (the lines not yet judged were neither sent \
                     nor printed, and nothing is lost; free space there, or set {DIR_ENV} to \
                     a directory with room)",
                    path.display()
                )
            });
        }
        s.bytes += buf.len() as u64;
        s.slots.push(Slots {
            verdicts_at: at + verdicts_at,
            records: count,
            written_at: at + written_at,
        });
        self.chunks += 1;
        self.unflushed = true;
        self.pending.push_back(records.len() as u64);
        Ok(())
    }

    /// Adds the verdicts of the newest chunk's next records ([`PRESENT`],
    /// [`NEW`] or [`UNKNOWN`]).
    pub(crate) fn verdicts(&mut self, v: impl IntoIterator<Item = u8>) {
        self.verdicts.extend(v);
    }

    /// The oldest chunk not yet reported written was written: all its new
    /// records, or the first `new`.
    ///
    /// # Errors
    /// When the journal cannot be written.
    pub(crate) fn written(&mut self, new: Option<usize>) -> Result<()> {
        let seq = self.acked;
        if seq + 1 == self.chunks {
            self.flush_verdicts()?;
        }
        self.acked += 1;
        self.partial |= new.is_some();
        let n = new.map_or(ALL, |n| n as u64);
        let Some((s, slots)) = self.slots(seq) else {
            return Ok(());
        };
        s.fill(slots.written_at, b'W', &n.to_le_bytes())?;
        let bytes = self.pending.pop_front().unwrap_or(0);
        self.recent.push_back((seq, bytes));
        while !self.recent.is_empty()
            && (self.unread == 0
                || self.recent.len() > 1
                    && self.recent.iter().skip(1).map(|r| r.1).sum::<u64>() >= self.unread)
        {
            self.recent.pop_front();
        }
        // Files whose chunks were all written go (never the one being
        // filled, nor one with chunks that could still be retracted).
        let keep_from = self.recent.front().map_or(self.acked, |r| r.0);
        while self.segments.len() > 1 && self.segments[0].end() <= keep_from {
            let s = self.segments.pop_front().expect("a segment");
            let _ = std::fs::remove_file(&s.path);
        }
        Ok(())
    }

    /// The output was closed by its reader (`| head`): what the chunks
    /// written last wrote may never have been read (it sat in a pipe's
    /// buffer), so they count as not written and the next run prints their
    /// new records again (perhaps twice, never lost).
    pub(crate) fn retract_recent(&mut self) {
        for &(seq, _) in &self.recent {
            if let Some((s, slots)) = self.slots(seq) {
                let _ = s.file.write_all_at(&[OPEN], slots.written_at);
            }
        }
        self.partial = true;
    }

    /// Ends the journal: [`Journal::close`] when the run went well (`ok`),
    /// [`Journal::keep`] otherwise.
    pub(crate) fn end(self, ok: bool) {
        if ok { self.close() } else { self.keep() }
    }

    /// Ends the journal of a run that went well: its files go (and the
    /// directory, when no other run has files there), unless some lines
    /// judged new were not written (the sink stopped early): then they stay
    /// for the next run, as after a failure ([`Journal::keep`]).
    pub(crate) fn close(mut self) {
        if self.partial || self.acked < self.chunks {
            return self.keep();
        }
        for s in self.segments.drain(..) {
            let _ = std::fs::remove_file(&s.path);
        }
        remove_if_empty(&self.dir);
    }

    /// Ends the journal of a run that failed: the verdicts known are written
    /// down, and the files stay for the next run.
    pub(crate) fn keep(mut self) {
        let _ = self.flush_verdicts();
        for s in &self.segments {
            let _ = s.file.sync_data();
        }
    }

    /// Prints, to `out`, what the dead runs journalled in `dir` had judged
    /// new and not written (each record with `term` after it), then removes
    /// their journals. Records whose verdict is unknown are given to
    /// `holds` (all at once, in order), which says which the filter holds:
    /// those are printed. Journals of live runs (locked) are left alone.
    /// Returns the records printed.
    ///
    /// # Errors
    /// When a journal cannot be read, `holds` fails, or `out` cannot be
    /// written: the journals stay.
    pub(crate) fn replay(
        dir: &Path,
        term: u8,
        holds: &mut Asker<'_>,
        out: &mut dyn Write,
    ) -> Result<u64> {
        remove_unnamed(dir);
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(0);
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("run-") || n.starts_with("log-")
                })
            })
            .collect();
        // Oldest run first, each run's files in the order it made them
        // (`run-` files, of older versions, before `log-` ones).
        paths.sort();
        let mut held = Vec::new();
        let mut bytes = Vec::new();
        for p in &paths {
            let Ok(mut f) = OpenOptions::new().read(true).write(true).open(p) else {
                continue;
            };
            if rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err()
            {
                continue; // a live run's
            }
            // Replayed and removed by another run since we listed it.
            if f.metadata().is_ok_and(|m| m.nlink() == 0) {
                continue;
            }
            let mut b = Vec::new();
            f.read_to_end(&mut b)
                .with_context(|| format!("cannot read the journal {}", p.display()))?;
            bytes.push(b);
            held.push((p.clone(), f));
        }
        let mut owed = Vec::new();
        for b in &bytes {
            owed_by(b, term, &mut owed);
        }
        let unknown: Vec<&[u8]> = owed.iter().filter(|o| !o.1).map(|o| o.0).collect();
        let held_now = if unknown.is_empty() {
            Vec::new()
        } else {
            holds(&unknown).context(
                "cannot ask the filter about lines whose test-and-set replies an earlier run lost \
                 (its journal stays for the next run)",
            )?
        };
        let mut asked = held_now.into_iter();
        let mut printed = 0;
        for (r, sure) in owed {
            if !sure && !asked.next().unwrap_or(false) {
                continue;
            }
            out.write_all(r)
                .and_then(|()| out.write_all(&[term]))
                .context("cannot write standard output")?;
            printed += 1;
        }
        out.flush().context("cannot write standard output")?;
        for (p, _) in &held {
            let _ = std::fs::remove_file(p);
        }
        Ok(printed)
    }
}

/// Adds, to `owed`, the records of one journal file (see
/// [`Journal::replay`]) that are to be printed (`true`) or asked of the
/// filter (`false`), in order.
fn owed_by<'a>(b: &'a [u8], term: u8, owed: &mut Vec<(&'a [u8], bool)>) {
    struct Entry<'a> {
        records: &'a [u8],
        verdicts: Option<&'a [u8]>,
        written: Option<u64>,
    }
    let mut chunks: std::collections::BTreeMap<u64, Entry> = Default::default();
    let mut at = 0;
    while at + HEAD <= b.len() {
        let kind = b[at];
        let seq = u64::from_le_bytes(b[at + 1..at + 9].try_into().expect("8"));
        let len = u64::from_le_bytes(b[at + 9..at + HEAD].try_into().expect("8")) as usize;
        let Some(payload) = at
            .checked_add(HEAD + len)
            .and_then(|end| b.get(at + HEAD..end))
        else {
            break; // cut short by the kill: never sent
        };
        at += HEAD + len;
        match kind {
            b'C' => {
                chunks.insert(
                    seq,
                    Entry {
                        records: payload,
                        verdicts: None,
                        written: None,
                    },
                );
            }
            b'V' => {
                if let Some(e) = chunks.get_mut(&seq) {
                    e.verdicts = Some(payload);
                }
            }
            b'W' if len == 8 => {
                if let Some(e) = chunks.get_mut(&seq) {
                    e.written = Some(u64::from_le_bytes(payload.try_into().expect("8")));
                }
            }
            b'R' => {
                if let Some(e) = chunks.get_mut(&seq) {
                    e.written = None;
                }
            }
            OPEN => {}
            _ => break,
        }
    }
    for e in chunks.values() {
        let skip = e.written.unwrap_or(0);
        let mut new_seen = 0;
        let records = e.records.strip_suffix(&[term]).unwrap_or(e.records);
        if records.is_empty() && e.records.is_empty() {
            continue;
        }
        for (i, r) in records.split(|&c| c == term).enumerate() {
            // No verdict: the run was killed before it wrote them down.
            match e
                .verdicts
                .and_then(|v| v.get(i))
                .copied()
                .unwrap_or(UNKNOWN)
            {
                NEW => {
                    new_seen += 1;
                    if new_seen > skip {
                        owed.push((r, true));
                    }
                }
                UNKNOWN => owed.push((r, false)),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filter that holds the records in `held`.
    fn holding(held: &[&str]) -> impl FnMut(&[&[u8]]) -> Result<Vec<bool>> {
        let held: Vec<Vec<u8>> = held.iter().map(|s| s.as_bytes().to_vec()).collect();
        move |rs: &[&[u8]]| Ok(rs.iter().map(|r| held.iter().any(|h| h == r)).collect())
    }

    fn replay(dir: &Path, held: &[&str]) -> (String, u64) {
        let mut out = Vec::new();
        let n = Journal::replay(dir, b'\n', &mut holding(held), &mut out).unwrap();
        (String::from_utf8(out).unwrap(), n)
    }

    fn v(bits: &[u8]) -> Vec<u8> {
        bits.to_vec()
    }

    #[test]
    fn replays_what_was_judged_new_and_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path(), "redis://h:1/f").unwrap();
        j.chunk(b"a\nb\nc\n", 3).unwrap();
        j.verdicts(v(&[NEW, PRESENT, NEW]));
        j.written(None).unwrap();
        j.chunk(b"d\ne\nf\n", 3).unwrap();
        j.verdicts(v(&[NEW, NEW, PRESENT]));
        j.chunk(b"i\nj\nk", 3).unwrap();
        j.verdicts(v(&[NEW, NEW, NEW]));
        j.written(None).unwrap(); // chunk 1 written
        j.written(Some(1)).unwrap(); // chunk 2: only its first new one
        j.chunk(b"g\nh\n", 2).unwrap(); // killed before its verdicts: asked
        // A live run's journal is not touched.
        assert_eq!(replay(dir.path(), &[]), (String::new(), 0));
        drop(j); // killed: the lock goes with the process
        // Chunk 3's verdicts were never written down: of its records, the
        // one the filter holds is printed.
        assert_eq!(replay(dir.path(), &["h"]), ("j\nk\nh\n".into(), 3));
        // Replayed journals are gone.
        assert_eq!(replay(dir.path(), &["h"]), (String::new(), 0));
    }

    #[test]
    fn verdicts_never_obtained_are_not_new() {
        // A run that failed while judging a chunk (a server stalled while
        // its shards were read): the pieces after the failure got no
        // verdicts, and nothing of them was sent.
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path(), "redis://h:1/f").unwrap();
        j.chunk(b"a\nb\nc\nd\n", 4).unwrap();
        j.verdicts(v(&[NEW, PRESENT]));
        j.keep();
        assert_eq!(replay(dir.path(), &["a", "c", "d"]), ("a\n".into(), 1));
    }

    #[test]
    fn lost_replies_are_asked_of_the_filter() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path(), "redis://h:1/f").unwrap();
        j.chunk(b"a\nb\nc\nd\n", 4).unwrap();
        j.verdicts(v(&[NEW, UNKNOWN, UNKNOWN, PRESENT]));
        // The chunk was written (its one new line), and the run stopped.
        j.written(None).unwrap();
        j.keep();
        // The server recorded c, not b: c is owed, a was printed.
        assert_eq!(replay(dir.path(), &["a", "c", "d"]), ("c\n".into(), 1));
    }

    #[test]
    fn a_failing_filter_keeps_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path(), "redis://h:1/f").unwrap();
        j.chunk(b"a\n", 1).unwrap();
        j.verdicts(v(&[UNKNOWN]));
        j.keep();
        let mut out = Vec::new();
        let mut down = |_: &[&[u8]]| -> Result<Vec<bool>> { anyhow::bail!("server down") };
        assert!(Journal::replay(dir.path(), b'\n', &mut down, &mut out).is_err());
        assert_eq!(replay(dir.path(), &["a"]), ("a\n".into(), 1));
    }

    #[test]
    fn a_run_that_stopped_early_keeps_what_it_owes() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path(), "redis://h:1/f").unwrap();
        j.chunk(b"a\nb\nc\n", 3).unwrap();
        j.verdicts(v(&[NEW, NEW, NEW]));
        j.chunk(b"d\n", 1).unwrap();
        j.verdicts(v(&[NEW]));
        j.written(Some(1)).unwrap();
        j.close();
        assert_eq!(replay(dir.path(), &[]).0, "b\nc\nd\n");
    }

    /// A closed output takes back the chunks written last when standard
    /// output is a pipe (they may sit unread in it); a file or a terminal
    /// holds nothing unread, so nothing is printed again. (The test's own
    /// stdout must not matter: the kind is set.)
    #[test]
    fn a_closed_output_takes_back_the_last_chunks_of_a_pipe_only() {
        for (unread, again) in [(UNREAD_BYTES, "a\nb\nc\n"), (0, "")] {
            let dir = tempfile::tempdir().unwrap();
            let mut j = Journal::start(dir.path(), "redis://h:1/f").unwrap();
            j.unread = unread;
            for r in [&b"a\n"[..], b"b\n", b"c\n"] {
                j.chunk(r, 1).unwrap();
                j.verdicts(v(&[NEW]));
                j.written(None).unwrap();
            }
            j.retract_recent();
            j.close();
            assert_eq!(replay(dir.path(), &[]).0, again, "unread {unread}");
        }
    }

    #[test]
    fn files_left_unnamed_go_when_old_and_unlocked() {
        let dir = tempfile::tempdir().unwrap();
        let make = |name: &str, age: u64| {
            let p = dir.path().join(name);
            let f = File::create(&p).unwrap();
            let t = std::time::SystemTime::now() - std::time::Duration::from_secs(age);
            f.set_modified(t).unwrap();
            (p, f)
        };
        let (old, _f1) = make(".new-log-a-000001", UNNAMED_SECS + 5);
        let (fresh, _f2) = make(".new-log-b-000001", 1);
        let (locked, f3) = make(".new-log-c-000001", UNNAMED_SECS + 5);
        rustix::fs::flock(&f3, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        let (other, _f4) = make(".other", UNNAMED_SECS + 5);
        let (printed, n) = replay(dir.path(), &[]);
        assert_eq!((printed.as_str(), n), ("", 0));
        assert!(!old.exists(), "an old, unlocked one goes");
        assert!(fresh.exists(), "a live run may be about to name it");
        assert!(locked.exists(), "a live run holds it");
        assert!(other.exists(), "not a journal's");
    }

    #[test]
    fn a_clean_run_leaves_nothing() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("f-0123456789abcdef");
        let mut j = Journal::start(&dir, "redis://h:1/f").unwrap();
        j.chunk(b"a\n", 1).unwrap();
        j.verdicts(v(&[NEW]));
        j.written(None).unwrap();
        j.close();
        assert!(!dir.exists(), "the empty directory stays");
        // Another run's files keep it.
        let mut other = Journal::start(&dir, "redis://h:1/f").unwrap();
        other.chunk(b"b\n", 1).unwrap();
        let mut j = Journal::start(&dir, "redis://h:1/f").unwrap();
        j.chunk(b"a\n", 1).unwrap();
        j.verdicts(v(&[NEW]));
        j.written(None).unwrap();
        j.close();
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left.iter().any(|f| f == LOCATION_FILE), "{left:?}");
    }

    #[test]
    fn a_record_cut_short_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path(), "redis://h:1/f").unwrap();
        j.chunk(b"a\nb\n", 2).unwrap();
        j.verdicts(v(&[NEW, NEW]));
        j.keep();
        let path = std::fs::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut b = std::fs::read(&path).unwrap();
        b.extend_from_slice(&[b'C', 1, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 0, 0, 0, 0, b'x']);
        std::fs::write(&path, b).unwrap();
        assert_eq!(replay(dir.path(), &[]).0, "a\nb\n");
    }

    #[test]
    fn nothing_is_appended_after_a_chunk_is_judged() {
        // Room for the chunk is taken when it is written down; verdicts,
        // the written mark and a retraction are filled in place, so a
        // full disk cannot fail them.
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::start(dir.path(), "redis://h:1/f").unwrap();
        j.unread = UNREAD_BYTES;
        j.chunk(b"a\nb\n", 2).unwrap();
        let path = j.segments[0].path.clone();
        let len = std::fs::metadata(&path).unwrap().len();
        j.verdicts(v(&[NEW, PRESENT]));
        j.written(None).unwrap();
        j.retract_recent();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        j.keep();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        assert_eq!(replay(dir.path(), &[]).0, "a\n");
    }

    #[test]
    fn older_journals_are_replayed() {
        // seen 0.3's format: a record per append, verdicts maybe short.
        let dir = tempfile::tempdir().unwrap();
        let mut b = Vec::new();
        for (kind, seq, payload) in [
            (b'C', 0u64, &b"a\nb\nc\n"[..]),
            (b'V', 0, &[1, 0][..]),
            (b'C', 1, b"d\n"),
            (b'V', 1, &[1]),
            (b'W', 1, &ALL.to_le_bytes()),
        ] {
            put(&mut b, kind, seq, payload.len());
            b.extend_from_slice(payload);
        }
        std::fs::write(dir.path().join("run-00000000000000000001-1-000001"), b).unwrap();
        // a: new, b: present, c: no verdict (asked: held), d: written.
        assert_eq!(replay(dir.path(), &["c"]), ("a\nc\n".into(), 2));
    }

    #[test]
    fn orphans_are_the_other_filters_of_the_name_and_location() {
        let base = tempfile::tempdir().unwrap();
        let at = |name: &str, meta: &[u8]| {
            let id = xxhash_rust::xxh3::xxh3_64(meta);
            base.path().join(format!("{name}-{id:016x}"))
        };
        let here = "redis://h:1/crawl";
        let journal_in = |dir: &Path, location: &str| {
            let mut j = Journal::start(dir, location).unwrap();
            j.chunk(b"a\n", 1).unwrap();
            j.keep();
        };
        let now = at("crawl", b"new meta");
        let old = at("crawl", b"old meta");
        let elsewhere = at("crawl", b"another server's");
        let longer = at("crawl-2", b"old meta");
        let older = at("crawl", b"seen 0.3");
        let empty = at("crawl", b"seen 0.3, empty");
        journal_in(&now, here);
        journal_in(&old, here);
        journal_in(&elsewhere, "redis://other:1/crawl");
        journal_in(&longer, "redis://h:1/crawl-2");
        std::fs::create_dir_all(&older).unwrap();
        std::fs::write(older.join("run-1-1-000001"), b"12345").unwrap();
        std::fs::create_dir_all(&empty).unwrap();
        let found = orphans("crawl", &now, here);
        let bytes = std::fs::read_dir(&old)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name() != LOCATION_FILE)
            .map(|e| e.metadata().unwrap().len())
            .sum();
        let mut want = vec![
            Orphan {
                dir: old.clone(),
                files: 1,
                bytes,
                same_location: true,
            },
            Orphan {
                dir: older.clone(),
                files: 1,
                bytes: 5,
                same_location: false,
            },
        ];
        want.sort_by(|a, b| a.dir.cmp(&b.dir));
        assert_eq!(found, want);
        assert!(!empty.exists(), "an empty directory is removed");
        assert!(remove_orphan(
            found.iter().find(|o| o.same_location).unwrap()
        ));
        assert!(!old.exists() && now.exists() && elsewhere.exists() && longer.exists());
        // One that a live run holds stays.
        let mut live = Journal::start(&old, here).unwrap();
        live.chunk(b"b\n", 1).unwrap();
        let o = orphans("crawl", &now, here);
        assert!(!remove_orphan(o.iter().find(|o| o.same_location).unwrap()));
        drop(live);
    }
}
