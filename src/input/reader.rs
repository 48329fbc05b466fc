//! The reader the pipeline pulls from: every source in order, in chunks of
//! whole records, read into reusable buffers or mapped where they lie.

use super::{Source, map_input, open_file, warn_if_compressed};
use crate::hash::{Hash128, StreamHash};
use anyhow::Result;
use memmap2::Mmap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

/// Reads all sources in order, in chunks of whole records.
pub(crate) struct Reader {
    sources: Vec<Source>,
    next: usize,
    /// The open source, its name, and whether it is a pipe/terminal (not a regular file).
    current: Option<(Box<dyn Read + Send>, String, bool)>,
    carry: Vec<u8>,
    term: u8,
    pending: Option<anyhow::Error>,
    drained: bool,
    /// A read of the open stream shorter than this emptied it: what its
    /// pipe holds.
    drain_below: usize,
    /// Hash records longer than this many bytes as they stream by, under this
    /// seed, instead of holding them ([`Reader::stream_long_records`]).
    long: Option<(usize, u64)>,
    /// The hash of the long record just streamed.
    prehashed: Option<Hash128>,
    /// Map regular files a span at a time ([`Reader::map_files`]).
    map: bool,
    /// The open source's file, when it is a regular file that may be mapped.
    mappable: Option<File>,
    /// The span the records returned by the last [`Reader::fill`] lie in.
    mapped: Option<MappedSpan>,
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

/// Asks for a 1 MiB buffer on standard input when it is a pipe (the
/// default is 64 KiB): the writer on the other end and `seen` then take
/// turns 16 times less often. Only a hint: a pipe that cannot grow (past
/// `/proc/sys/fs/pipe-max-size`) stays as it is. Returns what the pipe
/// holds now ([`pipe_bytes`]).
fn grow_pipe() -> usize {
    // SAFETY: a plain system call on descriptor 0; it reads no memory.
    unsafe {
        libc::fcntl(0, libc::F_SETPIPE_SZ, 1 << 20);
    }
    pipe_bytes(0)
}

/// How many bytes the pipe `fd` holds: a read shorter than that emptied it
/// (see [`Reader::fill`]). [`DRAINED`] for what is not a pipe (a terminal,
/// a socket).
fn pipe_bytes(fd: std::os::fd::RawFd) -> usize {
    // SAFETY: a plain system call on a descriptor; it reads no memory.
    let n = unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
    usize::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or(DRAINED)
}

/// Whether a regular file reports a size: pseudo-files (`/proc`, `/sys`) say
/// 0 and are only read, never mapped or probed at their "end".
fn has_size(f: &File) -> bool {
    f.metadata().is_ok_and(|m| m.len() > 0)
}

/// What [`Reader::map_span`] did.
enum MapStep {
    /// Records were mapped.
    Mapped(MappedSpan),
    /// The open file has ended.
    Ended,
    /// Read on instead.
    Read,
}

/// Whole records of a file, mapped where they lie.
#[derive(Debug)]
pub(crate) struct MappedSpan {
    map: Mmap,
    len: usize,
}

impl MappedSpan {
    /// The records, each ending with the terminator.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map[..self.len]
    }
}

/// What [`Reader::fill`] produced: where the records are.
#[derive(Debug)]
pub(crate) enum Filled {
    /// `len` bytes of whole records at the start of the buffer; `drained`: a
    /// pipe paused after them (sinks should flush, so the lines reach the
    /// reader downstream now).
    Buffered { len: usize, drained: bool },
    /// Whole records of a file, mapped where they lie (the buffer untouched).
    Mapped(MappedSpan),
    /// One record longer than the streaming limit, hashed as it went by: the
    /// buffer holds just its terminator.
    Streamed(Hash128),
}

/// What a pipe holds by default: a read shorter than this (and than asked
/// for) from a stream whose pipe size is unknown means it is empty for now.
pub(super) const DRAINED: usize = 64 << 10;

impl Reader {
    /// A reader over `sources`; nothing is opened until the first [`Reader::fill`].
    pub(crate) fn new(sources: &[Source], term: u8) -> Reader {
        Reader {
            sources: sources.to_vec(),
            next: 0,
            current: None,
            carry: Vec::new(),
            term,
            pending: None,
            drained: false,
            drain_below: DRAINED,
            long: None,
            prehashed: None,
            map: false,
            mappable: None,
            mapped: None,
        }
    }

    /// From now on, records of regular files are mapped rather than read, a
    /// span of about the chunk size at a time: [`Reader::fill`] then returns
    /// [`Filled::Mapped`] spans instead of
    /// records in the buffer. Another program truncating the file meanwhile
    /// raises SIGBUS (see `crate::signals::explain_sigbus`).
    pub(crate) fn map_files(&mut self) {
        self.map = true;
    }

    /// Closes the open source.
    fn close(&mut self) {
        self.current = None;
        self.mappable = None;
    }

    /// Maps the whole records of the open source, when it can be mapped, from
    /// where reading stands, up to about `target` bytes.
    fn map_span(&mut self, target: usize) -> MapStep {
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
        // No terminator in the span: a record longer than it, or a last one
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
        MapStep::Mapped(MappedSpan { map, len })
    }

    /// From now on, a record longer than `bytes` is not held in memory: it is
    /// hashed (under `seed`) as it is read, and [`Reader::fill`] returns it as
    /// [`Filled::Streamed`] with its hash. For callers
    /// that need only the hashes of long records (`build`, `query -c`/`-q`),
    /// so memory stays at `bytes` whatever the record's length.
    pub(crate) fn stream_long_records(&mut self, bytes: usize, seed: u64) {
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
                None => {
                    self.drain_below = grow_pipe();
                    (Box::new(io::stdin()), true)
                }
            },
            Source::File(p) => {
                let f = open_file(p)?;
                let regular = f.metadata().is_ok_and(|m| m.is_file());
                if !regular {
                    use std::os::fd::AsRawFd;
                    self.drain_below = pipe_bytes(f.as_raw_fd());
                } else {
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
    /// ([`Reader::map_files`]), the records may instead be a mapped span of
    /// one file ([`Filled::Mapped`]), `buf` untouched: up to `target` bytes,
    /// ending at the span's last terminator. A long record streamed past
    /// ([`Reader::stream_long_records`]) is [`Filled::Streamed`].
    ///
    /// An error (say, the next file is missing) is reported only after the
    /// records read before it have been returned.
    ///
    /// A pipe that has been drained (a read returned less than the pipe
    /// holds: 64 KiB by default, 1 MiB for standard input once grown) ends
    /// the chunk early with `true`, so a slow producer's lines go through (and
    /// out) now rather than after 4 MiB more: `crawl | seen dedup | fetch`
    /// streams. Regular files are read in full chunks.
    ///
    /// # Errors
    /// Opening or reading a source failed; the message names it.
    pub(crate) fn fill(&mut self, buf: &mut Vec<u8>, target: usize) -> Result<Option<Filled>> {
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
            match self.map_span(target) {
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
            let drained = stream && n < asked.min(self.drain_below);
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

    /// One fill, as its length and pause, its span when mapped, and its
    /// hash when streamed.
    fn fill(
        r: &mut Reader,
        buf: &mut Vec<u8>,
        target: usize,
    ) -> (Option<(usize, bool)>, Option<MappedSpan>, Option<Hash128>) {
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
    /// whether its records came in a mapped span.
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

    /// A mapping reader maps the spans it can, reads a record longer than a
    /// span and a last record without terminator, and maps again after the
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
        assert!(first_read > 0, "the first spans are mapped: {kinds:?}");
        assert!(
            kinds[first_read..].contains(&true),
            "mapping resumes after the long record: {kinds:?}"
        );
        assert_eq!(kinds.last(), Some(&false), "the unterminated tail is read");
    }

    /// What is appended to a file after its spans were mapped is read; a file
    /// cut short between spans ends there.
    #[test]
    fn mapped_files_that_grow_or_shrink_between_spans() {
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
        // The span is unmapped (dropped) before the cut: the reader finds
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
}
