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
//!
//! # Rooms
//!
//! - `layout`: the constants, [`Scheme`], [`Layout`] and its checks, the blocks
//!   of a key, and the byte access to a block that the other rooms share.
//! - `probe`: one key at a time, straight from the spec above: [`Probe`],
//!   [`contains`], [`test_and_set`] and the per-key functions the batches fall
//!   back on; the reference the kernels are tested against.
//! - `kernels`: the batches (`insert_batch`, `contains_batch`, `set_batch`),
//!   prefetching loops over the specialised per-key kernels of `kernels/fixed`
//!   (const generics per layout, AVX2): the hot path.
//! - `occupancy`: [`occupancy()`] of a bit array, from a popcount of every block.
//! - `union`: [`union_into`], the OR of bit arrays (`seen merge`).
//! - `kind`: the filter-kind seam: the [`Kind`] trait (what a kind of filter
//!   does over one layer's bytes), [`KindId`] (the number a file records),
//!   [`Bloom`] (the first kind, over the functions above) and [`AnyKind`]
//!   (a layer's kind chosen from its number).
//! - [`sizing`]: from a capacity and a false-positive rate to a [`Layout`].

pub mod forget;
pub mod sizing;

mod kernels;
mod kind;
mod layout;
mod occupancy;
mod probe;
mod union;

pub(crate) use kernels::{LayerBits, contains_batch, insert_batch, set_batch};
pub use kind::{AnyKind, Bloom, Kind, KindError, KindId};
pub(crate) use layout::{BLOCK_BITS, BLOCK_BYTES, BLOCKS_PER_PAGE, MAX_K};
pub use layout::{Layout, LayoutError, Scheme};
pub use occupancy::{Occupancy, occupancy};
pub use probe::{Probe, contains, test_and_set};
pub use union::union_into;

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Set by a test to make this thread's batches take the portable
        /// kernels (see `fixed::simd`).
        pub(super) static PORTABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    use super::kernels::fixed;
    use super::probe::{contains_key, test_and_set_key};
    use crate::hash::{DEFAULT_SEED, Hash128, hash};

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
    /// without three older layers (each holding some keys that no newer one
    /// holds), including keys repeated inside a batch; sectored
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

    /// The bits of layers `olds` (layout, keys it holds), keys hashed with `seed`.
    fn fill_layers(olds: &[(Layout, std::ops::Range<u32>)], seed: u64) -> Vec<Vec<u8>> {
        olds.iter()
            .map(|(o, keys)| {
                let mut bits = vec![0u8; o.bytes() as usize];
                for i in keys.clone() {
                    test_and_set(&mut bits, &o.probe(hash(&i.to_le_bytes(), seed)));
                }
                bits
            })
            .collect()
    }

    /// [`fill_layers`]' layers as the kernels take them.
    fn layer_views<'a>(
        olds: &[(Layout, std::ops::Range<u32>)],
        bits: &'a [Vec<u8>],
    ) -> Vec<LayerBits<'a>> {
        olds.iter()
            .zip(bits)
            .map(|((layout, _), bits)| LayerBits {
                bits,
                layout: *layout,
            })
            .collect()
    }

    /// Older layers alike but for their size are asked in one pass per
    /// group (`older::find_group`): three sectored layers and two scattered
    /// ones, full enough that a key's first block often holds by chance in
    /// a newer layer of its group while an older one holds the key (which
    /// the test checks happens), give the reference answers, AVX2 and
    /// portable.
    #[test]
    fn grouped_older_layers_match_probe_path() {
        let olds = [
            (layout(64, 6, 4), 0..1500u32),
            (layout(128, 6, 4), 1000..4000),
            (with_scheme(64, 8, 3, Scheme::Sectored), 3500..5000),
            (with_scheme(128, 8, 3, Scheme::Sectored), 4500..7500),
            (with_scheme(192, 8, 3, Scheme::Sectored), 7000..11500),
        ];
        let old_bits = fill_layers(&olds, 9);
        let older = layer_views(&olds, &old_bits);
        let keys: Vec<Hash128> = (0..20_000u32).map(|i| hash(&i.to_le_bytes(), 9)).collect();
        let holds = |o: &LayerBits, h: Hash128| contains(o.bits, &o.layout.probe(h));
        let want: Vec<bool> = keys
            .iter()
            .map(|h| older.iter().any(|o| holds(o, *h)))
            .collect();
        // Keys whose first block holds in a newer layer of their group that
        // does not hold them, while an older layer of the group does.
        let first_holds = |o: &LayerBits, h: Hash128| {
            let p = o.layout.probe(h);
            let at = p.blocks[0] as usize * 64;
            (0..8).all(|w| {
                let word =
                    u64::from_le_bytes(o.bits[at + 8 * w..at + 8 * w + 8].try_into().unwrap());
                p.masks[0][w] & !word == 0
            })
        };
        let by_chance = keys
            .iter()
            .filter(|h| {
                [&older[2..], &older[..2]].iter().any(|group| {
                    let newest_first: Vec<&LayerBits> = group.iter().rev().collect();
                    newest_first
                        .iter()
                        .position(|o| first_holds(o, **h))
                        .is_some_and(|f| {
                            !holds(newest_first[f], **h)
                                && newest_first[f + 1..].iter().any(|o| holds(o, **h))
                        })
                })
            })
            .count();
        assert!(by_chance > 0, "no key takes the by-chance path");
        let newest = with_scheme(64, 8, 2, Scheme::Sectored);
        for portable in [false, true] {
            PORTABLE.with(|p| p.set(portable));
            let mut layers = older.clone();
            let empty = vec![0u8; newest.bytes() as usize];
            layers.push(LayerBits {
                bits: &empty,
                layout: newest,
            });
            let mut got = Vec::new();
            contains_batch(&layers, &keys, &mut got);
            assert_eq!(got, want, "contains, portable={portable}");
            // Inserting: a key no older layer holds is test-and-set in the
            // newest, which fills up (its verdicts come from there too).
            let mut want_bits = vec![0u8; newest.bytes() as usize];
            let want_insert: Vec<bool> = keys
                .iter()
                .zip(&want)
                .map(|(h, &old)| old || test_and_set(&mut want_bits, &newest.probe(*h)))
                .collect();
            let mut bits = vec![0u8; newest.bytes() as usize];
            let mut got = Vec::new();
            insert_batch(&older, &mut bits, &newest, &keys, &mut got);
            assert!(got == want_insert, "insert, portable={portable}");
            assert!(bits == want_bits, "bits, portable={portable}");
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
            // Three older layers, oldest first: one block per key without a
            // specialised kernel, `old`, and a sectored one of three blocks;
            // their keys overlap each other's and the batch's.
            let olds = [
                (layout(64, 20, 1), 0..150u32),
                (old, 100..300),
                (with_scheme(128, 16, 3, Scheme::Sectored), 250..450),
            ];
            let old_bits = fill_layers(&olds, 5);
            let older = layer_views(&olds, &old_bits);
            // Keys 0..1500 with every 7th repeated from earlier in the batch.
            let keys: Vec<Hash128> = (0..1500u32)
                .map(|i| if i % 7 == 3 { i / 2 } else { i })
                .map(|i| hash(&i.to_le_bytes(), 5))
                .collect();
            // Each older layer is the newest to hold some of the batch's keys.
            for (i, o) in older.iter().enumerate() {
                assert!(keys.iter().any(|h| {
                    contains(o.bits, &o.layout.probe(*h))
                        && !older[i + 1..]
                            .iter()
                            .any(|n| contains(n.bits, &n.layout.probe(*h)))
                }));
            }
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
