//! Helpers shared by the integration tests: temporary directories and a
//! deterministic generator, so test data depends on nothing but a seed.
#![allow(dead_code)] // each test crate uses a different subset

use std::fs;
use std::path::PathBuf;
use tempfile::TempDir;

/// A fresh temporary directory, removed when dropped.
pub fn tmp() -> TempDir {
    tempfile::tempdir().expect("temporary directory")
}

/// Writes `data` to `name` inside `dir` and returns its path.
pub fn write(dir: &TempDir, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    fs::write(&p, data).unwrap();
    p
}

/// SplitMix64: a tiny deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}
