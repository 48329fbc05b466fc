//! The meta key of a Redis filter (`seen:{NAME}:meta`: the header of a filter
//! file, counters zero, then `SEENRDS1`, the pages per shard and the length
//! the filter has as a file) and its counters (`seen:{NAME}:count`): their
//! encoding, and reading them from the server.

use super::client::{Client, Failure, Routed, server_error};
use super::location::{Location, META_LEN, META_MAGIC};
use super::set_keys::SetsMeta;
use super::shards::{MAX_SHARD_PAGES, shard_keys};
use super::slot::slot;
use crate::format::{HEADER_LEN, Header};
use anyhow::{Context, Result, anyhow, bail};
use redis::Value;

/// Encodes the meta value of `header` (its counters are kept elsewhere).
pub(super) fn encode_meta(header: &Header, pps: u64) -> Vec<u8> {
    let mut h = header.clone();
    for l in &mut h.layers {
        l.inserts = 0;
    }
    let mut v = h.encode().to_vec();
    v.extend_from_slice(META_MAGIC);
    v.extend_from_slice(&pps.to_le_bytes());
    v.extend_from_slice(&h.file_len().to_le_bytes());
    v
}

/// Decodes a meta value.
fn decode_meta(loc: &Location, v: &[u8]) -> Result<(Header, u64)> {
    if v.len() != META_LEN || &v[HEADER_LEN..HEADER_LEN + 8] != META_MAGIC {
        bail!(
            "{} holds something else than a seen filter (its meta key {} is {} bytes, \
             without the seen marker): use another filter name",
            loc,
            loc.meta_key(),
            v.len()
        );
    }
    let u = |at: usize| u64::from_le_bytes(v[at..at + 8].try_into().expect("8 bytes"));
    let (pps, len) = (u(HEADER_LEN + 8), u(HEADER_LEN + 16));
    let header = Header::decode(&v[..HEADER_LEN], len)
        .map_err(|e| anyhow!("{loc}: its meta key {} is not usable: {e}", loc.meta_key()))?;
    if pps == 0 || !pps.is_power_of_two() || pps > MAX_SHARD_PAGES {
        bail!("{loc}: its meta key says {pps} pages per shard, which this version cannot use");
    }
    Ok((header, pps))
}

/// A filter's header (counters filled in), its meta value and its pages per
/// shard.
pub(super) type Meta = (Header, Vec<u8>, u64);

/// A filter found at a location, in either layout.
pub(super) enum Found {
    /// Bloom layers in shards.
    Bloom(Meta),
    /// Fingerprint sets: what the meta records, a header with the
    /// counters' time, the lines recorded, and whether the counters say
    /// keys are on its forget lists.
    Sets(SetsMeta, Header, u64, bool),
    /// Fingerprint sets in generations (growth, windows): what the meta
    /// records, and the meta value.
    Gens(super::gens::GensMeta, Vec<u8>),
}

/// Reads the meta and counters of the filter at `loc`, in either layout;
/// `None` when there is no filter.
pub(super) fn read_any(client: &mut Client, loc: &Location) -> Result<Option<Found>> {
    let Some(v) = get_meta(client, loc)? else {
        return Ok(None);
    };
    if super::gens::GensMeta::marks(&v) {
        let meta = super::gens::GensMeta::decode(loc, &v)?;
        return Ok(Some(Found::Gens(meta, v)));
    }
    if SetsMeta::marks(&v) {
        let meta = SetsMeta::decode(loc, &v)?;
        let mut header = meta.header();
        let (inserts, listed) = read_counters(client, loc, &meta, &mut header)?;
        return Ok(Some(Found::Sets(meta, header, inserts, listed)));
    }
    read_bloom(client, loc, v).map(|m| Some(Found::Bloom(m)))
}

/// Reads the meta and counters of the filter at `loc`, in the Bloom layout;
/// `None` when there is no filter.
///
/// # Errors
/// A filter in the fingerprint-set layout (it has no shards), or as
/// [`read_any`].
pub(super) fn read_meta(client: &mut Client, loc: &Location) -> Result<Option<Meta>> {
    match read_any(client, loc)? {
        None => Ok(None),
        Some(Found::Bloom(m)) => Ok(Some(m)),
        Some(Found::Sets(..) | Found::Gens(..)) => bail!(
            "{loc} is in the fingerprint-set layout, which has no Bloom bits (see docs/REDIS.md)"
        ),
    }
}

/// The meta value at `loc`, `None` when there is none.
fn get_meta(client: &mut Client, loc: &Location) -> Result<Option<Vec<u8>>> {
    let meta_slot = slot(loc.meta_key().as_bytes());
    let v = client.query(meta_slot, redis::cmd("GET").arg(loc.meta_key()).clone())?;
    match v {
        Value::Nil => Ok(None),
        Value::BulkString(b) => Ok(Some(b)),
        other => {
            if let Some(e) = server_error("GET of the meta key", loc, &other) {
                return Err(e);
            }
            bail!("{loc}: its meta key {} is not a string", loc.meta_key())
        }
    }
}

/// The Bloom layout's meta value `meta`, decoded, with its counters read.
fn read_bloom(client: &mut Client, loc: &Location, meta: Vec<u8>) -> Result<Meta> {
    let meta_slot = slot(loc.meta_key().as_bytes());
    let (mut header, pps) = decode_meta(loc, &meta)?;
    let counts = client.query(
        meta_slot,
        redis::cmd("HGETALL").arg(loc.count_key()).clone(),
    )?;
    read_counts(&counts, &mut header);
    Ok((header, meta, pps))
}

/// Deletes the filter `old` found at `loc`: its meta key and counters
/// first (no reader sees data under a meta that no longer describes it),
/// then its shards or sets.
///
/// # Errors
/// A server error or a lost connection.
pub(super) fn delete(client: &mut Client, loc: &Location, old: Found) -> Result<()> {
    let meta_slot = slot(loc.meta_key().as_bytes());
    client
        .exec(vec![Routed::new(
            meta_slot,
            redis::cmd("DEL").arg(loc.meta_key()).arg(loc.count_key()),
        )])
        .map_err(Failure::into_error)?;
    match old {
        Found::Bloom((old, _, old_pps)) => {
            let mut cmds = Vec::new();
            for (i, l) in old.layers.iter().enumerate() {
                for (k, s) in shard_keys(loc, i, l, old_pps) {
                    cmds.push(Routed::new(s, redis::cmd("DEL").arg(k)));
                }
            }
            client.exec(cmds).map_err(Failure::into_error)?;
            Ok(())
        }
        Found::Sets(meta, ..) => super::set_keys::delete_sets(client, &meta),
        Found::Gens(meta, _) => super::gens::delete_all(client, &meta),
    }
}

/// `HINCRBY KEYS[2] ARGV[2] ARGV[3]` when `KEYS[1]` (the meta key) holds
/// `ARGV[1]`; else nil, and nothing changes.
const COMMIT_SCRIPT: &str = "local m = redis.call('GET', KEYS[1]) \
     if m == ARGV[1] or m == ARGV[4] then \
     return redis.call('HINCRBY', KEYS[2], ARGV[2], ARGV[3]) else return false end";

/// Data keys of a filter at `loc` that has no meta key (it was lost: a
/// server restarted empty, evicted it, a `DEL` or `FLUSH`): its count key,
/// and its Bloom layout's first shard when bits are set in it (a creator
/// that lost a race leaves a shard of zeros, which is harmless). Empty when
/// there are none.
///
/// # Errors
/// A server that cannot be reached.
pub(super) fn leftovers(client: &mut Client, loc: &Location) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let count = loc.count_key();
    let v = client.query(
        slot(count.as_bytes()),
        redis::cmd("EXISTS").arg(&count).clone(),
    )?;
    if v == Value::Int(1) {
        found.push(count);
    }
    let shard = loc.shard_key(0, 0);
    let v = client.query(
        slot(shard.as_bytes()),
        redis::cmd("BITCOUNT").arg(&shard).clone(),
    )?;
    if matches!(v, Value::Int(n) if n > 0) || server_error("", loc, &v).is_some() {
        found.push(shard);
    }
    Ok(found)
}

/// What to do about [`leftovers`].
pub(super) fn leftovers_advice(loc: &Location, keys: &[String]) -> String {
    format!(
        "{loc} has no meta key ({}) but data of a filter is there ({}): the filter's meta key \
         was lost (a server restarted empty, eviction, a DEL or FLUSH), and its data cannot be \
         used or adopted; remove its keys (`redis-cli --scan --pattern 'seen:{{{}*' | xargs \
         redis-cli del`, on each node of a Cluster) and make the filter again, or copy a \
         snapshot back with `seen copy --force`",
        loc.meta_key(),
        keys.join(", "),
        loc.name
    )
}

/// Adds `n` to counter `field` of the filter at the client's location while
/// its meta value is `meta` or `also` (the same filter before and after a
/// `forget` marked it), in one step: a server restarted empty, or a filter
/// deleted or made again, gets no count from a run of the old one. Returns
/// the counter's new value.
///
/// # Errors
/// A server error, a lost connection, or a filter replaced meanwhile.
pub(super) fn bump_count(
    client: &mut Client,
    field: &str,
    n: i64,
    meta: &[u8],
    also: &[u8],
) -> Result<i64> {
    let loc = client.location().clone();
    let v = client.query_once(
        slot(loc.meta_key().as_bytes()),
        redis::cmd("EVAL")
            .arg(COMMIT_SCRIPT)
            .arg(2)
            .arg(loc.meta_key())
            .arg(loc.count_key())
            .arg(meta)
            .arg(field)
            .arg(n)
            .arg(also)
            .clone(),
    )?;
    if let Some(e) = server_error("the commit of the counters", &loc, &v) {
        return Err(e);
    }
    match v {
        Value::Int(t) => Ok(t),
        _ => bail!(
            "{loc} was replaced or deleted during this run (its meta key is gone or another \
             filter's; a server restarted empty, evicted it, or was flushed): the lines this \
             run printed were recorded in data that is no longer that filter's, and its \
             counters were left alone; check it with `seen verify {loc}`"
        ),
    }
}

/// Adds `added` lines recorded as new to counter `field` of the filter at
/// the client's location (see [`bump_count`]), sets its time of change;
/// warns when the count passes `capacity` (a Redis filter does not grow),
/// ending with `what_then` (what that costs). Returns the count and the
/// time.
///
/// # Errors
/// A server error, a lost connection, or a filter replaced meanwhile.
pub(super) fn add_counts(
    client: &mut Client,
    field: &str,
    added: u64,
    capacity: u64,
    meta: (&[u8], &[u8]),
    what_then: &str,
) -> Result<(u64, u64)> {
    let loc = client.location().clone();
    let s = slot(loc.meta_key().as_bytes());
    let total = bump_count(client, field, added as i64, meta.0, meta.1)?;
    let total = u64::try_from(total).unwrap_or(0);
    if added > 0 && total > capacity {
        eprintln!(
            "seen: warning: {loc} holds {} keys, past the {} it was sized for (a filter in \
             Redis does not grow): {what_then}; make a larger one (`seen build -n …`) and \
             move to it",
            indicatif::HumanCount(total),
            indicatif::HumanCount(capacity)
        );
    }
    let t = crate::clock::system_secs();
    let v = client.query(
        s,
        redis::cmd("HSET")
            .arg(loc.count_key())
            .arg("updated")
            .arg(t)
            .clone(),
    )?;
    if let Some(e) = server_error("HSET of the counters", &loc, &v) {
        return Err(e);
    }
    Ok((total, t))
}

/// Fills the counters of `header` from an `HGETALL` of the count key.
pub(super) fn read_counts(v: &Value, header: &mut Header) {
    each_count(v, &mut |k, n| {
        if k == b"updated" {
            header.updated = n;
        } else if let Some(li) = k
            .strip_prefix(b"inserts:")
            .and_then(|i| std::str::from_utf8(i).ok()?.parse::<usize>().ok())
            && let Some(l) = header.layers.get_mut(li)
        {
            l.inserts = n;
        }
    });
}

/// Calls `f` with each field and number of an `HGETALL` reply.
pub(super) fn each_count(v: &Value, f: &mut dyn FnMut(&[u8], u64)) {
    for (k, n) in super::reply::hash_fields(v) {
        if let Some(n) = std::str::from_utf8(n).ok().and_then(|n| n.parse().ok()) {
            f(k, n);
        }
    }
}

/// The counters of a filter of fingerprint sets, read on open: its lines
/// recorded as new, and whether keys are on its forget lists (the `forget`
/// runs listed more than writers took off), with the time of the last
/// change read into `header`.
pub(super) fn read_counters(
    client: &mut Client,
    loc: &Location,
    meta: &SetsMeta,
    header: &mut Header,
) -> Result<(u64, bool)> {
    let v = client
        .query(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("HGETALL").arg(loc.count_key()).clone(),
        )
        .context("cannot read the counters")?;
    let c = sets_counters(&v, meta, header);
    Ok((c.inserts, c.listed > c.unlisted))
}

/// What the count key of a filter of fingerprint sets holds.
pub(super) struct SetsCounters {
    /// Lines recorded as new.
    pub inserts: u64,
    /// Keys `forget` runs listed.
    pub listed: u64,
    /// Keys writers took off the lists (recorded again).
    pub unlisted: u64,
}

/// The counters in `v`, an `HGETALL` of the count key of the filter `meta`
/// describes, with the time of the last change read into `header`.
pub(super) fn sets_counters(v: &Value, meta: &SetsMeta, header: &mut Header) -> SetsCounters {
    let (field, [forgets, unforgets]) = (meta.count_field(), meta.list_fields());
    let mut c = SetsCounters {
        inserts: 0,
        listed: 0,
        unlisted: 0,
    };
    each_count(v, &mut |k, n| {
        if k == b"updated" {
            header.updated = n;
        } else if k == field.as_bytes() {
            c.inserts = n;
        } else if k == forgets.as_bytes() {
            c.listed = n;
        } else if k == unforgets.as_bytes() {
            c.unlisted = n;
        }
    });
    c
}
