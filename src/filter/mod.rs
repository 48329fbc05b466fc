//! The Bloom filter as a pure data structure: block addressing, test-and-set and
//! occupancy statistics over plain byte slices, plus the sizing math ([`sizing`]).
//!
//! It knows nothing about files, memory maps, threads or the command line: the
//! bit array is a `&[u8]` / `&mut [u8]` handed in by the caller, so the same code
//! serves an anonymous in-memory filter, a memory-mapped file and, later, a
//! remote store.
//!
//! # Layout (version 1)
//!
//! The bit array is a sequence of 512-bit (64-byte) *blocks*, grouped in *pages*
//! of 64 blocks (4 KiB); the block count is always a multiple of 64. A key touches
//! `x` blocks (`x` = 1, 2 or 4; also 3 with sectored positions, below) and sets
//! `k` bits in each of them:
//!
//! * `x = 1`: block = `⌊lo · nblocks / 2^64⌋` (all 64 bits of `lo` count).
//! * `x > 1`: page = `⌊lo · npages / 2^64⌋`; with `a = hi & 63` and
//!   `s = 2·((hi >> 6) & 31) + 1`, block `j` of the key is `page · 64 + ((a + j·s) & 63)`:
//!   `x` distinct blocks, all in one 4 KiB page.
//! * Bit positions come from a SplitMix64 stream seeded with `hi`, by one of two
//!   [`Scheme`]s recorded per layer:
//!   - *scattered* (bit positions v1, every file before format 1.4): each 64-bit
//!     output gives seven 9-bit positions (low bits first); block `j` takes
//!     positions `j·k .. j·k + k` of the stream;
//!   - *sectored* (bit positions v2, format 1.4): `k` is a multiple of 8 and
//!     each 64-bit word of a block gets `k/8` of the key's bits. Output
//!     `t = j·(k/8) + r` of the stream is round `r` of block `j`: word `w`
//!     (0–7) of the block gets bit `(out >> 6w) & 63`. The test-and-set of a
//!     block is then eight independent word operations, with no position
//!     addressing a byte, for the same false-positive rate (the sizing formula
//!     has the exact rate of each scheme).
//! * Bit `p` of a block is bit `p & 7` of byte `p >> 3` of the block (so bit `b`
//!   of word `w` is bit `64w + b`: words are little-endian).

pub mod sizing;

use crate::hash::Hash128;
use crate::prefetch::prefetch;

/// Bits in one block.
pub const BLOCK_BITS: u32 = 512;
/// Bytes in one block.
pub const BLOCK_BYTES: usize = 64;
/// Blocks in one page (4 KiB); block counts are multiples of this.
pub const BLOCKS_PER_PAGE: u64 = 64;
/// Largest `k` (bits per block) a filter may use.
pub const MAX_K: u32 = 64;

/// How a key's `k` bits are placed inside each of its blocks (see the module docs).
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
    /// Number of 512-bit blocks; a positive multiple of [`BLOCKS_PER_PAGE`].
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

/// `⌊a · b / 2^64⌋`: maps a 64-bit hash uniformly onto `0..b` without modulo bias
/// and using every bit of `a`.
#[inline]
fn mul_hi(a: u64, b: u64) -> u64 {
    ((a as u128 * b as u128) >> 64) as u64
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

#[inline]
fn block(bits: &[u8], b: u64) -> &[u8] {
    let start = b as usize * BLOCK_BYTES;
    &bits[start..start + BLOCK_BYTES]
}

/// Word `w` (0–7) of a block: bytes `8w..8w + 8`, little-endian.
#[inline(always)]
fn load_word(block: &[u8], w: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&block[w * 8..w * 8 + 8]);
    u64::from_le_bytes(a)
}

/// Writes word `w` of a block (see [`load_word`]).
#[inline(always)]
fn store_word(block: &mut [u8], w: usize, v: u64) {
    block[w * 8..w * 8 + 8].copy_from_slice(&v.to_le_bytes());
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

/// How many keys ahead [`insert_batch`] and [`contains_batch`] prefetch. On the
/// 2-core development VM, distances 4–32 measured the same (and 0 was 2.5×
/// slower): the limit there is misses in flight, not distance.
pub const PREFETCH_DISTANCE: usize = 16;

/// Prefetches every block of a key.
#[inline(always)]
pub fn prefetch_key(bits: &[u8], layout: &Layout, h: Hash128) {
    let blocks = layout.blocks(h);
    for b in blocks.iter().take(layout.blocks_per_key as usize) {
        prefetch(bits, *b as usize * BLOCK_BYTES);
    }
}

/// The stream of 9-bit bit positions of one key (see the module docs).
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

#[inline(always)]
fn block_of(bits: &[u8], b: u64) -> &[u8; BLOCK_BYTES] {
    let start = b as usize * BLOCK_BYTES;
    bits[start..start + BLOCK_BYTES]
        .try_into()
        .expect("64-byte block")
}

#[inline(always)]
fn block_of_mut(bits: &mut [u8], b: u64) -> &mut [u8; BLOCK_BYTES] {
    let start = b as usize * BLOCK_BYTES;
    (&mut bits[start..start + BLOCK_BYTES])
        .try_into()
        .expect("64-byte block")
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
pub fn test_and_set_key(bits: &mut [u8], layout: &Layout, h: Hash128) -> bool {
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
pub fn set_key(bits: &mut [u8], layout: &Layout, h: Hash128) {
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

/// Sets the bits of every key in `bits` (prefetching ahead like
/// [`insert_batch`]), without asking whether they were present.
pub fn set_batch(bits: &mut [u8], layout: &Layout, hashes: &[Hash128]) {
    let nblocks = layout.nblocks;
    macro_rules! run {
        ($x:literal, $r:ty) => {{
            lean::<Set, $x, $r, false>(bits, nblocks, &[], hashes, &mut Vec::new());
        }};
        ($x:literal, $r:ty, $fast:ty) => {{
            // SAFETY: `dispatch` passes an AVX2 rule only when `fixed::simd()`.
            unsafe { lean_avx2::<Set, $x, $fast>(bits, nblocks, &[], hashes, &mut Vec::new()) };
        }};
    }
    fixed::dispatch!(layout, run, {
        // The general path, for layouts without a specialised kernel.
        let mut bits = bits;
        for_each_prefetched(&mut bits, layout, &[], hashes, |bits, h| {
            set_key(bits, layout, h)
        });
    });
}

/// [`contains`] without a [`Probe`]: stops at the first block missing a bit.
#[inline]
pub fn contains_key(bits: &[u8], layout: &Layout, h: Hash128) -> bool {
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

/// One layer's bit array and geometry, read-only (the older layers of a
/// growing filter, or every layer when looking up).
#[derive(Clone, Copy)]
pub struct LayerBits<'a> {
    /// The bit array, exactly `layout.bytes()` long.
    pub bits: &'a [u8],
    /// Its geometry.
    pub layout: Layout,
}

/// Calls `f` on each hash in order, with the blocks of the key
/// [`PREFETCH_DISTANCE`] places ahead already requested from memory, in `bits`
/// and in every layer of `older`. `bits` is `&[u8]` or `&mut [u8]`, handed back
/// to `f` for the probe itself. The general path, for layouts without a
/// specialised kernel; those run [`lean`].
#[inline(always)]
fn for_each_prefetched<S: AsRef<[u8]>>(
    bits: &mut S,
    layout: &Layout,
    older: &[LayerBits],
    hashes: &[Hash128],
    mut f: impl FnMut(&mut S, Hash128),
) {
    #[inline(always)]
    fn ahead(bits: &[u8], layout: &Layout, older: &[LayerBits], h: Hash128) {
        prefetch_key(bits, layout, h);
        // Most keys are absent from a given older layer, and a lookup stops
        // at the first block missing a bit: only that block is worth a slot
        // among the misses in flight.
        for l in older {
            prefetch(l.bits, l.layout.blocks(h)[0] as usize * BLOCK_BYTES);
        }
    }
    for h in hashes.iter().take(PREFETCH_DISTANCE) {
        ahead(bits.as_ref(), layout, older, *h);
    }
    for (i, h) in hashes.iter().enumerate() {
        if let Some(next) = hashes.get(i + PREFETCH_DISTANCE) {
            ahead(bits.as_ref(), layout, older, *next);
        }
        f(bits, *h);
    }
}

/// A lookup in one layer: [`contains_key`], or its specialisation for the
/// layer's layout.
type Lookup = fn(&[u8], &Layout, Hash128) -> bool;

/// The fastest [`Lookup`] for `layout`.
fn lookup_for(layout: &Layout) -> Lookup {
    macro_rules! run {
        ($x:literal, $r:ty) => {
            (|bits: &[u8], l: &Layout, h: Hash128| fixed::contains::<$x, $r>(bits, l.nblocks, h))
                as Lookup
        };
        // Older layers are looked up through a function pointer, outside the
        // AVX2-compiled loop: the portable kernel.
        ($x:literal, $r:ty, $fast:ty) => {
            run!($x, $r)
        };
    }
    fixed::dispatch!(layout, run, contains_key as Lookup)
}

/// The older layers with their lookups, chosen once per batch.
fn older_lookups<'a>(older: &[LayerBits<'a>]) -> Vec<(LayerBits<'a>, Lookup)> {
    older.iter().map(|l| (*l, lookup_for(&l.layout))).collect()
}

/// Whether any of the `older` layers holds the key, newest layer first.
#[inline(always)]
fn in_older(older: &[(LayerBits, Lookup)], h: Hash128) -> bool {
    older
        .iter()
        .rev()
        .any(|(l, lookup)| lookup(l.bits, &l.layout, h))
}

/// The hot path, specialised: `X` blocks per key and a [`fixed::Rule`] for the
/// bits inside a block, all known at compile time, so that the loops unroll and
/// no position is computed with a branch. Bit for bit the same as
/// [`test_and_set_key`] / [`contains_key`] (tested).
///
/// * [`fixed::Scattered`]`<K, W>` (v1): `K` bits per block, `W` = ⌈X·K/7⌉
///   SplitMix64 words computed independently of each other (the `i`-th output
///   of SplitMix64 seeded with `s` is the mix of `s + i·γ`); every position is a
///   constant shift of one of them, then a byte and a bit.
/// * [`fixed::Sectored`]`<C>` (v2): `C` rounds per block, each one word of the
///   stream giving one bit to each of the block's eight 64-bit words: a block is
///   tested with eight loads, eight and-nots and one branch.
mod fixed {
    use super::{
        BLOCK_BYTES, BLOCKS_PER_PAGE, Hash128, block_of, block_of_mut, load_word, mul_hi,
        store_word,
    };
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_andnot_si256, _mm256_loadu_si256, _mm256_or_si256,
        _mm256_set1_epi64x, _mm256_setr_epi64x, _mm256_setzero_si256, _mm256_sllv_epi64,
        _mm256_srlv_epi64, _mm256_storeu_si256, _mm256_testz_si256,
    };

    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

    #[inline(always)]
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Output `i` (0-based) of the SplitMix64 stream seeded with `hi`.
    #[inline(always)]
    fn output(hi: u64, i: usize) -> u64 {
        mix(hi.wrapping_add((i as u64 + 1).wrapping_mul(GAMMA)))
    }

    /// Where a key's bits go inside each of its blocks.
    pub(super) trait Rule {
        /// What is computed once per key.
        type Key;
        fn key(h: Hash128) -> Self::Key;
        /// Whether a bit of block `j` of the key is unset in `blk`.
        fn missing(blk: &[u8; BLOCK_BYTES], key: &Self::Key, j: usize) -> bool;
        /// Sets the bits of block `j` of the key.
        fn set(blk: &mut [u8; BLOCK_BYTES], key: &Self::Key, j: usize);
    }

    /// Bit positions v1 with `K` bits per block and `W` = ⌈X·K/7⌉ words.
    pub(super) struct Scattered<const K: usize, const W: usize>;

    impl<const K: usize, const W: usize> Scattered<K, W> {
        /// Position `idx` of the stream (seven 9-bit positions per word, low first).
        #[inline(always)]
        fn pos(w: &[u64; W], idx: usize) -> usize {
            ((w[idx / 7] >> (9 * (idx % 7))) & 511) as usize
        }
    }

    impl<const K: usize, const W: usize> Rule for Scattered<K, W> {
        type Key = [u64; W];

        #[inline(always)]
        fn key(h: Hash128) -> [u64; W] {
            let mut w = [0u64; W];
            for (i, w) in w.iter_mut().enumerate() {
                *w = output(h.hi, i);
            }
            w
        }

        #[inline(always)]
        fn missing(blk: &[u8; BLOCK_BYTES], w: &[u64; W], j: usize) -> bool {
            let mut m = 0u8;
            for i in 0..K {
                let p = Self::pos(w, j * K + i);
                m |= !blk[p >> 3] & (1 << (p & 7));
            }
            m != 0
        }

        #[inline(always)]
        fn set(blk: &mut [u8; BLOCK_BYTES], w: &[u64; W], j: usize) {
            for i in 0..K {
                let p = Self::pos(w, j * K + i);
                blk[p >> 3] |= 1 << (p & 7);
            }
        }
    }

    /// Bit positions v2 with `C` = k/8 rounds per block.
    pub(super) struct Sectored<const C: usize>;

    impl<const C: usize> Sectored<C> {
        /// The eight word masks of block `j`.
        #[inline(always)]
        fn masks(hi: u64, j: usize) -> [u64; 8] {
            let mut m = [0u64; 8];
            for r in 0..C {
                let out = output(hi, j * C + r);
                for (w, m) in m.iter_mut().enumerate() {
                    *m |= 1u64 << ((out >> (6 * w)) & 63);
                }
            }
            m
        }
    }

    impl<const C: usize> Rule for Sectored<C> {
        type Key = u64;

        #[inline(always)]
        fn key(h: Hash128) -> u64 {
            h.hi
        }

        #[inline(always)]
        fn missing(blk: &[u8; BLOCK_BYTES], hi: &u64, j: usize) -> bool {
            let m = Self::masks(*hi, j);
            let mut missing = 0u64;
            for (w, m) in m.iter().enumerate() {
                missing |= m & !load_word(blk, w);
            }
            missing != 0
        }

        #[inline(always)]
        fn set(blk: &mut [u8; BLOCK_BYTES], hi: &u64, j: usize) {
            let m = Self::masks(*hi, j);
            for (w, m) in m.iter().enumerate() {
                let v = load_word(blk, w) | m;
                store_word(blk, w, v);
            }
        }
    }

    /// [`Sectored`] with AVX2: the eight word masks of a round are made in two
    /// 256-bit registers (variable shifts) and a block is tested with two loads,
    /// two and-nots and one `vptest`. Bit for bit the same as [`Sectored`]
    /// (tested). Only [`dispatch`] names it, and only after [`simd`] said the
    /// CPU has AVX2, inside [`lean_avx2`](super::lean_avx2) so that it compiles to
    /// AVX2 code.
    #[cfg(target_arch = "x86_64")]
    pub(super) struct SectoredAvx2<const C: usize>;

    #[cfg(target_arch = "x86_64")]
    impl<const C: usize> SectoredAvx2<C> {
        /// Block `j`'s masks: words 0–3 and words 4–7.
        #[inline(always)]
        fn masks(hi: u64, j: usize) -> (__m256i, __m256i) {
            debug_assert!(std::arch::is_x86_feature_detected!("avx2"));
            // SAFETY: AVX2 is present (see the type's doc); register operations
            // only.
            unsafe {
                let low_shifts = _mm256_setr_epi64x(0, 6, 12, 18);
                let high_shifts = _mm256_setr_epi64x(24, 30, 36, 42);
                let six_bits = _mm256_set1_epi64x(63);
                let one = _mm256_set1_epi64x(1);
                let mut low = _mm256_setzero_si256();
                let mut high = _mm256_setzero_si256();
                for r in 0..C {
                    let out = _mm256_set1_epi64x(output(hi, j * C + r) as i64);
                    let at = _mm256_and_si256(_mm256_srlv_epi64(out, low_shifts), six_bits);
                    low = _mm256_or_si256(low, _mm256_sllv_epi64(one, at));
                    let at = _mm256_and_si256(_mm256_srlv_epi64(out, high_shifts), six_bits);
                    high = _mm256_or_si256(high, _mm256_sllv_epi64(one, at));
                }
                (low, high)
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    impl<const C: usize> Rule for SectoredAvx2<C> {
        type Key = u64;

        #[inline(always)]
        fn key(h: Hash128) -> u64 {
            h.hi
        }

        #[inline(always)]
        fn missing(blk: &[u8; BLOCK_BYTES], hi: &u64, j: usize) -> bool {
            let (low, high) = Self::masks(*hi, j);
            // SAFETY: AVX2 is present (see the type's doc); the two unaligned
            // 32-byte loads are the 64 bytes of `blk`.
            unsafe {
                let p = blk.as_ptr().cast::<__m256i>();
                let a = _mm256_andnot_si256(_mm256_loadu_si256(p), low);
                let b = _mm256_andnot_si256(_mm256_loadu_si256(p.add(1)), high);
                let m = _mm256_or_si256(a, b);
                _mm256_testz_si256(m, m) == 0
            }
        }

        #[inline(always)]
        fn set(blk: &mut [u8; BLOCK_BYTES], hi: &u64, j: usize) {
            let (low, high) = Self::masks(*hi, j);
            // SAFETY: AVX2 is present (see the type's doc); the unaligned
            // 32-byte loads and stores are the 64 bytes of `blk`, borrowed
            // mutably.
            unsafe {
                let p = blk.as_mut_ptr().cast::<__m256i>();
                _mm256_storeu_si256(p, _mm256_or_si256(_mm256_loadu_si256(p), low));
                let p = p.add(1);
                _mm256_storeu_si256(p, _mm256_or_si256(_mm256_loadu_si256(p), high));
            }
        }
    }

    /// Elsewhere there is no AVX2 kernel: [`simd`] is always false, and the
    /// name only keeps [`dispatch`] the same on every target.
    #[cfg(not(target_arch = "x86_64"))]
    pub(super) type SectoredAvx2<const C: usize> = Sectored<C>;

    /// Whether [`dispatch`] takes the AVX2 kernels: the CPU has AVX2 and the
    /// `SEEN_PORTABLE` switch ([`crate::tuning::Tuning::portable_kernels`]:
    /// for tests that the two give the same bits, and benchmarks of one
    /// against the other) is off (checked once).
    #[inline]
    pub(super) fn simd() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            static SIMD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
            let on = *SIMD.get_or_init(|| {
                std::arch::is_x86_feature_detected!("avx2")
                    && !crate::tuning::get().portable_kernels
            });
            #[cfg(test)]
            let on = on && !super::tests::PORTABLE.with(std::cell::Cell::get);
            on
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    #[inline(always)]
    pub(super) fn blocks<const X: usize>(nblocks: u64, h: Hash128) -> [u64; X] {
        let mut b = [0u64; X];
        if X == 1 {
            b[0] = mul_hi(h.lo, nblocks);
        } else {
            let page = mul_hi(h.lo, nblocks / BLOCKS_PER_PAGE) * BLOCKS_PER_PAGE;
            let first = h.hi & 63;
            let step = ((h.hi >> 6) & 31) * 2 + 1;
            for (j, b) in b.iter_mut().enumerate() {
                *b = page + ((first + j as u64 * step) & 63);
            }
        }
        b
    }

    #[inline(always)]
    pub(super) fn test_and_set<const X: usize, R: Rule>(
        bits: &mut [u8],
        nblocks: u64,
        h: Hash128,
    ) -> bool {
        let key = R::key(h);
        let mut seen = true;
        for (j, &b) in blocks::<X>(nblocks, h).iter().enumerate() {
            if R::missing(block_of(bits, b), &key, j) {
                seen = false;
                R::set(block_of_mut(bits, b), &key, j);
            }
        }
        seen
    }

    #[inline(always)]
    pub(super) fn contains<const X: usize, R: Rule>(bits: &[u8], nblocks: u64, h: Hash128) -> bool {
        let key = R::key(h);
        for (j, &b) in blocks::<X>(nblocks, h).iter().enumerate() {
            if R::missing(block_of(bits, b), &key, j) {
                return false;
            }
        }
        true
    }

    #[inline(always)]
    pub(super) fn set_key<const X: usize, R: Rule>(bits: &mut [u8], nblocks: u64, h: Hash128) {
        let key = R::key(h);
        for (j, &b) in blocks::<X>(nblocks, h).iter().enumerate() {
            R::set(block_of_mut(bits, b), &key, j);
        }
    }

    /// Calls `$run!(X, Rule)` with the constants of `$layout` when they are
    /// specialised (scattered: 1, 2 or 4 blocks of 1 to 16 bits; sectored: 1
    /// to 4 blocks of 8 to 64 bits), else evaluates `$other`.
    macro_rules! dispatch {
        ($layout:expr, $run:ident, $other:expr) => {{
            let l: &$crate::filter::Layout = $layout;
            match (l.scheme, l.blocks_per_key) {
                ($crate::filter::Scheme::Scattered, 1) => fixed::arms!(l, $run, $other, 1: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
                ($crate::filter::Scheme::Scattered, 2) => fixed::arms!(l, $run, $other, 2: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
                ($crate::filter::Scheme::Scattered, 4) => fixed::arms!(l, $run, $other, 4: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
                ($crate::filter::Scheme::Sectored, 1) => fixed::rounds!(l, $run, $other, 1: 1, 2, 3, 4, 5, 6, 7, 8),
                ($crate::filter::Scheme::Sectored, 2) => fixed::rounds!(l, $run, $other, 2: 1, 2, 3, 4, 5, 6, 7, 8),
                ($crate::filter::Scheme::Sectored, 3) => fixed::rounds!(l, $run, $other, 3: 1, 2, 3, 4, 5, 6, 7, 8),
                ($crate::filter::Scheme::Sectored, 4) => fixed::rounds!(l, $run, $other, 4: 1, 2, 3, 4, 5, 6, 7, 8),
                _ => $other,
            }
        }};
    }

    /// The scattered `k` arms of [`dispatch`] for one block count.
    macro_rules! arms {
        ($l:ident, $run:ident, $other:expr, $x:literal: $($k:literal),*) => {
            match $l.k {
                $($k => $run!($x, fixed::Scattered<$k, { (($x * $k) as usize).div_ceil(7) }>),)*
                _ => $other,
            }
        };
    }

    /// The sectored arms of [`dispatch`] (rounds `k/8`) for one block count:
    /// `$run!(x, portable rule, AVX2 rule)` when the AVX2 kernels are on, else
    /// `$run!(x, portable rule)`.
    macro_rules! rounds {
        ($l:ident, $run:ident, $other:expr, $x:literal: $($c:literal),*) => {
            match $l.k {
                $(k if k == 8 * $c => {
                    if fixed::simd() {
                        $run!($x, fixed::Sectored<$c>, fixed::SectoredAvx2<$c>)
                    } else {
                        $run!($x, fixed::Sectored<$c>)
                    }
                })*
                _ => $other,
            }
        };
    }
    pub(super) use arms;
    pub(super) use dispatch;
    pub(super) use rounds;
}

/// What a batch does to each key of a filter's newest layer in [`lean`].
trait Pass {
    /// The bits: `&[u8]` to look up, `&mut [u8]` to write.
    type Bits<'a>: AsRef<[u8]>;
    /// Whether the pass gives a verdict per key.
    const VERDICTS: bool;
    /// The pass on one key; true when it was present (before, when writing)
    /// in the layer or in one of the `older` ones, which are only looked up.
    fn key<const X: usize, R: fixed::Rule>(
        bits: &mut Self::Bits<'_>,
        nblocks: u64,
        older: &[(LayerBits, Lookup)],
        h: Hash128,
    ) -> bool;
}

/// [`insert_batch`]'s pass: test-and-set.
struct Insert;
/// [`contains_batch`]'s pass: look up.
struct Contains;
/// [`set_batch`]'s pass: set, no verdict.
struct Set;

impl Pass for Insert {
    type Bits<'a> = &'a mut [u8];
    const VERDICTS: bool = true;
    #[inline(always)]
    fn key<const X: usize, R: fixed::Rule>(
        bits: &mut &mut [u8],
        nblocks: u64,
        older: &[(LayerBits, Lookup)],
        h: Hash128,
    ) -> bool {
        // A key an older layer holds is not inserted again.
        in_older(older, h) || fixed::test_and_set::<X, R>(bits, nblocks, h)
    }
}

impl Pass for Contains {
    type Bits<'a> = &'a [u8];
    const VERDICTS: bool = true;
    #[inline(always)]
    fn key<const X: usize, R: fixed::Rule>(
        bits: &mut &[u8],
        nblocks: u64,
        older: &[(LayerBits, Lookup)],
        h: Hash128,
    ) -> bool {
        fixed::contains::<X, R>(bits, nblocks, h) || in_older(older, h)
    }
}

impl Pass for Set {
    type Bits<'a> = &'a mut [u8];
    const VERDICTS: bool = false;
    #[inline(always)]
    fn key<const X: usize, R: fixed::Rule>(
        bits: &mut &mut [u8],
        nblocks: u64,
        _: &[(LayerBits, Lookup)],
        h: Hash128,
    ) -> bool {
        fixed::set_key::<X, R>(bits, nblocks, h);
        false
    }
}

/// Prefetches the blocks of key `h` in `bits` (`X` of them) and the first
/// block of it in each `older` layer.
#[inline(always)]
fn ahead<const X: usize, const OLDER: bool>(
    bits: &[u8],
    nblocks: u64,
    older: &[(LayerBits, Lookup)],
    h: Hash128,
) {
    for b in fixed::blocks::<X>(nblocks, h) {
        prefetch(bits, b as usize * BLOCK_BYTES);
    }
    if OLDER {
        // Most keys are absent from a given older layer, and a lookup stops at
        // the first block missing a bit: only that block is worth a slot among
        // the misses in flight.
        for (l, _) in older {
            prefetch(l.bits, l.layout.blocks(h)[0] as usize * BLOCK_BYTES);
        }
    }
}

/// A batch over the newest layer of a filter with a specialised layout (`X`
/// blocks per key, rule `R`), the `older` layers only looked up: the steps of
/// [`for_each_prefetched`] with nothing else in the loop, so that more keys
/// fit in the CPU's window of instructions in flight, and with them more of
/// their blocks' misses (the test-and-set of the 10M-line corpus alone took
/// 0.55 to 0.8 of the time of that general loop). With `OLDER` false the
/// older layers are not even asked for. Appends a verdict per key to `out`
/// when the pass gives them; returns the keys found absent.
///
/// The pass and rule are types, not closures: a closure that is not inlined
/// is compiled without the AVX2 feature of [`lean_avx2`], and every
/// intrinsic in it becomes a call (a first version ran 10 times slower).
#[inline(always)]
fn lean<P: Pass, const X: usize, R: fixed::Rule, const OLDER: bool>(
    mut bits: P::Bits<'_>,
    nblocks: u64,
    older: &[(LayerBits, Lookup)],
    hashes: &[Hash128],
    out: &mut Vec<bool>,
) -> u64 {
    let older = if OLDER { older } else { &[] };
    let start = out.len();
    if P::VERDICTS {
        out.resize(start + hashes.len(), false);
    }
    let verdicts = &mut out[start..];
    for h in hashes.iter().take(PREFETCH_DISTANCE) {
        ahead::<X, OLDER>(bits.as_ref(), nblocks, older, *h);
    }
    let mut absent = 0;
    for (i, h) in hashes.iter().enumerate() {
        if let Some(next) = hashes.get(i + PREFETCH_DISTANCE) {
            ahead::<X, OLDER>(bits.as_ref(), nblocks, older, *next);
        }
        let present = P::key::<X, R>(&mut bits, nblocks, older, *h);
        absent += u64::from(!present);
        if P::VERDICTS {
            verdicts[i] = present;
        }
    }
    absent
}

/// [`lean`] with `OLDER` set from whether there are older layers.
#[inline(always)]
fn lean_any<P: Pass, const X: usize, R: fixed::Rule>(
    bits: P::Bits<'_>,
    nblocks: u64,
    older: &[(LayerBits, Lookup)],
    hashes: &[Hash128],
    out: &mut Vec<bool>,
) -> u64 {
    if older.is_empty() {
        lean::<P, X, R, false>(bits, nblocks, older, hashes, out)
    } else {
        lean::<P, X, R, true>(bits, nblocks, older, hashes, out)
    }
}

/// [`lean_any`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lean_avx2<P: Pass, const X: usize, R: fixed::Rule>(
    bits: P::Bits<'_>,
    nblocks: u64,
    older: &[(LayerBits, Lookup)],
    hashes: &[Hash128],
    out: &mut Vec<bool>,
) -> u64 {
    lean_any::<P, X, R>(bits, nblocks, older, hashes, out)
}

/// Elsewhere there is no AVX2 kernel (see [`fixed::simd`]).
///
/// # Safety
/// None needed.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn lean_avx2<P: Pass, const X: usize, R: fixed::Rule>(
    bits: P::Bits<'_>,
    nblocks: u64,
    older: &[(LayerBits, Lookup)],
    hashes: &[Hash128],
    out: &mut Vec<bool>,
) -> u64 {
    lean_any::<P, X, R>(bits, nblocks, older, hashes, out)
}

/// Inserts `hashes` in order into `newest`, appending to `out` per key whether
/// it was already present (in `newest` or in any layer of `older`, which are
/// never changed); returns the number of new keys. A key found in an older layer
/// is not inserted again. Blocks are prefetched [`PREFETCH_DISTANCE`] keys
/// ahead, and only written when a bit is missing.
pub fn insert_batch(
    older: &[LayerBits],
    newest: &mut [u8],
    layout: &Layout,
    hashes: &[Hash128],
    out: &mut Vec<bool>,
) -> u64 {
    let nblocks = layout.nblocks;
    let lookups = older_lookups(older);
    macro_rules! run {
        ($x:literal, $r:ty) => {
            lean_any::<Insert, $x, $r>(newest, nblocks, &lookups, hashes, out)
        };
        ($x:literal, $r:ty, $fast:ty) => {
            // SAFETY: `dispatch` passes an AVX2 rule only when `fixed::simd()`.
            unsafe { lean_avx2::<Insert, $x, $fast>(newest, nblocks, &lookups, hashes, out) }
        };
    }
    fixed::dispatch!(layout, run, {
        // The general path, for layouts without a specialised kernel.
        out.reserve(hashes.len());
        let (mut newest, mut new) = (newest, 0);
        for_each_prefetched(&mut newest, layout, older, hashes, |bits, h| {
            let seen = in_older(&lookups, h) || test_and_set_key(bits, layout, h);
            new += u64::from(!seen);
            out.push(seen);
        });
        new
    })
}

/// Looks `hashes` up in `layers` (present when any layer holds every bit of the
/// key), appending one verdict per key to `out`; prefetches like [`insert_batch`].
pub fn contains_batch(layers: &[LayerBits], hashes: &[Hash128], out: &mut Vec<bool>) {
    out.reserve(hashes.len());
    let Some((newest, older)) = layers.split_last() else {
        out.extend(hashes.iter().map(|_| false));
        return;
    };
    let layout = &newest.layout;
    let nblocks = layout.nblocks;
    let lookups = older_lookups(older);
    macro_rules! run {
        ($x:literal, $r:ty) => {{
            lean_any::<Contains, $x, $r>(newest.bits, nblocks, &lookups, hashes, out);
        }};
        ($x:literal, $r:ty, $fast:ty) => {{
            // SAFETY: `dispatch` passes an AVX2 rule only when `fixed::simd()`.
            unsafe {
                lean_avx2::<Contains, $x, $fast>(newest.bits, nblocks, &lookups, hashes, out)
            };
        }};
    }
    fixed::dispatch!(layout, run, {
        // The general path, for layouts without a specialised kernel.
        let mut bits = newest.bits;
        for_each_prefetched(&mut bits, layout, older, hashes, |bits, h| {
            out.push(contains_key(bits, layout, h) || in_older(&lookups, h));
        });
    });
}

/// What the bits of a filter say about it, computed from the actual per-block
/// occupancy (a popcount of every block).
#[derive(Clone, Debug, PartialEq)]
pub struct Occupancy {
    /// Bits set in the whole array.
    pub bits_set: u64,
    /// Estimated number of distinct keys inserted (per-block inversion of the
    /// expected fill, summed, divided by blocks per key).
    pub estimated_items: f64,
    /// Probability that a key never inserted is reported present, given the bits
    /// as they are now.
    pub current_fpp: f64,
    /// Number of blocks with every bit set (estimates treat them as holding
    /// the largest finite count).
    pub full_blocks: u64,
}

/// Scans every block of `bits` and computes [`Occupancy`].
pub fn occupancy(bits: &[u8], layout: &Layout) -> Occupancy {
    occupancy_with(bits, layout, &mut |_| {})
}

/// [`occupancy`], telling `scanned` every so many bytes scanned (for a
/// progress bar).
pub fn occupancy_with(bits: &[u8], layout: &Layout, scanned: &mut dyn FnMut(u64)) -> Occupancy {
    let k = layout.k as i32;
    let x = layout.blocks_per_key as i32;
    // q[c] = probability that k random positions of a block with c bits set are
    // all set; sectored: qw[c] for k/8 positions of a 64-bit word with c set.
    let q: Vec<f64> = (0..=BLOCK_BITS)
        .map(|c| (c as f64 / BLOCK_BITS as f64).powi(k))
        .collect();
    let qw: Vec<f64> = (0..=64).map(|c| (c as f64 / 64.0).powi(k / 8)).collect();
    // Keys expected to give c set bits: invert E[c] = B(1 - keep^L), keep the
    // chance that one key leaves a given bit clear.
    let ln_keep = sizing::keep_per_key(layout.k, layout.scheme).ln();
    let inv: Vec<f64> = (0..=BLOCK_BITS)
        .map(|c| {
            let c = (c as f64).min(BLOCK_BITS as f64 - 0.5);
            (1.0 - c / BLOCK_BITS as f64).ln() / ln_keep
        })
        .collect();
    let mut bits_set = 0u64;
    let mut key_blocks = 0f64;
    let mut fpp_sum = 0f64;
    let mut full_blocks = 0u64;
    const PAGE: usize = BLOCK_BYTES * BLOCKS_PER_PAGE as usize;
    for (n, page) in bits.chunks_exact(PAGE).enumerate() {
        if n % 256 == 255 {
            scanned(256 * PAGE as u64);
        }
        let mut page_q = 0f64;
        for blk in page.chunks_exact(BLOCK_BYTES) {
            // Bits set in each 64-bit word of the block, counted once.
            let words: [usize; 8] =
                std::array::from_fn(|w| load_word(blk, w).count_ones() as usize);
            let c: usize = words.iter().sum();
            bits_set += c as u64;
            key_blocks += inv[c];
            page_q += match layout.scheme {
                Scheme::Scattered => q[c],
                Scheme::Sectored => words.iter().map(|&cw| qw[cw]).product(),
            };
            if c == BLOCK_BITS as usize {
                full_blocks += 1;
            }
        }
        if x == 1 {
            fpp_sum += page_q;
        } else {
            fpp_sum += (page_q / BLOCKS_PER_PAGE as f64).powi(x);
        }
    }
    let units = if x == 1 {
        layout.nblocks as f64
    } else {
        (layout.nblocks / BLOCKS_PER_PAGE) as f64
    };
    Occupancy {
        bits_set,
        estimated_items: key_blocks / x as f64,
        current_fpp: fpp_sum / units,
        full_blocks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Set by a test to make this thread's batches take the portable
        /// kernels (see `fixed::simd`).
        pub(super) static PORTABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    use crate::hash::{DEFAULT_SEED, hash};

    fn layout(nblocks: u64, k: u32, x: u32) -> Layout {
        with_scheme(nblocks, k, x, Scheme::Scattered)
    }

    fn with_scheme(nblocks: u64, k: u32, x: u32, scheme: Scheme) -> Layout {
        let l = Layout {
            nblocks,
            k,
            blocks_per_key: x,
            scheme,
        };
        l.validate().unwrap();
        l
    }

    /// Every layout the batch functions specialise, and a few they do not.
    fn all_layouts(nblocks: u64) -> Vec<Layout> {
        let mut v = vec![];
        for x in [1, 2, 4] {
            for k in (1..=18).chain([33, 64]) {
                v.push(layout(nblocks, k, x));
            }
        }
        for x in 1..=4 {
            for k in (8..=64).step_by(8) {
                v.push(with_scheme(nblocks, k, x, Scheme::Sectored));
            }
        }
        v
    }

    #[test]
    fn validate_rejects_bad_layouts() {
        let ok = layout(64, 7, 1);
        for bad in [
            Layout { nblocks: 0, ..ok },
            Layout { nblocks: 65, ..ok },
            Layout {
                nblocks: u64::MAX - 63,
                ..ok
            },
            Layout { k: 0, ..ok },
            Layout { k: 65, ..ok },
            Layout {
                blocks_per_key: 3,
                ..ok
            },
            Layout {
                k: 12,
                scheme: Scheme::Sectored,
                ..ok
            },
            Layout {
                k: 72,
                scheme: Scheme::Sectored,
                ..ok
            },
            Layout {
                blocks_per_key: 5,
                k: 8,
                scheme: Scheme::Sectored,
                ..ok
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn probe_stays_in_bounds_and_in_one_page() {
        let layouts = [1, 2, 4]
            .map(|x| layout(64 * 5, 9, x))
            .into_iter()
            .chain((1..=4).map(|x| with_scheme(64 * 5, 16, x, Scheme::Sectored)));
        for l in layouts {
            let x = l.blocks_per_key;
            for i in 0..10_000u32 {
                let p = l.probe(hash(&i.to_le_bytes(), 1));
                assert_eq!(p.x, x as usize);
                for j in 0..p.x {
                    assert!(p.blocks[j] < l.nblocks);
                    assert_eq!(p.blocks[j] / 64, p.blocks[0] / 64);
                    for i in 0..j {
                        assert_ne!(p.blocks[i], p.blocks[j], "blocks of one key repeat");
                    }
                    let bits: u32 = p.masks[j].iter().map(|m| m.count_ones()).sum();
                    assert!(bits >= 1 && bits <= l.k);
                    if l.scheme == Scheme::Sectored {
                        // k/8 = 2 bits in every word (one when both coincide).
                        for m in p.masks[j] {
                            assert!((1..=2).contains(&m.count_ones()), "{m:x}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn block_choice_uses_high_hash_bits() {
        // A filter larger than 2^32 blocks must reach blocks past 2^32: hashes
        // truncated to 32 bits (a known trap) never would.
        let l = layout(1 << 40, 7, 1);
        let far = (0..1000u32)
            .map(|i| l.probe(hash(&i.to_le_bytes(), 0)).blocks[0])
            .filter(|&b| b >= 1 << 32)
            .count();
        assert!(far > 900, "{far}");
    }

    /// Golden bit positions: a change here silently breaks every existing file.
    #[test]
    fn golden_probe() {
        let l = layout(64 * 1000, 7, 2);
        let p = l.probe(hash(b"https://example.com/", DEFAULT_SEED));
        let positions: Vec<(u64, Vec<u32>)> = (0..p.x)
            .map(|j| {
                let mut v = vec![];
                for (w, m) in p.masks[j].iter().enumerate() {
                    for b in 0..64 {
                        if m >> b & 1 == 1 {
                            v.push(w as u32 * 64 + b);
                        }
                    }
                }
                (p.blocks[j], v)
            })
            .collect();
        println!("{positions:?}");
        let want: Vec<(u64, Vec<u32>)> = vec![
            (2573, vec![116, 204, 217, 258, 313, 322, 456]),
            (2616, vec![34, 134, 273, 292, 341, 360, 398]),
        ];
        assert_eq!(positions, want);
    }

    /// Golden sectored positions (bit positions v2), pinned like
    /// [`golden_probe`]; `docs/FORMAT.md` has the Python that prints them.
    #[test]
    fn golden_probe_sectored() {
        let l = with_scheme(64 * 1000, 8, 2, Scheme::Sectored);
        let p = l.probe(hash(b"https://example.com/", DEFAULT_SEED));
        let positions: Vec<(u64, Vec<u32>)> = (0..p.x)
            .map(|j| {
                let v = (0..512u32)
                    .filter(|&b| p.masks[j][b as usize / 64] >> (b % 64) & 1 == 1)
                    .collect();
                (p.blocks[j], v)
            })
            .collect();
        println!("{positions:?}");
        // The same blocks as scattered (same rule); one bit per 64-bit word.
        let want: Vec<(u64, Vec<u32>)> = vec![
            (2573, vec![2, 84, 168, 244, 257, 377, 441, 460]),
            (2616, vec![6, 82, 132, 228, 308, 369, 405, 453]),
        ];
        assert_eq!(positions, want);
    }

    #[test]
    fn test_and_set_then_contains() {
        let layouts = [1, 2, 4]
            .map(|x| layout(64, 5, x))
            .into_iter()
            .chain((1..=4).map(|x| with_scheme(64, 8, x, Scheme::Sectored)));
        for l in layouts {
            let mut bits = vec![0u8; l.bytes() as usize];
            let keys: Vec<_> = (0..300u32).map(|i| hash(&i.to_le_bytes(), 7)).collect();
            for h in &keys {
                let p = l.probe(*h);
                let before = contains(&bits, &p);
                assert_eq!(test_and_set(&mut bits, &p), before);
                assert!(contains(&bits, &p));
                assert!(test_and_set(&mut bits, &p));
            }
            for h in &keys {
                assert!(contains(&bits, &l.probe(*h)), "false negative");
            }
        }
    }

    /// The hot-path functions agree with the reference `Probe` path bit for bit.
    #[test]
    fn fast_path_matches_probe_path() {
        let layouts = [1, 2, 4]
            .map(|x| layout(128, 6, x))
            .into_iter()
            .chain((1..=4).map(|x| with_scheme(128, 16, x, Scheme::Sectored)));
        for l in layouts {
            let mut a = vec![0u8; l.bytes() as usize];
            let mut b = a.clone();
            for i in 0..3000u32 {
                let h = hash(&i.to_le_bytes(), 3);
                let q = hash(&(i + 1_000_000).to_le_bytes(), 3);
                assert_eq!(contains(&a, &l.probe(q)), contains_key(&b, &l, q));
                assert_eq!(
                    test_and_set(&mut a, &l.probe(h)),
                    test_and_set_key(&mut b, &l, h)
                );
                assert_eq!(a, b);
            }
        }
    }

    /// The batch functions (specialised per `x` and `k`, or the fallback for
    /// k > 16) agree with the reference `Probe` path bit for bit, with and
    /// without an older layer, including keys repeated inside a batch; sectored
    /// layouts with the AVX2 kernels (where the CPU has them) and the portable
    /// ones.
    #[test]
    fn batches_match_probe_path_for_every_k() {
        #[cfg(target_arch = "x86_64")]
        if !crate::tuning::get().portable_kernels {
            assert_eq!(fixed::simd(), std::arch::is_x86_feature_detected!("avx2"));
        }
        for portable in [false, true] {
            PORTABLE.with(|p| p.set(portable));
            assert!(!portable || !fixed::simd());
            batches_match_probe_path();
        }
        PORTABLE.with(|p| p.set(false));
    }

    fn batches_match_probe_path() {
        for l in all_layouts(128) {
            let (x, k) = (l.blocks_per_key, l.k);
            // The older layer takes the fallback path too when k is not
            // specialised, and has the other scheme otherwise.
            let old = match l.scheme {
                _ if k > 16 && l.scheme == Scheme::Scattered => layout(64, k, 2),
                Scheme::Scattered => with_scheme(64, 8, 2, Scheme::Sectored),
                Scheme::Sectored => layout(64, 3, 2),
            };
            let mut old_bits = vec![0u8; old.bytes() as usize];
            for i in 0..200u32 {
                test_and_set(&mut old_bits, &old.probe(hash(&i.to_le_bytes(), 5)));
            }
            let older = [LayerBits {
                bits: &old_bits,
                layout: old,
            }];
            // Keys 0..1500 with every 7th repeated from earlier in the batch.
            let keys: Vec<Hash128> = (0..1500u32)
                .map(|i| if i % 7 == 3 { i / 2 } else { i })
                .map(|i| hash(&i.to_le_bytes(), 5))
                .collect();
            for with_older in [false, true] {
                let older: &[LayerBits] = if with_older { &older } else { &[] };
                let mut want_bits = vec![0u8; l.bytes() as usize];
                let want: Vec<bool> = keys
                    .iter()
                    .map(|h| {
                        older.iter().any(|o| contains(o.bits, &o.layout.probe(*h)))
                            || test_and_set(&mut want_bits, &l.probe(*h))
                    })
                    .collect();
                let mut bits = vec![0u8; l.bytes() as usize];
                // Verdicts are appended after what `out` already holds.
                let mut got = vec![true, false];
                let new = insert_batch(older, &mut bits, &l, &keys, &mut got);
                assert_eq!(got[..2], [true, false]);
                assert_eq!(got[2..], want, "insert x={x} k={k} older={with_older}");
                assert_eq!(new, want.iter().filter(|s| !**s).count() as u64);
                assert!(bits == want_bits, "bits x={x} k={k} older={with_older}");

                let mut set = vec![0u8; l.bytes() as usize];
                let fresh: Vec<Hash128> = keys
                    .iter()
                    .zip(&want)
                    .filter(|(_, s)| !**s)
                    .map(|(h, _)| *h)
                    .collect();
                set_batch(&mut set, &l, &fresh);
                let mut only_new = vec![0u8; l.bytes() as usize];
                for h in &fresh {
                    test_and_set(&mut only_new, &l.probe(*h));
                }
                assert!(set == only_new, "set_batch x={x} k={k}");

                let probes: Vec<Hash128> =
                    (0..3000u32).map(|i| hash(&i.to_le_bytes(), 5)).collect();
                let mut layers = older.to_vec();
                layers.push(LayerBits {
                    bits: &bits,
                    layout: l,
                });
                let mut got = vec![false];
                contains_batch(&layers, &probes, &mut got);
                let want: Vec<bool> = probes
                    .iter()
                    .map(|h| layers.iter().any(|o| contains(o.bits, &o.layout.probe(*h))))
                    .collect();
                assert!(!got.remove(0));
                assert_eq!(got, want, "contains x={x} k={k} older={with_older}");
                assert!(got.iter().any(|p| *p) && got.iter().any(|p| !*p));
            }
        }
    }

    #[test]
    fn bit_order_is_little_endian_within_block() {
        let l = layout(64, 1, 1);
        let mut bits = vec![0u8; l.bytes() as usize];
        let p = l.probe(hash(b"x", 0));
        test_and_set(&mut bits, &p);
        let (w, m) = p.masks[0]
            .iter()
            .enumerate()
            .find(|(_, m)| **m != 0)
            .unwrap();
        let pos = w * 64 + m.trailing_zeros() as usize;
        let byte = p.blocks[0] as usize * 64 + pos / 8;
        assert_eq!(bits[byte], 1 << (pos % 8));
        assert_eq!(bits.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
    }

    #[test]
    fn occupancy_of_empty_and_full() {
        let l = layout(128, 7, 2);
        let empty = vec![0u8; l.bytes() as usize];
        let o = occupancy(&empty, &l);
        assert_eq!(
            (o.bits_set, o.current_fpp, o.estimated_items),
            (0, 0.0, 0.0)
        );
        let full = vec![0xffu8; l.bytes() as usize];
        let o = occupancy(&full, &l);
        assert_eq!(o.bits_set, l.bits());
        assert_eq!(o.current_fpp, 1.0);
        assert_eq!(o.full_blocks, 128);
    }
}
