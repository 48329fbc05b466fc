//! Finding record terminators in a chunk: every position at once, 64 bytes at a
//! time, instead of one `memchr` call per record.
//!
//! A `memchr` call pays its set-up for every record, and records here are short
//! (URLs average 80 bytes). Comparing 64 bytes with the terminator gives a
//! 64-bit mask whose set bits are the terminators, read off with
//! `trailing_zeros`. On x86_64 the compare is SSE2 (part of the base
//! instruction set, so there is nothing to detect at run time), with the
//! input prefetched a page ahead; elsewhere `memchr`'s iterator does the work.

/// Calls `f(base + i + 1)` in order for every `i` where `data[i] == term`: the
/// end (terminator included) of every record that ends in `data`, as an
/// offset of the buffer `data` starts at `base` of. Inlined into its caller,
/// so that a record can be hashed the moment its end is found, while its bytes
/// are still in the first-level cache (a separate pass to collect the ends and
/// another to hash measured 1.10x the time of the two together).
#[inline(always)]
pub(crate) fn for_each_end(data: &[u8], term: u8, base: usize, mut f: impl FnMut(usize)) {
    #[cfg(target_arch = "x86_64")]
    {
        let whole = data.len() / 64 * 64;
        let mut at = 0;
        while at < whole {
            crate::prefetch::prefetch(data, at + PREFETCH_AHEAD);
            let mut mask = terms64(&data[at..at + 64], term);
            while mask != 0 {
                f(base + at + mask.trailing_zeros() as usize + 1);
                mask &= mask - 1;
            }
            at += 64;
        }
        memchr::memchr_iter(term, &data[whole..]).for_each(|i| f(base + whole + i + 1));
    }
    #[cfg(not(target_arch = "x86_64"))]
    memchr::memchr_iter(term, data).for_each(|i| f(base + i + 1));
}

/// How far ahead of the scan [`for_each_end`] asks for the input's cache lines:
/// one 4 KiB page, so the next page's first lines are on their way before the
/// scan gets there (the hardware prefetchers stop at page boundaries, and a
/// mapped input is mapped with 4 KiB pages). Measured on the bench corpus
/// (`scripts/ab.sh`, 11 runs): `dedup` 0.87-0.88x at 4096 bytes, 0.90x at
/// 2048, 0.91x at 8192, 0.93x at 512.
#[cfg(target_arch = "x86_64")]
const PREFETCH_AHEAD: usize = 4096;

/// The positions of `term` in 64 bytes, as the bits of a mask (bit `i` for
/// byte `i`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn terms64(block: &[u8], term: u8) -> u64 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    assert!(block.len() >= 64);
    let mut mask = 0u64;
    // SAFETY: SSE2 is part of x86_64; the four 16-byte loads are inside
    // `block` (checked above), and `loadu` has no alignment requirement.
    unsafe {
        let t = _mm_set1_epi8(term as i8);
        for q in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * q).cast());
            let hits = _mm_movemask_epi8(_mm_cmpeq_epi8(v, t)) as u32 as u64;
            mask |= hits << (16 * q);
        }
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The ends [`for_each_end`] gives, collected.
    fn record_ends(data: &[u8], term: u8, base: usize, ends: &mut Vec<usize>) {
        for_each_end(data, term, base, |e| ends.push(e));
    }

    fn reference(data: &[u8], term: u8, base: usize) -> Vec<usize> {
        data.iter()
            .enumerate()
            .filter(|(_, b)| **b == term)
            .map(|(i, _)| base + i + 1)
            .collect()
    }

    #[test]
    fn every_position_of_a_block_and_the_tail() {
        // A terminator at each position 0..200 alone (whole blocks, the
        // boundary bytes 63/64, and the tail), for newline and NUL.
        for term in [b'\n', 0] {
            for pos in 0..200 {
                let mut data = vec![if term == 0 { b'x' } else { 0 }; 200];
                data[pos] = term;
                let mut got = vec![7];
                record_ends(&data, term, 1000, &mut got);
                assert_eq!(got, [7, 1000 + pos + 1], "term {term} at {pos}");
            }
        }
        let mut got = Vec::new();
        record_ends(&[b'\n'; 130], b'\n', 0, &mut got);
        assert_eq!(got, (1..=130).collect::<Vec<_>>());
        got.clear();
        record_ends(&[], b'\n', 5, &mut got);
        assert!(got.is_empty());
    }

    proptest! {
        #[test]
        fn matches_a_byte_by_byte_scan(
            data in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(0u8), Just(0xffu8), any::<u8>()], 0..700),
            start in 0usize..70,
            term in prop_oneof![Just(b'\n'), Just(0u8), Just(0xffu8), any::<u8>()],
            base in 0usize..1_000_000,
        ) {
            // `start` moves the slice against 16-byte alignment.
            let data = &data[start.min(data.len())..];
            let mut got = Vec::new();
            record_ends(data, term, base, &mut got);
            prop_assert_eq!(got, reference(data, term, base));
        }
    }
}
