//! The one wrapper around the CPU's prefetch instruction, shared by the loops
//! that read ahead of themselves: the record-end scan (`scan.rs`) and the
//! filter's batches (`filter/`).

/// Asks the CPU to start loading the cache line at `offset` of `bytes` (a
/// hint: no effect on results; nothing past the end of `bytes`, nor on targets
/// without a prefetch instruction).
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], offset: usize) {
    #[cfg(target_arch = "x86_64")]
    if offset < bytes.len() {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: prefetching is only a hint: it never faults and reads no memory
        // architecturally; the address is inside `bytes` anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().wrapping_add(offset).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, offset);
}

/// [`prefetch`] of item `index` of `items`.
#[inline(always)]
pub(crate) fn prefetch_item<T>(items: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if index < items.len() {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: prefetching is only a hint: it never faults and reads no memory
        // architecturally; the address is inside `items` anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(items.as_ptr().wrapping_add(index).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, index);
}
