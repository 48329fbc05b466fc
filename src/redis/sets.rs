//! [`SetsFilter`]: the fingerprint-set layout of a Redis filter, whose cost
//! is per line, not per filter.
//!
//! A line's 128-bit hash chooses one of `sets` small Redis sets with its low
//! half, and gives a fingerprint with its high half (32 bits, or 64 for a
//! target rate below what 32 bits give). Keys (NAME from the location, GEN a
//! random tag chosen when the filter is made, so that a new filter never
//! adopts keys an older one left):
//! - `seen:{NAME}:meta`: what [`SetsMeta`] encodes; it begins as a format-3
//!   header does, so a `seen` without this layout refuses it as newer.
//! - `seen:{NAME}:count`: the counters, as for the Bloom layout.
//! - `seen:{NAME:j}:GEN`: set `j`, a Redis set of integers. Each has its own
//!   hash tag, so a Cluster spreads the sets over its slots and masters.
//!
//! The atomic step is `SADD set fingerprint`: it returns 1 to exactly one
//! writer, the one that recorded the line. A lookup is `SISMEMBER`. Nothing
//! is cached by the client: a run sends one command per line and keeps only
//! its batch in memory, whatever the filter's size. Sets are sized to stay
//! at or under the server's `set-max-intset-entries` (read when the filter is
//! made), so that Redis keeps each as a packed array of integers (an
//! `intset`, 4 bytes per 32-bit fingerprint) rather than a hash table.

use super::bitfield::{PART_KEYS, Parts};
use super::client::{Client, Failure, Routed, server_error, slot};
use super::journal::Journal;
use super::location::Location;
use crate::format::{HEADER_LEN, Header, MAGIC};
use crate::hash::Hash128;
use crate::keys::KeySpec;
use crate::pipeline::{Chunk, Journals, Store};
use anyhow::{Context, Result, anyhow, bail};
use redis::Value;

/// Marks the meta value of this layout (bytes 16..24).
const SETS_MAGIC: &[u8; 8] = b"SEENSETS";
/// The format major its meta value begins with: a reader without this
/// layout refuses it as a newer format, by name.
const SETS_MAJOR: u16 = 3;
/// Where the checksum of the meta value's first part sits.
const SUM_AT: usize = HEADER_LEN - 8;
/// The default of `set-max-intset-entries`, used when the server does not
/// say (its `CONFIG` command disabled or renamed).
pub(crate) const DEFAULT_INTSET_LIMIT: u64 = 512;
/// Share of the intset limit a set holds at the filter's capacity: sets
/// filled at random hold about this much each, the fullest of a million
/// sets about 1.3 times more, so a filter can take about 2.4 times its
/// capacity before its first set leaves the compact encoding.
const LOAD_SHARE: f64 = 0.4;
/// Fingerprints per set at least, when the target rate asks for fewer
/// (below that, 64-bit fingerprints cost less).
const MIN_LOAD: f64 = 32.0;

/// What the meta key of a filter in the fingerprint-set layout records.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SetsMeta {
    /// Hash seed.
    pub seed: u64,
    /// How records become keys.
    pub keys: KeySpec,
    /// Bits of a fingerprint: 32 or 64.
    pub fp_bits: u32,
    /// Distinct lines it was sized for.
    pub capacity: u64,
    /// False-positive rate at capacity it was sized for.
    pub target_fpp: f64,
    /// Creation time, Unix seconds.
    pub created: u64,
    /// Number of sets.
    pub sets: u64,
    /// The server's `set-max-intset-entries` when it was made.
    pub limit: u64,
    /// The tag of its set keys.
    pub tag: u32,
}

impl SetsMeta {
    /// Sizes a new filter for `capacity` lines at `target_fpp` (per lookup,
    /// at capacity) on a server whose sets stay compact up to `limit`
    /// entries.
    ///
    /// # Errors
    /// A capacity of 0, or a rate outside (0, 1).
    pub(crate) fn plan(
        capacity: u64,
        target_fpp: f64,
        limit: u64,
        seed: u64,
        keys: KeySpec,
    ) -> Result<SetsMeta> {
        if capacity == 0 || !(target_fpp > 0.0 && target_fpp < 1.0) {
            bail!("cannot size the filter: -n must be positive and -p in (0, 1)");
        }
        let full = (LOAD_SHARE * limit as f64).floor().max(1.0);
        let two32 = 2f64.powi(32);
        let (fp_bits, load) = if full / two32 <= target_fpp {
            (32, full)
        } else if target_fpp * two32 >= MIN_LOAD {
            (32, (target_fpp * two32).floor())
        } else {
            (64, full)
        };
        Ok(SetsMeta {
            seed,
            keys,
            fp_bits,
            capacity,
            target_fpp,
            created: crate::clock::system_secs(),
            sets: (capacity as f64 / load).ceil().max(1.0) as u64,
            limit,
            tag: fresh_tag(),
        })
    }

    /// The false-positive rate of a lookup when the sets hold `n`
    /// fingerprints in all: a lookup compares with the fingerprints of one
    /// set.
    pub(crate) fn fpp_with(&self, n: f64) -> f64 {
        (n / self.sets as f64 / 2f64.powi(self.fp_bits as i32)).min(1.0)
    }

    /// Fingerprints a set holds on average at capacity.
    pub(crate) fn planned_load(&self) -> f64 {
        self.capacity as f64 / self.sets as f64
    }

    /// Encodes the meta value (the same length as the Bloom layout's).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = vec![0u8; super::meta::META_LEN];
        let put = |v: &mut [u8], at: usize, b: &[u8]| v[at..at + b.len()].copy_from_slice(b);
        put(&mut v, 0, &MAGIC);
        put(&mut v, 8, &SETS_MAJOR.to_le_bytes());
        put(&mut v, 16, SETS_MAGIC);
        put(&mut v, 24, &self.seed.to_le_bytes());
        put(&mut v, 32, &self.keys.to_bits().to_le_bytes());
        put(&mut v, 36, &self.fp_bits.to_le_bytes());
        put(&mut v, 40, &self.capacity.to_le_bytes());
        put(&mut v, 48, &self.target_fpp.to_bits().to_le_bytes());
        put(&mut v, 56, &self.created.to_le_bytes());
        put(&mut v, 64, &self.sets.to_le_bytes());
        put(&mut v, 72, &self.limit.to_le_bytes());
        put(&mut v, 80, &self.tag.to_le_bytes());
        let sum = xxhash_rust::xxh3::xxh3_64(&v[..SUM_AT]);
        put(&mut v, SUM_AT, &sum.to_le_bytes());
        put(&mut v, HEADER_LEN, super::meta::META_MAGIC);
        v
    }

    /// Whether `v` is the meta value of this layout (then
    /// [`SetsMeta::decode`] says whether it is usable).
    pub(crate) fn marks(v: &[u8]) -> bool {
        v.len() >= 24 && v[..8] == MAGIC && v[16..24] == *SETS_MAGIC
    }

    /// Decodes a meta value of this layout.
    ///
    /// # Errors
    /// A damaged value (its checksum does not match, or a field is out of
    /// range), named with `loc`.
    pub(crate) fn decode(loc: &Location, v: &[u8]) -> Result<SetsMeta> {
        let damaged = |what: &str| {
            anyhow!(
                "{loc}: its meta key {} is damaged ({what}): the filter cannot be used; \
                 rebuild it under another name",
                loc.meta_key()
            )
        };
        if v.len() != super::meta::META_LEN {
            return Err(damaged(&format!("{} bytes", v.len())));
        }
        let u64_at = |at: usize| u64::from_le_bytes(v[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_le_bytes(v[at..at + 4].try_into().expect("4 bytes"));
        if u64_at(SUM_AT) != xxhash_rust::xxh3::xxh3_64(&v[..SUM_AT]) {
            return Err(damaged("its checksum does not match"));
        }
        let m = SetsMeta {
            seed: u64_at(24),
            keys: KeySpec::from_bits(u32_at(32)).map_err(|e| damaged(&e))?,
            fp_bits: u32_at(36),
            capacity: u64_at(40),
            target_fpp: f64::from_bits(u64_at(48)),
            created: u64_at(56),
            sets: u64_at(64),
            limit: u64_at(72),
            tag: u32_at(80),
        };
        if !matches!(m.fp_bits, 32 | 64) || m.sets == 0 || m.capacity == 0 {
            return Err(damaged("a field is out of range"));
        }
        Ok(m)
    }

    /// A header with this filter's seed, keys, sizing and times, and no
    /// layers (it has no bits), for what reads any filter's header.
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
            growth: None,
            layers: Vec::new(),
            window: None,
        }
    }
}

/// A tag for the keys of a new filter: different for every filter made
/// (the time in nanoseconds and the process, hashed).
fn fresh_tag() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut b = t.to_le_bytes().to_vec();
    b.extend_from_slice(&std::process::id().to_le_bytes());
    let local = 0u8;
    b.extend_from_slice(&(std::ptr::addr_of!(local) as usize).to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&b) as u32
}

/// Names the sets of a filter and places a line's fingerprint in one.
pub(crate) struct SetKeys {
    /// `seen:{NAME:`
    head: Vec<u8>,
    /// `}:GEN`
    tail: Vec<u8>,
    sets: u64,
    fp_bits: u32,
}

impl SetKeys {
    /// The sets of the filter `meta` describes at `loc`.
    pub(crate) fn new(loc: &Location, meta: &SetsMeta) -> SetKeys {
        SetKeys {
            head: format!("seen:{{{}:", loc.name).into_bytes(),
            tail: format!("}}:{:08x}", meta.tag).into_bytes(),
            sets: meta.sets,
            fp_bits: meta.fp_bits,
        }
    }

    /// The set a key goes to (from the low half of its hash).
    pub(crate) fn set_of(&self, h: Hash128) -> u64 {
        ((u128::from(h.lo) * u128::from(self.sets)) >> 64) as u64
    }

    /// Its fingerprint (from the high half), as the signed integer Redis
    /// stores: a 32-bit one fits an intset's 4-byte encoding.
    pub(crate) fn fingerprint(&self, h: Hash128) -> i64 {
        if self.fp_bits == 32 {
            i64::from((h.hi >> 32) as u32 as i32)
        } else {
            h.hi as i64
        }
    }

    /// Writes the name of set `j` into `out` (cleared first).
    pub(crate) fn name_into(&self, j: u64, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.head);
        out.extend_from_slice(itoa(j as i128, &mut [0; 40]));
        out.extend_from_slice(&self.tail);
    }

    /// The name of set `j`.
    pub(crate) fn name(&self, j: u64) -> String {
        let mut b = Vec::new();
        self.name_into(j, &mut b);
        String::from_utf8(b).expect("ASCII")
    }

    /// `VERB set-of-h fingerprint-of-h` as RESP, for the node of its slot.
    pub(crate) fn command(&self, verb: &[u8], h: Hash128, key: &mut Vec<u8>) -> Routed {
        self.name_into(self.set_of(h), key);
        let mut digits = [0u8; 40];
        let fp = itoa(i128::from(self.fingerprint(h)), &mut digits);
        let mut b = Vec::with_capacity(32 + key.len() + fp.len());
        b.extend_from_slice(b"*3\r\n$");
        b.extend_from_slice(itoa(verb.len() as i128, &mut [0; 40]));
        b.extend_from_slice(b"\r\n");
        b.extend_from_slice(verb);
        b.extend_from_slice(b"\r\n$");
        b.extend_from_slice(itoa(key.len() as i128, &mut [0; 40]));
        b.extend_from_slice(b"\r\n");
        b.extend_from_slice(key);
        b.extend_from_slice(b"\r\n$");
        b.extend_from_slice(itoa(fp.len() as i128, &mut [0; 40]));
        b.extend_from_slice(b"\r\n");
        b.extend_from_slice(fp);
        b.extend_from_slice(b"\r\n");
        Routed {
            slot: slot(key),
            packed: b,
        }
    }
}

/// `n` in decimal, written at the end of `buf`.
fn itoa(n: i128, buf: &mut [u8; 40]) -> &[u8] {
    let mut at = buf.len();
    let mut m = n.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// Reads the server's `set-max-intset-entries` (on the node of the meta
/// key); `None` when it does not say (`CONFIG` disabled or renamed).
pub(super) fn intset_limit(client: &mut Client, loc: &Location) -> Option<u64> {
    let v = client
        .query(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("CONFIG")
                .arg("GET")
                .arg("set-max-intset-entries")
                .clone(),
        )
        .ok()?;
    let text = |v: &Value| match v {
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    };
    match v {
        Value::Array(items) if items.len() == 2 => text(&items[1]),
        Value::Map(items) => items.first().and_then(|(_, v)| text(v)),
        _ => None,
    }
}

/// A filter in the fingerprint-set layout, open for a run.
pub(crate) struct SetsFilter {
    client: Client,
    meta: SetsMeta,
    meta_bytes: Vec<u8>,
    keys: SetKeys,
    header: Header,
    /// Lines this run recorded as new, not yet added to the counters.
    added: u64,
    /// Lines recorded as new by every writer: the counters as read, plus
    /// this run's.
    inserts: u64,
    /// The counters as the run found them.
    opened_with: u64,
    /// Set when a reply was lost: the run stops at its next batch.
    broken: Option<anyhow::Error>,
    write: bool,
    journal: Option<Journal>,
    /// A new filter (`build -o`) whose meta key is written when the run
    /// went well: whether it replaces one there.
    pending: Option<bool>,
}

impl SetsFilter {
    /// The filter whose meta (decoded, and as stored) and counters were
    /// read on `client`.
    pub(super) fn assemble(
        client: Client,
        meta: SetsMeta,
        meta_bytes: Vec<u8>,
        header: Header,
        write: bool,
    ) -> SetsFilter {
        let keys = SetKeys::new(client.location(), &meta);
        SetsFilter {
            client,
            meta,
            meta_bytes,
            keys,
            header,
            added: 0,
            inserts: 0,
            opened_with: 0,
            broken: None,
            write,
            journal: None,
            pending: None,
        }
    }

    /// Makes the filter `meta` describes at `loc` unless one is there (its
    /// meta key is written with `SET NX`: two creators race, one wins, and
    /// the other uses the winner's). Returns the meta stored, and whether
    /// this run made it.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(super) fn create(client: &mut Client, meta: &SetsMeta) -> Result<(Vec<u8>, bool)> {
        let loc = client.location().clone();
        let bytes = meta.encode();
        let v = client.query_once(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("SET")
                .arg(loc.meta_key())
                .arg(&bytes)
                .arg("NX")
                .clone(),
        )?;
        if let Some(e) = server_error("SET of the meta key", &loc, &v) {
            return Err(e);
        }
        Ok((bytes, v == Value::Okay))
    }

    /// A new filter for `build -o`: its sets are filled under a fresh tag,
    /// and its meta key is written only when the run went well
    /// ([`Held::finish`](crate::store)), replacing one there with `replace`.
    pub(super) fn new_pending(client: Client, meta: SetsMeta, replace: bool) -> SetsFilter {
        let header = meta.header();
        let bytes = meta.encode();
        let mut f = SetsFilter::assemble(client, meta, bytes, header, true);
        f.pending = Some(replace);
        f
    }

    /// What the meta key records.
    pub(crate) fn meta(&self) -> &SetsMeta {
        &self.meta
    }

    /// The header (seed, keys, sizing, counters; no layers).
    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// Where it lives.
    pub(crate) fn location(&self) -> &Location {
        self.client.location()
    }

    /// Whether this run records lines.
    pub(crate) fn writes(&self) -> bool {
        self.write
    }

    /// Sets the lines recorded as new (the counters as read).
    pub(crate) fn set_inserts(&mut self, n: u64) {
        self.inserts = n;
        self.opened_with = n;
    }

    /// The false positives expected among `new` lines this run judged new
    /// (each was compared with its set's fingerprints; the sets held, on
    /// average, what they held between the run's start and now), and the
    /// rate of a lookup now.
    pub(crate) fn run_rates(&self, new: u64) -> (f64, f64) {
        let during = (self.opened_with + self.inserts) as f64 / 2.0;
        (
            new as f64 * self.meta.fpp_with(during),
            self.meta.fpp_with(self.inserts as f64),
        )
    }

    /// See `RedisFilter::journal`.
    ///
    /// # Errors
    /// As there.
    pub(crate) fn journal(
        &mut self,
        term: u8,
        out: &mut dyn std::io::Write,
    ) -> Result<(u64, std::path::PathBuf)> {
        let dir = super::journal::dir_for(&self.location().name, &self.meta_bytes)?;
        let replayed = Journal::replay(&dir, term, out)?;
        self.journal = Some(Journal::start(&dir)?);
        Ok((replayed, dir))
    }

    /// The run's output was closed by its reader.
    pub(crate) fn output_lost(&mut self) {
        if let Some(j) = &mut self.journal {
            j.retract_recent();
        }
    }

    /// Ends the run: the journal removed when it went well (`ok`), kept
    /// otherwise; the counters added to; a pending new filter put in place
    /// (or its sets removed). Returns the header as the run left it.
    ///
    /// # Errors
    /// The failure that stopped the run's test-and-sets, a failed commit,
    /// or a new filter that could not be put in place.
    pub(crate) fn finish(&mut self, ok: bool) -> Result<Option<Header>> {
        let broken = self.broken.take();
        if let Some(j) = self.journal.take() {
            if ok && broken.is_none() {
                j.close();
            } else {
                j.keep();
            }
        }
        if let Some(replace) = self.pending {
            if !ok || broken.is_some() {
                let _ = self.unlink_sets(self.meta.tag);
                return broken.map_or(Ok(None), Err);
            }
            self.put_in_place(replace)?;
            return Ok(Some(self.header.clone()));
        }
        let committed = self.commit();
        if let Some(e) = broken {
            return Err(e);
        }
        committed?;
        Ok(ok.then(|| self.header.clone()))
    }

    /// Adds this run's new lines to the shared counters, and checks that
    /// the filter is still the one it opened.
    fn commit(&mut self) -> Result<()> {
        if !self.write {
            return Ok(());
        }
        let total = super::meta::add_counts(
            &mut self.client,
            0,
            self.added,
            self.meta.capacity,
            &self.meta_bytes,
            "its sets fill toward set-max-intset-entries (at about 2.4 times its capacity the \
             fullest pass it and take 15 times the memory), and its false-positive rate grows \
             with them (`seen stats` shows both)",
        )?;
        self.added = 0;
        self.header.updated = total.1;
        Ok(())
    }

    /// Writes the meta key and counters of a new filter (`build -o`) once
    /// its sets hold its lines; with `replace`, the filter there first
    /// loses its meta key, then its data.
    fn put_in_place(&mut self, replace: bool) -> Result<()> {
        let loc = self.client.location().clone();
        let meta_slot = slot(loc.meta_key().as_bytes());
        let old = super::meta::read_any(&mut self.client, &loc)?;
        if old.is_some() && !replace {
            let _ = self.unlink_sets(self.meta.tag);
            bail!(
                "{loc} was made by another process while this one was being built: run again \
                 with --force to replace it"
            );
        }
        if let Some(old) = old {
            super::meta::delete(&mut self.client, &loc, old)?;
        }
        let t = crate::clock::system_secs();
        let cmds = vec![
            Routed::new(
                meta_slot,
                redis::cmd("HSET")
                    .arg(loc.count_key())
                    .arg("inserts:0")
                    .arg(self.added)
                    .arg("updated")
                    .arg(t),
            ),
            Routed::new(
                meta_slot,
                redis::cmd("SET")
                    .arg(loc.meta_key())
                    .arg(&self.meta_bytes)
                    .arg("NX"),
            ),
        ];
        let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
        for v in &replies {
            if let Some(e) = server_error("storing the meta key", &loc, v) {
                return Err(e);
            }
        }
        if replies.last() != Some(&Value::Okay) {
            let _ = self.unlink_sets(self.meta.tag);
            bail!(
                "{loc} was made by another process while this one was being built: run again \
                 with --force to replace it"
            );
        }
        self.header.updated = t;
        self.added = 0;
        self.client.wait_replicas(&format!(
            " (the filter is stored: check it with `seen verify {loc}`)"
        ))
    }

    /// Removes every set of tag `tag` (a failed `build -o`'s, or a replaced
    /// filter's), `UNLINK`ed in pipelines of 4096.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(crate) fn unlink_sets(&mut self, tag: u32) -> Result<()> {
        let mut meta = self.meta.clone();
        meta.tag = tag;
        let keys = SetKeys::new(self.client.location(), &meta);
        unlink_all(&mut self.client, &keys, meta.sets)
    }

    /// Runs `verb` (`SCARD`, `OBJECT ENCODING`) on every set, `per` calls
    /// at a time, handing each group's replies (with the first set's
    /// number) to `each`.
    ///
    /// # Errors
    /// A lost connection, or what `each` returns.
    pub(crate) fn for_every_set(
        &mut self,
        verb: &[&str],
        each: &mut dyn FnMut(u64, Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let per = 4096u64;
        let mut start = 0;
        while start < self.meta.sets {
            let end = (start + per).min(self.meta.sets);
            let cmds = (start..end)
                .map(|j| {
                    let name = self.keys.name(j);
                    let mut c = redis::cmd(verb[0]);
                    for v in &verb[1..] {
                        c.arg(*v);
                    }
                    Routed::new(slot(name.as_bytes()), c.arg(name))
                })
                .collect();
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            each(start, replies)?;
            start = end;
        }
        Ok(())
    }

    /// The test-and-set of a batch: `SADD` of each key's fingerprint into
    /// its set, in parts of [`PART_KEYS`] keys pipelined to every node, the
    /// next part sent before the replies of the one before are read. A key
    /// is new when its `SADD` returned 1. Failures are handled as by the
    /// Bloom layout's (`RedisFilter::test_and_set`): a part whose replies
    /// are lost counts its keys as new, the parts after it are not sent.
    ///
    /// # Errors
    /// When nothing could be sent: nothing was recorded.
    fn test_and_set(&mut self, hashes: &[Hash128], out: &mut [bool]) -> Result<u64> {
        let mut new = vec![false; hashes.len()];
        let mut t = Parts::default();
        let mut key = Vec::new();
        let mut sent_any = false;
        for start in (0..hashes.len()).step_by(PART_KEYS) {
            let end = (start + PART_KEYS).min(hashes.len());
            if t.failed.is_some() {
                out[start..].fill(true);
                break;
            }
            let cmds: Vec<Routed> = (start..end)
                .map(|i| self.keys.command(b"SADD", hashes[i], &mut key))
                .collect();
            let owners: Vec<Vec<u32>> = (start..end).map(|i| vec![i as u32]).collect();
            match self.client.send(cmds) {
                Ok(sent) => {
                    sent_any = true;
                    t.in_flight.push_back((sent, owners));
                }
                Err(Failure::NotSent(e)) => {
                    if !sent_any {
                        return Err(e);
                    }
                    out[start..].fill(true);
                    t.fail(e, &mut new);
                    break;
                }
                Err(Failure::Lost(e)) => {
                    t.mark(&owners, &mut new);
                    t.fail(e, &mut new);
                    out[end..].fill(true);
                    break;
                }
            }
            while t.in_flight.len() > 1 {
                t.settle_front(&mut self.client, &mut new);
            }
        }
        while !t.in_flight.is_empty() {
            t.settle_front(&mut self.client, &mut new);
        }
        if let Some(e) = t.failed {
            self.broken = Some(e.context(
                "a test-and-set failed: the lines it may have recorded were all taken as new \
                 (some may be printed twice)",
            ));
        } else if sent_any
            && let Err(e) = self
                .client
                .wait_replicas(" (and their lines would be printed again)")
        {
            self.broken = Some(e);
        }
        let mut count = 0;
        for (i, was_new) in new.iter().enumerate() {
            if !out[i] {
                out[i] = !was_new;
                count += u64::from(*was_new);
            }
        }
        Ok(count)
    }
}

/// What the sets of a filter hold, counted with `SCARD` (for `stats`).
#[derive(Clone, Debug)]
pub(crate) struct Census {
    /// What the meta key records.
    pub meta: SetsMeta,
    /// Lines recorded as new (the counters).
    pub inserts: u64,
    /// Time of the last change (the counters).
    pub updated: u64,
    /// The name of set 0, as a pattern for the rest.
    pub first_set: String,
    /// Fingerprints over all sets.
    pub fingerprints: u64,
    /// The fullest set's.
    pub max_load: u64,
    /// Sets at 90 % or more of the intset limit, not past it.
    pub near: u64,
    /// Sets past it (kept as hash tables: about 15 times the memory).
    pub past: u64,
    /// Sets with nothing in them (never written, or emptied).
    pub empty: u64,
    /// Keys that are not sets (damage: another program wrote there).
    pub wrong: u64,
}

impl SetsFilter {
    /// Counts every set's fingerprints (`SCARD`, pipelined), telling
    /// `progress` the sets counted.
    ///
    /// # Errors
    /// A server that cannot be reached.
    pub(crate) fn census(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Census> {
        let mut c = Census {
            meta: self.meta.clone(),
            inserts: self.inserts,
            updated: self.header.updated,
            first_set: self.keys.name(0),
            fingerprints: 0,
            max_load: 0,
            near: 0,
            past: 0,
            empty: 0,
            wrong: 0,
        };
        let limit = self.meta.limit;
        self.for_every_set(&["SCARD"], &mut |_, replies| {
            progress(replies.len() as u64);
            for v in replies {
                match v {
                    Value::Int(n) => {
                        let n = u64::try_from(n).unwrap_or(0);
                        c.fingerprints += n;
                        c.max_load = c.max_load.max(n);
                        c.empty += u64::from(n == 0);
                        c.past += u64::from(n > limit);
                        c.near += u64::from(n <= limit && n * 10 >= limit * 9);
                    }
                    _ => c.wrong += 1,
                }
            }
            Ok(())
        })?;
        Ok(c)
    }

    /// Checks every set's encoding (`OBJECT ENCODING`, pipelined): an
    /// intset or nothing is well; a set kept as a hash table answers right
    /// but lost its compact form; a key of another type is damage. Returns
    /// the sets found wrong, each with what is wrong and whether it is
    /// damage.
    ///
    /// # Errors
    /// A server that cannot be reached.
    pub(crate) fn check_sets(&mut self) -> Result<Vec<(String, String, bool)>> {
        let mut bad = Vec::new();
        let names = SetKeys::new(self.client.location(), &self.meta);
        self.for_every_set(&["OBJECT", "ENCODING"], &mut |start, replies| {
            for (i, v) in replies.into_iter().enumerate() {
                let name = || names.name(start + i as u64);
                match v {
                    Value::Nil => {}
                    Value::BulkString(e) if e == b"intset" => {}
                    Value::BulkString(e) if e == b"hashtable" || e == b"listpack" => bad.push((
                        name(),
                        format!(
                            "is kept as a {} (past set-max-intset-entries, or a member that is \
                             not a fingerprint): it answers right but takes about 15 times the \
                             memory",
                            String::from_utf8_lossy(&e)
                        ),
                        false,
                    )),
                    Value::BulkString(e) => bad.push((
                        name(),
                        format!(
                            "is not a set (its encoding is {}): another program wrote there",
                            String::from_utf8_lossy(&e)
                        ),
                        true,
                    )),
                    other => bad.push((name(), format!("cannot be read: {other:?}"), true)),
                }
            }
            Ok(())
        })?;
        Ok(bad)
    }
}

/// `UNLINK`s sets `0..sets` named by `keys`.
fn unlink_all(client: &mut Client, keys: &SetKeys, sets: u64) -> Result<()> {
    let loc = client.location().clone();
    let mut start = 0;
    while start < sets {
        let end = (start + 4096).min(sets);
        let cmds = (start..end)
            .map(|j| {
                let name = keys.name(j);
                Routed::new(slot(name.as_bytes()), redis::cmd("UNLINK").arg(name))
            })
            .collect();
        for v in client.exec(cmds).map_err(Failure::into_error)? {
            if let Some(e) = server_error("UNLINK of a set", &loc, &v) {
                return Err(e);
            }
        }
        start = end;
    }
    Ok(())
}

/// Deletes the sets of the filter whose meta value is `meta`.
///
/// # Errors
/// A server error or a lost connection.
pub(super) fn delete_sets(client: &mut Client, meta: &SetsMeta) -> Result<()> {
    let keys = SetKeys::new(client.location(), meta);
    unlink_all(client, &keys, meta.sets)
}

impl Store for SetsFilter {
    fn seed(&self) -> u64 {
        self.meta.seed
    }

    /// `SISMEMBER` per key, pipelined in parts of [`PART_KEYS`].
    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        if let Some(e) = self.broken.take() {
            return Err(e);
        }
        out.clear();
        let loc = self.client.location().clone();
        let mut key = Vec::new();
        for part in hashes.chunks(PART_KEYS) {
            let cmds = part
                .iter()
                .map(|&h| self.keys.command(b"SISMEMBER", h, &mut key))
                .collect();
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            for v in replies {
                match v {
                    Value::Int(n) => out.push(n == 1),
                    other => {
                        return Err(server_error("SISMEMBER", &loc, &other)
                            .unwrap_or_else(|| anyhow!("{loc}: unexpected SISMEMBER reply")));
                    }
                }
            }
        }
        Ok(())
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        out.clear();
        out.resize(hashes.len(), false);
        if self.broken.is_some() && self.journal.is_none() {
            return Err(self.broken.take().expect("checked"));
        }
        if self.broken.is_some() {
            // Stopping at the next chunk: nothing more is sent or judged new.
            out.fill(true);
            if let Some(j) = &mut self.journal {
                j.verdicts(out.iter().map(|_| false));
            }
            return Ok(0);
        }
        let done = self.test_and_set(hashes, out);
        if let Some(j) = &mut self.journal {
            let judged = done.is_ok();
            j.verdicts(out.iter().map(|&present| judged && !present));
        }
        let n = done?;
        self.added += n;
        self.inserts += n;
        Ok(n)
    }

    fn journals(&mut self) -> Option<&mut dyn Journals> {
        if self.journal.is_some() {
            Some(self)
        } else {
            None
        }
    }
}

/// As the Bloom layout's: the lines judged new are kept until written.
impl Journals for SetsFilter {
    fn judging(&mut self, chunk: &Chunk) -> Result<()> {
        if let Some(e) = self.broken.take() {
            return Err(e);
        }
        match &mut self.journal {
            Some(j) => j.chunk(chunk.records_bytes()),
            None => Ok(()),
        }
    }

    fn written(&mut self, new: Option<usize>) -> Result<()> {
        match &mut self.journal {
            Some(j) => j.written(new),
            None => Ok(()),
        }
    }
}

/// The counters of a filter of this layout: lines recorded as new, with
/// the time of the last change read into `header`.
pub(super) fn read_counters(
    client: &mut Client,
    loc: &Location,
    header: &mut Header,
) -> Result<u64> {
    let v = client
        .query(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("HGETALL").arg(loc.count_key()).clone(),
        )
        .context("cannot read the counters")?;
    let mut inserts = 0u64;
    super::meta::each_count(&v, &mut |k, n| {
        if k == b"updated" {
            header.updated = n;
        } else if k == b"inserts:0" {
            inserts = n;
        }
    });
    Ok(inserts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(capacity: u64, p: f64, limit: u64) -> SetsMeta {
        SetsMeta::plan(capacity, p, limit, 7, KeySpec::RAW).unwrap()
    }

    #[test]
    fn sizing_keeps_sets_compact_at_the_rate_asked() {
        // 100M lines at 1e-6 on a default server: 32-bit fingerprints,
        // 204 a set, about 4.8e-8 per lookup.
        let m = meta(100_000_000, 1e-6, 512);
        assert_eq!((m.fp_bits, m.sets), (32, 490_197));
        assert!(m.planned_load() <= 0.4 * 512.0);
        let at_capacity = m.fpp_with(m.capacity as f64);
        assert!(at_capacity < 5e-8 && at_capacity > 4e-8, "{at_capacity}");
        // A rate 32 bits give with fewer per set: more sets.
        let m = meta(1_000_000, 2e-8, 512);
        assert_eq!(m.fp_bits, 32);
        assert_eq!(m.planned_load(), 1_000_000.0 / m.sets as f64);
        assert!(m.fpp_with(1e6) <= 2e-8, "{}", m.fpp_with(1e6));
        // Below what 32 bits give: 64-bit fingerprints.
        let m = meta(1_000_000, 1e-12, 512);
        assert_eq!(m.fp_bits, 64);
        assert!(m.fpp_with(1e6) <= 1e-12);
        // A server that keeps smaller sets compact gets more of them.
        assert!(meta(1_000_000, 1e-6, 128).sets > 3 * meta(1_000_000, 1e-6, 512).sets);
        assert!(SetsMeta::plan(0, 1e-6, 512, 0, KeySpec::RAW).is_err());
        assert!(SetsMeta::plan(10, 1.0, 512, 0, KeySpec::RAW).is_err());
    }

    #[test]
    fn meta_round_trips_and_damage_is_named() {
        let loc = Location::parse("redis://127.0.0.1:1/f").unwrap();
        let m = meta(12_345, 1e-6, 512);
        let v = m.encode();
        assert!(SetsMeta::marks(&v));
        assert_eq!(SetsMeta::decode(&loc, &v).unwrap(), m);
        let mut bad = v.clone();
        bad[41] ^= 1;
        let e = SetsMeta::decode(&loc, &bad).unwrap_err().to_string();
        assert!(e.contains("checksum"), "{e}");
        // A reader of the Bloom layout's header refuses it as a newer format.
        let e = Header::decode(&v[..HEADER_LEN], HEADER_LEN as u64)
            .unwrap_err()
            .to_string();
        assert!(e.contains("3.0") && e.contains("newer"), "{e}");
    }

    #[test]
    fn commands_are_packed_as_redis_cmd_packs_them() {
        let loc = Location::parse("redis://127.0.0.1:1/crawl").unwrap();
        let m = meta(1_000_000, 1e-6, 512);
        let keys = SetKeys::new(&loc, &m);
        let mut key = Vec::new();
        for h in [
            Hash128 { lo: 0, hi: 0 },
            Hash128 {
                lo: u64::MAX,
                hi: u64::MAX,
            },
            crate::hash::hash(b"https://example.com/", 7),
        ] {
            let r = keys.command(b"SADD", h, &mut key);
            let j = keys.set_of(h);
            assert!(j < m.sets);
            let fp = keys.fingerprint(h);
            assert!(i64::from(i32::MIN) <= fp && fp <= i64::from(i32::MAX));
            let want = redis::cmd("SADD")
                .arg(keys.name(j))
                .arg(fp)
                .get_packed_command();
            assert_eq!(r.packed, want);
            assert_eq!(r.slot, slot(keys.name(j).as_bytes()));
        }
        assert_eq!(keys.name(42), format!("seen:{{crawl:42}}:{:08x}", m.tag));
    }

    #[test]
    fn sets_spread_evenly() {
        // 200,000 keys into 1,000 sets: the fullest holds well under the
        // 2.5-fold headroom sizing counts on.
        let loc = Location::parse("redis://127.0.0.1:1/f").unwrap();
        let m = meta(200_000, 1e-6, 512);
        let keys = SetKeys::new(&loc, &m);
        let mut load = vec![0u32; m.sets as usize];
        for i in 0..200_000u32 {
            load[keys.set_of(crate::hash::hash(&i.to_le_bytes(), 7)) as usize] += 1;
        }
        let max = *load.iter().max().unwrap() as f64;
        assert!(
            max < 1.5 * m.planned_load(),
            "{max} vs {}",
            m.planned_load()
        );
    }
}
