//! The forget list: exact removal beside Bloom layers (issue 41).
//!
//! A Bloom filter cannot take a key back out (clearing its bits could clear
//! another key's), so a filter that forgets keeps, beside its layers, the
//! exact set of the 128-bit hashes of the keys it forgot. The rule: a key is
//! present when a layer holds it **and** its hash is not in the list. Only
//! the key's own hash is listed, so forgetting one key never changes
//! another key's answer (no false negative), and a false positive forgotten
//! becomes absent (the white list). A forgotten key that is recorded again
//! leaves the list (its bits were never cleared).
//!
//! Stored, the list is its entries, 16 bytes each (the hash's low then high
//! half, little-endian), in no particular order, with a count kept apart
//! (a filter file's header). The stored order is the in-memory one, kept
//! across changes: an entry is added at the end, and a removed one is
//! dropped with the entries after it moving up, in order. So an image
//! rewritten in place by a span that only adds (a `forget`), or only
//! removes (a writer recording forgotten keys again), and cut short holds,
//! under the old count, every entry the list held before and after, and
//! nothing it did not hold before. A decoder tolerates an entry listed
//! twice (such a cut).
//!
//! In memory the entries are indexed by an open-addressing table over their
//! low halves (uniform hash bits), each slot tagged with more of them, so a
//! lookup costs a probe or two and reads one entry, behind a bitmap that
//! answers most keys not listed in one read. Callers ask only about keys
//! the layers hold, in batches whose reads are started ahead: an empty
//! list costs nothing. A lookup that finds a key says where ([`Spot`]), so
//! that recording it again takes it off without a second lookup.

use crate::hash::Hash128;
use entries::Entries;
use memmap2::Mmap;
use std::sync::Arc;

mod entries;

/// Bytes of one stored entry.
pub const ENTRY_BYTES: usize = 16;

/// Memory a list read from a file takes a key in a run, beside the file's
/// entries read in place: its table's slots (8 bytes) and prefilter (a
/// byte a slot), [`sized_for`] two fifths full.
pub const MEMORY_BYTES_PER_KEY: f64 = (8.0 + 1.0) * 5.0 / 2.0;

/// Keys a batch lookup prefetches ahead of the one it tests.
pub const AHEAD: usize = 32;

/// A set of keys, hashed by their own bits.
pub type KeySet = std::collections::HashSet<Hash128, crate::hash::BuildKeyHasher>;

/// Listed keys and where a lookup found each ([`Spot`]), hashed by their
/// own bits.
pub type KeySpots = std::collections::HashMap<Hash128, Spot, crate::hash::BuildKeyHasher>;

/// Where a lookup found a listed key: its entry's position, valid while the
/// entries have not been moved since ([`ForgetList::remove_at`] checks).
/// A removal that knows it is spared the key's table and entry reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spot {
    /// The entry's position.
    at: u32,
    /// The list's [`ForgetList::moves`] then.
    moves: u32,
}

impl Spot {
    /// No position known: a removal looks the key up.
    pub const UNKNOWN: Spot = Spot {
        at: u32::MAX,
        moves: u32::MAX,
    };
}

/// The stored bytes of the entry for `h`.
pub fn entry_bytes(h: Hash128) -> [u8; ENTRY_BYTES] {
    let mut b = [0u8; ENTRY_BYTES];
    b[..8].copy_from_slice(&h.lo.to_le_bytes());
    b[8..].copy_from_slice(&h.hi.to_le_bytes());
    b
}

/// The hash a stored entry holds.
pub fn entry_at(b: &[u8]) -> Hash128 {
    let u = |r: std::ops::Range<usize>| u64::from_le_bytes(b[r].try_into().expect("8 bytes"));
    Hash128 {
        lo: u(0..8),
        hi: u(8..16),
    }
}

/// Why stored bytes are not a forget list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForgetError {
    /// The count says more entries than the bytes hold.
    CountPastEnd {
        /// Entries the count says.
        count: u64,
        /// Entries the bytes can hold.
        room: u64,
    },
}

impl std::fmt::Display for ForgetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForgetError::CountPastEnd { count, room } => write!(
                f,
                "its forget list says {count} entries but has room for {room}"
            ),
        }
    }
}

impl std::error::Error for ForgetError {}

/// The forgotten keys' hashes: their stored order and an index over them.
#[derive(Clone, Debug, Default)]
pub struct ForgetList {
    /// The entries, in stored order, removed ones among them (see `gone`).
    entries: Entries,
    /// A bit per entry: removed (taken off the list; dropped when it is
    /// stored, or when the table is rebuilt). A removal marks its entry
    /// rather than moving others, so it costs one lookup.
    gone: Vec<u64>,
    /// Entries marked in `gone`.
    gone_count: usize,
    /// A bit per entry: removed and then stored without it ([`ForgetList::
    /// stored`]): the stored image no longer holds it where it was, so a
    /// key listed again goes last rather than back there.
    dropped: Vec<u64>,
    /// Open addressing over `lo`: 0 is an empty slot, else the entry's
    /// position + 1 and a tag of its key ([`slot_of`]), probed in order
    /// from a key's home slot ([`ForgetList::home`]). Built two fifths
    /// full, at most half (empty when nothing was listed).
    slots: Vec<u64>,
    /// A bitmap of 8 bits per slot (16 or more per entry) in 64-bit words:
    /// each key listed since the table was built set three bits of one
    /// word (the word of its place in `lo`, the bits chosen by `hi`). A key
    /// with a bit of its three clear is not listed, known from one access
    /// to a bitmap an eighth of the slots' size; about 1 in 200 keys that
    /// are not listed goes on to the slots.
    /// Bits of removed keys stay set until the table is rebuilt.
    seen: Vec<u64>,
    /// Times the entries were moved (the table rebuilt, removed entries
    /// dropped): a [`Spot`] of another count is stale. Wraps (a spot is
    /// used within the span that found it).
    moves: u32,
    /// Removed entries were dropped for a write not yet stored
    /// ([`ForgetList::reordered`]).
    reordered: bool,
}

impl ForgetList {
    /// An empty list.
    pub fn new() -> ForgetList {
        ForgetList::default()
    }

    /// Reads the first `count` entries of `bytes` (entries listed twice are
    /// taken once: a removal cut short leaves one so).
    ///
    /// # Errors
    /// A count past what the bytes hold.
    pub fn decode(bytes: &[u8], count: u64) -> Result<ForgetList, ForgetError> {
        let room = (bytes.len() / ENTRY_BYTES) as u64;
        if count > room {
            return Err(ForgetError::CountPastEnd { count, room });
        }
        let entries = bytes[..count as usize * ENTRY_BYTES]
            .chunks_exact(ENTRY_BYTES)
            .map(entry_at)
            .collect();
        Ok(ForgetList::of_stored(entries))
    }

    /// The list of stored `entries`, in their order (entries listed twice
    /// are taken once: a removal cut short leaves one so).
    pub fn of_stored(entries: Vec<Hash128>) -> ForgetList {
        ForgetList::indexed(Entries::of_vec(entries))
    }

    /// The list of the first `count` entries of a stored image, read in
    /// place rather than copied (see [`ForgetList::settle`]; entries
    /// listed twice are taken once, copied).
    ///
    /// # Panics
    /// When the image holds fewer than `count` entries.
    pub fn of_image(image: Arc<Mmap>, count: usize) -> ForgetList {
        ForgetList::indexed(Entries::of_image(image, count))
    }

    /// The list of `entries` (in stored order), its table built once (see
    /// [`ForgetList::rebuild`]), or, when one is listed twice, built key by
    /// key with each taken once.
    fn indexed(entries: Entries) -> ForgetList {
        let mut list = ForgetList {
            entries,
            ..ForgetList::default()
        };
        if list.rebuild(sized_for(list.entries.len())) {
            return list;
        }
        // An entry listed twice: taken once.
        let entries: Vec<Hash128> = list.entries.iter().collect();
        let mut list = ForgetList::new();
        list.insert_among(&entries, |_| true);
        list
    }

    /// Before the stored image is rewritten: entries read in place from it
    /// are copied out when the write may change their bytes. When some
    /// were removed (the entries after them move up), they are dropped and
    /// the others copied in their order, and the list is
    /// [`ForgetList::reordered`] until it is [`ForgetList::stored`]; when
    /// `moves` (the list goes to another region, and the old one is given
    /// back), each is copied where it is.
    pub fn settle(&mut self, moves: bool) {
        if !self.entries.in_place() {
            return;
        }
        if self.gone_count > 0 {
            let unique = self.rebuild(self.slots.len());
            debug_assert!(unique, "an entry in memory is listed once");
            self.reordered = true;
        } else if moves {
            self.entries.copy_out();
        }
    }

    /// Whether the entries' order is no longer the stored image's: a write
    /// [`ForgetList::settle`]d for failed, and keys its span took off were
    /// put back last rather than where they were. Written over the image
    /// in place, a cut write could then leave a key that was listed before
    /// and after past the header's count: the next write goes to a new
    /// region.
    pub fn reordered(&self) -> bool {
        self.reordered
    }

    /// Entries listed.
    pub fn len(&self) -> usize {
        self.entries.len() - self.gone_count
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries listed, in stored order.
    pub fn entries(&self) -> Vec<Hash128> {
        self.live().collect()
    }

    /// The entries listed, in stored order, as an iterator.
    fn live(&self) -> impl Iterator<Item = Hash128> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|&(i, _)| !self.is_gone(i))
            .map(|(_, h)| h)
    }

    /// Whether entry `i` was removed.
    #[inline]
    fn is_gone(&self, i: usize) -> bool {
        self.gone_count > 0 && self.gone[i / 64] >> (i % 64) & 1 == 1
    }

    /// The stored bytes of every entry listed, in order.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * ENTRY_BYTES);
        for h in self.live() {
            out.extend_from_slice(&entry_bytes(h));
        }
        out
    }

    /// The stored bytes of every entry listed, in order, handed to `each`
    /// in parts of about `part` bytes (a long list is written without a
    /// copy of it whole: [`ForgetList::encode`] in parts).
    ///
    /// # Errors
    /// What `each` fails with.
    pub fn encode_parts<E>(
        &self,
        part: usize,
        mut each: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut buf = Vec::with_capacity(part.min(self.len() * ENTRY_BYTES));
        for h in self.live() {
            buf.extend_from_slice(&entry_bytes(h));
            if buf.len() >= part {
                each(&buf)?;
                buf.clear();
            }
        }
        if !buf.is_empty() {
            each(&buf)?;
        }
        Ok(())
    }

    /// Whether `h` is listed.
    #[inline]
    pub fn contains(&self, h: Hash128) -> bool {
        !self.slots.is_empty() && self.maybe(h) && self.find(h).1.is_some_and(|i| !self.is_gone(i))
    }

    /// The word and bits of `h` in [`ForgetList::seen`] (the table is not
    /// empty).
    #[inline]
    fn seen_bits(&self, h: Hash128) -> (usize, u64) {
        // Eight bits per slot: `slots / 8` words of 64 bits, the word of
        // `lo`'s place among them.
        let w = scaled(h.lo, self.seen.len());
        let b = |shift: u32| 1u64 << ((h.hi >> shift) & 63);
        (w, b(0) | b(6) | b(12))
    }

    /// Starts loading what a lookup of `h` reads first (a hint, for loops
    /// that ask about many keys: most are answered by that one read).
    #[inline]
    pub fn prefetch(&self, h: Hash128) {
        if !self.seen.is_empty() {
            crate::prefetch::prefetch_item(&self.seen, self.seen_bits(h).0);
        }
    }

    /// Whether `h` may be listed: its bits are set.
    #[inline]
    fn maybe(&self, h: Hash128) -> bool {
        let (w, b) = self.seen_bits(h);
        self.seen[w] & b == b
    }

    /// Lists `h`; whether it was not listed yet (it goes last, or, removed
    /// earlier, back where it was).
    pub fn insert(&mut self, h: Hash128) -> bool {
        if self.slots.is_empty() {
            self.reserve(1);
        }
        let (mut slot, found) = self.find(h);
        if let Some(i) = found {
            if !self.is_gone(i) {
                return false;
            }
            if self.dropped[i / 64] >> (i % 64) & 1 == 0 {
                // Removed since the list was stored: back where it was, as
                // the stored image still has it.
                self.gone[i / 64] &= !(1 << (i % 64));
                self.gone_count -= 1;
                return true;
            }
            // Its old entry stays removed; the slot names the new one.
        }
        // Only a key pushed may grow the table: one put back where it was
        // moves no entry (the stored order stays that of the image).
        if too_full(self.entries.len() + 1, self.slots.len()) {
            self.reserve(1);
            slot = self.find(h).0;
        }
        let at = self.entries.len();
        self.entries.push(h);
        if self.gone.len() * 64 < self.entries.len() {
            self.gone.push(0);
            self.dropped.push(0);
        }
        self.slots[slot] = slot_of(at, h);
        let (w, b) = self.seen_bits(h);
        self.seen[w] |= b;
        true
    }

    /// Lists the keys of `hashes` for which `take(i)` holds; returns how
    /// many were not listed yet. The table is sized once for all of them,
    /// and each insert's slot and prefilter word are loaded ahead of it.
    pub fn insert_among(&mut self, hashes: &[Hash128], take: impl Fn(usize) -> bool) -> usize {
        let n = (0..hashes.len()).filter(|&i| take(i)).count();
        if n == 0 {
            return 0;
        }
        self.reserve(n);
        let mut added = 0;
        for (i, &h) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(i + AHEAD)
                && take(i + AHEAD)
            {
                crate::prefetch::prefetch_item(&self.slots, self.home(ahead));
                self.prefetch(ahead);
            }
            if take(i) && self.insert(h) {
                added += 1;
            }
        }
        added
    }

    /// Says that the list was stored ([`ForgetList::encode`]): the entries
    /// removed so far are not in the stored image any more.
    pub fn stored(&mut self) {
        self.reordered = false;
        if self.gone_count > 0 {
            self.dropped.clone_from(&self.gone);
        }
    }

    /// Takes `h` off the list (its entry marked removed); whether it was
    /// listed.
    pub fn remove(&mut self, h: Hash128) -> bool {
        if self.slots.is_empty() || !self.maybe(h) {
            return false;
        }
        match self.find(h).1 {
            Some(i) if !self.is_gone(i) => {
                self.mark_gone(i);
                true
            }
            _ => false,
        }
    }

    /// [`ForgetList::remove`] of `h`, which a lookup found at `spot` (or
    /// [`Spot::UNKNOWN`]): when the entries have not moved since and it is
    /// still listed there, its entry is marked removed without a lookup.
    pub fn remove_at(&mut self, h: Hash128, spot: Spot) -> bool {
        let i = spot.at as usize;
        if spot.moves != self.moves || i >= self.entries.len() || self.is_gone(i) {
            // Moved, or removed since (and perhaps listed again elsewhere).
            return self.remove(h);
        }
        debug_assert_eq!(self.entries.get(i), h, "a spot names its key's entry");
        self.mark_gone(i);
        true
    }

    /// Marks entry `i`, listed, removed.
    fn mark_gone(&mut self, i: usize) {
        self.gone[i / 64] |= 1 << (i % 64);
        self.gone_count += 1;
    }

    /// Turns the verdicts of listed keys from present to absent: the rule
    /// "a layer holds it and it is not forgotten". Returns how many changed.
    pub fn unpresent(&self, hashes: &[Hash128], present: &mut [bool]) -> usize {
        self.unpresent_each(hashes, present, |_, _| {})
    }

    /// [`ForgetList::unpresent`], calling `turned` with each key it turned
    /// and where it is listed.
    pub fn unpresent_each(
        &self,
        hashes: &[Hash128],
        present: &mut [bool],
        mut turned: impl FnMut(Hash128, Spot),
    ) -> usize {
        let len = hashes.len().min(present.len());
        let found = self.listed_among(&hashes[..len], |i| present[i]);
        for &(i, at) in &found {
            present[i] = false;
            turned(
                hashes[i],
                Spot {
                    at: at as u32,
                    moves: self.moves,
                },
            );
        }
        found.len()
    }

    /// Takes off the list the keys of `hashes` for which `asked(i)` holds
    /// (a key listed twice in `hashes` is taken off once); returns their
    /// positions in `hashes`, in order.
    pub fn remove_among(
        &mut self,
        hashes: &[Hash128],
        asked: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let found = self.listed_among(hashes, asked);
        let mut taken = Vec::with_capacity(found.len());
        for (i, at) in found {
            if !self.is_gone(at) {
                self.mark_gone(at);
                taken.push(i);
            }
        }
        taken
    }

    /// The keys of `hashes` that are listed, among those `asked(i)` says:
    /// their positions in `hashes` and in the entries, in order.
    ///
    /// In two passes, neither waiting on memory: the prefilter's word of
    /// each key asked (loaded [`AHEAD`] keys on), then, for the few that
    /// pass it (listed keys, and about 1 in 200 others), the home slot and
    /// the entry it names, loaded ahead in turn.
    fn listed_among(
        &self,
        hashes: &[Hash128],
        asked: impl Fn(usize) -> bool,
    ) -> Vec<(usize, usize)> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut maybe = Vec::new();
        for (i, &h) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(i + AHEAD)
                && asked(i + AHEAD)
            {
                self.prefetch(ahead);
            }
            if asked(i) && self.maybe(h) {
                maybe.push(i);
            }
        }
        let mut found = Vec::new();
        for (j, &i) in maybe.iter().enumerate() {
            if let Some(&k) = maybe.get(j + AHEAD) {
                crate::prefetch::prefetch_item(&self.slots, self.home(hashes[k]));
            }
            if let Some(&k) = maybe.get(j + AHEAD / 2)
                && let Some(p) = named(self.slots[self.home(hashes[k])])
            {
                self.entries.prefetch(p);
            }
            if let (_, Some(at)) = self.find(hashes[i])
                && !self.is_gone(at)
            {
                found.push((i, at));
            }
        }
        found
    }

    /// The list of the union of filters whose lists are `lists`: an entry
    /// of any list stays when no filter holds its key as present (each
    /// forgot it too, or never held it); a key one forgot and another holds
    /// is present in the union, as in that filter. `present(i, keys, out)`
    /// asks filter `i` which of `keys` are present (its list applied).
    ///
    /// # Errors
    /// What `present` fails with.
    pub fn merged<E>(
        lists: &[ForgetList],
        mut present: impl FnMut(usize, &[Hash128], &mut Vec<bool>) -> Result<(), E>,
    ) -> Result<ForgetList, E> {
        let mut candidates = ForgetList::new();
        for l in lists {
            for h in l.live() {
                candidates.insert(h);
            }
        }
        if candidates.is_empty() {
            return Ok(candidates);
        }
        let keys = candidates.entries();
        let mut kept = vec![true; keys.len()];
        let mut out = Vec::new();
        for i in 0..lists.len() {
            present(i, &keys, &mut out)?;
            for (k, p) in kept.iter_mut().zip(&out) {
                *k &= !p;
            }
        }
        let mut merged = ForgetList::new();
        for (&h, k) in keys.iter().zip(kept) {
            if k {
                merged.insert(h);
            }
        }
        Ok(merged)
    }

    /// Makes room for `more` entries, keeping the table at most half full
    /// (doubling it, or sizing it for them when more).
    fn reserve(&mut self, more: usize) {
        let n = self.entries.len() + more;
        if !too_full(n, self.slots.len()) {
            return;
        }
        let unique = self.rebuild(sized_for(n).max(self.slots.len() * 2));
        debug_assert!(unique, "an entry in memory is listed once");
    }

    /// Builds the table again with `len` slots (removed entries go for
    /// good, the others keep their order), reading the entries in order
    /// and loading each one's slot and prefilter word ahead. (Filling the
    /// table in order of home slots instead, with the entries met at
    /// random, took a third longer: 833k entries read in place, 39 ms
    /// against 27 ms for `seen query` of one key.) `false` when an entry is
    /// listed twice (the table is then not usable).
    fn rebuild(&mut self, len: usize) -> bool {
        self.moves = self.moves.wrapping_add(1);
        if self.gone_count > 0 {
            self.entries = Entries::of_vec(self.live().collect());
            self.gone_count = 0;
        }
        let n = self.entries.len();
        self.gone = vec![0; n.div_ceil(64) + 1];
        self.dropped.clone_from(&self.gone);
        let len = len.max(16);
        self.slots = vec![0; len];
        crate::memory::huge_pages_for(&self.slots);
        // Eight bits per slot.
        self.seen = vec![0; len.div_ceil(8)];
        // Keys whose slot and word are loaded ahead of the one placed.
        const D: usize = 2 * AHEAD;
        for i in 0..n {
            if i + D < n {
                let ahead = self.entries.get(i + D);
                crate::prefetch::prefetch_item(&self.slots, self.home(ahead));
                crate::prefetch::prefetch_item(&self.seen, self.seen_bits(ahead).0);
            }
            let h = self.entries.get(i);
            // `find`'s probe, spelled out: as a call it made the load of
            // 833k entries 1–2 ms slower (medians of 40 runs).
            let mut s = self.home(h);
            loop {
                match self.slots[s] {
                    0 => break,
                    v if same(v, h) && named(v).is_some_and(|p| self.entries.get(p) == h) => {
                        return false;
                    }
                    _ => s = self.next(s),
                }
            }
            self.slots[s] = slot_of(i, h);
            let (w, b) = self.seen_bits(h);
            self.seen[w] |= b;
        }
        true
    }

    /// The slot of `h`'s probe sequence start: `lo`'s place among the
    /// slots (its top bits, uniform).
    #[inline]
    fn home(&self, h: Hash128) -> usize {
        scaled(h.lo, self.slots.len())
    }

    /// The slot after `s`, the first after the last.
    #[inline]
    fn next(&self, s: usize) -> usize {
        if s + 1 == self.slots.len() { 0 } else { s + 1 }
    }

    /// Where `h` is (its slot and its position in the entries), or the
    /// empty slot where it would go.
    #[inline]
    fn find(&self, h: Hash128) -> (usize, Option<usize>) {
        let mut s = self.home(h);
        loop {
            match self.slots[s] {
                0 => return (s, None),
                v if same(v, h) && named(v).is_some_and(|p| self.entries.get(p) == h) => {
                    return (s, named(v));
                }
                _ => s = self.next(s),
            }
        }
    }
}

/// `x`'s place among `n` (`x · n / 2^64`: its top bits, scaled).
#[inline]
fn scaled(x: u64, n: usize) -> usize {
    ((u128::from(x) * n as u128) >> 64) as usize
}

/// Slots a table of `n` entries is built with: two fifths full. (Three
/// quarters took 9 bytes a key less but made the 1.3M lookups of a
/// benchmark's run 14 ms slower: more probes leave the home slot's line.)
fn sized_for(n: usize) -> usize {
    (n * 5 / 2).max(16)
}

/// Whether `n` entries would fill more than half of `len` slots.
fn too_full(n: usize, len: usize) -> bool {
    n.saturating_mul(2) > len
}

/// A slot naming the entry at position `at`, of key `h`: `at + 1` in the
/// low half, a tag of `h` (bits of `lo` that its home slot does not use)
/// in the high half, so that a probe passes other keys' slots without
/// reading their entries.
#[inline]
fn slot_of(at: usize, h: Hash128) -> u64 {
    let at = u32::try_from(at + 1).expect("fewer than 2^32 entries");
    (h.lo << 32) | u64::from(at)
}

/// The position of the entry slot `v` names (`None`: an empty slot).
#[inline]
fn named(v: u64) -> Option<usize> {
    (v as u32 as usize).checked_sub(1)
}

/// Whether slot `v` may name key `h`'s entry: its tag is `h`'s.
#[inline]
fn same(v: u64, h: Hash128) -> bool {
    v >> 32 == h.lo & 0xFFFF_FFFF
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn h(lo: u64, hi: u64) -> Hash128 {
        Hash128 { lo, hi }
    }

    #[test]
    fn an_empty_list_holds_nothing_and_changes_no_verdict() {
        let l = ForgetList::new();
        assert!(!l.contains(h(1, 2)));
        let mut v = vec![true, false];
        assert_eq!(l.unpresent(&[h(1, 2), h(3, 4)], &mut v), 0);
        assert_eq!(v, [true, false]);
        assert!(l.encode().is_empty());
    }

    #[test]
    fn only_the_listed_key_becomes_absent() {
        let mut l = ForgetList::new();
        assert!(l.insert(h(5, 6)));
        assert!(!l.insert(h(5, 6)));
        // Same low half, another key: not forgotten.
        let mut v = vec![true, true, false];
        assert_eq!(l.unpresent(&[h(5, 6), h(5, 7), h(5, 6)], &mut v), 1);
        assert_eq!(v, [false, true, false]);
    }

    /// A key taken off a full table and put back (a span unstaged) goes
    /// back where it was, however full the table: the stored image, which
    /// a cut write leaves under the old count, keeps its order.
    #[test]
    fn a_key_put_back_keeps_the_stored_order() {
        let keys: Vec<Hash128> = (0..1024u64)
            .map(|i| h(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i))
            .collect();
        let bytes: Vec<u8> = keys.iter().flat_map(|&k| entry_bytes(k)).collect();
        let mut l = ForgetList::decode(&bytes, 1024).unwrap();
        assert!(l.remove(keys[5]));
        assert!(l.insert(keys[5]));
        assert_eq!(l.encode(), bytes);
    }

    #[test]
    fn a_count_past_the_bytes_is_refused() {
        let e = ForgetList::decode(&[0; 32], 3).unwrap_err();
        assert_eq!(e, ForgetError::CountPastEnd { count: 3, room: 2 });
        assert!(e.to_string().contains("3 entries"));
    }

    proptest! {
        /// Against a `HashSet`: inserts, removals and lookups agree. Spans
        /// that only add or only remove (as `forget` and writers do) are
        /// stored in place over the image before, cut at any entry: under
        /// the old count, the cut image holds every key the list held
        /// before and after, and none it did not hold before; whole, it
        /// decodes to the list.
        #[test]
        fn the_list_is_a_set_in_memory_and_stored(
            spans in proptest::collection::vec(
                (any::<bool>(), proptest::collection::vec(0u64..40, 1..30), 0usize..50),
                1..30,
            ),
        ) {
            let mut l = ForgetList::new();
            let mut model = HashSet::new();
            let mut img = Vec::new();
            let mut count = 0u64;
            for (adds, keys, cut) in spans {
                let before = model.clone();
                for k in keys {
                    // Few low halves, so that probe sequences collide often.
                    let key = h((k % 7) * (u64::MAX / 7), k);
                    if adds {
                        prop_assert_eq!(l.insert(key), model.insert(key));
                    } else {
                        prop_assert_eq!(l.remove(key), model.remove(&key));
                    }
                    prop_assert_eq!(l.len(), model.len());
                }
                let new = l.encode();
                if img.len() < new.len() {
                    img.resize(new.len(), 0);
                }
                let at = (cut * ENTRY_BYTES).min(new.len());
                let mut torn = img.clone();
                torn[..at].copy_from_slice(&new[..at]);
                let d = ForgetList::decode(&torn, count).unwrap();
                let got: HashSet<_> = d.entries().into_iter().collect();
                prop_assert!(got.is_subset(&before), "a cut image holds a key never listed");
                prop_assert!(
                    before.intersection(&model).all(|k| got.contains(k)),
                    "a cut image lost a key listed before and after"
                );
                img[..new.len()].copy_from_slice(&new);
                l.stored();
                count = model.len() as u64;
                let d = ForgetList::decode(&img, count).unwrap();
                let got: HashSet<_> = d.entries().into_iter().collect();
                prop_assert_eq!(&got, &model);
                prop_assert_eq!(d.encode(), l.encode());
            }
            let d = ForgetList::decode(&img, count).unwrap();
            for k in 0..40 {
                let key = h((k % 7) * (u64::MAX / 7), k);
                prop_assert_eq!(l.contains(key), model.contains(&key));
                prop_assert_eq!(d.contains(key), model.contains(&key));
            }
        }

        /// Removals at spots a lookup gave, kept while the list changes
        /// (inserts that rebuild the table, removals, keys listed again
        /// after being stored without them): each agrees with a `HashSet`,
        /// a stale spot falling back to a lookup.
        #[test]
        fn removals_at_kept_spots_agree_with_a_set(
            ops in proptest::collection::vec((0u8..5, 0u64..40), 1..200),
        ) {
            let key = |k: u64| h((k % 5) * (u64::MAX / 5) + (k % 3), k);
            let mut l = ForgetList::new();
            let mut model = HashSet::new();
            let mut spots = std::collections::HashMap::new();
            for (op, k) in ops {
                let kk = key(k);
                match op {
                    0 => prop_assert_eq!(l.insert(kk), model.insert(kk)),
                    1 => prop_assert_eq!(l.remove(kk), model.remove(&kk)),
                    2 => {
                        let mut present = [true];
                        let n = l.unpresent_each(&[kk], &mut present, |got, spot| {
                            assert_eq!(got, kk);
                            spots.insert(k, spot);
                        });
                        prop_assert_eq!(n == 1, model.contains(&kk));
                        prop_assert_eq!(present[0], !model.contains(&kk));
                    }
                    3 => {
                        let spot = spots.get(&k).copied().unwrap_or(Spot::UNKNOWN);
                        prop_assert_eq!(l.remove_at(kk, spot), model.remove(&kk));
                    }
                    _ => l.stored(),
                }
                prop_assert_eq!(l.len(), model.len());
            }
            for k in 0..40 {
                prop_assert_eq!(l.contains(key(k)), model.contains(&key(k)));
            }
            let taken = l.clone().remove_among(
                &(0..40).map(key).collect::<Vec<_>>(),
                |i| i % 2 == 0,
            );
            let want: Vec<usize> = (0..40).filter(|&i| i % 2 == 0 && model.contains(&key(i as u64))).collect();
            prop_assert_eq!(taken, want);
            // Keys listed in a batch, a key given twice among them.
            let mut batch: Vec<Hash128> = (0..40).map(key).collect();
            batch.push(key(3));
            let mut m = l.clone();
            let added = m.insert_among(&batch, |i| i % 3 == 0 || i == 40);
            let want = (0..40u64).filter(|&k| k % 3 == 0 && !model.contains(&key(k))).count();
            prop_assert_eq!(added, want);
            for k in 0..40u64 {
                prop_assert_eq!(m.contains(key(k)), model.contains(&key(k)) || k % 3 == 0);
            }
            // Written in parts, the same bytes.
            let mut joined = Vec::new();
            m.encode_parts(48, |b| {
                joined.extend_from_slice(b);
                Ok::<(), ()>(())
            })
            .unwrap();
            prop_assert_eq!(joined, m.encode());
        }

        /// The union's rule, key by key: present in the union when either
        /// filter holds it and has not forgotten it.
        #[test]
        fn a_merged_list_answers_as_the_union_does(
            a_held in proptest::collection::vec(any::<bool>(), 30),
            b_held in proptest::collection::vec(any::<bool>(), 30),
            a_forgot in proptest::collection::vec(any::<bool>(), 30),
            b_forgot in proptest::collection::vec(any::<bool>(), 30),
        ) {
            let key = |i: usize| h((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15), i as u64);
            let (mut a, mut b) = (ForgetList::new(), ForgetList::new());
            for i in 0..30 {
                // A filter lists only keys its layers hold (or false
                // positives: held, as far as its bits say).
                if a_forgot[i] && a_held[i] { a.insert(key(i)); }
                if b_forgot[i] && b_held[i] { b.insert(key(i)); }
            }
            let held = [&a_held, &b_held];
            let lists = [a.clone(), b.clone()];
            let m = ForgetList::merged(&lists, |i, keys, out| {
                out.clear();
                out.extend(keys.iter().map(|k| held[i][k.hi as usize] && !lists[i].contains(*k)));
                Ok::<(), ()>(())
            })
            .unwrap();
            for i in 0..30 {
                let a_present = a_held[i] && !a.contains(key(i));
                let b_present = b_held[i] && !b.contains(key(i));
                let union_present = (a_held[i] || b_held[i]) && !m.contains(key(i));
                prop_assert_eq!(union_present, a_present || b_present, "key {}", i);
            }
        }
    }

    /// Built from stored entries, the table is two fifths full, and
    /// the prefilter sends few keys that are not listed on to it: fewer
    /// than 1 in 150 (so a run's keys present in the layers cost one
    /// bitmap read each).
    #[test]
    fn a_stored_list_is_two_fifths_full_and_its_prefilter_passes_few_others() {
        let key = |i: u64| crate::hash::hash(&i.to_le_bytes(), 7);
        let n = 100_000;
        let l = ForgetList::of_stored((0..n).map(key).collect());
        let load = n as f64 / l.slots.len() as f64;
        assert!((0.39..=0.41).contains(&load), "load {load}");
        let bytes = (l.slots.len() + l.seen.len()) * 8;
        let per_key = bytes as f64 / n as f64;
        assert!(
            (per_key / MEMORY_BYTES_PER_KEY - 1.0).abs() < 0.02,
            "{per_key} bytes a key, `plan` says {MEMORY_BYTES_PER_KEY}"
        );
        let others = 1_000_000;
        let passed = (n..n + others).filter(|&i| l.maybe(key(i))).count();
        assert!(
            passed * 150 < others as usize,
            "{passed} of {others} passed"
        );
        assert!((0..n).all(|i| l.contains(key(i))));
    }
}
