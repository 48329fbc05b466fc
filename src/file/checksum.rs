//! Which data segments' checksums a writer must (re)write, and writing them.

use super::format::{self, Header, LayerEntry};
use crate::filter;
use crate::hash::Hash128;
use anyhow::{Context, Result};
use memmap2::MmapMut;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What is known of a segment's checksum.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Segment {
    /// Written in the file and current.
    Current,
    /// To recompute from the bits.
    Stale,
    /// To write, and the segment is all zero: a layer made by this process
    /// whose segment no key has touched since. Its checksum is that of zero
    /// bytes, computed without reading the bits, so a new file's untouched
    /// pages are never brought into the page cache just to be hashed.
    Zero,
}

/// Segments whose checksum must be (re)written, per layer.
#[derive(Default)]
pub(super) struct Stale(Vec<Vec<Segment>>);

impl Stale {
    /// Makes room for `layers` layers; the segments of the ones not covered
    /// yet start all zero (`new`: a layer just made, whose bits and table are
    /// still zero) or current (layers read from a file, whose tables are).
    pub(super) fn cover(&mut self, layers: &[LayerEntry], new: bool) {
        let state = if new { Segment::Zero } else { Segment::Current };
        for l in &layers[self.0.len().min(layers.len())..] {
            self.0.push(vec![state; l.segments() as usize]);
        }
    }

    /// Marks every segment of every layer stale.
    pub(super) fn all(&mut self) {
        for v in &mut self.0 {
            v.fill(Segment::Stale);
        }
    }

    /// Marks the segment holding the key's blocks (one page, so one segment).
    pub(super) fn mark(&mut self, layer: usize, l: &LayerEntry, h: Hash128) {
        let block = l.layout.blocks(h)[0];
        let seg = (block * filter::BLOCK_BYTES as u64 / format::SEGMENT_BYTES) as usize;
        if let Some(s) = self.0.get_mut(layer).and_then(|v| v.get_mut(seg)) {
            *s = Segment::Stale;
        }
    }

    /// Writes the checksums of `maps` that are not current into `file`.
    pub(super) fn write(
        &mut self,
        file: &File,
        path: &Path,
        header: &Header,
        maps: &[MmapMut],
    ) -> Result<()> {
        // The checksum of zero bytes, by length (whole segments, and a
        // layer's shorter last one).
        let mut zero_sums: Vec<(usize, u64)> = Vec::new();
        for ((l, bits), states) in header.layers.iter().zip(maps).zip(&mut self.0) {
            if l.checksums == 0 {
                continue;
            }
            for (s, state) in states.iter_mut().enumerate() {
                let range = l.segment(s as u64);
                let sum = match *state {
                    Segment::Current => continue,
                    Segment::Stale => format::segment_checksum(&bits[range]),
                    Segment::Zero => {
                        let len = range.len();
                        match zero_sums.iter().find(|(n, _)| *n == len) {
                            Some(&(_, sum)) => sum,
                            None => {
                                let sum = format::segment_checksum(&vec![0u8; len]);
                                zero_sums.push((len, sum));
                                sum
                            }
                        }
                    }
                };
                file.write_all_at(&sum.to_le_bytes(), l.checksums + 8 * s as u64)
                    .with_context(|| format!("cannot write the checksums of {}", path.display()))?;
                *state = Segment::Current;
            }
        }
        Ok(())
    }
}
