//! What a filter path may be: refusals for non-files and links, what `build
//! --force` may replace, and the temporary files of runs that were killed.

use crate::format;
use anyhow::{Context, Result, bail};
use std::fs::{File, OpenOptions};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// What kind of file `m` describes, for messages ("a FIFO (named pipe)").
pub(super) fn kind(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
}

/// Refuses a path that is not a regular file (what `m` says of it): only a
/// regular file can be a filter, and opening anything else can block (a FIFO)
/// or act on a device.
pub(super) fn not_a_filter_kind(path: &Path, m: &std::fs::Metadata) -> Result<()> {
    if m.is_file() {
        return Ok(());
    }
    bail!(
        "{} is {}, not a filter file: give the path of a filter file",
        path.display(),
        kind(m)
    )
}

/// What a path where a new filter is to go (`build -o`, a new `dedup -f`)
/// holds now, once [`check_target`] has found it usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// Nothing: the filter is created there.
    Free,
    /// A `seen` filter (a regular file starting with the format's magic),
    /// or an empty regular file: either may be replaced.
    Filter,
    /// Another regular file (only reported when not replacing).
    OtherFile,
}

/// Checks a path where a new filter is to be created, or (`replace`, i.e.
/// `build --force`) to replace what is there. `seen` never creates or
/// replaces a filter through a symbolic link (a link's file may be anywhere:
/// another directory, a file that is not a filter), and replaces only a
/// regular file that is a `seen` filter (or empty): never a directory, FIFO,
/// socket or device, nor a file of another kind.
///
/// # Errors
/// Each refusal, naming the path, what is there and what to do.
pub(crate) fn check_target(path: &Path, replace: bool) -> Result<Target> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Free),
        Err(e) => {
            return Err(e).with_context(|| format!("cannot create a filter at {}", path.display()));
        }
    };
    if m.file_type().is_symlink() {
        let to = std::fs::read_link(path).unwrap_or_default();
        match std::fs::metadata(path) {
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => bail!(
                "{} is a symbolic link that loops (to {}, and round again): remove it, \
                 or give the path of a filter file",
                path.display(),
                to.display()
            ),
            Err(_) => bail!(
                "{} is a symbolic link to {}, which does not exist: seen does not create a \
                 filter through a link (it could land in another directory); give the path to \
                 create instead",
                path.display(),
                to.display()
            ),
            Ok(_) => bail!(
                "{} is a symbolic link to {}: seen does not {} a filter through a link; \
                 give the file's own path, or remove the link",
                path.display(),
                to.display(),
                if replace { "replace" } else { "create" }
            ),
        }
    }
    if !m.is_file() {
        bail!(
            "{} is {}, not a filter file: {}",
            path.display(),
            kind(&m),
            if replace {
                "--force only replaces filter files; remove it yourself, or choose another path"
            } else {
                "choose another path for the filter"
            }
        );
    }
    if m.len() == 0 {
        // Nothing to lose (e.g. made by `mktemp` for seen to fill).
        return Ok(Target::Filter);
    }
    let is_filter = open_inert(path).is_ok_and(|f| has_magic(&f));
    match (is_filter, replace) {
        (true, _) => Ok(Target::Filter),
        (false, false) => Ok(Target::OtherFile),
        (false, true) => bail!(
            "{} is not a seen filter (it does not start with a filter's magic bytes): \
             --force only replaces filter files; remove it yourself, or choose another path",
            path.display()
        ),
    }
}

/// Opens `path` for reading, inertly: not through a final symbolic link,
/// without blocking on a FIFO, and without making a terminal ours.
fn open_inert(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)
}

/// Whether `file` starts with a filter's magic bytes (read at offset 0,
/// without moving the file offset).
pub(super) fn has_magic(file: impl AsFd) -> bool {
    let mut magic = [0u8; 8];
    rustix::io::pread(file, &mut magic, 0).is_ok_and(|n| n == magic.len()) && magic == format::MAGIC
}

/// Whether `fd` is a regular file that starts with the filter magic: a
/// filter given where lines are read (`dedup < FILTER`). Anything that is
/// not a regular file (a pipe, a terminal) is not read.
pub fn holds_filter(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file())
        && has_magic(fd)
}

/// Whether `path` names a regular file (through links, as any input) that
/// starts with the filter magic (`build --add -o a.seen b.seen`). Only a
/// regular file is opened, without blocking: a FIFO must be opened once,
/// by the reader.
pub fn names_filter(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .is_ok_and(|f| holds_filter(f.as_fd()))
}

/// Random characters in a temporary file's name (`.NAME.XXXXXX.tmp`).
pub(super) const TEMP_RAND_LEN: usize = 6;

/// The prefix of the temporary files of a filter named `name`.
pub(super) fn temp_prefix(name: &std::ffi::OsStr) -> String {
    format!(".{}.", name.to_string_lossy())
}

/// Whether `file` is a temporary file of a filter whose names start with `prefix`.
pub(super) fn is_temp_name(file: &std::ffi::OsStr, prefix: &str) -> bool {
    file.to_str()
        .and_then(|n| n.strip_prefix(prefix))
        .and_then(|n| n.strip_suffix(".tmp"))
        .is_some_and(|r| r.len() == TEMP_RAND_LEN && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Removes the temporary files (`.NAME.XXXXXX.tmp` in `dir`) that runs
/// creating the filter `name` left when they were killed (SIGKILL, a power
/// cut: nothing runs to remove them). A live run holds an exclusive lock on
/// its temporary file from just after creating it (see [`NewFilter::create`]),
/// so a file that can be locked is abandoned (unless it is empty and fresh:
/// one its maker has not locked yet); it is removed while locked, and only
/// if the name still names the file that was locked. Says on stderr what it
/// removed; failures are ignored (a file another user owns stays).
pub(super) fn sweep_leftovers(dir: &Path, name: &std::ffi::OsStr) {
    let prefix = temp_prefix(name);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let (mut files, mut bytes) = (0u64, 0u64);
    for e in entries.flatten() {
        if !is_temp_name(&e.file_name(), &prefix) {
            continue;
        }
        let p = e.path();
        let Ok(f) = open_inert(&p) else {
            continue;
        };
        let Ok(m) = f.metadata() else { continue };
        if !m.is_file() || just_made(&m) || f.try_lock().is_err() {
            continue;
        }
        let same =
            std::fs::symlink_metadata(&p).is_ok_and(|n| n.ino() == m.ino() && n.dev() == m.dev());
        if same && std::fs::remove_file(&p).is_ok() {
            files += 1;
            bytes += m.len();
        }
    }
    if files > 0 {
        crate::say!(
            "seen: removed {files} temporary file{} ({}) left in {} by runs that were killed",
            if files == 1 { "" } else { "s" },
            indicatif::HumanBytes(bytes),
            dir.display()
        );
    }
}

/// How long an empty temporary file may be its maker's, between creating
/// and locking it.
const FRESH: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether a temporary file is empty and younger than [`FRESH`] (or dated
/// ahead of the clock): a run that is making it, between creating it and
/// taking its lock, not a killed run's. A run sizes its file just after
/// the lock, so a killed one leaves an empty file only if killed in that
/// moment; a later run removes it.
fn just_made(m: &std::fs::Metadata) -> bool {
    m.len() == 0
        && m.modified().is_ok_and(|t| {
            std::time::SystemTime::now()
                .duration_since(t)
                .map_or(true, |age| age < FRESH)
        })
}

/// The directory and file name of a filter path.
pub(super) fn dir_and_name(target: &Path) -> Result<(&Path, &std::ffi::OsStr)> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .with_context(|| format!("{} does not name a file", target.display()))?;
    Ok((dir, name))
}
