//! The header of a filter file on disk: read and validated when the file is
//! opened (under its lock), the warning for a file left dirty, and written
//! back. What the header's bytes mean is [`format`](crate::format)'s business;
//! this is the I/O around it that the read, write and new stores share.

use super::lock::open_locked;
use crate::format::{HEADER_LEN, Header, WindowState};
use anyhow::{Context, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

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
    if CLOCK_QUIET.load(Ordering::Relaxed) {
        return;
    }
    let now = crate::clock::now();
    let slack = if crate::clock::is_fixed() { 0 } else { 60 };
    if now.saturating_add(slack) < w.clock {
        // A clock far ahead of this machine's was moved there by a --now.
        let back = if w.clock > crate::clock::system_secs() + far_ahead(&w) {
            format!(
                "; if that time was a mistake, `seen verify --set-clock now {}` sets it back",
                path.display()
            )
        } else {
            String::new()
        };
        crate::say!(
            "seen: warning: {}: the time ({}) is before the latest time lines were recorded \
             in it ({}); time in a filter does not go back, so it works at {}{back}",
            path.display(),
            crate::clock::format(now),
            crate::clock::format(w.clock),
            crate::clock::format(w.clock)
        );
    }
}

/// Set when this process sets a filter's clock back: it is not warned
/// that its clock is behind the filter's.
static CLOCK_QUIET: AtomicBool = AtomicBool::new(false);

/// No warning that the clock is behind a filter's from now on
/// (`verify --set-clock`, which says what it did instead).
pub(crate) fn quiet_clock() {
    CLOCK_QUIET.store(true, Ordering::Relaxed);
}

/// How far `--now` may be ahead of the system clock before a writer that
/// moves the time of a filter with window `w` there is warned: more than a
/// day, or than a slice of its window when longer (a replay of yesterday's
/// log is not a mistake).
fn far_ahead(w: &WindowState) -> u64 {
    (w.window.secs / u64::from(w.window.slices)).max(86_400)
}

/// Whether a writer moving a filter's time ahead was warned in this process
/// (once is enough).
static WARNED_AHEAD: AtomicBool = AtomicBool::new(false);

/// Warns once per process when a writer of a file (`file`) moves the time
/// of the filter named `name`, whose window is `w`, from `from` (0 for a new
/// filter) to `t`, the `--now` time, more than [`far_ahead`] past the system
/// clock: for good, so say what that does and how to set it back.
pub(super) fn warn_ahead(name: &str, from: u64, t: u64, w: &WindowState, file: bool) {
    if !file || !crate::clock::is_fixed() || t <= from {
        return;
    }
    let sys = crate::clock::system_secs();
    if t <= sys + far_ahead(w) {
        return;
    }
    if WARNED_AHEAD.swap(true, Ordering::Relaxed) {
        return;
    }
    let at = crate::clock::format;
    crate::say!(
        "seen: warning: {name}: --now {} is {} ahead of this machine's clock ({}); the \
         filter's time moves there for good: lines recorded before {} expire now, and runs \
         at the system clock will work at {} until it passes; if the time is a mistake, \
         `seen verify --set-clock now {name}` sets it back",
        at(t),
        crate::clock::span(t - sys),
        at(sys),
        at(t.saturating_sub(w.window.secs)),
        at(t)
    );
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
