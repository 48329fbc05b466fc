//! The fingerprint-set layout's names and numbers: what its meta key
//! records ([`SetsMeta`]: sizing from the server's intset limit, the meta
//! value's codec), where a line goes ([`SetKeys`]: its set, its
//! fingerprint, the command packed by hand), and the server's limit
//! read and the sets removed. The filter itself is `sets.rs`'s.

use super::client::{Client, Failure, Routed, server_error};
use super::location::{Location, META_LEN, META_MAGIC};
use super::slot::slot;
use crate::format::{HEADER_LEN, Header, MAGIC};
use crate::hash::Hash128;
use crate::keys::KeySpec;
use anyhow::{Result, anyhow, bail};
use redis::Value;

/// Marks the meta value of this layout (bytes 16..24).
const SETS_MAGIC: &[u8; 8] = b"SEENSETS";
/// Marks it once the filter has forgotten keys (`seen forget`): seen 0.3,
/// which does not apply forget lists, does not take it for this layout and
/// refuses it as a newer format rather than answer forgotten keys present.
const LISTS_MAGIC: &[u8; 8] = b"SEENSETL";
/// The format major its meta value begins with: a reader without this
/// layout refuses it as a newer format, by name.
const SETS_MAJOR: u16 = 3;
/// The format major of a marked meta value ([`LISTS_MAGIC`]), with the
/// length it gives as a file: seen 0.3 reads it as a filter header of a
/// newer format and says it needs a newer seen.
const LISTS_MAJOR: u16 = 4;
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
    /// Whether it may have forget lists (marked by the first `forget`).
    pub lists: bool,
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
        let (fp_bits, sets) = size_sets(capacity, target_fpp, limit)?;
        Ok(SetsMeta {
            seed,
            keys,
            fp_bits,
            capacity,
            target_fpp,
            created: crate::clock::system_secs(),
            sets,
            limit,
            tag: fresh_tag(),
            lists: false,
        })
    }

    /// The false-positive rate of a lookup when the sets hold `n`
    /// fingerprints in all: a lookup compares with the fingerprints of one
    /// set.
    pub(crate) fn fpp_with(&self, n: f64) -> f64 {
        (n / self.sets as f64 / 2f64.powi(self.fp_bits as i32)).min(1.0)
    }

    /// The field of the count key (`seen:{NAME}:count`) that counts this
    /// filter's lines: named with its tag, so that a filter made again
    /// under the same name (its meta key lost) starts from 0 rather than
    /// from the old one's count.
    pub(crate) fn count_field(&self) -> String {
        format!("lines:{:08x}", self.tag)
    }

    /// Fingerprints a set holds on average at capacity.
    pub(crate) fn planned_load(&self) -> f64 {
        self.capacity as f64 / self.sets as f64
    }

    /// Encodes the meta value (the same length as the Bloom layout's).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = vec![0u8; META_LEN];
        let put = |v: &mut [u8], at: usize, b: &[u8]| v[at..at + b.len()].copy_from_slice(b);
        put(&mut v, 0, &MAGIC);
        let major = if self.lists { LISTS_MAJOR } else { SETS_MAJOR };
        put(&mut v, 8, &major.to_le_bytes());
        put(
            &mut v,
            16,
            if self.lists { LISTS_MAGIC } else { SETS_MAGIC },
        );
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
        put(&mut v, HEADER_LEN, META_MAGIC);
        if self.lists {
            put(&mut v, HEADER_LEN + 16, &(HEADER_LEN as u64).to_le_bytes());
        }
        v
    }

    /// Whether `v` is the meta value of this layout (then
    /// [`SetsMeta::decode`] says whether it is usable).
    pub(crate) fn marks(v: &[u8]) -> bool {
        v.len() >= 24 && v[..8] == MAGIC && (v[16..24] == *SETS_MAGIC || v[16..24] == *LISTS_MAGIC)
    }

    /// The meta value as it was before the first `forget` marked it: what
    /// names the filter for journals and counters, the same before and
    /// after.
    pub(crate) fn identity(&self) -> Vec<u8> {
        SetsMeta {
            lists: false,
            ..self.clone()
        }
        .encode()
    }

    /// The key of the bitmap of sets whose forget lists may hold keys (bit
    /// `j`, as `SETBIT` numbers bits, for set `j`), in the meta key's slot.
    pub(crate) fn lists_key(&self, loc: &Location) -> String {
        format!("seen:{{{}}}:lists:{:08x}", loc.name, self.tag)
    }

    /// The fields of the count key that count the keys forget runs listed
    /// and the keys writers took off the lists (recorded again): while the
    /// first exceeds the second, writers check the lists.
    pub(crate) fn list_fields(&self) -> [String; 2] {
        [
            format!("forgets:{:08x}", self.tag),
            format!("unforgets:{:08x}", self.tag),
        ]
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
        if v.len() != META_LEN {
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
            lists: v[16..24] == *LISTS_MAGIC,
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
            forget: None,
        }
    }
}

/// The fingerprint bits and number of sets for `capacity` lines at
/// `target_fpp` (per lookup, at capacity) on a server whose sets stay
/// compact up to `limit` entries: sets filled to [`LOAD_SHARE`] of the
/// limit, or fewer lines a set (down to [`MIN_LOAD`]) for a lower rate,
/// then 64-bit fingerprints.
///
/// # Errors
/// A capacity of 0, or a rate outside (0, 1).
pub(crate) fn size_sets(capacity: u64, target_fpp: f64, limit: u64) -> Result<(u32, u64)> {
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
    Ok((fp_bits, (capacity as f64 / load).ceil().max(1.0) as u64))
}

/// A tag for the keys of a new filter: different for every filter made
/// (the time in nanoseconds and the process, hashed).
pub(crate) fn fresh_tag() -> u32 {
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

    /// Writes the name of set `j`'s forget list into `out`: the set's name
    /// and `:f`, in the set's hash slot, so one node answers for both.
    pub(crate) fn list_name_into(&self, j: u64, out: &mut Vec<u8>) {
        self.name_into(j, out);
        out.extend_from_slice(b":f");
    }

    /// The name of set `j`'s forget list.
    pub(crate) fn list_name(&self, j: u64) -> String {
        let mut b = Vec::new();
        self.list_name_into(j, &mut b);
        String::from_utf8(b).expect("ASCII")
    }

    /// `VERB list-of-h hash-of-h` as RESP: the forget list of `h`'s set,
    /// and its whole 128-bit hash (16 bytes) as the member, so that a key
    /// forgotten never takes another key that shares its fingerprint.
    pub(crate) fn list_command(&self, verb: &[u8], h: Hash128, key: &mut Vec<u8>) -> Routed {
        self.list_name_into(self.set_of(h), key);
        let mut member = [0u8; 16];
        member[..8].copy_from_slice(&h.hi.to_le_bytes());
        member[8..].copy_from_slice(&h.lo.to_le_bytes());
        pack3(verb, key, &member)
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
        pack3(verb, key, fp)
    }
}

/// `VERB KEY ARG` as RESP, routed to `KEY`'s slot.
fn pack3(verb: &[u8], key: &[u8], arg: &[u8]) -> Routed {
    let mut b = Vec::with_capacity(32 + key.len() + arg.len());
    for (i, part) in [verb, key, arg].into_iter().enumerate() {
        b.extend_from_slice(if i == 0 { b"*3\r\n$" } else { b"$" });
        b.extend_from_slice(itoa(part.len() as i128, &mut [0; 40]));
        b.extend_from_slice(b"\r\n");
        b.extend_from_slice(part);
        b.extend_from_slice(b"\r\n");
    }
    Routed {
        slot: slot(key),
        packed: b,
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

/// `UNLINK`s sets `0..sets` named by `keys`, their forget lists, and the
/// bitmap of lists `lists_key`.
pub(super) fn unlink_all(
    client: &mut Client,
    keys: &SetKeys,
    sets: u64,
    lists_key: &str,
) -> Result<()> {
    let loc = client.location().clone();
    let v = client.query(
        slot(lists_key.as_bytes()),
        redis::cmd("UNLINK").arg(lists_key).clone(),
    )?;
    if let Some(e) = server_error("UNLINK of the bitmap of forget lists", &loc, &v) {
        return Err(e);
    }
    let mut start = 0;
    while start < sets {
        let end = (start + 4096).min(sets);
        let cmds = (start..end)
            .map(|j| {
                let name = keys.name(j);
                let list = keys.list_name(j);
                Routed::new(
                    slot(name.as_bytes()),
                    redis::cmd("UNLINK").arg(name).arg(list),
                )
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
    let lists = meta.lists_key(client.location());
    unlink_all(client, &keys, meta.sets, &lists)
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
        // A reader of the Bloom layout's header refuses it: seen 0.2, which
        // reads majors 1 and 2, as a newer format (major 3); this build,
        // which reads 3.0 files (forget lists) but tells the layouts apart
        // by their markers first, as a header whose checksum is not there.
        assert_eq!(u16::from_le_bytes([v[8], v[9]]), 3);
        let e = Header::decode(&v[..HEADER_LEN], HEADER_LEN as u64)
            .unwrap_err()
            .to_string();
        assert!(e.contains("checksum"), "{e}");
    }

    #[test]
    fn a_marked_meta_is_the_same_filter_and_refused_by_0_3() {
        let loc = Location::parse("redis://127.0.0.1:1/f").unwrap();
        let m = meta(12_345, 1e-6, 512);
        let marked = SetsMeta {
            lists: true,
            ..m.clone()
        };
        let v = marked.encode();
        assert!(SetsMeta::marks(&v));
        assert_eq!(SetsMeta::decode(&loc, &v).unwrap(), marked);
        // The same filter: journals and counters keep its name.
        assert_eq!(marked.identity(), m.encode());
        assert_eq!(m.identity(), m.encode());
        assert_ne!(v, m.encode());
        // seen 0.3 reads the Bloom layout's headers up to major 3 and does
        // not know this marker: the header it sees is of major 4, with the
        // length of a header, so it says a newer seen is needed.
        assert_eq!(&v[16..24], b"SEENSETL");
        let len = u64::from_le_bytes(v[HEADER_LEN + 16..HEADER_LEN + 24].try_into().unwrap());
        let e = Header::decode(&v[..HEADER_LEN], len)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("4.0 is not supported") && e.contains("newer seen"),
            "{e}"
        );
    }

    #[test]
    fn list_commands_name_the_sets_slot_and_the_whole_hash() {
        let loc = Location::parse("redis://127.0.0.1:1/crawl").unwrap();
        let keys = SetKeys::new(&loc, &meta(1_000_000, 1e-6, 512));
        let h = Hash128 {
            lo: 0x0123_4567_89ab_cdef,
            hi: 0xfedc_ba98_7654_3210,
        };
        let mut key = Vec::new();
        let set = keys.command(b"SADD", h, &mut key);
        let list = keys.list_command(b"SREM", h, &mut key);
        assert_eq!(set.slot, list.slot);
        let mut member = h.hi.to_le_bytes().to_vec();
        member.extend_from_slice(&h.lo.to_le_bytes());
        let name = keys.list_name(keys.set_of(h));
        assert!(name.ends_with(":f") && name.starts_with(&keys.name(keys.set_of(h))));
        assert_eq!(
            list.packed,
            redis::cmd("SREM")
                .arg(&name)
                .arg(&member)
                .get_packed_command()
        );
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
