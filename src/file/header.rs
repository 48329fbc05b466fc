//! The header of a filter file on disk: read and validated when the file is
//! opened (under its lock), the warning for a file left dirty, and written
//! back. What the header's bytes mean is [`format`](crate::format)'s business;
//! this is the I/O around it that the read, write and new stores share.

use super::lock::open_locked;
use crate::format::{HEADER_LEN, Header};
use anyhow::{Context, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Reads and validates the header of an open file.
pub(super) fn read_header(file: &File, path: &Path) -> Result<Header> {
    let len = file.metadata()?.len();
    let mut buf = vec![0u8; HEADER_LEN.min(len as usize)];
    file.read_exact_at(&mut buf, 0)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Header::decode(&buf, len).with_context(|| format!("{} is not a usable filter", path.display()))
}

/// Opens and locks a filter file and validates its header, warning when a
/// writer did not finish with it.
pub(super) fn open_checked(path: &Path, write: bool) -> Result<(File, Header)> {
    let file = open_locked(path, write)?;
    let header = read_header(&file, path)?;
    warn_dirty(&header, path);
    warn_clock(&header, path);
    Ok((file, header))
}

/// Warns on stderr when the clock is behind the latest time a writer
/// recorded in a filter with a window (the filter's time is used instead):
/// always for `--now`, and for the system clock when more than a minute
/// behind (clocks of machines sharing a file differ by a little).
pub(super) fn warn_clock(header: &Header, path: &Path) {
    let Some(w) = header.window else { return };
    let now = crate::clock::now();
    let slack = if crate::clock::is_fixed() { 0 } else { 60 };
    if now.saturating_add(slack) < w.clock {
        crate::say!(
            "seen: warning: {}: the time ({}) is before the latest time lines were recorded \
             in it ({}); time in a filter does not go back, so it works at {}",
            path.display(),
            crate::clock::format(now),
            crate::clock::format(w.clock),
            crate::clock::format(w.clock)
        );
    }
}

/// Warns on stderr when `header` says a writer did not finish with the file.
pub(super) fn warn_dirty(header: &Header, path: &Path) {
    if header.is_dirty() {
        crate::say!(
            "seen: warning: {} was not closed cleanly (a run was killed or crashed); \
             its bits are valid but its insert counters may be low (a writer recounts \
             them from the bits)",
            path.display()
        );
    }
}

/// Writes `header` at the start of `file` (the header is never mapped).
pub(super) fn write_header(file: &File, path: &Path, header: &Header) -> Result<()> {
    file.write_all_at(&header.encode(), 0)
        .with_context(|| format!("cannot write the header of {}", path.display()))
}
