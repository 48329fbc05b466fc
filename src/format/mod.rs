//! The filter file header: encode, decode and validate (pure, no I/O).
//!
//! A room of its own, below both stores that keep a header: `file` (a filter
//! file) and `redis` (whose meta key holds the same bytes). Encoding is here;
//! decoding and its checks, step by step, in `decode`.
//!
//! Byte-by-byte description, and the version policy, in `docs/FORMAT.md`. Every
//! field is read from a byte array as little-endian; nothing in a file is trusted
//! until [`Header::decode`] has checked it against the file length.

use crate::filter::sizing::{Growth, Window};
use crate::filter::{AnyKind, BLOCK_BITS, KindId, Layout, Scheme};
use crate::keys::KeySpec;
use xxhash_rust::xxh3::xxh3_64;

/// First eight bytes of every filter file.
pub(crate) const MAGIC: [u8; 8] = *b"\x89SEEN\r\n\x1a";
/// Format major version written and understood by this build.
pub(crate) const VERSION_MAJOR: u16 = 1;
/// Format minor version written by this build (a file using a later feature
/// says the minor that brought it).
pub(crate) const VERSION_MINOR: u16 = 4;
/// First minor version whose key options may split fields on blanks (bit 28).
const BLANK_FIELDS_SINCE_MINOR: u16 = 5;
/// First minor version with sectored bit positions (layer entry bytes 56..60).
const SECTORED_SINCE_MINOR: u16 = 4;
/// Major version of a filter with a time window (header bytes 84..88 and
/// 96..120, layer entry bytes 60..64): a 1.x reader would take it for a
/// filter that never forgets, so it must refuse it, and it refuses major
/// versions it does not know by name ("not supported", not "corrupt").
pub(crate) const WINDOW_MAJOR: u16 = 2;
/// Minor version written for filters with a window.
const WINDOW_MINOR: u16 = 0;
/// Major version a writer of a table entry of any kind but Bloom (layer
/// entry bytes 58..60 not zero) must write: every reader before it takes
/// each layer for a Bloom filter, and it refuses this major by name ("not
/// supported"; that reader would also refuse the kind field as corrupt bit
/// positions). This build reads it with a forget list ([`ForgetEntry`]),
/// with or without a window.
pub(crate) const KINDS_MAJOR: u16 = 3;
/// Minor version written with [`KINDS_MAJOR`].
const KINDS_MINOR: u16 = 0;
/// The minor a 2.x file's 1.x features are checked as: it has every feature
/// of 1.5 (key options, sectored positions, blank-separated fields).
const AS_MINOR_OF_2: u16 = 5;
/// Bytes of header (fixed part + layer table); bit arrays start after it.
pub(crate) const HEADER_LEN: usize = 4096;
/// Alignment of every bit array in the file.
pub(crate) const ALIGN: u64 = 4096;
/// Size of one layer-table entry.
const LAYER_ENTRY_LEN: usize = 64;
/// Offset of the layer table.
const LAYER_TABLE_OFFSET: usize = 128;
/// Number of layer entries the header has room for.
pub(crate) const MAX_LAYERS: usize = (HEADER_LEN - LAYER_TABLE_OFFSET) / LAYER_ENTRY_LEN;
/// Offset of the header checksum.
pub(crate) const CHECKSUM_OFFSET: usize = 120;
/// Flag bit: the file was being modified and was not closed cleanly.
pub(crate) const FLAG_DIRTY: u32 = 1;
/// Bytes of bit array covered by one checksum (the last segment may be shorter).
pub(crate) const SEGMENT_BYTES: u64 = 1 << 20;
/// Layer entry "bit positions" (bytes 56..58): scattered, bit positions v1 (the
/// only rule before format 1.4, where these bytes were reserved and zero).
const POSITIONS_SCATTERED: u16 = 0;
/// Layer entry "bit positions": sectored, bit positions v2 (format 1.4).
const POSITIONS_SECTORED: u16 = 1;
/// Offset in a layer entry of its kind ([`KindId`], 2 bytes): the high half
/// of what was a 4-byte bit positions field, whose values (0 and 1) always
/// left it zero, so every earlier file reads as Bloom layers.
const KIND_OFFSET: usize = 58;

/// The "bit positions" id of a scheme.
fn scheme_id(scheme: Scheme) -> u16 {
    match scheme {
        Scheme::Scattered => POSITIONS_SCATTERED,
        Scheme::Sectored => POSITIONS_SECTORED,
    }
}

/// One bit array of the filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerEntry {
    /// Byte offset of the bit array in the file (multiple of 4096).
    pub offset: u64,
    /// Geometry of the bit array.
    pub layout: Layout,
    /// Distinct keys this layer was sized for.
    pub capacity: u64,
    /// False-positive probability this layer was sized for.
    pub target_fpp: f64,
    /// Keys recorded as new in this layer.
    pub inserts: u64,
    /// Offset of the layer's checksum table (one XXH3-64 per segment of
    /// `SEGMENT_BYTES`, right after the bit array), or 0 when the layer has
    /// none (files written before format 1.2).
    pub checksums: u64,
    /// With a time window: the slice whose lines this layer holds (stored as
    /// its distance from [`WindowState::base`]); 0 otherwise.
    pub slice: u64,
    /// The kind of filter the layer's bytes hold ([`KindId::BLOOM`] for every
    /// file this build writes; `layout` is its geometry).
    pub kind: KindId,
}

impl LayerEntry {
    /// The kind of filter the layer holds, with its geometry: what is not
    /// per key (occupancy, estimates, rates, union) goes through it.
    ///
    /// # Panics
    /// When the entry names a kind this build does not know, which neither
    /// [`Header::decode`] (it refuses such a file) nor a writer makes.
    pub(crate) fn filter_kind(&self) -> AnyKind {
        AnyKind::of(self.kind, self.layout).expect("a decoded or new layer has a known kind")
    }

    /// Number of checksummed segments of the bit array.
    pub(crate) fn segments(&self) -> u64 {
        self.layout.bytes().div_ceil(SEGMENT_BYTES)
    }

    /// Bytes of the checksum table, padded to [`ALIGN`] (0 without one).
    fn table_len(&self) -> u64 {
        if self.checksums == 0 {
            0
        } else {
            (self.segments() * 8).next_multiple_of(ALIGN)
        }
    }

    /// End of the layer's bytes in the file (bit array, then checksum table).
    pub(crate) fn end(&self) -> u64 {
        if self.checksums == 0 {
            self.offset + self.layout.bytes()
        } else {
            self.checksums + self.table_len()
        }
    }

    /// Byte range of segment `s` inside the bit array.
    pub(crate) fn segment(&self, s: u64) -> std::ops::Range<usize> {
        let start = s * SEGMENT_BYTES;
        start as usize..(start + SEGMENT_BYTES).min(self.layout.bytes()) as usize
    }
}

/// Entries a forget list's room grows by: one page of 16-byte entries.
pub(crate) const FORGET_PAGE_ENTRIES: u64 = ALIGN / crate::filter::forget::ENTRY_BYTES as u64;

/// The forget list of a filter (format 3.0): the table entry of kind
/// [`KindId::FORGET`], after the layers' entries. Its region holds `room`
/// entries of 16 bytes (a multiple of a page); the first `count` are the
/// list ([`crate::filter::forget`]); `sum` is the XXH3-64 (seed 0) of
/// those `count × 16` bytes, written with the counters at each commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForgetEntry {
    /// Byte offset of the region (multiple of 4096).
    pub offset: u64,
    /// Entries the region has room for (a positive multiple of 256).
    pub room: u64,
    /// Entries in the list.
    pub count: u64,
    /// Checksum of the listed entries' bytes.
    pub sum: u64,
}

impl ForgetEntry {
    /// Bytes of the region.
    pub(crate) fn bytes(&self) -> u64 {
        self.room * crate::filter::forget::ENTRY_BYTES as u64
    }

    /// End of the region in the file.
    pub(crate) fn end(&self) -> u64 {
        self.offset + self.bytes()
    }

    /// Bytes of the listed entries.
    pub(crate) fn used_bytes(&self) -> u64 {
        self.count * crate::filter::forget::ENTRY_BYTES as u64
    }

    /// Bytes of the whole pages the listed entries take (the region's
    /// pages past them may be holes: `file::forget::trim_list`).
    pub(crate) fn page_bytes(&self) -> u64 {
        forget_room(self.count) * crate::filter::forget::ENTRY_BYTES as u64
    }
}

/// The room a forget list of `count` entries takes: whole pages, one at
/// least.
pub(crate) fn forget_room(count: u64) -> u64 {
    count.max(1).next_multiple_of(FORGET_PAGE_ENTRIES)
}

/// The checksum a [`ForgetEntry`] records for its listed entries' bytes
/// (their XXH3-64), fed them in parts: `digest` gives the sum.
pub(crate) fn forget_summer() -> xxhash_rust::xxh3::Xxh3 {
    xxhash_rust::xxh3::Xxh3::new()
}

/// The decoded header of a filter file.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// Minor version found in the file.
    pub version_minor: u16,
    /// Flag bits (`FLAG_DIRTY`).
    pub flags: u32,
    /// Hash definition id ([`HASH_XXH3_128_V1`](crate::hash::HASH_XXH3_128_V1)).
    pub hash_algorithm: u32,
    /// Hash seed.
    pub seed: u64,
    /// How records become keys (format 1.3; older files hash whole records).
    pub keys: KeySpec,
    /// Distinct keys the whole filter was sized for.
    pub capacity: u64,
    /// False-positive probability the whole filter was sized for.
    pub target_fpp: f64,
    /// Creation time, seconds since the Unix epoch.
    pub created: u64,
    /// Time of the last committed change, seconds since the Unix epoch.
    pub updated: u64,
    /// How the filter grows when its newest layer is full; `None` for a fixed
    /// filter (format 1.0 files are all fixed).
    pub growth: Option<Growth>,
    /// Bit arrays, oldest first (1 to `MAX_LAYERS`).
    pub layers: Vec<LayerEntry>,
    /// The time window of a filter that forgets (format 2.0).
    pub window: Option<WindowState>,
    /// The forget list's region, once a key was forgotten (format 3.0).
    pub forget: Option<ForgetEntry>,
}

/// The time window of a filter, and where its clock stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowState {
    /// The window and its slices.
    pub window: Window,
    /// The slice the filter was created in; a layer stores its slice as the
    /// distance from it (32 bits).
    pub base: u64,
    /// The latest time (Unix seconds) a writer recorded lines at: time seen
    /// by the filter never goes back ([`WindowState::time`]).
    pub clock: u64,
}

impl WindowState {
    /// The time a command whose clock says `now` works at: `now`, or the
    /// filter's clock when that is later (a clock stepped back, an older
    /// `--now`), so that no slice a writer filled is ever taken for a future
    /// one and no line comes back.
    pub fn time(&self, now: u64) -> u64 {
        now.max(self.clock)
    }

    /// The last slice a layer can name (its distance from `base` is 32 bits).
    pub fn last_slice(&self) -> u64 {
        self.base.saturating_add(u64::from(u32::MAX))
    }
}

/// Why a file is not a usable filter. Every message says what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum FormatError {
    /// Shorter than a header.
    TooShort {
        /// File length.
        len: u64,
    },
    /// Does not start with [`MAGIC`].
    BadMagic,
    /// A major version this build does not know.
    UnsupportedVersion {
        /// Major version found.
        major: u16,
        /// Minor version found.
        minor: u16,
    },
    /// The header checksum does not match its bytes.
    BadChecksum {
        /// Checksum stored in the file.
        stored: u64,
        /// Checksum computed over the header.
        computed: u64,
    },
    /// A header field holds a value that cannot be right.
    BadField {
        /// Field name as in docs/FORMAT.md.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The file is shorter than its layers say.
    Truncated {
        /// Bytes the header says the file has.
        expected: u64,
        /// Bytes it has.
        actual: u64,
    },
    /// A layer holds a kind of filter this build does not know (written by
    /// a newer `seen`).
    UnknownKind {
        /// The layer.
        layer: usize,
        /// The kind's number (layer entry bytes 58..60).
        kind: u16,
    },
    /// The file is longer than its layers say.
    TrailingData {
        /// Bytes the header says the file has.
        expected: u64,
        /// Bytes it has.
        actual: u64,
    },
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormatError::TooShort { len } => write!(
                f,
                "not a seen filter: {len} bytes is shorter than the {HEADER_LEN}-byte header \
                 (truncated, or not made by `seen build`)"
            ),
            FormatError::BadMagic => write!(
                f,
                "not a seen filter: wrong magic bytes (make one with `seen build -o FILE`)"
            ),
            FormatError::UnsupportedVersion { major, minor } if *major > WINDOW_MAJOR => write!(
                f,
                "filter format version {major}.{minor} is not supported by this seen \
                 (reads {VERSION_MAJOR}.x and {WINDOW_MAJOR}.{WINDOW_MINOR}): the file needs a \
                 newer seen; upgrade seen, or rebuild the filter"
            ),
            FormatError::UnsupportedVersion { major, minor } => write!(
                f,
                "filter format version {major}.{minor} is not supported by this seen \
                 (reads {VERSION_MAJOR}.x): use the seen version that wrote it, or rebuild the filter"
            ),
            FormatError::UnknownKind { layer, kind } => write!(
                f,
                "layer {layer} holds a filter of kind {kind}, which this seen does not know \
                 (it reads Bloom layers): the file needs a newer seen; upgrade seen to use it"
            ),
            FormatError::BadChecksum { stored, computed } => write!(
                f,
                "header checksum mismatch (stored {stored:#018x}, computed {computed:#018x}): \
                 the file is corrupt; rebuild it from its source lines"
            ),
            FormatError::BadField { field, problem } => write!(
                f,
                "corrupt header: {field} {problem}; rebuild the filter from its source lines"
            ),
            FormatError::Truncated { expected, actual } => write!(
                f,
                "file is truncated: its header needs {expected} bytes but it has {actual}; \
                 restore it from a backup or rebuild it"
            ),
            FormatError::TrailingData { expected, actual } => write!(
                f,
                "file has {} unexpected bytes after its last layer ({actual} bytes, header \
                 says {expected}); it was modified by something other than seen: rebuild it",
                actual - expected
            ),
        }
    }
}

impl std::error::Error for FormatError {}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[o..o + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

fn put(b: &mut [u8], o: usize, v: &[u8]) {
    b[o..o + v.len()].copy_from_slice(v);
}

/// The checksum of one data segment of a layer's bits ([`SEGMENT_BYTES`],
/// the last one possibly shorter): XXH3-64 (seed 0) of its bytes, as the
/// layer's checksum table stores it.
pub(crate) fn segment_checksum(bits: &[u8]) -> u64 {
    xxh3_64(bits)
}

/// XXH3-64 (seed 0) of the header with the checksum field taken as zero.
pub(crate) fn header_checksum(header: &[u8]) -> u64 {
    let mut copy = [0u8; HEADER_LEN];
    copy.copy_from_slice(&header[..HEADER_LEN]);
    copy[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 8].fill(0);
    xxh3_64(&copy)
}

fn bad(field: &'static str, problem: impl Into<String>) -> FormatError {
    FormatError::BadField {
        field,
        problem: problem.into(),
    }
}

fn check_fpp(field: &'static str, p: f64) -> Result<(), FormatError> {
    if p.is_finite() && p > 0.0 && p < 1.0 {
        Ok(())
    } else {
        Err(bad(field, format!("= {p} is not a probability in (0, 1)")))
    }
}

impl Header {
    /// Total file length the layers imply.
    pub(crate) fn file_len(&self) -> u64 {
        let layers = self
            .layers
            .last()
            .map_or(HEADER_LEN as u64, LayerEntry::end);
        self.forget.map_or(layers, |f| layers.max(f.end()))
    }

    /// The header with its layers placed one after another from the first
    /// page after the header, each bit array followed by its checksum table
    /// (a forget list's region goes after them when the file is made).
    pub(crate) fn laid_out(mut self) -> Header {
        let mut end = HEADER_LEN as u64;
        for l in &mut self.layers {
            l.offset = end.next_multiple_of(ALIGN);
            l.checksums = l.offset + l.layout.bytes();
            end = l.end();
        }
        self.forget = None;
        self
    }

    /// Layers the table has room for: its entries but the forget list's.
    pub(crate) fn layer_room(&self) -> usize {
        MAX_LAYERS - usize::from(self.forget.is_some())
    }

    /// Bytes of all bit arrays (what `stats` and `verify` read).
    pub(crate) fn bit_bytes(&self) -> u64 {
        self.layers.iter().map(|l| l.layout.bytes()).sum()
    }

    /// Whether the dirty flag is set.
    pub(crate) fn is_dirty(&self) -> bool {
        self.flags & FLAG_DIRTY != 0
    }

    /// The format version, as `seen stats` prints it: `2.MINOR` with a
    /// window, else `1.MINOR`.
    pub(crate) fn format_version(&self) -> String {
        match self.window {
            _ if self.has_other_kinds() => format!("{KINDS_MAJOR}.{KINDS_MINOR}"),
            Some(_) => format!("{WINDOW_MAJOR}.{WINDOW_MINOR}"),
            None => format!("{VERSION_MAJOR}.{}", self.version_minor),
        }
    }

    /// Whether a layer holds a kind other than Bloom, which makes the file
    /// [`KINDS_MAJOR`].
    fn has_other_kinds(&self) -> bool {
        self.forget.is_some() || self.layers.iter().any(|l| l.kind != KindId::BLOOM)
    }

    /// The layers a lookup at time `now` tests, as a mask (bit `i`: layer
    /// `i`): every layer, or with a window those of its live slices.
    pub(crate) fn live(&self, now: u64) -> u64 {
        let all = u64::MAX >> (64 - self.layers.len().max(1));
        match &self.window {
            None => all,
            Some(w) => {
                let oldest = w.window.oldest_live(w.time(now));
                self.layers
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.slice >= oldest)
                    .fold(0, |m, (i, _)| m | 1 << i)
            }
        }
    }

    /// Total keys recorded as new over all layers.
    pub(crate) fn inserts(&self) -> u64 {
        self.layers
            .iter()
            .fold(0u64, |acc, l| acc.saturating_add(l.inserts))
    }

    /// Encodes the header into its 4096 bytes, checksum included.
    ///
    /// # Panics
    /// If there are more than `MAX_LAYERS` layers (a programming error).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        assert!(self.layers.len() + usize::from(self.forget.is_some()) <= MAX_LAYERS);
        let mut b = [0u8; HEADER_LEN];
        put(&mut b, 0, &MAGIC);
        let major = if self.has_other_kinds() {
            KINDS_MAJOR
        } else if self.window.is_some() {
            WINDOW_MAJOR
        } else {
            VERSION_MAJOR
        };
        put(&mut b, 8, &major.to_le_bytes());
        // A layer with sectored positions makes the file 1.4 whatever it was.
        let minor = if self
            .layers
            .iter()
            .any(|l| l.layout.scheme == Scheme::Sectored)
        {
            self.version_minor.max(SECTORED_SINCE_MINOR)
        } else {
            self.version_minor
        };
        // Blank-separated fields make it 1.5: a 1.4 reader rejects bit 28.
        let minor = if self.keys.to_bits() & crate::keys::BLANKS != 0 {
            minor.max(BLANK_FIELDS_SINCE_MINOR)
        } else {
            minor
        };
        // A window makes it 2.0, another kind 3.0 (above).
        let minor = if self.has_other_kinds() {
            KINDS_MINOR
        } else if self.window.is_some() {
            WINDOW_MINOR
        } else {
            minor
        };
        put(&mut b, 10, &minor.to_le_bytes());
        put(&mut b, 12, &(HEADER_LEN as u32).to_le_bytes());
        put(&mut b, 16, &self.flags.to_le_bytes());
        put(&mut b, 20, &self.hash_algorithm.to_le_bytes());
        put(&mut b, 24, &self.seed.to_le_bytes());
        put(&mut b, 32, &BLOCK_BITS.to_le_bytes());
        let entries = self.layers.len() + usize::from(self.forget.is_some());
        put(&mut b, 36, &(entries as u32).to_le_bytes());
        put(&mut b, 40, &(MAX_LAYERS as u32).to_le_bytes());
        put(&mut b, 44, &self.keys.to_bits().to_le_bytes());
        put(&mut b, 48, &self.capacity.to_le_bytes());
        put(&mut b, 56, &self.target_fpp.to_bits().to_le_bytes());
        put(&mut b, 64, &self.created.to_le_bytes());
        put(&mut b, 72, &self.updated.to_le_bytes());
        if let Some(g) = self.growth {
            put(&mut b, 80, &g.factor.to_le_bytes());
            put(&mut b, 88, &g.ratio.to_bits().to_le_bytes());
        }
        let base = self.window.map_or(0, |w| w.base);
        if let Some(w) = &self.window {
            put(&mut b, 84, &w.window.slices.to_le_bytes());
            put(&mut b, 96, &w.window.secs.to_le_bytes());
            put(&mut b, 104, &w.base.to_le_bytes());
            put(&mut b, 112, &w.clock.to_le_bytes());
        }
        for (i, l) in self.layers.iter().enumerate() {
            let o = LAYER_TABLE_OFFSET + i * LAYER_ENTRY_LEN;
            put(&mut b, o, &l.offset.to_le_bytes());
            put(&mut b, o + 8, &l.layout.nblocks.to_le_bytes());
            put(&mut b, o + 16, &l.layout.k.to_le_bytes());
            put(&mut b, o + 20, &l.layout.blocks_per_key.to_le_bytes());
            put(&mut b, o + 24, &l.capacity.to_le_bytes());
            put(&mut b, o + 32, &l.target_fpp.to_bits().to_le_bytes());
            put(&mut b, o + 40, &l.inserts.to_le_bytes());
            put(&mut b, o + 48, &l.checksums.to_le_bytes());
            put(&mut b, o + 56, &scheme_id(l.layout.scheme).to_le_bytes());
            put(&mut b, o + KIND_OFFSET, &l.kind.0.to_le_bytes());
            let slice = u32::try_from(l.slice.saturating_sub(base))
                .expect("a slice within 2^32 of the base");
            put(&mut b, o + 60, &slice.to_le_bytes());
        }
        if let Some(f) = &self.forget {
            let o = LAYER_TABLE_OFFSET + self.layers.len() * LAYER_ENTRY_LEN;
            put(&mut b, o, &f.offset.to_le_bytes());
            put(&mut b, o + 8, &f.room.to_le_bytes());
            put(&mut b, o + 40, &f.count.to_le_bytes());
            put(&mut b, o + 48, &f.sum.to_le_bytes());
            put(&mut b, o + KIND_OFFSET, &KindId::FORGET.0.to_le_bytes());
        }
        let sum = header_checksum(&b);
        put(&mut b, CHECKSUM_OFFSET, &sum.to_le_bytes());
        b
    }
}

mod decode;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::HASH_XXH3_128_V1;
    use proptest::prelude::*;

    fn sample() -> Header {
        Header {
            version_minor: VERSION_MINOR,
            flags: 0,
            hash_algorithm: HASH_XXH3_128_V1,
            seed: 42,
            keys: KeySpec {
                field: Some(2),
                delimiter: Some(b','),
                trim: true,
                ..KeySpec::RAW
            },
            capacity: 1000,
            target_fpp: 1e-6,
            created: 1_700_000_000,
            updated: 1_700_000_100,
            growth: Some(Growth::new(2)),
            layers: vec![LayerEntry {
                offset: HEADER_LEN as u64,
                layout: Layout {
                    nblocks: 128,
                    k: 9,
                    blocks_per_key: 2,
                    scheme: Scheme::Scattered,
                },
                capacity: 1000,
                target_fpp: 1e-6,
                inserts: 17,
                checksums: HEADER_LEN as u64 + 128 * 64,
                slice: 0,
                kind: KindId::BLOOM,
            }],
            window: None,
            forget: None,
        }
    }

    /// A filter with a time window: version 2.0, its fields where
    /// docs/FORMAT.md says, layers naming slices from the base; a 1.5
    /// reader's rule (reserved bytes zero) rejects it naming the bytes; bad
    /// values are refused.
    #[test]
    fn windows_round_trip_and_older_readers_reject_them() {
        let mut h = sample();
        h.window = Some(WindowState {
            window: Window {
                secs: 6 * 86_400,
                slices: 8,
            },
            base: 20_000,
            // When slice 20,003 starts (slices of 64,800 s).
            clock: 20_003 * 64_800,
        });
        h.layers[0].slice = 20_003;
        let b = h.encode();
        assert_eq!((u16_at(&b, 8), u16_at(&b, 10)), (2, 0));
        assert_eq!(h.format_version(), "2.0");
        assert_eq!(u32_at(&b, 84), 8);
        assert_eq!(u64_at(&b, 96), 6 * 86_400);
        assert_eq!(u64_at(&b, 104), 20_000);
        assert_eq!(u64_at(&b, 112), 20_003 * 64_800);
        assert_eq!(u32_at(&b, LAYER_TABLE_OFFSET + 60), 3);
        let back = Header::decode(&b, len(&h)).unwrap();
        assert_eq!(back.window, h.window);
        assert_eq!(back.layers[0].slice, 20_003);
        // Readers of 1.x refuse major 2 by name (`seen` 0.1 with this
        // check, as before windows, for a major it does not know).
        let mut newer = b;
        newer[8..10].copy_from_slice(&4u16.to_le_bytes());
        reseal(&mut newer);
        let e = Header::decode(&newer, len(&h)).unwrap_err().to_string();
        assert!(e.contains("format version 4.0 is not supported"), "{e}");
        // The window's bytes in a 1.x file are reserved.
        let mut old = b;
        old[8..10].copy_from_slice(&1u16.to_le_bytes());
        old[10..12].copy_from_slice(&5u16.to_le_bytes());
        reseal(&mut old);
        let e = Header::decode(&old, len(&h)).unwrap_err().to_string();
        assert!(e.contains("reserved bytes 84..88, 96..120"), "{e}");
        // A layer, or the base, after the clock's slice is refused.
        let mut future = h.clone();
        future.layers[0].slice = 20_004;
        let e = Header::decode(&future.encode(), len(&h))
            .unwrap_err()
            .to_string();
        assert!(e.contains("after the clock's slice"), "{e}");
        // A layer slice without a window is a reserved field.
        let mut no_window = sample();
        no_window.layers[0].slice = 0;
        let mut nb = no_window.encode();
        nb[LAYER_TABLE_OFFSET + 60] = 1;
        reseal(&mut nb);
        let e = Header::decode(&nb, len(&h)).unwrap_err().to_string();
        assert!(e.contains("layer reserved bytes"), "{e}");
        for (at, value, want) in [
            (96, 0u64, "format 2 file"),
            (104, 20_004, "window base"),
            (84, 0u64, "window slices"),
            (84, 33, "window slices"),
            (96, 7, "a second per slice"),
            (96, 101 * 365 * 86_400, "100 years"),
        ] {
            let mut bad = b;
            if at == 104 {
                // Layers name their slice from the base: keep them before it.
                bad[LAYER_TABLE_OFFSET + 60..LAYER_TABLE_OFFSET + 64].fill(0);
            }
            if at == 84 {
                bad[84..88].copy_from_slice(&(value as u32).to_le_bytes());
            } else {
                bad[at..at + 8].copy_from_slice(&value.to_le_bytes());
            }
            reseal(&mut bad);
            let e = Header::decode(&bad, len(&h)).unwrap_err().to_string();
            assert!(e.contains(want), "{at}={value}: {e}");
        }
        // The live layers at a time: the slice's and S newer ones.
        let at = |j: u64| j * 64_800;
        assert_eq!(back.live(at(20_003 + 8)), 1, "the oldest live slice");
        assert_eq!(back.live(at(20_003 + 9)), 0, "past the window");
        // A time before the clock is the clock.
        let mut later = back.clone();
        later.window.as_mut().unwrap().clock = at(20_003 + 9);
        assert_eq!(later.live(at(20_003 + 8)), 0);
    }

    fn len(h: &Header) -> u64 {
        h.file_len()
    }

    /// Rewrites the checksum so a test reaches the check after it.
    fn reseal(b: &mut [u8]) {
        let sum = header_checksum(b);
        b[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 8].copy_from_slice(&sum.to_le_bytes());
    }

    #[test]
    fn round_trip() {
        let h = sample();
        let b = h.encode();
        assert_eq!(Header::decode(&b, len(&h)).unwrap(), h);
        // Header, bits, then one 4 KiB page of checksums.
        assert_eq!(h.file_len(), 4096 + 128 * 64 + 4096);
    }

    #[test]
    fn several_layers_and_fixed_filters_round_trip() {
        let mut h = sample();
        let l0 = h.layers[0];
        h.layers.push(LayerEntry {
            offset: h.file_len(),
            capacity: 2000,
            inserts: 5,
            checksums: h.file_len() + l0.layout.bytes(),
            ..l0
        });
        let b = h.encode();
        assert_eq!(Header::decode(&b, h.file_len()).unwrap(), h);
        // A second layer must not overlap the first.
        let mut bad = h.clone();
        bad.layers[1].offset = 4096 * 2;
        assert!(matches!(
            Header::decode(&bad.encode(), bad.file_len()),
            Err(FormatError::BadField {
                field: "layer offset",
                ..
            })
        ));
        // The checksum table sits right after the layer's bits, or nowhere.
        let mut bad = h.clone();
        bad.layers[0].checksums += 4096;
        assert!(matches!(
            Header::decode(&bad.encode(), bad.file_len()),
            Err(FormatError::BadField {
                field: "checksum table offset",
                ..
            })
        ));
        // Bit positions (format 1.4): a scattered layer leaves bytes 56..64 of
        // its entry zero and the version as it was, so a 1.3 file stays 1.3;
        // a sectored layer writes 1 there and makes the file 1.4.
        let mut old = h.clone();
        old.version_minor = 3;
        let b = old.encode();
        assert_eq!(u16::from_le_bytes([b[10], b[11]]), 3);
        for i in 0..2 {
            let e = LAYER_TABLE_OFFSET + i * LAYER_ENTRY_LEN;
            assert!(b[e + 56..e + 64].iter().all(|&x| x == 0));
        }
        old.layers[1].layout = Layout {
            k: 16,
            blocks_per_key: 3,
            scheme: Scheme::Sectored,
            ..old.layers[1].layout
        };
        let b = old.encode();
        assert_eq!(u16::from_le_bytes([b[10], b[11]]), 4);
        let e = LAYER_TABLE_OFFSET + LAYER_ENTRY_LEN;
        assert_eq!(b[e + 56..e + 64], [1, 0, 0, 0, 0, 0, 0, 0]);
        let back = Header::decode(&b, old.file_len()).unwrap();
        assert_eq!(back.version_minor, 4);
        assert_eq!(back.layers, old.layers);
        // A sectored layer in a file that says 1.3 is an error, named.
        let mut b = b;
        b[10..12].copy_from_slice(&3u16.to_le_bytes());
        let sum = header_checksum(&b);
        b[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 8].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(
            Header::decode(&b, old.file_len()),
            Err(FormatError::BadField {
                field: "bit positions",
                ..
            })
        ));
        // Format 1.0 files: no growth fields, no checksums, a fixed filter.
        let mut fixed = sample();
        fixed.growth = None;
        fixed.version_minor = 0;
        fixed.keys = KeySpec::RAW;
        fixed.layers[0].checksums = 0;
        let b = fixed.encode();
        assert!(b[80..120].iter().all(|&x| x == 0));
        assert_eq!(Header::decode(&b, fixed.file_len()).unwrap(), fixed);
        // Key options are 1.3: an older file that sets them is rejected.
        fixed.keys = sample().keys;
        let b = fixed.encode();
        assert!(matches!(
            Header::decode(&b, fixed.file_len()),
            Err(FormatError::BadField {
                field: "key options",
                ..
            })
        ));
        // Blank-separated fields (bit 28) are 1.5: a file using them says
        // so, and one that says 1.4 is rejected, so no 1.4 reader (which
        // rejects bit 28) nor this one misreads it.
        let mut blanks = sample();
        blanks.keys.delimiter = None;
        let b = blanks.encode();
        assert_eq!(u16::from_le_bytes([b[10], b[11]]), 5);
        assert_eq!(
            u32::from_le_bytes(b[44..48].try_into().unwrap()),
            2 | 1 << 25 | 1 << 28
        ); // field 2, trim, blanks;
        let back = Header::decode(&b, blanks.file_len()).unwrap();
        assert_eq!((back.keys, back.version_minor), (blanks.keys, 5));
        let mut b = b;
        b[10..12].copy_from_slice(&4u16.to_le_bytes());
        reseal(&mut b);
        assert!(matches!(
            Header::decode(&b, blanks.file_len()),
            Err(FormatError::BadField {
                field: "key options",
                ..
            })
        ));
        // An explicit tab (`-t '\t'`, and every `-k` file before 1.5) stays 1.4.
        let mut tab = sample();
        tab.keys.delimiter = Some(b'\t');
        assert_eq!(
            u16::from_le_bytes(tab.encode()[10..12].try_into().unwrap()),
            4
        );
    }

    /// The kind of each layer (entry bytes 58..60): Bloom is 0, the bytes
    /// every earlier file has there, so a Bloom file is written as before
    /// (same version, same bytes); a layer of another kind makes the file
    /// 3.0, which this reader refuses as needing a newer seen, and a kind
    /// it does not know in a file that says 1.x or 2.0 is refused by name.
    #[test]
    fn kinds_round_trip_and_unknown_kinds_are_refused() {
        let h = sample();
        let b = h.encode();
        assert_eq!(u16_at(&b, LAYER_TABLE_OFFSET + KIND_OFFSET), 0);
        assert_eq!((u16_at(&b, 8), u16_at(&b, 10)), (1, VERSION_MINOR));
        let back = Header::decode(&b, len(&h)).unwrap();
        assert_eq!(back.layers[0].kind, KindId::BLOOM);
        assert_eq!(
            back.encode(),
            b,
            "a Bloom file is written byte for byte as read"
        );
        // A writer of another kind writes it, and the next major.
        let mut other = h.clone();
        other.layers[0].kind = KindId(7);
        let ob = other.encode();
        assert_eq!(u16_at(&ob, LAYER_TABLE_OFFSET + KIND_OFFSET), 7);
        assert_eq!(
            (u16_at(&ob, 8), u16_at(&ob, 10)),
            (KINDS_MAJOR, KINDS_MINOR)
        );
        assert_eq!(other.format_version(), "3.0");
        // This build reads 3.0 (forget lists), and refuses the kind it does
        // not know by name.
        let e = Header::decode(&ob, len(&other)).unwrap_err();
        assert_eq!(e, FormatError::UnknownKind { layer: 0, kind: 7 });
        // The kind field is read: the same entry in a file that says 1.x is
        // refused by its kind, layer named, before any other field of it.
        let mut b1 = b;
        b1[LAYER_TABLE_OFFSET + KIND_OFFSET..][..2].copy_from_slice(&7u16.to_le_bytes());
        reseal(&mut b1);
        let e = Header::decode(&b1, len(&h)).unwrap_err();
        assert_eq!(e, FormatError::UnknownKind { layer: 0, kind: 7 });
        let msg = e.to_string();
        assert!(
            msg.contains("layer 0 holds a filter of kind 7") && msg.contains("newer seen"),
            "{msg}"
        );
        // ... with a window (2.0) too, and in a later layer.
        let mut two = h.clone();
        let l0 = two.layers[0];
        two.layers.push(LayerEntry {
            offset: two.file_len(),
            checksums: two.file_len() + l0.layout.bytes(),
            ..l0
        });
        let mut b2 = two.encode();
        let at = LAYER_TABLE_OFFSET + LAYER_ENTRY_LEN + KIND_OFFSET;
        b2[at..at + 2].copy_from_slice(&1u16.to_le_bytes());
        reseal(&mut b2);
        assert_eq!(
            Header::decode(&b2, two.file_len()),
            Err(FormatError::UnknownKind { layer: 1, kind: 1 })
        );
        let mut win = h.clone();
        win.window = Some(WindowState {
            window: Window {
                secs: 86_400,
                slices: 8,
            },
            base: 0,
            clock: 0,
        });
        let mut bw = win.encode();
        assert_eq!(u16_at(&bw, 8), WINDOW_MAJOR);
        bw[LAYER_TABLE_OFFSET + KIND_OFFSET] = 2;
        reseal(&mut bw);
        assert_eq!(
            Header::decode(&bw, len(&win)),
            Err(FormatError::UnknownKind { layer: 0, kind: 2 })
        );
    }

    /// A forget list makes the file 3.0, its entry after the layers', and
    /// reads back as written, with or without a window; a file of 1.x or
    /// 2.0 with that kind, or a forget entry that is not last, or one whose
    /// region is unaligned, overlaps a layer or holds more than its room,
    /// is refused.
    #[test]
    fn forget_lists_round_trip_and_bad_ones_are_refused() {
        let mut h = sample();
        let after = h.file_len();
        h.forget = Some(ForgetEntry {
            offset: after,
            room: 512,
            count: 3,
            sum: 0xABCD,
        });
        assert_eq!(h.file_len(), after + 512 * 16);
        assert_eq!(h.layer_room(), MAX_LAYERS - 1);
        let b = h.encode();
        assert_eq!((u16_at(&b, 8), u16_at(&b, 10)), (KINDS_MAJOR, KINDS_MINOR));
        assert_eq!(u32_at(&b, 36), 2);
        assert_eq!(
            u16_at(&b, LAYER_TABLE_OFFSET + LAYER_ENTRY_LEN + KIND_OFFSET),
            1
        );
        assert_eq!(h.format_version(), "3.0");
        let mut back = Header::decode(&b, h.file_len()).unwrap();
        assert_eq!(back.version_minor, AS_MINOR_OF_2);
        back.version_minor = h.version_minor;
        assert_eq!(back, h);
        assert_eq!(back.encode()[8..12], b[8..12]);
        // With a window.
        let mut w = h.clone();
        w.window = Some(WindowState {
            window: Window {
                secs: 86_400,
                slices: 8,
            },
            base: 0,
            clock: 5,
        });
        let bw = w.encode();
        assert_eq!(u16_at(&bw, 8), KINDS_MAJOR);
        let back = Header::decode(&bw, w.file_len()).unwrap();
        assert_eq!((back.window, back.forget), (w.window, w.forget));
        // The region may sit before a later layer.
        let mut g = h.clone();
        let l0 = g.layers[0];
        let at = g.file_len();
        g.layers.push(LayerEntry {
            offset: at,
            checksums: at + l0.layout.bytes(),
            ..l0
        });
        let back = Header::decode(&g.encode(), g.file_len()).unwrap();
        assert_eq!(back.layers.len(), 2);
        assert_eq!(back.forget, g.forget);
        // Refused: each with its reason.
        let refused = |f: ForgetEntry, what: &str| {
            let mut x = h.clone();
            x.forget = Some(f);
            let len = x.file_len().max(h.file_len());
            let e = Header::decode(&x.encode(), len).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
        };
        let f = h.forget.unwrap();
        refused(
            ForgetEntry {
                offset: after + 1,
                ..f
            },
            "not 4096-aligned",
        );
        refused(ForgetEntry { room: 100, ..f }, "positive multiple of 256");
        refused(ForgetEntry { room: 0, ..f }, "positive multiple of 256");
        refused(ForgetEntry { count: 513, ..f }, "more than its room");
        refused(ForgetEntry { offset: 4096, ..f }, "overlaps layer 0");
        // Not the last entry: read as a layer, refused by its kind.
        let mut nl = b;
        let second = LAYER_TABLE_OFFSET + LAYER_ENTRY_LEN;
        let (e0, e1) =
            nl[LAYER_TABLE_OFFSET..second + LAYER_ENTRY_LEN].split_at_mut(LAYER_ENTRY_LEN);
        e0.swap_with_slice(e1);
        reseal(&mut nl);
        assert_eq!(
            Header::decode(&nl, h.file_len()),
            Err(FormatError::UnknownKind { layer: 0, kind: 1 })
        );
        // Only a forget list, no layer.
        let mut only = b;
        only[LAYER_TABLE_OFFSET..second].copy_from_slice(&b[second..second + LAYER_ENTRY_LEN]);
        only[second..second + LAYER_ENTRY_LEN].fill(0);
        only[36..40].copy_from_slice(&1u32.to_le_bytes());
        reseal(&mut only);
        assert!(
            Header::decode(&only, h.file_len())
                .unwrap_err()
                .to_string()
                .contains("0 Bloom layers")
        );
        // The same entry in a 1.x file: an unknown kind there.
        let mut one = b;
        one[8..12].copy_from_slice(&[1, 0, VERSION_MINOR as u8, 0]);
        reseal(&mut one);
        assert_eq!(
            Header::decode(&one, h.file_len()),
            Err(FormatError::UnknownKind { layer: 1, kind: 1 })
        );
    }

    #[test]
    fn layout_of_fixed_fields() {
        let b = sample().encode();
        assert_eq!(&b[..8], b"\x89SEEN\r\n\x1a");
        assert_eq!(u16_at(&b, 8), 1);
        assert_eq!(u64_at(&b, 24), 42);
        assert_eq!(u64_at(&b, 128), 4096);
        assert_eq!(u64_at(&b, 128 + 8), 128);
        assert_eq!(u64_at(&b, 128 + 40), 17);
        assert_eq!(u32_at(&b, 80), 2);
        assert_eq!(f64::from_bits(u64_at(&b, 88)), 0.8);
    }

    /// Length, magic, version and checksum, and the file's length against
    /// what its layers need.
    #[test]
    fn each_corruption_has_its_error() {
        let h = sample();
        let good = h.encode();
        let l = len(&h);

        let mut b = good;
        b[0] = b'X';
        assert_eq!(Header::decode(&b, l), Err(FormatError::BadMagic));

        let mut b = good;
        b[8] = 4;
        assert!(matches!(
            Header::decode(&b, l),
            Err(FormatError::UnsupportedVersion { major: 4, .. })
        ));

        let mut b = good;
        b[200] ^= 1;
        assert!(matches!(
            Header::decode(&b, l),
            Err(FormatError::BadChecksum { .. })
        ));

        assert!(matches!(
            Header::decode(&good[..100], l),
            Err(FormatError::TooShort { .. })
        ));
        assert_eq!(
            Header::decode(&good, l - 1),
            Err(FormatError::Truncated {
                expected: l,
                actual: l - 1
            })
        );
        assert!(matches!(
            Header::decode(&good, l + 4096),
            Err(FormatError::TrailingData { .. })
        ));
        // ... unless a writer was adding a layer (dirty): the region is unused.
        let mut dirty = h.clone();
        dirty.flags = FLAG_DIRTY;
        assert_eq!(Header::decode(&dirty.encode(), l + 4096), Ok(dirty));
    }

    /// The checks after the checksum, field by field (the second half of
    /// [`each_corruption_has_its_error`]).
    #[test]
    fn each_corruption_has_its_error_in_fields() {
        let h = sample();
        let good = h.encode();
        let l = len(&h);

        // Oversized block count: checksum valid, data would be far past the end.
        let mut b = good;
        b[128 + 8..128 + 16].copy_from_slice(&(1u64 << 50).to_le_bytes());
        b[128 + 48..128 + 56].copy_from_slice(&(4096 + (1u64 << 56)).to_le_bytes());
        reseal(&mut b);
        assert!(matches!(
            Header::decode(&b, l),
            Err(FormatError::Truncated { .. })
        ));

        // Block count that overflows the byte size.
        let mut b = good;
        b[128 + 8..128 + 16].copy_from_slice(&(u64::MAX - 63).to_le_bytes());
        reseal(&mut b);
        assert!(matches!(
            Header::decode(&b, l),
            Err(FormatError::BadField { field: "layer", .. })
        ));

        for (offset, value, field) in [
            (128 + 16, 0u32, "layer"),          // k = 0
            (128 + 16, 1_000_000_000, "layer"), // k = 10^9
            (128 + 20, 3, "layer"),             // 3 blocks per key
            (36, 0, "layer count"),
            (36, 63, "layer count"),
            (32, 256, "block bits"),
            (20, 9, "hash algorithm"),
            (16, 2, "flags"),
        ] {
            let mut b = good;
            b[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
            reseal(&mut b);
            match Header::decode(&b, l) {
                Err(FormatError::BadField { field: f, .. }) => assert_eq!(f, field, "@{offset}"),
                other => panic!("@{offset}={value}: {other:?}"),
            }
        }

        // Growth fields: factor, ratio, and the two together.
        for (factor, ratio, field) in [
            (1u32, 0.8f64, "growth factor"),
            (17, 0.8, "growth factor"),
            (2, 1.0, "growth ratio"),
            (2, 0.0, "growth ratio"),
            (2, f64::NAN, "growth ratio"),
            (0, 0.5, "growth ratio"),
        ] {
            let mut b = good;
            b[80..84].copy_from_slice(&factor.to_le_bytes());
            b[88..96].copy_from_slice(&ratio.to_bits().to_le_bytes());
            reseal(&mut b);
            match Header::decode(&b, l) {
                Err(FormatError::BadField { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{factor} {ratio}: {other:?}"),
            }
        }
        let mut b = good;
        b[100] = 1;
        reseal(&mut b);
        assert!(matches!(
            Header::decode(&b, l),
            Err(FormatError::BadField {
                field: "reserved bytes 84..88, 96..120",
                ..
            })
        ));

        // Layer data overlapping the header.
        let mut b = good;
        b[128..136].copy_from_slice(&0u64.to_le_bytes());
        reseal(&mut b);
        assert!(matches!(
            Header::decode(&b, l),
            Err(FormatError::BadField {
                field: "layer offset",
                ..
            })
        ));

        // NaN target.
        let mut b = good;
        b[56..64].copy_from_slice(&f64::NAN.to_bits().to_le_bytes());
        reseal(&mut b);
        assert!(matches!(
            Header::decode(&b, l),
            Err(FormatError::BadField {
                field: "target fpp",
                ..
            })
        ));
    }

    #[test]
    fn messages_say_what_to_do() {
        let msg = FormatError::BadMagic.to_string();
        assert!(msg.contains("seen build"), "{msg}");
        let msg = FormatError::Truncated {
            expected: 10,
            actual: 5,
        }
        .to_string();
        assert!(
            msg.contains("truncated") && msg.contains("rebuild"),
            "{msg}"
        );
    }

    proptest! {
        /// No byte string makes decode panic, and whatever it accepts re-encodes
        /// to the same bytes.
        #[test]
        fn decode_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 0..5000),
                               reseal_it in any::<bool>(),
                               extra in 0u64..100_000) {
            if reseal_it && bytes.len() >= HEADER_LEN {
                reseal(&mut bytes);
            }
            let file_len = bytes.len() as u64 + extra;
            if let Ok(h) = Header::decode(&bytes, file_len) {
                prop_assert_eq!(&h.encode()[..], &bytes[..HEADER_LEN]);
            }
        }

        /// Single-bit flips anywhere in a valid header are always detected.
        #[test]
        fn bit_flips_are_detected(pos in 0usize..HEADER_LEN * 8) {
            let h = sample();
            let mut b = h.encode();
            b[pos / 8] ^= 1 << (pos % 8);
            prop_assert!(Header::decode(&b, len(&h)).is_err());
        }

        #[test]
        fn round_trip_any_values(seed in any::<u64>(), cap in any::<u64>(), inserts in any::<u64>(),
                                 pages in 1u64..1_000_000, k in 1u32..=64, x in prop::sample::select(vec![1u32, 2, 4]),
                                 fpp in 1e-15f64..0.999, dirty in any::<bool>()) {
            let mut h = sample();
            h.seed = seed;
            h.capacity = cap;
            h.flags = if dirty { FLAG_DIRTY } else { 0 };
            h.layers[0].layout = Layout { nblocks: pages * 64, k, blocks_per_key: x, scheme: Scheme::Scattered };
            h.layers[0].checksums = h.layers[0].offset + pages * 4096;
            h.layers[0].inserts = inserts;
            h.layers[0].target_fpp = fpp;
            let b = h.encode();
            prop_assert_eq!(Header::decode(&b, h.file_len()).unwrap(), h);
        }
    }
}
