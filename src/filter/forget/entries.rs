//! A forget list's entries in stored order: those of a stored image read
//! in place (a file's region mapped, so a long list costs no copy into
//! fresh memory, which the kernel must zero first), then those listed
//! since, in memory.

use super::{ENTRY_BYTES, entry_at};
use crate::hash::Hash128;
use memmap2::Mmap;
use std::sync::Arc;

/// The entries, in stored order.
#[derive(Clone, Debug, Default)]
pub(super) struct Entries {
    /// A stored image's bytes, read in place: its first `stored` entries
    /// are the list's first. The caller keeps the bytes unchanged while
    /// the list reads them ([`super::ForgetList::settle`]).
    image: Option<Arc<Mmap>>,
    /// Entries read from `image`.
    stored: usize,
    /// Entries after them, in memory.
    more: Vec<Hash128>,
}

impl Entries {
    /// Entries held in memory.
    pub(super) fn of_vec(more: Vec<Hash128>) -> Entries {
        Entries {
            image: None,
            stored: 0,
            more,
        }
    }

    /// The first `count` entries of `image`, read in place.
    pub(super) fn of_image(image: Arc<Mmap>, count: usize) -> Entries {
        assert!(
            count * ENTRY_BYTES <= image.len(),
            "an image holds its entries"
        );
        Entries {
            image: Some(image),
            stored: count,
            more: Vec::new(),
        }
    }

    /// Whether some entries are read in place.
    pub(super) fn in_place(&self) -> bool {
        self.stored > 0
    }

    /// Entries.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.stored + self.more.len()
    }

    /// The image's bytes (empty without one).
    #[inline]
    fn image(&self) -> &[u8] {
        self.image.as_deref().map_or(&[], |m| &m[..])
    }

    /// Entry `i`.
    #[inline]
    pub(super) fn get(&self, i: usize) -> Hash128 {
        if i < self.stored {
            entry_at(&self.image()[i * ENTRY_BYTES..(i + 1) * ENTRY_BYTES])
        } else {
            self.more[i - self.stored]
        }
    }

    /// Starts loading entry `i` (a hint).
    #[inline]
    pub(super) fn prefetch(&self, i: usize) {
        if i < self.stored {
            crate::prefetch::prefetch(self.image(), i * ENTRY_BYTES);
        } else {
            crate::prefetch::prefetch_item(&self.more, i - self.stored);
        }
    }

    /// Copies the entries out of the image into memory, each keeping its
    /// position: the image is no longer read.
    pub(super) fn copy_out(&mut self) {
        *self = Entries::of_vec(self.iter().collect());
    }

    /// Lists `h` last.
    pub(super) fn push(&mut self, h: Hash128) {
        self.more.push(h);
    }

    /// The entries, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = Hash128> + '_ {
        let image = self.image()[..self.stored * ENTRY_BYTES]
            .chunks_exact(ENTRY_BYTES)
            .map(entry_at);
        image.chain(self.more.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::forget::entry_bytes;

    fn h(i: u64) -> Hash128 {
        Hash128 {
            lo: i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            hi: !i,
        }
    }

    #[test]
    fn an_image_read_in_place_then_keys_in_memory_read_in_one_order() {
        let mut bytes = memmap2::MmapMut::map_anon(4096).expect("anonymous memory");
        for i in 0..3 {
            bytes[i * ENTRY_BYTES..(i + 1) * ENTRY_BYTES]
                .copy_from_slice(&entry_bytes(h(i as u64)));
        }
        let image = Arc::new(bytes.make_read_only().expect("read-only"));
        // Only the first two are the list's: the rest of the image is not.
        let mut e = Entries::of_image(image, 2);
        assert!(e.in_place());
        e.push(h(7));
        assert_eq!(e.len(), 3);
        assert_eq!([e.get(0), e.get(1), e.get(2)], [h(0), h(1), h(7)]);
        assert_eq!(e.iter().collect::<Vec<_>>(), [h(0), h(1), h(7)]);
        // Copied out: the same entries, none read in place.
        let mut c = e.clone();
        c.copy_out();
        assert!(!c.in_place());
        assert_eq!(c.iter().collect::<Vec<_>>(), [h(0), h(1), h(7)]);
        let v = Entries::of_vec(vec![h(4)]);
        assert!(!v.in_place());
        assert_eq!(v.iter().collect::<Vec<_>>(), [h(4)]);
    }
}
