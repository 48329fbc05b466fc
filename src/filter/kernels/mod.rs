//! The batches, many keys at a time: [`insert_batch`], [`contains_batch`] and
//! [`set_batch`] request each key's blocks from memory [`PREFETCH_DISTANCE`]
//! keys ahead, so that the cache misses of many keys overlap. A layout with a
//! specialised kernel ([`fixed`]) runs in [`lean`], compiled for AVX2 by
//! [`lean_avx2`] where the CPU has it; any other layout takes
//! [`for_each_prefetched`] over the per-key functions of the reference path.
//!
//! This is the hot path: the `#[inline]` attributes, the `#[target_feature]`
//! and the const generics are what make it fast (see [`lean`]).

use super::layout::{BLOCK_BYTES, Layout};
use super::probe::{contains_key, set_key, test_and_set_key};
use crate::hash::Hash128;
use crate::prefetch::prefetch;

pub(super) mod fixed;

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
pub(crate) fn insert_batch(
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
pub(crate) fn contains_batch(layers: &[LayerBits], hashes: &[Hash128], out: &mut Vec<bool>) {
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

/// Sets the bits of every key in `bits` (prefetching ahead like
/// [`insert_batch`]), without asking whether they were present.
pub(crate) fn set_batch(bits: &mut [u8], layout: &Layout, hashes: &[Hash128]) {
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
