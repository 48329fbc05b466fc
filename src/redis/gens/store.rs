//! [`GensFilter`]: a Redis filter of fingerprint sets in generations, open
//! for a run (see the parent module for the keys and the atomic step).
//!
//! Each batch: the writer reads the generations and the counters (one round
//! trip), moves to a new generation when the newest is full or its slice
//! has passed ([`GROW_SCRIPT`], which adds one only when no other writer did
//! first), then sends one [`TAS_SCRIPT`] call per group of the batch's
//! lines. A call refused because the group already holds a newer
//! generation did nothing: the writer reads the generations again and sends
//! those lines again.

use super::{
    CLOCK_BOUND, CLOCK_SCRIPT, GROW_SCRIPT, Gen, GensMeta, GensState, MAX_GENS, TAS_SCRIPT,
    fingerprint,
};
use crate::format::Header;
use crate::hash::Hash128;
use crate::pipeline::{Chunk, Journals, Store};
use crate::redis::bitfield::{PART_KEYS, Parts};
use crate::redis::client::{Client, Failure, Routed, server_error};
use crate::redis::journal::Journal;
use crate::redis::location::Location;
use crate::redis::slot::slot;
use anyhow::{Context, Result, anyhow, bail};
use redis::Value;
use std::collections::{BTreeMap, HashMap};

/// Times a batch's lines are sent again after the generations moved under
/// them, before the run gives up.
const MAX_RETRIES: usize = 32;

/// A filter in generations, open for a run.
pub(crate) struct GensFilter {
    client: Client,
    meta: GensMeta,
    meta_bytes: Vec<u8>,
    header: Header,
    state: GensState,
    /// The generations in `state`, planned.
    planned: Vec<Gen>,
    /// Lines recorded in each generation, as the counters said when read.
    counted: BTreeMap<u64, u64>,
    /// Lines this run recorded in each generation, not yet counted.
    added: BTreeMap<u64, u64>,
    /// The SHA1 of [`TAS_SCRIPT`] (from `SCRIPT LOAD`).
    sha: String,
    write: bool,
    journal: Option<Journal>,
    /// Set when a reply was lost: the run stops at its next batch.
    broken: Option<anyhow::Error>,
}

/// One script call: a group's lines of a batch.
struct Call {
    /// The group's slot.
    slot: u16,
    /// `KEYS`: the top key, then the sets.
    keys: Vec<String>,
    /// For each set: whether it is of the newest generation, and its
    /// (line in the call, fingerprint) pairs.
    sets: Vec<(bool, Vec<(u32, i64)>)>,
    /// The batch positions of the call's lines.
    lines: Vec<u32>,
}

impl GensFilter {
    /// Makes the filter `meta` describes at the client's location unless
    /// one is there (`SET NX` of its meta key, after its generations hash
    /// names generation 0). Returns whether this run made it.
    ///
    /// # Errors
    /// A server error or a lost connection.
    pub(in crate::redis) fn create(client: &mut Client, meta: &GensMeta) -> Result<bool> {
        let loc = client.location().clone();
        let gens = meta.gens_key(&loc);
        let t = crate::clock::now();
        let slice = meta.window.map_or(0, |w| w.slice_at(t));
        let mut hset = redis::cmd("HSET");
        hset.arg(&gens)
            .arg("top")
            .arg(0)
            .arg("g:0")
            .arg(format!("{slice} 0"))
            .arg("clock")
            .arg(t);
        let s = slot(gens.as_bytes());
        let v = client.query(s, hset)?;
        if let Some(e) = server_error("HSET of the generations", &loc, &v) {
            return Err(e);
        }
        if let Some(ttl) = meta
            .slice_end(slice)
            .map(|end| end.saturating_sub(t).max(1))
        {
            client.query(s, redis::cmd("EXPIRE").arg(&gens).arg(ttl).clone())?;
        }
        let v = client.query_once(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("SET")
                .arg(loc.meta_key())
                .arg(meta.encode())
                .arg("NX")
                .clone(),
        )?;
        if let Some(e) = server_error("SET of the meta key", &loc, &v) {
            return Err(e);
        }
        let made = v == Value::Okay;
        if !made {
            // Another writer made it first: theirs is used.
            let _ = client.query(s, redis::cmd("UNLINK").arg(&gens).clone());
        }
        Ok(made)
    }

    /// The filter `meta` (stored as `meta_bytes`) on `client`, its
    /// generations and counters read.
    ///
    /// # Errors
    /// A server that cannot be reached, or a generations hash that is gone.
    pub(in crate::redis) fn assemble(
        mut client: Client,
        meta: GensMeta,
        meta_bytes: Vec<u8>,
        write: bool,
    ) -> Result<GensFilter> {
        let loc = client.location().clone();
        let v = client.query(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("SCRIPT").arg("LOAD").arg(TAS_SCRIPT).clone(),
        )?;
        let sha = match v {
            Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
            other => {
                return Err(server_error("SCRIPT LOAD", &loc, &other)
                    .unwrap_or_else(|| anyhow!("{loc}: unexpected SCRIPT LOAD reply")));
            }
        };
        let header = meta.header();
        let mut f = GensFilter {
            client,
            meta,
            meta_bytes,
            header,
            state: GensState::default(),
            planned: Vec::new(),
            counted: BTreeMap::new(),
            added: BTreeMap::new(),
            sha,
            write,
            journal: None,
            broken: None,
        };
        f.refresh()?;
        Ok(f)
    }

    /// What the meta key records.
    pub(crate) fn meta(&self) -> &GensMeta {
        &self.meta
    }

    /// The header (seed, keys, sizing, growth, window; no layers).
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

    /// The live generations, planned, oldest first, with the lines the
    /// counters say each holds.
    pub(crate) fn generations(&self) -> Vec<(Gen, u64)> {
        self.live(self.time())
            .into_iter()
            .map(|g| (g, self.counted.get(&g.index).copied().unwrap_or(0)))
            .collect()
    }

    /// The latest time a writer worked at (the filter's clock).
    pub(crate) fn clock(&self) -> u64 {
        self.state.clock
    }

    /// Reads the generations and the counters (one round trip).
    fn refresh(&mut self) -> Result<()> {
        let loc = self.client.location().clone();
        let s = slot(loc.meta_key().as_bytes());
        let gens = self.meta.gens_key(&loc);
        let v = self
            .client
            .exec(vec![
                Routed::new(s, redis::cmd("HGETALL").arg(&gens)),
                Routed::new(s, redis::cmd("HGETALL").arg(loc.count_key())),
            ])
            .map_err(Failure::into_error)
            .context("cannot read the generations")?;
        for r in &v {
            if let Some(e) = server_error("HGETALL of the generations", &loc, r) {
                return Err(e);
            }
        }
        self.state = GensState::read(&v[0], &loc)?;
        self.planned = self
            .state
            .gens
            .iter()
            .map(|&(g, slice, rank)| self.meta.generation(g, slice, rank))
            .collect::<Result<_>>()?;
        self.counted.clear();
        let prefix = format!("lines:{:08x}:", self.meta.tag);
        let mut updated = None;
        crate::redis::meta::each_count(&v[1], &mut |k, n| {
            if k == b"updated" {
                updated = Some(n);
            } else if let Some(g) = k
                .strip_prefix(prefix.as_bytes())
                .and_then(|g| std::str::from_utf8(g).ok()?.parse::<u64>().ok())
            {
                self.counted.insert(g, n);
            }
        });
        if let Some(t) = updated {
            self.header.updated = t;
        }
        if let Some(w) = &mut self.header.window {
            w.clock = self.state.clock;
        }
        Ok(())
    }

    /// The time the run works at: its clock (`--now`, else the system's),
    /// or the filter's when that is later.
    pub(crate) fn time(&self) -> u64 {
        crate::clock::now().max(self.state.clock)
    }

    /// The generations live at time `t`: every one without a window, else
    /// those of the slices a lookup at `t` tests.
    fn live(&self, t: u64) -> Vec<Gen> {
        let oldest = self
            .meta
            .window
            .map_or(0, |w| w.slice_at(t).saturating_sub(u64::from(w.slices)));
        self.planned
            .iter()
            .filter(|g| g.slice >= oldest)
            .copied()
            .collect()
    }

    /// Before a batch is recorded: refuses a clock too far behind the
    /// filter's, and adds a generation when the newest is full or its
    /// slice has passed (or takes the one another writer added).
    fn advance(&mut self) -> Result<()> {
        // Counted at once: the other writers then see a generation fill.
        self.commit_counts()?;
        self.refresh()?;
        let own = crate::clock::now();
        if own + CLOCK_BOUND < self.state.clock {
            bail!(
                "{}: this writer's clock ({}) is {} s behind the filter's ({}, the latest time \
                 a writer worked at), more than the {CLOCK_BOUND} s writers may be apart: fix \
                 this machine's clock (NTP), or pass --now with the right time",
                self.location(),
                crate::clock::format(own),
                self.state.clock - own,
                crate::clock::format(self.state.clock)
            );
        }
        for _ in 0..MAX_RETRIES {
            let t = self.time();
            let (top, slice, rank) = self.state.newest();
            let want = match self.meta.window {
                Some(w) if w.slice_at(t) > slice => Some((w.slice_at(t), 0)),
                _ => {
                    let g = self.planned.last().expect("one at least");
                    let held = self.counted.get(&top).copied().unwrap_or(0)
                        + self.added.get(&top).copied().unwrap_or(0);
                    let room = self.meta.growth.is_some()
                        && rank + 1 < MAX_GENS
                        && self.state.gens.len() < 2 * MAX_GENS as usize;
                    (room && held >= g.capacity).then_some((slice, rank + 1))
                }
            };
            let Some((slice, rank)) = want else {
                return Ok(());
            };
            self.commit()?;
            self.grow(top, slice, rank, t)?;
            self.refresh()?;
        }
        bail!(
            "{}: its generations kept moving while this writer tried to add one",
            self.location()
        )
    }

    /// Lines the newest generation takes before it is full, when the
    /// filter grows (`None`: it does not, or no more).
    pub(crate) fn room(&self) -> Option<u64> {
        let (top, _, rank) = self.state.newest();
        if self.meta.growth.is_none() || rank + 1 >= MAX_GENS {
            return None;
        }
        let g = self.planned.last().expect("one at least");
        let held = self.counted.get(&top).copied().unwrap_or(0)
            + self.added.get(&top).copied().unwrap_or(0);
        Some(g.capacity.saturating_sub(held))
    }

    /// Adds generation `top + 1` (rank `rank` of slice `slice`) unless
    /// another writer added one after `top` first.
    fn grow(&mut self, top: u64, slice: u64, rank: u32, t: u64) -> Result<()> {
        let loc = self.client.location().clone();
        let gens = self.meta.gens_key(&loc);
        let oldest = self
            .meta
            .window
            .map_or(0, |w| slice.saturating_sub(u64::from(w.slices)));
        let ttl = self
            .meta
            .slice_end(slice)
            .map_or(0, |end| end.saturating_sub(t).max(1));
        let v = self.client.query_once(
            slot(gens.as_bytes()),
            redis::cmd("EVAL")
                .arg(GROW_SCRIPT)
                .arg(1)
                .arg(&gens)
                .arg(top)
                .arg(slice)
                .arg(rank)
                .arg(t)
                .arg(oldest)
                .arg(ttl)
                .clone(),
        )?;
        if let Some(e) = server_error("adding a generation", &loc, &v) {
            return Err(e);
        }
        Ok(())
    }

    /// Builds the script calls for the lines `todo` of `hashes`, for the
    /// live generations `live` (the newest last).
    fn calls(&self, hashes: &[Hash128], todo: &[u32], live: &[Gen]) -> Vec<Call> {
        let loc = self.client.location();
        let newest = live.len() - 1;
        let mut by_group: HashMap<u64, (Call, HashMap<String, usize>)> = HashMap::new();
        for &i in todo {
            let h = hashes[i as usize];
            let t = self.meta.group_of(h);
            let (call, names) = by_group.entry(t).or_insert_with(|| {
                let top = self.meta.top_key(loc, t);
                (
                    Call {
                        slot: slot(top.as_bytes()),
                        keys: vec![top],
                        sets: Vec::new(),
                        lines: Vec::new(),
                    },
                    HashMap::new(),
                )
            });
            let pos = call.lines.len() as u32 + 1;
            call.lines.push(i);
            for (n, g) in live.iter().enumerate() {
                let key = self.meta.set_key(loc, g, h);
                let at = *names.entry(key.clone()).or_insert_with(|| {
                    call.keys.push(key);
                    call.sets.push((n == newest, Vec::new()));
                    call.sets.len() - 1
                });
                call.sets[at].1.push((pos, fingerprint(g.fp_bits, h)));
            }
        }
        by_group.into_values().map(|(c, _)| c).collect()
    }

    /// The call packed as `EVALSHA` (or `EVAL` with `body`), for
    /// generation `g` whose keys live `ttl` seconds (0: for ever).
    fn pack(&self, call: &Call, g: u64, ttl: u64, body: bool) -> Routed {
        let mut args: Vec<Vec<u8>> = Vec::with_capacity(8 + 2 * call.lines.len());
        args.push(if body {
            b"EVAL".to_vec()
        } else {
            b"EVALSHA".to_vec()
        });
        args.push(if body {
            TAS_SCRIPT.as_bytes().to_vec()
        } else {
            self.sha.as_bytes().to_vec()
        });
        args.push(call.keys.len().to_string().into_bytes());
        args.extend(call.keys.iter().map(|k| k.as_bytes().to_vec()));
        args.push(g.to_string().into_bytes());
        args.push(ttl.to_string().into_bytes());
        args.push(call.lines.len().to_string().into_bytes());
        for (newest, pairs) in &call.sets {
            args.push(if *newest {
                b"n".to_vec()
            } else {
                b"o".to_vec()
            });
            args.push(pairs.len().to_string().into_bytes());
            for (pos, fp) in pairs {
                args.push(pos.to_string().into_bytes());
                args.push(fp.to_string().into_bytes());
            }
        }
        let mut packed = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            packed.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            packed.extend_from_slice(&a);
            packed.extend_from_slice(b"\r\n");
        }
        Routed {
            slot: call.slot,
            packed,
        }
    }

    /// Test-and-set of a batch (see the module's doc). A line repeated in
    /// the batch is present and sends nothing.
    fn test_and_set(&mut self, hashes: &[Hash128], out: &mut [bool]) -> Result<u64> {
        let mut new = vec![false; hashes.len()];
        let mut t = Parts::default();
        let mut sent_any = false;
        let mut todo: Vec<u32> = (0..hashes.len() as u32)
            .filter(|&i| !out[i as usize])
            .collect();
        let mut tries = 0;
        while !todo.is_empty() && t.failed.is_none() {
            tries += 1;
            if tries > MAX_RETRIES {
                bail!(
                    "{}: its generations kept moving while this writer sent a batch",
                    self.location()
                );
            }
            if tries > 1 {
                self.refresh()?;
            }
            let now = self.time();
            let live = self.live(now);
            let g = *live.last().expect("the newest is live");
            let ttl = self
                .meta
                .slice_end(g.slice)
                .map_or(0, |end| end.saturating_sub(now).max(1));
            let calls = self.calls(hashes, &todo, &live);
            let mut again = Vec::new();
            let mut part = Vec::new();
            let mut lines = 0;
            let mut calls = calls.into_iter().peekable();
            while let Some(c) = calls.next() {
                lines += c.lines.len();
                part.push(c);
                if lines < PART_KEYS && calls.peek().is_some() {
                    continue;
                }
                let (sent, stale) = self.send_part(&part, g.index, ttl, &mut new, out, &mut t);
                if !sent && !sent_any {
                    // Nothing went out: nothing was recorded.
                    return Err(t.failed.take().expect("a part not sent failed"));
                }
                sent_any |= sent;
                again.extend(stale);
                part.clear();
                lines = 0;
                if t.failed.is_some() {
                    break;
                }
            }
            if t.failed.is_some() {
                // The lines not sent, or refused as stale: not judged new,
                // not recorded.
                for i in calls.flat_map(|c| c.lines).chain(again) {
                    out[i as usize] = true;
                }
                break;
            }
            todo = again;
        }
        let (count, broken) =
            t.conclude(&mut self.client, sent_any, new, out, self.journal.as_mut());
        if broken.is_some() {
            self.broken = broken;
        }
        Ok(count)
    }

    /// Sends one part's calls (pipelined; a call a node did not know the
    /// script for is sent again with it), records the verdicts in `new`
    /// and the lines added per generation. Returns whether anything was
    /// sent, and the lines to send again (their group held a newer
    /// generation).
    fn send_part(
        &mut self,
        part: &[Call],
        g: u64,
        ttl: u64,
        new: &mut [bool],
        out: &mut [bool],
        t: &mut Parts,
    ) -> (bool, Vec<u32>) {
        let owners: Vec<Vec<u32>> = part.iter().map(|c| c.lines.clone()).collect();
        let cmds = part.iter().map(|c| self.pack(c, g, ttl, false)).collect();
        let mut replies = match self.client.exec(cmds) {
            Ok(r) => r,
            Err(Failure::NotSent(e)) => {
                // Not sent: not judged new, not recorded.
                for &i in owners.iter().flatten() {
                    out[i as usize] = true;
                }
                t.fail(e, new);
                return (false, Vec::new());
            }
            Err(Failure::Lost(e)) => {
                t.mark(&owners, new);
                t.fail(e, new);
                return (true, Vec::new());
            }
        };
        // Nodes without the script cached: the same calls, with it.
        let unknown: Vec<usize> = replies
            .iter()
            .enumerate()
            .filter(|(_, v)| matches!(v, Value::ServerError(e) if e.code() == "NOSCRIPT"))
            .map(|(i, _)| i)
            .collect();
        if !unknown.is_empty() {
            let cmds = unknown
                .iter()
                .map(|&i| self.pack(&part[i], g, ttl, true))
                .collect();
            match self.client.exec(cmds) {
                Ok(r) => {
                    for (&i, v) in unknown.iter().zip(r) {
                        replies[i] = v;
                    }
                }
                Err(f) => {
                    let lost: Vec<Vec<u32>> = unknown.iter().map(|&i| owners[i].clone()).collect();
                    t.mark(&lost, new);
                    t.fail(f.into_error(), new);
                    return (true, Vec::new());
                }
            }
        }
        let loc = self.client.location().clone();
        let mut stale = Vec::new();
        for (v, who) in replies.iter().zip(&owners) {
            match v {
                Value::Array(items) if items.first() == Some(&Value::Int(1)) => {
                    stale.extend_from_slice(who);
                }
                Value::Array(items)
                    if items.first() == Some(&Value::Int(0)) && items.len() == who.len() + 2 =>
                {
                    let mut added = 0;
                    for (o, &i) in items[2..].iter().zip(who) {
                        if *o == Value::Int(0) {
                            new[i as usize] = true;
                            added += 1;
                        }
                    }
                    *self.added.entry(g).or_default() += added;
                }
                other => {
                    t.mark(std::slice::from_ref(who), new);
                    let e = server_error("a test-and-set", &loc, other)
                        .unwrap_or_else(|| anyhow!("{loc}: unexpected test-and-set reply"));
                    t.failed.get_or_insert(e);
                }
            }
        }
        (true, stale)
    }

    /// Lookups of a batch in the live generations: `SMISMEMBER` per set.
    fn lookup(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        out.clear();
        out.resize(hashes.len(), false);
        let loc = self.client.location().clone();
        let live = self.live(self.time());
        for part in (0..hashes.len()).collect::<Vec<_>>().chunks(PART_KEYS) {
            let mut sets: HashMap<(usize, String), Vec<usize>> = HashMap::new();
            for &i in part {
                for (n, g) in live.iter().enumerate() {
                    sets.entry((n, self.meta.set_key(&loc, g, hashes[i])))
                        .or_default()
                        .push(i);
                }
            }
            let mut order = Vec::new();
            let mut cmds = Vec::new();
            for ((n, key), who) in sets {
                let g = &live[n];
                let mut c = redis::cmd("SMISMEMBER");
                c.arg(&key);
                for &i in &who {
                    c.arg(fingerprint(g.fp_bits, hashes[i]));
                }
                cmds.push(Routed::new(slot(key.as_bytes()), &c));
                order.push(who);
            }
            let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
            for (v, who) in replies.iter().zip(order) {
                let Value::Array(items) = v else {
                    return Err(server_error("SMISMEMBER", &loc, v)
                        .unwrap_or_else(|| anyhow!("{loc}: unexpected SMISMEMBER reply")));
                };
                for (o, i) in items.iter().zip(who) {
                    if *o == Value::Int(1) {
                        out[i] = true;
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds this run's lines to the counters (per generation), and moves
    /// the filter's clock forward to the run's time.
    fn commit(&mut self) -> Result<()> {
        if !self.write {
            return Ok(());
        }
        self.commit_counts()?;
        self.commit_time()
    }

    /// Adds this run's lines to each generation's counter.
    fn commit_counts(&mut self) -> Result<()> {
        let added = std::mem::take(&mut self.added);
        for (g, n) in added {
            if n == 0 {
                continue;
            }
            let field = self.meta.count_field(g);
            let total = crate::redis::meta::bump_count(
                &mut self.client,
                &field,
                n as i64,
                &self.meta_bytes,
                &self.meta_bytes,
            )?;
            self.counted.insert(g, u64::try_from(total).unwrap_or(0));
        }
        Ok(())
    }

    /// The clock and time of change, at the run's end and when it adds a
    /// generation.
    fn commit_time(&mut self) -> Result<()> {
        let loc = self.client.location().clone();
        let gens = self.meta.gens_key(&loc);
        let t = self.time();
        let v = self.client.query(
            slot(gens.as_bytes()),
            redis::cmd("EVAL")
                .arg(CLOCK_SCRIPT)
                .arg(1)
                .arg(&gens)
                .arg(t)
                .clone(),
        )?;
        if let Some(e) = server_error("moving the clock", &loc, &v) {
            return Err(e);
        }
        let now = crate::clock::system_secs();
        let v = self.client.query(
            slot(loc.meta_key().as_bytes()),
            redis::cmd("HSET")
                .arg(loc.count_key())
                .arg("updated")
                .arg(now)
                .clone(),
        )?;
        if let Some(e) = server_error("HSET of the counters", &loc, &v) {
            return Err(e);
        }
        self.header.updated = now;
        Ok(())
    }

    /// The directory of this filter's journals on this machine.
    ///
    /// # Errors
    /// When there is no directory for journals (no `HOME`).
    pub(crate) fn journal_dir(&self) -> Result<std::path::PathBuf> {
        crate::redis::journal::dir_for(&self.location().name, &self.meta_bytes)
    }

    /// See `RedisFilter::journal`.
    ///
    /// # Errors
    /// As there.
    pub(crate) fn journal(
        &mut self,
        term: u8,
        keys: crate::keys::KeySpec,
        out: &mut dyn std::io::Write,
    ) -> Result<(u64, std::path::PathBuf)> {
        let dir = self.journal_dir()?;
        let replayed = Journal::replay(
            &dir,
            term,
            &mut crate::redis::journal::asker(self, keys),
            out,
        )?;
        self.journal = Some(Journal::start(&dir, &self.location().to_string())?);
        Ok((replayed, dir))
    }

    /// The run's output was closed by its reader.
    pub(crate) fn output_lost(&mut self) {
        if let Some(j) = &mut self.journal {
            j.retract_recent();
        }
    }

    /// Ends the run (as `SetsFilter::finish`): the journal removed when it
    /// went well, kept otherwise; the counters added to.
    ///
    /// # Errors
    /// The failure that stopped the run's test-and-sets, or a failed commit.
    pub(crate) fn finish(&mut self, ok: bool) -> Result<Option<Header>> {
        let broken = self.broken.take();
        if let Some(j) = self.journal.take() {
            if ok && broken.is_none() {
                j.close();
            } else {
                j.keep();
            }
        }
        let committed = self.commit();
        if let Some(e) = broken {
            return Err(e);
        }
        committed?;
        Ok(ok.then(|| self.header.clone()))
    }
}

/// What one live generation holds, counted with `SCARD` of its sets.
#[derive(Clone, Debug)]
pub(crate) struct GenCensus {
    /// The generation.
    pub generation: Gen,
    /// Lines recorded in it (the counters).
    pub lines: u64,
    /// Fingerprints its sets hold.
    pub fingerprints: u64,
    /// The fullest set's.
    pub max_load: u64,
    /// Sets past the server's intset limit (kept as hash tables).
    pub past: u64,
    /// Keys where its sets should be that are not sets.
    pub wrong: Vec<String>,
}

impl GensFilter {
    /// Counts the live generations' sets (`SCARD`, pipelined), telling
    /// `progress` the sets counted.
    ///
    /// # Errors
    /// A server that cannot be reached.
    pub(crate) fn census(&mut self, progress: &mut dyn FnMut(u64)) -> Result<Vec<GenCensus>> {
        let loc = self.client.location().clone();
        let mut all = Vec::new();
        for (g, lines) in self.generations() {
            let mut c = GenCensus {
                generation: g,
                lines,
                fingerprints: 0,
                max_load: 0,
                past: 0,
                wrong: Vec::new(),
            };
            let names: Vec<String> = (0..self.meta.groups)
                .flat_map(|t| (0..g.per_group).map(move |k| (t, k)))
                .map(|(t, k)| self.meta.set_name(&loc, g.index, t, k))
                .collect();
            for part in names.chunks(4096) {
                let cmds = part
                    .iter()
                    .map(|n| Routed::new(slot(n.as_bytes()), redis::cmd("SCARD").arg(n)))
                    .collect();
                let replies = self.client.exec(cmds).map_err(Failure::into_error)?;
                for (n, v) in part.iter().zip(replies) {
                    match v {
                        Value::Int(k) => {
                            let k = u64::try_from(k).unwrap_or(0);
                            c.fingerprints += k;
                            c.max_load = c.max_load.max(k);
                            c.past += u64::from(k > self.meta.limit);
                        }
                        _ => c.wrong.push(n.clone()),
                    }
                }
                progress(part.len() as u64);
            }
            all.push(c);
        }
        Ok(all)
    }
}

impl Store for GensFilter {
    fn seed(&self) -> u64 {
        self.meta.seed
    }

    fn contains_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<()> {
        if let Some(e) = self.broken.take() {
            return Err(e);
        }
        self.lookup(hashes, out)
    }

    fn insert_batch(&mut self, hashes: &[Hash128], out: &mut Vec<bool>) -> Result<u64> {
        out.clear();
        out.resize(hashes.len(), false);
        if self.broken.is_some() && self.journal.is_none() {
            return Err(self.broken.take().expect("checked"));
        }
        if self.broken.is_some() {
            out.fill(true);
            if let Some(j) = &mut self.journal {
                j.verdicts(out.iter().map(|_| crate::redis::journal::PRESENT));
            }
            return Ok(0);
        }
        // In steps no larger than the room left in the newest generation,
        // so that a growing filter adds the next one when it is full, not a
        // batch later.
        crate::redis::sets::mark_repeats(hashes, out);
        let mut new = 0;
        let mut from = 0;
        while from < hashes.len() {
            self.advance()?;
            let to = match self.room() {
                Some(room) => from + (room.max(1) as usize).min(hashes.len() - from),
                None => hashes.len(),
            };
            new += self.test_and_set(&hashes[from..to], &mut out[from..to])?;
            from = to;
        }
        Ok(new)
    }

    fn journals(&mut self) -> Option<&mut dyn Journals> {
        if self.journal.is_some() {
            Some(self)
        } else {
            None
        }
    }
}

/// As the other layouts': the lines judged new are kept until written.
impl Journals for GensFilter {
    fn judging(&mut self, chunk: &Chunk) -> Result<()> {
        if let Some(e) = self.broken.take() {
            return Err(e);
        }
        match &mut self.journal {
            Some(j) => j.chunk(chunk.records_bytes(), chunk.records()),
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
