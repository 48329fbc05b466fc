//! The layout of a Redis filter's bits: each layer cut into shards of whole
//! 4 KiB pages (`seen:{NAME:L:j}:b`), their key names and slots, and what a
//! run knows of their bits ([`Layer`]).

use super::location::Location;
use super::slot::slot;
use crate::filter::{BLOCK_BYTES, BLOCKS_PER_PAGE};
use crate::format::LayerEntry;
use anyhow::{Context, Result};

/// Bytes of a page (the unit of a shard).
const PAGE_BYTES: u64 = BLOCKS_PER_PAGE * BLOCK_BYTES as u64;
/// Most pages in a shard (16 MiB): a shard is moved whole when a Cluster
/// reshards, and blocks both nodes while it moves.
pub(super) const MAX_SHARD_PAGES: u64 = 4096;
/// Shards a layer is cut into at least, when it has the pages.
const MIN_SHARDS: u64 = 256;

/// Pages per shard for a layer of `pages` pages: a power of two, so that
/// the layer has at least [`MIN_SHARDS`] shards when it can, and shards of at
/// most [`MAX_SHARD_PAGES`].
pub(crate) fn pages_per_shard(pages: u64) -> u64 {
    let want = (pages / MIN_SHARDS).max(1);
    let pow = if want.is_power_of_two() {
        want
    } else {
        want.next_power_of_two() / 2
    };
    pow.clamp(1, MAX_SHARD_PAGES)
}

/// One layer of a Redis filter and what this run knows of its bits.
pub(super) struct Layer {
    pub(super) entry: LayerEntry,
    /// Shard key names and their slots.
    pub(super) keys: Vec<String>,
    pub(super) slots: Vec<u16>,
    /// Bytes of a full shard.
    pub(super) shard_bytes: u64,
    /// Every bit this run knows is set: the shards read so far, plus every
    /// bit the run has set (same bytes as the file's bits).
    pub(super) known: memmap2::MmapMut,
    /// Which shards were read.
    pub(super) fetched: Vec<bool>,
}

/// The key names of the shards of layer `i`, with their slots.
pub(super) fn shard_keys(
    loc: &Location,
    i: usize,
    entry: &LayerEntry,
    pps: u64,
) -> Vec<(String, u16)> {
    let n = entry.layout.bytes().div_ceil(pps * PAGE_BYTES);
    (0..n)
        .map(|j| {
            let k = loc.shard_key(i, j);
            let s = slot(k.as_bytes());
            (k, s)
        })
        .collect()
}

impl Layer {
    pub(super) fn new(loc: &Location, i: usize, entry: LayerEntry, pps: u64) -> Result<Layer> {
        let bytes = entry.layout.bytes();
        let shard_bytes = pps * PAGE_BYTES;
        let (keys, slots): (Vec<String>, Vec<u16>) =
            shard_keys(loc, i, &entry, pps).into_iter().unzip();
        let n = keys.len();
        let known = memmap2::MmapMut::map_anon(bytes as usize)
            .with_context(|| format!("cannot allocate {bytes} bytes for a copy of {loc}"))?;
        Ok(Layer {
            entry,
            keys,
            slots,
            shard_bytes,
            known,
            fetched: vec![false; n],
        })
    }

    /// The shard holding block `b`.
    pub(super) fn shard_of(&self, block: u64) -> usize {
        (block * BLOCK_BYTES as u64 / self.shard_bytes) as usize
    }

    /// Byte range of shard `j` in the layer.
    pub(super) fn range(&self, j: usize) -> std::ops::Range<usize> {
        let start = j as u64 * self.shard_bytes;
        let end = (start + self.shard_bytes).min(self.entry.layout.bytes());
        start as usize..end as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_whole_pages_and_many() {
        assert_eq!(pages_per_shard(1), 1);
        assert_eq!(pages_per_shard(256), 1);
        assert_eq!(pages_per_shard(512), 2);
        assert_eq!(pages_per_shard(1264), 4);
        assert_eq!(pages_per_shard(4096 * 256), 4096);
        assert_eq!(pages_per_shard(u64::MAX / 8192), 4096);
    }
}
