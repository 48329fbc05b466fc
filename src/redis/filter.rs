//! [`RedisFilter`]: a filter whose bits live in a Redis server or Cluster,
//! behind the pipeline's port.
//!
//! Keys (NAME from the location):
//! - `seen:{NAME}:meta`: the 4096-byte header of a filter file (same bytes,
//!   counters zero), then `SEENRDS1`, the pages per shard and the length the
//!   filter has as a file (little-endian u64s). Written once, with `SET NX`.
//! - `seen:{NAME}:count`: a hash of counters (`inserts:L`, `updated`), added to
//!   with `HINCRBY` by every writer.
//! - `seen:{NAME:L:j}:b`: shard `j` of layer `L`, whole 4 KiB pages
//!   ([`pages_per_shard`] of them), the same bytes as the layer's bits in a file.
//!
//! A key's blocks lie in one page, so its bits lie in one shard. Redis counts
//! a string's bits from the most significant bit of each byte, a filter from
//! the least: bit `b` of byte `B` of a shard is Redis bit `8B + 7 − b`.
//!
//! The test-and-set of a batch is one `BITFIELD shard SET u1 OFFSET 1 …` per
//! shard touched, pipelined to every node at once: each `SET` returns the
//! bit's old value, and a key is new when any of its bits was 0. Only the bits
//! not known to be set are sent: each shard is read whole (`GET`) the first
//! time a run touches it, and every bit a run sets is known from then on
//! (bits are never cleared), so a key already in the filter, or repeated in
//! the input, costs the server nothing. Lookups answer from those copies.

use super::bitfield::{MAX_OPS, PART_KEYS, Parts, pack_bitfield_set};
use super::client::{Client, Failure, Link, Routed, server_error};
use super::journal::Journal;
use super::location::Location;
use super::meta::{Meta, add_counts, delete, encode_meta, read_any, read_meta};
use super::shards::{Layer, pages_per_shard};
use super::slot::slot;
use crate::filter::sizing::{Plan, Spec};
use crate::filter::{BLOCK_BYTES, BLOCKS_PER_PAGE, KindId};
use crate::format::Header;
use crate::hash::Hash128;
use crate::pipeline::{Journals, Store};
use anyhow::{Context, Result, anyhow, bail};
use redis::Value;

/// Space a Redis filter may take over the smallest filter for its capacity
/// and rate, to set fewer bits per key (the server pays per bit set).
pub(crate) const ROOM: f64 = 1.4;

/// The first layer of a new Redis filter for `spec`: the fewest bits per key
/// within [`ROOM`] times the smallest size (for 10M keys at 1e-6: 8 bits in
/// two blocks, 43 bits per key, instead of 16 bits and 31.5 bits per key).
///
/// # Errors
/// When `spec` cannot be sized.
pub(crate) fn first_layer(spec: &Spec) -> Result<Plan> {
    if spec.window.is_some() {
        bail!("{NO_WINDOW}");
    }
    if spec.growth.is_some() {
        bail!(
            "a Redis filter in the Bloom layout does not grow: drop --growth, or make it in the \
             fingerprint-set layout (the default), which grows with --growth"
        );
    }
    crate::filter::sizing::plan_few_bits(spec.capacity, spec.target_fpp, ROOM)
        .context("cannot size the filter (-n/--capacity, -p/--fpp)")
}

/// Why a filter with a time window is refused in Redis.
pub(super) const NO_WINDOW: &str = "a filter with a time window (--window) cannot be kept in Redis \
     in the Bloom layout (nor copied there from a file): make it in Redis with the \
     fingerprint-set layout (the default: `seen dedup -f redis://… --window …`), or keep it in \
     a file";

/// Refuses a filter Redis cannot keep: one with a time window (see
/// [`NO_WINDOW`]), or a layer of another kind than Bloom (the shards are
/// set and tested with `BITFIELD` at Bloom positions).
fn refuse_unkept(header: &Header, loc: &Location) -> Result<()> {
    if header.window.is_some() {
        bail!("{loc}: {NO_WINDOW}");
    }
    if let Some((i, l)) = (header.layers.iter().enumerate()).find(|(_, l)| l.kind != KindId::BLOOM)
    {
        bail!(
            "{loc}: layer {i} is a {} filter: a filter in Redis holds Bloom layers only; \
             keep it in a file",
            l.kind.name().unwrap_or("newer kind of")
        );
    }
    Ok(())
}

/// A filter in Redis, open for a run.
pub(crate) struct RedisFilter {
    client: Client,
    header: Header,
    meta: Vec<u8>,
    layers: Vec<Layer>,
    /// Keys this run recorded as new, not yet added to the counters.
    added: u64,
    /// Set when a reply was lost: the run must stop at its next batch.
    broken: Option<anyhow::Error>,
    /// Whether this run writes.
    write: bool,
    /// The journal of the lines this run judges new (`dedup`).
    journal: Option<Journal>,
}

impl RedisFilter {
    pub(super) fn assemble(
        client: Client,
        (header, meta, pps): Meta,
        write: bool,
    ) -> Result<RedisFilter> {
        let loc = client.location().clone();
        refuse_unkept(&header, &loc)?;
        let layers = header
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| Layer::new(&loc, i, *l, pps))
            .collect::<Result<_>>()?;
        Ok(RedisFilter {
            client,
            header,
            meta,
            layers,
            added: 0,
            broken: None,
            write,
            journal: None,
        })
    }

    /// Opens the filter at `loc`, making it from `header` first when there is
    /// none (if another writer makes it first, theirs is used). Returns the
    /// filter and whether this run made it.
    ///
    /// # Errors
    /// As [`RedisFilter::open`].
    pub(crate) fn open_or_create(
        loc: &Location,
        link: Link,
        header: &Header,
    ) -> Result<(RedisFilter, bool)> {
        refuse_unkept(header, loc)?;
        let mut client = Client::connect(loc, link)?;
        if let Some(meta) = read_meta(&mut client, loc)? {
            return Ok((RedisFilter::assemble(client, meta, true)?, false));
        }
        // Data without a meta key is an earlier filter's (or a run's that
        // went on after a server restarted empty): never adopted.
        let left = super::meta::leftovers(&mut client, loc)?;
        if !left.is_empty() {
            // Unless a racing creator has just finished.
            if let Some(meta) = read_meta(&mut client, loc)? {
                return Ok((RedisFilter::assemble(client, meta, true)?, false));
            }
            bail!("{}", super::meta::leftovers_advice(loc, &left));
        }
        let pps = pages_per_shard(header.layers[0].layout.nblocks / BLOCKS_PER_PAGE);
        let meta = encode_meta(header, pps);
        // The shards first, at their full size (`SET NX`: one a racing
        // creator made is left as it is), then the meta key: a writer that
        // finds the meta finds the shards.
        let mut f = RedisFilter::assemble(client, (header.clone(), meta.clone(), pps), true)?;
        f.store_shards(None)?;
        let v = f.client.query_once(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("SET")
                .arg(loc.meta_key())
                .arg(&meta)
                .arg("NX")
                .clone(),
        )?;
        if let Some(e) = server_error("SET of the meta key", loc, &v) {
            return Err(e);
        }
        let made = v == Value::Okay;
        let meta = read_meta(&mut f.client, loc)?
            .ok_or_else(|| anyhow!("{loc}: the filter vanished as it was made"))?;
        let f = RedisFilter::assemble(f.client, meta, true)?;
        Ok((f, made))
    }

    /// Stores every shard of every layer at its full size, so the server
    /// allocates each once: the bytes of `bits` (one slice per layer, as in
    /// a file), overwriting; without, zeros with `SET … NX` (a shard a writer
    /// has already touched is left as it is).
    fn store_shards(&mut self, bits: Option<&[&[u8]]>) -> Result<()> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        for li in 0..self.layers.len() {
            for j in 0..self.layers[li].keys.len() {
                let l = &self.layers[li];
                let r = l.range(j);
                let len = r.len();
                let mut cmd = redis::cmd("SET");
                match bits {
                    Some(bits) => cmd.arg(&l.keys[j]).arg(&bits[li][r]),
                    None => cmd.arg(&l.keys[j]).arg(vec![0u8; len]).arg("NX"),
                };
                batch.push(Routed::new(l.slots[j], &cmd));
                bytes += len;
                if bytes >= 64 << 20 {
                    self.run_sets(std::mem::take(&mut batch))?;
                    bytes = 0;
                }
            }
        }
        self.run_sets(batch)
    }

    fn run_sets(&mut self, batch: Vec<Routed>) -> Result<()> {
        let loc = self.client.location().clone();
        let replies = self.client.exec(batch).map_err(Failure::into_error)?;
        for v in &replies {
            if let Some(e) = server_error("SET of a shard", &loc, v) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The directory of this filter's journals on this machine.
    ///
    /// # Errors
    /// When there is no directory for journals (no `HOME`).
    pub(crate) fn journal_dir(&self) -> Result<std::path::PathBuf> {
        super::journal::dir_for(&self.location().name, &self.meta)
    }

    /// Keeps a journal of the lines this run judges new (on this machine,
    /// see `journal::dir_for`), after printing to `out` what dead runs had
    /// journalled there and not written. Returns how many lines that was,
    /// and the journal's directory.
    ///
    /// # Errors
    /// When the journal cannot be read or started, or `out` written.
    pub(crate) fn journal(
        &mut self,
        term: u8,
        keys: crate::keys::KeySpec,
        out: &mut dyn std::io::Write,
    ) -> Result<(u64, std::path::PathBuf)> {
        let dir = super::journal::dir_for(&self.location().name, &self.meta)?;
        let replayed = Journal::replay(&dir, term, &mut super::journal::asker(self, keys), out)?;
        self.journal = Some(Journal::start(&dir, &self.location().to_string())?);
        Ok((replayed, dir))
    }

    /// Ends the run's journal: removed when the run went well (`ok`), kept
    /// for the next run otherwise.
    pub(crate) fn end_journal(&mut self, ok: bool) {
        if let Some(j) = self.journal.take() {
            j.end(ok);
        }
    }

    /// The failure that stopped this run's test-and-sets, if one did and
    /// no later call reported it (it may strike in the last batch).
    pub(crate) fn take_broken(&mut self) -> Option<anyhow::Error> {
        self.broken.take()
    }

    /// Whether this run records keys.
    pub(crate) fn writes(&self) -> bool {
        self.write
    }

    /// Refuses a filter that Redis cannot keep (one with a time window),
    /// before anything is read or sent.
    ///
    /// # Errors
    /// A header with a window, or a layer of another kind than Bloom.
    pub(crate) fn refuse_header(loc: &Location, header: &Header) -> Result<()> {
        refuse_unkept(header, loc)
    }

    /// Refuses to make a filter where one is already.
    ///
    /// # Errors
    /// A filter at `loc`, or a server that cannot be reached.
    pub(crate) fn refuse_existing(loc: &Location, link: Link) -> Result<()> {
        let mut client = Client::connect(loc, link)?;
        if read_any(&mut client, loc)?.is_some() {
            bail!(
                "{loc} already exists: pass --force to replace it, or add to it with \
                 `seen build --add -o {loc}`"
            );
        }
        Ok(())
    }

    /// The header, counters as this run leaves them.
    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// Where it lives.
    pub(crate) fn location(&self) -> &Location {
        self.client.location()
    }

    /// Reads the shards of layer `li` touched by `blocks` that this run has
    /// not read yet.
    fn fetch(&mut self, li: usize, shards: &mut Vec<usize>) -> Result<()> {
        shards.sort_unstable();
        shards.dedup();
        shards.retain(|&j| !self.layers[li].fetched[j]);
        if shards.is_empty() {
            return Ok(());
        }
        let loc = self.client.location().clone();
        for group in shards.chunks(16) {
            let l = &self.layers[li];
            let cmds = group
                .iter()
                .map(|&j| Routed::new(l.slots[j], redis::cmd("GET").arg(&l.keys[j])))
                .collect();
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            let l = &mut self.layers[li];
            for (&j, v) in group.iter().zip(replies) {
                let range = l.range(j);
                let known = &mut l.known[range];
                match v {
                    Value::BulkString(b) => {
                        // Bits set since the run began stay set (OR, not copy).
                        for (k, s) in known.iter_mut().zip(&b) {
                            *k |= s;
                        }
                    }
                    // Shards are made whole before the meta key: one that
                    // is gone was lost (evicted, deleted), and with it the
                    // lines it held.
                    Value::Nil => bail!(
                        "{loc}: shard {} is missing: the filter lost the lines it held (evicted \
                         or deleted?), which would all read as new; rebuild it, or copy a \
                         snapshot back with `seen copy --force` (`seen verify {loc}` lists what \
                         is missing)",
                        l.keys[j]
                    ),
                    other => {
                        return Err(server_error("GET of a shard", &loc, &other).unwrap_or_else(
                            || anyhow!("{loc}: shard {} is not a string", l.keys[j]),
                        ));
                    }
                }
                l.fetched[j] = true;
            }
        }
        Ok(())
    }

    /// Reads the shards of layer `li` that keys `hashes` fall in and this run
    /// has not read yet.
    fn fetch_for(&mut self, li: usize, hashes: &[Hash128]) -> Result<()> {
        let l = &self.layers[li];
        let mut shards: Vec<usize> = hashes
            .iter()
            .map(|&h| l.shard_of(l.entry.layout.blocks(h)[0]))
            .collect();
        self.fetch(li, &mut shards)
    }

    /// Reads every shard (for `stats`, `verify` and copies): the layers'
    /// bits, as a file holds them.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(crate) fn read_all(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Vec<&[u8]>> {
        for li in 0..self.layers.len() {
            let n = self.layers[li].keys.len();
            for start in (0..n).step_by(16) {
                let mut group: Vec<usize> = (start..(start + 16).min(n)).collect();
                let bytes: u64 = group
                    .iter()
                    .map(|&j| self.layers[li].range(j).len() as u64)
                    .sum();
                self.fetch(li, &mut group)?;
                progress(bytes);
            }
        }
        Ok(self.layers.iter().map(|l| &l.known[..]).collect())
    }

    /// Shards of all layers.
    pub(crate) fn shard_count(&self) -> usize {
        self.layers.iter().map(|l| l.keys.len()).sum()
    }

    /// Shards missing on the server or of another length than the meta
    /// says (for `verify`): their keys and what is wrong.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(crate) fn missing_shards(&mut self) -> Result<Vec<(String, String)>> {
        let mut bad = Vec::new();
        for l in &self.layers {
            let cmds = l
                .keys
                .iter()
                .zip(&l.slots)
                .map(|(k, &s)| Routed::new(s, redis::cmd("STRLEN").arg(k)))
                .collect();
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            for (j, v) in replies.iter().enumerate() {
                let want = l.range(j).len();
                match v {
                    Value::Int(n) if *n as usize == want => {}
                    Value::Int(0) => bad.push((l.keys[j].clone(), "is missing".to_string())),
                    Value::Int(n) => {
                        bad.push((l.keys[j].clone(), format!("has {n} bytes, not {want}")))
                    }
                    other => bad.push((l.keys[j].clone(), format!("cannot be read: {other:?}"))),
                }
            }
        }
        Ok(bad)
    }

    /// The bits of key `h` in layer `li` that are not known to be set, as
    /// (shard, Redis bit offset in it); empty when all are known.
    fn unknown_bits(&self, li: usize, h: Hash128, out: &mut Vec<u64>) -> usize {
        let l = &self.layers[li];
        let probe = l.entry.layout.probe(h);
        let shard = l.shard_of(probe.blocks[0]);
        let base = shard as u64 * l.shard_bytes;
        out.clear();
        for j in 0..probe.x {
            let block_byte = probe.blocks[j] * BLOCK_BYTES as u64;
            for (w, &m) in probe.masks[j].iter().enumerate() {
                let mut m = m;
                while m != 0 {
                    let b = u64::from(m.trailing_zeros());
                    m &= m - 1;
                    let byte = block_byte + 8 * w as u64 + b / 8;
                    if l.known[byte as usize] & (1 << (b % 8)) == 0 {
                        out.push(8 * (byte - base) + 7 - b % 8);
                    }
                }
            }
        }
        shard
    }

    /// Marks Redis bit `off` of shard `shard` of layer `li` as known set.
    fn learn(&mut self, li: usize, shard: usize, off: u64) {
        let l = &mut self.layers[li];
        let byte = shard as u64 * l.shard_bytes + off / 8;
        l.known[byte as usize] |= 1 << (7 - off % 8);
    }

    /// Looks keys up in the first `upto` layers, from the copies read (each
    /// shard as it was when first read, plus what this run set).
    fn lookup(&mut self, upto: usize, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        out.clear();
        out.resize(hashes.len(), false);
        let mut bits = Vec::new();
        for li in 0..upto {
            self.fetch_for(li, hashes)?;
            for (i, &h) in hashes.iter().enumerate() {
                if !out[i] {
                    self.unknown_bits(li, h, &mut bits);
                    out[i] = bits.is_empty();
                }
            }
        }
        Ok(())
    }

    /// Adds what this run recorded to the shared counters.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(crate) fn commit(&mut self) -> Result<()> {
        if !self.write {
            return Ok(());
        }
        let newest = self.layers.len() - 1;
        let capacity = self.header.layers.last().map_or(u64::MAX, |l| l.capacity);
        let (_, t) = add_counts(
            &mut self.client,
            &format!("inserts:{newest}"),
            self.added,
            capacity,
            (&self.meta, &self.meta),
            "its false-positive rate is above its target",
        )?;
        self.added = 0;
        self.header.updated = t;
        Ok(())
    }

    /// Stores a whole filter at `loc` (its bits `layers`, as in a file):
    /// shards first, the meta key last, so that the filter appears complete.
    /// With `replace`, a filter already there is overwritten.
    ///
    /// # Errors
    /// A filter already there (without `replace`), a server error or a lost
    /// connection.
    pub(crate) fn upload(
        loc: &Location,
        link: Link,
        header: &Header,
        layers: &[&[u8]],
        replace: bool,
    ) -> Result<()> {
        refuse_unkept(header, loc)?;
        let mut client = Client::connect(loc, link)?;
        let meta_slot = slot(loc.meta_key().as_bytes());
        if let Some(old) = read_any(&mut client, loc)? {
            if !replace {
                bail!(
                    "{loc} already exists: pass --force to replace it, or add to it with \
                     `seen build --add -o {loc}`"
                );
            }
            delete(&mut client, loc, old)?;
        } else if !replace {
            // Data without a meta key: overwritten only when asked.
            let left = super::meta::leftovers(&mut client, loc)?;
            if !left.is_empty() {
                bail!(
                    "{} (or pass --force to overwrite it)",
                    super::meta::leftovers_advice(loc, &left)
                );
            }
        }
        let pps = pages_per_shard(header.layers[0].layout.nblocks / BLOCKS_PER_PAGE);
        let mut f = RedisFilter::assemble(client, (header.clone(), Vec::new(), pps), true)?;
        f.store_shards(Some(layers))?;
        let mut cmds = Vec::new();
        for (li, l) in header.layers.iter().enumerate() {
            cmds.push(Routed::new(
                meta_slot,
                redis::cmd("HSET")
                    .arg(loc.count_key())
                    .arg(format!("inserts:{li}"))
                    .arg(l.inserts),
            ));
        }
        cmds.push(Routed::new(
            meta_slot,
            redis::cmd("HSET")
                .arg(loc.count_key())
                .arg("updated")
                .arg(header.updated),
        ));
        cmds.push(Routed::new(
            meta_slot,
            redis::cmd("SET")
                .arg(loc.meta_key())
                .arg(encode_meta(header, pps))
                .arg("NX"),
        ));
        let replies = f.client.exec(cmds).map_err(Failure::into_error)?;
        if replies.last() != Some(&Value::Okay) {
            bail!(
                "{loc} was made by another process while this one was being stored: run again with --force to replace it"
            );
        }
        for v in &replies {
            if let Some(e) = server_error("storing the meta key", loc, v) {
                return Err(e);
            }
        }
        f.client.wait_replicas(&format!(
            " (the filter is stored whole: run again with --force to store it again once the \
             replicas are back, or check it with `seen verify {loc}`)"
        ))?;
        Ok(())
    }

    /// The test-and-set of a batch in the newest layer (see the module
    /// docs); `out[i]` = key `i` was present. The batch goes out in parts of
    /// [`PART_KEYS`] keys, the next sent before the replies of the one
    /// before are read, so the servers work while this prepares.
    ///
    /// Once anything was sent this never fails: a part whose replies are lost
    /// (or refused with an error) counts all its keys as new (printed,
    /// perhaps twice, never lost); the parts after it are not sent, and their
    /// keys are neither printed nor recorded (a later run meets them again);
    /// the store is then broken and the run stops at its next chunk.
    ///
    /// # Errors
    /// When nothing could be sent (the shards could not be read, or no node
    /// reached): nothing was recorded.
    fn test_and_set(&mut self, hashes: &[Hash128], out: &mut [bool]) -> Result<u64> {
        let li = self.layers.len() - 1;
        self.fetch_for(li, hashes)?;
        let mut new = vec![false; hashes.len()];
        let mut t = Parts::default();
        let mut bits = Vec::new();
        let mut sent_any = false;
        for start in (0..hashes.len()).step_by(PART_KEYS) {
            let end = (start + PART_KEYS).min(hashes.len());
            if t.failed.is_some() {
                // Not sent: not judged new, not recorded.
                out[start..].fill(true);
                break;
            }
            // Per shard: the BITFIELD offsets, and which key each belongs to.
            let mut ops: std::collections::BTreeMap<usize, (Vec<u64>, Vec<u32>)> =
                Default::default();
            for i in start..end {
                if out[i] {
                    continue;
                }
                let shard = self.unknown_bits(li, hashes[i], &mut bits);
                if bits.is_empty() {
                    out[i] = true;
                    continue;
                }
                let e = ops.entry(shard).or_default();
                e.0.extend_from_slice(&bits);
                e.1.extend(std::iter::repeat_n(i as u32, bits.len()));
                // Known from now on: a repeat later in the batch is present.
                for &off in &bits {
                    self.learn(li, shard, off);
                }
            }
            let l = &self.layers[li];
            let mut cmds = Vec::new();
            let mut owners = Vec::new();
            for (shard, (offs, who)) in ops {
                // A key's bits stay in one command (one atomic step).
                let mut from = 0;
                while from < offs.len() {
                    let mut to = (from + MAX_OPS).min(offs.len());
                    while to < offs.len() && who[to] == who[to - 1] {
                        to += 1;
                    }
                    cmds.push(Routed {
                        slot: l.slots[shard],
                        packed: pack_bitfield_set(&l.keys[shard], &offs[from..to]),
                    });
                    owners.push(who[from..to].to_vec());
                    from = to;
                }
            }
            if cmds.is_empty() {
                continue;
            }
            match self.client.send(cmds) {
                Ok(sent) => {
                    sent_any = true;
                    let n = owners.len();
                    t.in_flight.push_back((sent, owners, n));
                }
                Err(Failure::NotSent(e)) => {
                    if !sent_any {
                        return Err(e);
                    }
                    // Not sent: not judged new, not recorded.
                    for who in &owners {
                        for &i in who {
                            out[i as usize] = true;
                        }
                    }
                    t.fail(e, &mut new);
                }
                Err(Failure::Lost(e)) => {
                    // Some of it may have run: all count as new.
                    t.mark(&owners, &mut new);
                    t.fail(e, &mut new);
                }
            }
            while t.in_flight.len() > 1 {
                t.settle_front(&mut self.client, &mut new);
            }
        }
        let (count, broken) =
            t.conclude(&mut self.client, sent_any, new, out, self.journal.as_mut());
        if broken.is_some() {
            self.broken = broken;
        }
        Ok(count)
    }
}

impl Store for RedisFilter {
    fn seed(&self) -> u64 {
        self.header.seed
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        if let Some(e) = self.broken.take() {
            return Err(e);
        }
        self.lookup(self.layers.len(), hashes, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        if let Some(r) = crate::redis::Journaled::broken_batch(self, out, hashes.len()) {
            return r;
        }
        if self.layers.len() > 1 {
            // Older layers take no more keys: a key in one is present.
            let mut older = Vec::new();
            if let Err(e) = self.lookup(self.layers.len() - 1, hashes, &mut older) {
                if let Some(j) = &mut self.journal {
                    j.verdicts(hashes.iter().map(|_| super::journal::PRESENT));
                }
                return Err(e);
            }
            out.copy_from_slice(&older);
        }
        // It writes the verdicts down when it judged; when it failed,
        // nothing was sent (nothing recorded): the journal takes the chunk's
        // verdicts missing as not new.
        let n = self.test_and_set(hashes, out)?;
        self.added += n;
        if let Some(l) = self.header.layers.last_mut() {
            l.inserts += n;
        }
        Ok(n)
    }

    fn journals(&mut self) -> Option<&mut dyn Journals> {
        crate::redis::Journaled::as_journals(self)
    }
}

impl crate::redis::journal::Journaled for RedisFilter {
    fn journal_parts(&mut self) -> (Option<&mut Journal>, &mut Option<anyhow::Error>) {
        (self.journal.as_mut(), &mut self.broken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::KeySpec;

    #[test]
    fn redis_keeps_bloom_layers_without_a_window_only() {
        let spec = Spec {
            capacity: 1000,
            target_fpp: 0.01,
            growth: None,
            window: None,
        };
        let first = first_layer(&spec).unwrap();
        let mut h = crate::file::new_header(&spec, &first, 7, KeySpec::RAW);
        let loc = Location::parse("redis://127.0.0.1:1/f").unwrap();
        RedisFilter::refuse_header(&loc, &h).unwrap();
        h.layers[0].kind = KindId(1);
        let e = RedisFilter::refuse_header(&loc, &h)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("layer 0") && e.contains("Bloom layers only"),
            "{e}"
        );
    }
}
