//! Which data segments' checksums a writer must (re)write, and writing them;
//! and, before a writer first changes a segment of a clean file, checking
//! that segment against the checksum found there, so that fresh checksums
//! never hide damage `seen verify` would have found.

use crate::filter;
use crate::format::{self, Header, LayerEntry};
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
    /// In a clean file this process opened, and not checked against the
    /// bits yet: before a writer changes the segment (and so rewrites its
    /// checksum), the bits are checked against it ([`Stale::check`]); a
    /// mismatch is damage, and the writer refuses to go on rather than
    /// hide it. Left alone, it is written as it was found.
    Unchecked,
    /// To recompute from the bits.
    Stale,
    /// To write, and the segment is all zero: a layer made by this process
    /// whose segment no key has touched since. Its checksum is that of zero
    /// bytes, computed without reading the bits, so a new file's untouched
    /// pages are never brought into the page cache just to be hashed.
    Zero,
}

/// The segments of one layer, and how many of them are
/// [`Segment::Unchecked`] (none: a batch of keys needs no check).
#[derive(Default)]
struct LayerSegments {
    states: Vec<Segment>,
    unchecked: usize,
}

impl LayerSegments {
    fn fill(&mut self, state: Segment) {
        self.states.fill(state);
        self.unchecked = if state == Segment::Unchecked {
            self.states.len()
        } else {
            0
        };
    }
}

/// Segments whose checksum must be (re)written, per layer; and a buffer
/// the segments checked before a writer changes them are read into.
#[derive(Default)]
pub(super) struct Stale(Vec<LayerSegments>, Vec<u8>);

/// The segment of layer `l` that holds the key's blocks (one page, so one
/// segment).
fn segment_of(l: &LayerEntry, h: Hash128) -> usize {
    let block = l.layout.blocks(h)[0];
    (block * filter::BLOCK_BYTES as u64 / format::SEGMENT_BYTES) as usize
}

/// Reads the checksum stored for segment `s` of layer `l` in `file`.
///
/// # Errors
/// When it cannot be read.
pub(super) fn stored_checksum(file: &File, path: &Path, l: &LayerEntry, s: usize) -> Result<u64> {
    let mut b = [0u8; 8];
    file.read_exact_at(&mut b, l.checksums + 8 * s as u64)
        .with_context(|| format!("cannot read the checksums of {}", path.display()))?;
    Ok(u64::from_le_bytes(b))
}

/// Reads the bits of segment `s` of layer `l` in `file` into `bits`, and
/// returns the checksum stored for it. Read, not looked at through the
/// file's mapping: a page read there first would fault again when a key
/// is set in it (measured: 0.8 s more CPU for a million lines into a
/// 1 GiB filter, against 0.2 s read this way).
///
/// # Errors
/// When they cannot be read.
pub(super) fn stored_segment(
    file: &File,
    path: &Path,
    l: &LayerEntry,
    s: usize,
    bits: &mut Vec<u8>,
) -> Result<u64> {
    let range = l.segment(s as u64);
    bits.resize(range.len(), 0);
    file.read_exact_at(bits, l.offset + range.start as u64)
        .with_context(|| format!("cannot read {}", path.display()))?;
    stored_checksum(file, path, l, s)
}

/// The error of a writer that found segment `s` of layer `i` (`l`) of the
/// clean filter `name` damaged before changing it or copying it whole.
pub(super) fn damaged(name: &str, i: usize, l: &LayerEntry, s: usize) -> anyhow::Error {
    let range = l.segment(s as u64);
    anyhow::anyhow!(
        "{name} is damaged: layer {i}, bytes {}..{} of the file (segment {s}) do not match \
         their checksum, and new checksums written from them would hide it, so none were: \
         `seen verify {name}` lists every damaged segment; rebuild the filter from its \
         source lines",
        l.offset + range.start as u64,
        l.offset + range.end as u64,
    )
}

impl Stale {
    /// Makes room for `layers` layers; the segments of the ones not covered
    /// yet start all zero (`new`: a layer just made, whose bits and table are
    /// still zero) or unchecked (layers read from a file, whose checksums
    /// are checked before a writer changes their segments). A layer without
    /// checksums (before format 1.2) has nothing to check.
    pub(super) fn cover(&mut self, layers: &[LayerEntry], new: bool) {
        for l in &layers[self.0.len().min(layers.len())..] {
            let state = match (new, l.checksums) {
                (true, _) => Segment::Zero,
                (false, 0) => Segment::Current,
                (false, _) => Segment::Unchecked,
            };
            let mut v = LayerSegments {
                states: vec![Segment::Current; l.segments() as usize],
                unchecked: 0,
            };
            v.fill(state);
            self.0.push(v);
        }
    }

    /// Forgets the layers past the first `n` (cut from the file).
    pub(super) fn truncate(&mut self, n: usize) {
        self.0.truncate(n);
    }

    /// Marks every segment of every layer stale (a dirty file's: its
    /// checksums may be stale, so they are recomputed, not checked).
    pub(super) fn all(&mut self) {
        for v in &mut self.0 {
            v.fill(Segment::Stale);
        }
    }

    /// Marks every segment of layer `i` all zero (its bits were just cleared).
    pub(super) fn zeroed(&mut self, i: usize) {
        if let Some(v) = self.0.get_mut(i) {
            v.fill(Segment::Zero);
        }
    }

    /// Marks every segment of layer `i` stale: its bits were checked when
    /// they were read ([`Stale::check_layer`]).
    pub(super) fn layer(&mut self, i: usize) {
        if let Some(v) = self.0.get_mut(i) {
            debug_assert_eq!(v.unchecked, 0, "layer {i} changed unchecked");
            v.fill(Segment::Stale);
        }
    }

    /// Marks the segment holding the key's blocks (one page, so one
    /// segment); [`Stale::check`] saw it first.
    pub(super) fn mark(&mut self, layer: usize, l: &LayerEntry, h: Hash128) {
        let seg = segment_of(l, h);
        if let Some(s) = self.0.get_mut(layer).and_then(|v| v.states.get_mut(seg)) {
            debug_assert!(*s != Segment::Unchecked, "segment {seg} changed unchecked");
            *s = Segment::Stale;
        }
    }

    /// Before the keys `hashes` go into layer `i` (`l`): checks each
    /// unchecked segment they may change against its checksum (`read`
    /// reads the segment's bits into the buffer it is given and returns
    /// its stored checksum: [`stored_segment`]), once per segment and run.
    /// Costs nothing once no segment of the layer is left unchecked.
    ///
    /// # Errors
    /// A segment whose bits do not match (nothing was changed), or one
    /// that cannot be read.
    pub(super) fn check(
        &mut self,
        name: &str,
        i: usize,
        l: &LayerEntry,
        hashes: &[Hash128],
        read: &dyn Fn(usize, &mut Vec<u8>) -> Result<u64>,
    ) -> Result<()> {
        let Stale(layers, buf) = self;
        let Some(v) = layers.get_mut(i) else {
            return Ok(());
        };
        for &h in hashes {
            if v.unchecked == 0 {
                break;
            }
            let s = segment_of(l, h);
            if v.states.get(s) == Some(&Segment::Unchecked) {
                let stored = read(s, buf)?;
                if format::segment_checksum(buf) != stored {
                    return Err(damaged(name, i, l, s));
                }
                v.states[s] = Segment::Current;
                v.unchecked -= 1;
            }
        }
        Ok(())
    }

    /// Checks every unchecked segment of layer `i` (`l`, whose bits are
    /// `bits`, just read whole) against its checksum: a writer that holds
    /// the layer in memory marks whole layers stale at a span's end.
    ///
    /// # Errors
    /// As [`Stale::check`].
    pub(super) fn check_layer(
        &mut self,
        name: &str,
        i: usize,
        l: &LayerEntry,
        bits: &[u8],
        stored: &dyn Fn(usize) -> Result<u64>,
    ) -> Result<()> {
        let Some(v) = self.0.get_mut(i) else {
            return Ok(());
        };
        for s in 0..v.states.len() {
            if v.unchecked == 0 {
                break;
            }
            if v.states[s] == Segment::Unchecked {
                if format::segment_checksum(&bits[l.segment(s as u64)]) != stored(s)? {
                    return Err(damaged(name, i, l, s));
                }
                v.states[s] = Segment::Current;
                v.unchecked -= 1;
            }
        }
        Ok(())
    }

    /// Reads the stale segments of `maps` (copies of the layers held in
    /// memory) back from `file`, undoing what changed them since they were
    /// last written. They stay stale.
    pub(super) fn read_back(
        &self,
        file: &File,
        path: &Path,
        header: &Header,
        maps: &mut [MmapMut],
    ) -> Result<()> {
        for ((l, bits), v) in header.layers.iter().zip(maps).zip(&self.0) {
            for (s, state) in v.states.iter().enumerate() {
                if *state == Segment::Stale {
                    let range = l.segment(s as u64);
                    file.read_exact_at(&mut bits[range.clone()], l.offset + range.start as u64)
                        .with_context(|| format!("cannot read {}", path.display()))?;
                }
            }
        }
        Ok(())
    }

    /// Writes the checksums of `maps` that are not current into `file`;
    /// with `back` (`maps` are copies of the layers held in memory), each
    /// stale segment's bits too. Many segments are done on two threads:
    /// one writes the bits back, the other sums them. (Two threads that
    /// both wrote took turns at the file's lock, ext4's inode lock, and
    /// spun waiting for it: 7 % of the samples of a billion-line run.)
    pub(super) fn write(
        &mut self,
        file: &File,
        path: &Path,
        header: &Header,
        maps: &[MmapMut],
        back: bool,
    ) -> Result<()> {
        // Every segment to write back or sum, as (layer, segment, state).
        let mut work = Vec::new();
        for (i, (l, v)) in header.layers.iter().zip(&mut self.0).enumerate() {
            for (s, state) in v.states.iter_mut().enumerate() {
                let written = back && *state == Segment::Stale;
                // An unchecked segment's checksum stays as it was found.
                let summed = !matches!(*state, Segment::Current | Segment::Unchecked);
                if written || (l.checksums != 0 && summed) {
                    work.push((i, s, *state));
                }
                if l.checksums == 0 {
                    // Nothing else to write for a layer without checksums.
                    *state = Segment::Current;
                }
            }
        }
        // The checksum of zero bytes, by length (whole segments, and a
        // layer's shorter last one).
        let mut zero_sums: Vec<(usize, u64)> = Vec::new();
        for &(i, s, state) in &work {
            let len = header.layers[i].segment(s as u64).len();
            if state == Segment::Zero && !zero_sums.iter().any(|(n, _)| *n == len) {
                zero_sums.push((len, format::segment_checksum(&vec![0u8; len])));
            }
        }
        let bits_of = |i: usize, s: usize| {
            let l = &header.layers[i];
            let range = l.segment(s as u64);
            (&maps[i][range.clone()], l.offset + range.start as u64)
        };
        let write = |work: &[(usize, usize, Segment)]| -> std::io::Result<()> {
            for &(i, s, state) in work {
                if back && state == Segment::Stale {
                    let (bits, at) = bits_of(i, s);
                    file.write_all_at(bits, at)?;
                }
            }
            Ok(())
        };
        let sum = |&(i, s, state): &(usize, usize, Segment)| -> Option<u64> {
            let l = &header.layers[i];
            (l.checksums != 0).then(|| match state {
                Segment::Zero => {
                    let len = l.segment(s as u64).len();
                    zero_sums.iter().find(|(n, _)| *n == len).map_or(0, |z| z.1)
                }
                _ => format::segment_checksum(bits_of(i, s).0),
            })
        };
        // A writer thread that cannot start (an address-space limit):
        // both on this one.
        let sums: Option<std::io::Result<Vec<Option<u64>>>> = if work.len() >= 8 {
            std::thread::scope(|scope| {
                let writer = std::thread::Builder::new()
                    .name("seen-write-back".into())
                    .spawn_scoped(scope, || write(&work))
                    .ok()?;
                let sums = work.iter().map(sum).collect();
                Some(
                    writer
                        .join()
                        .map_err(|_| std::io::Error::other("the write-back thread panicked"))
                        .and_then(|w| w.map(|()| sums)),
                )
            })
        } else {
            None
        };
        let sums = sums.unwrap_or_else(|| write(&work).map(|()| work.iter().map(sum).collect()));
        let sums = sums.with_context(|| format!("cannot write {}", path.display()))?;
        // The checksums, a table at a time.
        let mut table: Vec<u8> = Vec::new();
        let mut at = 0;
        while at < work.len() {
            let i = work[at].0;
            let l = &header.layers[i];
            let n = work[at..].iter().take_while(|w| w.0 == i).count();
            let done = &sums[at..at + n];
            if l.checksums != 0 {
                table.resize(8 * l.segments() as usize, 0);
                file.read_exact_at(&mut table, l.checksums)
                    .and_then(|()| {
                        for (&(_, s, _), sum) in work[at..at + n].iter().zip(done) {
                            if let Some(sum) = sum {
                                table[8 * s..8 * s + 8].copy_from_slice(&sum.to_le_bytes());
                            }
                        }
                        file.write_all_at(&table, l.checksums)
                    })
                    .with_context(|| format!("cannot write the checksums of {}", path.display()))?;
            }
            for &(_, s, _) in &work[at..at + n] {
                self.0[i].states[s] = Segment::Current;
            }
            at += n;
        }
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::file::{NewFilter, ReadFilter, WriteFilter};
    use crate::filter::sizing::{self, Spec};
    use crate::keys::KeySpec;
    use crate::pipeline::Store;

    /// Every stored checksum of `path` is the checksum of its segment's bits.
    fn assert_checksums_match(path: &Path) {
        let r = ReadFilter::open(path).unwrap();
        for (i, l) in r.header().layers.iter().enumerate() {
            let sums = r.checksums(i).unwrap();
            assert_eq!(sums.len() as u64, l.segments());
            for (s, sum) in sums.iter().enumerate() {
                let bits = &r.layer_bits(i)[l.segment(s as u64)];
                assert_eq!(
                    *sum,
                    format::segment_checksum(bits),
                    "layer {i} segment {s}"
                );
            }
        }
    }

    /// Segments no key touched in a layer made by this process get the
    /// checksum of zero bytes without their bits being read: it must be the
    /// one the bits give, for whole segments and a shorter last one, in a
    /// first layer and in one added by growth, after `finish` and after a
    /// reopened writer's commit.
    #[test]
    fn untouched_segments_get_the_checksum_of_their_zero_bits() {
        let spec = Spec {
            capacity: 700_000,
            target_fpp: 1e-6,
            growth: Some(sizing::Growth::new(2)),
            window: None,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.seen");
        let mut new = NewFilter::create(&path, &spec, 7, KeySpec::RAW).unwrap();
        let l = new.header().layers[0];
        assert!(l.segments() >= 3, "several segments: {}", l.segments());
        assert!(
            !l.layout.bytes().is_multiple_of(format::SEGMENT_BYTES),
            "a short last segment"
        );
        // Two keys: most segments stay untouched.
        let keys: Vec<Hash128> = (0..2u32)
            .map(|i| crate::hash::hash(&i.to_le_bytes(), 7))
            .collect();
        new.insert_batch(&keys, &mut Vec::new()).unwrap();
        new.finish(false).unwrap();
        assert_checksums_match(&path);
        // A writer fills the first layer and grows: the new layer's
        // untouched segments too.
        let mut w = WriteFilter::open(&path, None).unwrap();
        let keys: Vec<Hash128> = (0..700_010u32)
            .map(|i| crate::hash::hash(&(i + 10).to_le_bytes(), 7))
            .collect();
        w.insert_batch(&keys, &mut Vec::new()).unwrap();
        assert_eq!(w.header().layers.len(), 2);
        w.commit().unwrap();
        drop(w);
        assert_checksums_match(&path);
    }
}
