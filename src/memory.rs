//! Large buffers grown fallibly. Running out of memory (or into a limit such
//! as `ulimit -v`) while growing an input chunk, a chunk's hashes or the set
//! of keys waiting to be recorded is an error that names the buffer and ends
//! the run with exit status 2 through the usual path (temporary files
//! removed, a filter file committed), instead of the abort (SIGABRT) that
//! Rust's infallible allocation gives. Small allocations still abort: see
//! the README's Limits.

use std::io;

/// Under a limit on the address space (`ulimit -v`), makes glibc's `malloc`
/// keep one arena instead of one per thread: each arena reserves 64 MiB of
/// address space up front, so the pipeline's threads alone would take 300
/// MiB of the limit before a byte of data. `seen` allocates its buffers once
/// and reuses them, so one arena costs no measurable time. Call it before
/// any thread starts. Without a limit, nothing changes.
pub fn fit_address_space_limit() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if limited(rustix::process::Resource::As) {
        // SAFETY: mallopt only changes a malloc parameter (no thread has
        // started yet).
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// Whether this process has a (soft) limit on `resource`: `Resource::As`
/// for `ulimit -v`, `Resource::Fsize` for `ulimit -f`.
pub fn limited(resource: rustix::process::Resource) -> bool {
    rustix::process::getrlimit(resource).current.is_some()
}

/// The error for a buffer of `bytes` bytes for `what` that could not be had.
pub fn out_of_memory(bytes: usize, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!(
            "out of memory: cannot allocate {} for {what} (is a memory limit such as \
             `ulimit -v` too low for this run?)",
            indicatif::HumanBytes(bytes as u64)
        ),
    )
}

/// Makes room in `v` for `more` elements beyond its length.
///
/// # Errors
/// [`out_of_memory`] when the allocation fails.
pub fn reserve<T>(v: &mut Vec<T>, more: usize, what: &str) -> io::Result<()> {
    v.try_reserve(more)
        .map_err(|_| out_of_memory(more.saturating_mul(size_of::<T>()), what))
}

/// Resizes `buf` to `len` bytes (new bytes zero).
///
/// # Errors
/// [`out_of_memory`] when the allocation fails; `buf` is then unchanged.
pub fn resize(buf: &mut Vec<u8>, len: usize, what: &str) -> io::Result<()> {
    if len > buf.len() {
        buf.try_reserve_exact(len - buf.len())
            .map_err(|_| out_of_memory(len, what))?;
    }
    buf.resize(len, 0);
    Ok(())
}

/// Asks for 2 MiB pages under the untouched buffer of `v` (its whole
/// capacity), for large tables met at random (a forget list's entries and
/// index): one page-table walk covers 2 MiB instead of 4 KiB, and one fault
/// fills 2 MiB. Only a hint, as for a filter's layers
/// ([`crate::tuning`]'s `huge_pages`, off with `SEEN_NO_HUGEPAGE`); buffers
/// under 4 MiB are left alone.
pub fn huge_pages_for<T>(v: &Vec<T>) {
    const HUGE: usize = 2 << 20;
    let bytes = v.capacity() * size_of::<T>();
    if bytes < 2 * HUGE || !crate::tuning::get().huge_pages {
        return;
    }
    let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
    let end = (v.as_ptr() as usize + bytes) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside `v`'s allocation, which this process
        // owns; MADV_HUGEPAGE changes no byte of it, only the size of the
        // pages that back it. A failure (no transparent huge pages) is
        // ignored: the hint is optional.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_buffer_is_an_error_naming_it() {
        let mut v: Vec<u64> = Vec::new();
        let e = reserve(&mut v, usize::MAX / 16, "the test's keys");
        // Seen from outside, or an optimised build may drop the allocation
        // nothing reads, and with it the failure.
        std::hint::black_box(&v);
        let e = e.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        assert!(e.to_string().contains("the test's keys"), "{e}");
        let mut b = vec![1u8; 3];
        let e = resize(&mut b, usize::MAX / 2, "a chunk");
        std::hint::black_box(&b);
        let e = e.unwrap_err();
        assert!(e.to_string().contains("a chunk"), "{e}");
        assert_eq!(b, [1, 1, 1]);
        resize(&mut b, 5, "a chunk").unwrap();
        assert_eq!(b, [1, 1, 1, 0, 0]);
    }
}
