//! The one definition of how a record becomes hash bits.
//!
//! Every bit position `seen` ever sets or tests derives from [`hash`] (or
//! [`StreamHash`], the same for a record fed in pieces): XXH3-128 of the
//! record's key bytes (the raw record unless key options say otherwise, see
//! `keys.rs`; no decoding) with a 64-bit seed that is recorded in the filter file. Changing anything here changes every filter ever
//! written, so golden vectors in the tests pin the output.

use xxhash_rust::xxh3::{Xxh3, xxh3_128_with_seed};

/// Identifier of this hash definition in the file header (`hash algorithm` field).
pub const HASH_XXH3_128_V1: u32 = 1;

/// Seed used for new filters unless the user picks another one.
pub const DEFAULT_SEED: u64 = 0x5EE9_B10F_1173_2026;

/// 128 hash bits of one record, split into two 64-bit halves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Hash128 {
    /// Low 64 bits of the XXH3-128 digest: chooses the block (or page).
    pub lo: u64,
    /// High 64 bits: chooses blocks inside a page and seeds the bit positions.
    pub hi: u64,
}

/// Hashes keys of maps and sets of [`Hash128`]s (or their halves): a key's
/// 128 bits are uniformly random already, so nothing more than a fold is
/// needed (a few nanoseconds a lookup where the standard hasher takes
/// tens).
#[derive(Default)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

/// The [`std::hash::BuildHasher`] of [`KeyHasher`].
pub type BuildKeyHasher = std::hash::BuildHasherDefault<KeyHasher>;

/// Hashes one record (raw bytes, without its terminator).
#[inline]
pub fn hash(record: &[u8], seed: u64) -> Hash128 {
    let h = xxh3_128_with_seed(record, seed);
    Hash128 {
        lo: h as u64,
        hi: (h >> 64) as u64,
    }
}

/// [`hash`] of a record fed in pieces (a record too long to hold whole): the
/// same 128 bits as hashing the concatenation at once.
#[derive(Clone)]
pub struct StreamHash(Box<Xxh3>);

impl StreamHash {
    /// An empty record under `seed`.
    pub fn new(seed: u64) -> StreamHash {
        StreamHash(Box::new(Xxh3::with_seed(seed)))
    }

    /// Appends `bytes` to the record.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The record's hash.
    pub fn finish(&self) -> Hash128 {
        let h = self.0.digest128();
        Hash128 {
            lo: h as u64,
            hi: (h >> 64) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vectors: if one of these changes, every existing filter file breaks.
    #[test]
    fn golden_vectors() {
        // Cross-checked against the reference C library (Python `xxhash`'s
        // xxh3_128_intdigest), so they pin XXH3-128 itself, not just our wrapper.
        let cases: &[(&[u8], u64, u64, u64)] = &[
            (b"", 0, 0x6001c324468d497f, 0x99aa06d3014798d8),
            (
                b"https://example.com/",
                0,
                0x9ff1930daa8e5b98,
                0x503c1beec51db020,
            ),
            (b"", DEFAULT_SEED, 0x5802e9daba0484f2, 0x5e69fdec49c184f6),
            (
                b"https://example.com/",
                DEFAULT_SEED,
                0x0a5263eb3e2a20c5,
                0x491f4b5e47d9454d,
            ),
            (
                b"\x00\xff\n",
                DEFAULT_SEED,
                0x1f19ca0dae1163b4,
                0xcf25676ecc115958,
            ),
        ];
        for (input, seed, lo, hi) in cases {
            let h = hash(input, *seed);
            println!("{input:?} {seed:#x} {:#x} {:#x}", h.lo, h.hi);
            assert_eq!((h.lo, h.hi), (*lo, *hi), "hash of {input:?} seed {seed:#x}");
        }
    }

    #[test]
    fn streaming_equals_one_shot() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for len in [0, 1, 16, 240, 241, 1024, 65_536, 1_000_000] {
            for step in [1, 7, 4096, 1 << 20] {
                let mut s = StreamHash::new(DEFAULT_SEED);
                for piece in data[..len].chunks(step) {
                    s.update(piece);
                }
                assert_eq!(
                    s.finish(),
                    hash(&data[..len], DEFAULT_SEED),
                    "{len} by {step}"
                );
            }
        }
    }

    #[test]
    fn seed_changes_hash() {
        assert_ne!(hash(b"a", 1), hash(b"a", 2));
    }
}
