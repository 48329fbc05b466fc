//! Line sources: files and standard input, in chunks that always end on a
//! record boundary, so records are split in place (`crate::scan`) and never
//! copied or allocated one by one.
//!
//! A regular file is mapped one span (about a chunk) at a time when the
//! reader is told to ([`Reader::map_files`]): the records are read where they
//! lie in the page cache, without the kernel's copy into a buffer, and each
//! span is unmapped once its chunk is written, so peak memory stays a few
//! chunks whatever the input size; so is a regular file redirected to standard
//! input. Everything else (pipes, terminals, pseudo-files that report no size,
//! a record longer than a span, a last record without terminator, what is
//! appended to a file past the size it had) is read with large `read` calls
//! into reusable buffers.

//!
//! Rooms: this file (sources, opening, mapping), `count` (counting and
//! sampling records, to size a filter) and `reader` (the chunked reader the
//! pipeline pulls from).

mod count;
mod reader;

pub(crate) use count::{count_records, estimate_records};
pub(crate) use reader::{Filled, MappedSpan, Reader};

use anyhow::{Context, Result, bail};
use memmap2::{Mmap, MmapOptions};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Maps `len` bytes of an input file from `offset` (any: memmap2 aligns the
/// mapping itself) read-only, for the counting pass and the reader's spans.
///
/// # Errors
/// When the range cannot be mapped (empty, a file system without mmap).
pub(crate) fn map_input(file: &File, offset: u64, len: usize) -> std::io::Result<Mmap> {
    // SAFETY: the mapping is only read as plain bytes (`&[u8]`) and dropped at
    // the end of its span. Another process appending to the file changes
    // nothing we read; one truncating it during the pass would raise SIGBUS and
    // end the process (as with `rg`'s maps; see the README's limits), and so
    // would a read error on its device. Bytes changing under us are never
    // unsafe, only wrong: a count for a filter of another size, or (in the
    // main pass) a record printed as it now is rather than as it was judged;
    // every slice is bounds-checked against the span.
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
pub(crate) fn sources(files: &[PathBuf]) -> Vec<Source> {
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

pub(crate) fn open_file(path: &Path) -> Result<File> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        bail!("{} is a directory: give files of lines", path.display());
    }
    Ok(file)
}

/// Warns when a regular file starts like a compressed one: `seen` reads raw
/// bytes, so `seen dedup logs.gz` would deduplicate compressed data. Reads the
/// first bytes with `pread`, leaving the file offset alone.
pub(crate) fn warn_if_compressed(f: &File, path: &Path) {
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
pub(crate) fn uncountable(sources: &[Source]) -> Option<String> {
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
pub(crate) fn total_bytes(sources: &[Source]) -> Option<u64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_means_stdin() {
        assert_eq!(sources(&[]), vec![Source::Stdin]);
        assert_eq!(
            sources(&["-".into(), "a".into()]),
            vec![Source::Stdin, Source::File("a".into())]
        );
    }
}
