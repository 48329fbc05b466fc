//! SIGINT and SIGTERM as a flag: runs that write a filter stop at a safe point
//! (see `pipeline::run`) instead of dying with work half recorded. SIGBUS
//! (a mapped file shrank) as a message and exit status 2. SIGXFSZ ignored, so
//! a file-size limit is a write error.

use signal_hook::consts::{SIGINT, SIGTERM};
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

/// The error a run returns when SIGINT or SIGTERM stopped it at a safe
/// point (what was judged is written and recorded); `main` exits with
/// 128 + the signal, as a shell reports a process killed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted(pub usize);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by signal {}", self.0)
    }
}

impl std::error::Error for Interrupted {}

/// From now on, SIGXFSZ (a write past the file-size limit, `ulimit -f`) is
/// ignored: the write fails with EFBIG instead, and the usual error path runs
/// (message, temporary file removed, exit status 2) instead of the process
/// dying with a temporary file left behind.
pub fn ignore_sigxfsz() {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler
    // and touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// What SIGBUS means for `seen`, printed when it arrives.
const SIGBUS_MESSAGE: &[u8] =
    b"\nseen: error: a memory-mapped file shrank while in use (another program \
truncated a filter file, or an input file while it was being read; or its device failed): stopping. \
Leave filter files alone while seen uses them; --no-mmap reads input files instead of mapping them.\n";

/// The SIGBUS handler: the first thread to get here prints [`SIGBUS_MESSAGE`]
/// and ends the process with status 2; any other thread that faults meanwhile
/// waits for that, so the message is printed once and the status is always 2.
extern "C" fn on_sigbus(_: libc::c_int) {
    static FIRST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
    if FIRST.swap(false, Ordering::SeqCst) {
        let _ = rustix::io::write(std::io::stderr().as_fd(), SIGBUS_MESSAGE);
        // SAFETY: _exit(2) is async-signal-safe and ends the process at once.
        unsafe { libc::_exit(2) };
    }
    loop {
        // SAFETY: pause(2) is async-signal-safe; the first thread ends the
        // process while this one waits.
        unsafe { libc::pause() };
    }
}

/// From now on, SIGBUS (an access to a page of a memory-mapped file past its
/// new end) ends the process with exit status 2 and [`SIGBUS_MESSAGE`] instead
/// of a bare "Bus error". Installed with `sigaction` directly, replacing Rust's
/// own handler (which on Linux only watches SIGSEGV for stack overflows, and
/// for any other SIGBUS restores the default action and returns: a second
/// thread faulting then would die without the message).
pub fn explain_sigbus() {
    // SAFETY: `action` is fully initialised (zeroed, then an empty mask and the
    // handler); the handler only makes async-signal-safe calls (an atomic swap,
    // write(2), _exit(2), pause(2)), takes no lock and allocates nothing
    // (`stderr()` is a handle to a static, `as_fd` is fd 2). It never returns,
    // which matters: returning would retry the faulting access.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    }
}
