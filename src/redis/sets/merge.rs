//! The union of filters of fingerprint sets (`seen merge` of Redis filters
//! in that layout): set `j` of the union holds the fingerprints of every
//! input's set `j`, so a key present in any input is present in it, and
//! its false positives are those of the union's sets. A forget-list entry
//! stays when no input holds its key (each either lacks the fingerprint or
//! forgot the key too); the union is made as `build -o` makes a filter:
//! sets under a fresh tag, the meta key last.

use super::SetsFilter;
use crate::hash::Hash128;
use crate::redis::bitfield::{MAX_OPS, pack_bitfield_set};
use crate::redis::client::{Client, Failure, Link, Routed, server_error};
use crate::redis::location::Location;
use crate::redis::meta::read_any;
use crate::redis::set_keys::{SetsMeta, fresh_tag};
use crate::redis::slot::slot;
use anyhow::{Result, anyhow, bail};
use redis::Value;

/// Sets read and written at a time.
const SETS_PER_STEP: u64 = 1024;

/// What a union of fingerprint sets holds.
pub(crate) struct SetsUnion {
    /// The union's meta key.
    pub meta: SetsMeta,
    /// Fingerprints in its sets.
    pub fingerprints: u64,
    /// Keys on its forget lists.
    pub listed: u64,
}

impl SetsFilter {
    /// Checks that `other` puts a key in the set and with the fingerprint
    /// this one does: the same seed, key options, number of sets and
    /// fingerprint bits.
    ///
    /// # Errors
    /// The first difference, and what to do.
    pub(crate) fn check_alike(&self, other: &SetsFilter) -> Result<()> {
        let (a, b) = (&self.meta, &other.meta);
        let differ = |what: &str, x: String, y: String| {
            anyhow!(
                "{} and {} differ in their {what} ({x} and {y}): a key falls in another set, or \
                 with another fingerprint, in each, so their sets cannot be joined; a union of \
                 filters of fingerprint sets needs filters made with the same -n, -p, --seed \
                 and key flags on servers with the same set-max-intset-entries (`seen stats` \
                 shows theirs): rebuild one from its lines to match the other",
                self.location(),
                other.location()
            )
        };
        if a.seed != b.seed {
            return Err(differ("seed", a.seed.to_string(), b.seed.to_string()));
        }
        if a.keys != b.keys {
            return Err(differ("key options", a.keys.flags(), b.keys.flags()));
        }
        if (a.sets, a.fp_bits) != (b.sets, b.fp_bits) {
            let s = |m: &SetsMeta| format!("{} sets, {}-bit fingerprints", m.sets, m.fp_bits);
            return Err(differ("sets", s(a), s(b)));
        }
        Ok(())
    }

    /// Makes the union of `inputs` (all alike: [`SetsFilter::check_alike`])
    /// at `loc`, replacing a filter there with `replace`.
    ///
    /// # Errors
    /// A filter there (without `replace`), a server that cannot be reached,
    /// or a server error; nothing is left at `loc` but what was there.
    pub(crate) fn union_into(
        loc: &Location,
        link: Link,
        inputs: &mut [&mut SetsFilter],
        replace: bool,
    ) -> Result<SetsUnion> {
        let mut client = Client::connect(loc, link)?;
        if !replace && read_any(&mut client, loc)?.is_some() {
            bail!("{loc} already exists: pass --force to replace it");
        }
        let first = &inputs[0].meta;
        let meta = SetsMeta {
            tag: fresh_tag(),
            lists: false,
            created: inputs.iter().map(|i| i.meta.created).min().unwrap_or(0),
            ..first.clone()
        };
        let mut out = SetsFilter::new_pending(client, meta.clone(), replace);
        let (mut fingerprints, mut listed) = (0u64, 0u64);
        let mut start = 0;
        while start < meta.sets {
            let end = (start + SETS_PER_STEP).min(meta.sets);
            let step = out.union_step(inputs, start..end);
            match step {
                Ok((f, l)) => {
                    fingerprints += f;
                    listed += l;
                }
                Err(e) => {
                    let _ = out.unlink_sets(meta.tag);
                    return Err(e);
                }
            }
            start = end;
        }
        out.added = fingerprints;
        out.listed_now = listed;
        if listed > 0 {
            out.meta.lists = true;
            out.meta_bytes = out.meta.encode();
        }
        out.finish(true)?;
        Ok(SetsUnion {
            meta: out.meta.clone(),
            fingerprints,
            listed,
        })
    }

    /// The union of sets `range` of `inputs` into this filter's: their
    /// fingerprints, and the forget-list entries no input holds the key
    /// of. Returns the fingerprints and entries stored.
    fn union_step(
        &mut self,
        inputs: &mut [&mut SetsFilter],
        range: std::ops::Range<u64>,
    ) -> Result<(u64, u64)> {
        let mut sets = Vec::with_capacity(inputs.len());
        let mut lists = Vec::with_capacity(inputs.len());
        for i in inputs.iter_mut() {
            sets.push(i.members(range.clone(), false)?);
            lists.push(if i.meta.lists {
                i.members(range.clone(), true)?
            } else {
                vec![Vec::new(); (range.end - range.start) as usize]
            });
        }
        let loc = self.client.location().clone();
        let (mut cmds, mut marked) = (Vec::new(), Vec::new());
        let (mut fingerprints, mut listed) = (0u64, 0u64);
        for (n, j) in range.enumerate() {
            let mut union: Vec<&Vec<u8>> = sets.iter().flat_map(|s| &s[n]).collect();
            union.sort_unstable();
            union.dedup();
            fingerprints += union.len() as u64;
            let name = self.keys.name(j);
            for part in union.chunks(MAX_OPS) {
                let mut c = redis::cmd("SADD");
                c.arg(&name);
                for m in part {
                    c.arg(m.as_slice());
                }
                cmds.push(Routed::new(slot(name.as_bytes()), &c));
            }
            let mut keep: Vec<&Vec<u8>> = lists
                .iter()
                .flat_map(|l| &l[n])
                .filter(|e| {
                    let fp = self.keys.fingerprint(list_hash(e)).to_string().into_bytes();
                    (0..sets.len()).all(|k| !sets[k][n].contains(&fp) || lists[k][n].contains(e))
                })
                .collect();
            keep.sort_unstable();
            keep.dedup();
            if !keep.is_empty() {
                listed += keep.len() as u64;
                marked.push(j);
                let list = self.keys.list_name(j);
                let mut c = redis::cmd("SADD");
                c.arg(&list);
                for e in keep {
                    c.arg(e.as_slice());
                }
                cmds.push(Routed::new(slot(list.as_bytes()), &c));
            }
        }
        let bitmap = self.meta.lists_key(&loc);
        cmds.extend(marked.chunks(MAX_OPS).map(|c| Routed {
            slot: slot(bitmap.as_bytes()),
            packed: pack_bitfield_set(&bitmap, c),
        }));
        for v in self.client.exec(cmds).map_err(Failure::into_error)? {
            if let Some(e) = server_error("storing the union's sets", &loc, &v) {
                return Err(e);
            }
        }
        Ok((fingerprints, listed))
    }

    /// The members of sets `range` (or, with `lists`, of their forget
    /// lists), as the server stores them.
    fn members(&mut self, range: std::ops::Range<u64>, lists: bool) -> Result<Vec<Vec<Vec<u8>>>> {
        let cmds = range
            .map(|j| {
                let name = if lists {
                    self.keys.list_name(j)
                } else {
                    self.keys.name(j)
                };
                Routed::new(slot(name.as_bytes()), redis::cmd("SMEMBERS").arg(name))
            })
            .collect();
        let loc = self.location().clone();
        let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
        replies
            .into_iter()
            .map(|v| match v {
                Value::Array(m) | Value::Set(m) => m
                    .into_iter()
                    .map(|x| match x {
                        Value::BulkString(b) => Ok(b),
                        Value::Int(n) => Ok(n.to_string().into_bytes()),
                        other => Err(anyhow!("{loc}: unexpected set member {other:?}")),
                    })
                    .collect(),
                other => Err(server_error("SMEMBERS of a set", &loc, &other)
                    .unwrap_or_else(|| anyhow!("{loc}: unexpected SMEMBERS reply"))),
            })
            .collect()
    }
}

/// The key a forget-list entry holds (as `SetKeys::list_command` stores
/// it: the high half, then the low one, little-endian).
fn list_hash(e: &[u8]) -> Hash128 {
    let u = |r: std::ops::Range<usize>| {
        e.get(r)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    };
    Hash128 {
        hi: u(0..8),
        lo: u(8..16),
    }
}
