//! Buffered standard output, and recognising a closed pipe.

use std::io::{self, BufWriter, Stdout};

/// Output buffer size: no per-line system calls. Vectored writes at least this
/// large (`dedup`'s runs of records) bypass the buffer and are not copied.
const BUF: usize = 64 << 10;

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
