//! One key at a time, straight from the layout spec: the [`Probe`] of a key
//! (its blocks and bit masks), [`contains`] and [`test_and_set`] over it, and
//! the per-key functions without a `Probe` that the batches fall back on for
//! layouts without a specialised kernel. This is the reference: the batch
//! kernels are tested against it bit for bit, and the golden tests pin it.

use super::layout::{
    BLOCK_BYTES, Layout, Scheme, block, block_of, block_of_mut, load_word, store_word,
};
use crate::hash::Hash128;

impl Layout {
    /// Computes the blocks and bit masks of one key.
    #[inline]
    pub fn probe(&self, h: Hash128) -> Probe {
        let x = self.blocks_per_key as usize;
        let mut p = Probe {
            blocks: self.blocks(h),
            masks: [[0; 8]; 4],
            x,
        };
        match self.scheme {
            Scheme::Scattered => {
                let mut pos = Positions::new(h);
                for mask in p.masks.iter_mut().take(x) {
                    for _ in 0..self.k {
                        let p = pos.next();
                        mask[p >> 6] |= 1u64 << (p & 63);
                    }
                }
            }
            Scheme::Sectored => {
                let mut stream = SplitMix64(h.hi);
                for mask in p.masks.iter_mut().take(x) {
                    for _ in 0..self.k / 8 {
                        let out = stream.next_u64();
                        for (w, m) in mask.iter_mut().enumerate() {
                            *m |= 1u64 << ((out >> (6 * w)) & 63);
                        }
                    }
                }
            }
        }
        p
    }
}

/// The blocks and 512-bit masks of one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// Block indices (first `x` are used).
    pub blocks: [u64; 4],
    /// Bit masks, one per block, as eight little-endian 64-bit words.
    pub masks: [[u64; 8]; 4],
    /// Number of blocks used.
    pub x: usize,
}

/// SplitMix64 (Steele, Lea, Flood 2014), used as a cheap, pinned bit stream.
#[derive(Clone, Copy)]
struct SplitMix64(u64);

impl SplitMix64 {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Returns true when every bit of the probe is set in `bits`.
///
/// `bits` must be exactly `layout.bytes()` long (checked by the callers that own
/// the array; a short slice panics on indexing rather than reading out of bounds).
#[inline]
pub fn contains(bits: &[u8], probe: &Probe) -> bool {
    for j in 0..probe.x {
        let blk = block(bits, probe.blocks[j]);
        for (w, &m) in probe.masks[j].iter().enumerate() {
            if m != 0 && load_word(blk, w) & m != m {
                return false;
            }
        }
    }
    true
}

/// Sets every bit of the probe; returns true when they were all set already
/// (the key was "probably seen"). Blocks are written only when a bit is missing,
/// so duplicates never dirty a page.
#[inline]
pub fn test_and_set(bits: &mut [u8], probe: &Probe) -> bool {
    let mut seen = true;
    for j in 0..probe.x {
        let start = probe.blocks[j] as usize * BLOCK_BYTES;
        let blk = &mut bits[start..start + BLOCK_BYTES];
        for (w, &m) in probe.masks[j].iter().enumerate() {
            if m == 0 {
                continue;
            }
            let old = load_word(blk, w);
            if old & m != m {
                seen = false;
                store_word(blk, w, old | m);
            }
        }
    }
    seen
}

/// The stream of 9-bit bit positions of one key (see the [`filter`](super)
/// docs).
#[derive(Clone, Copy)]
struct Positions {
    stream: SplitMix64,
    word: u64,
    left: u32,
}

impl Positions {
    #[inline(always)]
    fn new(h: Hash128) -> Positions {
        Positions {
            stream: SplitMix64(h.hi),
            word: 0,
            left: 0,
        }
    }

    #[inline(always)]
    fn next(&mut self) -> usize {
        if self.left == 0 {
            self.word = self.stream.next_u64();
            self.left = 7;
        }
        let pos = (self.word & 511) as usize;
        self.word >>= 9;
        self.left -= 1;
        pos
    }
}

/// Tests the next `k` positions of `pos` in one block without data-dependent
/// branches: nonzero when at least one of those bits is unset.
#[inline(always)]
fn missing_bits(blk: &[u8; BLOCK_BYTES], pos: &mut Positions, k: u32) -> u8 {
    let mut missing = 0u8;
    for _ in 0..k {
        let p = pos.next();
        missing |= !blk[p >> 3] & (1 << (p & 7));
    }
    missing
}

/// [`test_and_set`] without a [`Probe`]: the hot path. Each block's bits are
/// tested without data-dependent branches; the block is written only when a bit
/// is missing (a second pass over the same positions).
#[inline]
pub(super) fn test_and_set_key(bits: &mut [u8], layout: &Layout, h: Hash128) -> bool {
    if layout.scheme == Scheme::Sectored {
        return test_and_set(bits, &layout.probe(h));
    }
    let blocks = layout.blocks(h);
    let mut pos = Positions::new(h);
    let mut seen = true;
    for &b in blocks.iter().take(layout.blocks_per_key as usize) {
        let again = pos;
        if missing_bits(block_of(bits, b), &mut pos, layout.k) != 0 {
            seen = false;
            let blk = block_of_mut(bits, b);
            let mut pos = again;
            for _ in 0..layout.k {
                let p = pos.next();
                blk[p >> 3] |= 1 << (p & 7);
            }
        }
    }
    seen
}

/// Sets every bit of a key without testing them first (for keys already judged
/// new, e.g. recorded after their line was printed).
#[inline]
pub(super) fn set_key(bits: &mut [u8], layout: &Layout, h: Hash128) {
    if layout.scheme == Scheme::Sectored {
        test_and_set(bits, &layout.probe(h));
        return;
    }
    let blocks = layout.blocks(h);
    let mut pos = Positions::new(h);
    for &b in blocks.iter().take(layout.blocks_per_key as usize) {
        let blk = block_of_mut(bits, b);
        for _ in 0..layout.k {
            let p = pos.next();
            blk[p >> 3] |= 1 << (p & 7);
        }
    }
}

/// [`contains`] without a [`Probe`]: stops at the first block missing a bit.
#[inline]
pub(super) fn contains_key(bits: &[u8], layout: &Layout, h: Hash128) -> bool {
    if layout.scheme == Scheme::Sectored {
        return contains(bits, &layout.probe(h));
    }
    let blocks = layout.blocks(h);
    let mut pos = Positions::new(h);
    for &b in blocks.iter().take(layout.blocks_per_key as usize) {
        if missing_bits(block_of(bits, b), &mut pos, layout.k) != 0 {
            return false;
        }
    }
    true
}
