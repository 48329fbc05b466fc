//! The hot path, specialised: `X` blocks per key and a [`Rule`] for the
//! bits inside a block, all known at compile time, so that the loops unroll and
//! no position is computed with a branch. Bit for bit the same as
//! [`test_and_set_key`](crate::filter::probe::test_and_set_key) /
//! [`contains_key`](crate::filter::probe::contains_key) (tested).
//!
//! * [`Scattered`]`<K, W>` (v1): `K` bits per block, `W` = ⌈X·K/7⌉
//!   SplitMix64 words computed independently of each other (the `i`-th output
//!   of SplitMix64 seeded with `s` is the mix of `s + i·γ`); every position is a
//!   constant shift of one of them, then a byte and a bit.
//! * [`Sectored`]`<C>` (v2): `C` rounds per block, each one word of the
//!   stream giving one bit to each of the block's eight 64-bit words: a block is
//!   tested with eight loads, eight and-nots and one branch.
//!
//! Its own file, apart from the batch loops of [`kernels`](super) that run
//! these kernels: one instance per specialised layout, picked by [`dispatch`].

use crate::filter::layout::{
    BLOCK_BYTES, BLOCKS_PER_PAGE, block_of, block_of_mut, load_word, mul_hi, store_word,
};
use crate::hash::Hash128;
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
pub(crate) fn simd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static SIMD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let on = *SIMD.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx2") && !crate::tuning::get().portable_kernels
        });
        #[cfg(test)]
        let on = on && !crate::filter::tests::PORTABLE.with(std::cell::Cell::get);
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
