//! The filter-kind seam: what a kind of filter does over its bytes
//! ([`Kind`]), the number a filter file records for it ([`KindId`]), and
//! the one place a layer's kind is chosen from that number ([`AnyKind`]).
//!
//! Blocked Bloom layers ([`Bloom`]) are the first kind; a forget list (exact
//! removal) or a fingerprint layout are the next. A kind answers for one
//! layer's bytes, handed in as plain slices like everything in this room.
//! The per-key hot paths (`insert_batch`, `contains_batch`, `set_batch`)
//! stay monomorphic kernels over a [`Layout`]: a store picks the kernels of a
//! layer's kind once per batch, never through this trait per key. The trait
//! serves everything that is not per key (occupancy and estimates, the rate
//! a count of keys gives, union, removal) and is the reference the kernels
//! of a kind are tested against.

use super::layout::Layout;
use super::occupancy::{Occupancy, occupancy_with};
use super::probe::{contains_key, test_and_set_key};
use super::{sizing, union};
use crate::hash::Hash128;

/// The number a filter file's layer table records for a layer's kind
/// (layer entry bytes 58..60, see `docs/FORMAT.md`). Numbers are never
/// reused: a reader refuses a number it does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KindId(pub u16);

impl KindId {
    /// Blocked Bloom layers (every file before kinds were recorded).
    pub const BLOOM: KindId = KindId(0);
    /// The forget list (format 3.0): not a layer but the exact list of the
    /// keys a filter forgot, in the table entry after the layers'
    /// ([`crate::filter::forget`]).
    pub const FORGET: KindId = KindId(1);

    /// The kind's name in messages, when this build knows it.
    pub fn name(self) -> Option<&'static str> {
        match self {
            KindId::BLOOM => Some("bloom"),
            KindId::FORGET => Some("forget"),
            _ => None,
        }
    }

    /// Whether this build can read and write table entries of this kind.
    pub fn is_known(self) -> bool {
        self.name().is_some()
    }
}

/// Why a kind cannot do what was asked of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KindError {
    /// The kind cannot take a key back out (a Bloom filter cannot: clearing
    /// a key's bits could clear another key's). Removal needs a kind that
    /// keeps the keys apart, such as a forget list beside the layers.
    CannotRemove {
        /// The kind's name.
        kind: &'static str,
    },
    /// Arrays of different lengths cannot be joined (a programming error:
    /// callers check the layouts first).
    DifferentShape {
        /// Bytes the kind's arrays have.
        expected: u64,
        /// Bytes one of the inputs has.
        actual: u64,
    },
}

impl std::fmt::Display for KindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KindError::CannotRemove { kind } => write!(
                f,
                "a {kind} filter cannot forget a line (clearing its bits could clear \
                 another line's); rebuild the filter without it"
            ),
            KindError::DifferentShape { expected, actual } => write!(
                f,
                "cannot join a {actual}-byte array to filters of {expected} bytes"
            ),
        }
    }
}

impl std::error::Error for KindError {}

/// What a kind of filter does over the bytes of one layer. Every method
/// takes the layer's bytes (exactly [`Kind::bytes`] long) from the caller:
/// a kind never owns memory, so an anonymous map, a file map or bytes read
/// from a server serve alike.
pub trait Kind {
    /// The number a filter file records for this kind.
    fn id(&self) -> KindId;

    /// The kind's name in messages.
    fn name(&self) -> &'static str;

    /// Bytes of the layer.
    fn bytes(&self) -> u64;

    /// Whether `h` is (probably) in the layer; nothing is changed.
    fn contains(&self, bits: &[u8], h: Hash128) -> bool;

    /// Test-and-set: adds `h`, answering whether it was (probably) there.
    fn insert(&self, bits: &mut [u8], h: Hash128) -> bool;

    /// What the bytes say about the layer, telling `scanned` every so many
    /// bytes scanned (for a progress bar).
    fn occupancy_with(&self, bits: &[u8], scanned: &mut dyn FnMut(u64)) -> Occupancy;

    /// What the bytes say about the layer.
    fn occupancy(&self, bits: &[u8]) -> Occupancy {
        self.occupancy_with(bits, &mut |_| {})
    }

    /// Distinct keys the bytes say the layer holds.
    fn estimated_items(&self, bits: &[u8]) -> f64 {
        self.occupancy(bits).estimated_items
    }

    /// The false-positive rate of the layer as its bytes are now.
    fn false_positive_rate(&self, bits: &[u8]) -> f64 {
        self.occupancy(bits).current_fpp
    }

    /// The false-positive rate the layer is expected to have once it holds
    /// `n` distinct keys.
    fn expected_fpp(&self, n: u64) -> f64;

    /// The false-positive rate the layer is expected to have once `counted`
    /// keys were judged new by it (and inserted): for a kind whose false
    /// positives are not inserted, the rate at the more keys it was offered.
    fn counted_fpp(&self, counted: u64) -> f64 {
        self.expected_fpp(counted)
    }

    /// Joins the layers `inputs` (of this kind and shape) into `out`, which
    /// then holds every key of them and of what it held; `done` hears the
    /// bytes finished, from any thread.
    ///
    /// # Errors
    /// [`KindError::DifferentShape`] when an array is not [`Kind::bytes`] long.
    fn union(
        &self,
        out: &mut [u8],
        inputs: &[&[u8]],
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<(), KindError>;

    /// Takes `h` out of the layer, answering whether it was there.
    ///
    /// # Errors
    /// [`KindError::CannotRemove`] for a kind that cannot (the default).
    fn remove(&self, bits: &mut [u8], h: Hash128) -> Result<bool, KindError> {
        let _ = (bits, h);
        Err(KindError::CannotRemove { kind: self.name() })
    }
}

/// Blocked Bloom layers of one [`Layout`]: the kind every filter has had.
/// It delegates to the room's reference per-key paths, the occupancy scan,
/// the sizing formula and the union scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bloom(pub Layout);

impl Kind for Bloom {
    fn id(&self) -> KindId {
        KindId::BLOOM
    }

    fn name(&self) -> &'static str {
        "bloom"
    }

    fn bytes(&self) -> u64 {
        self.0.bytes()
    }

    fn contains(&self, bits: &[u8], h: Hash128) -> bool {
        contains_key(bits, &self.0, h)
    }

    fn insert(&self, bits: &mut [u8], h: Hash128) -> bool {
        test_and_set_key(bits, &self.0, h)
    }

    fn occupancy_with(&self, bits: &[u8], scanned: &mut dyn FnMut(u64)) -> Occupancy {
        occupancy_with(bits, &self.0, scanned)
    }

    fn expected_fpp(&self, n: u64) -> f64 {
        sizing::layer_fpp(&self.0, n)
    }

    fn counted_fpp(&self, counted: u64) -> f64 {
        sizing::counted_fpp(&self.0, counted)
    }

    fn union(
        &self,
        out: &mut [u8],
        inputs: &[&[u8]],
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<(), KindError> {
        check_shape(self.bytes(), out, inputs)?;
        union::union_into(out, inputs, done);
        Ok(())
    }
}

/// Every array of `out` and `inputs` is `expected` bytes long.
fn check_shape(expected: u64, out: &[u8], inputs: &[&[u8]]) -> Result<(), KindError> {
    match std::iter::once(out)
        .chain(inputs.iter().copied())
        .find(|a| a.len() as u64 != expected)
    {
        Some(a) => Err(KindError::DifferentShape {
            expected,
            actual: a.len() as u64,
        }),
        None => Ok(()),
    }
}

/// The kind of one layer, chosen from the number its table entry records:
/// the one `match` a new kind adds an arm to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyKind {
    /// Blocked Bloom layers.
    Bloom(Bloom),
}

impl AnyKind {
    /// The kind `id` names, for a layer of geometry `layout`; `None` for a
    /// number this build does not know (a reader refuses such a file first).
    pub fn of(id: KindId, layout: Layout) -> Option<AnyKind> {
        match id {
            KindId::BLOOM => Some(AnyKind::Bloom(Bloom(layout))),
            _ => None,
        }
    }

    /// The kind as the trait, for what is not per key.
    pub fn as_kind(&self) -> &dyn Kind {
        match self {
            AnyKind::Bloom(b) => b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::layout::Scheme;
    use crate::filter::{contains, occupancy, test_and_set, union_into};
    use crate::hash::hash;

    fn layouts() -> Vec<Layout> {
        let mut v = Vec::new();
        for (k, x, scheme) in [
            (7, 1, Scheme::Scattered),
            (9, 2, Scheme::Scattered),
            (5, 4, Scheme::Scattered),
            (8, 3, Scheme::Sectored),
            (16, 2, Scheme::Sectored),
        ] {
            let l = Layout {
                nblocks: 128,
                k,
                blocks_per_key: x,
                scheme,
            };
            l.validate().unwrap();
            v.push(l);
        }
        v
    }

    /// The trait gives the answers of the functions it delegates to, key
    /// for key and bit for bit.
    #[test]
    fn bloom_answers_as_the_functions_it_wraps() {
        for l in layouts() {
            let kind = Bloom(l);
            assert_eq!((kind.id(), kind.bytes()), (KindId::BLOOM, l.bytes()));
            let mut by_kind = vec![0u8; l.bytes() as usize];
            let mut by_probe = by_kind.clone();
            for i in 0..2000u32 {
                let h = hash(&i.to_le_bytes(), 11);
                let q = hash(&(i + (1 << 20)).to_le_bytes(), 11);
                assert_eq!(kind.contains(&by_kind, q), contains(&by_probe, &l.probe(q)));
                assert_eq!(
                    kind.insert(&mut by_kind, h),
                    test_and_set(&mut by_probe, &l.probe(h))
                );
                assert!(kind.contains(&by_kind, h), "false negative");
            }
            assert!(by_kind == by_probe, "{l:?}");
            let o = occupancy(&by_kind, &l);
            assert_eq!(kind.occupancy(&by_kind), o);
            assert_eq!(kind.estimated_items(&by_kind), o.estimated_items);
            assert_eq!(kind.false_positive_rate(&by_kind), o.current_fpp);
            for n in [0, 1, 1000, 2000, 1 << 30] {
                assert_eq!(kind.expected_fpp(n), sizing::layer_fpp(&l, n));
            }
            // Union: the OR of the arrays, as `union_into` gives it.
            let other: Vec<u8> = (0..l.bytes()).map(|i| (i * 37 % 251) as u8).collect();
            let mut want = by_kind.clone();
            union_into(&mut want, &[&other], &|_| {});
            let mut got = by_kind.clone();
            kind.union(&mut got, &[&other], &|_| {}).unwrap();
            assert!(got == want);
        }
    }

    #[test]
    fn bloom_refuses_removal_and_arrays_of_another_shape() {
        let l = layouts()[0];
        let kind = AnyKind::of(KindId::BLOOM, l).unwrap();
        assert_eq!(kind, AnyKind::Bloom(Bloom(l)));
        let kind = kind.as_kind();
        let mut bits = vec![0u8; l.bytes() as usize];
        let h = hash(b"x", 0);
        kind.insert(&mut bits, h);
        let e = kind.remove(&mut bits, h).unwrap_err();
        assert_eq!(e, KindError::CannotRemove { kind: "bloom" });
        assert!(e.to_string().contains("cannot forget"), "{e}");
        assert!(kind.contains(&bits, h), "a refused removal changes nothing");
        let short = vec![0u8; 64];
        assert_eq!(
            kind.union(&mut bits, &[&short], &|_| {}),
            Err(KindError::DifferentShape {
                expected: l.bytes(),
                actual: 64
            })
        );
    }

    #[test]
    fn only_known_kinds_are_chosen() {
        assert_eq!(KindId::BLOOM.name(), Some("bloom"));
        assert!(KindId::BLOOM.is_known());
        assert_eq!(KindId::FORGET.name(), Some("forget"));
        assert!(!KindId(2).is_known());
        assert_eq!(AnyKind::of(KindId(2), layouts()[0]), None);
        // The forget list is not a layer: never chosen as one.
        assert_eq!(AnyKind::of(KindId::FORGET, layouts()[0]), None);
    }
}
