//! Buffered standard output, checking it can take data, and recognising a
//! closed pipe.

use std::io::{self, BufWriter, Stdout};

/// Output buffer size: no per-line system calls. Vectored writes at least this
/// large (`dedup`'s runs of records) bypass the buffer and are not copied.
pub const BUF: usize = 64 << 10;

/// Standard output behind one large buffer (`Stdout`, not its lock, so the
/// writer thread can own it).
pub fn stdout() -> BufWriter<Stdout> {
    BufWriter::with_capacity(BUF, io::stdout())
}

/// Whether an error (anywhere in its chain) is a write to a closed pipe, which
/// ends a run quietly, as `seen dedup big.txt | head` expects.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Refuses a standard output that cannot take data, before a run reads or
/// records anything: closed when the process started (`closed`: the runtime
/// has put /dev/null there since), or open for reading only (`1< FILE`).
///
/// # Errors
/// Either case, saying how to give an output.
pub fn check_stdout(closed: bool) -> anyhow::Result<()> {
    let why = if closed {
        "is closed"
    } else {
        match rustix::fs::fcntl_getfl(io::stdout()) {
            Ok(fl) if fl & rustix::fs::OFlags::RWMODE == rustix::fs::OFlags::RDONLY => {
                "is open for reading only"
            }
            _ => return Ok(()),
        }
    };
    anyhow::bail!(
        "standard output {why}: seen writes its results there; redirect it to a file, \
         or to /dev/null to discard them (nothing was read or recorded)"
    )
}
