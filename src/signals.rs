//! SIGINT and SIGTERM as a flag: runs that write a filter stop at a safe point
//! (see `pipeline::run`) instead of dying with work half recorded. SIGBUS
//! (a mapped file shrank) as a message and exit status 2.

use signal_hook::consts::{SIGBUS, SIGINT, SIGTERM};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The signal received (0: none).
static RECEIVED: AtomicUsize = AtomicUsize::new(0);

/// From now on, SIGINT and SIGTERM set the flag instead of killing the process.
pub fn catch() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in [SIGINT, SIGTERM] {
            // SAFETY: the handler only stores to an atomic (async-signal-safe).
            let _ = unsafe {
                signal_hook::low_level::register(sig, move || {
                    RECEIVED.store(sig as usize, Ordering::SeqCst);
                })
            };
        }
    });
}

/// The signal received since [`catch`], or 0.
pub fn received() -> usize {
    RECEIVED.load(Ordering::SeqCst)
}

/// What SIGBUS means for `seen`, printed when it arrives.
const SIGBUS_MESSAGE: &[u8] =
    b"\nseen: error: a memory-mapped file shrank while in use (another program \
truncated a filter file, or an input file while its lines were being counted): stopping. \
Give -n to skip counting inputs, and leave filter files alone while seen uses them.\n";

/// From now on, SIGBUS (an access to a page of a memory-mapped file past its
/// new end) ends the process with exit status 2 and [`SIGBUS_MESSAGE`] instead
/// of a bare "Bus error".
pub fn explain_sigbus() {
    // SAFETY: the handler makes two system calls, write(2) to standard error
    // and _exit(2), both async-signal-safe; it takes no lock and allocates
    // nothing (`stderr()` is a handle to a static, `as_fd` is fd 2). It never
    // returns, which matters: returning would retry the faulting access.
    let _ = unsafe {
        signal_hook::low_level::register(SIGBUS, || {
            let _ = rustix::io::write(std::io::stderr().as_fd(), SIGBUS_MESSAGE);
            signal_hook::low_level::exit(2);
        })
    };
}
