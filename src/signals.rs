//! SIGINT and SIGTERM as a flag: runs that write a filter stop at a safe point
//! (see `pipeline::run`) instead of dying with work half recorded.

use signal_hook::consts::{SIGINT, SIGTERM};
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
