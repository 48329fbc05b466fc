//! Line sources: files and standard input, in chunks that always end on a
//! record boundary, so records are split in place (`crate::scan`) and never
//! copied or allocated one by one.
//!
//! A regular file is mapped one window (about a chunk) at a time when the
//! reader is told to ([`Reader::map_files`]): the records are read where they
//! lie in the page cache, without the kernel's copy into a buffer, and each
//! window is unmapped once its chunk is written, so peak memory stays a few
//! chunks whatever the input size; so is a regular file redirected to standard
//! input. Everything else (pipes, terminals, pseudo-files that report no size,
//! a record longer than a window, a last record without terminator, what is
//! appended to a file past the size it had) is read with large `read` calls
//! into reusable buffers.

use crate::hash::{Hash128, StreamHash};
use anyhow::{Context, Result, bail};
use memmap2::{Mmap, MmapOptions};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Maps `len` bytes of an input file from `offset` (any: memmap2 aligns the
/// mapping itself) read-only, for the counting pass and the reader's windows.
///
/// # Errors
/// When the range cannot be mapped (empty, a file system without mmap).
pub fn map_input(file: &File, offset: u64, len: usize) -> std::io::Result<Mmap> {
    // SAFETY: the mapping is only read as plain bytes (`&[u8]`) and dropped at
    // the end of its window. Another process appending to the file changes
    // nothing we read; one truncating it during the pass would raise SIGBUS and
    // end the process (as with `rg`'s maps; see the README's limits), and so
    // would a read error on its device. Bytes changing under us are never
    // unsafe, only wrong: a count for a filter of another size, or (in the
    // main pass) a record printed as it now is rather than as it was judged;
    // every slice is bounds-checked against the window.
    unsafe { MmapOptions::new().offset(offset).len(len).map(file) }
}

/// Where records come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Standard input.
    Stdin,
    /// A named file.
    File(PathBuf),
}

impl Source {
    /// Name to use in messages.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "standard input".to_string(),
            Source::File(p) => p.display().to_string(),
        }
    }
}

/// Turns the FILE arguments into sources: none, or `-`, means standard input.
pub fn sources(files: &[PathBuf]) -> Vec<Source> {
    if files.is_empty() {
        return vec![Source::Stdin];
    }
    files
        .iter()
        .map(|f| {
            if f.as_os_str() == "-" {
                Source::Stdin
            } else {
                Source::File(f.clone())
            }
        })
        .collect()
}

fn open_file(path: &Path) -> Result<File> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        bail!("{} is a directory: give files of lines", path.display());
    }
    Ok(file)
}

/// Warns when a regular file starts like a compressed one: `seen` reads raw
/// bytes, so `seen dedup logs.gz` would deduplicate compressed data. Reads the
/// first bytes with `pread`, leaving the file offset alone.
fn warn_if_compressed(f: &File, path: &Path) {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 6];
    let n = f.read_at(&mut head, 0).unwrap_or(0);
    let (kind, tool) = match &head[..n] {
        [0x1f, 0x8b, ..] => ("gzip", "zcat"),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => ("zstd", "zstdcat"),
        [0xfd, b'7', b'z', b'X', b'Z', 0] => ("xz", "xzcat"),
        [b'B', b'Z', b'h', ..] => ("bzip2", "bzcat"),
        _ => return,
    };
    crate::say!(
        "seen: warning: {} looks {kind}-compressed: seen reads raw bytes, so its lines are \
         compressed data (decompress first: `{tool} {} | seen ...`)",
        path.display(),
        path.display()
    );
}

/// The first source that cannot be read twice (standard input, a pipe, a
/// device), checked without opening anything: opening a named pipe would
/// connect to, and then cut off, its writer.
pub fn uncountable(sources: &[Source]) -> Option<String> {
    sources
        .iter()
        .find(|s| match s {
            Source::Stdin => true,
            // Missing files and directories count as countable here: reading
            // them fails later with a message that names them.
            Source::File(p) => std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir()),
        })
        .map(Source::name)
}

/// Total bytes of the sources when all are regular files (for progress).
pub fn total_bytes(sources: &[Source]) -> Option<u64> {
    sources
        .iter()
        .map(|s| match s {
            Source::Stdin => None,
            Source::File(p) => std::fs::metadata(p)
                .ok()
                .filter(std::fs::Metadata::is_file)
                .map(|m| m.len()),
        })
        .sum()
}

/// Counts the records of every source when all are regular files (a last record
/// without terminator counts); `None` when one is standard input or not a regular
/// file (a pipe cannot be read twice). A large file is counted by up to
/// `threads` (at most [`MAX_COUNT_THREADS`]) threads at once, in mapped windows
/// when `map`, else with positioned reads.
///
/// # Errors
/// When a file cannot be opened or read.
pub fn count_records(
    sources: &[Source],
    term: u8,
    threads: usize,
    map: bool,
) -> Result<Option<u64>> {
    Ok(estimate_past(sources, term, threads, map, u64::MAX)?.map(Records::lines))
}

/// The records of the sources, as [`estimate_records`] found them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Records {
    /// Every file was counted.
    Counted(u64),
    /// At least one file was sampled: an estimate (see [`estimate_records`]).
    Estimated(u64),
}

impl Records {
    /// The number, counted or estimated.
    pub fn lines(self) -> u64 {
        match self {
            Records::Counted(n) | Records::Estimated(n) => n,
        }
    }
}

/// Files at least this large are sampled by [`estimate_records`] rather than
/// counted (the `SEEN_SAMPLE_MIN_BYTES` environment variable, a test switch,
/// sets another threshold).
pub const SAMPLE_MIN_BYTES: u64 = 64 << 20;
/// Windows a sampled file is read in, evenly spaced from its start to its end.
const SAMPLES: u64 = 256;
/// Bytes of each sample window.
const SAMPLE_WINDOW: usize = 64 << 10;

/// Like [`count_records`], but a file of [`SAMPLE_MIN_BYTES`] or more is not
/// read through: [`SAMPLES`] windows of 64 KiB spread evenly over it are
/// counted (16 MiB, 2 % of an 800 MB file) and its records estimated as their
/// density times its size, at least one per 4 KiB. The estimate may be off
/// either way for a file whose line lengths change at a scale finer than the
/// spacing of the windows: callers must stay correct whatever it says.
///
/// # Errors
/// As [`count_records`].
pub fn estimate_records(
    sources: &[Source],
    term: u8,
    threads: usize,
    map: bool,
) -> Result<Option<Records>> {
    let min = crate::tuning::get()
        .sample_min_bytes
        .unwrap_or(SAMPLE_MIN_BYTES);
    estimate_past(sources, term, threads, map, min)
}

/// [`estimate_records`] sampling files of `min` bytes or more (none with
/// `u64::MAX`: [`count_records`]).
fn estimate_past(
    sources: &[Source],
    term: u8,
    threads: usize,
    map: bool,
    min: u64,
) -> Result<Option<Records>> {
    if uncountable(sources).is_some() {
        return Ok(None);
    }
    let (mut total, mut estimated) = (0u64, false);
    for s in sources {
        let Source::File(path) = s else {
            return Ok(None);
        };
        let file = open_file(path)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let n = if len >= min.max(1) {
            estimated = true;
            sample_file(&file, term, len)
        } else {
            count_file(&file, term, threads, map)
        };
        total += n.with_context(|| format!("cannot read {}", path.display()))?;
    }
    Ok(Some(if estimated {
        Records::Estimated(total)
    } else {
        Records::Counted(total)
    }))
}

/// The records of a file of `len` bytes estimated from [`SAMPLES`] windows
/// (see [`estimate_records`]).
fn sample_file(file: &File, term: u8, len: u64) -> io::Result<u64> {
    let window = (SAMPLE_WINDOW as u64).min(len);
    let mut buf = vec![0u8; window as usize];
    let (mut bytes, mut terms) = (0u64, 0u64);
    for i in 0..SAMPLES {
        stop_if_signalled()?;
        let at = (len - window) * i / (SAMPLES - 1);
        let n = read_at_most(file, &mut buf, at)?;
        bytes += n as u64;
        terms += memchr::memchr_iter(term, &buf[..n]).count() as u64;
    }
    // Nothing read: the file shrank to nothing since its size was taken.
    let density = if bytes == 0 {
        0.0
    } else {
        terms as f64 / bytes as f64
    };
    // One more for a last record without terminator.
    Ok(((density * len as f64).ceil() as u64).max(len / 4096) + 1)
}

/// Files at least this large are counted in parallel windows; smaller ones,
/// and pseudo-files whose size means nothing (`/proc` says 0), are read to
/// their end.
const PARALLEL_COUNT_BYTES: u64 = 64 << 20;
/// Bytes of a file counted as one piece of work.
const COUNT_WINDOW: u64 = 16 << 20;
/// Threads counting one file at most: with [`COUNT_WINDOW`], at most 64 MiB of
/// it is mapped (or buffered) at once, whatever `-j` says.
const MAX_COUNT_THREADS: usize = 4;

/// [`count_records`] of one open file. A large file's reported size is split
/// into windows shared out to up to [`MAX_COUNT_THREADS`] threads (window `i`
/// to thread `i % threads`), each mapped (no copy, unmapped after) or, when it
/// cannot be mapped or `map` is false, read with positioned reads; then, and
/// for any other file, whatever lies past the size is read to the end.
fn count_file(file: &File, term: u8, threads: usize, map: bool) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    let mut total = 0;
    let mut pos = 0;
    if len >= PARALLEL_COUNT_BYTES {
        total = count_windows(file, term, threads.min(MAX_COUNT_THREADS), map, len)?;
        pos = len;
    }
    let mut buf = vec![0u8; 1 << 20];
    let mut last = None;
    loop {
        stop_if_signalled()?;
        let n = read_at_most(file, &mut buf, pos)?;
        if n == 0 {
            break;
        }
        total += memchr::memchr_iter(term, &buf[..n]).count() as u64;
        last = Some(buf[n - 1]);
        pos += n as u64;
    }
    if last.is_none() && pos > 0 {
        let mut b = [term];
        if file.read_at(&mut b, pos - 1)? == 1 {
            last = Some(b[0]);
        }
    }
    Ok(total + u64::from(last.is_some_and(|b| b != term)))
}

/// Reads from `offset` until `buf` is full or the file ends, retrying when
/// interrupted; returns the bytes read.
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Ends a count early when SIGINT or SIGTERM has arrived (counting a large
/// uncached file can take many seconds); the caller exits with 128 + signal.
fn stop_if_signalled() -> io::Result<()> {
    if crate::signals::received() == 0 {
        return Ok(());
    }
    Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"))
}

/// The records in the first `len` bytes of `file` (as far as it still goes),
/// counted in [`COUNT_WINDOW`]s by `threads` threads.
fn count_windows(file: &File, term: u8, threads: usize, map: bool, len: u64) -> io::Result<u64> {
    let windows = len.div_ceil(COUNT_WINDOW);
    let threads = (threads as u64).clamp(1, windows.max(1));
    let share = |t: u64| -> io::Result<u64> {
        let mut buf = Vec::new();
        let mut n = 0u64;
        for i in (t..windows).step_by(threads as usize) {
            stop_if_signalled()?;
            let start = i * COUNT_WINDOW;
            let want = COUNT_WINDOW.min(len - start) as usize;
            if map && let Ok(m) = map_input(file, start, want) {
                n += memchr::memchr_iter(term, &m).count() as u64;
                continue;
            }
            crate::memory::resize(&mut buf, want, "counting the input")?;
            let got = read_at_most(file, &mut buf, start)?;
            n += memchr::memchr_iter(term, &buf[..got]).count() as u64;
            if got < want {
                // The file shrank meanwhile: nothing more to count.
                break;
            }
        }
        Ok(n)
    };
    std::thread::scope(|s| {
        let others: Vec<_> = (1..threads).map(|t| s.spawn(move || share(t))).collect();
        let mut total = share(0)?;
        for h in others {
            total += h.join().expect("a counting thread panicked")?;
        }
        Ok(total)
    })
}

/// Reads all sources in order, in chunks of whole records.
pub struct Reader {
    sources: Vec<Source>,
    next: usize,
    /// The open source, its name, and whether it is a pipe/terminal (not a regular file).
    current: Option<(Box<dyn Read + Send>, String, bool)>,
    carry: Vec<u8>,
    term: u8,
    pending: Option<anyhow::Error>,
    drained: bool,
    /// Hash records longer than this many bytes as they stream by, under this
    /// seed, instead of holding them ([`Reader::stream_long_records`]).
    long: Option<(usize, u64)>,
    /// The hash of the long record just streamed.
    prehashed: Option<Hash128>,
    /// Map regular files a window at a time ([`Reader::map_files`]).
    map: bool,
    /// The open source's file, when it is a regular file that may be mapped.
    mappable: Option<File>,
    /// The window the records returned by the last [`Reader::fill`] lie in.
    mapped: Option<Window>,
}

/// Standard input as a file of its own (a duplicate descriptor, sharing the
/// offset), when it is a regular file. Reading it through this rather than
/// `io::stdin()` keeps std's buffer from reading ahead of the shared offset,
/// which mapping starts from.
fn stdin_file() -> Option<File> {
    use std::os::fd::AsFd;
    let f = File::from(io::stdin().as_fd().try_clone_to_owned().ok()?);
    f.metadata().is_ok_and(|m| m.is_file()).then_some(f)
}

/// Whether a regular file reports a size: pseudo-files (`/proc`, `/sys`) say
/// 0 and are only read, never mapped or probed at their "end".
fn has_size(f: &File) -> bool {
    f.metadata().is_ok_and(|m| m.len() > 0)
}

/// What [`Reader::map_window`] did.
enum MapStep {
    /// Records were mapped.
    Mapped(Window),
    /// The open file has ended.
    Ended,
    /// Read on instead.
    Read,
}

/// Whole records of a file, mapped where they lie.
#[derive(Debug)]
pub struct Window {
    map: Mmap,
    len: usize,
}

impl Window {
    /// The records, each ending with the terminator.
    pub fn bytes(&self) -> &[u8] {
        &self.map[..self.len]
    }
}

/// What [`Reader::fill`] produced: where the records are.
#[derive(Debug)]
pub enum Filled {
    /// `len` bytes of whole records at the start of the buffer; `drained`: a
    /// pipe paused after them (sinks should flush, so the lines reach the
    /// reader downstream now).
    Buffered { len: usize, drained: bool },
    /// Whole records of a file, mapped where they lie (the buffer untouched).
    Mapped(Window),
    /// One record longer than the streaming limit, hashed as it went by: the
    /// buffer holds just its terminator.
    Streamed(Hash128),
}

/// A read shorter than this (and than asked for) means the pipe is empty for now.
pub const DRAINED: usize = 64 << 10;

impl Reader {
    /// A reader over `sources`; nothing is opened until the first [`Reader::fill`].
    pub fn new(sources: &[Source], term: u8) -> Reader {
        Reader {
            sources: sources.to_vec(),
            next: 0,
            current: None,
            carry: Vec::new(),
            term,
            pending: None,
            drained: false,
            long: None,
            prehashed: None,
            map: false,
            mappable: None,
            mapped: None,
        }
    }

    /// From now on, records of regular files are mapped rather than read, a
    /// window of about the chunk size at a time: [`Reader::fill`] then returns
    /// [`Filled::Mapped`] windows instead of
    /// records in the buffer. Another program truncating the file meanwhile
    /// raises SIGBUS (see `crate::signals::explain_sigbus`).
    pub fn map_files(&mut self) {
        self.map = true;
    }

    /// Closes the open source.
    fn close(&mut self) {
        self.current = None;
        self.mappable = None;
    }

    /// Maps the whole records of the open source, when it can be mapped, from
    /// where reading stands, up to about `target` bytes.
    fn map_window(&mut self, target: usize) -> MapStep {
        let Some(file) = self.mappable.as_mut() else {
            return MapStep::Read;
        };
        // The carry is the file's bytes just before its offset.
        let (Ok(offset), Ok(meta)) = (file.stream_position(), file.metadata()) else {
            return MapStep::Read;
        };
        let Some(pos) = offset.checked_sub(self.carry.len() as u64) else {
            // The offset did not advance with reading: not a plain file.
            self.mappable = None;
            return MapStep::Read;
        };
        let size = meta.len();
        if pos >= size {
            // At the reported end: ended, unless something was appended since
            // (a positioned read, which leaves the offset alone, tells).
            if !self.carry.is_empty() {
                return MapStep::Read;
            }
            use std::os::unix::fs::FileExt;
            return match file.read_at(&mut [0u8], pos) {
                Ok(0) => MapStep::Ended,
                _ => MapStep::Read,
            };
        }
        let want = usize::try_from(size - pos)
            .unwrap_or(usize::MAX)
            .min(target.max(1));
        let Ok(map) = map_input(file, pos, want) else {
            // A file system without mmap: read the file instead.
            self.mappable = None;
            return MapStep::Read;
        };
        // No terminator in the window: a record longer than it, or a last one
        // without terminator. Reading handles both.
        let Some(last) = memchr::memrchr(self.term, &map) else {
            return MapStep::Read;
        };
        let len = last + 1;
        if file.seek(SeekFrom::Start(pos + len as u64)).is_err() {
            self.mappable = None;
            return MapStep::Read;
        }
        self.carry.clear();
        MapStep::Mapped(Window { map, len })
    }

    /// From now on, a record longer than `bytes` is not held in memory: it is
    /// hashed (under `seed`) as it is read, and [`Reader::fill`] returns it as
    /// [`Filled::Streamed`] with its hash. For callers
    /// that need only the hashes of long records (`build`, `query -c`/`-q`),
    /// so memory stays at `bytes` whatever the record's length.
    pub fn stream_long_records(&mut self, bytes: usize, seed: u64) {
        self.long = Some((bytes.max(1), seed));
    }

    /// Hashes the record whose first `len` bytes are in `buf` (no terminator
    /// among them) by reading on to its terminator or the end of its source,
    /// reusing `buf`; what follows the terminator is carried to the next fill.
    fn stream_record(&mut self, buf: &mut [u8], len: usize, seed: u64) -> Result<Hash128> {
        let mut h = StreamHash::new(seed);
        h.update(&buf[..len]);
        // Progress counts the record's bytes here; the pipeline counts its
        // terminator (the chunk returned), and the carry when it comes round.
        crate::progress::advance(len as u64, 0);
        while self.current.is_some() {
            let n = self.read_current(buf)?;
            if n == 0 {
                // A source's last record ends with it.
                self.close();
                break;
            }
            if let Some(p) = memchr::memchr(self.term, &buf[..n]) {
                h.update(&buf[..p]);
                crate::progress::advance(p as u64, 0);
                self.carry.extend_from_slice(&buf[p + 1..n]);
                break;
            }
            h.update(&buf[..n]);
            crate::progress::advance(n as u64, 0);
        }
        Ok(h.finish())
    }

    /// Reads from the open source into `buf`, retrying when interrupted. A
    /// failed read ends the input (no later source is read); the error names
    /// the source.
    fn read_current(&mut self, buf: &mut [u8]) -> Result<usize> {
        let (reader, name, _) = self.current.as_mut().expect("a source is open");
        loop {
            match reader.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let e = anyhow::Error::new(e).context(format!("cannot read {name}"));
                    self.close();
                    self.next = self.sources.len();
                    return Err(e);
                }
            }
        }
    }

    fn open_next(&mut self) -> Result<bool> {
        let Some(source) = self.sources.get(self.next) else {
            return Ok(false);
        };
        self.next += 1;
        let (reader, stream): (Box<dyn Read + Send>, bool) = match source {
            // /dev/stdin resolves to whatever fd 0 is: a redirected file is regular.
            Source::Stdin => match stdin_file() {
                // A redirected file (`seen dedup < urls.txt`) is read, or
                // mapped, as a file from where its offset stands.
                Some(f) => {
                    if self.map && has_size(&f) {
                        self.mappable = f.try_clone().ok();
                    }
                    (Box::new(f), false)
                }
                None => (Box::new(io::stdin()), true),
            },
            Source::File(p) => {
                let f = open_file(p)?;
                let regular = f.metadata().is_ok_and(|m| m.is_file());
                if regular {
                    warn_if_compressed(&f, p);
                    if self.map && has_size(&f) {
                        // A second descriptor of the same open file: they
                        // share the offset that reading and mapping advance.
                        self.mappable = f.try_clone().ok();
                    }
                }
                (Box::new(f), !regular)
            }
        };
        self.current = Some((reader, source.name(), stream));
        Ok(true)
    }

    /// Fills `buf` with at least `target` bytes of whole records when the input
    /// has that many (more when one record is longer: the buffer grows), every
    /// record ending with the terminator (one is added to a source's last record
    /// when it lacks it): [`Filled::Buffered`], `None` at the end. When mapping
    /// ([`Reader::map_files`]), the records may instead be a mapped window of
    /// one file ([`Filled::Mapped`]), `buf` untouched: up to `target` bytes,
    /// ending at the window's last terminator. A long record streamed past
    /// ([`Reader::stream_long_records`]) is [`Filled::Streamed`].
    ///
    /// An error (say, the next file is missing) is reported only after the
    /// records read before it have been returned.
    ///
    /// A pipe that has been drained (a read returned less than a pipe holds,
    /// [`DRAINED`]) ends the chunk early with `true`, so a slow producer's lines
    /// go through (and out) now rather than after 4 MiB more: `crawl | seen dedup
    /// | fetch` streams. Regular files are read in full chunks.
    ///
    /// # Errors
    /// Opening or reading a source failed; the message names it.
    pub fn fill(&mut self, buf: &mut Vec<u8>, target: usize) -> Result<Option<Filled>> {
        let Some(len) = self.fill_inner(buf, target)? else {
            return Ok(None);
        };
        let drained = std::mem::take(&mut self.drained);
        Ok(Some(match (self.mapped.take(), self.prehashed.take()) {
            (Some(w), _) => Filled::Mapped(w),
            (None, Some(h)) => Filled::Streamed(h),
            (None, None) => Filled::Buffered { len, drained },
        }))
    }

    fn fill_inner(&mut self, buf: &mut Vec<u8>, target: usize) -> Result<Option<usize>> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        while self.map {
            if self.current.is_none() && self.carry.is_empty() && !self.open_next()? {
                return Ok(None);
            }
            match self.map_window(target) {
                MapStep::Mapped(w) => {
                    let len = w.len;
                    self.mapped = Some(w);
                    return Ok(Some(len));
                }
                MapStep::Ended => self.close(),
                MapStep::Read => break,
            }
        }
        let target = target.max(1);
        if buf.len() < target.max(self.carry.len()) + 1 {
            let len = target.max(self.carry.len()) + 1;
            crate::memory::resize(buf, len, "a chunk of input")?;
        }
        let mut len = self.carry.len();
        buf[..len].copy_from_slice(&self.carry);
        self.carry.clear();
        // Position of the last terminator in buf[..len]. The carry has none,
        // unless a streamed long record left whole records after it. Only new
        // bytes are searched after this, so a long record costs linear time.
        let mut last_term: Option<usize> = memchr::memrchr(self.term, &buf[..len]);
        if let (Some(p), Some((_, _, true))) = (last_term, &self.current) {
            // Whole records left behind by a streamed one, from a pipe: hand
            // them over now rather than wait for the producer's next line.
            self.carry.extend_from_slice(&buf[p + 1..len]);
            self.drained = true;
            return Ok(Some(p + 1));
        }
        loop {
            if self.current.is_none() {
                match self.open_next() {
                    Ok(true) => {}
                    Ok(false) => return Ok((len > 0).then_some(len)),
                    Err(e) if len > 0 => {
                        self.pending = Some(e);
                        return Ok(Some(len));
                    }
                    Err(e) => return Err(e),
                }
            }
            if len == buf.len() {
                let grown = buf.len() * 2;
                crate::memory::resize(buf, grown, "a long record")?;
            }
            let stream = self.current.as_ref().is_some_and(|c| c.2);
            let n = match self.read_current(&mut buf[len..]) {
                Ok(n) => n,
                Err(e) => {
                    return match memchr::memrchr(self.term, &buf[..len]) {
                        Some(p) => {
                            self.pending = Some(e);
                            Ok(Some(p + 1))
                        }
                        None => Err(e),
                    };
                }
            };
            if n == 0 {
                self.close();
                if len > 0 && buf[len - 1] != self.term {
                    if len == buf.len() {
                        buf.push(0);
                    }
                    buf[len] = self.term;
                    len += 1;
                }
                if len > 0 {
                    last_term = Some(len - 1);
                }
                if len >= target {
                    return Ok(Some(len));
                }
                continue;
            }
            let asked = buf.len() - len;
            if let Some(p) = memchr::memrchr(self.term, &buf[len..len + n]) {
                last_term = Some(len + p);
            }
            len += n;
            if let Some((long, seed)) = self.long
                && last_term.is_none()
                && len > long
            {
                // Only part of one record is here, and it is long: hash the
                // rest as it streams by rather than growing the buffer.
                self.prehashed = Some(self.stream_record(buf, len, seed)?);
                buf[0] = self.term;
                return Ok(Some(1));
            }
            let drained = stream && n < asked.min(DRAINED);
            if (len >= target || drained)
                && let Some(p) = last_term
            {
                self.drained = drained;
                self.carry.extend_from_slice(&buf[p + 1..len]);
                return Ok(Some(p + 1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// One fill, as its length and pause, its window when mapped, and its
    /// hash when streamed.
    fn fill(
        r: &mut Reader,
        buf: &mut Vec<u8>,
        target: usize,
    ) -> (Option<(usize, bool)>, Option<Window>, Option<Hash128>) {
        match r.fill(buf, target).unwrap() {
            None => (None, None, None),
            Some(Filled::Buffered { len, drained }) => (Some((len, drained)), None, None),
            Some(Filled::Mapped(w)) => (Some((w.len, false)), Some(w), None),
            Some(Filled::Streamed(h)) => (Some((1, false)), None, Some(h)),
        }
    }

    /// The records of `data` as read from a file (given twice) in chunks of
    /// `target` bytes, the same whether the reader maps the file or not.
    fn records_of(data: &[u8], term: u8, target: usize) -> Vec<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, data).unwrap();
        // The same file twice: records must not run together across sources.
        let sources = [Source::File(path.clone()), Source::File(path)];
        let (read, _) = fills(Reader::new(&sources, term), term, target);
        let mut r = Reader::new(&sources, term);
        r.map_files();
        let (mapped, _) = fills(r, term, target);
        assert_eq!(mapped, read, "target {target}");
        read
    }

    /// Every record `r` returns for chunks of `target` bytes, and for each fill
    /// whether its records came in a mapped window.
    fn fills(mut r: Reader, term: u8, target: usize) -> (Vec<Vec<u8>>, Vec<bool>) {
        let mut buf = Vec::new();
        let (mut out, mut kinds) = (vec![], vec![]);
        while let (Some((len, _)), w, _) = fill(&mut r, &mut buf, target) {
            kinds.push(w.is_some());
            let data = match &w {
                Some(w) => w.bytes(),
                None => &buf[..len],
            };
            assert_eq!(data.len(), len);
            assert_eq!(data[len - 1], term);
            let mut start = 0;
            for end in memchr::memchr_iter(term, data) {
                out.push(data[start..=end].to_vec());
                start = end + 1;
            }
        }
        (out, kinds)
    }

    /// A mapping reader maps the windows it can, reads a record longer than a
    /// window and a last record without terminator, and maps again after the
    /// long record.
    #[test]
    fn mapping_falls_back_to_reading_and_resumes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        let mut data = Vec::new();
        let mut want = Vec::new();
        for i in 0..3000 {
            let rec = if i == 100 {
                vec![b'L'; 10_000]
            } else {
                format!("record {i}").into_bytes()
            };
            data.extend_from_slice(&rec);
            want.push([&rec[..], b"\n"].concat());
            if i < 2999 {
                data.push(b'\n');
            }
        }
        std::fs::write(&path, &data).unwrap();
        let mut r = Reader::new(&[Source::File(path)], b'\n');
        r.map_files();
        let (got, kinds) = fills(r, b'\n', 256);
        assert_eq!(got, want);
        let first_read = kinds.iter().position(|m| !m).unwrap();
        assert!(first_read > 0, "the first windows are mapped: {kinds:?}");
        assert!(
            kinds[first_read..].contains(&true),
            "mapping resumes after the long record: {kinds:?}"
        );
        assert_eq!(kinds.last(), Some(&false), "the unterminated tail is read");
    }

    /// What is appended to a file after its windows were mapped is read; a file
    /// cut short between windows ends there.
    #[test]
    fn mapped_files_that_grow_or_shrink_between_windows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, b"a\nb\n").unwrap();
        let mut r = Reader::new(&[Source::File(path.clone())], b'\n');
        r.map_files();
        let mut buf = Vec::new();
        let (got, w, _) = fill(&mut r, &mut buf, 1 << 20);
        assert_eq!(got, Some((4, false)));
        assert_eq!(w.unwrap().bytes(), b"a\nb\n");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"c\nd").unwrap();
        let (got, w, _) = fill(&mut r, &mut buf, 1 << 20);
        assert_eq!(got, Some((2, false)));
        assert_eq!(w.unwrap().bytes(), b"c\n");
        let (got, w, _) = fill(&mut r, &mut buf, 1 << 20);
        assert_eq!(got, Some((2, false)));
        assert!(w.is_none(), "the unterminated tail is read");
        assert_eq!(&buf[..2], b"d\n");
        assert_eq!(fill(&mut r, &mut buf, 1 << 20).0, None);

        let lines: Vec<u8> = (0..1000)
            .flat_map(|i| format!("{i:04}\n").into_bytes())
            .collect();
        std::fs::write(&path, &lines).unwrap();
        let mut r = Reader::new(&[Source::File(path.clone())], b'\n');
        r.map_files();
        let (got, w, _) = fill(&mut r, &mut buf, 100);
        assert_eq!(got, Some((100, false)));
        assert_eq!(w.unwrap().bytes(), &lines[..100]);
        // The window is unmapped (dropped) before the cut: the reader finds
        // the file shorter than where it stands and sees its end.
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(50)
            .unwrap();
        assert_eq!(fill(&mut r, &mut buf, 100).0, None);
    }

    /// A pipe whose reads return these pieces, then would block forever.
    struct Scripted(Vec<&'static [u8]>);

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            assert!(
                !self.0.is_empty(),
                "read again: the reader would block here"
            );
            let piece = self.0.remove(0);
            buf[..piece.len()].copy_from_slice(piece);
            Ok(piece.len())
        }
    }

    #[test]
    fn records_after_a_streamed_one_are_handed_over_without_reading_on() {
        let mut r = Reader::new(&[Source::Stdin], b'\n');
        r.stream_long_records(10, 7);
        let pipe = Scripted(vec![b"AAAAAAAAAAAAAAA", b"AAA\npresent\nx"]);
        r.current = Some((Box::new(pipe), "pipe".into(), true));
        r.next = 1;
        let mut buf = Vec::new();
        let (got, _, h) = fill(&mut r, &mut buf, 64);
        assert_eq!(got, Some((1, false)));
        assert_eq!(h, Some(crate::hash::hash(&[b'A'; 18], 7)));
        // "present" is whole: returned now, with "x" kept for later.
        assert_eq!(fill(&mut r, &mut buf, 64).0, Some((8, true)));
        assert_eq!(&buf[..8], b"present\n");
        assert_eq!(r.carry, b"x");
    }

    #[test]
    fn splits_whole_records_for_any_chunk_size() {
        for target in [1, 2, 3, 7, 1024] {
            let one = [
                b"a\n".to_vec(),
                b"bb\n".to_vec(),
                b"\n".to_vec(),
                b"ccc\n".to_vec(),
            ];
            let two: Vec<_> = one.iter().chain(one.iter()).cloned().collect();
            assert_eq!(records_of(b"a\nbb\n\nccc", b'\n', target), two);
            assert_eq!(records_of(b"", b'\n', target), Vec::<Vec<u8>>::new());
            assert_eq!(records_of(b"\n", b'\n', target), vec![b"\n".to_vec(); 2]);
            let z = [b"a\nb\x00".to_vec(), b"c\x00".to_vec()];
            let zz: Vec<_> = z.iter().chain(z.iter()).cloned().collect();
            assert_eq!(records_of(b"a\nb\x00c\x00", 0, target), zz);
        }
    }

    #[test]
    fn long_record_grows_the_buffer() {
        let mut data = vec![b'x'; 10_000];
        data.push(b'\n');
        data.extend_from_slice(b"y");
        let recs = records_of(&data, b'\n', 16);
        assert_eq!(recs.len(), 4);
        assert_eq!(recs[0].len(), 10_001);
        assert_eq!(recs[1], b"y\n");
    }

    #[test]
    fn error_comes_after_earlier_records() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good");
        std::fs::write(&good, b"a\nb").unwrap();
        let mut r = Reader::new(
            &[Source::File(good), Source::File(dir.path().join("missing"))],
            b'\n',
        );
        let mut buf = Vec::new();
        assert_eq!(fill(&mut r, &mut buf, 1 << 20).0.map(|f| f.0), Some(4));
        let e = r.fill(&mut buf, 1 << 20).unwrap_err();
        assert!(format!("{e:#}").contains("missing"), "{e:#}");
    }

    /// The mapped count, the striped-read count and a plain count agree, for
    /// any number of threads, with and without a last terminator, across the
    /// window boundaries.
    #[test]
    fn counts_agree_with_and_without_a_map() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut data = Vec::new();
        while data.len() < (70 << 20) + 12_345 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let len = (rng % 200) as usize;
            data.extend(std::iter::repeat_n(b'a' + (rng % 26) as u8, len));
            data.push(if rng & 1 == 0 { b'\n' } else { 0 });
        }
        for (name, bytes) in [
            ("big", &data[..]),
            ("cut", &data[..data.len() - 1]),
            ("one", &b"x"[..]),
            ("empty", &b""[..]),
            ("only-terms", &b"\n\n\n"[..]),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let file = File::open(&path).unwrap();
            for term in [b'\n', 0] {
                let want = memchr::memchr_iter(term, bytes).count() as u64
                    + u64::from(bytes.last().is_some_and(|&b| b != term));
                for threads in [1, 2, 3, 8] {
                    let ctx = format!("{name} term={term} threads={threads}");
                    assert_eq!(
                        count_file(&file, term, threads, true).unwrap(),
                        want,
                        "{ctx}"
                    );
                    assert_eq!(
                        count_file(&file, term, threads, false).unwrap(),
                        want,
                        "{ctx}"
                    );
                }
                let sources = [Source::File(path.clone()), Source::File(path.clone())];
                for map in [false, true] {
                    assert_eq!(
                        count_records(&sources, term, 2, map).unwrap(),
                        Some(2 * want)
                    );
                }
            }
        }
        assert_eq!(
            count_records(&[Source::Stdin], b'\n', 2, true).unwrap(),
            None
        );
        // Pseudo-files report a size of 0 (or a page) whatever they hold.
        for proc_file in ["/proc/cpuinfo", "/proc/version"] {
            let Ok(bytes) = std::fs::read(proc_file) else {
                continue;
            };
            let want = memchr::memchr_iter(b'\n', &bytes).count() as u64
                + u64::from(bytes.last().is_some_and(|&b| b != b'\n'));
            let file = File::open(proc_file).unwrap();
            assert_eq!(
                count_file(&file, b'\n', 2, true).unwrap(),
                want,
                "{proc_file}"
            );
        }
    }

    /// A file large enough for the windows, then the same file with an
    /// unterminated last line appended.
    #[test]
    fn large_files_count_an_unterminated_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grows");
        let line = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
        let body = line.repeat((PARALLEL_COUNT_BYTES as usize / line.len()) + 1000);
        std::fs::write(&path, &body).unwrap();
        let file = File::open(&path).unwrap();
        let lines = (body.len() / line.len()) as u64;
        assert_eq!(count_file(&file, b'\n', 3, true).unwrap(), lines);
        let mut more = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        more.write_all(b"x\ny").unwrap();
        assert_eq!(count_file(&file, b'\n', 3, true).unwrap(), lines + 2);
        assert_eq!(count_file(&file, b'\n', 3, false).unwrap(), lines + 2);
    }

    /// A file of `lines` records made by `line(i)`, and its path.
    fn file_of(dir: &Path, name: &str, lines: usize, line: impl Fn(usize) -> String) -> Source {
        let path = dir.join(name);
        let mut f = std::io::BufWriter::new(File::create(&path).unwrap());
        for i in 0..lines {
            writeln!(f, "{}", line(i)).unwrap();
        }
        f.flush().unwrap();
        Source::File(path)
    }

    #[test]
    fn estimates_come_from_samples_of_large_files_only() {
        let dir = tempfile::tempdir().unwrap();
        // 300,000 URL-like lines of 40 to 90 bytes (about 20 MB).
        let urls = file_of(dir.path(), "urls", 300_000, |i| {
            format!("https://example.com/{}/{i}", "x".repeat(i * 7919 % 51))
        });
        // 12 MB of 4-byte lines, then 12 MB of 1,000-byte ones: the density
        // changes once, by 250 times.
        let halves = file_of(dir.path(), "halves", 3_012_000, |i| {
            if i < 3_000_000 {
                format!("{:03}", i % 1000)
            } else {
                "y".repeat(999)
            }
        });
        for (src, lines) in [(&urls, 300_000u64), (&halves, 3_012_000)] {
            let srcs = [src.clone()];
            let exact = count_records(&srcs, b'\n', 2, true).unwrap().unwrap();
            assert_eq!(exact, lines);
            // Under the threshold: counted.
            let counted = estimate_past(&srcs, b'\n', 2, true, u64::MAX).unwrap();
            assert_eq!(counted, Some(Records::Counted(lines)));
            let Some(Records::Estimated(est)) = estimate_past(&srcs, b'\n', 2, true, 1).unwrap()
            else {
                panic!("not sampled")
            };
            let off = (est as f64 - lines as f64).abs() / lines as f64;
            assert!(off < 0.02, "estimated {est} for {lines} lines");
        }
        // Two files, the smaller counted and the larger sampled: an estimate.
        let both = [urls, halves];
        let len = std::fs::metadata(match &both[0] {
            Source::File(p) => p,
            Source::Stdin => unreachable!(),
        })
        .unwrap()
        .len();
        assert!(matches!(
            estimate_past(&both, b'\n', 2, true, len + 1).unwrap(),
            Some(Records::Estimated(n)) if n.abs_diff(300_000 + 3_012_000) < 3_312_000 / 50
        ));
        assert_eq!(
            estimate_past(&[Source::Stdin], b'\n', 2, true, 1).unwrap(),
            None
        );
    }

    #[test]
    fn estimates_never_go_under_one_record_per_4_kib() {
        let dir = tempfile::tempdir().unwrap();
        // One 1 MiB record without terminator: no sample sees a terminator.
        let path = dir.path().join("one");
        std::fs::write(&path, vec![b'z'; 1 << 20]).unwrap();
        let srcs = [Source::File(path)];
        assert_eq!(
            estimate_past(&srcs, b'\n', 1, true, 1).unwrap(),
            Some(Records::Estimated((1 << 20) / 4096 + 1))
        );
        assert_eq!(count_records(&srcs, b'\n', 1, true).unwrap(), Some(1));
    }

    #[test]
    fn dash_means_stdin() {
        assert_eq!(sources(&[]), vec![Source::Stdin]);
        assert_eq!(
            sources(&["-".into(), "a".into()]),
            vec![Source::Stdin, Source::File("a".into())]
        );
    }
}
