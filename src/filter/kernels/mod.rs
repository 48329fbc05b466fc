//! The batches, many keys at a time: [`insert_batch`], [`contains_batch`] and
//! [`set_batch`] request each key's blocks from memory [`PREFETCH_DISTANCE`]
//! keys ahead, so that the cache misses of many keys overlap. A layout with a
//! specialised kernel ([`fixed`]) runs in [`lean`], compiled for AVX2 by
//! [`lean_avx2`] where the CPU has it; any other layout takes
//! [`for_each_prefetched`] over the per-key functions of the reference path.
//!
//! The older layers of a growing filter, only looked up, are asked by
//! [`older::find_in`]: one layer at a time, newest first, each for the keys
//! no newer layer held.
//!
//! This is the hot path: the `#[inline]` attributes, the `#[target_feature]`
//! and the const generics are what make it fast (see [`lean`]).

use super::layout::{BLOCK_BYTES, Layout};
use super::probe::{contains_key, set_key, test_and_set_key};
use crate::hash::Hash128;
use crate::prefetch::prefetch;

pub(super) mod fixed;
mod older;

/// How many keys ahead [`insert_batch`] and [`contains_batch`] prefetch. On the
/// 2-core development VM, distances 4–32 measured the same (and 0 was 2.5×
/// slower): the limit there is misses in flight, not distance.
const PREFETCH_DISTANCE: usize = 16;

/// Prefetches every block of a key.
#[inline(always)]
fn prefetch_key(bits: &[u8], layout: &Layout, h: Hash128) {
    let blocks = layout.blocks(h);
    for b in blocks.iter().take(layout.blocks_per_key as usize) {
        prefetch(bits, *b as usize * BLOCK_BYTES);
    }
}

/// One layer's bit array and geometry, read-only (the older layers of a
/// growing filter, or every layer when looking up).
#[derive(Clone, Copy)]
pub(crate) struct LayerBits<'a> {
    /// The bit array, exactly `layout.bytes()` long.
    pub bits: &'a [u8],
    /// Its geometry.
    pub layout: Layout,
}

/// Calls `f` on each hash in order, with its index, and with the blocks of
/// the key [`PREFETCH_DISTANCE`] places ahead already requested from memory.
/// `bits` is `&[u8]` or `&mut [u8]`, handed back to `f` for the probe itself.
/// The general path, for layouts without a specialised kernel; those run
/// [`lean`].
#[inline(always)]
fn for_each_prefetched<S: AsRef<[u8]>>(
    bits: &mut S,
    layout: &Layout,
    hashes: &[Hash128],
    mut f: impl FnMut(&mut S, usize, Hash128),
) {
    for h in hashes.iter().take(PREFETCH_DISTANCE) {
        prefetch_key(bits.as_ref(), layout, *h);
    }
    for (i, h) in hashes.iter().enumerate() {
        if let Some(next) = hashes.get(i + PREFETCH_DISTANCE) {
            prefetch_key(bits.as_ref(), layout, *next);
        }
        f(bits, i, *h);
    }
}

/// What a batch does to each key of a filter's newest layer in [`lean`].
trait Pass {
    /// The bits: `&[u8]` to look up, `&mut [u8]` to write.
    type Bits<'a>: AsRef<[u8]>;
    /// Whether the pass gives a verdict per key.
    const VERDICTS: bool;
    /// The pass on one key; true when it was present (before, when writing).
    fn key<const X: usize, R: fixed::Rule>(
        bits: &mut Self::Bits<'_>,
        nblocks: u64,
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
    fn key<const X: usize, R: fixed::Rule>(bits: &mut &mut [u8], nblocks: u64, h: Hash128) -> bool {
        fixed::test_and_set::<X, R>(bits, nblocks, h)
    }
}

impl Pass for Contains {
    type Bits<'a> = &'a [u8];
    const VERDICTS: bool = true;
    #[inline(always)]
    fn key<const X: usize, R: fixed::Rule>(bits: &mut &[u8], nblocks: u64, h: Hash128) -> bool {
        fixed::contains::<X, R>(bits, nblocks, h)
    }
}

impl Pass for Set {
    type Bits<'a> = &'a mut [u8];
    const VERDICTS: bool = false;
    #[inline(always)]
    fn key<const X: usize, R: fixed::Rule>(bits: &mut &mut [u8], nblocks: u64, h: Hash128) -> bool {
        fixed::set_key::<X, R>(bits, nblocks, h);
        false
    }
}

/// Prefetches the blocks of key `h` in `bits` (`X` of them).
#[inline(always)]
fn ahead<const X: usize>(bits: &[u8], nblocks: u64, h: Hash128) {
    for b in fixed::blocks::<X>(nblocks, h) {
        prefetch(bits, b as usize * BLOCK_BYTES);
    }
}

/// A batch over the newest layer of a filter with a specialised layout (`X`
/// blocks per key, rule `R`): the steps of [`for_each_prefetched`] with
/// nothing else in the loop, so that more keys fit in the CPU's out-of-order buffer of
/// instructions in flight, and with them more of their blocks' misses (the
/// test-and-set of the 10M-line corpus alone took 0.55 to 0.8 of the time of
/// that general loop). `verdicts` holds one flag per key when the pass gives
/// verdicts (empty for [`Set`]); with `FOUND`, a key flagged there already
/// (found in an older layer) is skipped, neither requested nor touched.
/// Sets each key's verdict; returns the keys found absent.
///
/// The pass and rule are types, not closures: a closure that is not inlined
/// is compiled without the AVX2 feature of [`lean_avx2`], and every
/// intrinsic in it becomes a call (a first version ran 10 times slower).
#[inline(always)]
fn lean<P: Pass, const X: usize, R: fixed::Rule, const FOUND: bool>(
    mut bits: P::Bits<'_>,
    nblocks: u64,
    hashes: &[Hash128],
    verdicts: &mut [bool],
) -> u64 {
    // As long as `hashes` (known to the compiler: no bounds checks below).
    let verdicts = &mut verdicts[..if P::VERDICTS { hashes.len() } else { 0 }];
    let skipped = |verdicts: &[bool], i: usize| FOUND && verdicts[i];
    for (i, h) in hashes.iter().enumerate().take(PREFETCH_DISTANCE) {
        if !skipped(verdicts, i) {
            ahead::<X>(bits.as_ref(), nblocks, *h);
        }
    }
    let mut absent = 0;
    for (i, h) in hashes.iter().enumerate() {
        if let Some(next) = hashes.get(i + PREFETCH_DISTANCE)
            && !skipped(verdicts, i + PREFETCH_DISTANCE)
        {
            ahead::<X>(bits.as_ref(), nblocks, *next);
        }
        if skipped(verdicts, i) {
            continue;
        }
        let present = P::key::<X, R>(&mut bits, nblocks, *h);
        absent += u64::from(!present);
        if P::VERDICTS {
            verdicts[i] = present;
        }
    }
    absent
}

/// [`lean`] compiled for AVX2 (on x86-64; elsewhere there is no AVX2
/// kernel, see [`fixed::simd`]).
///
/// # Safety
/// On x86-64 the CPU must have AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn lean_avx2<P: Pass, const X: usize, R: fixed::Rule, const FOUND: bool>(
    bits: P::Bits<'_>,
    nblocks: u64,
    hashes: &[Hash128],
    verdicts: &mut [bool],
) -> u64 {
    lean::<P, X, R, FOUND>(bits, nblocks, hashes, verdicts)
}

/// Inserts `hashes` in order into `newest`, appending to `out` per key whether
/// it was already present (in `newest` or in any layer of `older`, which are
/// never changed); returns the number of new keys. A key found in an older
/// layer is not inserted again: the older layers are asked first
/// ([`older::find_in`]). Blocks are prefetched
/// [`PREFETCH_DISTANCE`] keys ahead, and only written when a bit is missing.
pub(crate) fn insert_batch(
    older: &[LayerBits],
    newest: &mut [u8],
    layout: &Layout,
    hashes: &[Hash128],
    out: &mut Vec<bool>,
) -> u64 {
    let nblocks = layout.nblocks;
    let start = out.len();
    out.resize(start + hashes.len(), false);
    let verdicts = &mut out[start..];
    older::find_in(older, hashes, verdicts);
    let found = !older.is_empty();
    macro_rules! run {
        ($x:literal, $r:ty) => {
            if found {
                lean::<Insert, $x, $r, true>(newest, nblocks, hashes, verdicts)
            } else {
                lean::<Insert, $x, $r, false>(newest, nblocks, hashes, verdicts)
            }
        };
        ($x:literal, $r:ty, $fast:ty) => {
            // SAFETY: `dispatch` passes an AVX2 rule only when `fixed::simd()`.
            unsafe {
                if found {
                    lean_avx2::<Insert, $x, $fast, true>(newest, nblocks, hashes, verdicts)
                } else {
                    lean_avx2::<Insert, $x, $fast, false>(newest, nblocks, hashes, verdicts)
                }
            }
        };
    }
    fixed::dispatch!(layout, run, {
        // The general path, for layouts without a specialised kernel.
        let (mut newest, mut new) = (newest, 0);
        for_each_prefetched(&mut newest, layout, hashes, |bits, i, h| {
            // A key an older layer holds is not inserted again.
            if !verdicts[i] {
                let seen = test_and_set_key(bits, layout, h);
                new += u64::from(!seen);
                verdicts[i] = seen;
            }
        });
        new
    })
}

/// Looks `hashes` up in `layers` (present when any layer holds every bit of the
/// key), appending one verdict per key to `out`: the newest layer first,
/// prefetched like [`insert_batch`], then the older ones for the keys it
/// does not hold ([`older::find_in`]).
pub(crate) fn contains_batch(layers: &[LayerBits], hashes: &[Hash128], out: &mut Vec<bool>) {
    let start = out.len();
    out.resize(start + hashes.len(), false);
    let Some((newest, older)) = layers.split_last() else {
        return;
    };
    let verdicts = &mut out[start..];
    let layout = &newest.layout;
    let nblocks = layout.nblocks;
    macro_rules! run {
        ($x:literal, $r:ty) => {{
            lean::<Contains, $x, $r, false>(newest.bits, nblocks, hashes, verdicts);
        }};
        ($x:literal, $r:ty, $fast:ty) => {{
            // SAFETY: `dispatch` passes an AVX2 rule only when `fixed::simd()`.
            unsafe {
                lean_avx2::<Contains, $x, $fast, false>(newest.bits, nblocks, hashes, verdicts)
            };
        }};
    }
    fixed::dispatch!(layout, run, {
        // The general path, for layouts without a specialised kernel.
        let mut bits = newest.bits;
        for_each_prefetched(&mut bits, layout, hashes, |bits, i, h| {
            verdicts[i] = contains_key(bits, layout, h);
        });
    });
    older::find_in(older, hashes, verdicts);
}

/// Sets the bits of every key in `bits` (prefetching ahead like
/// [`insert_batch`]), without asking whether they were present.
pub(crate) fn set_batch(bits: &mut [u8], layout: &Layout, hashes: &[Hash128]) {
    let nblocks = layout.nblocks;
    macro_rules! run {
        ($x:literal, $r:ty) => {{
            lean::<Set, $x, $r, false>(bits, nblocks, hashes, &mut []);
        }};
        ($x:literal, $r:ty, $fast:ty) => {{
            // SAFETY: `dispatch` passes an AVX2 rule only when `fixed::simd()`.
            unsafe { lean_avx2::<Set, $x, $fast, false>(bits, nblocks, hashes, &mut []) };
        }};
    }
    fixed::dispatch!(layout, run, {
        // The general path, for layouts without a specialised kernel.
        let mut bits = bits;
        for_each_prefetched(&mut bits, layout, hashes, |bits, _, h| {
            set_key(bits, layout, h)
        });
    });
}
