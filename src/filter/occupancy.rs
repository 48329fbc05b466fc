//! What the bits of a filter say about it: bits set, estimated keys and the
//! false-positive rate as the bits are now, from a popcount of every block.
//! Read by `stats` and when a file left dirty has its counters recounted;
//! a scan of the whole array, kept apart from the per-key hot path.

use super::layout::{BLOCK_BITS, BLOCK_BYTES, BLOCKS_PER_PAGE, Layout, Scheme, load_word};
use super::sizing;

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
pub(crate) fn occupancy_with(
    bits: &[u8],
    layout: &Layout,
    scanned: &mut dyn FnMut(u64),
) -> Occupancy {
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
