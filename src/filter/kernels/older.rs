//! Looking keys up in the layers of a growing filter that a batch does not
//! write: [`find_in`].
//!
//! The layers are asked newest first, in one pass per group of neighbouring
//! layers alike but for their size (a growing filter's layers mostly are),
//! over the keys that no layer before held: most keys are in the newest,
//! largest layers, and a key found there is not asked again. Each pass is a
//! specialised kernel for its layers' layout ([`fixed`]; a key's rule is
//! computed once for its group), and runs in two steps a few keys apart:
//!
//! 1. a key's first block, requested [`AHEAD`] keys early, is tested: a key
//!    absent from a layer nearly always misses a bit there (a half-full block
//!    holds 8 given bits once in 256 tries), and is done with this layer;
//! 2. otherwise its other blocks are requested then and tested [`LAG`] keys
//!    later, once they have arrived.
//!
//! So a key costs one cache line per layer it is absent from and its layer's
//! blocks where it is found, all requested ahead. The lookup this replaced
//! asked every layer for every key through a function pointer, and read a
//! present key's other blocks unrequested, one dependent miss after another:
//! the query of an 8-layer filter took 4.5 times one layer's.

use super::fixed::{self, Rule};
use super::{LayerBits, prefetch_key};
use crate::filter::layout::{BLOCK_BYTES, Layout, block_of};
use crate::filter::probe::contains_key;
use crate::hash::Hash128;
use crate::prefetch::prefetch;

/// How many keys ahead a key's first block is requested. The 10M-line
/// benchmark's 8 layers (up to 17 MiB) were asked as fast at 64 as at 32;
/// 10M absent keys against 6 layers of up to 280 MiB, 10 % faster (0.61 s
/// against 0.67, medians of 5); 128 gained nothing more. Larger layers
/// miss the caches, and more requests in flight hide more of it.
const AHEAD: usize = 64;
/// How many keys after its first block a key's other blocks are tested.
const LAG: usize = 12;
/// The keys between the two steps (a power of two above `LAG`).
const RING: usize = 16;
/// The most keys of one pass.
const MAX_KEYS: usize = 1 << 31;

/// Sets `found[i]` for every key `hashes[i]` not found yet that one of
/// `layers` (oldest first, as everywhere) holds: every bit of the key, as
/// [`contains`](crate::filter::contains) says. `found` is as long as
/// `hashes`.
pub(super) fn find_in(layers: &[LayerBits], hashes: &[Hash128], found: &mut [bool]) {
    debug_assert_eq!(hashes.len(), found.len());
    if layers.is_empty() {
        return;
    }
    // Keys are counted in `u32`s.
    if hashes.len() > MAX_KEYS {
        for (h, f) in hashes.chunks(MAX_KEYS).zip(found.chunks_mut(MAX_KEYS)) {
            find_in(layers, h, f);
        }
        return;
    }
    let mut pending: Vec<u32> = (0..found.len() as u32).collect();
    // Layers of one kernel (all but their size alike) next to each other
    // are asked in one pass.
    let kind = |l: &LayerBits| (l.layout.scheme, l.layout.k, l.layout.blocks_per_key);
    let mut end = layers.len();
    while end > 0 {
        let mut start = end - 1;
        while start > 0
            && end - start < MAX_GROUP
            && kind(&layers[start - 1]) == kind(&layers[end - 1])
        {
            start -= 1;
        }
        let group = &layers[start..end];
        end = start;
        keep_pending(&mut pending, found);
        if pending.is_empty() {
            return;
        }
        macro_rules! run {
            ($x:literal, $r:ty) => {
                find_group::<$x, $r>(group, hashes, &pending, found)
            };
            ($x:literal, $r:ty, $fast:ty) => {
                // SAFETY: `dispatch` passes an AVX2 rule only when `fixed::simd()`.
                unsafe { find_group_avx2::<$x, $fast>(group, hashes, &pending, found) }
            };
        }
        if fixed::dispatch!(&group[0].layout, run, false) {
            continue;
        }
        // The general path, for layouts without a specialised kernel: one
        // layer at a time.
        for (n, layer) in group.iter().rev().enumerate() {
            if n > 0 {
                keep_pending(&mut pending, found);
            }
            find_any(layer.bits, &layer.layout, hashes, &pending, found);
        }
    }
}

/// The most layers asked in one pass ([`find_group`]).
const MAX_GROUP: usize = 8;

/// One pass over the keys `pending` for a group of layers with the same
/// kernel (`X` blocks per key, rule `R`; `group` oldest first, as
/// everywhere; one layer or more), in the two steps of the [module](self)
/// docs: a key's first block in each
/// layer is requested ahead (fewer keys ahead the more layers, so that as
/// many requests are in flight), then tested newest layer first, the
/// key's rule computed once for all of them; the first layer whose block
/// holds the key's bits gets its other blocks requested and tested [`LAG`]
/// keys later. Should those miss a bit (the first block held by chance),
/// the group's older layers are asked at once, without prefetching: it is
/// rare. Returns `true` (it ran: for `fixed::dispatch`).
///
/// Against a pass per layer (`scripts/ab.sh`, medians of 7, f6e8b65, when a
/// group of one layer still had a kernel of its own): `dedup -n 30k`
/// of the 10M-line corpus (8 layers by its end; its 7 older ones in groups
/// of 4 and 3) took 0.53 s against 0.65. `query` gained nothing measurable
/// (the 8-layer filter 0.32 s against 0.31, 10M absent keys against 6 layers
/// of up to 280 MiB 0.53 against 0.55), as most of its keys stop at the
/// newest layer or are absent from every one alike.
#[inline(always)]
fn find_group<const X: usize, R: Rule>(
    group: &[LayerBits],
    hashes: &[Hash128],
    pending: &[u32],
    found: &mut [bool],
) -> bool {
    let g = group.len();
    // Newest first: (bits, blocks).
    let mut slots: [(&[u8], u64); MAX_GROUP] = [(&[], 0); MAX_GROUP];
    for (slot, l) in slots.iter_mut().zip(group.iter().rev()) {
        *slot = (l.bits, l.layout.nblocks);
    }
    let layers = &slots[..g];
    let ahead = (AHEAD / g).max(16);
    let key = |t: usize| hashes[pending[t] as usize];
    let request = |h: Hash128| {
        for &(bits, nblocks) in layers {
            prefetch(
                bits,
                fixed::blocks::<X>(nblocks, h)[0] as usize * BLOCK_BYTES,
            );
        }
    };
    for t in 0..ahead.min(pending.len()) {
        request(key(t));
    }
    // The layer (1-based, newest first) whose first block held key `t`, by
    // `t % RING`; 0 for none.
    let mut candidate = [0u8; RING];
    for t in 0..pending.len() + LAG {
        if let Some(&a) = pending.get(t + ahead) {
            request(hashes[a as usize]);
        }
        if t < pending.len() {
            let h = key(t);
            let k = R::key(h);
            let mut cand = 0u8;
            for (li, &(bits, nblocks)) in layers.iter().enumerate() {
                let blocks = fixed::blocks::<X>(nblocks, h);
                if !R::missing(block_of(bits, blocks[0]), &k, 0) {
                    for b in &blocks[1..] {
                        prefetch(bits, *b as usize * BLOCK_BYTES);
                    }
                    cand = li as u8 + 1;
                    break;
                }
            }
            candidate[t % RING] = cand;
        }
        if t >= LAG && candidate[(t - LAG) % RING] != 0 {
            let li = usize::from(candidate[(t - LAG) % RING] - 1);
            let h = key(t - LAG);
            let (bits, nblocks) = layers[li];
            let blocks = fixed::blocks::<X>(nblocks, h);
            let k = R::key(h);
            let i = pending[t - LAG] as usize;
            found[i] = (1..X).all(|j| !R::missing(block_of(bits, blocks[j]), &k, j)) || {
                // The first block held by chance: the group's older layers
                // are still to ask.
                let layout = group[0].layout;
                layers[li + 1..].iter().any(|&(bits, nblocks)| {
                    contains_key(bits, &crate::filter::Layout { nblocks, ..layout }, h)
                })
            };
        }
    }
    true
}

/// [`find_group`] compiled for AVX2 (on x86-64; elsewhere there is no AVX2
/// kernel, see [`fixed::simd`]).
///
/// # Safety
/// On x86-64 the CPU must have AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn find_group_avx2<const X: usize, R: Rule>(
    group: &[LayerBits],
    hashes: &[Hash128],
    pending: &[u32],
    found: &mut [bool],
) -> bool {
    find_group::<X, R>(group, hashes, pending, found)
}

/// Drops from `pending` the keys `found` now: without a branch per key, as
/// which keys a layer held is as good as random.
fn keep_pending(pending: &mut Vec<u32>, found: &[bool]) {
    let mut kept = 0;
    for r in 0..pending.len() {
        let i = pending[r];
        pending[kept] = i;
        kept += usize::from(!found[i as usize]);
    }
    pending.truncate(kept);
}

/// One layer's pass for a layout without a specialised kernel: every block
/// of a key requested [`AHEAD`] keys early, then the reference lookup.
fn find_any(bits: &[u8], layout: &Layout, hashes: &[Hash128], pending: &[u32], found: &mut [bool]) {
    let request = |i: u32| prefetch_key(bits, layout, hashes[i as usize]);
    for &i in pending.iter().take(AHEAD) {
        request(i);
    }
    for (t, &i) in pending.iter().enumerate() {
        if let Some(&ahead) = pending.get(t + AHEAD) {
            request(ahead);
        }
        found[i as usize] = contains_key(bits, layout, hashes[i as usize]);
    }
}
