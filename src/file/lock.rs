//! File locks on filters: `flock`, shared for readers and exclusive for
//! writers, waited for with a note on stderr, and re-taken when the path was
//! replaced meanwhile.

use super::path::not_a_filter_kind;
use anyhow::{Context, Result, bail};
use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// How long to wait for a lock before saying so on stderr (processes sharing a
/// filter take short turns by design; only a long wait is news).
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// The most to wait for a lock (`--wait`), when set.
static MAX_WAIT: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();

/// From now on, a lock held by another process for `wait` is an error
/// (`--wait`; `main` sets it once). Without it, waits last as long as it takes.
pub fn wait_for_locks_at_most(wait: std::time::Duration) {
    let _ = MAX_WAIT.set(wait);
}

/// Takes a shared or exclusive `flock`, saying on stderr when it has waited
/// [`LOCK_PATIENCE`], giving up after `--wait`. SIGINT/SIGTERM (when caught)
/// end the wait with an error.
pub(super) fn lock(file: &File, path: &Path, exclusive: bool) -> Result<()> {
    let start = std::time::Instant::now();
    let mut said = false;
    loop {
        let tried = if exclusive {
            file.try_lock()
        } else {
            file.try_lock_shared()
        };
        match tried {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) => {
                if crate::signals::received() != 0 {
                    bail!(
                        "interrupted while waiting for the lock on {}",
                        path.display()
                    );
                }
                if let Some(max) = MAX_WAIT.get()
                    && start.elapsed() >= *max
                {
                    bail!(
                        "{} for {} lock on {}: another process holds it \
                         (`fuser {}` names it); pass a longer --wait, or none to wait until it is free",
                        if max.is_zero() {
                            "did not wait (--wait 0)".to_string()
                        } else {
                            format!("gave up waiting {max:?}")
                        },
                        if exclusive {
                            "an exclusive"
                        } else {
                            "a shared"
                        },
                        path.display(),
                        path.display()
                    );
                }
                if !said && start.elapsed() >= LOCK_PATIENCE {
                    crate::say!(
                        "seen: waiting for {} lock on {} (another process is using it)",
                        if exclusive {
                            "an exclusive"
                        } else {
                            "a shared"
                        },
                        path.display()
                    );
                    said = true;
                }
                // flock has no timeout: poll (a few hundred times a second at most).
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", path.display()));
            }
        }
    }
}

/// Opens `path` and locks it, retrying when the path was replaced (by an atomic
/// `build --force`) while we waited, so the lock we hold is on the current file.
pub(super) fn open_locked(path: &Path, write: bool) -> Result<File> {
    loop {
        // A FIFO would block `open` until a writer came, and a device may act
        // on being opened: look first, and open without blocking.
        if let Ok(m) = std::fs::metadata(path) {
            not_a_filter_kind(path, &m)?;
        }
        let file = match OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "filter {} does not exist: make one with `seen build -o {} FILE`",
                path.display(),
                path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory || path.is_dir() => {
                bail!("{} is a directory: give a filter file", path.display())
            }
            Err(e)
                if write
                    && matches!(
                        e.kind(),
                        std::io::ErrorKind::PermissionDenied
                            | std::io::ErrorKind::ReadOnlyFilesystem
                    ) =>
            {
                bail!(
                    "cannot open filter {} for writing: {} (`dedup -f` and `build --add` \
                     record lines in it; `query`, `stats` and `verify` only read it)",
                    path.display(),
                    std::io::Error::from(e.kind())
                )
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot open filter {}", path.display()));
            }
        };
        let meta = file.metadata()?;
        // Swapped for something else between the look and the open.
        not_a_filter_kind(path, &meta)?;
        // A regular file: back to blocking (a lease or a FUSE file system
        // may act on O_NONBLOCK).
        let flags = rustix::fs::fcntl_getfl(&file)?;
        rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
        lock(&file, path, write)?;
        match std::fs::metadata(path) {
            Ok(now) if now.ino() == meta.ino() && now.dev() == meta.dev() => return Ok(file),
            _ => continue,
        }
    }
}
