//! The machinery every store shares: [`Layers`], the bit arrays of a
//! writable filter and the header that describes them (inserting in order,
//! adding a layer when a growing filter's newest one is full, capacity
//! warnings, which segments' checksums went stale, the 2 MiB page hint), the
//! header of a new filter, and lookups over all layers. Where a new layer's
//! memory comes from (anonymous memory, the end of a file) is the owner's
//! business: it passes `add` a function that makes it.

use super::checksum::Stale;
use super::map::huge_pages;
use super::populate::{self, Populating, Populator};
use crate::filter::forget::ForgetList;
use crate::filter::sizing::{self, Plan, Spec};
use crate::filter::{self, LayerBits};
use crate::format::{self, Header, LayerEntry, VERSION_MINOR, WindowState};
use crate::hash::{HASH_XXH3_128_V1, Hash128};
use crate::keys::KeySpec;
use anyhow::{Context, Result, bail};
use memmap2::MmapMut;

/// [`Layers::hint`] for layer `i` of `header`.
pub(super) fn hint_layer(header: &Header, expected: Option<u64>, i: usize, m: &MmapMut) {
    let newest = i + 1 >= header.layers.len();
    let pages = header
        .layers
        .get(i)
        .map_or(0, |l| l.layout.nblocks / filter::BLOCKS_PER_PAGE);
    if !newest || expected.is_some_and(|n| n >= pages) {
        huge_pages(|a| m.advise(a));
    }
}

/// The layer table entry that follows the last layer of `header`, sized by
/// `plan`, with its checksum table right after its bits; it holds `slice`
/// (0 without a window).
fn next_entry(header: &Header, plan: &Plan, slice: u64) -> LayerEntry {
    let offset = header.file_len().next_multiple_of(format::ALIGN);
    LayerEntry {
        offset,
        layout: plan.layout,
        capacity: plan.capacity,
        target_fpp: plan.target_fpp,
        inserts: 0,
        checksums: offset + plan.layout.bytes(),
        slice,
        // A plan is a Bloom layout: the kind of every layer a store adds.
        kind: crate::filter::KindId::BLOOM,
    }
}

/// A new header for `spec`, whose first layer is `first`; with a window, its
/// clock starts at [`crate::clock::now`].
pub(super) fn new_header(spec: &Spec, first: &Plan, seed: u64, keys: KeySpec) -> Header {
    let t = crate::clock::system_secs();
    let window = spec.window.map(|window| {
        let clock = crate::clock::now();
        WindowState {
            window,
            base: window.slice_at(clock),
            clock,
        }
    });
    let mut h = Header {
        version_minor: VERSION_MINOR,
        flags: 0,
        hash_algorithm: HASH_XXH3_128_V1,
        seed,
        keys,
        capacity: spec.capacity,
        target_fpp: spec.target_fpp,
        created: t,
        updated: t,
        growth: spec.growth,
        layers: vec![],
        window,
        forget: None,
    };
    let slice = window.map_or(0, |w| w.base);
    h.layers.push(next_entry(&h, first, slice));
    h
}

/// Read-only views of the maps of layers in the mask `live` (bit `i`:
/// layer `i`), given with their layer indexes.
fn views<'a, M: AsRef<[u8]> + 'a>(
    header: &Header,
    maps: impl Iterator<Item = (usize, &'a M)>,
    live: u64,
) -> Vec<LayerBits<'a>> {
    maps.filter(|(i, _)| live >> i & 1 == 1)
        .map(|(i, m)| LayerBits {
            bits: m.as_ref(),
            layout: header.layers[i].layout,
        })
        .collect()
}

/// The layers in the mask `mask` (bit `i`: layer `i`).
fn masked(layers: &[LayerEntry], mask: u64) -> impl Iterator<Item = &LayerEntry> + Clone {
    layers
        .iter()
        .enumerate()
        .filter(move |(i, _)| mask >> i & 1 == 1)
        .map(|(_, l)| l)
}

/// Looks keys up in every layer a lookup at [`crate::clock::now`] tests
/// ([`Header::live`]).
pub(super) fn contains_in<M: AsRef<[u8]>>(
    header: &Header,
    maps: &[M],
    hashes: &[Hash128],
    out: &mut Vec<bool>,
) {
    out.clear();
    let live = header.live(crate::clock::now());
    filter::contains_batch(&views(header, maps.iter().enumerate(), live), hashes, out);
}

/// When a filter that cannot grow is due its warnings: the largest counts of
/// its newest layer at which the compound false-positive rate is still at most
/// the target (`at[0]`) and [`sizing::UNRELIABLE`] times it (`at[1]`), for the
/// layers described by `layers` and `older_inserts`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Alarms {
    layers: usize,
    older_inserts: u64,
    /// The layer inserts go to, and the others tested (a mask).
    target: usize,
    others: u64,
    at: [u64; 2],
}

/// What the owner of a filter's memory is asked to do when its layers change
/// (anonymous memory: nothing but make new layers; a file: extend itself and
/// rewrite its header).
pub(super) trait Room {
    /// Storage for the layer the header names last, just added.
    ///
    /// # Errors
    /// When there is no room for it.
    fn extend(&mut self, header: &Header) -> Result<MmapMut>;

    /// A layer's bits (`map`) were cleared and the header names it for a
    /// new slice: make both stick before any line goes in (a file writes
    /// the cleared bits back, then the header, and syncs, so that lines
    /// recorded there are never in a layer the file still calls expired,
    /// and old bits never come back under the new slice).
    ///
    /// # Errors
    /// When the header cannot be written.
    fn reused(&mut self, header: &Header, layer: usize, map: &MmapMut) -> Result<()>;

    /// Whether the owner marks the segments of whole layers stale when a
    /// commit span ends (layers held in memory for a dense span), so that keys
    /// need no mark each ([`Stale::mark`](super::checksum::Stale::mark)).
    fn marks_layers(&self) -> bool {
        false
    }

    /// Whether the storage [`Room::extend`] gives is anonymous memory, all
    /// zero and not faulted in yet ([`Layers::populate`]).
    fn anonymous(&self) -> bool {
        false
    }

    /// Reads segment `s` of layer `l` into `bits` and returns the checksum
    /// stored for it, checked before a writer first changes the segment
    /// of a clean file ([`Stale::check`](super::checksum::Stale::check)).
    ///
    /// # Errors
    /// When they cannot be read, or the owner keeps no checksums.
    fn stored_segment(&self, l: &LayerEntry, s: usize, bits: &mut Vec<u8>) -> Result<u64> {
        let _ = (l, s, bits);
        bail!("no checksums are kept here")
    }
}

/// Anonymous memory (the in-memory filter).
pub(super) struct Anon;

impl Room for Anon {
    fn extend(&mut self, header: &Header) -> Result<MmapMut> {
        super::map::anon(header.layers.last().expect("a filter has a layer"))
    }

    fn reused(&mut self, _: &Header, _: usize, _: &MmapMut) -> Result<()> {
        Ok(())
    }

    fn anonymous(&self) -> bool {
        true
    }
}

/// The bit arrays of a writable filter (one mapping per layer) and the header
/// that describes them. Inserts go to the newest layer; when a growing filter's
/// newest layer reaches its capacity, a new layer is added (its storage comes
/// from the owner: anonymous memory or the end of the file).
pub(super) struct Layers {
    pub(super) header: Header,
    pub(super) maps: Vec<MmapMut>,
    /// How the owner is named in warnings.
    pub(super) name: String,
    /// Warnings given so far about a filter that cannot grow: 1 once its
    /// rate passed its target, 2 once it passed [`sizing::UNRELIABLE`] times it.
    pub(super) warned: u8,
    /// The insert counts of the newest layer at which those warnings are due
    /// ([`Layers::alarms`]), and the layers they were worked out for.
    pub(super) alarms: Option<Alarms>,
    /// Segments whose checksums must be written: changed since they last
    /// were, or in a layer just made (all zero); `None` for an in-memory
    /// filter, which has no checksums to keep.
    pub(super) stale: Option<Stale>,
    /// Keys this run may still insert, when known ([`Layers::expect_keys`]).
    pub(super) expected: Option<u64>,
    /// Helpers faulting in new layers' anonymous memory, running or waiting
    /// for keys ([`Layers::populate`]); stopped before any map is dropped.
    pub(super) populating: Populating,
    /// The keys forgotten (format 3.0): present only when a layer holds
    /// them and they are not listed here ([`crate::filter::forget`]).
    pub(super) forget: ForgetList,
    /// The list changed since it was last written.
    pub(super) forget_changed: bool,
    /// Keys taken off the list since it was last written (recorded again),
    /// listed again if the span is unstaged.
    pub(super) forget_removed: Vec<Hash128>,
    /// Listed keys judged absent in this span (or listed again when it was
    /// unstaged) and not recorded yet: the only keys a record without
    /// verdicts can find listed, without a window (see
    /// [`Layers::unforget`]), with where the list holds each.
    pub(super) forget_asked: Box<crate::filter::forget::KeySpots>,
}

impl Drop for Layers {
    fn drop(&mut self) {
        // Before the maps they fault in are unmapped.
        self.stop_populating();
    }
}

impl Layers {
    /// Has a helper fault in the memory of layer `i`, anonymous memory that
    /// is about to be written at random ([`Populator`]), once a batch would
    /// bring it to [`populate::keys_due`] keys (so a run of a few lines into
    /// a large filter starts none); nothing for a small layer.
    pub(super) fn populate(&mut self, i: usize) {
        if populate::wanted(&self.maps[i]) {
            self.populating.waiting.push(i);
        }
    }

    /// Starts the helpers of [`Layers::populate`] that are due before `keys`
    /// more go into layer `top`.
    fn start_populating(&mut self, top: usize, keys: usize) {
        let Layers {
            header,
            maps,
            populating,
            ..
        } = self;
        populating.waiting.retain(|&i| {
            let keys = header.layers[i].inserts + if i == top { keys as u64 } else { 0 };
            if keys < populate::keys_due(&maps[i]) {
                return true;
            }
            for part in 0..populate::HELPERS {
                populating
                    .running
                    .extend(Populator::start(&maps[i], part, populate::HELPERS));
            }
            false
        });
    }

    /// Stops and waits for the helpers of [`Layers::populate`]: called
    /// before maps are dropped or replaced (a helper must not outlive the
    /// mapping it faults in).
    pub(super) fn stop_populating(&mut self) {
        self.populating = Populating::default();
    }

    /// Says how many keys this run may insert (`None`: unknown; repeated
    /// lines count too), and asks for 2 MiB pages ([`huge_pages`]) on the
    /// layers where it pays ([`Layers::hint`]).
    pub(super) fn expect_keys(&mut self, keys: Option<u64>) {
        self.expected = keys;
        for (i, m) in self.maps.iter().enumerate() {
            self.hint(i, m);
        }
    }

    /// Asks for 2 MiB pages on the map `m` of layer `i` of a file when it pays:
    /// for a layer below the newest (only read from now on), always; for the
    /// newest, which is written, when the run is dense: when it may still
    /// insert at least one key per 4 KiB page of it, so that most pages would
    /// be written back anyway (about 63 % at the threshold). A sparse or
    /// unknown run keeps 4 KiB pages, so that adding 1,000 keys to a 400 MiB
    /// filter writes back a few MiB, not all of it.
    fn hint(&self, i: usize, m: &MmapMut) {
        hint_layer(&self.header, self.expected, i, m);
    }

    /// Whether a new layer can still be added.
    fn can_grow(&self) -> bool {
        self.header.growth.is_some() && self.header.layers.len() < self.header.layer_room()
    }

    /// Inserts keys in order, growing when the newest layer is full: keys are
    /// fed in runs no longer than the room left in the newest layer, so a layer
    /// never holds more than its capacity, and where a layer ends does not
    /// depend on how the input was cut into batches. With `out`, keys are tested
    /// and their verdicts given (see
    /// [`Store::insert_batch`](crate::pipeline::Store::insert_batch)); without,
    /// they are known to be new
    /// ([`Store::record_batch`](crate::pipeline::Store::record_batch)): their
    /// bits are set without a test and each counts. With a time window, keys
    /// go to the layer of the current slice ([`Layers::target`]) and are
    /// tested against the live slices.
    pub(super) fn add(
        &mut self,
        hashes: &[Hash128],
        mut out: Option<&mut Vec<bool>>,
        room: &mut dyn Room,
    ) -> Result<u64> {
        if let Some(out) = out.as_deref_mut() {
            out.clear();
        }
        let all = hashes;
        let unlisted = out.is_none().then(|| self.unlisted(hashes)).flatten();
        let hashes = unlisted.as_deref().unwrap_or(hashes);
        let now = crate::clock::now();
        let mut done = 0;
        let mut new = 0;
        while done < hashes.len() {
            if let Some(out) = out.as_deref_mut()
                && self.grows_next()
            {
                // A full layer grows only for a key that needs room: the
                // keys present already are judged before it is added.
                done += self.judge_present(&hashes[done..], out);
                if done == hashes.len() {
                    break;
                }
            }
            let Some(top) = self.target(now, room)? else {
                continue;
            };
            let last = self.header.layers[top];
            let others = self.header.live(now) & !(1u64 << top);
            // A window's slice whose layer is full and that could not grow
            // (no room left for a layer) takes more, as a fixed filter does.
            let growing =
                self.can_grow() && (self.header.window.is_none() || last.inserts < last.capacity);
            // Runs end where the layer is full (growing) or where a warning
            // about the rate is due (fixed), so both happen at an exact count.
            let limit = if growing {
                last.capacity
            } else {
                let [over, far] = self.alarms(top, others).map(|a| a.saturating_add(1));
                if last.inserts < over {
                    over
                } else if last.inserts < far {
                    far
                } else {
                    u64::MAX
                }
            };
            // `limit > inserts` except for a crafted counter at u64::MAX.
            let room_left = match limit.checked_sub(last.inserts) {
                Some(r) if r > 0 && limit != u64::MAX => usize::try_from(r).unwrap_or(usize::MAX),
                _ => usize::MAX,
            };
            let batch = &hashes[done..done + room_left.min(hashes.len() - done)];
            // The segments the batch may change are checked first, once
            // each (a writer that holds layers in memory checked them whole
            // when it read them).
            if let Some(stale) = self.stale.as_mut().filter(|_| !room.marks_layers()) {
                let read = |s, bits: &mut Vec<u8>| room.stored_segment(&last, s, bits);
                stale.check(&self.name, top, &last, batch, &read)?;
            }
            if !self.populating.waiting.is_empty() {
                self.start_populating(top, batch.len());
            }
            let (before, rest) = self.maps.split_at_mut(top);
            let (newest, after) = rest.split_first_mut().expect("the target layer exists");
            let n = match out.as_deref_mut() {
                Some(out) => {
                    let maps = before
                        .iter()
                        .enumerate()
                        .chain(after.iter().enumerate().map(|(i, m)| (i + top + 1, m)));
                    let older = views(&self.header, maps, others);
                    let from = out.len();
                    let n = filter::insert_batch(&older, newest, &last.layout, batch, out);
                    if let Some(stale) = self.stale.as_mut().filter(|_| !room.marks_layers()) {
                        for (h, seen) in batch.iter().zip(&out[from..]) {
                            if !seen {
                                stale.mark(top, &last, *h);
                            }
                        }
                    }
                    n
                }
                None => {
                    filter::set_batch(newest, &last.layout, batch);
                    if let Some(stale) = self.stale.as_mut().filter(|_| !room.marks_layers()) {
                        for h in batch {
                            stale.mark(top, &last, *h);
                        }
                    }
                    batch.len() as u64
                }
            };
            let last = &mut self.header.layers[top];
            last.inserts = last.inserts.saturating_add(n);
            new += n;
            done += batch.len();
            self.expected = self.expected.map(|e| e.saturating_sub(batch.len() as u64));
            if !growing {
                self.warn_full(top, others);
            }
        }
        // A forgotten key recorded again: new (if its bits said present),
        // and off the list.
        new += self.unforget(all, out);
        Ok(new)
    }

    /// Whether the next key to go in makes a growing filter without a
    /// window add a layer: its newest one is full.
    fn grows_next(&self) -> bool {
        let last = self.header.layers[self.header.layers.len() - 1];
        self.header.window.is_none() && self.can_grow() && last.inserts >= last.capacity
    }

    /// Judges the leading keys of `hashes` that every layer already holds
    /// (seen: `true` in `out`, no bit changes), in runs of a few, and
    /// returns how many there were: up to the first key not present.
    fn judge_present(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> usize {
        const RUN: usize = 256;
        let mut present = Vec::with_capacity(RUN);
        let mut done = 0;
        for run in hashes.chunks(RUN) {
            contains_in(&self.header, &self.maps, run, &mut present);
            let n = present.iter().take_while(|&&p| p).count();
            out.extend(std::iter::repeat_n(true, n));
            done += n;
            if n < run.len() {
                break;
            }
        }
        self.expected = self.expected.map(|e| e.saturating_sub(done as u64));
        done
    }

    /// Looks keys up as a writer does ([`contains_in`]), after moving the
    /// clock ([`Layers::tick`]): lines judged now are recorded at this time
    /// or later.
    ///
    /// # Errors
    /// As [`Layers::tick`].
    pub(super) fn contains(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        self.tick(crate::clock::now())?;
        contains_in(&self.header, &self.maps, hashes, out);
        let asked = &mut self.forget_asked;
        self.forget.unpresent_each(hashes, out, |h, spot| {
            asked.insert(h, spot);
        });
        Ok(())
    }

    /// With a window, moves its clock to the time this run works at
    /// ([`WindowState::time`]): called before a slice is named or looked
    /// up for writing, so that lines judged at a time are recorded at that
    /// time or later, and no layer is ever after the clock's slice.
    ///
    /// # Errors
    /// A time past the last slice the filter can name.
    pub(super) fn tick(&mut self, now: u64) -> Result<()> {
        let Some(w) = &mut self.header.window else {
            return Ok(());
        };
        let t = w.time(now);
        super::header::warn_ahead(&self.name, w.clock, t, w, self.stale.is_some());
        if w.window.slice_at(t) > w.last_slice() {
            bail!(
                "{} cannot record lines at {}: its slices are numbered from its creation \
                 with 32 bits, and this is past the last; make a new filter",
                self.name,
                crate::clock::format(t)
            );
        }
        w.clock = t;
        Ok(())
    }

    /// The layer that takes inserts at time `now`, after making it when due:
    /// the newest layer, grown when full; with a window, the newest layer of
    /// the current slice, or one made for it (a layer of an expired slice
    /// of the same size cleared and reused, else a new one). `None`: a layer
    /// was just added or reused; ask again.
    fn target(&mut self, now: u64, room: &mut dyn Room) -> Result<Option<usize>> {
        if self.header.window.is_none() {
            let top = self.header.layers.len() - 1;
            let last = self.header.layers[top];
            if self.can_grow() && last.inserts >= last.capacity {
                let plan = self.spec().layer(top as u32 + 1);
                self.add_layer(plan, 0, room)?;
                return Ok(None);
            }
            return Ok(Some(top));
        }
        self.tick(now)?;
        let w = self.header.window.expect("checked above");
        let cur = w.window.slice_at(w.clock);
        let spec = self.spec();
        let growth = spec.slice().growth;
        // The slice's layers, by level (capacity): the largest takes inserts.
        let mine = (0..self.header.layers.len())
            .filter(|&i| self.header.layers[i].slice == cur)
            .max_by_key(|&i| self.header.layers[i].capacity);
        let level = match (mine, growth) {
            (None, _) => 0,
            (Some(i), None) => return Ok(Some(i)),
            (Some(i), Some(g)) => {
                let l = self.header.layers[i];
                if l.inserts < l.capacity {
                    return Ok(Some(i));
                }
                let c0 = spec.slice().capacity;
                (0..format::MAX_LAYERS as u32)
                    .find(|&lvl| g.capacity(c0, lvl) >= l.capacity)
                    .map_or(format::MAX_LAYERS as u32, |lvl| lvl + 1)
            }
        };
        let plan = spec.layer(level);
        let oldest = w.window.oldest_live(w.clock);
        if let Ok(plan) = &plan
            && let Some(j) = (0..self.header.layers.len()).find(|&j| {
                let l = &self.header.layers[j];
                l.slice < oldest
                    && (l.layout, l.capacity, l.target_fpp)
                        == (plan.layout, plan.capacity, plan.target_fpp)
            })
        {
            self.reuse(j, cur, room)?;
            self.prune_forget();
            return Ok(None);
        }
        // A slice's first layer may take any entry left; a growth layer only
        // while S + 1 stay free, so that every slice of the window can
        // still get a first layer.
        let reserve = if mine.is_none() {
            0
        } else {
            w.window.live() as usize
        };
        if self.header.layers.len() + 1 + reserve <= self.header.layer_room() || mine.is_none() {
            self.add_layer(plan, cur, room)?;
            self.prune_forget();
            return Ok(None);
        }
        // No room for another layer: the slice's newest takes more than
        // its capacity (warned about like a fixed filter's).
        Ok(mine)
    }

    /// The spec the filter was made for (for one without a window, its
    /// first layer's capacity).
    fn spec(&self) -> Spec {
        Spec {
            capacity: match self.header.window {
                Some(_) => self.header.capacity,
                None => self.header.layers[0].capacity,
            },
            target_fpp: self.header.target_fpp,
            growth: self.header.growth,
            window: self.header.window.map(|w| w.window),
        }
    }

    /// Clears layer `j` (of an expired slice) and names it for slice
    /// `slice`, before any line goes in.
    pub(super) fn reuse(&mut self, j: usize, slice: u64, room: &mut dyn Room) -> Result<()> {
        self.maps[j].fill(0);
        let l = &mut self.header.layers[j];
        l.slice = slice;
        l.inserts = 0;
        if let Some(stale) = &mut self.stale {
            stale.zeroed(j);
        }
        self.alarms = None;
        self.warned = 0;
        room.reused(&self.header, j, &self.maps[j])
            .with_context(|| format!("cannot start a new time slice in {}", self.name))
    }

    /// Adds a layer sized by `plan` (the growth rule's, or a slice's),
    /// holding `slice`.
    fn add_layer(
        &mut self,
        plan: Result<Plan, sizing::SizingError>,
        slice: u64,
        room: &mut dyn Room,
    ) -> Result<()> {
        let i = self.header.layers.len();
        if i >= self.header.layer_room() {
            bail!(
                "cannot start a new time slice in {}: all {} layers a filter can have hold \
                 live slices; make a new filter with fewer --slices or a larger -n",
                self.name,
                self.header.layer_room()
            );
        }
        let plan = plan.with_context(|| {
            format!(
                "cannot add layer {} to {} (it holds {} distinct lines)",
                i + 1,
                self.name,
                self.header.inserts()
            )
        })?;
        self.header
            .layers
            .push(next_entry(&self.header, &plan, slice));
        if self.header.window.is_some() {
            // A new slice's warnings are its own.
            self.warned = 0;
        }
        match room.extend(&self.header) {
            Ok(map) => {
                self.hint(i, &map);
                self.maps.push(map);
                if room.anonymous() {
                    self.populate(i);
                }
                if let Some(stale) = &mut self.stale {
                    stale.cover(&self.header.layers, true);
                }
                Ok(())
            }
            Err(e) => {
                self.header.layers.pop();
                Err(e.context(format!("cannot add layer {} to {}", i + 1, self.name)))
            }
        }
    }

    /// The largest insert counts of the newest layer at which the filter's
    /// compound false-positive rate (older layers at their counts, by the
    /// formula) is still at most its target, and at most
    /// [`sizing::UNRELIABLE`] times it. Worked out once (two bisections over
    /// the formula) and kept while the layers stay the same, so that checking
    /// a batch costs two comparisons.
    fn alarms(&mut self, target: usize, others: u64) -> [u64; 2] {
        let newest = self.header.layers[target];
        let older = masked(&self.header.layers, others);
        let layers = self.header.layers.len();
        let older_inserts = older
            .clone()
            .map(|l| l.inserts)
            .fold(0, u64::saturating_add);
        if let Some(a) = self.alarms
            && (a.layers, a.older_inserts, a.target, a.others)
                == (layers, older_inserts, target, others)
        {
            return a.at;
        }
        let rates: Vec<f64> = older
            .map(|l| l.filter_kind().as_kind().counted_fpp(l.inserts))
            .collect();
        let goal = self.header.target_fpp;
        let at = [goal, sizing::UNRELIABLE * goal].map(|t| {
            let budget = sizing::newest_budget(rates.iter().copied(), t);
            sizing::counted_at_rate(&newest.layout, budget)
        });
        self.alarms = Some(Alarms {
            layers,
            older_inserts,
            target,
            others,
            at,
        });
        at
    }

    /// Warns (once per level) when the false-positive rate of a filter that
    /// cannot grow passes its target, and when it passes
    /// [`sizing::UNRELIABLE`] times it; the rate is the formula's at the
    /// insert counts, compound over the layers.
    fn warn_full(&mut self, target: usize, others: u64) {
        let [over, far] = self.alarms(target, others);
        let l = &self.header.layers[target];
        let older = masked(&self.header.layers, others);
        let level = if l.inserts > far {
            2
        } else {
            u8::from(l.inserts > over)
        };
        if level <= self.warned {
            return;
        }
        self.warned = level;
        let fpp = sizing::any_of(
            older
                .clone()
                .chain([l])
                .map(|l| l.filter_kind().as_kind().counted_fpp(l.inserts)),
        );
        let target = self.header.target_fpp;
        if let Some(w) = self.header.window {
            let live = older
                .clone()
                .chain([l])
                .fold(0u64, |a, l| a.saturating_add(l.inserts));
            let per_live = w
                .window
                .slice_capacity(self.header.capacity)
                .saturating_mul(u64::from(w.window.live()));
            crate::say!(
                "seen: warning: {}'s false-positive rate has passed {} {target:e} (about \
                 {fpp:.1e} with {} distinct lines in its live time slices, {:.0}% of the {} \
                 they were sized for: -n {} per window): {}",
                self.name,
                if level == 2 {
                    format!("{} times its target", sizing::UNRELIABLE)
                } else {
                    "its target".to_string()
                },
                indicatif::HumanCount(live),
                100.0 * live as f64 / per_live.max(1) as f64,
                indicatif::HumanCount(per_live),
                indicatif::HumanCount(self.header.capacity),
                if level == 2 {
                    "results are no longer reliable; make a new filter with a larger -n"
                } else {
                    "make a new filter with a larger -n before it degrades further"
                }
            );
            return;
        }
        let (why, sized) = if older.clone().next().is_none() {
            ("is a fixed filter", "it was")
        } else {
            (
                "has all the layers a filter can have",
                "its newest layer was",
            )
        };
        let rebuild = if self.header.growth.is_some() {
            "rebuild it larger"
        } else {
            "rebuild it larger (or growing)"
        };
        let (past, advice) = if level == 2 {
            (
                format!("{} times its target", sizing::UNRELIABLE),
                format!("results are no longer reliable; {rebuild}"),
            )
        } else {
            (
                "its target".to_string(),
                format!("{rebuild} before it degrades further"),
            )
        };
        crate::say!(
            "seen: warning: {} {why}, and its false-positive rate has passed {past} {target:e} \
             (about {fpp:.1e} at {} distinct lines, {:.0}% of the {} {sized} sized for): {advice}",
            self.name,
            indicatif::HumanCount(l.inserts),
            100.0 * l.inserts as f64 / l.capacity.max(1) as f64,
            indicatif::HumanCount(l.capacity),
        );
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::file::map::huge_pages_wanted;
    use crate::file::{MemFilter, NewFilter, ReadFilter, WriteFilter};
    use crate::pipeline::Store;
    use std::path::Path;

    /// Whether the mapping holding `p` was advised `MADV_HUGEPAGE` (`hg` among
    /// its `VmFlags` in `/proc/self/smaps`); `None` when it is not found.
    fn advised_huge(p: *const u8) -> Option<bool> {
        let flags = super::super::map::smaps_field(p, "VmFlags:")?;
        Some(flags.split_whitespace().any(|f| f == "hg"))
    }

    /// A union replaces its target only if the target is as it was read: a
    /// writer's commit in between (`merge -o A A B` while `dedup -f A`
    /// runs) leaves the target as it is, and the run fails.
    #[test]
    fn a_union_does_not_replace_a_filter_changed_since_it_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.seen");
        NewFilter::fixed_for_test(&path, 10_000);
        let read = ReadFilter::open(&path).unwrap();
        let was = read.header().clone();
        let bits: Vec<&[u8]> = vec![read.layer_bits(0)];
        let union =
            NewFilter::union_of(&path, &was, &[bits], &Default::default(), &|_| {}).unwrap();
        drop(read);
        // A writer records a key in the meantime.
        let mut w = WriteFilter::open(&path, None).unwrap();
        let mut out = Vec::new();
        w.insert_batch(&[Hash128 { lo: 1, hi: 2 }], &mut out)
            .unwrap();
        w.commit().unwrap();
        drop(w);
        let changed = std::fs::read(&path).unwrap();
        let e = union.finish_over(true, Some(&was)).unwrap_err();
        assert!(e.to_string().contains("changed during this run"), "{e}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            changed,
            "the target was replaced"
        );
        // Unchanged, it is replaced.
        let read = ReadFilter::open(&path).unwrap();
        let was = read.header().clone();
        let bits: Vec<&[u8]> = vec![read.layer_bits(0)];
        let union =
            NewFilter::union_of(&path, &was, &[bits], &Default::default(), &|_| {}).unwrap();
        drop(read);
        union.finish_over(true, Some(&was)).unwrap();
    }

    /// Layers only read, and in-memory ones, always ask for huge pages; the
    /// layer of a file that a run writes asks only when the run is dense (it
    /// may still insert at least one key per 4 KiB page of it), a layer it
    /// adds included, so that a sparse run does not write back whole 2 MiB
    /// folios.
    #[test]
    fn layer_maps_ask_for_huge_pages_when_it_pays() {
        if !Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists()
            || !huge_pages_wanted()
        {
            eprintln!("skipped: no transparent huge pages here, or SEEN_NO_HUGEPAGE is set");
            return;
        }
        let plan = sizing::plan(200_000, 1e-6).unwrap();
        let mem = MemFilter::new(&plan, 7).unwrap();
        assert_eq!(advised_huge(mem.layers.maps[0].as_ptr()), Some(true));
        let spec = Spec {
            capacity: 20_000,
            target_fpp: 1e-6,
            growth: Some(sizing::Growth::new(2)),
            window: None,
        };
        let pages = spec.layer(0).unwrap().layout.nblocks / filter::BLOCKS_PER_PAGE;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.seen");
        let mut new = NewFilter::create(&path, &spec, 7, KeySpec::RAW).unwrap();
        assert_eq!(advised_huge(new.layers.maps[0].as_ptr()), Some(false));
        new.expect_keys(None);
        assert_eq!(advised_huge(new.layers.maps[0].as_ptr()), Some(false));
        new.expect_keys(Some(pages - 1));
        assert_eq!(advised_huge(new.layers.maps[0].as_ptr()), Some(false));
        new.expect_keys(Some(pages));
        assert_eq!(advised_huge(new.layers.maps[0].as_ptr()), Some(true));
        // Fill the first layer: the one added for the rest asks too, while
        // enough keys are still expected for it.
        let keys: Vec<Hash128> = (0..30_000u32)
            .map(|i| crate::hash::hash(&i.to_le_bytes(), 7))
            .collect();
        let mut out = Vec::new();
        new.expect_keys(Some(30_000 + 2 * pages));
        new.insert_batch(&keys, &mut out).unwrap();
        assert_eq!(new.layers.maps.len(), 2);
        assert_eq!(advised_huge(new.layers.maps[1].as_ptr()), Some(true));
        new.finish(false).unwrap();
        // Reopened for a sparse run: the newest layer keeps 4 KiB pages, the
        // one below (only read now) asks; for a dense run both ask.
        let mut w = WriteFilter::open(&path, Some(10)).unwrap();
        assert_eq!(advised_huge(w.layers.maps[0].as_ptr()), Some(true));
        assert_eq!(advised_huge(w.layers.maps[1].as_ptr()), Some(false));
        w.commit().unwrap();
        drop(w);
        let w = WriteFilter::open(&path, Some(u64::MAX)).unwrap();
        for m in &w.layers.maps {
            assert_eq!(advised_huge(m.as_ptr()), Some(true));
        }
        drop(w);
        let r = ReadFilter::open(&path).unwrap();
        for m in &r.maps {
            assert_eq!(advised_huge(m.as_ptr()), Some(true));
        }
    }
}
