//! The geometry of a bit array (layout version 1, specified in the
//! [`filter`](super) docs): the block constants, [`Scheme`], [`Layout`] with its
//! checks and the blocks of a key, and the byte-level access to one block that
//! the other rooms share. Kept apart so that the reference path, the kernels and
//! the occupancy scan all address blocks and words through the same few lines.

use crate::hash::Hash128;

/// Bits in one block.
pub(crate) const BLOCK_BITS: u32 = 512;
/// Bytes in one block.
pub(crate) const BLOCK_BYTES: usize = 64;
/// Blocks in one page (4 KiB); block counts are multiples of this.
pub(crate) const BLOCKS_PER_PAGE: u64 = 64;
/// Largest `k` (bits per block) a filter may use.
pub(crate) const MAX_K: u32 = 64;

/// How a key's `k` bits are placed inside each of its blocks (see the
/// [`filter`](super) docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Bit positions v1: `k` 9-bit positions anywhere in the block.
    Scattered,
    /// Bit positions v2: `k/8` 6-bit positions in each of the block's eight
    /// 64-bit words (`k` a multiple of 8).
    Sectored,
}

impl Scheme {
    /// The scheme's name in `stats` and `plan` output.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Scattered => "scattered",
            Scheme::Sectored => "sectored",
        }
    }
}

/// Geometry of one bit array: everything needed to reproduce bit positions
/// (together with the hash seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Number of 512-bit blocks; a positive multiple of `BLOCKS_PER_PAGE` (64).
    pub nblocks: u64,
    /// Bits set per block per key, `1..=MAX_K`.
    pub k: u32,
    /// Blocks per key: 1, 2 or 4 (or 3 with [`Scheme::Sectored`]).
    pub blocks_per_key: u32,
    /// Where in a block the bits go.
    pub scheme: Scheme,
}

/// Why a [`Layout`] is not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError(pub String);

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LayoutError {}

impl Layout {
    /// Checks the invariants every other function relies on.
    ///
    /// # Errors
    /// Returns a message naming the offending parameter.
    pub fn validate(&self) -> Result<(), LayoutError> {
        if self.nblocks == 0 || !self.nblocks.is_multiple_of(BLOCKS_PER_PAGE) {
            return Err(LayoutError(format!(
                "block count {} is not a positive multiple of {BLOCKS_PER_PAGE}",
                self.nblocks
            )));
        }
        if self.nblocks.checked_mul(BLOCK_BYTES as u64).is_none() {
            return Err(LayoutError(format!(
                "block count {} is too large",
                self.nblocks
            )));
        }
        if self.k == 0 || self.k > MAX_K {
            return Err(LayoutError(format!(
                "k = {} is outside 1..={MAX_K}",
                self.k
            )));
        }
        if self.scheme == Scheme::Sectored && !self.k.is_multiple_of(8) {
            return Err(LayoutError(format!(
                "k = {} is not a multiple of 8, as sectored bit positions need",
                self.k
            )));
        }
        let spreads_ok = match self.scheme {
            Scheme::Scattered => matches!(self.blocks_per_key, 1 | 2 | 4),
            Scheme::Sectored => matches!(self.blocks_per_key, 1..=4),
        };
        if !spreads_ok {
            return Err(LayoutError(format!(
                "blocks per key = {} is not 1, 2 or 4 (or 3 with sectored bit positions)",
                self.blocks_per_key
            )));
        }
        Ok(())
    }

    /// Size of the bit array in bytes.
    pub fn bytes(&self) -> u64 {
        self.nblocks * BLOCK_BYTES as u64
    }

    /// Size of the bit array in bits.
    pub fn bits(&self) -> u64 {
        self.nblocks * BLOCK_BITS as u64
    }

    /// The blocks of one key (the first `blocks_per_key` entries are used).
    #[inline(always)]
    pub fn blocks(&self, h: Hash128) -> [u64; 4] {
        let mut blocks = [0u64; 4];
        if self.blocks_per_key == 1 {
            blocks[0] = mul_hi(h.lo, self.nblocks);
        } else {
            // x distinct blocks of one page: an arithmetic progression with an odd
            // step modulo 64 never repeats a block.
            let page = mul_hi(h.lo, self.nblocks / BLOCKS_PER_PAGE);
            let first = h.hi & 63;
            let step = ((h.hi >> 6) & 31) * 2 + 1;
            for (j, b) in blocks
                .iter_mut()
                .take(self.blocks_per_key as usize)
                .enumerate()
            {
                *b = page * BLOCKS_PER_PAGE + ((first + j as u64 * step) & 63);
            }
        }
        blocks
    }
}

/// `⌊a · b / 2^64⌋`: maps a 64-bit hash uniformly onto `0..b` without modulo bias
/// and using every bit of `a`.
#[inline]
pub(super) fn mul_hi(a: u64, b: u64) -> u64 {
    ((a as u128 * b as u128) >> 64) as u64
}

#[inline]
pub(super) fn block(bits: &[u8], b: u64) -> &[u8] {
    let start = b as usize * BLOCK_BYTES;
    &bits[start..start + BLOCK_BYTES]
}

/// Word `w` (0–7) of a block: bytes `8w..8w + 8`, little-endian.
#[inline(always)]
pub(super) fn load_word(block: &[u8], w: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&block[w * 8..w * 8 + 8]);
    u64::from_le_bytes(a)
}

/// Writes word `w` of a block (see [`load_word`]).
#[inline(always)]
pub(super) fn store_word(block: &mut [u8], w: usize, v: u64) {
    block[w * 8..w * 8 + 8].copy_from_slice(&v.to_le_bytes());
}

#[inline(always)]
pub(super) fn block_of(bits: &[u8], b: u64) -> &[u8; BLOCK_BYTES] {
    let start = b as usize * BLOCK_BYTES;
    bits[start..start + BLOCK_BYTES]
        .try_into()
        .expect("64-byte block")
}

#[inline(always)]
pub(super) fn block_of_mut(bits: &mut [u8], b: u64) -> &mut [u8; BLOCK_BYTES] {
    let start = b as usize * BLOCK_BYTES;
    (&mut bits[start..start + BLOCK_BYTES])
        .try_into()
        .expect("64-byte block")
}
