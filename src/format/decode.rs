//! Decoding a header: [`Header::decode`] and its steps, each checking its
//! part of the header (length, magic, version, checksum, then every field and
//! every layer against the file length) and naming the first problem found.

use super::{
    ALIGN, AS_MINOR_OF_2, BLANK_FIELDS_SINCE_MINOR, CHECKSUM_OFFSET, FLAG_DIRTY,
    FORGET_PAGE_ENTRIES, ForgetEntry, FormatError, HEADER_LEN, Header, KIND_OFFSET, KINDS_MAJOR,
    KINDS_MINOR, LAYER_ENTRY_LEN, LAYER_TABLE_OFFSET, LayerEntry, MAGIC, MAX_LAYERS,
    POSITIONS_SCATTERED, POSITIONS_SECTORED, SECTORED_SINCE_MINOR, VERSION_MAJOR, WINDOW_MAJOR,
    WINDOW_MINOR, WindowState, bad, check_fpp, header_checksum, u16_at, u32_at, u64_at,
};
use crate::filter::sizing::{Growth, MAX_GROWTH, MAX_SLICES, Window};
use crate::filter::{BLOCK_BITS, KindId, Layout, Scheme};
use crate::hash::HASH_XXH3_128_V1;
use crate::keys::KeySpec;

impl Header {
    /// Decodes and validates a header, given the first bytes of a file and the
    /// file's total length. Checks, in order: length, magic, version, checksum,
    /// then every field and every layer against the file length.
    ///
    /// # Errors
    /// A [`FormatError`] naming the first problem found.
    pub fn decode(bytes: &[u8], file_len: u64) -> Result<Header, FormatError> {
        let (b, major, minor) = decode_envelope(bytes, file_len)?;
        let fixed = decode_fixed(b, major, minor)?;
        let (layers, forget, end) = decode_layer_table(b, major, minor, fixed.count, fixed.window)?;
        check_file_len(file_len, end, fixed.flags)?;
        Ok(Header {
            version_minor: minor,
            flags: fixed.flags,
            hash_algorithm: fixed.hash_algorithm,
            seed: u64_at(b, 24),
            keys: fixed.keys,
            capacity: u64_at(b, 48),
            target_fpp: fixed.target_fpp,
            created: u64_at(b, 64),
            updated: u64_at(b, 72),
            growth: fixed.growth,
            layers,
            window: fixed.window,
            forget,
        })
    }
}

// The steps of `Header::decode`, in the order it takes them: each checks its
// part of the header and returns the first problem found.

/// The fields of the fixed part of a header (bytes 0..128) that
/// [`decode_fixed`] checked and [`Header::decode`] keeps.
struct Fixed {
    flags: u32,
    hash_algorithm: u32,
    /// Entries in use in the layer table.
    count: usize,
    keys: KeySpec,
    growth: Option<Growth>,
    target_fpp: f64,
    window: Option<WindowState>,
}

/// What is checked before any field is read: the length, the magic, the
/// major version and the header checksum. Gives the header's bytes, its
/// major version, and the minor its 1.x features are checked as.
fn decode_envelope(bytes: &[u8], file_len: u64) -> Result<(&[u8], u16, u16), FormatError> {
    if bytes.len() < HEADER_LEN || file_len < HEADER_LEN as u64 {
        return Err(FormatError::TooShort {
            len: file_len.min(bytes.len() as u64),
        });
    }
    let b = &bytes[..HEADER_LEN];
    if b[..8] != MAGIC {
        return Err(FormatError::BadMagic);
    }
    let (major, minor) = (u16_at(b, 8), u16_at(b, 10));
    // A 2.x file is checked as a 1.x file with every 1.x feature.
    let minor = match major {
        VERSION_MAJOR => minor,
        WINDOW_MAJOR if minor == WINDOW_MINOR => AS_MINOR_OF_2,
        KINDS_MAJOR if minor == KINDS_MINOR => AS_MINOR_OF_2,
        _ => return Err(FormatError::UnsupportedVersion { major, minor }),
    };
    let stored = u64_at(b, CHECKSUM_OFFSET);
    let computed = header_checksum(b);
    if stored != computed {
        return Err(FormatError::BadChecksum { stored, computed });
    }
    Ok((b, major, minor))
}

/// The fixed fields, in order: header length, flags, hash algorithm, block
/// bits, layer count, layer table size, key options, growth, reserved bytes
/// and target fpp.
fn decode_fixed(b: &[u8], major: u16, minor: u16) -> Result<Fixed, FormatError> {
    if u32_at(b, 12) as usize != HEADER_LEN {
        return Err(bad(
            "header length",
            format!("= {} (expected {HEADER_LEN})", u32_at(b, 12)),
        ));
    }
    let flags = u32_at(b, 16);
    if flags & !FLAG_DIRTY != 0 {
        return Err(bad("flags", format!("= {flags:#x} has unknown bits set")));
    }
    let hash_algorithm = u32_at(b, 20);
    if hash_algorithm != HASH_XXH3_128_V1 {
        return Err(bad(
            "hash algorithm",
            format!("= {hash_algorithm} is unknown"),
        ));
    }
    if u32_at(b, 32) != BLOCK_BITS {
        return Err(bad(
            "block bits",
            format!("= {} (expected {BLOCK_BITS})", u32_at(b, 32)),
        ));
    }
    let count = u32_at(b, 36) as usize;
    if count == 0 || count > MAX_LAYERS {
        return Err(bad(
            "layer count",
            format!("= {count} is outside 1..={MAX_LAYERS}"),
        ));
    }
    if u32_at(b, 40) as usize != MAX_LAYERS {
        return Err(bad(
            "layer table size",
            format!("= {} (expected {MAX_LAYERS})", u32_at(b, 40)),
        ));
    }
    let keys = decode_keys(b, minor)?;
    let growth = decode_growth(b)?;
    let window = decode_window(b, major)?;
    let target_fpp = f64::from_bits(u64_at(b, 56));
    check_fpp("target fpp", target_fpp)?;
    Ok(Fixed {
        flags,
        hash_algorithm,
        count,
        keys,
        growth,
        target_fpp,
        window,
    })
}

/// The time window (bytes 84..88 and 96..120): reserved (zero) in a 1.x
/// file, set in a 2.x file.
fn decode_window(b: &[u8], major: u16) -> Result<Option<WindowState>, FormatError> {
    // A 3.x file has a window when its window field is set.
    if major == VERSION_MAJOR || major == KINDS_MAJOR && u64_at(b, 96) == 0 {
        if b[84..88]
            .iter()
            .chain(&b[96..CHECKSUM_OFFSET])
            .any(|&x| x != 0)
        {
            return Err(bad("reserved bytes 84..88, 96..120", "are not zero"));
        }
        return Ok(None);
    }
    let secs = u64_at(b, 96);
    if secs == 0 {
        return Err(bad(
            "window",
            "= 0 in a format 2 file, which is a filter with a window",
        ));
    }
    let slices = u32_at(b, 84);
    if !(1..=MAX_SLICES).contains(&slices) {
        return Err(bad(
            "window slices",
            format!("= {slices} is outside 1..={MAX_SLICES}"),
        ));
    }
    if secs > crate::units::MAX_WINDOW_SECS || secs < u64::from(slices) {
        return Err(bad(
            "window",
            format!("= {secs} seconds is not between {slices} (a second per slice) and 100 years"),
        ));
    }
    let window = Window { secs, slices };
    let (base, clock) = (u64_at(b, 104), u64_at(b, 112));
    // Writers set the clock before they name a slice: no slice, the first
    // included, is after the clock's.
    if base > window.slice_at(clock) {
        return Err(bad(
            "window base",
            format!(
                "= slice {base} is after the clock's slice ({})",
                window.slice_at(clock)
            ),
        ));
    }
    Ok(Some(WindowState {
        window,
        base,
        clock,
    }))
}

/// The key options (bytes 44..48), which only format 1.3 and later may set
/// (blank-separated fields: 1.5 and later).
fn decode_keys(b: &[u8], minor: u16) -> Result<KeySpec, FormatError> {
    let key_bits = u32_at(b, 44);
    if key_bits != 0 && minor < 3 {
        return Err(bad(
            "key options",
            format!("= {key_bits:#x} in a format 1.{minor} file (key options came in 1.3)"),
        ));
    }
    if key_bits & crate::keys::BLANKS != 0 && minor < BLANK_FIELDS_SINCE_MINOR {
        return Err(bad(
            "key options",
            format!(
                "= {key_bits:#x} in a format 1.{minor} file (blank-separated fields came in 1.5)"
            ),
        ));
    }
    KeySpec::from_bits(key_bits).map_err(|e| bad("key options", e))
}

/// The growth factor and ratio (bytes 80..84 and 88..96): both zero for a
/// fixed filter.
fn decode_growth(b: &[u8]) -> Result<Option<Growth>, FormatError> {
    let factor = u32_at(b, 80);
    let ratio = f64::from_bits(u64_at(b, 88));
    match factor {
        0 if ratio.to_bits() == 0 => Ok(None),
        0 => Err(bad("growth ratio", "is set on a filter that does not grow")),
        2..=MAX_GROWTH if ratio > 0.0 && ratio < 1.0 => Ok(Some(Growth { factor, ratio })),
        2..=MAX_GROWTH => Err(bad("growth ratio", format!("= {ratio} is not in (0, 1)"))),
        _ => Err(bad(
            "growth factor",
            format!("= {factor} is not 0 (fixed) or 2..={MAX_GROWTH}"),
        )),
    }
}

/// The layer table: `count` entries, oldest first, each after the data of
/// the one before, then zeros. Gives the layers and where the last one's
/// data ends.
fn decode_layer_table(
    b: &[u8],
    major: u16,
    minor: u16,
    count: usize,
    window: Option<WindowState>,
) -> Result<(Vec<LayerEntry>, Option<ForgetEntry>, u64), FormatError> {
    let mut layers = Vec::with_capacity(count);
    let mut forget = None;
    let mut end = HEADER_LEN as u64;
    for i in 0..MAX_LAYERS {
        let e = &b[LAYER_TABLE_OFFSET + i * LAYER_ENTRY_LEN..][..LAYER_ENTRY_LEN];
        if i >= count {
            if e.iter().any(|&x| x != 0) {
                return Err(bad(
                    "layer table",
                    format!("entry {i} is past the layer count but not zero"),
                ));
            }
            continue;
        }
        // A 3.x file's last entry may be its forget list.
        if major == KINDS_MAJOR && i + 1 == count && u16_at(e, KIND_OFFSET) == KindId::FORGET.0 {
            forget = Some(decode_forget(e, i)?);
            continue;
        }
        let entry = decode_layer(e, i, minor, end, window)?;
        end = entry.end();
        layers.push(entry);
    }
    if layers.is_empty() {
        return Err(bad(
            "layer count",
            "= 0 Bloom layers (a filter has at least one)",
        ));
    }
    if let Some(f) = forget {
        if let Some(l) = layers
            .iter()
            .position(|l| f.offset < l.end() && l.offset < f.end())
        {
            return Err(bad("forget list", format!("region overlaps layer {l}")));
        }
        end = end.max(f.end());
    }
    Ok((layers, forget, end))
}

/// The forget list's entry (entry `i`, the last): its region aligned, not
/// empty, a whole number of pages, holding its count.
fn decode_forget(e: &[u8], i: usize) -> Result<ForgetEntry, FormatError> {
    let f = ForgetEntry {
        offset: u64_at(e, 0),
        room: u64_at(e, 8),
        count: u64_at(e, 40),
        sum: u64_at(e, 48),
    };
    let zero = |r: std::ops::Range<usize>| e[r].iter().all(|&x| x == 0);
    if !(zero(16..40) && zero(56..58) && zero(60..64)) {
        return Err(bad(
            "forget list",
            format!("entry {i}: reserved bytes are not zero"),
        ));
    }
    if !f.offset.is_multiple_of(ALIGN) || f.offset < HEADER_LEN as u64 {
        return Err(bad(
            "forget list",
            format!("offset = {} is not 4096-aligned after the header", f.offset),
        ));
    }
    if f.room == 0 || !f.room.is_multiple_of(FORGET_PAGE_ENTRIES) || f.room > u64::MAX / 64 {
        return Err(bad(
            "forget list",
            format!(
                "room = {} entries is not a positive multiple of {FORGET_PAGE_ENTRIES}",
                f.room
            ),
        ));
    }
    if f.offset.checked_add(f.bytes()).is_none() {
        return Err(bad("forget list", "ends past 2^64 bytes"));
    }
    if f.count > f.room {
        return Err(bad(
            "forget list",
            format!("count = {} is more than its room ({})", f.count, f.room),
        ));
    }
    Ok(f)
}

/// Entry `i` of the layer table (its bytes `e`), whose data must start at or
/// after `end`, where the data before it ends.
fn decode_layer(
    e: &[u8],
    i: usize,
    minor: u16,
    end: u64,
    window: Option<WindowState>,
) -> Result<LayerEntry, FormatError> {
    // Bloom is the only kind of majors 1 and 2 (and of this build): any
    // other is a newer seen's, refused by name before its bytes are read.
    let kind = KindId(u16_at(e, KIND_OFFSET));
    if kind != KindId::BLOOM {
        return Err(FormatError::UnknownKind {
            layer: i,
            kind: kind.0,
        });
    }
    let scheme = match u16_at(e, 56) {
        POSITIONS_SCATTERED => Scheme::Scattered,
        POSITIONS_SECTORED if minor >= SECTORED_SINCE_MINOR => Scheme::Sectored,
        POSITIONS_SECTORED => {
            return Err(bad(
                "bit positions",
                format!(
                    "of layer {i} = {POSITIONS_SECTORED} (sectored) needs format 1.{SECTORED_SINCE_MINOR}, and the file says 1.{minor}"
                ),
            ));
        }
        other => {
            return Err(bad(
                "bit positions",
                format!("of layer {i} = {other} is unknown"),
            ));
        }
    };
    let layout = Layout {
        nblocks: u64_at(e, 8),
        k: u32_at(e, 16),
        blocks_per_key: u32_at(e, 20),
        scheme,
    };
    layout
        .validate()
        .map_err(|err| bad("layer", format!("{i}: {err}")))?;
    let offset = u64_at(e, 0);
    if !offset.is_multiple_of(ALIGN) || offset < end {
        return Err(bad(
            "layer offset",
            format!("{i} = {offset} is not 4096-aligned after the previous data ({end})"),
        ));
    }
    let layer_end = offset
        .checked_add(layout.bytes())
        .ok_or_else(|| bad("layer", format!("{i} ends past 2^64 bytes")))?;
    let l_fpp = f64::from_bits(u64_at(e, 32));
    check_fpp("layer target fpp", l_fpp)?;
    let checksums = u64_at(e, 48);
    if checksums != 0 && checksums != layer_end {
        return Err(bad(
            "checksum table offset",
            format!("{i} = {checksums} is not the end of the layer's bits ({layer_end})"),
        ));
    }
    let slice = match window {
        Some(w) => {
            let last = w.window.slice_at(w.clock);
            match w.base.checked_add(u64::from(u32_at(e, 60))) {
                Some(s) if s <= last => s,
                _ => {
                    return Err(bad(
                        "layer slice",
                        format!("{i} is after the clock's slice ({last})"),
                    ));
                }
            }
        }
        None if e[60..].iter().any(|&x| x != 0) => {
            return Err(bad("layer reserved bytes", format!("{i} are not zero")));
        }
        None => 0,
    };
    let entry = LayerEntry {
        offset,
        layout,
        capacity: u64_at(e, 24),
        target_fpp: l_fpp,
        inserts: u64_at(e, 40),
        checksums,
        slice,
        kind,
    };
    if entry
        .layout
        .bytes()
        .checked_add(entry.table_len())
        .and_then(|n| offset.checked_add(n))
        .is_none()
    {
        return Err(bad("layer", format!("{i} ends past 2^64 bytes")));
    }
    Ok(entry)
}

/// The file's length against the end of the last layer's data.
fn check_file_len(file_len: u64, end: u64, flags: u32) -> Result<(), FormatError> {
    if file_len < end {
        return Err(FormatError::Truncated {
            expected: end,
            actual: file_len,
        });
    }
    // A writer adding a layer extends the file before the header names the
    // new layer: a dirty file may end with such an unnamed, unused region.
    if file_len > end && flags & FLAG_DIRTY == 0 {
        return Err(FormatError::TrailingData {
            expected: end,
            actual: file_len,
        });
    }
    Ok(())
}
