//! A Redis filter of fingerprint sets in **generations**: one that grows
//! (`--growth`) or forgets after a time window (`--window`), shared by a
//! fleet with each distinct line printed by exactly one writer, across a
//! growth step and a slice boundary too (docs/REDIS.md, "Growth and
//! windows").
//!
//! A generation is a fingerprint-set filter of its own size (the sets of a
//! growth step, or of a time slice). Every generation's sets are cut into
//! the same `groups`, by the low half of a line's hash, and each group has
//! its own hash tag: a line's set in every generation, and the group's
//! *top* key (the newest generation written in the group), live in one hash
//! slot. So one script ([`TAS_SCRIPT`]) checks a line in every live
//! generation and adds it to the newest in one atomic step, and a writer
//! still on an older generation learns of the newer one from the reply of
//! the very call that would have decided wrongly (the group's top is newer
//! than its own: nothing ran, it reads the generations again and retries).
//! Most lines need no script: see `fence` (the add behind a `GET` of the
//! top) and `copies` (lookups in a writer's copies of sealed generations).
//!
//! Keys (NAME from the location, TAG a random tag of the filter):
//! - `seen:{NAME}:meta`: what [`GensMeta`] encodes (write-once); it begins as
//!   a header of format 5, which seen 0.3 and the layouts before refuse as
//!   newer.
//! - `seen:{NAME}:gens:TAG`: a hash: `top` (the newest generation), `g:G`
//!   (generation G's slice, its rank in the slice, and the lines the
//!   slice's first generation is sized for) for the live ones, and `clock`
//!   (the latest time a writer worked at).
//! - `seen:{NAME}:count`: `lines:TAG:G`, lines recorded in generation G.
//! - `seen:{NAME:t}:TAG:top`: group t's newest generation written.
//! - `seen:{NAME:t}:TAG:G:k`: set k of group t in generation G.
//!
//! With a window, a slice's keys expire by themselves (`EXPIRE`, set by the
//! script when it adds to them) when the slice stops being live; the
//! generations hash (a few fields) stays with the meta key, so that a
//! filter left idle past its window goes on with its next writer.

mod calls;
mod copies;
mod fence;
mod kept;
mod reads;
pub(crate) mod store;

use copies::Copies;

use super::location::{Location, META_LEN, META_MAGIC};
use super::set_keys::size_sets;
use crate::filter::sizing::{DEFAULT_GROWTH, Growth, Window};
use crate::format::{HEADER_LEN, Header, MAGIC};
use crate::hash::Hash128;
use crate::keys::KeySpec;
use anyhow::{Result, anyhow, bail};

/// Marks the meta value of this layout (bytes 16..24).
const GENS_MAGIC: &[u8; 8] = b"SEENGENS";
/// The format major its meta value begins with: seen 0.3 (and the layouts
/// before generations) read it as a filter header of a newer format and
/// say it needs a newer seen.
const GENS_MAJOR: u16 = 5;
/// Where the checksum of the meta value's first part sits.
const SUM_AT: usize = HEADER_LEN - 8;
/// Groups at most: each is a hash slot, so a Cluster spreads them over its
/// masters; a script call takes a part's lines of one group, so fewer
/// groups mean more lines a call.
const MAX_GROUPS: u64 = 256;
/// Groups at least.
const MIN_GROUPS: u64 = 16;
/// How far behind the filter's clock a writer's may be (seconds): a
/// writer works at the later of the two, and one further behind is
/// refused (its clock is wrong, or its `--now`).
pub(crate) const CLOCK_BOUND: u64 = 60;
/// Generations a growing filter (without a window) may have.
pub(crate) const MAX_GENS: u32 = 40;
/// A window's slice starts with a generation sized for what the newest
/// slice before it took, and a quarter more (the first slice: half its share),
/// between 1/`WINDOW_START` of its share and the share, and each next one
/// of the slice is twice as large. A slice that takes fewer lines than its
/// share then keeps them in fewer sets, each with more of them, and a set
/// costs a command for its expiry and for a writer's copy whatever it
/// holds (docs/design/redis-window-costs.md).
pub(crate) const WINDOW_START: u32 = 8;

/// What the meta key of a filter in generations records.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GensMeta {
    /// Hash seed.
    pub seed: u64,
    /// How records become keys.
    pub keys: KeySpec,
    /// Lines of the first generation; with a window, lines per window.
    pub capacity: u64,
    /// False-positive rate it holds: over all generations, or over the
    /// live slices of a window.
    pub target_fpp: f64,
    /// Creation time, Unix seconds.
    pub created: u64,
    /// The server's `set-max-intset-entries` when it was made.
    pub limit: u64,
    /// The tag of its keys.
    pub tag: u32,
    /// Groups of sets (hash slots).
    pub groups: u64,
    /// Growth (a full generation gets a larger one); `None`: fixed.
    pub growth: Option<Growth>,
    /// The window; `None`: it never forgets.
    pub window: Option<Window>,
    /// A slice's first generation holds 1/`start` of the slice's share at
    /// least (a slice after one that took few lines), and each next one of
    /// the slice `growth` times (2 without growth) more, up to its share (or
    /// on, with growth). 1 (a filter made before slices started lower):
    /// every slice starts at its share.
    pub start: u32,
}

/// One generation: its place and its size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Gen {
    /// Its number (0 for the first; only grows).
    pub index: u64,
    /// The slice it holds lines of (0 without a window).
    pub slice: u64,
    /// Its rank among its slice's generations (0: the first).
    pub rank: u32,
    /// Lines it is sized for.
    pub capacity: u64,
    /// False-positive rate of a lookup in it, at capacity.
    pub rate: f64,
    /// Fingerprint bits: 32 or 64.
    pub fp_bits: u32,
    /// Sets per group.
    pub per_group: u64,
}

impl GensMeta {
    /// Plans a new filter.
    ///
    /// # Errors
    /// A capacity of 0, or a rate outside (0, 1).
    pub(crate) fn plan(
        capacity: u64,
        target_fpp: f64,
        limit: u64,
        seed: u64,
        keys: KeySpec,
        growth: Option<Growth>,
        window: Option<Window>,
    ) -> Result<GensMeta> {
        let mut m = GensMeta {
            seed,
            keys,
            capacity,
            target_fpp,
            created: crate::clock::system_secs(),
            limit,
            tag: super::set_keys::fresh_tag(),
            groups: 1,
            growth,
            window,
            start: 1,
        };
        // Groups as many as the sets of a slice's share (a full slice's
        // lines a script call, whatever it starts with).
        let first = m.generation(0, 0, 0, 0)?;
        m.groups = first.per_group.clamp(MIN_GROUPS, MAX_GROUPS);
        if window.is_some() {
            m.start = WINDOW_START;
        }
        Ok(m)
    }

    /// A slice's share of the lines (the capacity without a window).
    fn share(&self) -> u64 {
        self.window
            .map_or(self.capacity, |w| w.slice_capacity(self.capacity))
    }

    /// The lines a slice's first generation is sized for when nothing says
    /// otherwise: 1/`start` of its share.
    fn least_first(&self) -> u64 {
        self.share().div_ceil(u64::from(self.start))
    }

    /// `first`, the lines a slice's first generation holds as its field
    /// says, or [`Self::least_first`] when it does not (0).
    pub(crate) fn first_or_least(&self, first: u64) -> u64 {
        if first == 0 {
            self.least_first()
        } else {
            first
        }
    }

    /// The lines the window's first slice starts with: half its share (at
    /// least 1/`start` of it), since nothing came before.
    pub(crate) fn first_first(&self) -> u64 {
        self.share().div_ceil(2).max(self.least_first())
    }

    /// The lines the first generation of a new slice is sized for, after
    /// the `before` lines the newest slice took: a quarter more, at least
    /// 1/`start` of the share and (without growth) at most the share; the
    /// share itself for a filter whose slices start there (`start` 1).
    pub(crate) fn next_first(&self, before: u64) -> u64 {
        if self.start <= 1 {
            return self.share();
        }
        let want = before.saturating_add(before / 4).max(self.least_first());
        match self.growth {
            Some(_) => want,
            None => want.min(self.share().max(self.least_first())),
        }
    }

    /// The last rank a slice whose first generation holds `first` lines
    /// (0: [`Self::least_first`]) may add without growth: the first whose
    /// generations together hold the slice's share (`None`: with growth, no
    /// such limit; or slices that start at their share, made before they
    /// started lower).
    pub(crate) fn last_rank(&self, first: u64) -> Option<u32> {
        if self.growth.is_some() || self.start <= 1 {
            return None;
        }
        let share = self.share();
        let first = self.first_or_least(first);
        let (mut held, mut rank) = (first, 0u32);
        while held < share {
            rank += 1;
            held = held.saturating_add(
                first.saturating_mul(u64::from(DEFAULT_GROWTH).saturating_pow(rank)),
            );
        }
        Some(rank)
    }

    /// Live generations at most, past which the newest takes more lines
    /// than its capacity: a growing filter's `2 * MAX_GENS`, and the steps
    /// by which each live slice reaches its share.
    pub(crate) fn max_live(&self) -> usize {
        let steps = self.start.next_power_of_two().trailing_zeros() as usize;
        let slices = self.window.map_or(1, |w| w.live() as usize);
        2 * MAX_GENS as usize + slices * steps
    }

    /// Generation `index`, rank `rank` of slice `slice`, whose first
    /// generation holds `first` lines (0: [`Self::least_first`]): sized for
    /// that times the factor per rank, at the slice's share of the rate
    /// (times the ratio per rank).
    ///
    /// # Errors
    /// A size that cannot be planned.
    pub(crate) fn generation(&self, index: u64, slice: u64, rank: u32, first: u64) -> Result<Gen> {
        // The slice's share of the rate (the whole rate without a window).
        let share = self
            .window
            .map_or(self.target_fpp, |w| self.target_fpp / f64::from(w.live()));
        let first = self.first_or_least(first);
        let (capacity, rate) = match (self.growth, self.last_rank(first)) {
            (Some(g), _) => (
                first.saturating_mul(u64::from(g.factor).saturating_pow(rank)),
                share * (1.0 - g.ratio) * g.ratio.powi(rank as i32),
            ),
            // The slice's rate split evenly between the generations it
            // may have: at the default rate, two of them still fill their
            // sets as one does.
            (None, Some(last)) => (
                first.saturating_mul(u64::from(DEFAULT_GROWTH).saturating_pow(rank)),
                share / f64::from(last + 1),
            ),
            (None, None) => (self.share(), share),
        };
        let (fp_bits, sets) = size_sets(capacity, rate.max(f64::MIN_POSITIVE), self.limit)?;
        Ok(Gen {
            index,
            slice,
            rank,
            capacity,
            rate,
            fp_bits,
            per_group: sets.div_ceil(self.groups).max(1),
        })
    }

    /// Encodes the meta value.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = vec![0u8; META_LEN];
        let put = |v: &mut [u8], at: usize, b: &[u8]| v[at..at + b.len()].copy_from_slice(b);
        put(&mut v, 0, &MAGIC);
        put(&mut v, 8, &GENS_MAJOR.to_le_bytes());
        put(&mut v, 16, GENS_MAGIC);
        put(&mut v, 24, &self.seed.to_le_bytes());
        put(&mut v, 32, &self.keys.to_bits().to_le_bytes());
        put(
            &mut v,
            36,
            &self.growth.map_or(0, |g| g.factor).to_le_bytes(),
        );
        put(&mut v, 40, &self.capacity.to_le_bytes());
        put(&mut v, 48, &self.target_fpp.to_bits().to_le_bytes());
        put(&mut v, 56, &self.created.to_le_bytes());
        put(&mut v, 64, &self.groups.to_le_bytes());
        put(&mut v, 72, &self.limit.to_le_bytes());
        put(&mut v, 80, &self.tag.to_le_bytes());
        put(
            &mut v,
            84,
            &self.growth.map_or(0.0, |g| g.ratio).to_bits().to_le_bytes(),
        );
        put(&mut v, 92, &self.window.map_or(0, |w| w.secs).to_le_bytes());
        put(
            &mut v,
            100,
            &self.window.map_or(0, |w| w.slices).to_le_bytes(),
        );
        put(&mut v, 104, &self.start.to_le_bytes());
        let sum = xxhash_rust::xxh3::xxh3_64(&v[..SUM_AT]);
        put(&mut v, SUM_AT, &sum.to_le_bytes());
        put(&mut v, HEADER_LEN, META_MAGIC);
        // The length a file of it would have, as the Bloom layout's meta
        // says: a reader of that layout (seen 0.3) then decodes the header,
        // and refuses its format by name.
        put(&mut v, HEADER_LEN + 16, &(HEADER_LEN as u64).to_le_bytes());
        v
    }

    /// Whether `v` is the meta value of this layout.
    pub(crate) fn marks(v: &[u8]) -> bool {
        v.len() >= 24 && v[..8] == MAGIC && v[16..24] == *GENS_MAGIC
    }

    /// Decodes a meta value of this layout.
    ///
    /// # Errors
    /// A damaged value, named with `loc`.
    pub(crate) fn decode(loc: &Location, v: &[u8]) -> Result<GensMeta> {
        let damaged = |what: &str| {
            anyhow!(
                "{loc}: its meta key {} is damaged ({what}): the filter cannot be used; \
                 rebuild it under another name",
                loc.meta_key()
            )
        };
        if v.len() != META_LEN {
            return Err(damaged(&format!("{} bytes", v.len())));
        }
        let u64_at = |at: usize| u64::from_le_bytes(v[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_le_bytes(v[at..at + 4].try_into().expect("4 bytes"));
        if u64_at(SUM_AT) != xxhash_rust::xxh3::xxh3_64(&v[..SUM_AT]) {
            return Err(damaged("its checksum does not match"));
        }
        let factor = u32_at(36);
        let ratio = f64::from_bits(u64_at(84));
        let (secs, slices) = (u64_at(92), u32_at(100));
        let m = GensMeta {
            seed: u64_at(24),
            keys: KeySpec::from_bits(u32_at(32)).map_err(|e| damaged(&e))?,
            capacity: u64_at(40),
            target_fpp: f64::from_bits(u64_at(48)),
            created: u64_at(56),
            groups: u64_at(64),
            limit: u64_at(72),
            tag: u32_at(80),
            growth: (factor > 0).then_some(Growth { factor, ratio }),
            window: (secs > 0).then_some(Window { secs, slices }),
            // 0: made before slices started small.
            start: u32_at(104).max(1),
        };
        let bad_growth = m
            .growth
            .is_some_and(|g| !((2..=16).contains(&g.factor) && ratio > 0.0 && ratio < 1.0));
        let bad_window = m
            .window
            .is_some_and(|w| w.slices == 0 || w.slices > 32 || w.secs < u64::from(w.slices));
        if m.capacity == 0
            || !(m.target_fpp > 0.0 && m.target_fpp < 1.0)
            || !(1..=MAX_GROUPS).contains(&m.groups)
            || m.limit == 0
            || bad_growth
            || bad_window
            || m.start > 1 << 16
        {
            return Err(damaged("a field is out of range"));
        }
        Ok(m)
    }

    /// A header with this filter's seed, keys, sizing, growth, window and
    /// times, and no layers, for what reads any filter's header.
    pub(crate) fn header(&self) -> Header {
        Header {
            version_minor: 0,
            flags: 0,
            hash_algorithm: crate::hash::HASH_XXH3_128_V1,
            seed: self.seed,
            keys: self.keys,
            capacity: self.capacity,
            target_fpp: self.target_fpp,
            created: self.created,
            updated: self.created,
            growth: self.growth,
            layers: Vec::new(),
            window: self.window.map(|w| crate::format::WindowState {
                window: w,
                base: w.slice_at(self.created),
                clock: self.created,
            }),
            forget: None,
        }
    }

    /// The key of the generations hash (in the meta key's slot).
    pub(crate) fn gens_key(&self, loc: &Location) -> String {
        format!("seen:{{{}}}:gens:{:08x}", loc.name, self.tag)
    }

    /// The field of the count key counting generation `g`'s lines.
    pub(crate) fn count_field(&self, g: u64) -> String {
        format!("lines:{:08x}:{g}", self.tag)
    }

    /// The group of key `h`.
    pub(crate) fn group_of(&self, h: Hash128) -> u64 {
        ((u128::from(h.lo) * u128::from(self.groups)) >> 64) as u64
    }

    /// The lines `lines` (positions in `hashes`) by group, in their order.
    pub(crate) fn by_group(
        &self,
        hashes: &[Hash128],
        lines: &[u32],
    ) -> std::collections::HashMap<u64, Vec<u32>> {
        let mut by: std::collections::HashMap<u64, Vec<u32>> = Default::default();
        for &i in lines {
            by.entry(self.group_of(hashes[i as usize]))
                .or_default()
                .push(i);
        }
        by
    }

    /// The name of group `t`'s top key.
    pub(crate) fn top_key(&self, loc: &Location, t: u64) -> String {
        format!("seen:{{{}:{t}}}:{:08x}:top", loc.name, self.tag)
    }

    /// Key `h`'s place in generation `g`: its set (counted over every
    /// group: set `j` is set `j % per_group` of group `j / per_group`) and
    /// its fingerprint there.
    pub(crate) fn place(&self, g: &Gen, h: Hash128) -> (u64, i64) {
        let j = ((u128::from(h.lo) * u128::from(self.groups * g.per_group)) >> 64) as u64;
        (j, fingerprint(g.fp_bits, h))
    }

    /// The name of the set of key `h` in generation `gen` (in `h`'s
    /// group's slot).
    pub(crate) fn set_key(&self, loc: &Location, g: &Gen, h: Hash128) -> String {
        let (j, _) = self.place(g, h);
        self.set_name(loc, g.index, j / g.per_group, j % g.per_group)
    }

    /// The name of set `k` of group `t` in generation `g`.
    pub(crate) fn set_name(&self, loc: &Location, g: u64, t: u64, k: u64) -> String {
        format!("seen:{{{}:{t}}}:{:08x}:{g}:{k}", loc.name, self.tag)
    }

    /// The end of slice `slice`'s life (Unix seconds): the first time at
    /// which it is no longer live. `None` without a window.
    pub(crate) fn slice_end(&self, slice: u64) -> Option<u64> {
        self.window.map(|w| {
            let s = u128::from(w.slices);
            ((u128::from(slice) + s + 1) * u128::from(w.secs)).div_ceil(s) as u64
        })
    }
}

/// Removes every key of the filter `meta` describes but its meta key and
/// counters (which the caller removes first): the sets of the generations
/// its hash names, the groups' top keys, and the hash.
///
/// # Errors
/// A server error or a lost connection.
pub(super) fn delete_all(client: &mut super::client::Client, meta: &GensMeta) -> Result<()> {
    use super::client::{Failure, Routed};
    use super::slot::slot;
    let loc = client.location().clone();
    let gens = meta.gens_key(&loc);
    let v = client.query(
        slot(gens.as_bytes()),
        redis::cmd("HGETALL").arg(&gens).clone(),
    )?;
    let state = GensState::read(&v, &loc).unwrap_or_default();
    let mut names: Vec<String> = (0..meta.groups).map(|t| meta.top_key(&loc, t)).collect();
    for &(g, slice, rank, first) in &state.gens {
        let planned = meta.generation(g, slice, rank, first)?;
        for t in 0..meta.groups {
            for k in 0..planned.per_group {
                names.push(meta.set_name(&loc, g, t, k));
            }
        }
    }
    names.push(gens);
    for part in names.chunks(4096) {
        let cmds = part
            .iter()
            .map(|n| Routed::new(slot(n.as_bytes()), redis::cmd("UNLINK").arg(n)))
            .collect();
        for v in client.exec(cmds).map_err(Failure::into_error)? {
            if let Some(e) = super::client::server_error("UNLINK of a set", &loc, &v) {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Key `h`'s fingerprint in a generation of `fp_bits` bits, as the signed
/// integer Redis stores (a 32-bit one fits an intset's 4-byte encoding).
pub(crate) fn fingerprint(fp_bits: u32, h: Hash128) -> i64 {
    if fp_bits == 32 {
        i64::from((h.hi >> 32) as u32 as i32)
    } else {
        h.hi as i64
    }
}

/// The generation a `GET` of a group's top key names (`None`: no top yet).
pub(super) fn top_of(v: &redis::Value) -> Option<u64> {
    match v {
        redis::Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

/// The state of the generations, as the hash holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct GensState {
    /// The live generations (index, slice, rank, and the lines its slice's
    /// first generation holds: 0 when the hash does not say), oldest first.
    pub gens: Vec<(u64, u64, u32, u64)>,
    /// The latest time a writer worked at.
    pub clock: u64,
}

impl GensState {
    /// Reads the state from an `HGETALL` of the generations hash.
    ///
    /// # Errors
    /// A hash without generations, or a field that is not one.
    pub(crate) fn read(v: &redis::Value, loc: &Location) -> Result<GensState> {
        let mut s = GensState::default();
        for (k, val) in super::reply::hash_fields(v) {
            let text = String::from_utf8_lossy(val).into_owned();
            if k == b"clock" {
                s.clock = text.parse().unwrap_or(0);
            } else if let Some(g) = k.strip_prefix(b"g:") {
                let g: u64 = std::str::from_utf8(g)
                    .ok()
                    .and_then(|g| g.parse().ok())
                    .ok_or_else(|| anyhow!("{loc}: a generation field is damaged"))?;
                let mut it = text.split(' ').map(str::parse::<u64>);
                let (Some(Ok(slice)), Some(Ok(rank))) = (it.next(), it.next()) else {
                    bail!("{loc}: generation {g}'s field is damaged ({text})");
                };
                let first = match it.next() {
                    None => 0,
                    Some(Ok(first)) if first > 0 => first,
                    Some(_) => bail!("{loc}: generation {g}'s field is damaged ({text})"),
                };
                s.gens.push((g, slice, rank as u32, first));
            }
        }
        if s.gens.is_empty() {
            bail!(
                "{loc}: its generations hash is gone or empty (evicted, deleted, or expired \
                 with every slice of its window): nothing it held can be read; remove the \
                 meta key {} and make the filter again",
                loc.meta_key()
            );
        }
        s.gens.sort_unstable();
        Ok(s)
    }

    /// The newest generation (index, slice, rank, its slice's first
    /// generation's lines).
    pub(crate) fn newest(&self) -> (u64, u64, u32, u64) {
        *self.gens.last().expect("read checks it has one")
    }
}

/// The test-and-set of one group's lines, in one atomic step. `KEYS[1]` is
/// the group's top key, the rest its sets. `ARGV[1]`: the newest
/// generation the writer knows; `ARGV[2]`: seconds the newest
/// generation's keys live (0: for ever); `ARGV[3]`: the call's lines `n`;
/// `ARGV[4]`: the fingerprint widths `w` (1 or 2: 32 and 64 bits); then
/// `w` runs of `n` fingerprints, one per line, the lines of each set of
/// the newest generation together; then for each set (`KEYS[2..]`) a flag
/// (`n` newest or `o` older, and the width's number) and, for the newest,
/// its first line's number and its count; for an older one its lines'
/// numbers, two bytes each, big-endian (lines are numbered from 1).
///
/// Replies `{1, top}` and does nothing when the group holds a generation
/// newer than the writer's. Else it adds to the newest generation the
/// lines found in none of the sets, and replies `{0, top}` followed by the
/// numbers of the lines that were not new (found, or a fingerprint given
/// twice in a set). A run of one line is added with one `SADD`, whose
/// reply says whether it was new; a longer one is looked up first.
pub(crate) const TAS_SCRIPT: &str = r"
local top = tonumber(redis.call('GET', KEYS[1]) or '-1')
local g = tonumber(ARGV[1])
if top > g then return {1, top} end
local ttl = tonumber(ARGV[2])
if top < g then redis.call('SET', KEYS[1], g) end
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
local n = tonumber(ARGV[3])
local at = 5 + tonumber(ARGV[4]) * n
local out = {0, top}
local seen, news = {}, {}
for k = 2, #KEYS do
  local flag, blob = ARGV[at], ARGV[at + 1]
  at = at + 2
  local off = 4 + (tonumber(string.sub(flag, 2)) - 1) * n
  if string.sub(flag, 1, 1) == 'n' then
    local fhi, flo, chi, clo = string.byte(blob, 1, 4)
    news[#news + 1] = {k, off, fhi * 256 + flo, chi * 256 + clo}
  else
    local fps = {}
    local pos = {}
    for j = 1, #blob / 2 do
      local hi, lo = string.byte(blob, 2 * j - 1, 2 * j)
      local p = hi * 256 + lo
      pos[j] = p
      fps[j] = ARGV[off + p]
    end
    local r = redis.call('SMISMEMBER', KEYS[k], unpack(fps))
    for j = 1, #pos do
      if r[j] == 1 then
        seen[pos[j]] = true
      end
    end
  end
end
for _, e in ipairs(news) do
  local k, off, from, c = e[1], e[2], e[3], e[4]
  local first, last = off + from, off + from + c - 1
  if c == 1 then
    if seen[from] or redis.call('SADD', KEYS[k], ARGV[first]) == 0 then
      out[#out + 1] = from
    elseif ttl > 0 then
      redis.call('EXPIRE', KEYS[k], ttl)
    end
  else
    local r = redis.call('SMISMEMBER', KEYS[k], unpack(ARGV, first, last))
    local add, mine = {}, {}
    for j = 1, c do
      local p = from + j - 1
      local fp = ARGV[off + p]
      if not seen[p] and r[j] == 0 and not mine[fp] then
        mine[fp] = true
        add[#add + 1] = fp
      else
        out[#out + 1] = p
      end
    end
    if #add > 0 then
      redis.call('SADD', KEYS[k], unpack(add))
      if ttl > 0 then redis.call('EXPIRE', KEYS[k], ttl) end
    end
  end
end
return out
";

/// Adds a generation, in one step, when the newest is still `ARGV[1]`:
/// `ARGV[2]` its slice, `ARGV[3]` its rank and the lines its slice's first
/// generation holds (two numbers), `ARGV[4]` the writer's time
/// (the clock only moves forward), `ARGV[5]` the oldest live slice (older
/// generations leave the hash, and their counters, fields `ARGV[6]`G of
/// `KEYS[2]`, go). Replies the newest generation after it (the one added,
/// or the one another writer added first).
pub(crate) const GROW_SCRIPT: &str = r"
local top = tonumber(redis.call('HGET', KEYS[1], 'top') or '-1')
local t = tonumber(ARGV[4])
local clock = tonumber(redis.call('HGET', KEYS[1], 'clock') or '0')
if t > clock then redis.call('HSET', KEYS[1], 'clock', t) end
if top ~= tonumber(ARGV[1]) then return top end
local g = top + 1
redis.call('HSET', KEYS[1], 'top', g, 'g:' .. g, ARGV[2] .. ' ' .. ARGV[3])
local oldest = tonumber(ARGV[5])
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local f = all[i]
  if string.sub(f, 1, 2) == 'g:' then
    local s = tonumber(string.match(all[i + 1], '^(%d+)'))
    if s < oldest then
      redis.call('HDEL', KEYS[1], f)
      redis.call('HDEL', KEYS[2], ARGV[6] .. string.sub(f, 3))
    end
  end
end
return g
";

/// Makes a filter: its meta key `KEYS[1]` (`ARGV[1]`) unless it exists, and
/// then its generations hash `KEYS[2]` naming generation 0 (slice, rank
/// and its lines `ARGV[2]`, clock `ARGV[3]`). Replies 1 when it made them, 0 when the meta
/// key was there.
pub(crate) const CREATE_SCRIPT: &str = r"
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.call('HSET', KEYS[2], 'top', 0, 'g:0', ARGV[2], 'clock', ARGV[3])
return 1
";

/// Raises a group's top `KEYS[1]` to generation `ARGV[1]` (the newest the
/// writer knows) when it is older, with its time to live `ARGV[2]` seconds
/// (0: for ever), before a writer's lookups in that group: every older
/// generation is then sealed there while it looks (no writer adds a
/// deciding line to one), so its lookups stand and its lines can go behind
/// a fence (`fence`), as when the top was the newest already. Replies the
/// top before (-1: none).
pub(crate) const RAISE_SCRIPT: &str = r"
local top = tonumber(redis.call('GET', KEYS[1]) or '-1')
local g = tonumber(ARGV[1])
if top < g then
  redis.call('SET', KEYS[1], g)
  local ttl = tonumber(ARGV[2])
  if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
end
return top
";

/// Moves the clock forward to `ARGV[1]` (a writer's time), when it is later.
pub(crate) const CLOCK_SCRIPT: &str = r"
local clock = tonumber(redis.call('HGET', KEYS[1], 'clock') or '0')
local t = tonumber(ARGV[1])
if t > clock then redis.call('HSET', KEYS[1], 'clock', t) return t end
return clock
";

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(window: Option<Window>) -> GensMeta {
        GensMeta::plan(
            1_000_000,
            1e-6,
            512,
            7,
            KeySpec::RAW,
            Some(Growth {
                factor: 2,
                ratio: 0.8,
            }),
            window,
        )
        .unwrap()
    }

    #[test]
    fn meta_round_trips_and_older_readers_see_a_newer_format() {
        let loc = crate::redis::Location::parse("redis://h/x").unwrap();
        for w in [
            None,
            Some(Window {
                secs: 7 * 86_400,
                slices: 8,
            }),
        ] {
            let m = meta(w);
            let v = m.encode();
            assert!(GensMeta::marks(&v));
            assert_eq!(GensMeta::decode(&loc, &v).unwrap(), m);
            // A reader of filter headers (seen 0.3's Redis code reads the
            // meta value as one) refuses it as a newer format.
            // (seen 0.3 reads the header with the length the meta gives.)
            let len = u64::from_le_bytes(v[HEADER_LEN + 16..HEADER_LEN + 24].try_into().unwrap());
            let e = Header::decode(&v[..HEADER_LEN], len).unwrap_err();
            assert!(e.to_string().contains("5.0"), "{e}");
            let mut bad = v.clone();
            bad[41] ^= 1;
            assert!(GensMeta::decode(&loc, &bad).is_err());
        }
    }

    #[test]
    fn generations_hold_the_target_together() {
        let m = meta(None);
        let total: f64 = (0..MAX_GENS)
            .map(|r| m.generation(0, 0, r, 0).unwrap().rate)
            .sum();
        assert!(total <= 1e-6 * (1.0 + 1e-9), "{total}");
        let g0 = m.generation(0, 0, 0, 0).unwrap();
        let g3 = m.generation(3, 0, 3, 0).unwrap();
        assert_eq!(g3.capacity, 8 * g0.capacity);
        // Each generation's sets hold at most 0.4 of the intset limit at
        // its capacity: they stay compact.
        for r in 0..8 {
            let g = m.generation(u64::from(r), 0, r, 0).unwrap();
            let load = g.capacity as f64 / (m.groups * g.per_group) as f64;
            assert!(load <= 0.4 * 512.0, "rank {r}: {load}");
        }
        // A window's live slices share the rate.
        let w = meta(Some(Window {
            secs: 8 * 3600,
            slices: 8,
        }));
        // A slice starts with an eighth of its share of the lines, then
        // grows by the growth factor.
        let g = w.generation(0, 5, 0, 0).unwrap();
        assert_eq!(g.capacity, 125_000 / 8);
        assert!((g.rate - 1e-6 / 9.0 * 0.2).abs() < 1e-15);
        assert_eq!(w.generation(2, 5, 2, 0).unwrap().capacity, 125_000 / 2);
        assert_eq!(w.last_rank(0), None);
        // The first generation's sets are cut into as many groups as the
        // share's would be.
        assert_eq!(w.groups, meta(None).groups);
        // Slice 5 of 1-hour slices with 8 a window is live until 14 h.
        assert_eq!(w.slice_end(5), Some(14 * 3600));
    }

    #[test]
    fn a_window_without_growth_doubles_up_to_its_share_within_its_rate() {
        let loc = crate::redis::Location::parse("redis://h/x").unwrap();
        let w = Window {
            secs: 8 * 3600,
            slices: 8,
        };
        let m = GensMeta::plan(8_000_000, 1e-4, 512, 7, KeySpec::RAW, None, Some(w)).unwrap();
        assert_eq!(m.start, WINDOW_START);
        assert_eq!(GensMeta::decode(&loc, &m.encode()).unwrap(), m);
        // 1/8, 1/4, 1/2 of the 1M share hold 7/8 of it: the fourth (the
        // whole share) is the last, and it takes what comes past it.
        let last = m.last_rank(0).unwrap();
        assert_eq!(last, 3);
        let caps: Vec<u64> = (0..=last)
            .map(|r| m.generation(u64::from(r), 2, r, 0).unwrap().capacity)
            .collect();
        assert_eq!(caps, [125_000, 250_000, 500_000, 1_000_000]);
        // The slice's generations together stay within its share of the
        // rate: the slices together within the target.
        let rates: f64 = (0..=last)
            .map(|r| m.generation(u64::from(r), 2, r, 0).unwrap().rate)
            .sum();
        assert!(rates * 9.0 <= 1e-4 * (1.0 + 1e-9), "{rates}");
        // The slice's rate is split evenly between its four.
        let g0 = m.generation(0, 2, 0, 0).unwrap();
        assert!((g0.rate - 1e-4 / 9.0 / 4.0).abs() < 1e-15, "{g0:?}");
        // The first slice starts at half its share: two generations at
        // most, each with half the slice's rate.
        assert_eq!(m.first_first(), 500_000);
        assert_eq!(m.last_rank(500_000), Some(1));
        let g = m.generation(0, 2, 0, 500_000).unwrap();
        assert!((g.rate - 1e-4 / 9.0 / 2.0).abs() < 1e-15, "{g:?}");
        // One that starts at its share has it all.
        let g = m.generation(0, 2, 0, 1_000_000).unwrap();
        assert!((g.rate - 1e-4 / 9.0).abs() < 1e-15, "{g:?}");
        // A later slice starts after the lines the one before took, a
        // quarter more, between an eighth of its share and the share.
        assert_eq!(m.next_first(0), 125_000);
        assert_eq!(m.next_first(400_000), 500_000);
        assert_eq!(m.next_first(3_000_000), 1_000_000);
        assert_eq!(m.last_rank(500_000), Some(1));
        assert_eq!(m.last_rank(1_000_000), Some(0));
        assert_eq!(m.generation(9, 3, 1, 500_000).unwrap().capacity, 1_000_000);
        // With growth, a busy slice's first may pass the share.
        let g = GensMeta::plan(
            8_000_000,
            1e-4,
            512,
            7,
            KeySpec::RAW,
            Some(Growth {
                factor: 2,
                ratio: 0.8,
            }),
            Some(w),
        )
        .unwrap();
        assert_eq!(g.next_first(3_000_000), 3_750_000);
        // Every live slice may reach its share, with the most slices too,
        // before the newest generation takes more than it is sized for.
        for slices in [8, 32] {
            let w = Window {
                secs: 8 * 3600,
                slices,
            };
            let m = GensMeta::plan(8_000_000, 1e-4, 512, 7, KeySpec::RAW, None, Some(w)).unwrap();
            let all = w.live() as usize * (m.last_rank(0).unwrap() as usize + 1);
            assert!(m.max_live() >= all, "{slices}: {} < {all}", m.max_live());
        }
        // A meta value from before slices started small reads as starting
        // at the share: one generation a slice, at its whole rate.
        let mut v = m.encode();
        v[104..108].copy_from_slice(&0u32.to_le_bytes());
        let sum = xxhash_rust::xxh3::xxh3_64(&v[..SUM_AT]);
        v[SUM_AT..SUM_AT + 8].copy_from_slice(&sum.to_le_bytes());
        let old = GensMeta::decode(&loc, &v).unwrap();
        assert_eq!((old.start, old.last_rank(0)), (1, None));
        assert_eq!(old.next_first(3_000_000), 1_000_000);
        assert_eq!(old.first_first(), 1_000_000);
        let g = old.generation(0, 2, 0, 0).unwrap();
        assert_eq!(g.capacity, 1_000_000);
        assert!((g.rate - 1e-4 / 9.0).abs() < 1e-15);
    }

    #[test]
    fn a_generation_field_says_its_slice_rank_and_first_size() {
        let loc = crate::redis::Location::parse("redis://h/x").unwrap();
        let hash = |fields: &[(&str, &str)]| {
            redis::Value::Array(
                fields
                    .iter()
                    .flat_map(|(k, v)| [*k, *v])
                    .map(|b| redis::Value::BulkString(b.as_bytes().to_vec()))
                    .collect(),
            )
        };
        // A field from before slices started lower has two numbers: its
        // first size reads as 0 (the meta's default).
        let s = GensState::read(
            &hash(&[
                ("top", "4"),
                ("g:3", "7 0"),
                ("g:4", "8 0 96990"),
                ("clock", "9"),
            ]),
            &loc,
        )
        .unwrap();
        assert_eq!(s.gens, [(3, 7, 0, 0), (4, 8, 0, 96_990)]);
        assert_eq!(s.newest(), (4, 8, 0, 96_990));
        for bad in ["8 0 x", "8 0 0", "8"] {
            let e = GensState::read(&hash(&[("g:4", bad)]), &loc).unwrap_err();
            assert!(e.to_string().contains("damaged"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_line_keeps_its_slot_in_every_generation() {
        let m = meta(None);
        let loc = crate::redis::Location::parse("redis+cluster://h:1/x").unwrap();
        let mut rng = 1u64;
        for _ in 0..1000 {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
            let h = Hash128 {
                lo: rng,
                hi: rng.rotate_left(17),
            };
            let top = m.top_key(&loc, m.group_of(h));
            let want = super::super::slot::slot(top.as_bytes());
            for r in 0..6 {
                let g = m.generation(u64::from(r), 0, r, 0).unwrap();
                let k = m.set_key(&loc, &g, h);
                assert_eq!(super::super::slot::slot(k.as_bytes()), want, "{k} {top}");
            }
        }
    }
}
