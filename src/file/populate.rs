//! [`Populator`]: a helper thread that faults in a new layer's anonymous
//! memory (`MADV_POPULATE_WRITE`) while the main thread is already writing to
//! it, so that the main thread meets fewer first-touch faults.
//!
//! A key's bits land on a random page, so a new layer's pages are all
//! touched within its first thousands of keys, and the kernel zeroes each
//! 2 MiB page on that first write. On the benchmark VM that zeroing ran at
//! about 0.4 GB/s (the host backs the memory as it is first touched) and
//! took 12 % of the samples of a billion lines into a filter grown to 5.4
//! GiB, all of it on the main thread. Two helpers, each on half the layer,
//! take a share of it (the main thread still faults on the pages it
//! reaches first) on the other core: [`HELPERS`]. They change no byte: a
//! populated page reads as zero, as an untouched one does.

use memmap2::MmapMut;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// Layers smaller than this are not populated by a helper: they fault in
/// quickly anyway, and a short run should not wait for (or start) a thread.
pub(super) const MIN_BYTES: usize = 64 << 20;

/// Bytes populated per call, between checks of the stop flag: what a stop
/// (a run's end) waits for at most, besides the call in progress.
const STEP: usize = 8 << 20;

/// The helpers of a filter's layers: running, and waiting for their layer
/// to get [`keys_due`] keys (by layer index).
#[derive(Default)]
pub(super) struct Populating {
    pub(super) running: Vec<Populator>,
    pub(super) waiting: Vec<usize>,
}

/// Whether `map` is worth a helper: [`MIN_BYTES`] or more, and the
/// `SEEN_NO_POPULATE` switch not set.
pub(super) fn wanted(map: &MmapMut) -> bool {
    map.len() >= MIN_BYTES && crate::tuning::get().populate
}

/// The keys a layer of `map` gets (counting the batch about to go in)
/// before a helper starts on it: one per 2 MiB page of it, but at most 64.
/// So a run of a line or two into a large filter (`echo x | seen dedup -n
/// 1G`: 0.1–0.35 s and up to 280 MiB resident with a helper started at
/// once, 15 MiB without) starts none, and a run that fills the layer starts
/// one before its faults. Waiting for one key per page would spare a run
/// of 1,000 lines into a 4 GiB filter the pages it never touches (1.2 GB
/// resident against 2.1), but a billion lines into a grown filter took
/// 91.9 s with that rule against 82.5 with a helper started at once, and
/// 82.3 with this one (one run each, alternated).
pub(super) fn keys_due(map: &MmapMut) -> u64 {
    (map.len() as u64 >> 21).min(64)
}

/// Helpers per layer, each on its own part of it: the main thread faults
/// in the pages it reaches before them, so more helpers leave it fewer.
/// A billion lines into a filter grown from `-n 10M`, alternated: 87.2 s
/// for two against 97.7 for one, then 83.0 against 86.0.
pub(super) const HELPERS: usize = 2;

/// A helper thread populating one mapping; dropping it stops the helper and
/// waits for it. The mapping must outlive it: its owner drops the populator
/// first (see `Layers::stop_populating`).
pub(super) struct Populator {
    stop: Arc<AtomicBool>,
    helper: Option<JoinHandle<()>>,
}

impl Populator {
    /// Starts populating part `part` of `parts` of `map` (in whole steps,
    /// from the part's start; the last part takes what is left), unless
    /// `map` is smaller than [`MIN_BYTES`], the `SEEN_NO_POPULATE` switch is
    /// set, or no thread can be started: `None` then, and nothing changes
    /// but who takes the faults.
    pub(super) fn start(map: &MmapMut, part: usize, parts: usize) -> Option<Populator> {
        if !wanted(map) {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let share = (map.len() / parts) & !(STEP - 1);
        let from = share * part;
        let to = if part + 1 == parts {
            map.len()
        } else {
            from + share
        };
        let (addr, len) = (map.as_ptr() as usize + from, to - from);
        let flag = Arc::clone(&stop);
        let helper = std::thread::Builder::new()
            .name("seen-populate".into())
            .spawn(move || {
                let mut at = 0;
                while at < len && !flag.load(Ordering::Relaxed) {
                    let n = STEP.min(len - at);
                    // SAFETY: [addr + at, addr + at + n) lies in a mapping
                    // that stays mapped until this thread is joined (the
                    // owner drops the `Populator` before the map).
                    // `MADV_POPULATE_WRITE` only faults pages in: it
                    // writes no byte, so the main thread's writes to the
                    // same pages are not raced. An error (an old kernel
                    // without it, no memory) ends the helper: the main
                    // thread then faults the rest in, as without it.
                    let r = unsafe {
                        libc::madvise(
                            (addr + at) as *mut libc::c_void,
                            n,
                            libc::MADV_POPULATE_WRITE,
                        )
                    };
                    if r != 0 {
                        return;
                    }
                    at += n;
                }
            })
            .ok()?;
        Some(Populator {
            stop,
            helper: Some(helper),
        })
    }
}

#[cfg(test)]
impl Populator {
    /// Waits for the helper to populate all of its map.
    pub(super) fn finish(mut self) {
        self.helper.take().unwrap().join().unwrap();
    }
}

/// The resident bytes of the mapping holding `addr`, from
/// `/proc/self/smaps`.
#[cfg(test)]
pub(super) fn resident(addr: *const u8) -> u64 {
    let rss = super::map::smaps_field(addr, "Rss:").expect("the mapping is listed");
    let kib = rss.strip_suffix(" kB").expect("Rss in kB");
    kib.trim().parse::<u64>().unwrap() * 1024
}

impl Drop for Populator {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.helper.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The helpers fault the whole map in, and change no byte: what was
    /// written before stays, the rest reads as zero. A small map gets no
    /// helper, and a stopped one leaves the map as it was too.
    #[test]
    fn populating_faults_in_and_changes_no_byte() {
        assert!(Populator::start(&MmapMut::map_anon(MIN_BYTES - 4096).unwrap(), 0, 1).is_none());
        let mut map = MmapMut::map_anon(MIN_BYTES + STEP + 4096).unwrap();
        let last = map.len() - 1;
        map[4096 * 7] = 0xa5;
        map[last] = 0x5a;
        assert!(resident(map.as_ptr()) < (1 << 20) as u64 * 8);
        // Two parts, as the layers have: together they cover the whole map.
        let parts: Vec<Populator> = (0..2)
            .map(|part| Populator::start(&map, part, 2).expect("a helper for a large map"))
            .collect();
        for p in parts {
            p.finish();
        }
        assert!(resident(map.as_ptr()) >= map.len() as u64);
        assert_eq!(map.iter().filter(|&&b| b != 0).count(), 2);
        assert_eq!((map[4096 * 7], map[last]), (0xa5, 0x5a));

        let mut map = MmapMut::map_anon(MIN_BYTES + 4096).unwrap();
        drop(Populator::start(&map, 0, 1));
        map[0] = 1;
        assert_eq!(map.iter().filter(|&&b| b != 0).count(), 1);
    }
}
