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
//! (a filter file's header). The stored order is the in-memory one: an
//! entry is added at the end, and a removed one gets the last entry in its
//! place ([`ForgetList::remove`] says where), so an image rewritten slot by
//! slot and cut short holds, under the old count, only entries the list
//! held before. A decoder tolerates an entry listed twice (such a cut).
//!
//! In memory the entries are indexed by an open-addressing table over their
//! low halves (uniform hash bits), so a lookup costs a probe or two, and the
//! callers ask only about keys the layers hold: an empty list costs nothing.

use crate::hash::Hash128;

/// Bytes of one stored entry.
pub const ENTRY_BYTES: usize = 16;

/// Keys a batch lookup prefetches ahead of the one it tests.
pub const AHEAD: usize = 32;

/// The stored bytes of the entry for `h`.
pub fn entry_bytes(h: Hash128) -> [u8; ENTRY_BYTES] {
    let mut b = [0u8; ENTRY_BYTES];
    b[..8].copy_from_slice(&h.lo.to_le_bytes());
    b[8..].copy_from_slice(&h.hi.to_le_bytes());
    b
}

/// The hash a stored entry holds.
fn entry_at(b: &[u8]) -> Hash128 {
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

/// Where a removal left the stored entries: slot `at` now holds `moved`
/// (the entry that was last), or, when `moved` is `None`, the removed entry
/// was the last and only the count changes. Either way the count is then
/// one less.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Removal {
    /// The slot the removed entry was in.
    pub at: usize,
    /// The former last entry, now in slot `at`.
    pub moved: Option<Hash128>,
}

/// The forgotten keys' hashes: their stored order and an index over them.
#[derive(Clone, Debug, Default)]
pub struct ForgetList {
    /// The entries, in stored order.
    entries: Vec<Hash128>,
    /// Open addressing over `lo`: 0 is an empty slot, else the entry's
    /// position + 1. Its length is a power of two, at least twice the
    /// entries (empty when there are none).
    slots: Vec<u32>,
    /// A bitmap of 8 bits per slot (16 or more per entry) in 64-bit words:
    /// each key listed since the table was built set three bits of one word
    /// (chosen by the bits of `hi`). A key with a bit of its three clear is
    /// not listed, known from one access to a bitmap a quarter of the slots'
    /// size; about 1 in 150 keys that are not listed goes on to the slots.
    /// Bits of removed keys stay set until the table is rebuilt.
    seen: Vec<u64>,
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
        let entries: Vec<Hash128> = bytes[..count as usize * ENTRY_BYTES]
            .chunks_exact(ENTRY_BYTES)
            .map(entry_at)
            .collect();
        let entries = match ForgetList::indexed(entries) {
            Ok(list) => return Ok(list),
            // An entry listed twice: taken once, below.
            Err(entries) => entries,
        };
        let mut list = ForgetList::new();
        list.reserve(count as usize);
        // The table is sized once: each insert's two reads are started
        // ahead of it.
        for (i, &h) in entries.iter().enumerate() {
            if let Some(&ahead) = entries.get(i + AHEAD) {
                crate::prefetch::prefetch_item(&list.slots, list.home(ahead));
                list.prefetch(ahead);
            }
            list.insert(h);
        }
        Ok(list)
    }

    /// The list of `entries` (in stored order), its table built in the
    /// order of the entries' home slots, so that the writes to it run
    /// through the table once instead of landing at random (a counting
    /// sort on the slots' top bits). `Err` gives the entries back when one
    /// is listed twice.
    fn indexed(entries: Vec<Hash128>) -> Result<ForgetList, Vec<Hash128>> {
        let mut list = ForgetList::new();
        list.reserve(entries.len());
        let bits = list.slots.len().trailing_zeros().min(12);
        let bucket = |h: &Hash128| (h.lo >> (64 - bits)) as usize;
        let mut starts = vec![0u32; (1 << bits) + 1];
        for h in &entries {
            starts[bucket(h) + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        let mut order = vec![0u32; entries.len()];
        for (i, h) in entries.iter().enumerate() {
            let at = &mut starts[bucket(h)];
            order[*at as usize] = u32::try_from(i).expect("fewer than 2^32 entries");
            *at += 1;
        }
        list.entries = entries;
        let mask = list.slots.len() - 1;
        for &i in &order {
            let h = list.entries[i as usize];
            let mut s = list.home(h);
            loop {
                match list.slots[s] {
                    0 => break,
                    p if list.entries[p as usize - 1] == h => {
                        return Err(std::mem::take(&mut list.entries));
                    }
                    _ => s = (s + 1) & mask,
                }
            }
            list.slots[s] = i + 1;
        }
        for i in 0..list.entries.len() {
            let (w, b) = list.seen_bits(list.entries[i]);
            list.seen[w] |= b;
        }
        Ok(list)
    }

    /// Entries listed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in stored order.
    pub fn entries(&self) -> &[Hash128] {
        &self.entries
    }

    /// The stored bytes of every entry, in order.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.entries.len() * ENTRY_BYTES);
        for &h in &self.entries {
            out.extend_from_slice(&entry_bytes(h));
        }
        out
    }

    /// Whether `h` is listed.
    #[inline]
    pub fn contains(&self, h: Hash128) -> bool {
        !self.slots.is_empty() && self.maybe(h) && self.find(h).1.is_some()
    }

    /// The word and bits of `h` in [`ForgetList::seen`] (the table is not
    /// empty).
    #[inline]
    fn seen_bits(&self, h: Hash128) -> (usize, u64) {
        // Eight bits per slot: `slots / 8` words of 64 bits.
        let log2 = self.slots.len().trailing_zeros() - 3;
        let w = (h.hi >> (64 - log2)) as usize;
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

    /// Lists `h`; its slot when it was not listed yet (it goes last), `None`
    /// when it was.
    pub fn insert(&mut self, h: Hash128) -> Option<usize> {
        self.reserve(1);
        let (slot, found) = self.find(h);
        if found.is_some() {
            return None;
        }
        let at = self.entries.len();
        self.entries.push(h);
        self.slots[slot] = u32::try_from(at + 1).expect("fewer than 2^32 entries");
        let (w, b) = self.seen_bits(h);
        self.seen[w] |= b;
        Some(at)
    }

    /// Takes `h` off the list: the last entry moves into its slot. `None`
    /// when it was not listed.
    pub fn remove(&mut self, h: Hash128) -> Option<Removal> {
        if self.slots.is_empty() || !self.maybe(h) {
            return None;
        }
        let (slot, found) = self.find(h);
        let at = found?;
        let last = self.entries.len() - 1;
        let moved = (at != last).then(|| self.entries[last]);
        if let Some(m) = moved {
            // The last entry takes the removed one's place: its slot says so.
            let (s, pos) = self.find(m);
            debug_assert_eq!(pos, Some(last));
            self.slots[s] = u32::try_from(at + 1).expect("fewer than 2^32 entries");
        }
        self.entries.swap_remove(at);
        self.delete_slot(slot);
        Some(Removal { at, moved })
    }

    /// Turns the verdicts of listed keys from present to absent: the rule
    /// "a layer holds it and it is not forgotten". Returns how many changed.
    pub fn unpresent(&self, hashes: &[Hash128], present: &mut [bool]) -> usize {
        self.unpresent_each(hashes, present, |_| {})
    }

    /// [`ForgetList::unpresent`], calling `turned` with each key it turned.
    pub fn unpresent_each(
        &self,
        hashes: &[Hash128],
        present: &mut [bool],
        mut turned: impl FnMut(Hash128),
    ) -> usize {
        if self.is_empty() {
            return 0;
        }
        let mut n = 0;
        for (i, (p, &h)) in present.iter_mut().zip(hashes).enumerate() {
            if let Some(&ahead) = hashes.get(i + AHEAD) {
                self.prefetch(ahead);
            }
            if *p && self.contains(h) {
                *p = false;
                n += 1;
                turned(h);
            }
        }
        n
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
            for &h in l.entries() {
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
            present(i, keys, &mut out)?;
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

    /// Makes room for `more` entries, keeping the table at most half full.
    fn reserve(&mut self, more: usize) {
        let want = (self.entries.len() + more).max(1) * 2;
        if self.slots.len() >= want {
            return;
        }
        let len = want.next_power_of_two().max(16);
        self.slots = vec![0; len];
        // Eight bits per slot.
        self.seen = vec![0; len / 8];
        for (i, &h) in self.entries.iter().enumerate() {
            let mut s = self.home(h);
            while self.slots[s] != 0 {
                s = (s + 1) & (len - 1);
            }
            self.slots[s] = u32::try_from(i + 1).expect("fewer than 2^32 entries");
            let (w, b) = self.seen_bits(h);
            self.seen[w] |= b;
        }
    }

    /// The slot of `h`'s probe sequence start.
    #[inline]
    fn home(&self, h: Hash128) -> usize {
        // The top bits of `lo` (uniform): the table's length is a power of
        // two.
        let bits = self.slots.len().trailing_zeros();
        (h.lo >> (64 - bits)) as usize
    }

    /// Where `h` is (its slot and its position in the entries), or the
    /// empty slot where it would go.
    #[inline]
    fn find(&self, h: Hash128) -> (usize, Option<usize>) {
        let mask = self.slots.len() - 1;
        let mut s = self.home(h);
        loop {
            match self.slots[s] {
                0 => return (s, None),
                p if self.entries[p as usize - 1] == h => return (s, Some(p as usize - 1)),
                _ => s = (s + 1) & mask,
            }
        }
    }

    /// Empties slot `s`, moving later entries of its cluster back so that
    /// every entry stays reachable from its home (backward-shift deletion).
    fn delete_slot(&mut self, mut s: usize) {
        let mask = self.slots.len() - 1;
        let mut j = s;
        loop {
            j = (j + 1) & mask;
            let p = self.slots[j];
            if p == 0 {
                break;
            }
            let home = self.home(self.entries[p as usize - 1]);
            // The entry at `j` may move to `s` when its home is not in the
            // cyclic range (s, j].
            let stays = if s <= j {
                s < home && home <= j
            } else {
                s < home || home <= j
            };
            if !stays {
                self.slots[s] = p;
                s = j;
            }
        }
        self.slots[s] = 0;
    }
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
        assert_eq!(l.insert(h(5, 6)), Some(0));
        assert_eq!(l.insert(h(5, 6)), None);
        // Same low half, another key: not forgotten.
        let mut v = vec![true, true, false];
        assert_eq!(l.unpresent(&[h(5, 6), h(5, 7), h(5, 6)], &mut v), 1);
        assert_eq!(v, [false, true, false]);
    }

    #[test]
    fn a_count_past_the_bytes_is_refused() {
        let e = ForgetList::decode(&[0; 32], 3).unwrap_err();
        assert_eq!(e, ForgetError::CountPastEnd { count: 3, room: 2 });
        assert!(e.to_string().contains("3 entries"));
    }

    /// Writes a removal's moved entry into a stored image, as a writer
    /// does before it writes the count.
    fn store_moved(img: &mut [u8], r: Removal) {
        if let Some(m) = r.moved {
            img[r.at * ENTRY_BYTES..][..ENTRY_BYTES].copy_from_slice(&entry_bytes(m));
        }
    }

    proptest! {
        /// Against a `HashSet`: inserts, removals and lookups agree, and the
        /// stored image, changed write by write as a writer changes it,
        /// decodes to the same set; a removal cut before its count is
        /// written decodes to the set without the removed key (the moved
        /// entry listed twice, taken once).
        #[test]
        fn the_list_is_a_set_in_memory_and_stored(
            ops in proptest::collection::vec((0u8..3, 0u64..40), 1..400),
        ) {
            let mut l = ForgetList::new();
            let mut model = HashSet::new();
            let mut img = vec![0u8; 64 * ENTRY_BYTES];
            let mut count = 0u64;
            for (op, k) in ops {
                // Few low halves, so that probe sequences collide often.
                let key = h((k % 7) * (u64::MAX / 7), k);
                match op {
                    0 => {
                        let added = l.insert(key);
                        prop_assert_eq!(added.is_some(), model.insert(key));
                        if let Some(at) = added {
                            img[at * ENTRY_BYTES..][..ENTRY_BYTES]
                                .copy_from_slice(&entry_bytes(key));
                            count += 1;
                        }
                    }
                    1 => {
                        let r = l.remove(key);
                        prop_assert_eq!(r.is_some(), model.remove(&key));
                        if let Some(r) = r {
                            store_moved(&mut img, r);
                            // Cut here (the count not yet written): the
                            // list after the removal, or, when the last
                            // entry went, the list before it.
                            let d = ForgetList::decode(&img, count).unwrap();
                            let got: HashSet<_> = d.entries().iter().copied().collect();
                            let mut want = model.clone();
                            if r.moved.is_none() {
                                want.insert(key);
                            }
                            prop_assert_eq!(&got, &want);
                            count -= 1;
                        }
                    }
                    _ => prop_assert_eq!(l.contains(key), model.contains(&key)),
                }
                prop_assert_eq!(l.len(), model.len());
                prop_assert_eq!(count as usize, model.len());
            }
            let d = ForgetList::decode(&img, count).unwrap();
            let got: HashSet<_> = d.entries().iter().copied().collect();
            prop_assert_eq!(&got, &model);
            prop_assert_eq!(d.encode(), l.encode());
            for k in 0..40 {
                let key = h((k % 7) * (u64::MAX / 7), k);
                prop_assert_eq!(l.contains(key), model.contains(&key));
                prop_assert_eq!(d.contains(key), model.contains(&key));
            }
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
}

/// A set of keys hashed by their own bits (a key's hash is uniform already):
/// a few nanoseconds a lookup where the standard hasher takes tens.
pub type KeySet = std::collections::HashSet<Hash128, BuildKeyHasher>;

/// The hasher of [`KeySet`].
#[derive(Clone, Copy, Debug, Default)]
pub struct BuildKeyHasher;

/// Mixes the words a [`Hash128`] feeds it.
#[derive(Default)]
pub struct KeyHasher(u64);

impl std::hash::BuildHasher for BuildKeyHasher {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = self.0.rotate_left(29) ^ x;
    }
}
