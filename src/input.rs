//! Line sources: files and standard input, read in large chunks that always hold
//! whole records, split on `\n` or NUL without per-line allocation.

use anyhow::{Context, Result, bail};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Bytes read per chunk (the buffer grows for longer records).
const CHUNK: usize = 1 << 20;

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

/// Counts the records of every source when all are regular files (a last record
/// without terminator counts); `None` when one is standard input or not a regular
/// file (a pipe cannot be read twice).
///
/// # Errors
/// When a file cannot be opened or read.
pub fn count_records(sources: &[Source], term: u8) -> Result<Option<u64>> {
    let mut total = 0u64;
    for s in sources {
        let Source::File(path) = s else {
            return Ok(None);
        };
        let mut file = open_file(path)?;
        if !file.metadata()?.is_file() {
            return Ok(None);
        }
        let mut buf = vec![0u8; CHUNK];
        let mut last = term;
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
            total += memchr::memchr_iter(term, &buf[..n]).count() as u64;
            last = buf[n - 1];
        }
        if last != term {
            total += 1;
        }
    }
    Ok(Some(total))
}

/// Reads one source in chunks of whole records.
pub struct ChunkReader {
    reader: Box<dyn Read>,
    name: String,
    buf: Vec<u8>,
    start: usize,
    filled: usize,
    handed_out: usize,
    term: u8,
    eof: bool,
    stream: bool,
}

impl ChunkReader {
    /// Opens a source.
    ///
    /// # Errors
    /// When the file cannot be opened or is a directory.
    pub fn open(source: &Source, term: u8) -> Result<ChunkReader> {
        let (reader, stream): (Box<dyn Read>, bool) = match source {
            Source::Stdin => (Box::new(io::stdin()), true),
            Source::File(p) => {
                let f = open_file(p)?;
                let regular = f.metadata().map(|m| m.is_file()).unwrap_or(false);
                (Box::new(f), !regular)
            }
        };
        Ok(ChunkReader {
            reader,
            name: source.name(),
            buf: vec![0; CHUNK],
            start: 0,
            filled: 0,
            handed_out: 0,
            term,
            eof: false,
            stream,
        })
    }

    /// Whether the source is a pipe or terminal (output should be flushed after
    /// each chunk so that downstream sees lines as they come).
    pub fn is_stream(&self) -> bool {
        self.stream
    }

    /// Returns the next run of whole records, each ending with the terminator
    /// (one is added after a last record that lacks it), or `None` at the end.
    ///
    /// # Errors
    /// When reading fails; the message names the source.
    pub fn next_chunk(&mut self) -> Result<Option<&[u8]>> {
        self.start += self.handed_out;
        self.handed_out = 0;
        loop {
            let pending = &self.buf[self.start..self.filled];
            if let Some(pos) = memchr::memrchr(self.term, pending) {
                self.handed_out = pos + 1;
                return Ok(Some(&self.buf[self.start..self.start + pos + 1]));
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.filled, 0);
                self.filled -= self.start;
                self.start = 0;
            }
            if self.eof {
                if self.filled == 0 {
                    return Ok(None);
                }
                if self.filled == self.buf.len() {
                    self.buf.push(0);
                }
                self.buf[self.filled] = self.term;
                self.filled += 1;
                continue;
            }
            if self.filled == self.buf.len() {
                let grown = self.buf.len() * 2;
                self.buf.resize(grown, 0);
            }
            match self.reader.read(&mut self.buf[self.filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", self.name)),
            }
        }
    }
}

/// Calls `f` for each record (with its terminator) of a chunk.
#[inline]
pub fn for_each_record(chunk: &[u8], term: u8, mut f: impl FnMut(&[u8])) {
    let mut start = 0;
    for end in memchr::memchr_iter(term, chunk) {
        f(&chunk[start..=end]);
        start = end + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records_of(data: &[u8], term: u8, chunk: usize) -> Vec<Vec<u8>> {
        let mut r = ChunkReader {
            reader: Box::new(io::Cursor::new(data.to_vec())),
            name: "test".into(),
            buf: vec![0; chunk],
            start: 0,
            filled: 0,
            handed_out: 0,
            term,
            eof: false,
            stream: false,
        };
        let mut out = vec![];
        while let Some(c) = r.next_chunk().unwrap() {
            assert_eq!(*c.last().unwrap(), term);
            for_each_record(c, term, |rec| out.push(rec.to_vec()));
        }
        out
    }

    #[test]
    fn splits_whole_records_across_tiny_buffers() {
        for chunk in [1, 2, 3, 7, 1024] {
            assert_eq!(
                records_of(b"a\nbb\n\nccc", b'\n', chunk),
                vec![
                    b"a\n".to_vec(),
                    b"bb\n".to_vec(),
                    b"\n".to_vec(),
                    b"ccc\n".to_vec()
                ]
            );
            assert_eq!(records_of(b"", b'\n', chunk), Vec::<Vec<u8>>::new());
            assert_eq!(records_of(b"\n", b'\n', chunk), vec![b"\n".to_vec()]);
            assert_eq!(
                records_of(b"a\nb\x00c\x00", 0, chunk),
                vec![b"a\nb\x00".to_vec(), b"c\x00".to_vec()]
            );
        }
    }

    #[test]
    fn long_record_grows_the_buffer() {
        let mut data = vec![b'x'; 10_000];
        data.push(b'\n');
        data.extend_from_slice(b"y");
        let recs = records_of(&data, b'\n', 16);
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].len(), 10_001);
        assert_eq!(recs[1], b"y\n");
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
