//! The forget lists of a filter of fingerprint sets (`seen forget`): a
//! forgotten key's 128-bit hash goes on a Redis set beside its fingerprint's
//! set, in the same hash slot; the count key counts keys listed and taken
//! off, and a bitmap marks the sets that have a list, so that writers check
//! lists only where a key may be listed (docs/REDIS.md, "Forgetting keys").

use super::SetsFilter;
use crate::hash::Hash128;
use crate::pipeline::Forgets;
use crate::redis::bitfield::{MAX_OPS, PART_KEYS, pack_bitfield_set};
use crate::redis::client::{Failure, Routed, server_error};
use crate::redis::slot::slot;
use anyhow::{Context, Result, anyhow, bail};
use redis::Value;

/// Which keys' forget lists a batch checks.
pub(super) enum Check {
    /// None: no key is listed.
    Nothing,
    /// Every key's.
    Every,
    /// Those of the sets whose bit is set (the bitmap of lists, as read).
    Sets(Vec<u8>),
}

impl Check {
    /// Whether keys of set `j` are checked.
    pub(super) fn set(&self, j: u64) -> bool {
        match self {
            Check::Nothing => false,
            Check::Every => true,
            Check::Sets(b) => b
                .get((j / 8) as usize)
                .is_some_and(|x| x >> (7 - j % 8) & 1 == 1),
        }
    }
}

impl SetsFilter {
    /// The counters of the forget lists: keys forget runs listed, and keys
    /// writers took off (recorded again). Their difference is at least the
    /// keys listed now: a `forget` adds to its counter before it lists, a
    /// writer to its own after it took keys off (and a killed one never).
    ///
    /// # Errors
    /// A server that cannot be reached.
    pub(crate) fn list_counts(&mut self) -> Result<(u64, u64)> {
        let loc = self.client.location().clone();
        let v = self
            .client
            .query(
                slot(loc.meta_key().as_bytes()),
                redis::cmd("HGETALL").arg(loc.count_key()).clone(),
            )
            .context("cannot read the counters")?;
        if let Some(e) = server_error("HGETALL of the counters", &loc, &v) {
            return Err(e);
        }
        // The time of the last change stays as the run found it.
        let mut scratch = self.meta.header();
        let c = crate::redis::meta::sets_counters(&v, &self.meta, &mut scratch);
        Ok((c.listed, c.unlisted))
    }

    /// Which keys' forget lists a batch must check: none while the
    /// counters say no key is listed (see [`SetsFilter::list_counts`]),
    /// else those of the sets the bitmap of lists marks. Read for every
    /// batch (the first takes the counters read on open): a `forget` sets
    /// a set's bit before it lists a key there, so a batch that reads the
    /// bit unset was sent before the key was listed, or sees the forget as
    /// after it.
    ///
    /// # Errors
    /// A server that cannot be reached.
    pub(super) fn lists_to_check(&mut self) -> Result<Check> {
        let listed = match self.lists_read.take() {
            Some(listed) => listed,
            None => {
                let (listed, unlisted) = self.list_counts()?;
                listed > unlisted
            }
        };
        if !listed {
            return Ok(Check::Nothing);
        }
        let loc = self.client.location().clone();
        let key = self.meta.lists_key(&loc);
        let v = self
            .client
            .query(slot(key.as_bytes()), redis::cmd("GET").arg(&key).clone())
            .context("cannot read the bitmap of forget lists")?;
        if let Some(e) = server_error("GET of the bitmap of forget lists", &loc, &v) {
            return Err(e);
        }
        Ok(match v {
            Value::BulkString(b) => Check::Sets(b),
            // Counted and not marked: a `forget` killed in between (it
            // listed nothing), or another program's doing; check them all.
            _ => Check::Every,
        })
    }

    /// Marks the meta value as that of a filter with forget lists (once,
    /// before the first key is listed): seen 0.3, which would answer
    /// forgotten keys present, then refuses the filter. In one step, and
    /// only while the meta value is this filter's.
    ///
    /// # Errors
    /// A server error, or a filter replaced meanwhile.
    fn mark_lists(&mut self) -> Result<()> {
        const MARK: &str = "local m = redis.call('GET', KEYS[1]) \
             if m == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end \
             if m == ARGV[2] then return 1 end return false";
        let loc = self.client.location().clone();
        let v = self.client.query_once(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("EVAL")
                .arg(MARK)
                .arg(1)
                .arg(loc.meta_key())
                .arg(&self.meta_bytes)
                .arg(&self.marked)
                .clone(),
        )?;
        if let Some(e) = server_error("marking the meta key", &loc, &v) {
            return Err(e);
        }
        if v != Value::Int(1) {
            bail!(
                "{loc} was replaced or deleted during this run (its meta key is gone or another \
                 filter's): nothing was forgotten; check it with `seen verify {loc}`"
            );
        }
        self.meta.lists = true;
        Ok(())
    }

    /// Lookups of a batch: `SISMEMBER` of each key's fingerprint in its set
    /// and, where `lists` says, of its hash in the set's forget list;
    /// `out[i]`: held and not listed. Pipelined in parts of [`PART_KEYS`]
    /// keys.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(super) fn lookup(
        &mut self,
        hashes: &[Hash128],
        lists: &Check,
        out: &mut Vec<bool>,
    ) -> Result<()> {
        out.clear();
        let loc = self.client.location().clone();
        let mut key = Vec::new();
        for part in hashes.chunks(PART_KEYS) {
            let mut cmds = Vec::with_capacity(part.len());
            let mut listed = Vec::with_capacity(part.len());
            for &h in part {
                cmds.push(self.keys.command(b"SISMEMBER", h, &mut key));
                listed.push(lists.set(self.keys.set_of(h)));
                if listed[listed.len() - 1] {
                    cmds.push(self.keys.list_command(b"SISMEMBER", h, &mut key));
                }
            }
            let mut replies = self
                .client
                .exec(cmds)
                .map_err(Failure::into_error)?
                .into_iter();
            let mut next = || match replies.next() {
                Some(Value::Int(n)) => Ok(n == 1),
                other => Err(other
                    .as_ref()
                    .and_then(|v| server_error("SISMEMBER", &loc, v))
                    .unwrap_or_else(|| anyhow!("{loc}: unexpected SISMEMBER reply"))),
            };
            for l in listed {
                let held = next()?;
                let gone = l && next()?;
                out.push(held && !gone);
            }
        }
        Ok(())
    }
}

/// Forgetting, key by key: a key present (its fingerprint in its set, its
/// hash not on the set's forget list) is `SADD`ed to the list. Each key's
/// forget is one atomic step of its own, seen by a writer before or after
/// its test-and-set of the key (there is no lock that could make a batch
/// one step across a Cluster's nodes).
impl Forgets for SetsFilter {
    fn forget_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        if !self.meta.lists {
            self.mark_lists()?;
        }
        self.lookup(hashes, &Check::Every, out)?;
        let present: Vec<usize> = (0..hashes.len()).filter(|&i| out[i]).collect();
        let listed = if present.is_empty() {
            0
        } else {
            self.list(hashes, &present, out)?
        };
        let (l, u) = self.list_counts()?;
        self.listed_now = l.saturating_sub(u);
        Ok(listed)
    }

    fn forgotten(&self) -> u64 {
        self.listed_now
    }
}

impl SetsFilter {
    /// Lists the keys `present` (positions in `hashes`, present when looked
    /// up): `out[i]` stays true for those this run listed. Returns how many.
    ///
    /// # Errors
    /// A server error or a lost connection.
    fn list(&mut self, hashes: &[Hash128], present: &[usize], out: &mut [bool]) -> Result<u64> {
        // The counter and the sets' bits first: a writer that reads them
        // after this checks these keys' lists; one that read them before
        // sees these keys as forgotten after its batch.
        // A key given twice is sent once: two `SADD`s of one hash could run
        // out of order (the first redirected and sent again after the
        // second ran), and the first place would read as not forgotten.
        let mut seen: std::collections::HashSet<(u64, u64), crate::hash::BuildKeyHasher> =
            std::collections::HashSet::default();
        let firsts: Vec<usize> = present
            .iter()
            .copied()
            .filter(|&i| seen.insert((hashes[i].lo, hashes[i].hi)))
            .collect();
        let [forgets, _] = self.meta.list_fields();
        let k = firsts.len() as i64;
        crate::redis::meta::bump_count(
            &mut self.client,
            &forgets,
            k,
            &self.meta_bytes,
            &self.marked,
        )?;
        let loc = self.client.location().clone();
        let mut sets: Vec<u64> = firsts
            .iter()
            .map(|&i| self.keys.set_of(hashes[i]))
            .collect();
        sets.sort_unstable();
        sets.dedup();
        let bitmap = self.meta.lists_key(&loc);
        let cmds = sets
            .chunks(MAX_OPS)
            .map(|c| Routed {
                slot: slot(bitmap.as_bytes()),
                packed: pack_bitfield_set(&bitmap, c),
            })
            .collect();
        for v in self.client.exec(cmds).map_err(Failure::into_error)? {
            if let Some(e) = server_error("BITFIELD of the bitmap of forget lists", &loc, &v) {
                return Err(e);
            }
        }
        let mut key = Vec::new();
        let mut listed = 0i64;
        let mut mine = crate::filter::forget::KeySet::default();
        for part in firsts.chunks(PART_KEYS) {
            let cmds = part
                .iter()
                .map(|&i| self.keys.list_command(b"SADD", hashes[i], &mut key))
                .collect();
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            for (&i, v) in part.iter().zip(replies) {
                match v {
                    // 0: listed meanwhile by another forget (not forgotten
                    // by this one).
                    Value::Int(n) => {
                        if n == 1 {
                            mine.insert(hashes[i]);
                            listed += 1;
                        }
                    }
                    other => {
                        return Err(server_error("SADD to a forget list", &loc, &other)
                            .unwrap_or_else(|| anyhow!("{loc}: unexpected SADD reply")));
                    }
                }
            }
        }
        // A key given twice in the batch reads as forgotten at each place,
        // as a file counts it.
        for &i in present {
            out[i] = mine.contains(&hashes[i]);
        }
        if listed < k {
            crate::redis::meta::bump_count(
                &mut self.client,
                &forgets,
                listed - k,
                &self.meta_bytes,
                &self.marked,
            )?;
        }
        Ok(listed as u64)
    }
}
