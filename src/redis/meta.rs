//! The meta key of a Redis filter (`seen:{NAME}:meta`: the header of a filter
//! file, counters zero, then `SEENRDS1`, the pages per shard and the length
//! the filter has as a file) and its counters (`seen:{NAME}:count`): their
//! encoding, and reading them from the server.

use super::client::{Client, server_error, slot};
use super::location::Location;
use super::shards::MAX_SHARD_PAGES;
use crate::format::{HEADER_LEN, Header};
use anyhow::{Result, anyhow, bail};
use redis::Value;

/// Marks the Redis part of the meta value.
const META_MAGIC: &[u8; 8] = b"SEENRDS1";
/// Bytes of the meta value.
const META_LEN: usize = HEADER_LEN + 24;

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

/// Reads the meta and counters of the filter at `loc`; `None` when there is
/// no filter.
pub(super) fn read_meta(client: &mut Client, loc: &Location) -> Result<Option<Meta>> {
    let meta_slot = slot(loc.meta_key().as_bytes());
    let v = client.query(meta_slot, redis::cmd("GET").arg(loc.meta_key()).clone())?;
    let meta = match v {
        Value::Nil => return Ok(None),
        Value::BulkString(b) => b,
        other => {
            if let Some(e) = server_error("GET of the meta key", loc, &other) {
                return Err(e);
            }
            bail!("{loc}: its meta key {} is not a string", loc.meta_key())
        }
    };
    let (mut header, pps) = decode_meta(loc, &meta)?;
    let counts = client.query(
        meta_slot,
        redis::cmd("HGETALL").arg(loc.count_key()).clone(),
    )?;
    read_counts(&counts, &mut header);
    Ok(Some((header, meta, pps)))
}

/// Fills the counters of `header` from an `HGETALL` of the count key.
pub(super) fn read_counts(v: &Value, header: &mut Header) {
    let pairs: Vec<(Vec<u8>, u64)> = match v {
        Value::Array(items) => items
            .chunks(2)
            .filter_map(|p| match p {
                [Value::BulkString(k), Value::BulkString(n)] => {
                    Some((k.clone(), std::str::from_utf8(n).ok()?.parse().ok()?))
                }
                _ => None,
            })
            .collect(),
        Value::Map(items) => items
            .iter()
            .filter_map(|(k, n)| match (k, n) {
                (Value::BulkString(k), Value::BulkString(n)) => {
                    Some((k.clone(), std::str::from_utf8(n).ok()?.parse().ok()?))
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    for (k, n) in pairs {
        if k == b"updated" {
            header.updated = n;
        } else if let Some(li) = k
            .strip_prefix(b"inserts:")
            .and_then(|i| std::str::from_utf8(i).ok()?.parse::<usize>().ok())
            && let Some(l) = header.layers.get_mut(li)
        {
            l.inserts = n;
        }
    }
}
